"""Native checks of the Gemma 3 IR that gemma_export.py writes (host side, no component).

``greedy_tokens(xml, prompt_ids, n)`` runs an IR the way the app does (one
infer request per generation, the whole prompt in the first infer, then one
token per infer, top_k=1, no penalty) with OpenVINO's Python API; the tests
compare it with transformers. Only openvino and numpy are imported at the
top, so that using it costs no torch import.

From the command line (all of it slow; nothing here runs in a build)::

    python export_check.py agree  MODELS/gemma3 [VARIANT ...] [--prompts JSON] [--set K=V]
    python export_check.py bench  MODELS/gemma3/VARIANT [--threads N] [--buffer] [--set K=V]
    python export_check.py window MODELS/gemma3/VARIANT   # across the sliding window's edge
    python export_check.py head   MODELS/gemma3/VARIANT   # penalty and top_k vs transformers
    python export_check.py perplexity MODELS/gemma3 [VARIANT ...] [--tokens N]

``agree`` prints, per prompt, how many leading greedy tokens each variant
shares with transformers f32 (MODELS/gemma3/hf), and keeps transformers'
tokens in MODELS/gemma3/reference-greedy-N.json for the next run.
``bench`` prints prefill and decode tokens/s and the process's peak RSS
(run it once per variant: the RSS is the process's, so one model a run).
``--buffer`` reads the IR from bytes held in memory, as wasmtime's host does
(``-S nn-graph=openvino::DIR`` reads model.xml and model.bin into memory and
hands OpenVINO the bytes), rather than from the file (which OpenVINO maps).
``--set`` adds compile properties on top of the IR's runtime options.
``perplexity`` scores a held-out text (HELD_OUT: the first N tokens of the
Python reference's "Assignment statements", from the running Python's
pydoc_data, which no prompt or calibration here uses) with each variant,
teacher-forced one token per infer as the app feeds them, and with
transformers f32 in one pass: one JSON line each.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import openvino as ov


def _prose(text: str) -> str:
    """``text`` with its line breaks inside paragraphs undone (they are there
    for the source's line length) and its outer blank lines dropped."""
    paragraphs = text.strip("\n").split("\n\n")
    return "\n\n".join(" ".join(p.split("\n")) for p in paragraphs)


#: A long prompt (about 800 tokens) for the sliding-window layers, which see
#: only the last 512 positions: composed for these checks, plain English prose.
LONG_PROMPT = _prose("""
The lighthouse keeper's log, kept through the winter of the year the harbour froze.

The first week of December brought the kind of weather the older fishermen had warned about
since the autumn. A grey wall of cloud sat over the headland for three days without moving, and
the wind came round from the north-east so steadily that the weathervane on the boathouse seemed
to have rusted in place. I climbed the tower twice each night to trim the wick and wipe the salt
from the glass, and on the second night I counted eleven vessels running for shelter behind the
breakwater. Most of them were small boats from the villages along the coast, but one was a coal
steamer that had lost a propeller blade off the point and limped in with her crew bailing by
hand.

By the middle of the month the cold had settled into everything. The oil thickened in the cans
and had to be warmed on the stove before it would flow, and the brass fittings on the lamp grew
so cold that they stung the fingers through two pairs of gloves. My assistant, a quiet young man
from the inland farms who had never seen the sea before the summer, kept a careful record of the
barometer every four hours. He noticed before I did that the pressure was falling faster than it
had all season, and he woke me shortly after two in the morning to say that the swell had
changed direction.

The storm that followed lasted for the better part of a week. Waves broke over the lower
gallery, and on the fourth night a wave larger than the rest struck the door of the oil store
and tore it from its hinges. We spent the next morning carrying the remaining barrels up the
stairs one at a time, resting on every landing, while the spray came through the broken door
behind us. The supply boat could not reach us, of course, and we rationed the oil so that the
light would burn through the longest nights even if the weather held for another fortnight.

It was during that week that the harbour began to freeze. I had heard stories of it from my
grandfather, who kept the same light forty years before, but I had never believed that salt
water could turn so solid that a man might walk on it. The ice formed first along the edges of
the quay, thin and clear like window glass, and then spread outward in sheets that groaned and
cracked with the tide. By Christmas morning the whole inner harbour was white, and the boats
that had sheltered there sat locked in place with their masts rimed in frost. Children from the
town came down to the shore to stare at it, and a few of the braver ones ventured out onto the
ice until their mothers called them back.

The thaw, when it came in the second week of January, was almost as dramatic as the freeze. A
warm wind blew in from the south-west overnight, rain fell in heavy bands across the water, and
by the following afternoon the ice was breaking into great slabs that drifted out through the
harbour mouth on the ebb. The coal steamer was the first vessel to leave, her propeller mended
by a blacksmith from the town, and the fishing boats followed one by one as the channel cleared.
My assistant and I watched them go from the gallery, and when the last of them had rounded the
point he turned to me and asked whether every winter on the coast was like this one. I told him
that I hoped not, but that the sea keeps its own counsel, and that a keeper's first duty is to
be ready for whatever it decides.

Looking back over these pages now, in the long light of spring, I find that what I remember most
clearly is not the storm or the ice but the quiet hours between them: the steady turning of the
lens, the warm smell of the oil, and the certainty that somewhere out in the dark a ship was
watching our light and steering by it. That certainty is the reason the light exists, and
""")

#: Varied prompts for ``agree``: prose, code, French, arithmetic, and the long one.
PROMPTS = (
    "The capital of France is",
    'def fibonacci(n):\n    """Return the n-th Fibonacci number."""\n',
    "Il était une fois, dans un petit village au bord de la mer,",
    "Q: What is 17 times 23?\nA:",
    LONG_PROMPT,
)


def read(xml: Path, from_buffer: bool = False) -> Any:
    """The IR as an ov.Model, read from the files or (as wasmtime does) from bytes."""
    core = ov.Core()
    if not from_buffer:
        return core.read_model(xml)
    weights = np.frombuffer(xml.with_suffix(".bin").read_bytes(), dtype=np.uint8)
    return core.read_model(xml.read_bytes(), ov.Tensor(weights))


def compile_ir(
    xml: Path, properties: dict[str, Any] | None = None, from_buffer: bool = False
) -> Any:
    """The IR compiled for the CPU with ``properties`` on top of the defaults
    (and of the runtime options the IR's rt_info carries)."""
    return ov.Core().compile_model(read(xml, from_buffer), "CPU", properties or {})


def step(request: Any, ids: Sequence[int], top_k: int = 1, penalized: Sequence[int] = (0,),
         penalty: float = 1.0) -> tuple[list[float], list[int]]:  # fmt: skip
    """One infer: feed ``ids`` after what the request's state holds; the top
    ``top_k`` (logit, id) pairs of the next token."""
    request.infer({
        "input_ids": np.asarray([ids], dtype=np.int64),
        "penalized_ids": np.asarray(penalized, dtype=np.int64),
        "penalty": np.asarray([penalty], dtype=np.float32),
        "top_k": np.asarray([top_k], dtype=np.int64),
    })  # fmt: skip
    logits = request.get_tensor("top_logits").data
    ids_out = request.get_tensor("top_ids").data
    return [float(v) for v in logits], [int(v) for v in ids_out]


def greedy_tokens(xml: Path | Any, prompt_ids: Sequence[int], n: int,
                  properties: dict[str, Any] | None = None) -> list[int]:  # fmt: skip
    """``n`` greedy tokens after ``prompt_ids`` (which start with BOS, 2) from
    the IR at ``xml`` (or an already compiled model), one infer request for
    the generation as the app does; no stop at end-of-text."""
    compiled = compile_ir(Path(xml), properties) if isinstance(xml, (str, Path)) else xml
    request = compiled.create_infer_request()
    tokens: list[int] = []
    if n <= 0:
        return tokens
    _, top = step(request, prompt_ids)
    while True:
        tokens.append(top[0])
        if len(tokens) == n:
            return tokens
        _, top = step(request, [top[0]])


def reference_greedy(model: Any, prompt_ids: Sequence[int], n: int) -> list[int]:
    """transformers' greedy continuation (its own cache; argmax of the last
    logits each step), without generate()'s stop at end-of-text."""
    import torch

    cache = None
    ids = torch.tensor([list(prompt_ids)])
    tokens: list[int] = []
    with torch.no_grad():
        while len(tokens) < n:
            out = model(input_ids=ids, past_key_values=cache, use_cache=True)
            cache = out.past_key_values
            tokens.append(int(out.logits[0, -1].argmax()))
            ids = torch.tensor([[tokens[-1]]])
    return tokens


def leading_equal(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens two continuations share."""
    same = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        same += 1
    return same


def agree(gemma3: Path, variants: Sequence[str], n: int, prompts: Sequence[str] = PROMPTS,
          settings: dict[str, Any] | None = None) -> None:  # fmt: skip
    """Greedy agreement of each variant with transformers f32 on ``prompts``:
    one JSON line per prompt with the number of equal leading tokens."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from gemma_export import load_reference

    model, tokenizer = load_reference(gemma3 / "hf")
    compiled = {v: compile_ir(gemma3 / v / "model.xml", settings) for v in variants}
    # transformers' tokens, kept between runs (they take most of the time).
    cache_file = gemma3 / f"reference-greedy-{n}.json"
    cache = json.loads(cache_file.read_text()) if cache_file.is_file() else {}
    for prompt in prompts:
        ids = tokenizer(prompt).input_ids
        if prompt not in cache:
            cache[prompt] = reference_greedy(model, ids, n)
            cache_file.write_text(json.dumps(cache))
        want = cache[prompt]
        row: dict[str, object] = {"prompt": prompt[:40], "prompt_tokens": len(ids)}
        for variant in variants:
            got = greedy_tokens(compiled[variant], ids, n)
            row[variant] = same = leading_equal(want, got)
            if same < n:
                row[variant + "_text"] = tokenizer.decode(got)
        row["reference_text"] = tokenizer.decode(want)
        print(json.dumps(row, ensure_ascii=False), flush=True)


def bench(xml: Path, threads: int | None, from_buffer: bool, prompt_tokens: int, decode: int,
          settings: Sequence[str] = ()) -> None:  # fmt: skip
    """Prefill and decode speed, and the process's peak RSS, natively;
    ``settings`` (KEY=VALUE) are compile properties on top of the IR's."""
    properties: dict[str, Any] = dict(s.split("=", 1) for s in settings)
    if threads:
        properties["INFERENCE_NUM_THREADS"] = threads
    start = time.perf_counter()
    compiled = compile_ir(xml, properties, from_buffer)
    loaded = time.perf_counter() - start
    # Token ids from the ordinary range of the vocabulary: speed does not
    # depend on which ones they are.
    rng = np.random.default_rng(0)
    prompt = [2] + [int(v) for v in rng.integers(300, 20000, prompt_tokens - 1)]
    request = compiled.create_infer_request()
    step(request, prompt[:8])  # warm-up: first-infer allocations
    request = compiled.create_infer_request()
    start = time.perf_counter()
    _, top = step(request, prompt)
    prefill = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(decode):
        _, top = step(request, top[:1])
    decoding = time.perf_counter() - start
    row = {
        "model": str(xml.parent.name),
        "threads": threads or "default",
        "settings": list(settings),
        "from_buffer": from_buffer,
        "load_compile_s": round(loaded, 2),
        "prefill_tokens": prompt_tokens,
        "prefill_tok_s": round(prompt_tokens / prefill, 1),
        "decode_tok_s": round(decode / decoding, 1),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "precision": str(compiled.get_property("INFERENCE_PRECISION_HINT")),
        "kv_cache": str(compiled.get_property("KV_CACHE_PRECISION")),
    }
    print(json.dumps(row), flush=True)


def held_out_text() -> str:
    """The held-out text ``perplexity`` scores (see the module's docstring)."""
    from pydoc_data.topics import topics

    return str(topics["assignment"])


def ir_perplexity(compiled: Any, ids: Sequence[int]) -> float:
    """exp(mean negative log-likelihood) of ``ids[1:]`` under the IR, fed one
    token per infer into one request (its KV cache), every logit asked for."""
    request = compiled.create_infer_request()
    vocabulary = 262_144
    total = 0.0
    for position in range(len(ids) - 1):
        logits, order = step(request, [ids[position]], top_k=vocabulary)
        values = np.asarray(logits, dtype=np.float64)
        target = values[np.asarray(order) == ids[position + 1]][0]
        peak = values.max()
        total += peak + np.log(np.exp(values - peak).sum()) - target
    return float(np.exp(total / (len(ids) - 1)))


def perplexity(gemma3: Path, variants: Sequence[str], n: int) -> None:
    """Each variant's perplexity on the first ``n`` tokens of the held-out text,
    and transformers f32's (the reference), one JSON line each."""
    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from gemma_export import load_reference

    model, tokenizer = load_reference(gemma3 / "hf")
    ids = tokenizer(held_out_text()).input_ids[:n]
    with torch.no_grad():
        out = model(input_ids=torch.tensor([ids]))
        loss = torch.nn.functional.cross_entropy(out.logits[0, :-1].float(), torch.tensor(ids[1:]))
    rows: list[tuple[str, float]] = [("transformers f32", float(torch.exp(loss)))]
    for variant in variants:
        rows.append((variant, ir_perplexity(compile_ir(gemma3 / variant / "model.xml"), ids)))
    for name, value in rows:
        print(json.dumps({"model": name, "tokens": len(ids), "perplexity": round(value, 4)}),
              flush=True)  # fmt: skip


def window(xml: Path, hf: Path, start: int = 500, end: int = 530) -> float:
    """How closely the IR follows transformers across the sliding window's
    edge: prefill ``start`` tokens of LONG_PROMPT, then feed the rest up to
    ``end`` one token per infer (as decoding does), comparing each step's
    top-8 logits with transformers' logits at that position (one full
    forward pass over ``end`` tokens). Positions 512.. are where a window one
    key too wide or too narrow would show: about 0.1 off (Gemma3Stateful in
    torch with a window of 511 or 513), against 2.5e-5 for gemma3-exact.
    Returns the largest difference."""
    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from gemma_export import load_reference

    model, tokenizer = load_reference(hf)
    ids = tokenizer(LONG_PROMPT).input_ids[:end]
    with torch.no_grad():
        want = model(input_ids=torch.tensor([ids])).logits[0]
    request = compile_ir(xml).create_infer_request()
    worst = 0.0
    values, top = step(request, ids[:start], top_k=8)
    for position in range(start - 1, end):
        if position >= start:
            values, top = step(request, ids[position : position + 1], top_k=8)
        diff = max(abs(v - float(want[position, t])) for v, t in zip(values, top, strict=True))
        same = top[0] == int(want[position].argmax())
        print(json.dumps({"position": position, "max_abs_diff_top8": diff, "same_argmax": same}))
        worst = max(worst, diff)
    return worst


def head(xml: Path, hf: Path) -> None:
    """The sampling head against transformers' RepetitionPenaltyLogitsProcessor:
    penalised logits, sorted, for several penalties (ids repeated on purpose),
    and top_k from 1 to the whole vocabulary."""
    import torch
    from transformers import RepetitionPenaltyLogitsProcessor

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from gemma_export import load_reference

    model, tokenizer = load_reference(hf)
    ids = tokenizer(PROMPTS[0]).input_ids
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[:, -1]
    compiled = compile_ir(xml)
    # Seen tokens as the app passes them (the prompt, repeats and all), plus
    # the top few of the unpenalised logits, so that the penalty reorders them.
    seen = ids + [int(t) for t in logits[0].topk(5).indices] + ids[:3]
    for penalty in (1.0, 1.3, 0.7):
        want = RepetitionPenaltyLogitsProcessor(penalty)(torch.tensor([seen]), logits.clone())[0]
        for k in (1, 50, want.numel()):
            values, top = step(compiled.create_infer_request(), ids, k, seen, penalty)
            expected = want.topk(k)
            diff = max(abs(v - float(want[t])) for v, t in zip(values, top, strict=True))
            print(json.dumps({
                "penalty": penalty, "top_k": k, "returned": len(top),
                "same_ids_first_50": top[:50] == [int(t) for t in expected.indices[:50]],
                "sorted": all(a >= b for a, b in zip(values, values[1:], strict=False)),
                "max_abs_diff": diff,
            }))  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    a = sub.add_parser("agree")
    a.add_argument("gemma3", type=Path)
    a.add_argument("variants", nargs="*", default=["gemma3-exact", "gemma3-fast"])
    a.add_argument("--tokens", type=int, default=64)
    a.add_argument("--prompts", type=Path, help="a JSON list of prompts (default: PROMPTS)")
    a.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a compile property for every variant")  # fmt: skip
    b = sub.add_parser("bench")
    b.add_argument("variant", type=Path)
    b.add_argument("--threads", type=int, default=None)
    b.add_argument("--buffer", action="store_true")
    b.add_argument("--prompt-tokens", type=int, default=256)
    b.add_argument("--decode", type=int, default=64)
    b.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a compile property, e.g. KV_CACHE_PRECISION=f16")  # fmt: skip
    w = sub.add_parser("window")
    w.add_argument("variant", type=Path)
    h = sub.add_parser("head")
    h.add_argument("variant", type=Path)
    p = sub.add_parser("perplexity")
    p.add_argument("gemma3", type=Path)
    p.add_argument("variants", nargs="*", default=["gemma3-exact", "gemma3-fast"])
    p.add_argument("--tokens", type=int, default=1024)
    args = parser.parse_args()
    if args.command == "agree":
        prompts = json.loads(args.prompts.read_text()) if args.prompts else PROMPTS
        settings = dict(s.split("=", 1) for s in args.set)
        agree(args.gemma3, args.variants, args.tokens, prompts, settings)
    elif args.command == "bench":
        xml = args.variant / "model.xml"
        bench(xml, args.threads, args.buffer, args.prompt_tokens, args.decode, args.set)
    elif args.command == "perplexity":
        perplexity(args.gemma3, args.variants, args.tokens)
    elif args.command == "window":
        window(args.variant / "model.xml", args.variant.parent / "hf")
    else:
        head(args.variant / "model.xml", args.variant.parent / "hf")


if __name__ == "__main__":
    main()

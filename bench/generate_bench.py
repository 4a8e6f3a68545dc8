"""The generation benchmark: Gemma 3 270M (the Q4_K_M GGUF apps/generate's
prepare.py takes from PyPI) generating greedily, three ways side by side:

- the component: ``./build.sh run generate --prompts FILE --json
  --max-tokens 64 --temperature 0 --precision fast|exact``, its own clock
  (``first_token_s``, prefill included, and ``total_s``). The host's OpenVINO
  picks its thread count itself (wasi-nn has no way to set it), so the
  component has one row per prompt, "host default"; its peak RSS is the
  wasmtime process's (``wait4``, as bench/run.py's start-up, from a small
  process: see SPAWN), which preloads both variants
  (apps/generate/build.txt), whichever one runs;
- native OpenVINO on the same IR (``build/models/gemma3/gemma3-fast`` and
  ``gemma3-exact``), compiled with ``core.compile_model(core.read_model(xml),
  "CPU", config)`` so the IR's own rt_info settings apply, with
  ``INFERENCE_NUM_THREADS`` 1, 2 and OpenVINO's default; the same calls the
  app makes (one infer request per generation: an empty KV cache; the prompt
  in one infer, then one infer per token, ``top_k`` 1), each setting in a
  process of its own so that its peak RSS (``VmHWM``) is its own;
- llama.cpp on the GGUF itself (bench/llama_cpp.py: llama-cpp-python 0.3.36
  built from its sdist for this CPU, in a venv of its own), 1 and 2 threads.

Every engine gets the same token ids: the component encodes the text itself
(its tokenizer is transformers' token for token, tests/test_tokenizer.py),
the others get the ids of transformers' tokenizer (the one prepare.py saves,
``build/models/gemma3/hf-tokenizer``); the table says whether the component's
prompt token counts matched. Prompts: a short one (9 tokens with ``<bos>``)
and a long one (about 1,000 tokens: the opening of CPython's LICENSE.txt,
English prose, cut at a line end).

Figures, per engine, prompt and thread count, the median over rounds (each
round one process per setting, the settings in turn, each process first
making one untimed generation from the short prompt):
time to first token (the prompt's infer and the choice of the first token;
for the component also the start of its session), prefill tokens/s = prompt
tokens / that time (the app's own ``Stats`` definition, the same for all),
decode tokens/s = tokens after the first / the time after it (64 new tokens;
the native engines never stop early; the component stops at ``<eos>``, and
then its rate is per model step, eos included), and peak RSS. Ratios:
component / llama.cpp at its best thread setting (``ratios`` says why) for
decode (goal >= 1) and prefill (goal >= 2).

    ./build.sh bench --only generate          # results/generate.{md,json}
    .venv/bin/python bench/generate_bench.py [--quick] [--engines llama,native]

Not part of ``./build.sh bench`` or ``--quick`` (the first run builds
llama.cpp for about 10 minutes, and the app's model preparation is long): only
``--only generate`` runs it.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "build" / "models" / "gemma3"
sys.path.insert(0, str(Path(__file__).resolve().parent))
import llama_cpp  # noqa: E402  (bench/llama_cpp.py, beside this file, not the package)

DEFAULT_GGUF = llama_cpp.DEFAULT_GGUF
VARIANTS = {"fast": MODELS / "gemma3-fast" / "model.xml",
            "exact": MODELS / "gemma3-exact" / "model.xml"}  # fmt: skip
#: transformers' tokenizer, where prepare.py saves it, then a colleague's copy;
#: without either the GGUF itself is read (about 50 s).
TOKENIZERS = (MODELS / "hf-tokenizer", Path("/tmp/gemma-tok"))
SHORT_PROMPT = "Once upon a time, there was a"
LONG_TOKENS = 1000
NEW_TOKENS = 64
THREADS = (1, 2)
ROUNDS, QUICK_ROUNDS = 3, 1
#: The one thread setting of a quick run: all this machine's cores.
QUICK_THREADS = max(THREADS)
GOALS = {"decode": 1.0, "prefill": 2.0}
FIGURES = ("first_token_ms", "prefill_tok_s", "decode_tok_s")


# ---------------------------------------------------------------- prompts


def load_tokenizer(path: Path | None, gguf: Path) -> Callable[[str], list[int]]:
    """transformers' Gemma 3 tokenizer (``<bos>`` first): from ``path``, else
    the first of TOKENIZERS that exists, else built from the GGUF."""
    from transformers import AutoTokenizer

    found = path or next((p for p in TOKENIZERS if (p / "tokenizer.json").is_file()), None)
    if found is not None:
        tok = AutoTokenizer.from_pretrained(str(found))
    elif not gguf.is_file():
        raise SystemExit(f"bench: generate: no tokenizer ({', '.join(map(str, TOKENIZERS))}) "
                         f"and no GGUF ({gguf}): build apps/generate first "
                         "(./build.sh build generate), or give --tokenizer and --gguf")  # fmt: skip
    else:
        print(f"bench: generate: no saved tokenizer; reading {gguf} (about 50 s)", file=sys.stderr)
        tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)

    def encode(text: str) -> list[int]:
        return [int(i) for i in tok(text)["input_ids"]]

    return encode


def long_text(encode: Callable[[str], list[int]], limit: int = LONG_TOKENS) -> str:
    """The longest run of whole lines from the start of CPython's LICENSE.txt
    that stays within ``limit`` tokens: real English prose (its history of
    Python first), present wherever CPython is, fixed for a given Python."""
    lines = (Path(sysconfig.get_paths()["stdlib"]) / "LICENSE.txt").read_text().splitlines(True)
    text = ""
    for line in lines:
        if len(encode(text + line)) > limit:
            break
        text += line
    return text


def prompts(encode: Callable[[str], list[int]]) -> dict[str, dict[str, Any]]:
    """The short and the long prompt: their text and token ids."""
    texts = {"short": SHORT_PROMPT, "long": long_text(encode)}
    return {name: {"text": text, "ids": encode(text)} for name, text in texts.items()}


# ---------------------------------------------------------------- engines
#
# Each engine runs in a fresh process per setting and round, and returns one
# run per prompt: {first_token_ms, prefill_tok_s, decode_tok_s, tokens,
# prompt_tokens, peak_rss_mb} (and what else it knows). Every process first
# makes one untimed generation from the short prompt: first use of buffers
# and kernels is not what a generation costs, and every engine gets the same.


def peak_rss_mb() -> float:
    """This process's peak resident set so far: ``VmHWM``, which starts
    afresh at exec, where ``ru_maxrss`` keeps the spawning process's size
    (this benchmark's, transformers loaded: 700 MB)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


#: ``python -c SPAWN OUT COMMAND...``: runs COMMAND as its child and writes
#: ``[exit code, peak RSS in KiB]`` (``wait4``) to OUT. The benchmark is
#: large (transformers), and a child's ``ru_maxrss`` starts from the size
#: of the process that spawned it; this small one spawns the component.
SPAWN = """
import json, os, sys
pid = os.fork()
if pid == 0:
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    except OSError as error:
        print(f"cannot run {sys.argv[2]}: {error}", file=sys.stderr)
    os._exit(127)
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as out:
    json.dump([os.waitstatus_to_exitcode(status), usage.ru_maxrss], out)
"""


def native_worker(job: dict[str, Any]) -> dict[str, Any]:
    """Native OpenVINO on one IR and thread setting, in this process (a child
    of the benchmark's, so that its peak RSS is this setting's own)."""
    import numpy as np
    import openvino as ov

    start = time.perf_counter()
    core = ov.Core()
    config = {} if job["threads"] is None else {"INFERENCE_NUM_THREADS": job["threads"]}
    compiled = core.compile_model(core.read_model(job["xml"]), "CPU", config)
    load_ms = (time.perf_counter() - start) * 1e3
    # The app's inputs for greedy decoding: no penalty, one candidate.
    fixed = {"penalized_ids": np.array([0], np.int64), "penalty": np.array([1.0], np.float32),
             "top_k": np.array([1], np.int64)}  # fmt: skip

    def one(ids: list[int]) -> dict[str, Any]:
        begin = time.perf_counter()
        request = compiled.create_infer_request()  # a new sequence: an empty KV cache
        request.infer({"input_ids": np.array([ids], np.int64), **fixed})
        tokens = [int(request.get_tensor("top_ids").data[0])]
        first = time.perf_counter()
        for _ in range(job["new_tokens"] - 1):
            request.infer({"input_ids": np.array([[tokens[-1]]], np.int64), **fixed})
            tokens.append(int(request.get_tensor("top_ids").data[0]))
        end = time.perf_counter()
        return {"first_token_ms": (first - begin) * 1e3,
                "prefill_tok_s": len(ids) / (first - begin),
                "decode_tok_s": (len(tokens) - 1) / (end - first), "tokens": tokens,
                "prompt_tokens": len(ids), "peak_rss_mb": peak_rss_mb()}  # fmt: skip

    one(job["warmup"])
    runs = [one(ids) for ids in job["prompts"]]
    return {"load_ms": load_ms, "prompts": runs,
            "properties": {name: str(compiled.get_property(name)) for name in
                           ("INFERENCE_NUM_THREADS", "INFERENCE_PRECISION_HINT",
                            "KV_CACHE_PRECISION", "NUM_STREAMS")}}  # fmt: skip


def native(xml: Path, threads: int | None, ids: Sequence[list[int]]) -> dict[str, Any]:
    """``native_worker`` in a fresh process of this Python."""
    job = {"xml": str(xml), "threads": threads, "prompts": list(ids), "warmup": ids[0],
           "new_tokens": NEW_TOKENS}  # fmt: skip
    done = subprocess.run([sys.executable, __file__, "--native-worker", json.dumps(job)],
                          capture_output=True, text=True, timeout=3600)  # fmt: skip
    if done.returncode:
        raise RuntimeError(f"native OpenVINO failed on {xml}:\n{done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def llama(threads: int, ids: Sequence[list[int]], gguf: Path) -> dict[str, Any]:
    """llama.cpp (bench/llama_cpp.py), its figures named as the others' are."""
    result = llama_cpp.measure(ids, threads=threads, new_tokens=NEW_TOKENS, warmup=ids[0],
                               gguf=gguf)  # fmt: skip
    for run in result["prompts"]:
        # The same definition as the others (prompt tokens / time to first
        # token); llama.cpp's eval alone stays beside it.
        run["prefill_eval_tok_s"] = run["prefill_tok_s"]
        run["prefill_tok_s"] = run["prompt_tokens"] / (run["first_token_ms"] / 1e3)
    return result


def build_component() -> None:
    """``./build.sh build generate`` on its own, before any timed run: the
    runs then only check the stamp, so their peak RSS is not a build's."""
    if not (ROOT / "apps" / "generate" / "app.py").is_file():
        raise RuntimeError("apps/generate is missing")
    built = subprocess.run([str(ROOT / "build.sh"), "build", "generate"], capture_output=True,
                           text=True, timeout=7200)  # fmt: skip
    if built.returncode:
        raise RuntimeError(f"./build.sh build generate failed:\n{built.stderr[-2000:]}")


def component(precision: str, texts: Sequence[str]) -> dict[str, Any]:
    """The generate component: the short prompt (the warm-up), then each
    prompt, in one process (the model is preloaded once, as a user's run
    has it)."""
    with tempfile.TemporaryDirectory() as tmp:
        lines = [json.dumps(t) for t in [texts[0], *texts]]
        Path(tmp, "prompts.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        # `./build.sh run` execs wasmtime in the process SPAWN waits for:
        # its peak RSS is wasmtime's (or that of the stamp check before it,
        # far smaller).
        command = [str(ROOT / "build.sh"), "run", "generate", "--prompts", "prompts.jsonl",
                   "--json", "--max-tokens", str(NEW_TOKENS), "--temperature", "0",
                   "--precision", precision]  # fmt: skip
        done = subprocess.run([sys.executable, "-I", "-S", "-c", SPAWN, "usage.json", *command],
                              cwd=tmp, capture_output=True, text=True, timeout=7200)  # fmt: skip
        code, maxrss_kib = json.loads(Path(tmp, "usage.json").read_text())
    if done.returncode or code:
        raise RuntimeError(f"the generate component failed ({precision}, exit {code}):\n"
                           f"{done.stderr[-2000:]}")  # fmt: skip
    results = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    if len(results) != len(lines):
        raise RuntimeError(f"the generate component printed {len(results)} results for "
                           f"{len(lines)} prompts")  # fmt: skip
    runs = []
    for r in results[1:]:
        # The model steps after the first: one per token, plus the step
        # that produced <eos> when the generation stopped there.
        steps = len(r["tokens"]) - 1 + (r["finish_reason"] == "stop")
        rest = r["total_s"] - r["first_token_s"]
        runs.append({"first_token_ms": r["first_token_s"] * 1e3,
                     "prefill_tok_s": r["prompt_tokens"] / r["first_token_s"],
                     "decode_tok_s": steps / rest if steps and rest > 0 else None,
                     "tokens": r["tokens"], "prompt_tokens": r["prompt_tokens"],
                     "finish_reason": r["finish_reason"],
                     "peak_rss_mb": maxrss_kib / 1024})  # fmt: skip
    return {"prompts": runs}


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One setting's row for one prompt: the median of each figure over the
    rounds, the largest peak RSS, the first round's tokens."""
    row: dict[str, Any] = {}
    for name in FIGURES:
        # None: no decode rate (the component met <eos> at once).
        values = [r[name] for r in runs if r[name] is not None]
        row[name] = statistics.median(values) if values else None
    row.update(rounds=len(runs), prompt_tokens=runs[0]["prompt_tokens"],
               peak_rss_mb=max(r["peak_rss_mb"] for r in runs), tokens=runs[0]["tokens"],
               same_tokens_every_round=all(r["tokens"] == runs[0]["tokens"] for r in runs),
               each_round={name: [r[name] for r in runs] for name in FIGURES})  # fmt: skip
    if "finish_reason" in runs[0]:
        row["finish_reason"] = runs[0]["finish_reason"]
    return row


# ---------------------------------------------------------------- the case


def measure(
    quick: bool,
    *,
    gguf: Path = DEFAULT_GGUF,
    tokenizer: Path | None = None,
    engines: Sequence[str] = ("component", "native", "llama"),
) -> dict[str, Any]:
    """Every engine, prompt and thread setting, in rounds (one process of
    each setting per round, so that the machine's drift hits all alike);
    rows for the table, the ratios, and why any engine was not measured."""
    rounds = QUICK_ROUNDS if quick else ROUNDS
    threads: tuple[int, ...] = (QUICK_THREADS,) if quick else THREADS
    missing: list[str] = []
    built = False
    if "component" in engines:
        # First: the app's prepare.py makes the GGUF, the IRs and the
        # tokenizer the other engines use.
        try:
            build_component()
            built = True
        except (RuntimeError, OSError) as exc:
            missing.append(f"component: {str(exc).strip().splitlines()[0]}")
            print(f"bench: generate: component not measured: {exc}", file=sys.stderr)
    given = prompts(load_tokenizer(tokenizer, gguf))
    names = list(given)
    ids = [given[n]["ids"] for n in names]
    texts = [given[n]["text"] for n in names]

    # The settings: (engine, variant, threads) -> one round's work.
    settings: dict[tuple[str, str, int | str], Callable[[], dict[str, Any]]] = {}
    if built:
        for precision in VARIANTS:
            settings["component", precision, "host default"] = partial(
                component, precision, texts)
    if "native" in engines:
        for variant, xml in VARIANTS.items():
            if not xml.is_file():
                missing.append(f"native OpenVINO {variant}: no {xml.relative_to(ROOT)} "
                               "(apps/generate/prepare.py writes it)")  # fmt: skip
                continue
            for thread in (*threads, None):
                settings["native OpenVINO", variant, thread or "default"] = partial(
                    native, xml, thread, ids)
    if "llama" in engines:
        for thread in threads:
            settings["llama.cpp", "Q4_K_M", thread] = partial(llama, thread, ids, gguf)

    #: Per setting, per round: one run per prompt.
    runs: dict[tuple[str, str, int | str], list[list[dict[str, Any]]]] = {s: [] for s in settings}
    # The machine is shared: how busy it was says how far to trust the run
    # (llama.cpp's OpenMP threads spin at barriers and suffer most when a
    # core is taken).
    load_before = os.getloadavg()
    #: What each setting said of itself (load time, properties); None: failed.
    about: dict[tuple[str, str, int | str], dict[str, Any] | None] = {}
    for number in range(rounds):
        for setting, work in settings.items():
            if setting in about and about[setting] is None:
                continue  # failed in an earlier round
            label = " ".join(str(part) for part in setting)
            try:
                result = work()
            except (RuntimeError, OSError, llama_cpp.Unavailable) as exc:
                missing.append(f"{label}: {str(exc).strip().splitlines()[0]}")
                print(f"bench: generate: {label} not measured: {exc}", file=sys.stderr)
                about[setting] = None
                continue
            about.setdefault(setting, {k: v for k, v in result.items() if k != "prompts"})
            runs[setting].append(result["prompts"])
            for name, run in zip(names, result["prompts"], strict=True):
                print(f"bench: generate: round {number + 1}/{rounds}: {label} {name}: first "
                      f"token {run['first_token_ms']:.0f} ms, prefill "
                      f"{run['prefill_tok_s']:.0f} tok/s, decode "
                      f"{run['decode_tok_s'] or 0:.1f} tok/s", file=sys.stderr)  # fmt: skip
    rows = []
    for setting, done in runs.items():
        if about.get(setting) is None:
            continue
        for i, name in enumerate(names):
            row = summarise([each[i] for each in done])
            row.update(engine=setting[0], variant=setting[1], threads=setting[2], prompt=name)
            rows.append(row)
    return {"quick": quick, "new_tokens": NEW_TOKENS, "rounds": rounds, "prompts": given,
            "load_average": {"before": load_before, "after": os.getloadavg()},
            "rows": rows, "ratios": ratios(rows), "agreement": agreement(rows),
            "not_measured": missing,
            "engines": {" ".join(map(str, s)): a for s, a in about.items() if a is not None},
            "llama_cpp_build": {"cache": str(llama_cpp.cache_dir()),
                                "cmake_args": llama_cpp.CMAKE_ARGS}}  # fmt: skip


def ratios(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Component / llama.cpp per precision and prompt, against llama.cpp's
    best thread setting for each figure: on two shared cores its OpenMP
    threads wait for each other at every operation when another process
    holds a core (2 threads were seen at 4 tok/s where 1 made 46, and at
    75 where 1 made 51 when the machine was quiet), so a fixed setting would
    flatter or wrong it by chance. Native OpenVINO's default threads beside
    it tell the component's own costs from OpenVINO's."""
    llama = [r for r in rows if r["engine"] == "llama.cpp"]
    out = []
    for r in rows:
        mine = [b for b in llama if b["prompt"] == r["prompt"]]
        compared = r["engine"] == "component" or (
            r["engine"] == "native OpenVINO" and r["threads"] == "default")
        if not compared or not mine:
            continue
        decode = max(mine, key=lambda b: b["decode_tok_s"])
        prefill = max(mine, key=lambda b: b["prefill_tok_s"])
        out.append({"engine": r["engine"], "variant": r["variant"], "prompt": r["prompt"],
                    "decode": r["decode_tok_s"] and r["decode_tok_s"] / decode["decode_tok_s"],
                    "prefill": r["prefill_tok_s"] / prefill["prefill_tok_s"],
                    "llama_threads": {"decode": decode["threads"],
                                      "prefill": prefill["threads"]}})  # fmt: skip
    out.sort(key=lambda q: q["engine"] != "component")  # the goals' rows first
    return out


def agreement(rows: list[dict[str, Any]]) -> dict[str, int]:
    """How many leading greedy tokens each row shares with native OpenVINO
    exact at the same prompt (exact is the reference computation; the fast
    variant's int8 weights and llama.cpp's Q4_K_M kernels may drift)."""
    ref = {r["prompt"]: r["tokens"] for r in rows
           if r["engine"] == "native OpenVINO" and r["variant"] == "exact"}  # fmt: skip
    out = {}
    for r in rows:
        if r["prompt"] in ref:
            same = 0
            for a, b in zip(r["tokens"], ref[r["prompt"]], strict=False):
                if a != b:
                    break
                same += 1
            out[key(r)] = same
    return out


def key(row: dict[str, Any]) -> str:
    """A row's name in ``agreement``'s result (JSON keys are strings)."""
    return f"{row['engine']} {row['variant']} {row['threads']} {row['prompt']}"


def median(rounds: int) -> str:
    """How the table's figures were taken, in words."""
    return f"median of {rounds} rounds" if rounds > 1 else "one round"


def report(data: dict[str, Any]) -> list[str]:
    """The benchmark's markdown section."""
    given = data["prompts"]
    counts = ", ".join(f"{n} {len(p['ids'])}" for n, p in given.items())
    lines = ["", f"## Generation: Gemma 3 270M, {data['new_tokens']} greedy tokens "
             f"({median(data['rounds'])})", "",
             f"Prompt tokens (transformers' tokenizer, `<bos>` included): {counts}. Prefill "
             "tokens/s = prompt tokens / time to first token; decode tokens/s = tokens after "
             "the first / the time after it. The component's host OpenVINO chooses its own "
             "thread count (wasi-nn cannot set it): its rows are the host's default.", "",
             "| engine | variant | threads | prompt | first token (ms) | prefill tok/s | "
             "decode tok/s | peak RSS (MB) | greedy tokens = native exact |",
             "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    same = data["agreement"]
    for r in data["rows"]:
        rss = "n/a" if r.get("peak_rss_mb") is None else f"{r['peak_rss_mb']:.0f}"
        decode = "n/a" if r["decode_tok_s"] is None else f"{r['decode_tok_s']:.1f}"
        agree = f"{same[key(r)]}/{len(r['tokens'])}" if key(r) in same else "n/a"
        tokens = r["prompt_tokens"]
        prompt = r["prompt"] + ("" if tokens == len(given[r["prompt"]]["ids"])
                                else f" ({tokens} tokens!)")  # fmt: skip
        lines.append(f"| {r['engine']} | {r['variant']} | {r['threads']} | {prompt} | "
                     f"{r['first_token_ms']:.1f} | {r['prefill_tok_s']:.0f} | {decode} | "
                     f"{rss} | {agree} |")  # fmt: skip
    if data["ratios"]:
        lines += ["", "Against llama.cpp at its best thread setting for each figure; "
                  "the component's goals: decode >= "
                  f"{GOALS['decode']:g}, prefill >= {GOALS['prefill']:g}:", "",
                  "| engine | variant | prompt | decode | prefill |",
                  "|---|---|---|---|---|"]  # fmt: skip
        for q in data["ratios"]:
            marks = {k: "n/a" if q[k] is None else f"{q[k]:.2f}" for k in GOALS}
            if q["engine"] == "component":
                marks = {k: f"**{marks[k]}**" if q[k] and q[k] >= GOALS[k] else
                         f"{marks[k]} (missed)" for k in GOALS}  # fmt: skip
            best = {k: f"vs {n} thread" + ("s" if n != 1 else "")
                    for k, n in q["llama_threads"].items()}  # fmt: skip
            lines.append(f"| {q['engine']} | {q['variant']} | {q['prompt']} | "
                         f"{marks['decode']} ({best['decode']}) | "
                         f"{marks['prefill']} ({best['prefill']}) |")  # fmt: skip
    native_default = [engine["properties"]["INFERENCE_NUM_THREADS"]
                      for name, engine in data["engines"].items()
                      if name.endswith(" default") and "properties" in engine]  # fmt: skip
    if native_default:
        lines += ["", f"OpenVINO's default INFERENCE_NUM_THREADS natively: {native_default[0]}."]
    before, after = (", ".join(f"{x:.1f}" for x in data["load_average"][when])
                     for when in ("before", "after"))  # fmt: skip
    lines += ["", f"Load average (1, 5, 15 min) before the run: {before}; after: {after} "
              f"({os.cpu_count()} cores, shared with other work)."]  # fmt: skip
    if data["not_measured"]:
        lines += ["", "Not measured: " + "; ".join(data["not_measured"]) + "."]
    lines += ["", f"llama.cpp: llama-cpp-python {llama_cpp.VERSION} built from its sdist with "
              f"`CMAKE_ARGS={llama_cpp.CMAKE_ARGS}` (bench/llama_cpp.py), `n_ctx=4096`, "
              "`n_batch=512`, argmax of the last logits each step; the component and native "
              "OpenVINO run the IR apps/generate/prepare.py makes from the same GGUF. Peak RSS: "
              "the component's wasmtime, which preloads the fast variant, and the exact one too "
              "for --precision exact."]  # fmt: skip
    return lines


def write(data: dict[str, Any], out_dir: Path) -> None:
    """``out_dir/generate.{md,json}``, dated."""
    write_named("generate", data, out_dir, report)


def write_named(
    name: str, data: dict[str, Any], out_dir: Path, report: Callable[[dict[str, Any]], list[str]]
) -> None:
    """``out_dir/NAME.json`` (the figures, first) and ``NAME.md`` (``report``'s
    lines under a dated heading); also for bench/completions_bench.py."""
    data["date"] = time.strftime("%Y-%m-%d")
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"{name}.json").write_text(json.dumps(data, indent=1))
    head = [f"# wasinn benchmark: {name}", "",
            f"{'Quick run (not for quoting)' if data['quick'] else 'Full run'} on "
            f"{data['date']}."]  # fmt: skip
    (out_dir / f"{name}.md").write_text("\n".join(head + report(data)) + "\n")
    print(f"bench: wrote {out_dir / f'{name}.md'}", file=sys.stderr)


def run(quick: bool, out_dir: Path) -> dict[str, Any]:
    """Measure, then write ``out_dir/generate.{md,json}``."""
    data = measure(quick)
    write(data, out_dir)
    return data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    parser.add_argument("--gguf", type=Path, default=DEFAULT_GGUF)
    parser.add_argument("--tokenizer", type=Path, default=None)
    parser.add_argument("--engines", default="component,native,llama",
                        help="comma-separated: component, native, llama")  # fmt: skip
    parser.add_argument("--native-worker", metavar="JOB", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.native_worker:
        json.dump(native_worker(json.loads(args.native_worker)), sys.stdout)
        return
    data = measure(args.quick, gguf=args.gguf, tokenizer=args.tokenizer,
                   engines=args.engines.split(","))  # fmt: skip
    write(data, args.out)
    print("\n".join(report(data)))

if __name__ == "__main__":
    main()

"""Time llama.cpp on given token ids: run by bench/llama_cpp.py with the
Python of llama-cpp-python's own venv (never .venv's), stdlib + llama_cpp
(and numpy, which llama_cpp needs anyway, for a zero-copy argmax).

    python -I llama_cpp_runner.py JOB.json   # JSON out on stdout

JOB: ``{"model": gguf, "threads": T, "new_tokens": N, "warmup": [ids] or
null, "prompts": [[ids], ...]}``. The model is loaded once (``n_ctx=4096``,
``n_batch=512``, ``logits_all=False``: only the last position's logits are
computed, as the component's model computes them). The warm-up prompt runs
first, untimed (the component and native OpenVINO get the same: first use of
buffers is not what a generation costs). Then each prompt once, after
``reset()`` (the next eval drops the KV cache from position 0); the caller
repeats processes, in rounds with the other engines, so that the machine's
drift hits all alike:

- prefill: ``llm.eval(ids)``;
- first token: prefill + argmax of the last logits (the first new token);
- decode: N - 1 more greedy steps, ``llm.eval([token])`` then argmax each;
  tokens/s = (N - 1) / their time, the same definition the benchmark uses
  for the component (tokens after the first over the time after it);
- peak RSS of this process so far (``VmHWM``; the weights are mapped,
  so it counts the pages of them that were touched).

End-of-sequence tokens do not stop the decode: every engine makes exactly N
tokens, so the rates compare like with like.
"""

from __future__ import annotations

import importlib
import json
import resource
import sys
import time
from typing import Any

import numpy as np

# Only in its own venv, untyped for mypy: looked up by name, since beside
# this file bench/llama_cpp.py has the same name (here -I keeps it off the path).
llama_cpp: Any = importlib.import_module("llama_cpp")


def peak_rss_mb() -> float:
    """This process's peak resident set so far: ``VmHWM``, which starts
    afresh at exec. ``ru_maxrss`` does not: it keeps the spawning process's
    size at the exec (the benchmark's, transformers loaded: 700 MB here)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def greedy(llm: Any, n_vocab: int) -> int:
    """The argmax of the last evaluated position's logits, read in place
    (``logits_all=False`` leaves ``llm.scores`` unfilled in 0.3.x)."""
    pointer = llama_cpp.llama_get_logits_ith(llm.ctx, -1)
    return int(np.ctypeslib.as_array(pointer, shape=(n_vocab,)).argmax())


def one(llm: Any, ids: list[int], new_tokens: int) -> dict[str, Any]:
    """One prompt from an empty cache: prefill, first token, greedy decode."""
    n_vocab = llm.n_vocab()
    llm.reset()
    start = time.perf_counter()
    llm.eval(ids)
    prefilled = time.perf_counter()
    tokens = [greedy(llm, n_vocab)]
    first = time.perf_counter()
    for _ in range(new_tokens - 1):
        llm.eval([tokens[-1]])
        tokens.append(greedy(llm, n_vocab))
    end = time.perf_counter()
    decode_s = end - first
    return {
        "prompt_tokens": len(ids),
        "prefill_ms": (prefilled - start) * 1e3,
        "prefill_tok_s": len(ids) / (prefilled - start),
        "first_token_ms": (first - start) * 1e3,
        "decode_tok_s": (new_tokens - 1) / decode_s if decode_s > 0 else None,
        "total_ms": (end - start) * 1e3,
        "tokens": tokens,
        "peak_rss_mb": peak_rss_mb(),
    }


def main() -> None:
    with open(sys.argv[1]) as handle:
        job = json.load(handle)
    start = time.perf_counter()
    llm = llama_cpp.Llama(
        model_path=job["model"],
        n_ctx=4096,
        n_threads=job["threads"],
        n_threads_batch=job["threads"],  # prefill too, not llama.cpp's default of all cores
        n_batch=512,
        logits_all=False,
        verbose=False,
    )
    load_ms = (time.perf_counter() - start) * 1e3
    rss_loaded = peak_rss_mb()
    if job.get("warmup"):
        one(llm, job["warmup"], job["new_tokens"])
    results = [one(llm, ids, job["new_tokens"]) for ids in job["prompts"]]
    out = {"engine": "llama.cpp", "version": llama_cpp.__version__, "threads": job["threads"],
           "new_tokens": job["new_tokens"], "load_ms": load_ms, "rss_after_load_mb": rss_loaded,
           "system_info": llama_cpp.llama_print_system_info().decode(errors="replace"),
           "prompts": results}  # fmt: skip
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

"""The reference for apps/generate: transformers on the GGUF's weights, f32, greedy.

transformers 5.23 reads the Q4_K_M GGUF and dequantises every weight to f32;
apps/generate/prepare.py saves that model (build/models/gemma3/hf) and its
tokenizer (build/models/gemma3/hf-tokenizer). This module runs ``generate``
with ``do_sample=False`` on the prompts of tests/data/generate_prompts.jsonl.

Sixty-four tokens for twenty prompts take transformers a few minutes on this
machine, so the result is kept in tests/data/generate_greedy.json, made by
``.venv/bin/python tests/generate_oracle.py`` (and again whenever the model,
transformers or the prompts change: the file records all three, and
tests/test_generate_app.py re-runs part of it live to show it still holds).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "build" / "models" / "gemma3"
PROMPTS = ROOT / "tests" / "data" / "generate_prompts.jsonl"
GREEDY = ROOT / "tests" / "data" / "generate_greedy.json"
NEW_TOKENS = 64


def prompts() -> list[str]:
    return [json.loads(line) for line in PROMPTS.read_text(encoding="utf-8").splitlines() if line]


def prompts_digest() -> str:
    return hashlib.sha256(PROMPTS.read_bytes()).hexdigest()


def load() -> tuple[Any, Any]:
    """transformers' model (f32) and tokenizer, from what prepare.py saved."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(MODELS / "hf", dtype=torch.float32)
    model.eval()
    tokenizer = AutoTokenizer.from_pretrained(MODELS / "hf-tokenizer")
    return model, tokenizer


def greedy(model: Any, ids: list[int], new_tokens: int = NEW_TOKENS) -> list[int]:
    """The greedy continuation of ``ids``, stopping before ``<eos>`` as the app does."""
    import torch

    with torch.no_grad():
        out = model.generate(
            torch.tensor([ids]), max_new_tokens=new_tokens, do_sample=False, top_p=None,
            top_k=None, temperature=None, pad_token_id=0,
        )  # fmt: skip
    tokens = [int(t) for t in out[0, len(ids) :]]
    eos = int(model.config.eos_token_id)
    return tokens[: tokens.index(eos)] if eos in tokens else tokens


def main() -> None:
    import transformers

    model, tokenizer = load()
    results = []
    for i, text in enumerate(prompts()):
        ids = tokenizer(text).input_ids
        tokens = greedy(model, ids)
        results.append({"prompt_tokens": len(ids), "tokens": tokens})
        print(f"{i}: {len(ids)} prompt tokens -> {tokenizer.decode(tokens)!r}", file=sys.stderr)
    stamp = json.loads((MODELS / "prepared.json").read_text())
    doc = {
        "what": "transformers greedy continuations of tests/data/generate_prompts.jsonl",
        "transformers": transformers.__version__,
        "gguf_sha256": stamp["ir"]["gguf_sha256"],
        "prompts_sha256": prompts_digest(),
        "new_tokens": NEW_TOKENS,
        "results": results,
    }
    GREEDY.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {GREEDY}", file=sys.stderr)


if __name__ == "__main__":
    main()

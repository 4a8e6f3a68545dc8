"""apps/generate in a real component on the wasmtime CLI's OpenVINO backend.

The exact variant must continue every prompt of tests/data/generate_prompts.jsonl
(English, code, Japanese, French, HTML, SQL, emoji, whitespace, and one report
of ~1,500 tokens, far past the 512-token sliding window) with the very tokens
transformers picks greedily on the GGUF's f32 weights (tests/generate_oracle.py;
part of it is recomputed here live). The fast variant (int8 weights) is held to
the agreement measured for it. Sampling is reproducible by seed, and bad input
is refused with a message before any work.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import generate_oracle
import pytest
from conftest import ROOT, build_app, run_component

GENERATE = ROOT / "apps" / "generate"


@pytest.fixture(scope="module")
def app() -> Path:
    return build_app(GENERATE)


def _json_runs(app: Path, cwd: Path, *args: str, timeout: float = 600) -> list[dict[str, Any]]:
    done = run_component(app, *args, "--json", cwd=cwd, timeout=timeout)
    done.assert_no_trap()
    assert done.code == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return [json.loads(line) for line in done.stdout.splitlines()]


@pytest.fixture(scope="module")
def oracle() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(generate_oracle.GREEDY.read_text())
    assert doc["prompts_sha256"] == generate_oracle.prompts_digest(), (
        "tests/data/generate_prompts.jsonl changed: run tests/generate_oracle.py again"
    )
    return doc


def test_exact_variant_equals_transformers_greedy(app: Path, oracle: dict[str, Any]) -> None:
    runs = _json_runs(
        app, generate_oracle.PROMPTS.parent, "--prompts", generate_oracle.PROMPTS.name,
        "--precision", "exact",
        "--temperature", "0", "--max-tokens", str(oracle["new_tokens"]),
    )  # fmt: skip
    want = oracle["results"]
    assert len(runs) == len(want) == 20
    assert max(w["prompt_tokens"] for w in want) > 1024, "one prompt must pass the 512 window"
    for i, (got, ref) in enumerate(zip(runs, want, strict=True)):
        assert got["prompt_tokens"] == ref["prompt_tokens"], f"prompt {i}: tokenized differently"
        assert got["tokens"] == ref["tokens"], f"prompt {i}: {got['text']!r}"


def test_the_kept_oracle_is_what_transformers_still_says(oracle: dict[str, Any]) -> None:
    """The short first prompt and the long last one, recomputed live."""
    model, tokenizer = generate_oracle.load()
    texts = generate_oracle.prompts()
    for i in (0, len(texts) - 1):
        ids = tokenizer(texts[i]).input_ids
        assert generate_oracle.greedy(model, ids) == oracle["results"][i]["tokens"], i


def test_a_seed_gives_the_same_text_and_stop_strings_end_it(app: Path, tmp_path: Path) -> None:
    prompt = "The best way to learn a new language is"
    (tmp_path / "same.jsonl").write_text(json.dumps(prompt) + "\n" + json.dumps(prompt) + "\n")
    args = ("--prompts", "same.jsonl", "--max-tokens", "24", "--temperature", "1.0")
    seven = _json_runs(app, tmp_path, *args, "--seed", "7")
    assert seven[0]["tokens"] == seven[1]["tokens"] and len(seven[0]["tokens"]) > 0
    eight = _json_runs(app, tmp_path, *args, "--seed", "8")
    assert eight[0]["tokens"] != seven[0]["tokens"]
    # Stop before the continuation's second word: the text is cut just before it.
    whole = seven[0]["text"]
    words = whole.split()
    assert len(words) > 2, whole
    cut = whole.find(words[1])
    stopped = _json_runs(app, tmp_path, *args, "--seed", "7", "--stop", words[1], "--stop", "zzz")
    assert stopped[0]["text"] == whole[:cut] and stopped[0]["finish_reason"] == "stop"


def test_the_command_streams_text_and_refuses_bad_input(app: Path, tmp_path: Path) -> None:
    done = run_component(
        app, "The capital of France is", "--max-tokens", "8", "--temperature", "0", "--stats",
        cwd=tmp_path,
    )  # fmt: skip
    done.assert_no_trap()
    assert done.code == 0 and done.stdout.strip(), done.stderr
    assert "prompt 6 tokens, generated 8 (length)" in done.stderr, done.stderr
    (tmp_path / "long.txt").write_text("word " * 5000)
    cases = {
        "--max-tokens=0": (
            ["x", "--max-tokens", "0"],
            "max_tokens must be a whole number of at least 1",
        ),
        "empty prompt": ([""], "the prompt is empty"),
        "too long": (
            ["--file", "long.txt"],
            "is 5002 tokens and max_tokens is 64: together at most 4096",
        ),
        "temperature": (["x", "--temperature", "-1"], "temperature must be a number from 0"),
        "top-k": (["x", "--top-k", "5000"], "top_k must be a whole number from 0"),
        "precision": (["x", "--precision", "f16"], "precision must be one of fast, exact"),
        "option": (["x", "--frobnicate"], "unknown option --frobnicate"),
        "not a number": (["x", "--top-p", "lots"], "--top-p needs a number, not 'lots'"),
    }
    for name, (args, message) in cases.items():
        bad = run_component(app, *args, cwd=tmp_path)
        bad.assert_no_trap()
        assert bad.code == 1, (name, bad.stdout, bad.stderr)
        assert bad.stderr.startswith("generate: error: "), (name, bad.stderr)
        assert message in bad.stderr, (name, bad.stderr)

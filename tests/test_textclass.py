"""The textclass app as a real component, against transformers (torch) run natively."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT, run_component
from guest_sum import guest_sum

pytestmark = pytest.mark.integration

APP = ROOT / "apps" / "textclass"
MINILM = ROOT / "build" / "models" / "minilm"
LABELS = ["sports", "politics", "technology", "cooking"]
TEXTS = [
    "The striker scored twice in the second half and the team won the cup.",
    "Parliament passed the new budget after a long debate between the parties.",
    "The new phone has a faster chip and runs machine learning models on the device.",
    "Simmer the onions in butter, then add garlic and a pinch of salt.",
    "The coach praised the defence after the narrow victory on Saturday.",
    "Voters will choose a new president in the election next spring.",
    "The startup released an open-source database written in Rust.",
    "Knead the dough for ten minutes and let it rise in a warm place.",
    "Café owners in Zürich complained about the new tax on cheese fondue!",
    "The marathon runner broke the national record by forty seconds.",
    "Senators argued over the immigration bill until late at night.",
    "Bake at 200 degrees until the crust is golden brown.",
]


def native_embeddings(texts: list[str]) -> np.ndarray:
    """sentence-transformers' pipeline for this checkpoint: BERT, masked mean, L2 norm."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    import torch
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(MINILM / "hf")
    model = AutoModel.from_pretrained(MINILM / "hf").eval()
    out = []
    with torch.no_grad():
        for text in texts:
            enc = tok(text, truncation=True, max_length=128, return_tensors="pt")
            hidden = model(**enc).last_hidden_state[0]
            mask = enc["attention_mask"][0].unsqueeze(-1).float()
            mean = (hidden * mask).sum(0) / mask.sum()
            out.append((mean / mean.norm()).numpy())
    return np.array(out)


@pytest.fixture(scope="module")
def texts_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("texts") / "texts.txt"
    path.write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    return path


def test_embeddings_match_native(built, texts_file: Path, record_property) -> None:
    done = run_component(
        built["textclass"], texts_file.name, "--embed", "--json", cwd=texts_file.parent
    )
    assert done.code == 0, done.stderr
    guest = np.array([line["embedding"] for line in done.lines])
    assert [line["text"] for line in done.lines] == TEXTS
    native = native_embeddings(TEXTS)
    cosines = (
        (guest * native).sum(axis=1)
        / np.linalg.norm(guest, axis=1)
        / np.linalg.norm(native, axis=1)
    )
    record_property("textclass_min_cosine", float(cosines.min()))
    print(f"\ntextclass: min cosine with native over {len(TEXTS)} texts = {cosines.min():.9f}")
    assert cosines.min() >= 0.9999


def test_top1_labels_match_native(built, texts_file: Path) -> None:
    done = run_component(built["textclass"], texts_file.name, "--json", cwd=texts_file.parent)
    assert done.code == 0, done.stderr
    guest_top = [line["ranking"][0][0] for line in done.lines]
    text_vecs, label_vecs = native_embeddings(TEXTS), native_embeddings(LABELS)
    native_top = [LABELS[i] for i in (text_vecs @ label_vecs.T).argmax(axis=1)]
    assert guest_top == native_top
    # The model gets the obvious ones right, too.
    assert guest_top[:4] == ["sports", "politics", "technology", "cooking"]


def test_human_output_and_custom_labels(built, texts_file: Path) -> None:
    labels = texts_file.parent / "labels.txt"
    labels.write_text("food\nball games\n")
    done = run_component(
        built["textclass"], texts_file.name, "--labels", "labels.txt", cwd=texts_file.parent
    )
    assert done.code == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1].strip().startswith("-> ball games")
    assert lines[7].strip().startswith("-> food")


def test_empty_and_very_long_input(built, tmp_path: Path) -> None:
    (tmp_path / "empty.txt").write_text("\n\n")
    done = run_component(built["textclass"], "empty.txt", cwd=tmp_path)
    done.assert_no_trap()
    assert done.code == 1 and "has no text" in done.stderr
    long_text = " ".join(["cooking pasta with tomatoes and basil"] * 200)
    (tmp_path / "long.txt").write_text(long_text + "\n")
    done = run_component(built["textclass"], "long.txt", "--embed", "--json", cwd=tmp_path)
    assert done.code == 0, done.stderr
    guest = np.array(done.lines[0]["embedding"])
    native = native_embeddings([long_text])[0]
    assert float(guest @ native) >= 0.9999  # truncated to 128 tokens the same way


def test_pooling_in_c_gives_the_pythons_bits() -> None:
    """ext/_pool.c against the Python it replaced (textclass.embed's masked mean
    and L2 norm with the guest's sum()), bit for bit, built for this Python."""
    tool = ROOT / "tools" / "build_ext.py"
    subprocess.run([sys.executable, str(tool), str(APP), "--targets", "native"], check=True)
    sys.path.insert(0, str(APP))
    try:
        import _pool  # type: ignore[import-not-found, unused-ignore]
    finally:
        sys.path.remove(str(APP))
    rng = np.random.default_rng(9)
    for case in range(200):
        n, width = int(rng.integers(1, 129)), int(rng.choice([1, 5, 384]))
        hidden = (rng.normal(0, 1, (n, width)) * 10.0 ** rng.integers(-3, 4)).astype(np.float32)
        mask = [1] * n if case % 3 else [int(v) for v in rng.integers(0, 2, n - 1)] + [1]
        values = hidden.tolist()
        mean = [
            guest_sum([values[t][d] * mask[t] for t in range(n)]) / sum(mask) for d in range(width)
        ]
        norm = math.sqrt(guest_sum([v * v for v in mean])) or 1.0
        expected = [v / norm for v in mean]
        assert _pool.embedding(hidden.tobytes(), n, width, mask) == expected, f"case {case}"
    with pytest.raises(ValueError):
        _pool.embedding(bytes(12), 2, 2, [1, 1])
    with pytest.raises(ZeroDivisionError):
        _pool.embedding(bytes(16), 2, 2, [0, 0])

"""Sentence embeddings and label ranking with all-MiniLM-L6-v2, shared by the
command (app.py) and the HTTP server (apps/serve), so that both rank alike.

    model, vocab = Model.load(MODEL), WordPiece.from_file(VOCAB)
    vectors = [embed(model, vocab, t) for t in ["I love it"]]
    labels = ["praise", "complaint"]
    print(rank(vectors[0], labels, [embed(model, vocab, x) for x in labels]))
"""

from __future__ import annotations

import _pool
from tokenizer import WordPiece

from wasinn import Model, Tensor

MODEL_DIR = "/models/minilm"
MODEL = f"{MODEL_DIR}/model.xml"
VOCAB = f"{MODEL_DIR}/vocab.txt"
MAX_TOKENS = 128


def embed(model: Model, vocab: WordPiece, text: str) -> list[float]:
    """The sentence embedding of ``text``: masked mean of token vectors, unit length."""
    enc = vocab.encode(text, max_length=MAX_TOKENS)
    n = len(enc.ids)
    feed = {
        "input_ids": Tensor(enc.ids, shape=(1, n), dtype="i64"),
        "attention_mask": Tensor(enc.attention_mask, shape=(1, n), dtype="i64"),
        "token_type_ids": Tensor.zeros((1, n), "i64"),
    }
    hidden = model.run(feed, outputs=["last_hidden_state"])["last_hidden_state"]
    # The pooling in C (ext/_pool.c) on the output's bytes: the same bits as the
    # Python generator sums it replaced, without n * 384 interpreted steps.
    return _pool.embedding(hidden.tobytes(), n, hidden.shape[-1], enc.attention_mask)


def rank(
    vector: list[float], labels: list[str], label_vectors: list[list[float]]
) -> list[tuple[str, float]]:
    """``labels`` with their cosine similarity to ``vector``, most similar first
    (embeddings are unit length, so the dot product is the cosine)."""
    scores = [sum(a * b for a, b in zip(vector, lv, strict=True)) for lv in label_vectors]
    return sorted(zip(labels, scores, strict=True), key=lambda ls: -ls[1])

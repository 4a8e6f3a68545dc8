"""wasinn: machine-learning inference for Python inside a WebAssembly component.

wasinn wraps the ``wasi:nn@0.2.0-rc-2024-10-28`` imports that componentize-py
generates and gives them the shape Python ML developers know::

    from wasinn import Model, Tensor

    with Model.load("/app/model/digits.xml") as model:      # .xml + .bin, or .onnx
        print(model.inputs)                                # names, shapes, dtypes
        out = model.run({"image": Tensor(pixels, shape=(1, 1, 8, 8))})
        print(out["probs"].topk(3))                        # real output names

It is Python on the stdlib plus its own C extension modules (``ext/``:
``_kernels`` for argmax, topk and bf16, ``_pixels``, and the PNG, JPEG and
WebP codecs), which ``./build.sh setup`` compiles for the guest and for the
native CPython. It never needs numpy and works with it when an app has it. Inside
a component it talks to the host through its own bindings
(``wasinn/_bindings``, built from ``wasinn/wit``); in plain CPython it imports
fine but cannot reach a host.
"""

try:
    from . import _kernels  # noqa: F401  (checked first, for a clear message)
except ImportError as exc:
    raise ImportError(
        f"wasinn's compiled module wasinn._kernels cannot be imported ({exc}). "
        "Run ./build.sh setup in the wasinn checkout: it compiles guest/wasinn/ext/_kernels.c "
        "for the guest and for this Python (tools/build_ext.py)."
    ) from exc

from . import image, ops
from ._builder import GraphBuilder, Operand, Size
from ._command import print_line, run_command
from ._dtypes import DTYPES
from ._errors import (
    BackendRuntimeError,
    ClosedError,
    FusionError,
    ImageError,
    ImageTooLargeError,
    InvalidArgumentError,
    InvalidEncodingError,
    ModelFormatError,
    NotFoundError,
    OperationTimeoutError,
    SecurityError,
    TooLargeError,
    UnknownError,
    UnsupportedOperationError,
    ValidationError,
    WasiNNError,
)
from ._instance import start_instance
from ._model.model import Model, Session, StatefulSession
from ._spec import Feeds, TensorLike, TensorSpec
from ._tensor import Tensor

__version__ = "0.1.0"

__all__ = [
    "DTYPES",
    "Feeds",
    "FusionError",
    "GraphBuilder",
    "ImageError",
    "ImageTooLargeError",
    "BackendRuntimeError",
    "ClosedError",
    "InvalidArgumentError",
    "InvalidEncodingError",
    "Model",
    "ModelFormatError",
    "NotFoundError",
    "Operand",
    "OperationTimeoutError",
    "SecurityError",
    "Session",
    "Size",
    "StatefulSession",
    "Tensor",
    "TensorLike",
    "TensorSpec",
    "TooLargeError",
    "UnknownError",
    "UnsupportedOperationError",
    "ValidationError",
    "WasiNNError",
    "image",
    "ops",
    "print_line",
    "run_command",
    "start_instance",
]

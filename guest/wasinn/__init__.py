"""wasinn: machine-learning inference for Python inside a WebAssembly component.

wasinn wraps the ``wasi:nn@0.2.0-rc-2024-10-28`` imports that componentize-py
generates and gives them the shape Python ML developers know::

    from wasinn import Model, Tensor

    with Model.load("/app/model/digits.xml") as model:      # .xml + .bin, or .onnx
        print(model.inputs)                                # names, shapes, dtypes
        out = model.run({"image": Tensor(pixels, shape=(1, 1, 8, 8))})
        print(out["probs"].topk(3))                        # real output names

It is pure Python and stdlib-only. Inside a component it talks to the host
through its own bindings (``wasinn/_bindings``, built from ``wasinn/wit``);
in plain CPython it imports fine but cannot reach a host.
"""

from . import image, ops
from ._builder import GraphBuilder, Operand
from ._command import print_line, run_command
from ._dtypes import DTYPES
from ._errors import (
    BackendRuntimeError,
    ClosedError,
    FusionError,
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
from ._model import Model, Session, StatefulSession
from ._spec import TensorSpec
from ._tensor import Tensor
from .image import ImageError, ImageTooLargeError

__version__ = "0.1.0"

__all__ = [
    "DTYPES",
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
    "StatefulSession",
    "Tensor",
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
]

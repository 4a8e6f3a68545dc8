"""wasinn's exceptions, and the one place where host errors become them.

The tree::

    WasiNNError                      base of everything wasinn raises on purpose
    ├── InvalidArgumentError         host code invalid-argument
    ├── InvalidEncodingError         host code invalid-encoding
    ├── OperationTimeoutError        host code timeout
    ├── BackendRuntimeError          host code runtime-error (every OpenVINO failure)
    ├── UnsupportedOperationError    host code unsupported-operation
    ├── TooLargeError                host code too-large
    ├── NotFoundError                host code not-found
    ├── SecurityError                host code security
    ├── UnknownError                 host code unknown
    ├── ValidationError (ValueError) caught in the guest before any host call
    │   ├── ModelFormatError         the model bytes cannot be a model
    │   ├── FusionError              pre/post-processing cannot be spliced into the model
    │   └── ImageError               the bytes are not an image wasinn can decode
    │       └── ImageTooLargeError   the image declares more pixels than allowed
    └── ClosedError (ValueError)     use of a model or session after close()

Each host error class has ``.code``, the wasi-nn error-code name (e.g.
``"runtime-error"``), whoever raised it: ``TooLargeError`` is also raised by
wasinn itself, before a call that the host would refuse (or trap on), and
still has ``code = "too-large"`` so that one check catches both. Errors that
come from the host also carry ``.host_message`` (the host's own words; ``None``
when wasinn raised the error). ``ValidationError``, ``ModelFormatError`` and
``ClosedError`` are wasinn's own and have ``code = None``.
"""

from __future__ import annotations

__all__ = [
    "WasiNNError",
    "InvalidArgumentError",
    "InvalidEncodingError",
    "OperationTimeoutError",
    "BackendRuntimeError",
    "UnsupportedOperationError",
    "TooLargeError",
    "NotFoundError",
    "SecurityError",
    "UnknownError",
    "ValidationError",
    "ModelFormatError",
    "FusionError",
    "ImageError",
    "ImageTooLargeError",
    "ClosedError",
    "from_host",
    "at_host_limit",
]


class WasiNNError(Exception):
    """Base class of every error wasinn raises.

    Example::

        try:
            model.run({"image": pixels})
        except wasinn.WasiNNError as e:
            print("inference failed:", e, "code:", e.code)
    """

    #: The wasi-nn ``error-code`` name of this kind of error; ``None`` for
    #: wasinn's own kinds (validation, model format, use after close).
    code: str | None = None

    def __init__(self, message: str, *, host_message: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        #: The host's own message, unmodified (host errors only).
        self.host_message = host_message


class InvalidArgumentError(WasiNNError):
    """The host rejected an argument (wasi-nn ``invalid-argument``)."""

    code = "invalid-argument"


class InvalidEncodingError(WasiNNError):
    """No host backend reads this model encoding (wasi-nn ``invalid-encoding``)."""

    code = "invalid-encoding"


class OperationTimeoutError(WasiNNError):
    """The host gave up waiting (wasi-nn ``timeout``)."""

    code = "timeout"


class BackendRuntimeError(WasiNNError):
    """The backend failed (wasi-nn ``runtime-error``).

    On the wasmtime host every OpenVINO failure arrives as this, with the bare
    message "Failed while accessing backend"; wasinn adds what it knows about
    the likely cause.
    """

    code = "runtime-error"


class UnsupportedOperationError(WasiNNError):
    """The backend does not offer the operation (wasi-nn ``unsupported-operation``)."""

    code = "unsupported-operation"


class TooLargeError(WasiNNError):
    """The model or tensor is too large for the host (wasi-nn ``too-large``).

    wasinn raises it itself, before the call, for data over the host's
    per-call limit (``host_message`` is then ``None``).
    """

    code = "too-large"


class NotFoundError(WasiNNError):
    """The host has no model of that name (wasi-nn ``not-found``)."""

    code = "not-found"


class SecurityError(WasiNNError):
    """The host refused for lack of privilege (wasi-nn ``security``)."""

    code = "security"


class UnknownError(WasiNNError):
    """The host failed without saying why (wasi-nn ``unknown``)."""

    code = "unknown"


class ValidationError(WasiNNError, ValueError):
    """A mistake caught in the guest before any host call.

    The message names what is wrong and what would be right, for example::

        unknown input 'imgae'; the model's inputs are: 'image'
    """


class ModelFormatError(ValidationError):
    """The bytes given as a model are not a readable model of the stated kind."""


class FusionError(ValidationError):
    """``Model.load(..., preprocess=..., postprocess=...)`` cannot splice the
    processing into this model (not ONNX, or an opset where the operators it
    uses mean something else); the message says why and what to do instead."""


class ImageError(ValidationError):
    """The bytes are not an image wasinn can decode; the message names the
    file and says why (corrupt, truncated, too large, or unsupported).

    Example::

        try:
            pixels = wasinn.image.decode(data)
        except wasinn.image.ImageError as e:
            print(e)   # "photo.png is truncated: it ends before its IEND chunk"
    """


class ImageTooLargeError(ImageError):
    """The header declares more pixels than ``max_pixels`` allows; raised
    before any pixel memory is allocated. ``width``, ``height`` and
    ``max_pixels`` say by how much (an HTTP server answers 413 with them).

    Example::

        try:
            pixels = wasinn.image.decode(data, max_pixels=4096 * 4096)
        except wasinn.image.ImageTooLargeError as e:
            print(e.width, e.height, e.max_pixels)   # 8192 8192 16777216
    """

    def __init__(self, message: str, *, width: int, height: int, max_pixels: int) -> None:
        super().__init__(message)
        #: What the header declares.
        self.width = width
        self.height = height
        #: The limit it is over.
        self.max_pixels = max_pixels


class ClosedError(WasiNNError, ValueError):
    """A model or session was used after ``close()``."""


_BY_CODE: dict[str, type[WasiNNError]] = {
    cls.code: cls
    for cls in (
        InvalidArgumentError,
        InvalidEncodingError,
        OperationTimeoutError,
        BackendRuntimeError,
        UnsupportedOperationError,
        TooLargeError,
        NotFoundError,
        SecurityError,
        UnknownError,
    )
    if cls.code is not None
}

# The host's only word for any OpenVINO failure.
_OPAQUE = "Failed while accessing backend"

# What the guest knows about the usual causes when the host says no more than
# _OPAQUE, by the action that failed.
_HINTS = {
    "load": (
        "the host does not pass on OpenVINO's reason. Usual causes: the model uses an "
        "operation or type this OpenVINO cannot read, the weights do not belong to the "
        "model, or the target device does not exist on the host."
    ),
    "load-device": (
        "the host does not pass on OpenVINO's reason. Usual cause: the host has no such "
        "device that OpenVINO can use (try target=['gpu', 'cpu'] to fall back)."
    ),
    "context": "the host does not pass on OpenVINO's reason; the device may be out of memory.",
    "compute": (
        "the host does not pass on OpenVINO's reason. Usual causes: an input tensor the "
        "compiled model cannot take (shape, type or name), or an operation that fails on "
        "these values."
    ),
}


def from_host(code: str, host_message: str, action: str, what: str) -> WasiNNError:
    """Turn a wasi-nn error into the matching wasinn exception.

    ``code`` is the wasi-nn ``error-code`` name, ``host_message`` the host's
    text, ``action`` one of ``"load"``, ``"load-device"`` (loading for a
    non-CPU target), ``"context"`` or ``"compute"`` (picks the hint), and
    ``what`` a phrase such as ``"loading model.xml on cpu"``.
    """
    cls = _BY_CODE.get(code, UnknownError)
    message = f"{what} failed [{code}]: {host_message}"
    if host_message.strip() == _OPAQUE and action in _HINTS:
        message += f" ({_HINTS[action]})"
    return cls(message, host_message=host_message)


def at_host_limit(
    exc: WasiNNError, what: str, limits: tuple[str, ...], rewrites: tuple[str, ...] = ()
) -> WasiNNError:
    """``exc``, a compute failure, re-worded for a model wasinn knows more about.

    The opaque host message would otherwise be read as a problem with the
    inputs. ``limits`` says what in the model the host cannot carry;
    ``rewrites`` what wasinn changed in the model before loading it.
    """
    if limits:
        why = (
            "the inputs were checked against the model's declaration; this model has what "
            f"the wasmtime host cannot carry: {'; '.join(limits)}"
        )
    else:
        why = (
            "the inputs were checked against the model's declaration. The host does not pass "
            "on OpenVINO's reason; usual cause: an operation that fails on these values"
        )
    if rewrites:
        why += f". wasinn rewrote the model for this host: {'; '.join(rewrites)}"
    return type(exc)(f"{what} failed [{exc.code}]: {exc.host_message} ({why})",
                     host_message=exc.host_message)  # fmt: skip

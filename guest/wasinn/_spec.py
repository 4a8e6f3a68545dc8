"""What a model says about its inputs and outputs, and checking feeds against it."""

from __future__ import annotations

import array
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union, cast

from . import _dtypes, _numpy
from ._errors import ValidationError
from ._tensor import Tensor

if TYPE_CHECKING:
    from numpy.typing import NDArray

#: One input's value for ``run``: a ``Tensor``; raw ``bytes`` (taken as the
#: input's dtype and static shape); an ``array.array``; nested lists of
#: numbers; a number; or a numpy array (anything with ``__array_interface__``).
TensorLike = Union[  # noqa: UP007 (a runtime alias: "array.array[Any]" is a string here)
    Tensor, bytes, bytearray, memoryview, "array.array[Any]", Sequence[Any], float, "NDArray[Any]"
]
#: What ``run`` takes: input name -> tensor-like, one tensor-like per input in
#: model order, or a single tensor-like for a model with one input.
Feeds = Union[Mapping[str, TensorLike], Sequence[TensorLike], TensorLike]  # noqa: UP007

Dim = int | None


@dataclass(frozen=True)
class TensorSpec:
    """One input or output of a model, as the model itself declares it.

    ``shape`` has ``None`` for a dynamic dimension, and is ``None`` itself
    when the model does not declare the rank. ``dtype`` is a wasinn dtype
    name, or the model's own type name (e.g. ``"boolean"``) for a type
    wasi-nn cannot carry.

    Example::

        >>> spec = model.inputs[0]
        >>> spec.name, spec.shape, spec.dtype
        ('image', (None, 1, 8, 8), 'f32')
    """

    name: str
    shape: tuple[Dim, ...] | None
    dtype: str

    def __str__(self) -> str:
        if self.shape is None:
            return f"{self.name}: {self.dtype}[...]"
        return f"{self.name}: {self.dtype}{_shape_text(self.shape)}"

    @property
    def is_static(self) -> bool:
        """True when the rank and every dimension are known."""
        return self.static_shape is not None

    @property
    def static_shape(self) -> tuple[int, ...] | None:
        """The shape when the rank and every dimension are known, else ``None``.

        >>> TensorSpec("x", (1, 3), "f32").static_shape
        (1, 3)
        >>> TensorSpec("x", (None, 3), "f32").static_shape is None
        True
        """
        if self.shape is None or any(d is None for d in self.shape):
            return None
        return cast("tuple[int, ...]", self.shape)


# Why scalars need care: the wasmtime host cannot create a rank-0 tensor
# (OpenVINO's C API refuses a 0-dim shape), and OpenVINO refuses a [1] tensor
# for a [] input. ``_formats.rewrite`` makes models take their scalars as [1]; only the
# inputs it rewrote (``feeds(scalars=...)``) accept rank-0 tensors.
_NO_SCALARS = (
    "the wasmtime host cannot pass rank-0 tensors (OpenVINO's C API refuses a 0-dim shape)"
)


def _names(specs: Sequence[TensorSpec]) -> str:
    return ", ".join(repr(s.name) for s in specs) or "(none)"


def _is_whole_tensor(value: Any) -> bool:
    """True for values that are one tensor each, never a list of inputs."""
    return isinstance(value, (Tensor, bytes, bytearray, memoryview, array.array)) or (
        _numpy.is_array(value)
    )


def feeds(
    inputs: Feeds,
    specs: Sequence[TensorSpec] | None,
    *,
    scalars: frozenset[str] = frozenset(),
    optional: frozenset[str] = frozenset(),
) -> list[tuple[str, Tensor]]:
    """Turn what the user passed to ``run`` into checked ``(name, Tensor)`` pairs.

    ``inputs`` is a mapping of name to tensor-like, a sequence with one
    tensor-like per input in model order, or one tensor-like for a model with
    a single input. Every check happens here, before any host call.

    ``scalars`` names the rank-0 inputs the model was rewritten to take (see
    ``_formats.rewrite``): only those accept rank-0 tensors, since the host cannot
    carry any other. ``optional`` names inputs a mapping may leave out (they
    are folded into the model); given, they are checked like the rest.
    """
    if specs is None:
        if not isinstance(inputs, Mapping):
            raise ValidationError(
                "this model has no input metadata (it was loaded by name or from a format "
                "wasinn cannot read), so pass inputs as a mapping of name to tensor"
            )
        return [(str(name), _as_tensor(name, value, None)) for name, value in inputs.items()]

    if type(inputs) is dict and len(inputs) == len(specs):
        # The common case, kept cheap because it runs on every call: a dict
        # of Tensors whose dtypes and (non-scalar) shapes match exactly.
        fast = []
        for spec in specs:
            t = inputs.get(spec.name)
            if (
                type(t) is not Tensor
                or t._dtype != spec.dtype
                or t._shape != spec.shape
                or not t._shape
            ):
                break
            fast.append((spec.name, t))
        else:
            return fast
    if isinstance(inputs, Mapping):
        by_name = {s.name: s for s in specs}
        unknown = [k for k in inputs if k not in by_name]
        if unknown:
            raise ValidationError(
                f"unknown input {', '.join(repr(k) for k in unknown)}; "
                f"the model's inputs are: {_names(specs)}"
            )
        missing = [s.name for s in specs if s.name not in inputs and s.name not in optional]
        if missing:
            raise ValidationError(
                f"missing input {', '.join(repr(m) for m in missing)}; the model needs all of: "
                f"{_names(specs)} (given: {', '.join(repr(k) for k in inputs) or 'none'})"
            )
        return [
            (s.name, _as_tensor(s.name, inputs[s.name], s, s.name in scalars))
            for s in specs
            if s.name in inputs
        ]

    # A list is one value per input, except for a single-input model, where a
    # list of numbers is the tensor itself.
    if isinstance(inputs, (list, tuple)) and (
        len(specs) != 1 or (len(inputs) == 1 and _is_whole_tensor(inputs[0]))
    ):
        if len(inputs) != len(specs):
            raise ValidationError(
                f"{len(inputs)} inputs given by position, but the model has {len(specs)}: "
                f"{_names(specs)}"
            )
        return [
            (s.name, _as_tensor(s.name, v, s, s.name in scalars))
            for s, v in zip(specs, inputs, strict=False)
        ]
    if len(specs) != 1:
        raise ValidationError(
            f"a single tensor was given, but the model has {len(specs)} inputs: "
            f"{_names(specs)}; pass a mapping of name to tensor"
        )
    only = specs[0]
    return [(only.name, _as_tensor(only.name, inputs, only, only.name in scalars))]


def _as_tensor(name: str, value: Any, spec: TensorSpec | None, scalar: bool = False) -> Tensor:
    if spec is not None and spec.dtype not in _dtypes.ITEMSIZE:
        raise ValidationError(
            f"input {name!r} has element type {spec.dtype!r}, which wasi-nn cannot carry "
            f"(it carries {', '.join(_dtypes.DTYPES)}); this model cannot run on this host"
        )
    if spec is not None and spec.shape == () and not scalar:
        raise ValidationError(
            f"input {name!r} is declared as a scalar (shape []), but {_NO_SCALARS}, and OpenVINO "
            "refuses a [1] tensor for a scalar input; wasinn passes scalars as [1] by rewriting "
            "the model, which it cannot do for this one (loaded by name, or an ONNX model that "
            "imports no default operator set): re-export it with a [1] input"
        )
    if isinstance(value, Tensor):
        tensor = value
    else:
        try:
            tensor = _from_tensor_like(value, spec)
        except ValidationError as exc:
            raise ValidationError(f"input {name!r}: {exc}") from None
    if not tensor.shape and not scalar:
        raise ValidationError(
            f"input {name!r} is a scalar (shape ()), but {_NO_SCALARS}; the model wants "
            f"{_shape_text(spec.shape) if spec is not None else 'a tensor'}: give the value that "
            "shape (e.g. Tensor([value]) for [1])"
        )
    if spec is not None:
        _check(name, tensor, spec)
    return tensor


def _from_tensor_like(value: Any, spec: TensorSpec | None) -> Tensor:
    """Build a tensor in the model's dtype (and static shape, for flat data)."""
    if spec is None:
        return Tensor(value)
    raw = isinstance(value, (bytes, bytearray)) or (
        isinstance(value, memoryview) and value.format in ("B", "b", "c") and value.ndim == 1
    )
    static = spec.static_shape
    if raw:
        if static is None:
            raise ValidationError(
                f"raw bytes cannot fill the dynamic shape {_shape_text(spec.shape)}; "
                "pass Tensor(data, shape=..., dtype=...)"
            )
        return Tensor(value, shape=static, dtype=spec.dtype)
    tensor = Tensor(value, dtype=spec.dtype)
    # Flat data (an array.array, a flat list) fills a static shape of the same size.
    if static is not None and tensor.ndim == 1 and len(static) != 1:
        if tensor.size == math.prod(static):
            tensor = tensor.reshape(static)
    return tensor


def _shape_text(shape: Sequence[Dim] | None) -> str:
    if shape is None:
        return "[...] (any rank)"
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def _check(name: str, tensor: Tensor, spec: TensorSpec) -> None:
    if tensor.dtype != spec.dtype:
        raise ValidationError(
            f"input {name!r} must be {spec.dtype}, got {tensor.dtype}; "
            f"convert it with tensor.astype({spec.dtype!r})"
        )
    if spec.shape is None:
        return
    fits = len(tensor.shape) == len(spec.shape)
    for want, got in zip(spec.shape, tensor.shape, strict=False):
        if want is not None and want != got:
            fits = False
    if not fits and spec.shape == ():
        raise ValidationError(
            f"input {name!r} has shape {list(tensor.shape)}, but the model wants a scalar "
            "(shape []): pass a rank-0 tensor, such as Tensor(2.0), or the number itself"
        )
    if not fits:
        any_size = " ('?' is any size)" if None in spec.shape else ""
        raise ValidationError(
            f"input {name!r} has shape {list(tensor.shape)}, but the model wants "
            f"{_shape_text(spec.shape)}{any_size}"
        )


def select(outputs: Sequence[str] | None, specs: Sequence[TensorSpec] | None) -> list[str] | None:
    """Check an ``outputs=`` list against the model's outputs."""
    if outputs is None:
        return None
    if isinstance(outputs, str):
        outputs = [outputs]
    wanted = list(outputs)
    if specs is not None:
        known = {s.name for s in specs}
        unknown = [o for o in wanted if o not in known]
        if unknown:
            raise ValidationError(
                f"unknown output {', '.join(repr(o) for o in unknown)}; "
                f"the model's outputs are: {_names(specs)}"
            )
    return wanted

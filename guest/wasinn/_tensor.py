"""``Tensor``: a shape, a dtype and immutable little-endian bytes."""

from __future__ import annotations

import array
import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from . import _dtypes, _kernels, _numpy
from ._errors import ValidationError

if TYPE_CHECKING:
    from numpy.typing import NDArray

Shape = tuple[int, ...]

# wasi-nn dimensions are u32, and tensor data a list<u8> (u32 length).
_MAX_DIM = (1 << 32) - 1
_MAX_BYTES = (1 << 32) - 1
# The most axes a tensor may have (numpy's limit too); also bounds recursion.
MAX_RANK = 64


class Tensor:
    """An n-dimensional array of one of wasi-nn's seven element types.

    ``data`` may be:

    - ``bytes``, ``bytearray`` or a byte ``memoryview``: the raw element bytes
      (little-endian, row-major). ``dtype`` defaults to ``"u8"``; ``shape``
      defaults to one axis. ``bytes`` are kept as they are, never copied.
    - a numpy array or scalar: its dtype and shape (any memory layout), in
      one copy to ``bytes`` (see ``from_numpy``).
    - ``array.array`` or any other typed buffer: its items, dtype and shape
      are taken from the buffer unless given.
    - nested lists or tuples of numbers, or a single number: floats default to
      ``"f32"``, integers and bools to ``"i64"``.
    - another ``Tensor`` (reshaped or converted if ``shape``/``dtype`` differ).

    ``dtype`` is one of ``"f16"``, ``"bf16"``, ``"f32"``, ``"f64"``, ``"u8"``,
    ``"i32"``, ``"i64"`` (numpy spellings such as ``"float32"`` work too).
    Values are converted when ``dtype`` differs from the data's own type;
    raw bytes are never converted, only reinterpreted.

    Example::

        >>> t = Tensor([[1, 2, 3], [4, 5, 6]], dtype="f32")
        >>> t.shape, t.dtype
        ((2, 3), 'f32')
        >>> t.argmax(), t.topk(2)
        (5, [(5, 6.0), (4, 5.0)])
        >>> Tensor(t.tobytes(), shape=(3, 2), dtype="f32").tolist()
        [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]

    numpy (when the app has it; wasinn itself never imports it): a tensor
    is an array-like that numpy reads in place, and arrays are tensor-likes::

        >>> a = np.asarray(t)              # zero-copy, read-only: float32 (2, 3)
        >>> Tensor(a * 2).dtype            # one copy into the new tensor
        'f32'
    """

    __slots__ = ("_data", "_shape", "_dtype")

    def __init__(
        self,
        data: Any,
        shape: Iterable[int] | None = None,
        dtype: Any = None,
    ) -> None:
        want = _dtypes.canonical(dtype) if dtype is not None else None
        given_shape = _check_shape(shape) if shape is not None else None
        raw, own_shape, own_dtype = _ingest(data, want)
        dt = want or own_dtype
        if raw is None:  # data came as numbers: pack them now
            values, own_shape = own_shape
            raw = _encode_numbers(values, dt)
        elif want is not None and own_dtype not in (want, None):
            # A typed buffer of another dtype: convert by value.
            raw = _convert(raw, own_dtype, want)
        itemsize = _dtypes.ITEMSIZE[dt]
        if given_shape is None:
            if own_shape is None:
                if len(raw) % itemsize:
                    raise ValidationError(
                        f"{len(raw)} bytes is not a whole number of {dt} elements "
                        f"({itemsize} bytes each)"
                    )
                own_shape = (len(raw) // itemsize,)
            given_shape = own_shape
        need = math.prod(given_shape) * itemsize
        if len(raw) != need:
            raise ValidationError(
                f"{len(raw)} bytes of data do not fill shape {list(given_shape)} of {dt}: "
                f"that needs {math.prod(given_shape)} x {itemsize} = {need} bytes"
            )
        self._data: bytes = raw
        self._shape: Shape = given_shape
        self._dtype: str = dt

    @classmethod
    def _wrap(cls, data: bytes, shape: Sequence[int], dtype: str) -> Tensor:
        """Adopt trusted host bytes without copying or re-checking them."""
        self = cls.__new__(cls)
        self._data = data
        self._shape = tuple(shape)
        self._dtype = dtype
        return self

    @classmethod
    def from_numpy(cls, array: Any, dtype: Any = None) -> Tensor:
        """A tensor of a numpy array's values: the same as ``Tensor(array)``,
        named as in torch, and refusing anything that is not numpy's.

        Dtypes map one to one: float16 -> ``"f16"``, float32, float64, uint8,
        int32, int64 (and ``ml_dtypes.bfloat16`` -> ``"bf16"``). Other dtypes
        (bool, int8, uint16, complex, ...), and big-endian ones, raise
        ValidationError naming a conversion, unless ``dtype`` is given: then
        values are converted, floats rounding to nearest, integers checked
        (a fraction, NaN or an out-of-range value raises instead of being
        truncated or wrapped as ``ndarray.astype`` would).

        Any layout is taken (a transpose, a negative stride), a 0-d array or
        a numpy scalar makes a scalar tensor. A Tensor holds immutable
        ``bytes``, which cannot share numpy's memory, so the data is copied
        once (in C); an array that views a whole ``bytes`` object already
        (from ``np.asarray(tensor)`` or ``np.frombuffer(data, ...)``) is not
        copied: the tensor reuses those bytes.

        Example::

            >>> Tensor.from_numpy(np.zeros((2, 3), np.float32)).shape
            (2, 3)
            >>> t = Tensor([1, 2, 3], dtype="i32")
            >>> Tensor.from_numpy(t.numpy()).tobytes() is t.tobytes()
            True
        """
        if not _numpy.is_array(array):
            raise ValidationError(
                f"from_numpy takes a numpy array or scalar, not {type(array).__name__}; "
                "use Tensor(...) for other data"
            )
        return cls(array, dtype=dtype)

    @classmethod
    def zeros(cls, shape: Iterable[int], dtype: Any = "f32") -> Tensor:
        """A tensor of zeros, e.g. the first recurrent state of a model.

        >>> Tensor.zeros((2, 1, 128)).shape
        (2, 1, 128)
        """
        dims = _check_shape(shape)
        dt = _dtypes.canonical(dtype)
        nbytes = math.prod(dims) * _dtypes.ITEMSIZE[dt]
        if nbytes > _MAX_BYTES:
            raise ValidationError(
                f"shape {list(dims)} of {dt} is {nbytes} bytes; a wasi-nn tensor holds at most "
                f"{_MAX_BYTES} (4 GiB - 1)"
            )
        try:
            return cls._wrap(bytes(nbytes), dims, dt)
        except MemoryError:
            raise ValidationError(f"not enough memory for {nbytes} bytes of zeros") from None

    # ------------------------------------------------------------ properties

    @property
    def shape(self) -> Shape:
        """The dimensions, outermost first, e.g. ``(1, 10)``."""
        return self._shape

    @property
    def dtype(self) -> str:
        """The element type, e.g. ``"f32"``."""
        return self._dtype

    @property
    def ndim(self) -> int:
        """The number of axes (0 for a scalar)."""
        return len(self._shape)

    @property
    def size(self) -> int:
        """The number of elements."""
        return math.prod(self._shape)

    @property
    def nbytes(self) -> int:
        """The length of the element bytes."""
        return len(self._data)

    @property
    def data(self) -> memoryview:
        """A read-only, zero-copy view of the element bytes."""
        return memoryview(self._data)

    def tobytes(self) -> bytes:
        """The element bytes (the tensor's own ``bytes`` object, not a copy)."""
        return self._data

    # ------------------------------------------------------------ numpy

    def numpy(self, *, copy: bool = False) -> NDArray[Any]:
        """The tensor as a numpy array (numpy imported on first use).

        Without ``copy`` the array is a zero-copy, read-only view of the
        tensor's bytes (they are immutable); ``copy=True`` gives a writable
        array of its own. A bf16 tensor gives an ``ml_dtypes.bfloat16`` array
        if the app imported ml_dtypes, and otherwise raises ValidationError
        (numpy has no bfloat16): use ``t.astype("f32").numpy()``. Raises
        ImportError, saying what to do, when numpy is not there.

        ``np.asarray(t)`` and ``np.array(t)`` work too (numpy's own rules:
        ``asarray`` shares, ``array`` copies).

        Example::

            >>> t = Tensor([[1, 2], [3, 4]], dtype="f32")
            >>> a = t.numpy()
            >>> a.dtype, a.shape, a.flags.writeable
            (dtype('float32'), (2, 2), False)
            >>> np.shares_memory(a, np.asarray(t))
            True
        """
        return _numpy.to_array(self._data, self._shape, self._dtype, copy=copy)

    @property
    def __array_interface__(self) -> dict[str, Any]:
        # numpy reads the bytes in place (read-only: bytes are immutable) and
        # keeps them alive; no numpy import is needed for that. bf16 raises
        # AttributeError, so that numpy falls back to __array__.
        return _numpy.array_interface(self._data, self._shape, self._dtype)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> NDArray[Any]:
        """numpy 2's conversion protocol: a read-only view unless ``dtype``
        differs (a converted copy; ``copy=False`` then raises ValueError) or
        ``copy=True`` (a writable copy)."""
        return _numpy.to_array(self._data, self._shape, self._dtype, dtype, copy)

    # ------------------------------------------------------------ values

    def tolist(self) -> Any:
        """The values as (nested) Python lists; a number for a scalar.

        >>> Tensor([1.5, 2.5], dtype="f16").tolist()
        [1.5, 2.5]
        """
        flat = _dtypes.decode(self._data, self._dtype)
        if not self._shape:
            return flat[0]
        return _nest(flat, self._shape)

    def item(self) -> float | int:
        """The single value of a one-element tensor.

        >>> Tensor([[0.25]]).item()
        0.25
        """
        if self.size != 1:
            raise ValidationError(
                f"item() needs a tensor with exactly one element; this one has shape "
                f"{list(self._shape)} ({self.size} elements)"
            )
        return _dtypes.decode(self._data, self._dtype)[0]

    def argmax(self, axis: int | None = None) -> Any:
        """Index of the largest value (of the first NaN, if any, as numpy does).

        With ``axis=None`` the index is into the flattened tensor. With an axis
        the result has one index per position of the other axes, as a nested
        list (a number for a 1-D tensor): ``axis=-1`` gives one class per row
        of a batch. Ties go to the first index. Compiled code reads the raw
        bytes (``ext/_kernels.c``); only the answer becomes Python numbers.

        >>> Tensor([[0.1, 0.9], [0.8, 0.2]]).argmax(axis=-1)
        [1, 0]
        >>> Tensor([[0.1, 0.9], [0.8, 0.2]]).argmax(axis=0)
        [1, 0]
        """
        if not self._data:
            raise ValidationError("argmax() of an empty tensor")
        if axis is None:
            return _kernels.argmax(self._data, self._dtype)
        ndim = self.ndim
        if isinstance(axis, bool) or not isinstance(axis, int) or not -ndim <= axis < ndim:
            raise ValidationError(
                f"argmax axis must be None or an integer from {-ndim} to {ndim - 1} "
                f"for shape {list(self._shape)}, not {axis!r}"
            )
        axis %= ndim
        inner = math.prod(self._shape[axis + 1 :])
        best = _kernels.argmax_along(self._data, self._dtype, self._shape[axis], inner)
        rest = self._shape[:axis] + self._shape[axis + 1 :]
        return _nest(best, rest) if rest else best[0]

    def topk(self, k: int) -> list[tuple[int, float | int]]:
        """The ``k`` largest values of the flattened tensor as ``(index, value)``.

        Sorted from largest to smallest; ties keep the lower index first.
        NaN ranks above every number, as in ``argmax``. Compiled code reads
        the raw bytes; only the ``k`` answers become Python numbers.

        >>> Tensor([0.1, 0.7, 0.2]).topk(2)
        [(1, 0.699999988079071), (2, 0.20000000298023224)]
        """
        if k < 0:
            raise ValidationError(f"topk needs k >= 0, not {k}")
        return _kernels.topk(self._data, self._dtype, k)

    def reshape(self, *shape: int | Iterable[int]) -> Tensor:
        """The same bytes under another shape with as many elements.

        >>> Tensor(bytes(8), dtype="u8").reshape(2, 4).shape
        (2, 4)
        """
        dims: Any = shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape
        return Tensor(self._data, shape=dims, dtype=self._dtype)

    def astype(self, dtype: Any) -> Tensor:
        """A copy converted value by value to another dtype.

        >>> Tensor([1.5, -2.0]).astype("bf16").tolist()
        [1.5, -2.0]
        """
        dt = _dtypes.canonical(dtype)
        if dt == self._dtype:
            return self
        return Tensor._wrap(_convert(self._data, self._dtype, dt), self._shape, dt)

    # ------------------------------------------------------------ dunder

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of a scalar tensor")
        return self._shape[0]

    def __repr__(self) -> str:
        if self.size <= 8:
            body = repr(self.tolist())
        else:
            body = f"{self.nbytes} bytes"
        return f"Tensor({body}, shape={self._shape}, dtype={self._dtype!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tensor):
            return NotImplemented
        return (self._shape, self._dtype, self._data) == (other._shape, other._dtype, other._data)

    __hash__ = None  # type: ignore[assignment]


# ---------------------------------------------------------------- helpers


def _check_shape(shape: Iterable[int]) -> Shape:
    try:
        dims = tuple(shape)
    except TypeError:
        raise ValidationError(f"shape must be a sequence of integers, not {shape!r}") from None
    if len(dims) > MAX_RANK:
        raise ValidationError(f"a tensor may have at most {MAX_RANK} axes, not {len(dims)}")
    for d in dims:
        if not isinstance(d, int) or isinstance(d, bool) or not 0 <= d <= _MAX_DIM:
            raise ValidationError(
                f"shape {list(dims)} is not valid: every dimension must be an integer "
                f"from 0 to {_MAX_DIM}"
            )
    return dims


def _ingest(data: Any, want: str | None) -> tuple[bytes | None, Any, str]:
    """Classify ``data``: (raw bytes, shape or None, dtype).

    For numbers the first item is None and the second is ``(values, shape)``.
    """
    if isinstance(data, Tensor):
        return data._data, data._shape, data._dtype
    if _numpy.is_array(data):
        return _numpy.ingest(data, want)
    if isinstance(data, (bytes, bytearray)) or (
        isinstance(data, memoryview) and data.format in ("B", "b", "c") and data.ndim == 1
    ):
        # Plain bytes: reinterpreted as ``want``, never converted. The host
        # binding takes only ``bytes``, so other byte buffers are copied once.
        return data if isinstance(data, bytes) else bytes(data), None, want or "u8"
    if isinstance(data, array.array) or _has_buffer(data):
        view = memoryview(data)
        if not view.c_contiguous:
            raise ValidationError("the buffer is not C-contiguous; pass a contiguous copy")
        fmt_dtype = _dtypes.dtype_of_format(view.format, view.itemsize)
        raw = view.tobytes()
        if fmt_dtype is None:
            raise ValidationError(
                f"buffer format {view.format!r} has no wasi-nn dtype; supported: "
                f"{', '.join(_dtypes.DTYPES)}"
            )
        return raw, tuple(view.shape or ()) if view.ndim != 1 else None, fmt_dtype
    if isinstance(data, (int, float)):
        dtype = want or ("f32" if isinstance(data, float) else "i64")
        return None, ([data], ()), dtype
    if isinstance(data, (list, tuple)):
        flat: list[Any] = []
        shape = _flatten(data, flat, 1)
        if want is not None:
            return None, (flat, shape), want
        if not flat:
            return None, ([], shape), "f32"
        # All integers (or bools) make i64, anything with a float f32. Letting
        # array() find out keeps this at C speed on large lists.
        try:
            return array.array(_dtypes.ARRAY_CODE["i64"], flat).tobytes(), shape, "i64"
        except (TypeError, ValueError):
            return None, (flat, shape), "f32"
        except OverflowError:
            if any(isinstance(v, float) for v in flat):
                return None, (flat, shape), "f32"
            raise ValidationError(
                "an integer does not fit in i64; pass dtype='f64' or smaller values"
            ) from None
    raise ValidationError(
        f"cannot make a tensor from {type(data).__name__}; pass bytes, array.array, "
        "a numpy array, nested lists of numbers, a number or a Tensor"
    )


def _has_buffer(obj: Any) -> bool:
    try:
        memoryview(obj)
    except TypeError:
        return False
    except (ValueError, BufferError) as exc:  # e.g. numpy dtypes with no buffer format
        raise ValidationError(f"cannot read the buffer of {type(obj).__name__}: {exc}") from None
    return True


def _flatten(data: Sequence[Any], out: list[Any], depth: int) -> Shape:
    """Append the items of a nested list to ``out``; return its shape.

    The innermost items are not checked here: packing them (``_encode_numbers``)
    rejects anything that is not a number.
    """
    if depth > MAX_RANK:
        raise ValidationError(
            f"nested lists deeper than {MAX_RANK} levels (or a list that contains itself)"
        )
    if not data:
        return (0,)
    if isinstance(data[0], (list, tuple)):
        inner = _flatten(data[0], out, depth + 1)
        for row in data[1:]:
            if not isinstance(row, (list, tuple)) or _flatten(row, out, depth + 1) != inner:
                raise ValidationError(
                    "nested lists are ragged: every row at one depth must have the same length"
                )
        return (len(data), *inner)
    out.extend(data)
    return (len(data),)


def _encode_numbers(values: list[Any], dtype: str) -> bytes:
    """Pack numbers; whole floats are accepted for integer dtypes."""
    try:
        return _dtypes.encode(values, dtype)
    except ValidationError:
        if dtype in _dtypes.FLOATS or not any(isinstance(v, float) for v in values):
            raise
    return _dtypes.encode([_float_to_int(v, dtype) for v in values], dtype)


def _convert(raw: bytes, src: str, dst: str) -> bytes:
    """``src`` bytes as ``dst`` bytes, value by value, rounding like numpy."""
    values = _dtypes.decode(raw, src)
    if dst in _dtypes.FLOATS and src in ("i32", "i64"):
        bits = _dtypes.SIGNIFICAND[dst]
        limit = 1 << bits
        if values and (max(values) > limit or min(values) < -limit):
            values = [_dtypes.round_int(v, bits) for v in values]  # type: ignore[arg-type]
        return _dtypes.encode(values, dst)
    return _encode_numbers(values, dst)


def _float_to_int(value: float | int, dtype: str) -> int:
    if isinstance(value, float):
        if not value.is_integer():
            raise ValidationError(
                f"{value!r} is not a whole number and cannot be stored as {dtype}; "
                "round it first or use a float dtype"
            )
        return int(value)
    return value


def _nest(flat: list[Any], shape: Shape) -> Any:
    if len(shape) <= 1:
        return flat
    step = math.prod(shape[1:])
    return [_nest(flat[i * step : (i + 1) * step], shape[1:]) for i in range(shape[0])]

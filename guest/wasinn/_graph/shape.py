"""Graph builder operations: reshaping, transposing, slicing, splitting, joining,
padding, expanding, gathering, scattering, tiling, reversing and triangular masks.

Names, arguments and defaults follow WebNN's ``MLGraphBuilder`` in snake_case.

Indices (``gather*``, ``scatter*``) are i32, u32 or i64 and may be negative,
counting from the end of the dimension, as in WebNN. WebNN leaves an index
outside ``[-size, size)`` to the implementation and suggests clamping it;
ONNX engines disagree (onnxruntime fails the run, OpenVINO reads zeros), so
indices are clamped into that range before use: computed ones in the graph,
constant ones when the operation is added (so ``gather(x, [5])`` of a
dimension of size 3 reads element 2, and ``[-9]`` reads element 0, as WPT's
conformance cases expect).

Two extensions to WebNN, both for graphs with dynamic dimensions (``None``):
``reshape`` takes one ``None`` in ``new_shape`` for "whatever is left" (ONNX's
``-1``), and ``expand`` takes ``None`` for "keep this dimension of the input".
"""

from __future__ import annotations

import math
import operator
import struct
from collections.abc import Iterable, Sequence
from typing import Any

from .._errors import ValidationError
from .core import BuilderCore, Operand, Shape, Size, shape_text

_INDEX_DTYPES = ("i32", "u32", "i64")
_INDEX_FORMATS = {"i32": "i", "u32": "I", "i64": "q"}
_INT64_MIN = -(2**63)
_PAD_MODES = {"constant": "constant", "edge": "edge", "reflection": "reflect"}
# WebNN's "valid tensor count": how many operands one split or concat may have.
_MAX_TENSORS = 8192


def _same_dim(a: int | None, b: int | None) -> bool:
    """Whether two dimensions may be equal: a dynamic one matches anything."""
    return a is None or b is None or a == b


def _known(a: int | None, b: int | None) -> int | None:
    """Of two dimensions that must be equal, the one that is known (if any)."""
    return a if a is not None else b


_INT64_MAX = 2**63 - 1
_INT64_MIN = -(2**63)


def _slice_bounds(part: slice) -> tuple[int, int, int]:
    """A Python slice as ONNX Slice's (start, end, step): ONNX clamps them
    to the dimension as Python does, so open ends become the int64 extremes."""
    step = 1 if part.step is None else part.step
    if isinstance(step, bool) or not isinstance(step, int) or step == 0:
        raise ValueError(f"slice step must be a non-zero integer, not {part.step!r}")
    for bound in (part.start, part.stop):
        if bound is not None and (isinstance(bound, bool) or not isinstance(bound, int)):
            raise TypeError(f"slice bounds must be integers or None, not {bound!r}")
    if step > 0:
        start = 0 if part.start is None else part.start
        stop = _INT64_MAX if part.stop is None else part.stop
    else:
        start = _INT64_MAX if part.start is None else part.start
        stop = _INT64_MIN if part.stop is None else part.stop
    return start, stop, step


class ShapeFamily(BuilderCore):
    """See the module docstring; mixed into ``GraphOperations`` (and so ``GraphBuilder``)."""

    # ------------------------------------------------------------ argument checks

    def _int_list(
        self, op: str, name: str, values: Any, length: int | None, minimum: int
    ) -> list[int]:
        """``values`` as a list of integers from ``minimum`` up to 2**32 - 1
        (WebNN's unsigned long), with ``length`` items when given."""
        if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
            raise ValidationError(f"{op}: {name} must be a list of integers, not {values!r}")
        out = list(values)
        for v in out:
            if isinstance(v, bool) or not isinstance(v, int) or not minimum <= v < 2**32:
                raise ValidationError(
                    f"{op}: every value of {name} must be an integer of at least {minimum}, "
                    f"not {v!r} in {out}"
                )
        if length is not None and len(out) != length:
            raise ValidationError(
                f"{op}: {name} must have {length} values, one per dimension of the input "
                f"(rank {length}), not {len(out)}"
            )
        return out

    def _shape_list(self, op: str, values: Any) -> list[int | None]:
        """``new_shape``: positive integers, or ``None`` where the operation allows it."""
        if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
            raise ValidationError(f"{op}: new_shape must be a list of dimensions, not {values!r}")
        return list(self._check_shape(values, f"{op}: new_shape", allow_dynamic=True))

    def _indices(self, op: str, indices: Any) -> Operand:
        idx = self._own(op, indices, "indices")
        if idx.dtype not in _INDEX_DTYPES:
            raise ValidationError(f"{op}: the indices are {idx.dtype}; use i32, u32 or i64")
        return idx

    def _same_dtype(self, op: str, x: Operand, other: Operand, role: str) -> None:
        if other.dtype != x.dtype:
            raise ValidationError(
                f"{op}: the {role} are {other.dtype} and the input {x.dtype}; "
                "they must have the same data type"
            )

    def _min_rank(self, op: str, x: Operand, rank: int, role: str = "input") -> None:
        if x.rank < rank:
            raise ValidationError(
                f"{op}: the {role} must have rank {rank} or more, not {x.rank} "
                f"(shape {shape_text(x.shape)})"
            )

    # ------------------------------------------------------------ indices

    def _constant_ints(self, x: Operand) -> list[int] | None:
        """The values of a constant of an index type, or ``None`` if ``x`` is computed."""
        init = self._initializers.get(x._name)
        if init is None or init.dtype not in _INDEX_FORMATS:
            return None
        fmt = _INDEX_FORMATS[init.dtype]
        count = len(init.data) // struct.calcsize(fmt)
        return list(struct.unpack(f"<{count}{fmt}", init.data))

    def _bounds(self, x: Operand, start: int, end: int, scalar: bool) -> tuple[Operand, Operand]:
        """``-size`` and ``size - 1`` (i64) of dimensions ``start:end`` of
        ``x``: constants when the sizes are known, else read at run time; rank
        0 when ``scalar`` (one dimension), else one value per dimension."""
        dims = x.shape[start:end]
        if all(d is not None for d in dims):
            known = [d for d in dims if d is not None]
            if scalar:
                return (
                    self._const("i64", (), struct.pack("<q", -known[0])),
                    self._const("i64", (), struct.pack("<q", known[0] - 1)),
                )
            return self._ints([-d for d in known]), self._ints([d - 1 for d in known])
        sizes = self._emit(
            "Shape", [x], {"start": start, "end": end}, shape=(end - start,), dtype="i64"
        )
        if scalar:
            sizes = self._emit("Reshape", [sizes, self._ints([])], shape=(), dtype="i64")
        one = self._const("i64", (), struct.pack("<q", 1))
        return (
            self._emit("Neg", [sizes], shape=sizes.shape, dtype="i64"),
            self._emit("Sub", [sizes, one], shape=sizes.shape, dtype="i64"),
        )

    def _fit_indices(
        self, indices: Operand, x: Operand, start: int, end: int, *, scalar: bool
    ) -> Operand:
        """``indices`` as i64 within ``[-size, size)`` of dimensions
        ``start:end`` of ``x`` (one per coordinate along the last axis of the
        indices unless ``scalar``).

        Constant indices are clamped now, into a new i64 constant; computed
        ones are clamped in the graph. Either way a run never reads outside
        the input.
        """
        dims = x.shape[start:end]
        values = self._constant_ints(indices)
        if values is not None and all(d is not None for d in dims):
            sizes = [d for d in dims if d is not None]
            fitted = []
            for i, v in enumerate(values):
                size = sizes[0] if scalar else sizes[i % len(sizes)]
                fitted.append(min(max(v, -size), size - 1))
            if fitted == values and indices.dtype == "i64":
                return indices
            data = struct.pack(f"<{len(fitted)}q", *fitted)
            return self._const("i64", [d for d in indices.shape if d is not None], data)
        wide = indices
        if indices.dtype != "i64":
            wide = self._emit("Cast", [indices], {"to": 7}, shape=indices.shape, dtype="i64")
        low, high = self._bounds(x, start, end, scalar)
        if indices.dtype != "u32":  # unsigned indices are never below zero
            wide = self._emit("Max", [wide, low], shape=indices.shape, dtype="i64")
        return self._emit("Min", [wide, high], shape=indices.shape, dtype="i64")

    # ------------------------------------------------------------ reshaping

    def reshape(self, input: Operand, new_shape: Sequence[int | Size | None]) -> Operand:
        """The same elements in row-major order, with shape ``new_shape``.

        Extensions to WebNN, for inputs with dynamic dimensions: one ``None``
        in ``new_shape`` takes whatever size is left (ONNX's ``-1``), and
        ``operand.size(axis)`` stands for a dimension of any operand of the
        graph, read when the model runs, so several unknown sizes can be
        given.

        >>> x = b.input("x", shape=[None, 4, 4], dtype="f32")
        >>> b.reshape(x, [None, 16]).shape
        (None, 16)
        >>> y = b.input("y", shape=[None, None, 2], dtype="f32")
        >>> b.reshape(y, [y.size(0), y.size(1), 1, 2]).shape
        (None, None, 1, 2)
        """
        x = self._own("reshape", input)
        if isinstance(new_shape, (str, bytes)) or not isinstance(new_shape, Iterable):
            raise ValidationError(
                f"reshape: new_shape must be a list of dimensions, not {new_shape!r}"
            )
        entries = list(new_shape)
        sizes = {i: e for i, e in enumerate(entries) if isinstance(e, Size)}
        given = [None if i in sizes else e for i, e in enumerate(entries)]
        dims = self._shape_list("reshape", given)
        rest = [i for i, d in enumerate(dims) if d is None and i not in sizes]
        if len(rest) > 1:
            raise ValidationError(
                f"reshape: new_shape {shape_text(dims)} has more than one None; only one "
                "dimension can be left for the input's size to decide (give the others as "
                "operand.size(axis))"
            )
        if sizes:
            return self._reshape_in_graph(x, dims, sizes)
        wanted = math.prod(d for d in dims if d is not None)
        known = math.prod(d for d in x.shape if d is not None)
        dynamic_in = None in x.shape
        if None in dims and not dynamic_in:
            if known % wanted:
                raise ValidationError(
                    f"reshape: the input {shape_text(x.shape)} has {known} elements, which "
                    f"new_shape {shape_text(dims)} cannot hold ({known} is not a multiple "
                    f"of {wanted})"
                )
            dims[dims.index(None)] = known // wanted
        elif None not in dims and not dynamic_in and known != wanted:
            raise ValidationError(
                f"reshape: new_shape {shape_text(dims)} has {wanted} elements, but the input "
                f"{shape_text(x.shape)} has {known}"
            )
        elif None not in dims and dynamic_in and wanted % known:
            raise ValidationError(
                f"reshape: new_shape {shape_text(dims)} has {wanted} elements, which is not a "
                f"multiple of the {known} the known dimensions of the input "
                f"{shape_text(x.shape)} hold"
            )
        target = self._ints([-1 if d is None else d for d in dims])
        return self._emit("Reshape", [x, target], shape=tuple(dims), dtype=x.dtype)

    def _reshape_in_graph(
        self, x: Operand, dims: list[int | None], sizes: dict[int, Size]
    ) -> Operand:
        """Reshape to a target the graph puts together when the model runs:
        the sizes read from their operands' shapes, the rest constants (-1
        for the one None). A static input's element count is still checked
        against the constant part."""
        static = math.prod(d for d in dims if d is not None)
        known = math.prod(d for d in x.shape if d is not None)
        if None not in x.shape and known % static:
            raise ValidationError(
                f"reshape: the input {shape_text(x.shape)} has {known} elements, which "
                f"new_shape's fixed dimensions ({static} elements) do not divide"
            )
        target = self._runtime_dims(
            "reshape", [sizes.get(i) or (-1 if d is None else d) for i, d in enumerate(dims)]
        )
        return self._emit("Reshape", [x, target], shape=tuple(dims), dtype=x.dtype)

    def _index(self, x: Operand, key: Any) -> Operand:
        """``x[key]`` with numpy's basic indexing: integers (which drop their
        dimension), slices with any step, ``...`` and ``None`` (a new
        dimension of size 1). One ONNX Slice takes every slice and integer
        (ONNX's Slice clamps starts and ends as Python does), a Reshape or
        Squeeze/Unsqueeze the dimensions that go or come."""
        parts = list(key) if isinstance(key, tuple) else [key]
        for i, part in enumerate(parts):
            if not isinstance(part, (bool, int, slice)) and hasattr(part, "__index__"):
                parts[i] = part = operator.index(part)  # numpy's integers
            if isinstance(part, bool) or not (
                part is None or part is Ellipsis or isinstance(part, (int, slice))
            ):
                raise TypeError(
                    f"an Operand is indexed with integers, slices, ... and None, not "
                    f"{type(part).__name__}; pick elements by an index operand with "
                    "builder.gather(x, indices, axis=...)"
                )
        if parts.count(Ellipsis) > 1:
            raise IndexError("an index can only have a single ellipsis ('...')")
        used = sum(1 for p in parts if p is not None and p is not Ellipsis)
        if used > x.rank:
            raise IndexError(
                f"too many indices: {x!r} has {x.rank} dimensions, but {used} were indexed"
            )
        at = parts.index(Ellipsis) if Ellipsis in parts else len(parts)
        parts[at : at + 1] = [slice(None)] * (x.rank - used)
        cut: list[tuple[int, int, int, int]] = []  # (axis, start, end, step)
        shape: list[int | None] = []  # the shape after the slice
        dropped: list[int] = []  # axes an integer index removes
        added: list[int] = []  # where None puts a new axis, in the result
        axis = 0
        for part in parts:
            if part is None:
                added.append(axis - len(dropped) + len(added))
                continue
            dim = x.shape[axis]
            if isinstance(part, int):
                if dim is not None and not -dim <= part < dim:
                    raise IndexError(
                        f"index {part} is out of bounds for dimension {axis} with size {dim}"
                    )
                end = part + 1 if part != -1 else _INT64_MAX
                cut.append((axis, part, end, 1))
                shape.append(1)
                dropped.append(axis)
            elif part == slice(None):
                shape.append(dim)
            else:
                start, stop, step = _slice_bounds(part)
                cut.append((axis, start, stop, step))
                shape.append(None if dim is None else len(range(*part.indices(dim))))
            axis += 1
        y = x
        if cut:
            y = self._emit("Slice", [
                x, self._ints([c[1] for c in cut]), self._ints([c[2] for c in cut]),
                self._ints([c[0] for c in cut]), self._ints([c[3] for c in cut]),
            ], shape=tuple(shape), dtype=x.dtype)  # fmt: skip
        if dropped:
            kept = tuple(d for i, d in enumerate(shape) if i not in dropped)
            y = self._emit("Squeeze", [y, self._ints(dropped)], shape=kept, dtype=x.dtype)
            shape = list(kept)
        if added:
            for place in added:
                shape.insert(place, 1)
            y = self._emit("Unsqueeze", [y, self._ints(added)], shape=tuple(shape), dtype=x.dtype)
        if y is x:
            y = self._emit("Identity", [x], shape=x.shape, dtype=x.dtype)
        return y

    def expand(self, input: Operand, new_shape: Sequence[int | None]) -> Operand:
        """``input`` repeated along its size-1 dimensions (and new leading
        ones) to ``new_shape``, as numpy's ``broadcast_to``.

        Extension to WebNN: ``None`` in ``new_shape`` keeps the input's
        dimension there, so a dynamic one can stay dynamic.

        >>> x = b.input("x", shape=[None, 1], dtype="f32")
        >>> b.expand(x, [2, None, 5]).shape
        (2, None, 5)
        """
        x = self._own("expand", input)
        dims = self._shape_list("expand", new_shape)
        if len(dims) < x.rank:
            raise ValidationError(
                f"expand: new_shape {shape_text(dims)} has fewer dimensions than the input "
                f"{shape_text(x.shape)}; it may only add leading ones"
            )
        lead = len(dims) - x.rank
        if None in dims[:lead]:
            raise ValidationError(
                f"expand: new_shape {shape_text(dims)} has None at a new leading dimension; "
                "None only keeps a dimension of the input, so give new ones a size"
            )
        out: list[int | None] = list(dims[:lead])
        target = [d or 1 for d in dims[:lead]]
        guard = False  # a dynamic input dimension that must turn out to be 1
        for i, (have, want) in enumerate(zip(x.shape, dims[lead:], strict=True)):
            if want is None:
                out.append(have)
                target.append(1)  # ONNX's Expand keeps an input dimension against 1
                continue
            if have is not None and have != want and have != 1:
                raise ValidationError(
                    f"expand: the input {shape_text(x.shape)} cannot be expanded to "
                    f"{shape_text(dims)} (dimension {i} is {have}; it must be 1 or {want})"
                )
            guard = guard or (have is None and want == 1)
            out.append(want)
            target.append(want)
        shape = tuple(out)
        y = self._emit("Expand", [x, self._ints(target)], shape=shape, dtype=x.dtype)
        if guard:
            # ONNX broadcasts both ways: a dynamic dimension of 3 against a 1
            # in new_shape would give 3. Reshaping to the promised sizes (0 =
            # keep) makes such a run fail instead of returning another shape.
            keep = self._ints([0 if d is None else d for d in shape])
            y = self._emit("Reshape", [y, keep], shape=shape, dtype=x.dtype)
        return y

    def transpose(self, input: Operand, *, permutation: Sequence[int] | None = None) -> Operand:
        """``input`` with its dimensions reordered: output dimension ``i`` is
        input dimension ``permutation[i]`` (default: reversed).

        >>> hwc = b.input("image", shape=[480, 640, 3], dtype="u8")
        >>> b.transpose(hwc, permutation=[2, 0, 1]).shape
        (3, 480, 640)
        """
        x = self._own("transpose", input)
        if permutation is None:
            perm = list(reversed(range(x.rank)))
        else:
            perm = self._int_list("transpose", "permutation", permutation, x.rank, 0)
            if sorted(perm) != list(range(x.rank)):
                raise ValidationError(
                    f"transpose: permutation must list each axis from 0 to {x.rank - 1} once, "
                    f"not {perm}"
                )
        shape = tuple(x.shape[p] for p in perm)
        if perm == list(range(x.rank)):
            return self._emit("Identity", [x], shape=shape, dtype=x.dtype)
        return self._emit("Transpose", [x], {"perm": perm}, shape=shape, dtype=x.dtype)

    # ------------------------------------------------------------ slicing and joining

    def slice(
        self,
        input: Operand,
        starts: Sequence[int],
        sizes: Sequence[int],
        *,
        strides: Sequence[int] | None = None,
    ) -> Operand:
        """The block of ``sizes[d]`` elements from ``starts[d]`` in each
        dimension ``d``, taking every ``strides[d]``-th one (default 1).

        >>> x = b.input("x", shape=[4, 6], dtype="f32")
        >>> b.slice(x, [1, 0], [2, 6], strides=[1, 2]).shape
        (2, 3)
        """
        x = self._own("slice", input)
        first = self._int_list("slice", "starts", starts, x.rank, 0)
        counts = self._int_list("slice", "sizes", sizes, x.rank, 1)
        steps = (
            [1] * x.rank if strides is None
            else self._int_list("slice", "strides", strides, x.rank, 1)
        )  # fmt: skip
        shape: list[int | None] = []
        axes: list[int] = []
        per_axis = zip(x.shape, first, counts, steps, strict=True)
        for axis, (dim, start, count, step) in enumerate(per_axis):
            if dim is not None and start + count > dim:
                raise ValidationError(
                    f"slice: dimension {axis} has size {dim}, but starts[{axis}] + "
                    f"sizes[{axis}] = {start} + {count} = {start + count} goes past it"
                )
            shape.append(-(-count // step))
            if not (start == 0 and count == dim and step == 1):
                axes.append(axis)
        if not axes:
            return self._emit("Identity", [x], shape=tuple(shape), dtype=x.dtype)
        inputs = [
            x,
            self._ints([first[a] for a in axes]),
            self._ints([first[a] + counts[a] for a in axes]),
            self._ints(axes),
        ]
        if any(steps[a] != 1 for a in axes):
            inputs.append(self._ints([steps[a] for a in axes]))
        return self._emit("Slice", inputs, shape=tuple(shape), dtype=x.dtype)

    def split(self, input: Operand, splits: int | Sequence[int], *, axis: int = 0) -> list[Operand]:
        """``input`` cut along ``axis`` into ``splits`` equal parts, or into
        parts of the sizes listed in ``splits``.

        >>> x = b.input("x", shape=[2, 10], dtype="f32")
        >>> [p.shape for p in b.split(x, [3, 7], axis=1)]
        [(2, 3), (2, 7)]
        """
        x = self._own("split", input)
        self._min_rank("split", x, 1)
        axis = self._check_axis("split", axis, x.rank)
        dim = x.shape[axis]
        attrs: dict[str, Any] = {"axis": axis}
        inputs: list[Operand] = [x]
        if isinstance(splits, int) and not isinstance(splits, bool):
            if not 1 <= splits <= _MAX_TENSORS:
                raise ValidationError(
                    f"split: splits must be from 1 to {_MAX_TENSORS} parts, not {splits}"
                )
            if dim is not None and dim % splits:
                raise ValidationError(
                    f"split: dimension {axis} has size {dim}, which {splits} parts cannot "
                    f"divide evenly; pass the sizes of the parts as a list"
                )
            parts: list[int | None] = [None if dim is None else dim // splits] * splits
            if dim is None:
                attrs["num_outputs"] = splits
            else:
                inputs.append(self._ints([dim // splits] * splits))
        else:
            sizes = self._int_list("split", "splits", splits, None, 1)
            if not 1 <= len(sizes) <= _MAX_TENSORS:
                raise ValidationError(
                    f"split: splits must list from 1 to {_MAX_TENSORS} sizes, not {len(sizes)}"
                )
            if dim is not None and sum(sizes) != dim:
                raise ValidationError(
                    f"split: the sizes {sizes} add up to {sum(sizes)}, but dimension {axis} "
                    f"has size {dim}"
                )
            parts = [*sizes]
            inputs.append(self._ints(sizes))
        results = [(x.shape[:axis] + (part,) + x.shape[axis + 1 :], x.dtype) for part in parts]
        return self._emit_many("Split", inputs, attrs, results)

    def concat(self, inputs: Sequence[Operand], axis: int) -> Operand:
        """The ``inputs`` joined along ``axis``; all other dimensions must match.

        >>> a = b.input("a", shape=[2, 3], dtype="f32")
        >>> b.concat([a, a], 1).shape
        (2, 6)
        """
        if isinstance(inputs, Operand) or not isinstance(inputs, Sequence):
            raise ValidationError(
                f"concat: inputs must be a list of Operands, not {type(inputs).__name__}"
            )
        if not 1 <= len(inputs) <= _MAX_TENSORS:
            raise ValidationError(
                f"concat: inputs must hold from 1 to {_MAX_TENSORS} operands, not {len(inputs)}"
            )
        xs = [self._own("concat", x, f"input {i}") for i, x in enumerate(inputs)]
        first = xs[0]
        self._min_rank("concat", first, 1, "input 0")
        axis = self._check_axis("concat", axis, first.rank)
        shape = list(first.shape)
        for i, x in enumerate(xs[1:], 1):
            if x.dtype != first.dtype:
                raise ValidationError(
                    f"concat: input {i} is {x.dtype} and input 0 {first.dtype}; all inputs "
                    "must have the same data type"
                )
            if x.rank != first.rank:
                raise ValidationError(
                    f"concat: input {i} has rank {x.rank} and input 0 rank {first.rank}; "
                    "all inputs must have the same rank"
                )
            for d, (have, mine) in enumerate(zip(shape, x.shape, strict=True)):
                if d == axis:
                    shape[d] = None if have is None or mine is None else have + mine
                elif not _same_dim(have, mine):
                    raise ValidationError(
                        f"concat: input {i} {shape_text(x.shape)} does not match input 0 "
                        f"{shape_text(first.shape)} in dimension {d}; only dimension {axis} "
                        "(the axis) may differ"
                    )
                else:
                    shape[d] = _known(have, mine)
        return self._emit("Concat", xs, {"axis": axis}, shape=tuple(shape), dtype=first.dtype)

    def pad(
        self,
        input: Operand,
        beginning_padding: Sequence[int],
        ending_padding: Sequence[int],
        *,
        mode: str = "constant",
        value: float = 0,
    ) -> Operand:
        """``input`` grown by ``beginning_padding[d]`` elements before and
        ``ending_padding[d]`` after its content in each dimension ``d``,
        filled with ``value`` (``mode="constant"``), the nearest edge element
        (``"edge"``) or a mirror image without the edge (``"reflection"``).

        >>> x = b.input("x", shape=[2, 3], dtype="f32")
        >>> b.pad(x, [1, 2], [1, 2], mode="reflection").shape
        (4, 7)
        """
        x = self._own("pad", input)
        before = self._int_list("pad", "beginning_padding", beginning_padding, x.rank, 0)
        after = self._int_list("pad", "ending_padding", ending_padding, x.rank, 0)
        if mode not in _PAD_MODES:
            raise ValidationError(
                f"pad: mode must be 'constant', 'edge' or 'reflection', not {mode!r}"
            )
        shape: list[int | None] = []
        for d, (dim, low, high) in enumerate(zip(x.shape, before, after, strict=True)):
            if mode == "reflection" and dim is not None and max(low, high) >= dim:
                raise ValidationError(
                    f"pad: reflection can add at most {dim - 1} elements on each side of "
                    f"dimension {d} (size {dim}), not {max(low, high)}"
                )
            shape.append(None if dim is None else low + dim + high)
        fill = None
        if mode == "constant":
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValidationError(f"pad: value must be a number, not {value!r}")
            fill = self._scalar(value, x.dtype, "pad")
        if not any(before) and not any(after):
            return self._emit("Identity", [x], shape=tuple(shape), dtype=x.dtype)
        pads = self._ints(before + after)
        return self._emit(
            "Pad", [x, pads] + ([fill] if fill is not None else []), {"mode": _PAD_MODES[mode]},
            shape=tuple(shape), dtype=x.dtype,
        )  # fmt: skip

    def tile(self, input: Operand, repetitions: Sequence[int]) -> Operand:
        """``input`` repeated ``repetitions[d]`` times along each dimension ``d``.

        >>> x = b.input("x", shape=[2, 3], dtype="f32")
        >>> b.tile(x, [2, 1]).shape
        (4, 3)
        """
        x = self._own("tile", input)
        reps = self._int_list("tile", "repetitions", repetitions, x.rank, 1)
        shape = tuple(None if d is None else d * r for d, r in zip(x.shape, reps, strict=True))
        if all(r == 1 for r in reps):
            return self._emit("Identity", [x], shape=shape, dtype=x.dtype)
        return self._emit("Tile", [x, self._ints(reps)], shape=shape, dtype=x.dtype)

    def reverse(self, input: Operand, *, axes: Sequence[int] | None = None) -> Operand:
        """``input`` with the order of elements reversed along ``axes``
        (default: every axis; ``[]``: none).

        Lowered to ONNX Slice with step -1 (ONNX has no Reverse).

        >>> x = b.input("x", shape=[2, 3], dtype="f32")
        >>> flipped = b.reverse(x, axes=[1])     # each row back to front
        """
        x = self._own("reverse", input)
        chosen = list(range(x.rank)) if axes is None else self._check_axes("reverse", axes, x.rank)
        # Reversing a dimension of size 1 changes nothing.
        chosen = sorted(a for a in chosen if x.shape[a] != 1)
        if not chosen:
            return self._emit("Identity", [x], shape=x.shape, dtype=x.dtype)
        n = len(chosen)
        inputs = [x, self._ints([-1] * n), self._ints([_INT64_MIN] * n), self._ints(chosen),
                  self._ints([-1] * n)]  # fmt: skip
        return self._emit("Slice", inputs, shape=x.shape, dtype=x.dtype)

    def triangular(self, input: Operand, *, upper: bool = True, diagonal: int = 0) -> Operand:
        """The upper (or lower) triangle of each matrix in the last two
        dimensions, the rest set to 0; ``diagonal`` moves the border up
        (positive) or down (negative) from the main diagonal.

        >>> x = b.input("x", shape=[3, 3], dtype="f32")
        >>> strictly_lower = b.triangular(x, upper=False, diagonal=-1)
        """
        x = self._own("triangular", input)
        self._min_rank("triangular", x, 2)
        if not isinstance(upper, bool):
            raise ValidationError(f"triangular: upper must be True or False, not {upper!r}")
        if (
            isinstance(diagonal, bool)
            or not isinstance(diagonal, int)
            or not (-(2**31) <= diagonal < 2**31)
        ):
            raise ValidationError(
                f"triangular: diagonal must be an integer (a 32-bit long), not {diagonal!r}"
            )
        inputs: list[Operand] = [x]
        if diagonal:
            inputs.append(self._const("i64", (), struct.pack("<q", diagonal)))
        return self._emit("Trilu", inputs, {"upper": int(upper)}, shape=x.shape, dtype=x.dtype)

    # ------------------------------------------------------------ gather and scatter

    def gather(self, input: Operand, indices: Operand, *, axis: int = 0) -> Operand:
        """The slices of ``input`` along ``axis`` at ``indices``: the result's
        shape is ``input.shape[:axis] + indices.shape + input.shape[axis+1:]``.

        Indices are clamped to ``[-size, size - 1]`` (see the module docstring).

        >>> table = b.input("table", shape=[100, 8], dtype="f32")
        >>> rows = b.gather(table, b.constant([3, -1], dtype="int32"))   # shape (2, 8)
        """
        x = self._own("gather", input)
        idx = self._indices("gather", indices)
        self._min_rank("gather", x, 1)
        axis = self._check_axis("gather", axis, x.rank)
        fitted = self._fit_indices(idx, x, axis, axis + 1, scalar=True)
        shape = x.shape[:axis] + idx.shape + x.shape[axis + 1 :]
        return self._emit("Gather", [x, fitted], {"axis": axis}, shape=shape, dtype=x.dtype)

    def _element_indices(self, op: str, x: Operand, idx: Operand, axis: int) -> Shape:
        """Check that ``idx`` matches ``x`` except along ``axis``; the shape they agree on."""
        if idx.rank != x.rank:
            raise ValidationError(
                f"{op}: the indices have rank {idx.rank} but the input rank {x.rank}; "
                "they must be the same"
            )
        shape: list[int | None] = []
        for d, (have, mine) in enumerate(zip(x.shape, idx.shape, strict=True)):
            if d != axis and not _same_dim(have, mine):
                raise ValidationError(
                    f"{op}: the indices {shape_text(idx.shape)} must have the input's shape "
                    f"{shape_text(x.shape)} except along axis {axis} (dimension {d} differs)"
                )
            shape.append(mine if d == axis else _known(have, mine))
        return tuple(shape)

    def gather_elements(self, input: Operand, indices: Operand, *, axis: int = 0) -> Operand:
        """For each position of ``indices``, the element of ``input`` at that
        position with its ``axis`` coordinate replaced by the index there
        (numpy's ``take_along_axis``); ``indices`` has the input's shape
        except along ``axis``.

        >>> scores = b.input("scores", shape=[4, 10], dtype="f32")
        >>> picks = b.constant([[0], [2], [1], [9]], dtype="int32")
        >>> b.gather_elements(scores, picks, axis=1).shape
        (4, 1)
        """
        x = self._own("gather_elements", input)
        idx = self._indices("gather_elements", indices)
        self._min_rank("gather_elements", x, 1)
        axis = self._check_axis("gather_elements", axis, x.rank)
        shape = self._element_indices("gather_elements", x, idx, axis)
        fitted = self._fit_indices(idx, x, axis, axis + 1, scalar=True)
        return self._emit("GatherElements", [x, fitted], {"axis": axis}, shape=shape, dtype=x.dtype)

    def _coordinates(self, op: str, x: Operand, idx: Operand) -> int:
        """How many leading dimensions of ``x`` each row of ``idx`` addresses."""
        self._min_rank(op, x, 1)
        self._min_rank(op, idx, 1, "indices")
        k = idx.shape[-1]
        if k is None:
            raise ValidationError(
                f"{op}: the last dimension of the indices {shape_text(idx.shape)} (the length "
                "of each coordinate) must be static"
            )
        if k > x.rank:
            raise ValidationError(
                f"{op}: coordinates of {k} values (the last dimension of the indices "
                f"{shape_text(idx.shape)}) are more than the input's rank {x.rank}"
            )
        return k

    def gather_nd(self, input: Operand, indices: Operand) -> Operand:
        """The slices of ``input`` at the coordinates along the last axis of
        ``indices``: the result's shape is
        ``indices.shape[:-1] + input.shape[indices.shape[-1]:]``.

        >>> x = b.input("x", shape=[4, 5, 6], dtype="f32")
        >>> b.gather_nd(x, b.constant([[0, 1], [3, -1]], dtype="int64")).shape
        (2, 6)
        """
        x = self._own("gather_nd", input)
        idx = self._indices("gather_nd", indices)
        k = self._coordinates("gather_nd", x, idx)
        fitted = self._fit_indices(idx, x, 0, k, scalar=False)
        shape = idx.shape[:-1] + x.shape[k:]
        return self._emit("GatherND", [x, fitted], shape=shape, dtype=x.dtype)

    def scatter_elements(
        self, input: Operand, indices: Operand, updates: Operand, *, axis: int = 0
    ) -> Operand:
        """A copy of ``input`` with ``updates`` written where ``gather_elements``
        with the same ``indices`` and ``axis`` would read; ``updates`` has the
        shape of ``indices``. Where indices repeat, which update wins is not
        defined.

        >>> x = b.input("x", shape=[3, 4], dtype="f32")
        >>> y = b.scatter_elements(x, b.constant([[0], [1], [3]], dtype="int32"),
        ...                        b.constant([[9.0], [9.0], [9.0]]), axis=1)
        """
        x = self._own("scatter_elements", input)
        idx = self._indices("scatter_elements", indices)
        new = self._own("scatter_elements", updates, "updates")
        self._same_dtype("scatter_elements", x, new, "updates")
        self._min_rank("scatter_elements", x, 1)
        axis = self._check_axis("scatter_elements", axis, x.rank)
        shape = self._element_indices("scatter_elements", x, idx, axis)
        if new.rank != idx.rank or not all(map(_same_dim, new.shape, shape)):
            raise ValidationError(
                f"scatter_elements: the updates {shape_text(new.shape)} must have the shape "
                f"of the indices {shape_text(idx.shape)}"
            )
        fitted = self._fit_indices(idx, x, axis, axis + 1, scalar=True)
        return self._emit(
            "ScatterElements", [x, fitted, new], {"axis": axis}, shape=x.shape, dtype=x.dtype
        )

    def scatter_nd(self, input: Operand, indices: Operand, updates: Operand) -> Operand:
        """A copy of ``input`` with ``updates`` written where ``gather_nd``
        with the same ``indices`` would read; ``updates`` has the shape
        ``indices.shape[:-1] + input.shape[indices.shape[-1]:]``. Where
        coordinates repeat, which update wins is not defined.

        >>> x = b.input("x", shape=[4, 3], dtype="f32")
        >>> y = b.scatter_nd(x, b.constant([[1], [3]], dtype="int32"), b.constant([[0.0] * 3] * 2))
        """
        x = self._own("scatter_nd", input)
        idx = self._indices("scatter_nd", indices)
        new = self._own("scatter_nd", updates, "updates")
        self._same_dtype("scatter_nd", x, new, "updates")
        k = self._coordinates("scatter_nd", x, idx)
        expected = idx.shape[:-1] + x.shape[k:]
        if new.rank != len(expected) or not all(map(_same_dim, new.shape, expected)):
            raise ValidationError(
                f"scatter_nd: the updates {shape_text(new.shape)} must have the shape "
                f"{shape_text(expected)} (the indices' shape without its last dimension, then "
                f"the input's dimensions from {k} on)"
            )
        fitted = self._fit_indices(idx, x, 0, k, scalar=False)
        return self._emit("ScatterND", [x, fitted, new], shape=x.shape, dtype=x.dtype)

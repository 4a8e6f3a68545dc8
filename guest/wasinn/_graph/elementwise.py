"""Element-wise operations of the graph builder: arithmetic, comparison, logic,
unary math, activations, ``clamp``, ``cast`` and ``where``.

Names, arguments and defaults follow WebNN's ``MLGraphBuilder`` in snake_case.
Comparisons and logical operations give ``u8`` (1 for true), as in WebNN;
ONNX computes them in ``bool``, so casts are added around them.
"""

from __future__ import annotations

import math
from typing import Any

from .._errors import ValidationError
from .._formats.onnx_write import ONNX_TYPES
from .core import (
    DTYPES,
    FLOAT_DTYPES,
    FOUR_BIT,
    INT_DTYPES,
    INT_RANGES,
    WIDE_UNSIGNED,
    BuilderCore,
    Operand,
    dtype_name,
    wide_unsigned_error,
)

_SIGNED = FLOAT_DTYPES | {"i8", "i32", "i64"}
_BOOL = "bool"
# Integers up to this magnitude are exact in f32, where the host's Clip compares.
_F32_EXACT = 2**24


class ElementwiseFamily(BuilderCore):
    """See the module docstring; mixed into ``GraphOperations`` (and so ``GraphBuilder``)."""

    # ------------------------------------------------------------ binary

    def add(self, a: Operand | float, b: Operand | float) -> Operand:
        """``a + b`` with broadcasting. ``b.add(x, 1.0)`` is the same as ``x + 1.0``."""
        return self._binary("add", "Add", a, b)

    def sub(self, a: Operand | float, b: Operand | float) -> Operand:
        """``a - b`` with broadcasting."""
        return self._binary("sub", "Sub", a, b)

    def mul(self, a: Operand | float, b: Operand | float) -> Operand:
        """``a * b`` with broadcasting."""
        return self._binary("mul", "Mul", a, b)

    def div(self, a: Operand | float, b: Operand | float) -> Operand:
        """``a / b`` with broadcasting (integers: truncated toward zero, as ONNX does)."""
        return self._binary("div", "Div", a, b)

    def max(self, a: Operand | float, b: Operand | float) -> Operand:
        """The larger of ``a`` and ``b``, element by element."""
        return self._binary("max", "Max", a, b)

    def min(self, a: Operand | float, b: Operand | float) -> Operand:
        """The smaller of ``a`` and ``b``, element by element."""
        return self._binary("min", "Min", a, b)

    def pow(self, a: Operand | float, b: Operand | float) -> Operand:
        """``a ** b`` with broadcasting."""
        return self._binary("pow", "Pow", a, b)

    # ------------------------------------------------------------ comparison and logic

    def equal(self, a: Operand | float, b: Operand | float) -> Operand:
        """1 (u8) where ``a == b``, else 0.

        >>> m = b.equal(x, 0.0)    # u8 mask of the zeros of x
        """
        return self._compare("equal", "Equal", a, b)

    def not_equal(self, a: Operand | float, b: Operand | float) -> Operand:
        """1 (u8) where ``a != b``, else 0."""
        same = self._binary("not_equal", "Equal", a, b, result_dtype=_BOOL)
        differ = self._emit("Not", [same], shape=same.shape, dtype=_BOOL)
        return self._emit("Cast", [differ], {"to": 2}, shape=same.shape, dtype="u8")

    def greater(self, a: Operand | float, b: Operand | float) -> Operand:
        """1 (u8) where ``a > b``, else 0."""
        return self._compare("greater", "Greater", a, b)

    def greater_or_equal(self, a: Operand | float, b: Operand | float) -> Operand:
        """1 (u8) where ``a >= b``, else 0."""
        return self._compare("greater_or_equal", "GreaterOrEqual", a, b)

    def lesser(self, a: Operand | float, b: Operand | float) -> Operand:
        """1 (u8) where ``a < b``, else 0."""
        return self._compare("lesser", "Less", a, b)

    def lesser_or_equal(self, a: Operand | float, b: Operand | float) -> Operand:
        """1 (u8) where ``a <= b``, else 0."""
        return self._compare("lesser_or_equal", "LessOrEqual", a, b)

    def _as_bool(self, op: str, x: Any, role: str) -> Operand:
        x = self._own(op, x, role)
        self._check_dtype(op, x, ["u8"], role)
        return self._emit("Cast", [x], {"to": 9}, shape=x.shape, dtype=_BOOL)

    def _logical(self, op: str, onnx_op: str, a: Any, b: Any) -> Operand:
        a_bool, b_bool = self._as_bool(op, a, "first input"), self._as_bool(op, b, "second input")
        shape = self._broadcast(op, a_bool.shape, b_bool.shape)
        result = self._emit(onnx_op, [a_bool, b_bool], shape=shape, dtype=_BOOL)
        return self._emit("Cast", [result], {"to": 2}, shape=shape, dtype="u8")

    def logical_and(self, a: Operand, b: Operand) -> Operand:
        """1 (u8) where both u8 inputs are non-zero."""
        return self._logical("logical_and", "And", a, b)

    def logical_or(self, a: Operand, b: Operand) -> Operand:
        """1 (u8) where either u8 input is non-zero."""
        return self._logical("logical_or", "Or", a, b)

    def logical_xor(self, a: Operand, b: Operand) -> Operand:
        """1 (u8) where exactly one u8 input is non-zero."""
        return self._logical("logical_xor", "Xor", a, b)

    def logical_not(self, x: Operand) -> Operand:
        """1 (u8) where the u8 input is zero."""
        as_bool = self._as_bool("logical_not", x, "input")
        flipped = self._emit("Not", [as_bool], shape=as_bool.shape, dtype=_BOOL)
        return self._emit("Cast", [flipped], {"to": 2}, shape=as_bool.shape, dtype="u8")

    def is_nan(self, x: Operand) -> Operand:
        """1 (u8) where the float input is NaN."""
        x = self._own("is_nan", x)
        self._check_dtype("is_nan", x, FLOAT_DTYPES)
        found = self._emit("IsNaN", [x], shape=x.shape, dtype=_BOOL)
        return self._emit("Cast", [found], {"to": 2}, shape=x.shape, dtype="u8")

    def is_infinite(self, x: Operand) -> Operand:
        """1 (u8) where the float input is +inf or -inf."""
        x = self._own("is_infinite", x)
        self._check_dtype("is_infinite", x, FLOAT_DTYPES)
        found = self._emit("IsInf", [x], shape=x.shape, dtype=_BOOL)
        return self._emit("Cast", [found], {"to": 2}, shape=x.shape, dtype="u8")

    # ------------------------------------------------------------ unary math

    def abs(self, x: Operand) -> Operand:
        """``|x|``."""
        return self._unary("abs", "Abs", x, _SIGNED)

    def ceil(self, x: Operand) -> Operand:
        """The smallest whole number not below ``x``."""
        return self._unary("ceil", "Ceil", x, FLOAT_DTYPES)

    def floor(self, x: Operand) -> Operand:
        """The largest whole number not above ``x``."""
        return self._unary("floor", "Floor", x, FLOAT_DTYPES)

    def round_even(self, x: Operand) -> Operand:
        """``x`` rounded to the nearest whole number, halves to even."""
        return self._unary("round_even", "Round", x, FLOAT_DTYPES)

    def exp(self, x: Operand) -> Operand:
        """``e ** x``."""
        return self._unary("exp", "Exp", x, FLOAT_DTYPES)

    def log(self, x: Operand) -> Operand:
        """The natural logarithm."""
        return self._unary("log", "Log", x, FLOAT_DTYPES)

    def neg(self, x: Operand) -> Operand:
        """``-x`` (also written ``-x``)."""
        return self._unary("neg", "Neg", x, _SIGNED)

    def reciprocal(self, x: Operand) -> Operand:
        """``1 / x``."""
        return self._unary("reciprocal", "Reciprocal", x, FLOAT_DTYPES)

    def sqrt(self, x: Operand) -> Operand:
        """The square root."""
        return self._unary("sqrt", "Sqrt", x, FLOAT_DTYPES)

    def sin(self, x: Operand) -> Operand:
        """The sine (radians)."""
        return self._unary("sin", "Sin", x, FLOAT_DTYPES)

    def cos(self, x: Operand) -> Operand:
        """The cosine (radians)."""
        return self._unary("cos", "Cos", x, FLOAT_DTYPES)

    def tan(self, x: Operand) -> Operand:
        """The tangent (radians)."""
        return self._unary("tan", "Tan", x, FLOAT_DTYPES)

    def erf(self, x: Operand) -> Operand:
        """The Gauss error function."""
        return self._unary("erf", "Erf", x, FLOAT_DTYPES)

    def sign(self, x: Operand) -> Operand:
        """-1, 0 or 1 by the sign of ``x``."""
        return self._unary("sign", "Sign", x, _SIGNED)

    def identity(self, x: Operand) -> Operand:
        """``x`` unchanged (a new operand with the same value)."""
        return self._unary("identity", "Identity", x, DTYPES)

    # ------------------------------------------------------------ activations

    def relu(self, x: Operand) -> Operand:
        """``max(x, 0)``.

        On i32 and i64 it is ``Where(x > 0, x, 0)``: OpenVINO's CPU plugin
        computes their ``Relu`` in f32 (``2**31 - 1`` comes out as
        ``-2**31``), while its comparison with 0 keeps the sign and ``Where``
        passes the integer through.
        """
        x = self._own("relu", x)
        self._check_dtype("relu", x, _SIGNED)
        if x.dtype not in ("i32", "i64"):
            return self._emit("Relu", [x], shape=x.shape, dtype=x.dtype)
        zero = self._scalar(0, x.dtype, "relu")
        positive = self._emit("Greater", [x, zero], shape=x.shape, dtype=_BOOL)
        return self._emit("Where", [positive, x, zero], shape=x.shape, dtype=x.dtype)

    def sigmoid(self, x: Operand) -> Operand:
        """``1 / (1 + e ** -x)``."""
        return self._unary("sigmoid", "Sigmoid", x, FLOAT_DTYPES)

    def tanh(self, x: Operand) -> Operand:
        """The hyperbolic tangent."""
        return self._unary("tanh", "Tanh", x, FLOAT_DTYPES)

    def softplus(self, x: Operand) -> Operand:
        """``log(1 + e ** x)``."""
        return self._unary("softplus", "Softplus", x, FLOAT_DTYPES)

    def softsign(self, x: Operand) -> Operand:
        """``x / (1 + |x|)``."""
        return self._unary("softsign", "Softsign", x, FLOAT_DTYPES)

    def _float_option(self, op: str, name: str, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
            raise ValidationError(f"{op}: {name} must be a number, not {value!r}")
        return float(value)

    def _bound_option(self, op: str, name: str, value: Any, dtype: str) -> int | float:
        """A number for an operand of ``dtype`` (WebNN's MLNumber): a Python int
        stays exact for an integer dtype (i64 and u64 hold more than a float
        does) and must lie in its range; floats take any number but NaN."""
        if dtype not in INT_DTYPES:
            return self._float_option(op, name, value)
        whole = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
        if isinstance(value, bool) or not whole:
            raise ValidationError(
                f"{op}: {name} must be a whole number for the {dtype} input, not {value!r}"
            )
        low, high = INT_RANGES[dtype]
        if not low <= int(value) <= high:
            raise ValidationError(
                f"{op}: {name} {int(value)} is out of the range of {dtype} ({low} to {high})"
            )
        return int(value)

    def elu(self, x: Operand, *, alpha: float = 1.0) -> Operand:
        """``x`` where positive, else ``alpha * (e ** x - 1)``."""
        x = self._own("elu", x)
        self._check_dtype("elu", x, FLOAT_DTYPES)
        attrs = {"alpha": self._float_option("elu", "alpha", alpha)}
        return self._emit("Elu", [x], attrs, shape=x.shape, dtype=x.dtype)

    def leaky_relu(self, x: Operand, *, alpha: float = 0.01) -> Operand:
        """``x`` where positive, else ``alpha * x``."""
        x = self._own("leaky_relu", x)
        self._check_dtype("leaky_relu", x, FLOAT_DTYPES)
        attrs = {"alpha": self._float_option("leaky_relu", "alpha", alpha)}
        return self._emit("LeakyRelu", [x], attrs, shape=x.shape, dtype=x.dtype)

    def hard_sigmoid(self, x: Operand, *, alpha: float = 0.2, beta: float = 0.5) -> Operand:
        """``max(0, min(1, alpha * x + beta))``."""
        x = self._own("hard_sigmoid", x)
        self._check_dtype("hard_sigmoid", x, FLOAT_DTYPES)
        attrs = {
            "alpha": self._float_option("hard_sigmoid", "alpha", alpha),
            "beta": self._float_option("hard_sigmoid", "beta", beta),
        }
        return self._emit("HardSigmoid", [x], attrs, shape=x.shape, dtype=x.dtype)

    def hard_swish(self, x: Operand) -> Operand:
        """``x * max(0, min(6, x + 3)) / 6``."""
        return self._unary("hard_swish", "HardSwish", x, FLOAT_DTYPES)

    def gelu(self, x: Operand) -> Operand:
        """``0.5 * x * (1 + erf(x / sqrt(2)))``, the exact (not tanh) form.

        Written out with Erf: ONNX's Gelu operator needs opset 20.
        """
        x = self._own("gelu", x)
        self._check_dtype("gelu", x, FLOAT_DTYPES)
        scaled = self._binary("gelu", "Div", x, math.sqrt(2.0))
        erf = self._emit("Erf", [scaled], shape=x.shape, dtype=x.dtype)
        one_plus = self._binary("gelu", "Add", erf, 1.0)
        half_x = self._binary("gelu", "Mul", x, 0.5)
        return self._binary("gelu", "Mul", half_x, one_plus)

    def linear(self, x: Operand, *, alpha: float = 1.0, beta: float = 0.0) -> Operand:
        """``alpha * x + beta``."""
        x = self._own("linear", x)
        self._check_dtype("linear", x, FLOAT_DTYPES)
        alpha = self._float_option("linear", "alpha", alpha)
        beta = self._float_option("linear", "beta", beta)
        return self._binary("linear", "Add", self._binary("linear", "Mul", x, alpha), beta)

    def prelu(self, x: Operand, slope: Operand) -> Operand:
        """``x`` where positive, else ``slope * x`` (``slope`` broadcasts to ``x``)."""
        x = self._own("prelu", x)
        slope = self._own("prelu", slope, "slope")
        self._check_dtype("prelu", x, _SIGNED)
        if slope.dtype != x.dtype:
            raise ValidationError(
                f"prelu: the slope is {slope.dtype}, the input {x.dtype}; they must match"
            )
        shape = self._broadcast("prelu", x.shape, slope.shape)
        return self._emit("PRelu", [x, slope], shape=shape, dtype=x.dtype)

    def clamp(
        self, x: Operand, *, min_value: float | None = None, max_value: float | None = None
    ) -> Operand:
        """``x`` limited to ``[min_value, max_value]`` (either may be left out).

        For an integer ``x`` the bounds are whole numbers within its data
        type's range, and Python ints are kept exact (they never pass through
        a float). NaN stays NaN and infinities pass a one-sided clamp, as in
        WebNN: a float clamp is ``Clip``, or ``Max`` or ``Min`` for one bound
        (``Clip`` would put the type's largest finite value in for the
        missing one), then ``Where(IsNaN(x), x, ...)``, as OpenVINO's CPU
        plugin turns NaN into a bound.

        The host's integer limits: u32 and u64 are refused (OpenVINO's CPU
        plugin holds them in 32-bit signed integers), and so are i64 bounds
        outside the i32 range (it computes i64 in 32 bits). Its ``Clip`` on
        i32 and i64 compares in f32, so with a bound of magnitude ``2**24``
        or more a two-sided clamp is computed as
        ``Max(x, min) + Min(x, max) - x`` (exact in wrapping integer
        arithmetic); a one-sided integer clamp is ``Max`` or ``Min``.

        >>> pixels = b.clamp(x, min_value=0, max_value=255)
        """
        x = self._own("clamp", x)
        if x.dtype in WIDE_UNSIGNED:
            raise wide_unsigned_error("clamp", "input", x.dtype)
        low, high = (
            None if v is None else self._bound_option("clamp", name, v, x.dtype)
            for name, v in (("min_value", min_value), ("max_value", max_value))
        )
        if low is not None and high is not None and low > high:
            raise ValidationError(f"clamp: min_value {low} is greater than max_value {high}")
        if x.dtype in INT_DTYPES:
            low, high = self._integer_bounds(x.dtype, low, high)
        lower = None if low is None else self._scalar(low, x.dtype, "clamp")
        upper = None if high is None else self._scalar(high, x.dtype, "clamp")
        if lower is None and upper is None:
            return self._emit("Identity", [x], shape=x.shape, dtype=x.dtype)
        if upper is None:
            y = self._emit("Max", [x, lower], shape=x.shape, dtype=x.dtype)
        elif lower is None:
            y = self._emit("Min", [x, upper], shape=x.shape, dtype=x.dtype)
        elif (
            x.dtype in INT_DTYPES
            and max(abs(v) for v in (low, high) if v is not None) >= _F32_EXACT
        ):
            raised = self._emit("Max", [x, lower], shape=x.shape, dtype=x.dtype)
            cut = self._emit("Min", [x, upper], shape=x.shape, dtype=x.dtype)
            both = self._emit("Add", [raised, cut], shape=x.shape, dtype=x.dtype)
            return self._emit("Sub", [both, x], shape=x.shape, dtype=x.dtype)
        else:
            y = self._emit("Clip", [x, lower, upper], shape=x.shape, dtype=x.dtype)
        if x.dtype in INT_DTYPES:
            return y
        nan = self._emit("IsNaN", [x], shape=x.shape, dtype=_BOOL)
        return self._emit("Where", [nan, x, y], shape=x.shape, dtype=x.dtype)

    def _integer_bounds(
        self, dtype: str, low: float | None, high: float | None
    ) -> tuple[float | None, float | None]:
        """Integer clamp bounds without those the type's range makes no-ops,
        checked against the host's 32-bit i64 arithmetic."""
        smallest, largest = INT_RANGES[dtype]
        low = None if low == smallest else low
        high = None if high == largest else high
        if dtype == "i64":
            i32_low, i32_high = INT_RANGES["i32"]
            for name, v in (("min_value", low), ("max_value", high)):
                if v is not None and not i32_low <= v <= i32_high:
                    raise ValidationError(
                        f"clamp: {name} {int(v)} is outside the i32 range ({i32_low} to "
                        f"{i32_high}), which this host cannot compute exactly for an i64 input "
                        "(OpenVINO's CPU plugin computes i64 in 32 bits)"
                    )
        return low, high

    # ------------------------------------------------------------ type and selection

    def cast(self, x: Operand, dtype: Any) -> Operand:
        """``x`` converted to ``dtype`` (``"f32"``, ``"float32"``, ``"u8"``, ...).

        Float to integer truncates toward zero; out-of-range values are
        undefined, as in WebNN: clamp first. 4-bit values (``"int4"``,
        ``"uint4"``) cannot leave the graph: cast them to a wider type
        before they become an output.
        """
        x = self._own("cast", x)
        dt = dtype_name(dtype, "cast")
        if dt in FOUR_BIT and x.dtype in FLOAT_DTYPES:
            # Through the 8-bit type, so that floats truncate as in every other cast.
            wide = "i8" if dt == "int4" else "u8"
            x = self._emit("Cast", [x], {"to": ONNX_TYPES[wide]}, shape=x.shape, dtype=wide)
        return self._emit("Cast", [x], {"to": ONNX_TYPES[dt]}, shape=x.shape, dtype=dt)

    def where(
        self, condition: Operand, true_value: Operand | float, false_value: Operand | float
    ) -> Operand:
        """``true_value`` where the u8 ``condition`` is non-zero, else ``false_value``;
        all three broadcast together.

        >>> y = b.where(b.greater(x, 0.5), x, 0.0)
        """
        cond = self._as_bool("where", condition, "condition")
        if not isinstance(true_value, Operand) and not isinstance(false_value, Operand):
            raise ValidationError("where: true_value or false_value must be an Operand")
        if isinstance(true_value, Operand):
            true_value = self._own("where", true_value, "true_value")
        if isinstance(false_value, Operand):
            false_value = self._own("where", false_value, "false_value")
        if not isinstance(true_value, Operand):
            true_value = self._number("where", true_value, false_value.dtype)  # type: ignore[union-attr]
        if not isinstance(false_value, Operand):
            false_value = self._number("where", false_value, true_value.dtype)
        if true_value.dtype != false_value.dtype:
            raise ValidationError(
                f"where: true_value is {true_value.dtype} and false_value {false_value.dtype}; "
                "they must have the same data type"
            )
        shape = self._broadcast("where", cond.shape, true_value.shape)
        shape = self._broadcast("where", shape, false_value.shape)
        return self._emit(
            "Where", [cond, true_value, false_value], shape=shape, dtype=true_value.dtype
        )

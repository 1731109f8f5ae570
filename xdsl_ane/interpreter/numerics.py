"""Numerics shared by the rlx and mil interpreters: the checked `@impl`
decorator, the op-family registration helper, and the formulas both
dialects use (erf, sigmoid, GELU, integer division, casts, and the
reductions, which accumulate f16 in float32: sums, means, products,
log-sum-exp, softmax, layer norm, matmul, the running sum)."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.interpreter import Interpreter, PythonValues, impl
from xdsl.ir import Operation

from xdsl_ane.interpreter.half_matmul import half_matmul
from xdsl_ane.interpreter.values import check_value, numpy_dtype

Array = np.ndarray
Compute = Callable[..., Any]


def checked_impl(op_type: type[Operation], convert: bool) -> Callable[[Compute], Any]:
    """`@impl` for an op whose method takes `(self, op, *operand_values)` and
    returns its result array (or a tuple of them). Each result is checked
    against its result type; with `convert` it is first converted to the
    result type's dtype, without it a wrong dtype (an accidental upcast of
    f16 math) fails loudly instead of leaking into later ops. Floating-point
    exceptions follow IEEE without numpy warnings."""

    def annotate(compute: Compute):
        def run(
            self: Any, interpreter: Interpreter, op: Operation, args: PythonValues
        ) -> PythonValues:
            with np.errstate(all="ignore"):
                values = compute(self, op, *args)
            if not isinstance(values, tuple):
                values = (values,)
            checked = []
            for value, result in zip(values, op.results, strict=True):
                array = np.asarray(value)
                if convert:
                    array = array.astype(result_dtype(result.type), copy=False)
                checked.append(check_value(f"{op.name} result", array, result.type))
            return tuple(checked)

        return impl(op_type)(run)

    return annotate


def family_impls(
    op_types: Iterable[type[Operation]], compute: Compute, convert: bool
) -> dict[str, Any]:
    """One `checked_impl` per op type of a family, all running `compute`.
    `register_impls` collects marked class attributes, so each op needs its
    own attribute; the class body adds these with `locals().update(...)`."""
    return {
        f"run_{op_type.name.split('.', 1)[1]}": checked_impl(op_type, convert)(compute)
        for op_type in op_types
    }


def result_dtype(t: Any) -> np.dtype:
    assert isinstance(t, TensorType)
    return numpy_dtype(t.element_type)


def result_shape(op: Operation) -> tuple[int, ...]:
    t = op.results[0].type
    assert isinstance(t, TensorType)
    return tuple(t.get_shape())


def rounded_from_float32(ufunc: Callable[[Array], Array]) -> Callable[[Array], Array]:
    """`ufunc` evaluated in float32 for f16 input and rounded to f16.

    numpy's own float16 loops for the transcendental functions differ from
    CPU to CPU: with AVX512-FP16 (Sapphire Rapids) `np.tanh` saturates at
    0.9985 instead of 1, which turns GELU's gradient at x = 30 into 5.3. The
    float32 value rounded once is the same on every machine, and is the
    correctly rounded f16 result but for rare double roundings."""

    @functools.wraps(ufunc)
    def evaluate(x: Array) -> Array:
        x = np.asarray(x)
        if x.dtype == np.float16:
            return ufunc(x.astype(np.float32)).astype(np.float16)
        return ufunc(x)

    return evaluate


tanh = rounded_from_float32(np.tanh)
exp = rounded_from_float32(np.exp)
log = rounded_from_float32(np.log)
sin = rounded_from_float32(np.sin)
cos = rounded_from_float32(np.cos)

# The constants of GELU and its derivative, for the interpreters and the
# lowerings alike.
SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
"""√(2/π), the scale inside the tanh of GELU's tanh approximation."""
GELU_TANH_CUBIC = 0.044715
"""The cubic coefficient of GELU's tanh approximation."""
INV_SQRT_2 = 1 / math.sqrt(2.0)
"""1/√2: the normal CDF Φ(x) = (1 + erf(x/√2))/2 of exact GELU, x·Φ(x)."""
INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)
"""1/√(2π): the normal density φ(x) = e^(−x²/2)/√(2π) of GELU's derivative."""

# numpy has no erf; math.erf runs in float64 and the value is rounded to the
# input's dtype before the rest of a formula runs in that dtype.
_erf64 = np.frompyfunc(math.erf, 1, 1)


def erf(x: Array) -> Array:
    # np.asarray: frompyfunc gives a Python float for a rank-0 array.
    return np.asarray(_erf64(x), dtype=np.float64).astype(x.dtype)


def normal_cdf(x: Array) -> Array:
    """Φ(x) = (1 + erf(x/√2)) / 2."""
    return 0.5 * (1 + erf(x * INV_SQRT_2))


def sigmoid(x: Array) -> Array:
    """1 / (1 + e^−x), written with e^−|x| so no exponential overflows."""
    e = exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def gelu_tanh(x: Array) -> Array:
    """x/2 · (1 + tanh(√(2/π) · (x + 0.044715 x³)))."""
    return 0.5 * x * (1 + tanh(SQRT_2_OVER_PI * (x + GELU_TANH_CUBIC * x**3)))


def integer_quotient(x: Array, y: Array) -> Array:
    """Integer division rounded toward zero (C's `/`)."""
    if np.any(y == 0):
        raise ZeroDivisionError("integer division by zero")
    a, b = x.astype(np.int64), y.astype(np.int64)
    return (np.abs(a) // np.abs(b) * np.sign(a) * np.sign(b)).astype(
        np.result_type(x, y)
    )


def divide(x: Array, y: Array) -> Array:
    """Float division, or integer division rounded toward zero."""
    return x / y if x.dtype.kind == "f" else integer_quotient(x, y)


def cast(x: Array, dtype: np.dtype) -> Array:
    """dtype conversion: float to int truncates toward zero and saturates
    (NaN becomes 0), anything to bool is `!= 0`, the rest is numpy's."""
    if dtype == np.bool_:
        return x != 0
    if dtype.kind in "iu" and x.dtype.kind == "f":
        # float64 holds every f16/f32 value and every int32 bound exactly.
        info = np.iinfo(dtype)
        truncated = np.clip(np.trunc(x.astype(np.float64)), info.min, info.max)
        return np.where(np.isnan(truncated), 0, truncated).astype(dtype)
    return x.astype(dtype)


# --- reductions --------------------------------------------------------------
#
# An f16 reduction accumulates in float32 and rounds its result to f16 once,
# whatever the axis and memory layout. numpy's own float16 sum is pairwise
# only along the contiguous axis; along any other it adds term by term in
# float16, so 4096 ones sum to 2048 (2048 + 1 rounds back to 2048). Every
# formula below that reduces is wrapped by `accumulates_in_float32`, the one
# place this rule lives.


def _is_f16(value: Any) -> bool:
    return isinstance(value, np.ndarray | np.generic) and value.dtype == np.float16


def _round_to_f16(value: Any) -> Any:
    array = np.asarray(value)
    return array.astype(np.float16) if array.dtype.kind == "f" else array


def accumulates_in_float32(formula: Compute) -> Compute:
    """`formula` with f16 array arguments computed in float32 and each float
    result rounded to f16 once. A product of two f16 values is exact in
    float32, so f16 matmul is float32 BLAS rounded once (what numpy's own
    float16 matmul does, about 100 times slower). Arguments of other dtypes
    pass through unchanged, and without an f16 argument the formula runs as
    written."""

    @functools.wraps(formula)
    def run(*args: Any, **kwargs: Any) -> Any:
        if not any(_is_f16(a) for a in (*args, *kwargs.values())):
            return formula(*args, **kwargs)

        def widen(a: Any) -> Any:
            return a.astype(np.float32) if _is_f16(a) else a

        out = formula(
            *(widen(a) for a in args), **{k: widen(v) for k, v in kwargs.items()}
        )
        if isinstance(out, tuple):
            return tuple(_round_to_f16(o) for o in out)
        return _round_to_f16(out)

    return run


Axes = int | tuple[int, ...] | None


@accumulates_in_float32
def float32_matmul(a: Array, b: Array, bias: Array | None = None) -> Array:
    """`matmul` by numpy: f16 widened to float32, BLAS, rounded once."""
    out = np.matmul(a, b)
    return out if bias is None else out + bias


def matmul(a: Array, b: Array, bias: Array | None = None) -> Array:
    """numpy matmul on the last two axes, batch axes broadcast, plus `bias`
    broadcast against the product; f16 accumulates in float32 and rounds
    once, after the bias. f16 products go through torch where it is
    installed (`half_matmul`: numpy's widening of a weight costs several
    times the product); the rest, and every product without torch, through
    numpy's float32 BLAS."""
    fast = half_matmul(a, b, bias)
    return float32_matmul(a, b, bias) if fast is None else fast


@accumulates_in_float32
def total(x: Array, axis: Axes = -1, keepdims: bool = False) -> Array:
    """Σ x along `axis`, in x's dtype (int32 sums wrap rather than widen)."""
    return np.sum(x, axis=axis, keepdims=keepdims, dtype=x.dtype)


@accumulates_in_float32
def mean(x: Array, axis: Axes = -1, keepdims: bool = False) -> Array:
    """Σ x / n along `axis`; on integers rounded toward zero."""
    if x.dtype.kind == "f":
        return np.mean(x, axis=axis, keepdims=keepdims)
    exact = np.mean(x, axis=axis, keepdims=keepdims, dtype=np.float64)
    return np.trunc(exact).astype(x.dtype)


@accumulates_in_float32
def product(x: Array, axis: Axes = -1, keepdims: bool = False) -> Array:
    return np.prod(x, axis=axis, keepdims=keepdims, dtype=x.dtype)


@accumulates_in_float32
def log_sum_exp(x: Array, axis: Axes = -1, keepdims: bool = False) -> Array:
    """m + log Σ exp(x − m), m the maximum (−inf rows stay −inf)."""
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


@accumulates_in_float32
def cumulative_sum(
    x: Array, axis: int, exclusive: bool = False, reverse: bool = False
) -> Array:
    """The running sum along `axis` in x's dtype (int32 sums wrap): with
    `reverse` from the end, with `exclusive` without the element itself (a
    zero first, the inclusive sums shifted by one)."""
    axis %= x.ndim
    if reverse:
        x = np.flip(x, axis)
    out = np.cumsum(x, axis=axis, dtype=x.dtype)
    if exclusive:
        before = [slice(None)] * x.ndim
        after = list(before)
        before[axis], after[axis] = slice(None, -1), slice(1, None)
        shifted = np.zeros_like(out)
        shifted[tuple(after)] = out[tuple(before)]
        out = shifted
    return np.flip(out, axis) if reverse else out


def top_k(x: Array, k: int, axis: int, largest: bool = True) -> tuple[Array, Array]:
    """The k largest values along `axis` in descending order (the k smallest
    in ascending order without `largest`) and their int32 indices; of equal
    values the first comes first (a stable sort, of −x for the largest:
    float64 holds every int32 and f16/f32 value exactly)."""
    key = -x.astype(np.float64) if largest else x
    order = np.argsort(key, axis=axis, kind="stable")
    indices = np.take(order, np.arange(k), axis=axis)
    return np.take_along_axis(x, indices, axis=axis), indices.astype(np.int32)


@accumulates_in_float32
def softmax(x: Array, axis: int = -1) -> Array:
    """exp(x − max) / Σ exp(x − max)."""
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


@accumulates_in_float32
def layer_norm(
    x: Array,
    axes: tuple[int, ...],
    eps: float,
    gamma: Array | None = None,
    beta: Array | None = None,
) -> Array:
    """(x − mean) / sqrt(var + eps) · gamma + beta over `axes`; gamma and
    beta broadcast against x."""
    centered = x - np.mean(x, axis=axes, keepdims=True)
    variance = np.mean(centered * centered, axis=axes, keepdims=True)
    out = centered / np.sqrt(variance + eps)
    if gamma is not None:
        out = out * gamma
    if beta is not None:
        out = out + beta
    return out

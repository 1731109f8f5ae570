"""Numerics shared by the rlx and mil interpreters: the checked `@impl`
decorator, the op-family registration helper, and the formulas both
dialects use (erf, sigmoid, GELU, integer division, casts, f16 matmul,
fp32-accumulated softmax)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.interpreter import Interpreter, PythonValues, impl
from xdsl.ir import Operation

from xdsl_ane.interpreter.core import check_value, numpy_dtype

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


SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
GELU_TANH_CUBIC = 0.044715

# numpy has no erf; math.erf runs in float64 and the value is rounded to the
# input's dtype before the rest of a formula runs in that dtype.
_erf64 = np.frompyfunc(math.erf, 1, 1)


def erf(x: Array) -> Array:
    # np.asarray: frompyfunc gives a Python float for a rank-0 array.
    return np.asarray(_erf64(x), dtype=np.float64).astype(x.dtype)


def normal_cdf(x: Array) -> Array:
    """Φ(x) = (1 + erf(x/√2)) / 2."""
    return 0.5 * (1 + erf(x * (1 / math.sqrt(2.0))))


def sigmoid(x: Array) -> Array:
    """1 / (1 + e^−x), written with e^−|x| so no exponential overflows."""
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def gelu_tanh(x: Array) -> Array:
    """x/2 · (1 + tanh(√(2/π) · (x + 0.044715 x³)))."""
    return 0.5 * x * (1 + np.tanh(SQRT_2_OVER_PI * (x + GELU_TANH_CUBIC * x**3)))


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
    if dtype.kind == "i" and x.dtype.kind == "f":
        # float64 holds every f16/f32 value and every int32 bound exactly.
        info = np.iinfo(dtype)
        truncated = np.clip(np.trunc(x.astype(np.float64)), info.min, info.max)
        return np.where(np.isnan(truncated), 0, truncated).astype(dtype)
    return x.astype(dtype)


def matmul(a: Array, b: Array) -> Array:
    """numpy matmul. numpy's own float16 matmul multiplies and accumulates in
    float32 and rounds once, without BLAS; float32 BLAS does the same
    arithmetic (a product of two f16 values is exact in f32) about 100 times
    faster, so f16 operands go through it."""
    if a.dtype == np.float16:
        return np.matmul(a.astype(np.float32), b.astype(np.float32)).astype(np.float16)
    return np.matmul(a, b)


def accumulate(x: Array, axis: int = -1, keepdims: bool = True) -> Array:
    """Σ x along `axis` accumulated in at least fp32: an fp16 sum of more than
    65504 terms near 1 (a vocabulary-sized softmax) would overflow."""
    return np.sum(
        x, axis=axis, keepdims=keepdims, dtype=np.promote_types(x.dtype, np.float32)
    )


def softmax(x: Array, axis: int = -1) -> Array:
    """exp(x − max) / Σ exp(x − max), the sum accumulated in fp32."""
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return (e / accumulate(e, axis)).astype(x.dtype)

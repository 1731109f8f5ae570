"""Every rlx op run through the interpreter against an independent reference.

References are numpy formulas written here from the math (in float64, on the
same inputs), not the interpreter's helpers. f32 results must match to
rtol 1e-5; f16 results must be float16 and match to about 1e-2.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import pytest
from xdsl.builder import ImplicitBuilder
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    Builtin,
    DenseIntOrFPElementsAttr,
    ModuleOp,
    TensorType,
    f16,
    f32,
    i1,
    i8,
    i32,
)
from xdsl.interpreter import Interpreter
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.parser import Parser

from xdsl_ane.dialects import rlx
from xdsl_ane.interpreter.core import InterpretationError
from xdsl_ane.interpreter.func import FuncFunctions
from xdsl_ane.interpreter.rlx import RlxFunctions
from xdsl_ane.weights.store import WeightStore

ELEMENT_TYPES: dict[np.dtype, Attribute] = {
    np.dtype(np.float32): f32,
    np.dtype(np.float16): f16,
    np.dtype(np.int32): i32,
    np.dtype(np.int8): i8,
    np.dtype(np.bool_): i1,
}
FLOATS = [np.float32, np.float16]


def tensor_type(x: np.ndarray) -> TensorType:
    return TensorType(ELEMENT_TYPES[x.dtype], list(x.shape))


def interpret(module: ModuleOp, inputs: Sequence[np.ndarray], weights=None):
    module.verify()
    interpreter = Interpreter(module)
    interpreter.register_implementations(FuncFunctions())
    interpreter.register_implementations(RlxFunctions(WeightStore(weights)))
    f = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    return interpreter.call_op(f, tuple(inputs))


def run(build: Callable, *inputs: np.ndarray, weights=None) -> np.ndarray:
    """Builds `func.func @kernel(inputs...)` whose body is `build(*args)` (one
    value or op), runs it and returns the single result."""
    arg_types = [tensor_type(x) for x in inputs]
    block = Block(arg_types=arg_types)
    with ImplicitBuilder(block) as args:
        result = SSAValue.get(build(*args))
        func.ReturnOp(result)
    f = func.FuncOp("kernel", (arg_types, [result.type]), Region(block))
    (value,) = interpret(ModuleOp([f]), inputs, weights)
    return value


def check(actual: np.ndarray, expected: np.ndarray, dtype, rtol=None, atol=None):
    """Exact dtype and shape, values close for the dtype's precision."""
    dtype = np.dtype(dtype)
    assert actual.dtype == dtype
    assert actual.shape == np.shape(expected)
    if dtype.kind != "f":
        np.testing.assert_array_equal(actual, expected)
        return
    if dtype == np.float16:
        rtol, atol = rtol or 1e-2, atol or 1e-2
    else:
        rtol, atol = rtol or 1e-5, atol or 1e-6
    np.testing.assert_allclose(actual.astype(np.float64), expected, rtol, atol)


def normal(rng, shape, dtype=np.float32, scale=1.0) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(dtype)


def f64(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float64)


def test_every_rlx_op_has_an_implementation():
    from xdsl_ane.interpreter.state import StateFunctions

    implemented = {op_type for op_type, _ in RlxFunctions._impls()}
    implemented |= {op_type for op_type, _ in StateFunctions._impls()}
    missing = [op.name for op in rlx.RLX.operations if op not in implemented]
    assert not missing


# --- elementwise -------------------------------------------------------------

erf = np.vectorize(math.erf)


def positive(rng, shape):
    return rng.uniform(0.1, 4.0, shape)


def away_from_zero(rng, shape):
    return rng.choice([-1.0, 1.0], shape) * rng.uniform(0.25, 3.0, shape)


def wide(rng, shape):
    return rng.standard_normal(shape) * 2


UNARY_CASES = {
    "relu": (rlx.ReluOp, lambda x: np.where(x > 0, x, 0.0), wide),
    "gelu": (rlx.GeluOp, lambda x: x * 0.5 * (1 + erf(x / math.sqrt(2))), wide),
    "gelu_tanh": (
        rlx.GeluTanhOp,
        lambda x: (
            0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
        ),
        wide,
    ),
    "silu": (rlx.SiluOp, lambda x: x / (1 + np.exp(-x)), wide),
    "sigmoid": (rlx.SigmoidOp, lambda x: 1 / (1 + np.exp(-x)), wide),
    "tanh": (rlx.TanhOp, lambda x: (np.exp(2 * x) - 1) / (np.exp(2 * x) + 1), wide),
    "exp": (rlx.ExpOp, np.exp, wide),
    "log": (rlx.LogOp, np.log, positive),
    "sqrt": (rlx.SqrtOp, lambda x: x**0.5, positive),
    "rsqrt": (rlx.RsqrtOp, lambda x: x**-0.5, positive),
    "neg": (rlx.NegOp, lambda x: -x, wide),
    "abs": (rlx.AbsOp, lambda x: np.where(x < 0, -x, x), wide),
    "sin": (rlx.SinOp, np.sin, wide),
    "cos": (rlx.CosOp, np.cos, wide),
    "reciprocal": (rlx.ReciprocalOp, lambda x: 1 / x, away_from_zero),
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", UNARY_CASES)
def test_unary(name, dtype, rng):
    op_type, reference, sample = UNARY_CASES[name]
    x = sample(rng, (3, 17)).astype(dtype)
    check(run(op_type, x), reference(f64(x)), dtype)


@pytest.mark.parametrize("op_type", [rlx.SigmoidOp, rlx.SiluOp, rlx.GeluTanhOp])
@pytest.mark.parametrize("dtype", FLOATS)
def test_saturating_activations_stay_finite(op_type, dtype):
    x = np.array([-1e4, -100.0, -20.0, 0.0, 20.0, 100.0, 1e4], dtype)
    y = run(op_type, x)
    assert y.dtype == dtype and np.all(np.isfinite(y))
    assert y[3] == (0.5 if op_type is rlx.SigmoidOp else 0.0)


@pytest.mark.parametrize("name", ["tanh", "exp", "log", "sin", "cos"])
def test_f16_transcendentals_are_rounded_float64_values(name):
    """The f16 result is the float64 value rounded to f16, to within one
    f16 step (double rounding through float32), on every CPU: numpy's own
    float16 loops are off by up to 2e-3 on AVX512-FP16 machines, where
    tanh(30) came out 0.9985."""
    op_type, reference, _ = UNARY_CASES[name]
    x = np.linspace(0.01 if name == "log" else -30, 30, 4001).astype(np.float16)
    y = run(op_type, x).astype(np.float64)
    with np.errstate(all="ignore"):
        exact = reference(f64(x))
    rounded = exact.astype(np.float16).astype(np.float64)
    step = np.spacing(np.abs(rounded).astype(np.float16)).astype(np.float64)
    finite = np.isfinite(rounded)
    assert np.array_equal(np.isfinite(y), finite)
    assert np.all(np.abs(y[finite] - rounded[finite]) <= step[finite])
    if name == "tanh":
        assert y[-1] == 1.0 and y[0] == -1.0


BINARY_CASES = {
    "add": (rlx.AddOp, lambda a, b: a + b),
    "sub": (rlx.SubOp, lambda a, b: a - b),
    "mul": (rlx.MulOp, lambda a, b: a * b),
    "div": (rlx.DivOp, lambda a, b: a / b),
    "max": (rlx.MaxOp, lambda a, b: np.where(a > b, a, b)),
    "min": (rlx.MinOp, lambda a, b: np.where(a < b, a, b)),
    "pow": (rlx.PowOp, lambda a, b: np.exp(b * np.log(a))),
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", BINARY_CASES)
def test_binary_float_broadcasts(name, dtype, rng):
    op_type, reference = BINARY_CASES[name]
    a = rng.uniform(0.5, 2.0, (2, 3, 4)).astype(dtype)
    b = away_from_zero(rng, (3, 1)).astype(dtype)
    check(run(op_type, a, b), reference(f64(a), f64(b)), dtype)


INTEGER_REFERENCES = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    # C division: the quotient rounded toward zero.
    "div": lambda a, b: np.array(
        [math.trunc(x / y) for x, y in zip(a.ravel(), b.ravel())]
    ).reshape(a.shape),
    "max": np.maximum,
    "min": np.minimum,
}


@pytest.mark.parametrize("name", INTEGER_REFERENCES)
def test_binary_integer(name, rng):
    a = rng.integers(-50, 50, (4, 5)).astype(np.int32)
    b = rng.choice([-7, -3, -1, 1, 2, 5], (4, 5)).astype(np.int32)
    check(run(BINARY_CASES[name][0], a, b), INTEGER_REFERENCES[name](a, b), np.int32)


def test_integer_arithmetic_wraps_and_division_by_zero_raises():
    a = np.array([100, -100, 7], np.int8)
    check(run(rlx.AddOp, a, a), np.array([-56, 56, 14]), np.int8)
    with pytest.raises(InterpretationError, match="rlx.div: integer division by zero"):
        run(rlx.DivOp, a, np.array([1, 0, 1], np.int8))


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
@pytest.mark.parametrize("predicate", ["eq", "ne", "lt", "le", "gt", "ge"])
def test_compare(predicate, dtype, rng):
    # Small integers so that equal pairs occur.
    a = rng.integers(0, 3, (3, 4)).astype(dtype)
    b = rng.integers(0, 3, (4,)).astype(dtype)
    expected = {
        "eq": lambda: a == b,
        "ne": lambda: a != b,
        "lt": lambda: a < b,
        "le": lambda: a <= b,
        "gt": lambda: a > b,
        "ge": lambda: a >= b,
    }[predicate]()
    check(run(lambda x, y: rlx.CompareOp(x, y, predicate), a, b), expected, np.bool_)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32])
def test_where_broadcasts_all_three(dtype, rng):
    cond = rng.random((2, 1, 4)) < 0.5
    a = normal(rng, (3, 4), dtype=np.float32, scale=10).astype(dtype)
    b = normal(rng, (2, 3, 1), dtype=np.float32, scale=10).astype(dtype)
    expected = np.empty((2, 3, 4))
    for i, j, k in np.ndindex(expected.shape):
        expected[i, j, k] = a[j, k] if cond[i, 0, k] else b[i, j, 0]
    check(run(rlx.WhereOp, cond, a, b), expected, dtype)


INF, NAN = math.inf, math.nan
CAST_CASES = [
    # float -> int: toward zero, saturating, NaN -> 0
    (
        np.float32,
        i32,
        [1.7, -1.7, 2.5, -0.5, 3e9, -3e9, NAN, INF, -INF],
        [1, -1, 2, 0, 2**31 - 1, -(2**31), 0, 2**31 - 1, -(2**31)],
    ),
    (np.float16, i8, [300.0, -300.0, 127.9, -128.9, 5.5], [127, -128, 127, -128, 5]),
    # int -> narrower int wraps
    (np.int32, i8, [200, -129, 5, 256], [-56, 127, 5, 0]),
    (np.int8, i32, [-128, 127], [-128, 127]),
    (np.float32, i1, [0.0, -0.0, 2.0, NAN, -1e-30], [False, False, True, True, True]),
    (np.bool_, f32, [True, False], [1.0, 0.0]),
    (np.bool_, i32, [True, False], [1, 0]),
    (np.int32, f16, [3, -2049, 70000], [3.0, -2048.0, INF]),
    (np.float32, f16, [1 / 3, 70000.0, 1e-8], [np.float16(1 / 3), INF, 0.0]),
    (np.float16, f32, [0.1, -2.5], [np.float16(0.1), -2.5]),
]


@pytest.mark.parametrize("source, target, values, expected", CAST_CASES)
def test_cast(source, target, values, expected):
    x = np.array(values, dtype=source)
    y = run(lambda v: rlx.CastOp(v, target), x)
    dtype = {
        f32: np.float32,
        f16: np.float16,
        i32: np.int32,
        i8: np.int8,
        i1: np.bool_,
    }[target]
    assert y.dtype == dtype
    np.testing.assert_array_equal(y, np.array(expected, dtype=dtype))


# --- linear algebra and shape ------------------------------------------------


def reference_matmul(a, b):
    """Σ_k a[..., i, k] · b[..., k, j], batch axes broadcast."""
    return np.einsum("...ik,...kj->...ij", f64(a), f64(b))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("transpose_lhs", [False, True])
@pytest.mark.parametrize("transpose_rhs", [False, True])
def test_matmul(transpose_lhs, transpose_rhs, dtype, rng):
    a = normal(rng, (2, 1, 3, 4), dtype)
    b = normal(rng, (5, 4, 6), dtype)
    lhs = np.ascontiguousarray(np.swapaxes(a, -1, -2)) if transpose_lhs else a
    rhs = np.ascontiguousarray(np.swapaxes(b, -1, -2)) if transpose_rhs else b
    y = run(lambda x, w: rlx.MatmulOp(x, w, transpose_lhs, transpose_rhs), lhs, rhs)
    check(y, reference_matmul(a, b), dtype)


def test_matmul_integer(rng):
    a = rng.integers(-5, 5, (3, 4)).astype(np.int32)
    b = rng.integers(-5, 5, (4, 2)).astype(np.int32)
    check(run(rlx.MatmulOp, a, b), reference_matmul(a, b).astype(np.int32), np.int32)


SHAPE_DTYPES = [np.float32, np.float16, np.int32]


@pytest.mark.parametrize("dtype", SHAPE_DTYPES)
def test_reshape_is_row_major(dtype):
    x = np.arange(24).reshape(2, 3, 4).astype(dtype)
    y = run(lambda v: rlx.ReshapeOp(v, [4, 6]), x)
    check(
        y, np.array([[x.ravel()[6 * i + j] for j in range(6)] for i in range(4)]), dtype
    )


@pytest.mark.parametrize("dtype", SHAPE_DTYPES)
def test_transpose(dtype):
    x = np.arange(24).reshape(2, 3, 4).astype(dtype)
    y = run(lambda v: rlx.TransposeOp(v, [2, 0, 1]), x)
    expected = np.empty((4, 2, 3))
    for i, j, k in np.ndindex(2, 3, 4):
        expected[k, i, j] = x[i, j, k]
    check(y, expected, dtype)


@pytest.mark.parametrize("axis", [1, -2])
def test_narrow(axis):
    x = np.arange(2 * 6 * 3).reshape(2, 6, 3).astype(np.float16)
    check(run(lambda v: rlx.NarrowOp(v, axis, 2, 3), x), x[:, 2:5, :], np.float16)


@pytest.mark.parametrize("dtype", SHAPE_DTYPES)
def test_concat(dtype, rng):
    parts = [normal(rng, (2, n, 3), np.float32, 5).astype(dtype) for n in (1, 3, 2)]
    y = run(lambda *vs: rlx.ConcatOp(vs, 1), *parts)
    expected = np.zeros((2, 6, 3))
    expected[:, 0:1], expected[:, 1:4], expected[:, 4:6] = parts
    check(y, expected, dtype)


def test_expand(rng):
    x = normal(rng, (3, 1))
    expected = np.empty((2, 3, 4))
    expected[...] = f64(x)
    check(run(lambda v: rlx.ExpandOp(v, [2, 3, 4]), x), expected, np.float32)


@pytest.mark.parametrize("dtype", FLOATS)
def test_gather_embedding_rows(dtype, rng):
    table = normal(rng, (10, 4), dtype)
    ids = np.array([[3, 0, 9], [3, 3, 1]], np.int32)
    expected = np.stack([np.stack([table[i] for i in row]) for row in ids])
    check(run(rlx.GatherOp, table, ids), f64(expected), dtype)


def test_gather_on_inner_axis(rng):
    table = normal(rng, (2, 5, 3))
    ids = np.array([4, 0], np.int32)
    y = run(lambda t, i: rlx.GatherOp(t, i, axis=1), table, ids)
    check(y, f64(np.stack([table[:, 4], table[:, 0]], axis=1)), np.float32)


@pytest.mark.parametrize("bad", [-1, 10])
def test_gather_index_out_of_range_raises(bad, rng):
    table = normal(rng, (10, 4))
    with pytest.raises(
        InterpretationError, match=rf"rlx.gather: index {bad} is outside"
    ):
        run(rlx.GatherOp, table, np.array([1, bad], np.int32))


# --- reductions and normalization -------------------------------------------

REDUCE_CASES = {
    "sum": (rlx.ReduceSumOp, np.add.reduce),
    "mean": (
        rlx.ReduceMeanOp,
        lambda x, axis, keepdims: (
            np.add.reduce(x, axis, keepdims=keepdims)
            / np.prod([x.shape[a] for a in axis])
        ),
    ),
    "max": (rlx.ReduceMaxOp, np.maximum.reduce),
    "min": (rlx.ReduceMinOp, np.minimum.reduce),
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("keep_dims", [False, True])
@pytest.mark.parametrize("axes", [(0,), (-1,), (0, 2)])
@pytest.mark.parametrize("name", REDUCE_CASES)
def test_reduce(name, axes, keep_dims, dtype, rng):
    op_type, reference = REDUCE_CASES[name]
    x = normal(rng, (3, 4, 5), dtype)
    y = run(lambda v: op_type(v, axes, keep_dims), x)
    normalized = tuple(a % 3 for a in axes)
    check(y, reference(f64(x), axis=normalized, keepdims=keep_dims), dtype)


def test_reduce_integer_sum_and_truncating_mean():
    x = np.array([[-3, 0], [5, 2], [7, -8]], np.int32)
    check(run(lambda v: rlx.ReduceSumOp(v, [1]), x), np.array([-3, 7, -1]), np.int32)
    # means -1.5, 3.5, -0.5 round toward zero
    check(run(lambda v: rlx.ReduceMeanOp(v, [1]), x), np.array([-1, 3, 0]), np.int32)


def reference_softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_softmax(axis, dtype, rng):
    x = normal(rng, (4, 6, 5), dtype, 3)
    y = run(lambda v: rlx.SoftmaxOp(v, axis), x)
    check(y, reference_softmax(f64(x), -1 if axis is None else axis), dtype)


def test_softmax_is_stable_for_large_logits():
    x = np.array([[1000.0, 999.0, -1000.0], [-1e30, -1e30, -1e30]], np.float32)
    expected = [[1 / (1 + math.exp(-1)), 1 / (1 + math.e), 0.0], [1 / 3] * 3]
    check(run(rlx.SoftmaxOp, x), np.array(expected), np.float32)


@pytest.mark.parametrize("dtype", FLOATS)
def test_rms_norm(dtype, rng):
    x, gamma = normal(rng, (2, 3, 8), dtype), normal(rng, (8,), dtype)
    eps = 1e-5
    y = run(lambda v, g: rlx.RmsNormOp(v, g, eps), x, gamma)
    x64 = f64(x)
    rms = np.sqrt((x64**2).sum(-1, keepdims=True) / 8 + eps)
    check(y, x64 / rms * f64(gamma), dtype)


@pytest.mark.parametrize("dtype", FLOATS)
def test_layer_norm(dtype, rng):
    x = normal(rng, (2, 3, 8), dtype, 2) + dtype(1.5)
    gamma, beta = normal(rng, (8,), dtype), normal(rng, (8,), dtype)
    eps = 1e-5
    y = run(lambda v, g, b: rlx.LayerNormOp(v, g, b, eps), x, gamma, beta)
    x64 = f64(x)
    mean = x64.sum(-1, keepdims=True) / 8
    variance = ((x64 - mean) ** 2).sum(-1, keepdims=True) / 8
    check(y, (x64 - mean) / np.sqrt(variance + eps) * f64(gamma) + f64(beta), dtype)


def f16_ulps(actual: np.ndarray, expected: np.ndarray) -> float:
    """The largest error of `actual` in units of the f16 spacing at the
    float64 `expected` (0.5 for a correctly rounded result)."""
    spacing = np.spacing(np.abs(expected).astype(np.float16)).astype(np.float64)
    return float(np.max(np.abs(actual.astype(np.float64) - expected) / spacing))


def long_axis_input(axis: int) -> np.ndarray:
    """A rank-4 f16 tensor in [0, 1) with 4096 entries along `axis` and 2
    along the others."""
    shape = [2, 2, 2, 2]
    shape[axis] = 4096
    return np.random.default_rng(axis).uniform(0, 1, shape).astype(np.float16)


@pytest.mark.parametrize("axis", [0, 1, 2, 3])
@pytest.mark.parametrize("name", ["sum", "mean", "softmax"])
def test_f16_reductions_accumulate_in_fp32_on_every_axis(name, axis):
    """An f16 reduction is the float64 value rounded to f16 once (within one
    f16 step) along every axis, not only the contiguous one."""
    x = long_axis_input(axis)
    if name == "softmax":
        y = run(lambda v: rlx.SoftmaxOp(v, axis), x)
        expected = reference_softmax(f64(x), axis)
    else:
        op_type, reference = REDUCE_CASES[name]
        y = run(lambda v: op_type(v, [axis]), x)
        expected = reference(f64(x), axis=(axis,), keepdims=False)
    assert y.dtype == np.float16
    assert f16_ulps(y, expected) <= 1


def test_f16_rms_norm_gamma_gradient_sums_rows_in_fp32():
    """d_γ sums 4096 rows (a non-contiguous axis) of d_y · x · r."""
    rng = np.random.default_rng(7)
    x = rng.uniform(0.5, 1, (4096, 8)).astype(np.float16)
    d_out = rng.uniform(0, 1, (4096, 8)).astype(np.float16)
    y = run(lambda v, d: rlx.RmsNormBackwardGammaOp(v, d, 1e-5), x, d_out)
    x64 = f64(x)
    normalized = x64 / np.sqrt((x64**2).mean(-1, keepdims=True) + 1e-5)
    assert y.dtype == np.float16
    assert f16_ulps(y, (f64(d_out) * normalized).sum(0)) <= 1


def reference_rope(x, cos, sin, style):
    """Rotation as complex multiplication: pair (a, b) is a + ib, times e^{iθ}."""
    x = f64(x)
    half = x.shape[-1] // 2
    if style == "half":
        z = x[..., :half] + 1j * x[..., half:]
    else:
        z = x[..., 0::2] + 1j * x[..., 1::2]
    z = z * (f64(cos) + 1j * f64(sin))
    out = np.empty_like(x)
    if style == "half":
        out[..., :half], out[..., half:] = z.real, z.imag
    else:
        out[..., 0::2], out[..., 1::2] = z.real, z.imag
    return out


def rope_tables(s, d, dtype):
    """Llama's inverse-frequency tables, [S, D/2]."""
    theta = np.arange(s)[:, None] * 10000.0 ** (-np.arange(d // 2) * 2 / d)
    return np.cos(theta).astype(dtype), np.sin(theta).astype(dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("style", ["half", "interleaved"])
def test_rope(style, dtype, rng):
    x = normal(rng, (2, 3, 5, 8), dtype)
    cos, sin = rope_tables(5, 8, dtype)
    y = run(lambda v, c, s: rlx.RopeOp(v, c, s, style), x, cos, sin)
    check(y, reference_rope(x, cos, sin, style), dtype)


def test_rope_half_pairs_i_with_i_plus_half():
    """One pair, hand-computed: rotating (x_1, x_3) of D = 4 by 90° at s = 0."""
    x = np.array([0.0, 1.0, 0.0, 2.0], np.float32).reshape(1, 1, 1, 4)
    cos = np.array([[1.0, 0.0]], np.float32)
    sin = np.array([[0.0, 1.0]], np.float32)
    y = run(lambda v, c, s: rlx.RopeOp(v, c, s, "half"), x, cos, sin)
    check(y.ravel(), np.array([0.0, -2.0, 0.0, 1.0]), np.float32)
    y = run(lambda v, c, s: rlx.RopeOp(v, c, s, "interleaved"), x, cos, sin)
    check(y.ravel(), np.array([0.0, 1.0, -2.0, 0.0]), np.float32)


# --- sources -----------------------------------------------------------------


@pytest.mark.parametrize(
    "values, element_type, dtype",
    [
        ([[1.5, -2.0], [0.25, 3.0]], f32, np.float32),
        ([[1.5, -2.0], [0.25, 3.0]], f16, np.float16),
        ([[1, -2], [3, 4]], i32, np.int32),
    ],
)
def test_constant(values, element_type, dtype):
    attr = DenseIntOrFPElementsAttr.from_list(
        TensorType(element_type, [2, 2]), [v for row in values for v in row]
    )
    x = np.zeros((2, 2), dtype)
    y = run(lambda v: rlx.AddOp(v, rlx.ConstantOp(attr).result), x)
    check(y, np.array(values, dtype=np.float64), dtype)


def test_param_reads_the_weight_store(rng):
    w = rng.standard_normal((4, 3))  # float64 in the file, f32 in the IR
    x = normal(rng, (2, 4))
    y = run(
        lambda v: rlx.MatmulOp(v, rlx.ParamOp("w", TensorType(f32, [4, 3])).result),
        x,
        weights={"w": w},
    )
    check(y, f64(x) @ w.astype(np.float32), np.float32)
    with pytest.raises(InterpretationError, match="rlx.param: weight 'w' is not"):
        run(lambda v: rlx.AddOp(v, rlx.ParamOp("w", TensorType(f32, [2, 4]))), x)


# --- loss and quantization (forward values; gradients in test_rlx_gradients) --


@pytest.mark.parametrize("label_dtype", [np.int32, np.float32])
def test_softmax_cross_entropy_values(label_dtype, rng):
    logits = normal(rng, (4, 7), scale=3)
    labels = np.array([0, 6, 3, 3], label_dtype)
    y = run(rlx.SoftmaxCrossEntropyOp, logits, labels)
    x = f64(logits)
    expected = [
        -math.log(math.exp(x[n, int(labels[n])]) / sum(math.exp(v) for v in x[n]))
        for n in range(4)
    ]
    check(y, np.array(expected), np.float32)


def test_quantize_rounds_half_to_even_and_clamps():
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 0.26, 1000.0, -1000.0, NAN], np.float32)
    y = run(lambda v: rlx.QuantizeOp(v, 0.5, 3), x)
    # x / 0.5 = 1, 3, 5, -1, -3, 0.52, 2000, -2000 -> + 3 and clamp
    check(y, np.array([4, 6, 8, 2, 0, 4, 127, -128, 3]), np.int8)


@pytest.mark.parametrize("element_type, dtype", [(f32, np.float32), (f16, np.float16)])
def test_dequantize(element_type, dtype):
    q = np.array([-128, -1, 0, 5, 127], np.int8)
    y = run(lambda v: rlx.DequantizeOp(v, 0.25, -3, element_type), q)
    check(y, (q.astype(np.float64) + 3) * 0.25, dtype)


# --- text IR -----------------------------------------------------------------


def parse(text: str) -> ModuleOp:
    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(func.Func)
    ctx.load_dialect(rlx.RLX)
    return Parser(ctx, text).parse_module()


def test_custom_syntax_kernel_from_text(rng):
    module = parse(
        """
        func.func @mlp(%x: tensor<2x4xf32>, %w: tensor<4x3xf32>) -> tensor<2x1xf32> {
          %h = rlx.matmul %x, %w : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
          %a = rlx.gelu_tanh %h : tensor<2x3xf32>
          %m = rlx.reduce_max %a {axes = array<i64: 1>, keep_dims = true} : (tensor<2x3xf32>) -> tensor<2x1xf32>
          func.return %m : tensor<2x1xf32>
        }
        """
    )
    x, w = normal(rng, (2, 4)), normal(rng, (4, 3))
    h = f64(x) @ f64(w)
    a = 0.5 * h * (1 + np.tanh(math.sqrt(2 / math.pi) * (h + 0.044715 * h**3)))
    (y,) = interpret(module, [x, w])
    check(y, a.max(axis=1, keepdims=True), np.float32)


def test_generic_syntax_from_text():
    module = parse(
        """
        "func.func"() <{sym_name = "k", function_type = (tensor<3xf16>, tensor<3xf16>) -> tensor<3xi1>}> ({
        ^bb0(%a: tensor<3xf16>, %b: tensor<3xf16>):
          %c = "rlx.compare"(%a, %b) <{predicate = "le"}> : (tensor<3xf16>, tensor<3xf16>) -> tensor<3xi1>
          "func.return"(%c) : (tensor<3xi1>) -> ()
        }) : () -> ()
        """
    )
    a = np.array([1, 2, 3], np.float16)
    b = np.array([2, 2, 2], np.float16)
    (y,) = interpret(module, [a, b])
    check(y, np.array([True, True, False]), np.bool_)

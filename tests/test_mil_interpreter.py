"""Every mil op run through the interpreter against (a) a numpy formula
written here from the math, in float64 on the same inputs, and (b) where it
exists and is right, coremltools' own `value_inference` of the op built with
`mil.Builder` on const inputs in an iOS18 function.

f32 results must be float32 and match to rtol 1e-5; f16 results must be
float16 and match to about 1e-2.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from mil_op_check import (
    RNG,
    check,
    const_op,
    coreml,
    randn,
    run,
    tensor_type,
)
from xdsl.dialects.builtin import (
    TensorType,
    f16,
    i1,
)

from xdsl_ane.dialects import mil
from xdsl_ane.interpreter.core import InterpretationError
from xdsl_ane.interpreter.mil import MilFunctions

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import coremltools as ct
    from coremltools.converters.mil import Builder as mb
    from coremltools.converters.mil.mil import Function

FLOATS = [np.float32, np.float16]


def f64(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float64)


erf64 = np.vectorize(math.erf)


def sigmoid64(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-f64(x)))


def test_every_mil_op_has_an_implementation():
    """The interpreter is the one semantics of mil: every op of the dialect
    has an implementation among those `run_function` registers."""
    from xdsl_ane.interpreter.state import StateFunctions

    implemented = {op_type for op_type, _ in MilFunctions._impls()}
    implemented |= {op_type for op_type, _ in StateFunctions._impls()}
    missing = [op.name for op in mil.MIL.operations if op not in implemented]
    assert not missing
    assert set(mil.MIL.operations) == set(mil.MIL_OPS)


# --- const ---------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.int8, np.bool_])
def test_const_value(dtype):
    x = (RNG.standard_normal((2, 3)) * 4).astype(dtype)
    check(run(lambda: const_op(x)), x, dtype)


def test_const_weight():
    w = randn(4, 3)
    out = run(lambda: mil.ConstOp.from_weight("w", tensor_type(w)), weights={"w": w})
    check(out, w, np.float32)
    # an f32 weights file feeds an f16 const
    t16 = TensorType(f16, [4, 3])
    out16 = run(lambda: mil.ConstOp.from_weight("w", t16), weights={"w": w})
    check(out16, w, np.float16)
    with pytest.raises(InterpretationError, match="weight 'missing'"):
        run(lambda: mil.ConstOp.from_weight("missing", t16), weights={})


# --- elementwise unary ------------------------------------------------------------

# op, numpy reference (float64), coremltools builder or None, input domain
UNARY = [
    (mil.ReluOp, lambda x: np.maximum(x, 0), mb.relu, None),
    (mil.SigmoidOp, sigmoid64, mb.sigmoid, None),
    (mil.TanhOp, np.tanh, mb.tanh, None),
    (mil.ExpOp, np.exp, mb.exp, None),
    (mil.SqrtOp, np.sqrt, mb.sqrt, "positive"),
    (mil.SinOp, np.sin, mb.sin, None),
    (mil.CosOp, np.cos, mb.cos, None),
    (mil.SiluOp, lambda x: x * sigmoid64(x), None, None),  # no value inference
    (mil.RoundOp, np.round, mb.round, None),
    (mil.FloorOp, np.floor, mb.floor, None),
    (mil.CeilOp, np.ceil, mb.ceil, None),
    (mil.ErfOp, erf64, mb.erf, None),
    (mil.AbsOp, np.abs, mb.abs, None),
    (mil.SquareOp, np.square, mb.square, None),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(("op", "reference", "theirs", "domain"), UNARY)
def test_unary(op, reference, theirs, domain, dtype):
    x = randn(3, 8, dtype=dtype) * 2
    if domain == "positive":
        x = np.abs(x) + dtype(0.1)
    out = run(op, x)
    check(out, reference(f64(x)), dtype)
    if theirs is not None:
        check(out, coreml(lambda v: theirs(x=v), x), dtype)


def test_round_halves_to_even():
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5], np.float32)
    check(run(mil.RoundOp, x), [-2, -2, 0, 0, 2, 2], np.float32)


@pytest.mark.parametrize(
    ("op", "reference", "theirs"),
    [(mil.AbsOp, np.abs, mb.abs), (mil.SquareOp, np.square, mb.square)],
)
def test_unary_int32(op, reference, theirs):
    x = np.array([-3, 0, 7, -12], np.int32)
    out = run(op, x)
    check(out, reference(x), np.int32)
    check(out, coreml(lambda v: theirs(x=v), x), np.int32)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(
    ("op", "reference", "theirs", "default"),
    [
        (mil.LogOp, np.log, mb.log, 1e-45),
        (mil.RsqrtOp, lambda v: 1 / np.sqrt(v), mb.rsqrt, 1e-12),
        (mil.InverseOp, lambda v: 1 / v, mb.inverse, 1e-4),
    ],
)
def test_unary_with_epsilon(op, reference, theirs, default, dtype):
    x = np.abs(randn(2, 5, dtype=dtype)) + dtype(0.05)
    # the default epsilon, rounded to the input dtype as MIL does
    check(run(op, x), reference(f64(x) + float(dtype(default))), dtype)
    check(run(op, x), coreml(lambda v: theirs(x=v), x), dtype)
    eps = 0.25
    out = run(lambda v: op(v, epsilon=eps), x)
    check(out, reference(f64(x) + eps), dtype)
    check(out, coreml(lambda v: theirs(x=v, epsilon=dtype(eps)), x), dtype)


GELU = {
    "EXACT": lambda x: 0.5 * x * (1 + erf64(x / math.sqrt(2))),
    "TANH_APPROXIMATION": lambda x: (
        0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    ),
    "SIGMOID_APPROXIMATION": lambda x: x * sigmoid64(1.702 * x),
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("mode", GELU)
def test_gelu(mode, dtype):
    x = randn(4, 6, dtype=dtype) * 2
    out = run(lambda v: mil.GeluOp(v, mode), x)
    check(out, GELU[mode](f64(x)), dtype)
    check(out, coreml(lambda v: mb.gelu(x=v, mode=mode), x), dtype)
    check(run(mil.GeluOp, x), GELU["EXACT"](f64(x)), dtype)


@pytest.mark.parametrize("dtype", FLOATS)
def test_clip(dtype):
    x = randn(4, 6, dtype=dtype) * 3
    out = run(lambda v: mil.ClipOp(v, -1.0, 2.5), x)
    check(out, np.clip(f64(x), -1.0, 2.5), dtype)
    check(
        out, coreml(lambda v: mb.clip(x=v, alpha=dtype(-1), beta=dtype(2.5)), x), dtype
    )


# --- elementwise binary -----------------------------------------------------------

BINARY = [
    (mil.AddOp, np.add, mb.add),
    (mil.SubOp, np.subtract, mb.sub),
    (mil.MulOp, np.multiply, mb.mul),
    (mil.RealDivOp, np.divide, mb.real_div),
    (mil.MaximumOp, np.maximum, mb.maximum),
    (mil.MinimumOp, np.minimum, mb.minimum),
    (mil.PowOp, np.power, mb.pow),
]
COMPARISONS = [
    (mil.EqualOp, np.equal, mb.equal),
    (mil.NotEqualOp, np.not_equal, mb.not_equal),
    (mil.LessOp, np.less, mb.less),
    (mil.LessEqualOp, np.less_equal, mb.less_equal),
    (mil.GreaterOp, np.greater, mb.greater),
    (mil.GreaterEqualOp, np.greater_equal, mb.greater_equal),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(("op", "reference", "theirs"), BINARY)
def test_binary(op, reference, theirs, dtype):
    x = randn(3, 1, 4, dtype=dtype)
    y = randn(2, 1, dtype=dtype)
    if op is mil.PowOp:
        x = np.abs(x) + dtype(0.5)
    if op is mil.RealDivOp:
        y = y + np.sign(y) * dtype(0.5)
    out = run(op, x, y)
    check(out, reference(f64(x), f64(y)), dtype)
    check(out, coreml(lambda a, b: theirs(x=a, y=b), x, y), dtype)


def test_binary_int32():
    x = np.array([[7, -7, 9, 0]], np.int32)
    y = np.array([[2], [-3]], np.int32)
    check(run(mil.AddOp, x, y), x + y, np.int32)
    # integer real_div rounds toward zero, like coremltools' value inference
    quotient = run(mil.RealDivOp, x, y)
    check(quotient, np.trunc(x / y).astype(np.int32), np.int32)
    check(quotient, coreml(lambda a, b: mb.real_div(x=a, y=b), x, y), np.int32)
    check(run(mil.PowOp, x, np.abs(y)), x ** np.abs(y), np.int32)
    with pytest.raises(
        InterpretationError, match="mil.real_div: integer division by zero"
    ):
        run(mil.RealDivOp, x, np.zeros((1, 1), np.int32))


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32])
@pytest.mark.parametrize(("op", "reference", "theirs"), COMPARISONS)
def test_comparisons(op, reference, theirs, dtype):
    x = np.array([[1, 2, 3, 4]], dtype)
    y = np.array([[2], [3]], dtype)
    out = run(op, x, y)
    check(out, reference(x, y), np.bool_)
    check(out, coreml(lambda a, b: theirs(x=a, y=b), x, y), np.bool_)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.bool_])
def test_select(dtype):
    cond = np.array([True, False, True, False])
    a = (randn(2, 4) * 4).astype(dtype)
    b = (randn(4) * 4).astype(dtype)
    out = run(mil.SelectOp, cond, a, b)
    check(out, np.where(cond, a, b), dtype)
    check(out, coreml(lambda c, p, q: mb.select(cond=c, a=p, b=q), cond, a, b), dtype)


@pytest.mark.parametrize(
    ("source", "dtype"),
    [
        (np.float32, "fp16"),
        (np.float16, "fp32"),
        (np.float32, "int32"),
        (np.int32, "int8"),
        (np.float32, "int16"),
        (np.int32, "int16"),
        (np.int8, "fp16"),
        (np.float16, "bool"),
        (np.bool_, "fp32"),
    ],
)
def test_cast(source, dtype):
    x = np.array([-3.7, -0.5, 0.0, 0.4, 2.5, 100.9], source)
    target = {"fp16": np.float16, "fp32": np.float32, "int32": np.int32}.get(dtype)
    target = target or {"int8": np.int8, "int16": np.int16, "bool": np.bool_}[dtype]
    out = run(lambda v: mil.CastOp(v, dtype), x)
    if target is np.bool_:
        expected = x != 0
    elif np.dtype(target).kind == "f":
        expected = x.astype(target)
    else:
        expected = np.trunc(f64(x)).astype(target)
    check(out, expected, target)
    check(out, coreml(lambda v: mb.cast(x=v, dtype=dtype), x), target)


def test_cast_saturates_and_maps_nan_to_zero():
    x = np.array([1e10, -1e10, np.nan], np.float32)
    check(run(lambda v: mil.CastOp(v, "int32"), x), [2**31 - 1, -(2**31), 0], np.int32)
    check(run(lambda v: mil.CastOp(v, "int16"), x), [2**15 - 1, -(2**15), 0], np.int16)
    check(run(lambda v: mil.CastOp(v, "uint16"), x), [2**16 - 1, 0, 0], np.uint16)


# --- linear algebra -------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(
    ("x_shape", "y_shape", "transpose_x", "transpose_y"),
    [
        ((3, 4), (4, 5), False, False),
        ((2, 3, 4), (5, 4), False, True),
        ((6, 1, 4, 3), (2, 5, 4), True, True),
        ((4,), (4, 7), False, False),
    ],
)
def test_matmul(x_shape, y_shape, transpose_x, transpose_y, dtype):
    x, y = randn(*x_shape, dtype=dtype), randn(*y_shape, dtype=dtype)
    out = run(lambda a, b: mil.MatmulOp(a, b, transpose_x, transpose_y), x, y)
    a = np.swapaxes(f64(x), -1, -2) if transpose_x else f64(x)
    b = np.swapaxes(f64(y), -1, -2) if transpose_y else f64(y)
    check(out, a @ b, dtype)
    theirs = coreml(
        lambda p, q: mb.matmul(
            x=p, y=q, transpose_x=transpose_x, transpose_y=transpose_y
        ),
        x,
        y,
    )
    check(out, theirs, dtype)


def test_matmul_int32():
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    check(run(lambda a: mil.MatmulOp(a, a, transpose_y=True), x), x @ x.T, np.int32)


@pytest.mark.parametrize("dtype", FLOATS)
def test_linear(dtype):
    x, w, b = (
        randn(2, 5, 8, dtype=dtype),
        randn(4, 8, dtype=dtype),
        randn(4, dtype=dtype),
    )
    out = run(mil.LinearOp, x, w, b, const=(1, 2))
    check(out, f64(x) @ f64(w).T + f64(b), dtype)
    check(out, coreml(lambda p, q, r: mb.linear(x=p, weight=q, bias=r), x, w, b), dtype)
    check(run(mil.LinearOp, x, w, const=(1,)), f64(x) @ f64(w).T, dtype)


def test_linear_mixed_dtypes():
    """iOS17: an fp32 weight with fp16 activations gives fp16."""
    x, w = randn(3, 8, dtype=np.float16), randn(4, 8)
    check(run(mil.LinearOp, x, w, const=(1,)), f64(x) @ f64(w).T, np.float16)


def conv_reference(x, w, b, strides, dilations, padding, groups):
    """The definition, one output element at a time (float64)."""
    x, w = f64(x), f64(w)
    spatial = x.ndim - 2
    x = np.pad(x, [(0, 0), (0, 0), *padding])
    n, c_in = x.shape[:2]
    c_out, per_group = w.shape[:2]
    kernel = w.shape[2:]
    out_shape = [
        (x.shape[2 + i] - (kernel[i] - 1) * dilations[i] - 1) // strides[i] + 1
        for i in range(spatial)
    ]
    out = np.zeros((n, c_out, *out_shape))
    for o in range(c_out):
        g = o // (c_out // groups)
        for pos in np.ndindex(*out_shape):
            for k in np.ndindex(*kernel):
                idx = tuple(
                    p * s + kk * d for p, s, kk, d in zip(pos, strides, k, dilations)
                )
                patch = x[
                    (slice(None), slice(g * per_group, (g + 1) * per_group), *idx)
                ]
                out[(slice(None), o, *pos)] += patch @ w[(o, slice(None), *k)]
    if b is not None:
        out += f64(b).reshape(-1, *([1] * spatial))
    return out


@pytest.mark.parametrize(
    ("x_shape", "w_shape", "props", "padding"),
    [
        ((1, 8, 1, 6), (4, 8, 1, 1), {}, [(0, 0), (0, 0)]),
        ((1, 6, 2, 3), (4, 3, 1, 1), {"groups": 2}, [(0, 0), (0, 0)]),
        (
            (2, 4, 7, 6),
            (6, 4, 3, 2),
            {"pad_type": "valid", "strides": [2, 1]},
            [(0, 0), (0, 0)],
        ),
        # same: out = ceil(in/stride); the odd padding element goes after
        (
            (1, 2, 6, 5),
            (3, 2, 2, 3),
            {"pad_type": "same", "strides": [2, 2]},
            [(0, 0), (1, 1)],
        ),
        ((1, 2, 5, 5), (3, 2, 2, 2), {"pad_type": "same"}, [(0, 1), (0, 1)]),
        ((1, 2, 5, 5), (3, 2, 2, 2), {"pad_type": "same_lower"}, [(1, 0), (1, 0)]),
        (
            (1, 4, 6, 7),
            (6, 2, 3, 3),
            {
                "pad_type": "custom",
                "pad": [1, 0, 2, 1],
                "groups": 2,
                "dilations": [1, 2],
            },
            [(1, 0), (2, 1)],
        ),
        ((2, 3, 9), (4, 3, 3), {"strides": [2]}, [(0, 0)]),
        ((1, 2, 4, 3, 4), (2, 2, 2, 2, 2), {"groups": 1}, [(0, 0), (0, 0), (0, 0)]),
    ],
)
@pytest.mark.parametrize("dtype", FLOATS)
def test_conv(x_shape, w_shape, props, padding, dtype):
    x, w, b = (
        randn(*x_shape, dtype=dtype),
        randn(*w_shape, dtype=dtype),
        randn(w_shape[0], dtype=dtype),
    )
    spatial = len(x_shape) - 2
    strides = props.get("strides", [1] * spatial)
    dilations = props.get("dilations", [1] * spatial)
    groups = props.get("groups", 1)
    out = run(lambda p, q, r: mil.ConvOp(p, q, r, **props), x, w, b, const=(1,))
    check(out, conv_reference(x, w, b, strides, dilations, padding, groups), dtype)


def test_conv_without_bias():
    x, w = randn(1, 3, 5, 5), randn(2, 3, 3, 3)
    out = run(lambda p, q: mil.ConvOp(p, q, pad_type="same"), x, w)
    check(
        out, conv_reference(x, w, None, [1, 1], [1, 1], [(1, 1), (1, 1)], 1), np.float32
    )


# --- shape ----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float16, np.int8, np.bool_])
def test_reshape_expand_squeeze(dtype):
    x = (randn(2, 3, 4) * 3).astype(dtype)
    cases = [
        (
            lambda v: mil.ReshapeOp(v, [0, -1]),
            x.reshape(3, 8),
            lambda v: mb.reshape(x=v, shape=[0, -1]),
        ),
        (
            lambda v: mil.ReshapeOp(v, [24]),
            x.reshape(24),
            lambda v: mb.reshape(x=v, shape=[24]),
        ),
        (
            lambda v: mil.ExpandDimsOp(v, [0, -1]),
            x[None, ..., None],
            lambda v: mb.expand_dims(x=v, axes=[0, -1]),
        ),
    ]
    y = x.reshape(1, 2, 1, 12)
    cases += [
        (mil.SqueezeOp, y.reshape(2, 12), lambda v: mb.squeeze(x=v)),
        (
            lambda v: mil.SqueezeOp(v, [0, 1]),
            y.reshape(2, 1, 12),
            lambda v: mb.squeeze(x=v, axes=[0]),
        ),
    ]
    for k, (ours, expected, theirs) in enumerate(cases):
        source = x if k < 3 else y
        out = run(ours, source)
        check(out, expected, dtype)
        if dtype != np.bool_ or k < 3:
            check(out, coreml(theirs, source), dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_transpose_slice_tile(dtype):
    x = (randn(2, 3, 4) * 5).astype(dtype)
    out = run(lambda v: mil.TransposeOp(v, [2, 0, -2]), x)
    check(out, np.transpose(x, (2, 0, 1)), dtype)
    check(out, coreml(lambda v: mb.transpose(x=v, perm=[2, 0, 1]), x), dtype)
    out = run(lambda v: mil.SliceBySizeOp(v, [1, 1, 0], [-1, 2, 3]), x)
    check(out, x[1:, 1:3, 0:3], dtype)
    theirs = coreml(
        lambda v: mb.slice_by_size(x=v, begin=[1, 1, 0], size=[-1, 2, 3]), x
    )
    check(out, theirs, dtype)
    out = run(lambda v: mil.TileOp(v, [1, 2, 3]), x)
    check(out, np.tile(x, (1, 2, 3)), dtype)
    check(out, coreml(lambda v: mb.tile(x=v, reps=[1, 2, 3]), x), dtype)


def test_concat():
    a, b, c = randn(2, 3), randn(2, 1), randn(2, 4)
    out = run(lambda *v: mil.ConcatOp(v, -1), a, b, c)
    check(out, np.concatenate([a, b, c], axis=1), np.float32)
    check(out, coreml(lambda *v: mb.concat(values=v, axis=-1), a, b, c), np.float32)
    s = [np.array(k, np.int32).reshape(()) for k in (4, 5, 6)]
    check(run(lambda *v: mil.ConcatOp(v, 0), *s), [4, 5, 6], np.int32)


def test_concat_interleave():
    """out[i·n + k] = values[k][i] along the axis (value inference ignores
    interleave, so only the formula checks it)."""
    a = np.arange(6, dtype=np.float16).reshape(3, 2)
    b = a + 10
    out = run(lambda *v: mil.ConcatOp(v, 0, interleave=True), a, b)
    check(out, [[0, 1], [10, 11], [2, 3], [12, 13], [4, 5], [14, 15]], np.float16)
    out = run(lambda *v: mil.ConcatOp(v, 1, interleave=True), a, b, a)
    expected = np.stack([a, b, a], axis=2).reshape(3, 6)
    check(out, expected, np.float16)


def test_split():
    x = randn(2, 6, dtype=np.float16)
    parts = run(lambda v: mil.SplitOp(v, axis=1, split_sizes=[1, 2, 3]), x)
    theirs = coreml(lambda v: mb.split(x=v, axis=1, split_sizes=[1, 2, 3]), x)
    for part, expected, other in zip(parts, np.split(x, [1, 3], axis=1), theirs):
        check(part, expected, np.float16)
        check(part, other, np.float16)
    halves = run(lambda v: mil.SplitOp(v, axis=0, num_splits=2), x)
    check(halves[0], x[:1], np.float16)
    check(halves[1], x[1:], np.float16)


# --- indexing -------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.int8])
def test_gather(dtype):
    table = (randn(10, 4) * 5).astype(dtype)
    ids = np.array([[3, 0], [9, 3]], np.int32)
    out = run(mil.GatherOp, table, ids)
    check(out, table[ids], dtype)
    check(out, coreml(lambda p, q: mb.gather(x=p, indices=q), table, ids), dtype)
    out = run(lambda p, q: mil.GatherOp(p, q, axis=-1), table, ids[0].astype(np.int8))
    check(out, table[:, [3, 0]], dtype)
    for index_type in (np.int16, np.uint16):  # coremltools' casts of indices
        check(run(mil.GatherOp, table, ids.astype(index_type)), table[ids], dtype)


def test_gather_batch_dims():
    x = randn(2, 3, 4)
    ids = np.array([[0, 3, 1], [2, 2, 0]], np.int32)
    out = run(lambda p, q: mil.GatherOp(p, q, axis=2, batch_dims=1), x, ids)
    expected = np.stack([x[b][:, ids[b]] for b in range(2)])
    check(out, expected, np.float32)
    theirs = coreml(
        lambda p, q: mb.gather(x=p, indices=q, axis=2, batch_dims=1), x, ids
    )
    check(out, theirs, np.float32)


def test_gather_rejects_out_of_range_indices():
    with pytest.raises(
        InterpretationError, match=r"mil.gather: index -1 is outside \[0, 10\)"
    ):
        run(mil.GatherOp, randn(10, 4), np.array([1, -1], np.int32))


def test_one_hot():
    """No value inference; the formula: position j of the new axis is on_value
    iff j == index (out-of-range indices give all off_value)."""
    labels = np.array([2, 0, 4, 7, -1], np.int32)
    out = run(lambda v: mil.OneHotOp(v, 5), labels)
    expected = (labels[:, None] == np.arange(5)).astype(np.int32)
    check(out, expected, np.int32)
    out = run(
        lambda v: mil.OneHotOp(v, 5, element_type=f16, on_value=2, off_value=-1), labels
    )
    check(out, np.where(expected, 2, -1), np.float16)
    grid = np.array([[1, 0, 2], [2, 2, 0]], np.int32)
    out = run(lambda v: mil.OneHotOp(v, 3, axis=0, element_type=i1), grid)
    check(out, np.moveaxis(grid[..., None] == np.arange(3), -1, 0), np.bool_)


@pytest.mark.parametrize(("lower", "upper"), [(-1, 0), (0, -1), (1, 2), (-1, -1)])
def test_band_part(lower, upper):
    x = randn(2, 4, 5, dtype=np.float16)
    out = run(lambda v: mil.BandPartOp(v, lower, upper), x)
    m, n = np.arange(4)[:, None], np.arange(5)[None, :]
    keep = ((lower < 0) | (m - n <= lower)) & ((upper < 0) | (n - m <= upper))
    check(out, np.where(keep, x, 0), np.float16)
    check(
        out,
        coreml(lambda v: mb.band_part(x=v, lower=lower, upper=upper), x),
        np.float16,
    )


# --- reductions and normalization ---------------------------------------------

REDUCTIONS = [
    (mil.ReduceSumOp, np.sum, mb.reduce_sum),
    (mil.ReduceMeanOp, np.mean, mb.reduce_mean),
    (mil.ReduceMaxOp, np.max, mb.reduce_max),
    (mil.ReduceMinOp, np.min, mb.reduce_min),
    (mil.ReduceProdOp, np.prod, mb.reduce_prod),
    (
        mil.ReduceLogSumExpOp,
        lambda x, axis, keepdims: np.log(
            np.sum(np.exp(x), axis=axis, keepdims=keepdims)
        ),
        mb.reduce_log_sum_exp,
    ),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(
    ("axes", "keep_dims"), [([1], False), ([0, -1], True), (None, False)]
)
@pytest.mark.parametrize(("op", "reference", "theirs"), REDUCTIONS)
def test_reductions(op, reference, theirs, axes, keep_dims, dtype):
    x = randn(2, 3, 4, dtype=dtype)
    if op is mil.ReduceProdOp:
        x = (np.abs(x) + 0.5).astype(dtype)
    out = run(lambda v: op(v, axes, keep_dims), x)
    axis = None if axes is None else tuple(axes)
    check(out, reference(f64(x), axis=axis, keepdims=keep_dims), dtype)
    kwargs = {"keep_dims": keep_dims} | ({} if axes is None else {"axes": axes})
    check(out, coreml(lambda v: theirs(x=v, **kwargs), x), dtype)


def test_reductions_int32():
    x = np.array([[1, 2, 4], [-7, 5, 3]], np.int32)
    check(run(lambda v: mil.ReduceSumOp(v, [1]), x), [7, 1], np.int32)
    check(run(lambda v: mil.ReduceMeanOp(v, [1]), x), [2, 0], np.int32)
    check(run(lambda v: mil.ReduceMaxOp(v), x), np.int32(5), np.int32)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("axis", [-1, 1, 0])
def test_softmax(axis, dtype):
    x = randn(2, 3, 4, dtype=dtype) * 3
    out = run(lambda v: mil.SoftmaxOp(v, axis), x)
    e = np.exp(f64(x))
    check(out, e / e.sum(axis=axis, keepdims=True), dtype)
    check(out, coreml(lambda v: mb.softmax(x=v, axis=axis), x), dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(
    ("axes", "params"), [([-1], "both"), ([1, 2], "gamma"), (None, "none")]
)
def test_layer_norm(axes, params, dtype):
    x = randn(2, 3, 4, dtype=dtype) * 2 + dtype(1)
    normalized = [
        d for i, d in enumerate(x.shape) if axes is None or i in [a % 3 for a in axes]
    ]
    gamma, beta = randn(*normalized, dtype=dtype), randn(*normalized, dtype=dtype)
    inputs = {"both": (gamma, beta), "gamma": (gamma,), "none": ()}[params]
    out = run(
        lambda v, *p: mil.LayerNormOp(v, *p, axes=axes, epsilon=1e-3),
        x,
        *inputs,
        const=(1, 2),
    )
    axis = tuple(range(3)) if axes is None else tuple(a % 3 for a in axes)
    centered = f64(x) - f64(x).mean(axis=axis, keepdims=True)
    expected = centered / np.sqrt((centered**2).mean(axis=axis, keepdims=True) + 1e-3)
    kept = [d if i in axis else 1 for i, d in enumerate(x.shape)]
    if params != "none":
        expected = expected * f64(gamma).reshape(kept)
    if params == "both":
        expected = expected + f64(beta).reshape(kept)
    check(out, expected, dtype, rtol=2e-2 if dtype == np.float16 else None)
    names = {"both": ("gamma", "beta"), "gamma": ("gamma",), "none": ()}[params]
    # coremltools' own default (axes=range(rank)) does not build; pass it
    kwargs = {"epsilon": dtype(1e-3), "axes": list(axis)}
    theirs = coreml(
        lambda v, *p: mb.layer_norm(x=v, **dict(zip(names, p)), **kwargs), x, *inputs
    )
    check(out, theirs, dtype, rtol=2e-2 if dtype == np.float16 else None)


def f16_ulps(actual: np.ndarray, expected: np.ndarray) -> float:
    """The largest error of `actual` in units of the f16 spacing at the
    float64 `expected` (0.5 for a correctly rounded result)."""
    spacing = np.spacing(np.abs(expected).astype(np.float16)).astype(np.float64)
    return float(np.max(np.abs(actual.astype(np.float64) - expected) / spacing))


def long_axis_input(axis: int, kind: str) -> np.ndarray:
    """A rank-4 f16 tensor with 4096 entries along `axis` and 2 along the
    others: reductions over it need a wide accumulator whatever the axis."""
    shape = [2, 2, 2, 2]
    shape[axis] = 4096
    rng = np.random.default_rng(axis)
    if kind == "product":  # values 1, 1 + 2^-10, 1 + 2^-9: a product near e^4
        return (1 + rng.integers(0, 3, shape) * 2.0**-10).astype(np.float16)
    if kind == "positive":
        return rng.uniform(0, 1, shape).astype(np.float16)
    return rng.standard_normal(shape).astype(np.float16)


LONG_REDUCTIONS = [
    (mil.ReduceSumOp, "positive", lambda x, a: np.sum(x, axis=a, keepdims=True)),
    (mil.ReduceMeanOp, "normal", lambda x, a: np.mean(x, axis=a, keepdims=True)),
    (mil.ReduceMaxOp, "normal", lambda x, a: np.max(x, axis=a, keepdims=True)),
    (mil.ReduceMinOp, "normal", lambda x, a: np.min(x, axis=a, keepdims=True)),
    (mil.ReduceProdOp, "product", lambda x, a: np.prod(x, axis=a, keepdims=True)),
    (
        mil.ReduceLogSumExpOp,
        "normal",
        lambda x, a: np.log(np.sum(np.exp(x), axis=a, keepdims=True)),
    ),
]


@pytest.mark.parametrize("axis", [0, 1, 2, 3])
@pytest.mark.parametrize(("op", "kind", "reference"), LONG_REDUCTIONS)
def test_f16_reductions_accumulate_in_fp32_on_every_axis(op, kind, reference, axis):
    """An f16 reduction is the float64 value rounded to f16 once (within one
    f16 step), along the contiguous axis and along every other."""
    x = long_axis_input(axis, kind)
    out = run(lambda v: op(v, [axis], True), x)
    assert out.dtype == np.float16
    assert f16_ulps(out, reference(f64(x), axis)) <= 1


@pytest.mark.parametrize("axis", [0, 1, 2, 3])
def test_f16_sum_of_ones_is_exact_on_every_axis(axis):
    ones = np.ones(long_axis_input(axis, "normal").shape, np.float16)
    np.testing.assert_array_equal(
        run(lambda v: mil.ReduceSumOp(v, [axis]), ones), np.full((2, 2, 2), 4096)
    )
    np.testing.assert_allclose(
        run(lambda v: mil.ReduceLogSumExpOp(v, [axis]), ones).astype(np.float64),
        1 + math.log(4096),
        rtol=2**-10,
    )


@pytest.mark.parametrize("axis", [0, 1, 2, 3])
def test_f16_softmax_and_layer_norm_accumulate_in_fp32_on_every_axis(axis):
    x = long_axis_input(axis, "normal")
    e = np.exp(f64(x) - f64(x).max(axis=axis, keepdims=True))
    out = run(lambda v: mil.SoftmaxOp(v, axis), x)
    assert f16_ulps(out, e / e.sum(axis=axis, keepdims=True)) <= 1
    centered = f64(x) - f64(x).mean(axis=axis, keepdims=True)
    epsilon = float(np.float16(1e-3))
    expected = centered / np.sqrt(
        (centered**2).mean(axis=axis, keepdims=True) + epsilon
    )
    out = run(lambda v: mil.LayerNormOp(v, axes=[axis], epsilon=1e-3), x)
    assert f16_ulps(out, expected) <= 1


@pytest.mark.parametrize("transpose_x", [False, True])
def test_f16_matmul_and_conv_accumulate_in_fp32(transpose_x):
    """matmul contracting 4096 terms (along x's contiguous axis or, with
    transpose_x, along the other), and a 1×1 conv over 4096 input channels:
    one rounding of the float64 value."""
    x = RNG.uniform(0, 1, (2, 4096, 2) if transpose_x else (2, 2, 4096))
    x = x.astype(np.float16)
    y = np.ones((2, 4096, 3), np.float16)
    out = run(lambda a, b: mil.MatmulOp(a, b, transpose_x=transpose_x), x, y)
    contracted = np.swapaxes(f64(x), -1, -2) if transpose_x else f64(x)
    assert f16_ulps(out, contracted @ f64(y)) <= 1
    image = RNG.uniform(0, 1, (1, 4096, 2, 4)).astype(np.float16)
    weight = np.ones((3, 4096, 1, 1), np.float16)
    out = run(lambda v, w: mil.ConvOp(v, w), image, weight, const=(1,))
    expected = np.einsum("nchw,oc->nohw", f64(image), f64(weight[:, :, 0, 0]))
    assert f16_ulps(out, expected) <= 1


# --- quantization ---------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS)
def test_quantize(dtype):
    x = (randn(1, 4, 1, 8) * 3).astype(dtype)
    scale, zp = np.array(0.05, dtype), np.array(3, np.int8)
    out = run(lambda v, s, z: mil.QuantizeOp(v, s, z), x, scale, zp, const=(1, 2))
    # x / scale is computed in x's precision (an f16 quotient can land on
    # the other side of a .5 than the float64 one)
    expected = np.clip(np.rint(f64(x / scale)) + 3, -128, 127)
    check(out, expected, np.int8)
    theirs = coreml(
        lambda v, z, s: mb.quantize(
            input=v, zero_point=z, scale=s, output_dtype="int8"
        ),
        x,
        zp,
        scale,
    )
    # halfway cases may round differently in float16 (x / scale is inexact)
    assert np.max(np.abs(out.astype(int) - theirs.astype(int))) <= (dtype == np.float16)
    channel = np.array([0.1, 0.2, 0.3, 0.4], dtype)
    out = run(lambda v, s: mil.QuantizeOp(v, s, axis=1), x, channel, const=(1,))
    expected = np.clip(np.rint(f64(x / channel.reshape(1, 4, 1, 1))), -128, 127)
    check(out, expected, np.int8)


def dequantize_oracle(build: Callable[..., Any], *inputs: Any) -> np.ndarray:
    """dequantize and constexpr ops have no value_inference; their
    `materialized_val_inference` decompresses the const data."""
    with Function({"unused": mb.TensorSpec(shape=(1,))}, ct.target.iOS18):
        return build(*inputs).op.materialized_val_inference()


@pytest.mark.parametrize("dtype", FLOATS)
def test_dequantize(dtype):
    q = RNG.integers(-128, 128, (4, 8)).astype(np.int8)
    scale, zp = np.array([0.1, 0.2, 0.3, 0.4], dtype), np.array([0, 1, -2, 3], np.int8)
    out = run(
        lambda v, z, s: mil.DequantizeOp(v, s, z, axis=0), q, zp, scale, const=(1, 2)
    )
    expected = (f64(q) - f64(zp)[:, None]) * f64(scale)[:, None]
    check(out, expected, dtype)
    theirs = dequantize_oracle(
        lambda v, z, s: mb.dequantize(input=v, zero_point=z, scale=s, axis=0),
        q,
        zp,
        scale,
    )
    check(out, theirs, dtype)
    scalar = np.array(0.5, dtype)
    check(
        run(lambda v, s: mil.DequantizeOp(v, s), q, scalar, const=(1,)),
        f64(q) * 0.5,
        dtype,
    )


@pytest.mark.parametrize(
    "zero_point", [np.array(2, np.int8), np.arange(4, dtype=np.float32)]
)
def test_constexpr_affine_dequantize(zero_point):
    q = RNG.integers(-128, 128, (4, 3)).astype(np.int8)
    scale = np.array(0.25, np.float16)
    out = run(
        lambda d, z, s: mil.ConstexprAffineDequantizeOp(d, z, s, axis=0),
        q,
        zero_point,
        scale,
        const=(0, 1, 2),
    )
    zp = f64(zero_point).reshape(-1, 1) if zero_point.ndim else f64(zero_point)
    check(out, (f64(q) - zp) * 0.25, np.float16)
    theirs = dequantize_oracle(
        lambda d, z, s: mb.constexpr_affine_dequantize(
            quantized_data=d, zero_point=z, scale=s, axis=0
        ),
        q,
        zero_point,
        scale,
    )
    check(out, theirs, np.float16)


def test_a_runner_keeps_expanded_constants(monkeypatch):
    """A FunctionRunner with `keep_constants` (calibration's) expands a
    constexpr op's weight on its first call only; each call's result is
    `run_function`'s."""
    import xdsl_ane.interpreter.mil as interpreter_mil
    from xdsl_ane.frontend.mlir import parse_module_text
    from xdsl_ane.interpreter.core import FunctionRunner, run_function

    module = parse_module_text(
        """
func.func @f(%x: tensor<2x4xf16>) -> tensor<2x3xf16> {
  %d = mil.const dense<[[1, -2, 3, 4], [5, 6, -7, 8], [9, 10, 11, -12]]> : tensor<3x4xi8>
  %s = mil.const dense<[[0.5], [0.25], [2.0]]> : tensor<3x1xf16>
  %w = mil.constexpr_blockwise_shift_scale %d, %s : (tensor<3x4xi8>, tensor<3x1xf16>) -> tensor<3x4xf16>
  %y = mil.linear %x, %w : (tensor<2x4xf16>, tensor<3x4xf16>) -> tensor<2x3xf16>
  func.return %y : tensor<2x3xf16>
}""",
        "runner.mlir",
    )
    expanded = []
    expand = interpreter_mil.blockwise_shift_scale
    monkeypatch.setattr(
        interpreter_mil,
        "blockwise_shift_scale",
        lambda *args: expanded.append(1) or expand(*args),
    )
    runner = FunctionRunner(module, keep_constants=True)
    inputs = [randn(2, 4, dtype=np.float16) for _ in range(3)]
    results = [runner.run([x])[0] for x in inputs]
    assert len(expanded) == 1
    for x, out in zip(inputs, results):
        np.testing.assert_array_equal(out, run_function(module, [x])[0])
    assert len(expanded) == 4  # run_function expands on each call

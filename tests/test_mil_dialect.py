"""Builders and verifiers of the mil dialect, and its type inference checked
against coremltools 9.0's own (the iOS18 opset of `mil.Builder`).

Builders take operands and properties and infer the result types; the
verifier recomputes them and rejects a mismatch with a message naming the op,
the operand and the shapes. The lit tests in tests/filecheck/dialects/mil
cover the syntax and more error cases.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable

import numpy as np
import pytest
from mil_type_check import (
    INT4,
    UINT4,
    C,
    Case,
    R,
    const,
    coreml_types,
    our_types,
    result_types,
    value,
)
from xdsl.dialects.builtin import (
    BoolAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    f16,
    f32,
    i1,
    i8,
    i32,
)
from xdsl.ir import Operation
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.test_value import create_ssa_value

from xdsl_ane.dialects import mil
from xdsl_ane.dialects.typing import (
    OpTypeError,
    property_form,
    tensor,
)

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from coremltools.converters.mil import Builder as mb

REQUIRED_OPS = (
    "const relu sigmoid tanh exp log sqrt rsqrt abs sin cos gelu silu inverse round "
    "square add sub mul real_div maximum minimum pow equal not_equal less less_equal "
    "greater greater_equal select cast matmul linear conv reshape transpose "
    "slice_by_size concat tile expand_dims squeeze split pixel_shuffle pixel_unshuffle "
    "reduce_sum reduce_mean "
    "reduce_max reduce_min softmax cumsum one_hot gather layer_norm quantize dequantize "
    "constexpr_affine_dequantize"
).split()


def test_dialect_has_every_required_op():
    names = {op.name.removeprefix("mil.") for op in mil.MIL.operations}
    assert set(REQUIRED_OPS) <= names


# --- builders infer the documented result types ------------------------------


@pytest.mark.parametrize(
    ("build", "expected"),
    [
        (lambda: mil.ReluOp(value([2, 8], f16)), [tensor([2, 8], f16)]),
        (lambda: mil.LogOp(value([3]), epsilon=1e-5), [tensor([3], f32)]),
        (lambda: mil.AbsOp(value([3], i32)), [tensor([3], i32)]),
        (lambda: mil.AddOp(value([2, 1, 4]), value([3, 1])), [tensor([2, 3, 4], f32)]),
        (lambda: mil.LessOp(value([4], i32), value([], i32)), [tensor([4], i1)]),
        (
            lambda: mil.SelectOp(value([4], i1), value([2, 4]), value([4])),
            [tensor([2, 4], f32)],
        ),
        (lambda: mil.CastOp(value([2, 3]), "int8"), [tensor([2, 3], i8)]),
    ],
)
def test_elementwise_builders(build: Callable[[], Operation], expected):
    op = build()
    assert result_types(op) == expected
    op.verify()


def test_const_builders():
    attr = DenseIntOrFPElementsAttr.from_list(tensor([2], f16), [1.0, 2.0])
    assert mil.ConstOp(attr).result.type == tensor([2], f16)
    weight = mil.ConstOp.from_weight("w", tensor([4, 4], f32))
    assert weight.result.type == tensor([4, 4], f32)
    weight.verify()


@pytest.mark.parametrize(
    ("build", "shape", "element_type"),
    [
        (lambda: mil.MatmulOp(value([2, 3, 4]), value([4, 5])), [2, 3, 5], f32),
        (
            lambda: mil.MatmulOp(value([6, 1, 4, 3]), value([2, 5, 4]), True, True),
            [6, 2, 3, 5],
            f32,
        ),
        (lambda: mil.MatmulOp(value([4], f16), value([4, 7], f16)), [7], f16),
        (
            lambda: mil.LinearOp(value([2, 16, 8], f16), const([4, 8]), const([4])),
            [2, 16, 4],
            f16,
        ),
        # a 1x1 conv is the ANE's linear layer: [1, Cin, 1, S] -> [1, Cout, 1, S]
        (
            lambda: mil.ConvOp(
                value([1, 64, 1, 128], f16), value([256, 64, 1, 1], f16)
            ),
            [1, 256, 1, 128],
            f16,
        ),
        (
            lambda: mil.ConvOp(
                value([2, 4, 9, 9]),
                value([6, 4, 3, 3]),
                pad_type="same",
                strides=[2, 2],
            ),
            [2, 6, 5, 5],
            f32,
        ),
        (
            lambda: mil.ConvOp(
                value([1, 4, 9, 9]),
                const([6, 2, 3, 3]),
                groups=2,
                dilations=[2, 1],
                pad_type="custom",
                pad=[1, 1, 0, 2],
            ),
            [1, 6, 7, 9],
            f32,
        ),
    ],
)
def test_linear_algebra_builders(build, shape, element_type):
    op = build()
    assert result_types(op) == [tensor(shape, element_type)]
    op.verify()


@pytest.mark.parametrize(
    ("build", "shapes"),
    [
        (lambda: mil.ReshapeOp(value([2, 3, 4]), [-1, 4]), [[6, 4]]),
        (lambda: mil.ReshapeOp(value([2, 50]), [1, 0, -1, 0]), [[1, 1, 2, 50]]),
        (lambda: mil.ReshapeOp(value([2, 3, 4]), [0, -1]), [[3, 8]]),
        (lambda: mil.TransposeOp(value([2, 3, 4]), [0, -1, 1]), [[2, 4, 3]]),
        (
            lambda: mil.SliceBySizeOp(
                value([1, 64, 1, 80]), [0, 0, 0, 16], [1, 64, 1, -1]
            ),
            [[1, 64, 1, 64]],
        ),
        (lambda: mil.ConcatOp([value([2, 3]), value([2, 5])], -1), [[2, 8]]),
        (lambda: mil.ConcatOp([value([2, 3])] * 3, 0, interleave=True), [[6, 3]]),
        (lambda: mil.ConcatOp([value([]), value([])], 0), [[2]]),
        (lambda: mil.TileOp(value([2, 3]), [3, 1]), [[6, 3]]),
        (lambda: mil.ExpandDimsOp(value([2, 3]), [0, -1]), [[1, 2, 3, 1]]),
        (lambda: mil.SqueezeOp(value([1, 4, 1, 6])), [[4, 6]]),
        (lambda: mil.SqueezeOp(value([1, 4, 1, 6]), [0, 1]), [[4, 1, 6]]),
        (lambda: mil.SplitOp(value([2, 6]), axis=1, num_splits=3), [[2, 2]] * 3),
        (
            lambda: mil.SplitOp(value([2, 6]), axis=-1, split_sizes=[1, 5]),
            [[2, 1], [2, 5]],
        ),
        (lambda: mil.GatherOp(value([100, 16]), value([2, 8], i32)), [[2, 8, 16]]),
        (
            lambda: mil.GatherOp(value([2, 3, 4]), value([2, 5], i32), 2, 1),
            [[2, 3, 5]],
        ),
        (lambda: mil.ReduceSumOp(value([2, 3, 4]), [1]), [[2, 4]]),
        (lambda: mil.ReduceMaxOp(value([2, 3, 4])), [[]]),
        (lambda: mil.ReduceMeanOp(value([2, 3, 4]), [-1], keep_dims=True), [[2, 3, 1]]),
        (lambda: mil.SoftmaxOp(value([2, 3]), axis=0), [[2, 3]]),
        (
            lambda: mil.LayerNormOp(
                value([2, 3, 4]), const([3, 4]), const([3, 4]), [1, 2]
            ),
            [[2, 3, 4]],
        ),
        (lambda: mil.LayerNormOp(value([2, 4]), beta=const([2, 4])), [[2, 4]]),
    ],
)
def test_shape_builders(build, shapes):
    op = build()
    assert [list(t.get_shape()) for t in result_types(op)] == shapes
    op.verify()


def test_one_hot_result_type():
    """The result dtype follows on_value/off_value, MIL's int32 by default."""
    labels = value([4], i32)
    assert mil.OneHotOp(labels, 10).result.type == tensor([4, 10], i32)
    fp16 = mil.OneHotOp(labels, 10, element_type=f16)
    assert fp16.result.type == tensor([4, 10], f16)
    assert fp16.on_value is not None and fp16.on_value.value.data == 1.0
    first = mil.OneHotOp(value([2, 3], i32), 5, axis=0, element_type=f32, on_value=3)
    assert first.result.type == tensor([5, 2, 3], f32)
    assert mil.OneHotOp(labels, 2, element_type=i1).result.type == tensor([4, 2], i1)


def test_quantization_builders():
    x = value([1, 4, 1, 8], f16)
    q = mil.QuantizeOp(x, const([4], f16), const([4], i8), axis=1)
    assert q.result.type == tensor([1, 4, 1, 8], i8)
    d = mil.DequantizeOp(q.result, const([], f32))
    assert d.result.type == tensor([1, 4, 1, 8], f32)
    c = mil.ConstexprAffineDequantizeOp(
        const([32, 8], i8), const([], f32), const([32], f16), axis=0
    )
    assert c.result.type == tensor([32, 8], f16)
    for op in (q, d, c):
        op.verify()


# --- verifiers reject bad input, naming the operand and the shapes ------------


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: mil.SubOp(value([2, 3]), value([4])),
            r"mil.sub: operand shapes do not broadcast: 'x' \[2, 3\], 'y' \[4\]",
        ),
        (
            lambda: mil.AddOp(value([2]), value([2], f16)),
            r"operands 'x' \(f32\) and 'y' \(f16\) must have the same element type",
        ),
        (
            lambda: mil.MatmulOp(value([2, 3]), value([4, 5])),
            r"mil.matmul: contraction dimensions differ: operand 'x' \[2, 3\] and "
            r"operand 'y' \[4, 5\]",
        ),
        (
            lambda: mil.LinearOp(value([2, 8]), const([4, 6])),
            r"last dimension of operand 'x' \[2, 8\] does not match operand 'weight' "
            r"\[4, 6\]",
        ),
        (
            lambda: mil.ConvOp(value([1, 8, 4, 4]), value([16, 4, 1, 1])),
            r"operand 'weight' \[16, 4, 1, 1\] must be \[C_out, C_in/groups, \.\.\.\] "
            r"with C_in/groups = 8 \(operand 'x' \[1, 8, 4, 4\]",
        ),
        (
            lambda: mil.ReshapeOp(value([2, 3]), [4, 2]),
            r"property 'shape' \[4, 2\] .* operand 'x' \[2, 3\]",
        ),
        (
            lambda: mil.SliceBySizeOp(value([8]), [6], [4]),
            r"slice begin 6 size 4 on axis 0 is out of range for operand 'x' \[8\]",
        ),
        (
            lambda: mil.ConcatOp([value([2, 3]), value([3, 3])], 1),
            r"operand 'values\[1\]' \[3, 3\] must match operand 'values\[0\]' \[2, 3\]",
        ),
        (
            lambda: mil.SplitOp(value([2, 5]), axis=1, num_splits=2),
            r"num_splits 2 does not divide axis 1 of operand 'x' \[2, 5\]",
        ),
        (
            lambda: mil.GatherOp(value([2, 3, 4]), value([3, 5], i32), 2, 1),
            r"batch\) dimensions of operand 'x' \[2, 3, 4\] and operand 'indices' "
            r"\[3, 5\] differ",
        ),
        (
            lambda: mil.LayerNormOp(value([2, 3, 4]), const([4]), axes=[1, 2]),
            r"operand 'gamma' \[4\] must have shape \[3, 4\] \(operand 'x' \[2, 3, 4\]",
        ),
        (
            lambda: mil.ReduceSumOp(value([2, 3]), [2]),
            r"property 'axes' value 2 is out of range \[-2, 2\) for operand 'x' \[2, 3\]",
        ),
        (
            lambda: mil.QuantizeOp(value([4, 8]), const([4]), axis=1),
            r"operand 'scale' \[4\] must be a scalar or have shape \[8\] \(axis 1 of "
            r"operand 'input' \[4, 8\]\)",
        ),
        (
            lambda: mil.ReluOp(value([3], i32)),
            r"mil.relu: operand 'x' has element type i32, expected one of f16, f32",
        ),
    ],
)
def test_builders_reject(build: Callable[[], Operation], message: str):
    with pytest.raises(OpTypeError, match=message):
        build()


def test_verifier_rejects_a_wrong_result_type():
    op = mil.AddOp(value([2, 3]), value([3]))
    op.results[0]._type = tensor([3], f32)  # pyright: ignore[reportPrivateUsage]
    with pytest.raises(
        VerifyException, match=r"result type \[3\] f32 does not match the inferred type"
    ):
        op.verify()


def test_verifier_requires_const_operands():
    """MIL's linear, layer_norm and quantize take their parameters as consts."""
    op = mil.LinearOp(value([2, 8]), value([4, 8]))
    with pytest.raises(
        VerifyException, match="operand 'weight' must be a compile-time"
    ):
        op.verify()
    cast_weight = mil.CastOp(const([4, 8], f16), "fp32")
    mil.LinearOp(value([2, 8]), cast_weight.result).verify()


# --- type inference agrees with coremltools ----------------------------------


CASES = [
    Case("add", [R([2, 1, 4]), R([3, 1])], mil.AddOp, lambda x, y: mb.add(x=x, y=y)),
    Case(
        "pow_i32",
        [R([4], i32), R([2, 4], i32)],
        mil.PowOp,
        lambda x, y: mb.pow(x=x, y=y),
    ),
    Case(
        "less",
        [R([3, 1], f16), R([4], f16)],
        mil.LessOp,
        lambda x, y: mb.less(x=x, y=y),
    ),
    Case(
        "select",
        [R([4], i1), R([2, 4]), R([2, 1])],
        mil.SelectOp,
        lambda c, a, b: mb.select(cond=c, a=a, b=b),
    ),
    Case(
        "cast",
        [R([2, 3])],
        lambda x: mil.CastOp(x, "int32"),
        lambda x: mb.cast(x=x, dtype="int32"),
    ),
    Case(
        "gelu",
        [R([5], f16)],
        lambda x: mil.GeluOp(x, "TANH_APPROXIMATION"),
        lambda x: mb.gelu(x=x, mode="TANH_APPROXIMATION"),
    ),
    Case(
        "clip",
        [R([5])],
        lambda x: mil.ClipOp(x, -1, 1),
        lambda x: mb.clip(x=x, alpha=-1.0, beta=1.0),
    ),
    Case(
        "rsqrt",
        [R([5])],
        lambda x: mil.RsqrtOp(x, 1e-5),
        lambda x: mb.rsqrt(x=x, epsilon=1e-5),
    ),
    Case(
        "matmul",
        [R([6, 1, 4, 3]), R([2, 5, 4])],
        lambda x, y: mil.MatmulOp(x, y, transpose_x=True, transpose_y=True),
        lambda x, y: mb.matmul(x=x, y=y, transpose_x=True, transpose_y=True),
    ),
    Case(
        "matmul_vector",
        [R([4]), R([4, 7])],
        mil.MatmulOp,
        lambda x, y: mb.matmul(x=x, y=y),
    ),
    Case(
        "linear",
        [R([2, 16, 8], f16), C([4, 8], f16), C([4], f16)],
        mil.LinearOp,
        lambda x, w, b: mb.linear(x=x, weight=w, bias=b),
    ),
    Case(
        "conv_1x1",
        [R([1, 64, 1, 32], f16), C([128, 64, 1, 1], f16)],
        mil.ConvOp,
        lambda x, w: mb.conv(x=x, weight=w),
    ),
    Case(
        "conv_same_strided",
        [R([2, 4, 9, 10]), C([6, 4, 3, 2])],
        lambda x, w: mil.ConvOp(x, w, pad_type="same", strides=[2, 3]),
        lambda x, w: mb.conv(x=x, weight=w, pad_type="same", strides=[2, 3]),
    ),
    Case(
        "conv_same_lower_dilated",
        [R([1, 4, 9, 9]), C([6, 4, 3, 3])],
        lambda x, w: mil.ConvOp(x, w, pad_type="same_lower", dilations=[2, 3]),
        lambda x, w: mb.conv(x=x, weight=w, pad_type="same_lower", dilations=[2, 3]),
    ),
    Case(
        "conv_custom_grouped",
        [R([1, 8, 7, 5]), C([4, 2, 3, 3]), C([4])],
        lambda x, w, b: mil.ConvOp(
            x, w, b, pad_type="custom", pad=[1, 2, 0, 1], groups=4, strides=[2, 1]
        ),
        lambda x, w, b: mb.conv(
            x=x,
            weight=w,
            bias=b,
            pad_type="custom",
            pad=[1, 2, 0, 1],
            groups=4,
            strides=[2, 1],
        ),
    ),
    Case(
        "conv_1d",
        [R([2, 3, 11])],
        lambda x: mil.ConvOp(x, const([5, 3, 4]), pad_type="same"),
        lambda x: mb.conv(x=x, weight=np.ones((5, 3, 4), np.float32), pad_type="same"),
    ),
    Case(
        "conv_3d",
        [R([1, 2, 5, 6, 7]), C([3, 2, 2, 3, 2])],
        lambda x, w: mil.ConvOp(x, w, strides=[2, 2, 3]),
        lambda x, w: mb.conv(x=x, weight=w, strides=[2, 2, 3]),
    ),
    Case(
        "reshape",
        [R([2, 50])],
        lambda x: mil.ReshapeOp(x, [1, 0, -1, 0]),
        lambda x: mb.reshape(x=x, shape=[1, 0, -1, 0]),
    ),
    Case(
        "reshape_zero",
        [R([2, 3, 4])],
        lambda x: mil.ReshapeOp(x, [0, -1]),
        lambda x: mb.reshape(x=x, shape=[0, -1]),
    ),
    Case(
        "transpose",
        [R([2, 3, 4], i32)],
        lambda x: mil.TransposeOp(x, [2, 0, 1]),
        lambda x: mb.transpose(x=x, perm=[2, 0, 1]),
    ),
    Case(
        "slice_by_size",
        [R([1, 64, 1, 80], f16)],
        lambda x: mil.SliceBySizeOp(x, [0, 8, 0, 16], [1, -1, 1, 64]),
        lambda x: mb.slice_by_size(x=x, begin=[0, 8, 0, 16], size=[1, -1, 1, 64]),
    ),
    Case(
        "concat",
        [R([2, 3]), R([2, 5]), R([2, 1])],
        lambda *v: mil.ConcatOp(v, -1),
        lambda *v: mb.concat(values=v, axis=-1),
    ),
    Case(
        "concat_interleave",
        [R([2, 3]), R([2, 3])],
        lambda *v: mil.ConcatOp(v, 0, interleave=True),
        lambda *v: mb.concat(values=v, axis=0, interleave=True),
    ),
    Case(
        "tile",
        [R([2, 3], i1)],
        lambda x: mil.TileOp(x, [3, 2]),
        lambda x: mb.tile(x=x, reps=[3, 2]),
    ),
    Case(
        "expand_dims",
        [R([2, 3])],
        lambda x: mil.ExpandDimsOp(x, [-1, 0]),
        lambda x: mb.expand_dims(x=x, axes=[-1, 0]),
    ),
    Case("squeeze", [R([1, 4, 1, 6])], mil.SqueezeOp, lambda x: mb.squeeze(x=x)),
    Case(
        "squeeze_kept",
        [R([1, 4, 1, 6])],
        lambda x: mil.SqueezeOp(x, [0, 1, -2]),
        lambda x: mb.squeeze(x=x, axes=[0, 1, -2]),
    ),
    Case(
        "split",
        [R([2, 6])],
        lambda x: mil.SplitOp(x, axis=1, split_sizes=[1, 2, 3]),
        lambda x: mb.split(x=x, axis=1, split_sizes=[1, 2, 3]),
    ),
    Case(
        "split_even",
        [R([4, 6])],
        lambda x: mil.SplitOp(x, axis=0, num_splits=2),
        lambda x: mb.split(x=x, axis=0, num_splits=2),
    ),
    Case(
        "reduce_sum",
        [R([2, 3, 4])],
        lambda x: mil.ReduceSumOp(x, [0, -1], keep_dims=True),
        lambda x: mb.reduce_sum(x=x, axes=[0, -1], keep_dims=True),
    ),
    Case(
        "reduce_mean",
        [R([2, 3, 4], f16)],
        lambda x: mil.ReduceMeanOp(x, [1]),
        lambda x: mb.reduce_mean(x=x, axes=[1]),
    ),
    Case(
        "reduce_max_all",
        [R([2, 3], i32)],
        mil.ReduceMaxOp,
        lambda x: mb.reduce_max(x=x),
    ),
    Case(
        "softmax",
        [R([2, 3, 4])],
        lambda x: mil.SoftmaxOp(x, 1),
        lambda x: mb.softmax(x=x, axis=1),
    ),
    Case(
        "one_hot",
        [R([2, 3], i32)],
        lambda i: mil.OneHotOp(i, 5, axis=1),
        lambda i: mb.one_hot(indices=i, one_hot_vector_size=5, axis=1),
    ),
    Case(
        "one_hot_fp16",
        [R([4], i32)],
        lambda i: mil.OneHotOp(i, 7, element_type=f16),
        lambda i: mb.one_hot(
            indices=i,
            one_hot_vector_size=7,
            on_value=np.float16(1),
            off_value=np.float16(0),
        ),
    ),
    Case(
        "gather",
        [R([100, 16], f16), R([2, 8], i32)],
        mil.GatherOp,
        lambda x, i: mb.gather(x=x, indices=i),
    ),
    Case(
        "gather_batched",
        [R([2, 3, 4]), R([2, 5], i32)],
        lambda x, i: mil.GatherOp(x, i, axis=2, batch_dims=1),
        lambda x, i: mb.gather(x=x, indices=i, axis=2, batch_dims=1),
    ),
    Case(
        "layer_norm",
        [R([2, 3, 4], f16), C([3, 4], f16), C([3, 4], f16)],
        lambda x, g, b: mil.LayerNormOp(x, g, b, axes=[-1, 1]),
        lambda x, g, b: mb.layer_norm(x=x, gamma=g, beta=b, axes=[-1, 1]),
    ),
    Case(
        "band_part",
        [R([3, 4, 4])],
        lambda x: mil.BandPartOp(x, -1, 0),
        lambda x: mb.band_part(x=x, lower=-1, upper=0),
    ),
    Case(
        "quantize",
        [R([1, 4, 1, 8], f16), C([4], i8, 0), C([4], f16, 0.1)],
        lambda x, z, s: mil.QuantizeOp(x, s, z, axis=1),
        lambda x, z, s: mb.quantize(
            input=x, zero_point=z, scale=s, axis=1, output_dtype="int8"
        ),
    ),
    Case(
        "dequantize",
        [R([4, 8], i8), C([], f32, 0.5)],
        lambda x, s: mil.DequantizeOp(x, s),
        lambda x, s: mb.dequantize(input=x, scale=s),
    ),
    Case(
        "constexpr_affine_dequantize",
        [C([32, 8], i8), C([32], f32, 0), C([], f16, 0.1)],
        lambda d, z, s: mil.ConstexprAffineDequantizeOp(d, z, s, axis=0),
        lambda d, z, s: mb.constexpr_affine_dequantize(
            quantized_data=d, zero_point=z, scale=s, axis=0
        ),
    ),
    Case(
        "constexpr_blockwise_shift_scale",
        [C([8, 32, 1, 1], INT4, 1), C([8, 4, 1, 1], f16, 0.5)],
        lambda d, s: mil.ConstexprBlockwiseShiftScaleOp(d, s),
        lambda d, s: mb.constexpr_blockwise_shift_scale(data=d, scale=s),
    ),
    Case(
        "constexpr_blockwise_shift_scale_offset",
        [C([4, 6], i8, 1), C([2, 3], f32, 0.5), C([2, 3], f32, 0.25)],
        lambda d, s, o: mil.ConstexprBlockwiseShiftScaleOp(d, s, o),
        lambda d, s, o: mb.constexpr_blockwise_shift_scale(data=d, scale=s, offset=o),
    ),
    Case(
        "constexpr_lut_to_dense",
        [C([8, 16, 1, 1], UINT4, 1), C([2, 1, 1, 1, 16, 1], f16, 0.5)],
        lambda i, lut: mil.ConstexprLutToDenseOp(i, lut),
        lambda i, lut: mb.constexpr_lut_to_dense(indices=i, lut=lut),
    ),
    Case(
        "constexpr_lut_to_dense_vector",
        [C([4, 3], UINT4, 1), C([2, 1, 16, 3], f16, 0.5)],
        lambda i, lut: mil.ConstexprLutToDenseOp(i, lut, vector_axis=1),
        lambda i, lut: mb.constexpr_lut_to_dense(
            indices=i, lut=lut, vector_axis=np.int32(1)
        ),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_type_inference_matches_coremltools(case: Case):
    assert our_types(case) == coreml_types(case)


# --- property kinds --------------------------------------------------------------

# Properties whose kind is checked by the op's verifier instead: const's
# literal and one_hot's typed scalars (their type is the result's dtype).
FREE_PROPERTIES = {
    ("mil.const", "val"),
    ("mil.one_hot", "on_value"),
    ("mil.one_hot", "off_value"),
}


def test_every_mil_property_has_a_kind():
    """Each property is an i64 integer, an i64 array, an f32 float, a bool or
    a string, as in rlx: no bare IntegerAttr (which takes `axis = true`) or
    DenseArrayBase (which takes `array<f32: ...>`)."""
    untyped = [
        f"{op.name}.{name}"
        for op in mil.MIL_OPS
        for name, definition in op.get_irdl_definition().properties.items()
        if name != "operandSegmentSizes"
        and (op.name, name) not in FREE_PROPERTIES
        and property_form(definition.constr) is None
    ]
    assert not untyped


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda x: mil.SoftmaxOp.create(
                operands=[x],
                result_types=[x.type],
                properties={"axis": BoolAttr(1, i1)},
            ),
            "mil.softmax: property 'axis' must be an i64 integer (`-1 : i64`), got true",
        ),
        (
            lambda x: mil.ReduceSumOp.create(
                operands=[x],
                result_types=[tensor((2,), f32)],
                properties={"axes": DenseArrayBase.from_list(f32, [1.0])},
            ),
            "mil.reduce_sum: property 'axes' must be an i64 array",
        ),
    ],
)
def test_property_of_the_wrong_kind_names_op_and_property(build, message):
    op = build(create_ssa_value(tensor((2, 3), f32)))
    with pytest.raises(VerifyException, match=re.escape(message)):
        op.verify()

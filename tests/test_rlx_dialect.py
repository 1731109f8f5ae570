"""Builders and verifiers of the rlx dialect against the contract's op list.

Builders take operands and properties and infer the result type; the
verifier recomputes it and rejects a mismatch with a message naming the op,
the operand and the shapes. Tests build ops on free SSA values (no module,
no parsing); the lit tests in tests/filecheck/dialects/rlx cover the syntax.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
    f16,
    f32,
    f64,
    i1,
    i8,
    i32,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.test_value import create_ssa_value

from xdsl_ane.dialects import rlx

# The ops of the contract (docs/ops.md is generated from the code), written
# out by hand so that adding or dropping an op is a deliberate change.
DESIGN_OPS = {
    "constant",
    "param",
    *"relu gelu gelu_tanh silu sigmoid tanh exp log sqrt rsqrt neg abs sin cos reciprocal".split(),
    *"add sub mul div max min pow".split(),
    "compare",
    "where",
    "cast",
    "matmul",
    "reshape",
    "transpose",
    "narrow",
    "concat",
    "expand",
    "gather",
    *"reduce_sum reduce_mean reduce_max reduce_min".split(),
    "softmax",
    "rms_norm",
    "layer_norm",
    "rope",
    "attention",
    "softmax_cross_entropy",
    "softmax_cross_entropy_backward",
    "attention_backward",
    "rms_norm_backward_input",
    "rms_norm_backward_gamma",
    "rope_backward",
    "activation_backward",
    "quantize",
    "dequantize",
    # docs/DESIGN.md "State, update and argmax ops"
    *"read_state write_state slice_update argmax".split(),
    # ../shared/DESIGN.md "Vision and audio ops (issue 17)"
    "conv",
    "conv_transpose",
    *"max_pool avg_pool batch_norm group_norm".split(),
    *"upsample pad hardswish hardsigmoid leaky_relu elu clamp".split(),
    # docs/DESIGN.md "Cumulative sums" (RoBERTa's position ids)
    "cumsum",
    # docs/DESIGN.md "Math and ordering ops of the torch import"
    *"erf floor round topk argsort".split(),
    # docs/DESIGN.md "Resampling, padding and the vision activations"
    "pixel_shuffle",
    "pixel_unshuffle",
}

# Allowed values of the choice properties, from the contract.
COMPARE = ("eq", "ne", "lt", "le", "gt", "ge")
ROPE = ("half", "interleaved")
MASKS = ("none", "causal", "bias")
WRT = ("query", "key", "value")
KINDS = ("relu", "silu", "gelu", "gelu_tanh", "sigmoid", "tanh")

UNARY = [
    rlx.ReluOp,
    rlx.GeluOp,
    rlx.GeluTanhOp,
    rlx.SiluOp,
    rlx.SigmoidOp,
    rlx.TanhOp,
    rlx.ExpOp,
    rlx.LogOp,
    rlx.SqrtOp,
    rlx.RsqrtOp,
    rlx.NegOp,
    rlx.AbsOp,
    rlx.SinOp,
    rlx.CosOp,
    rlx.ReciprocalOp,
    rlx.ErfOp,
    rlx.FloorOp,
    rlx.RoundOp,
]
BINARY = [rlx.AddOp, rlx.SubOp, rlx.MulOp, rlx.DivOp, rlx.MaxOp, rlx.MinOp, rlx.PowOp]
REDUCE = [rlx.ReduceSumOp, rlx.ReduceMeanOp, rlx.ReduceMaxOp, rlx.ReduceMinOp]


def t(shape: Sequence[int], element: Attribute = f32) -> TensorType:
    return TensorType(element, list(shape))


def v(shape: Sequence[int], element: Attribute = f32) -> SSAValue:
    """A free SSA value of tensor type."""
    return create_ssa_value(t(shape, element))


def result_type(op: Operation) -> Attribute:
    """The inferred result type of a freshly built op, after verifying it."""
    op.verify()
    (result,) = op.results
    return result.type


def with_result(op: Operation, result: Attribute) -> Operation:
    """A copy of `op` (same operands and properties) declaring another result
    type, as a parser would build it from text."""
    return type(op).create(
        operands=list(op.operands),
        result_types=[result],
        properties=dict(op.properties),
    )


def rejected(build: Callable[[], Operation], match: str) -> None:
    """Building the op or verifying it raises a VerifyException matching
    `match` (builders infer the result type, so bad operands fail early)."""
    with pytest.raises(VerifyException, match=match):
        build().verify()


# --- the dialect -------------------------------------------------------------


def test_dialect_lists_exactly_the_design_ops():
    names = {op.name for op in rlx.RLX.operations}
    assert names == {f"rlx.{name}" for name in DESIGN_OPS}
    assert rlx.RLX.name == "rlx"


def test_dialect_ops_have_distinct_classes():
    ops = list(rlx.RLX.operations)
    assert len(ops) == len(set(ops)) == len(DESIGN_OPS)


@pytest.mark.parametrize(
    "op, properties, match",
    [
        (
            rlx.ReduceSumOp,
            {
                "axes": DenseArrayBase.from_list(i64, [1]),
                "keep_dims": FloatAttr(1.0, f32),
            },
            r"rlx\.reduce_sum: property 'keep_dims' must be a bool",
        ),
        (
            rlx.ReduceSumOp,
            {"axes": DenseArrayBase.from_list(f32, [1.0])},
            r"rlx\.reduce_sum: property 'axes' must be an i64 array",
        ),
        (
            rlx.SoftmaxOp,
            {"axis": FloatAttr(1.0, f32)},
            r"rlx\.softmax: property 'axis' must be an i64 integer",
        ),
    ],
)
def test_property_of_the_wrong_kind_names_the_op_and_the_property(
    op, properties, match
):
    """As mil's do; IRDL's own message (`Expected attribute i64 but got f32`)
    names neither."""
    built = op.create(
        operands=[v([2, 4])], result_types=[t([2, 4])], properties=properties
    )
    rejected(lambda: built, match)


# --- sources -----------------------------------------------------------------


def test_constant_takes_the_type_of_its_value():
    value = DenseIntOrFPElementsAttr.from_list(t([2, 3], i32), list(range(6)))
    assert result_type(rlx.ConstantOp(value)) == t([2, 3], i32)


def test_constant_rejects_other_result_type():
    value = DenseIntOrFPElementsAttr.from_list(t([2], f16), [1.0, 2.0])
    op = with_result(rlx.ConstantOp(value), t([2], f32))
    rejected(
        lambda: op,
        r"rlx\.constant: result type \[2\] f32 does not match the inferred type "
        r"\[2\] f16",
    )


def test_param_has_declared_type_and_a_name():
    op = rlx.ParamOp("layers.0.mlp.w1", t([64, 16], f16))
    assert result_type(op) == t([64, 16], f16)
    assert op.param_name.data == "layers.0.mlp.w1"
    rejected(
        lambda: rlx.ParamOp("", t([4])),
        r"rlx\.param: property 'name' must not be empty",
    )
    rejected(
        lambda: rlx.ParamOp("w", t([DYNAMIC_INDEX, 4])),
        r"rlx\.param: .*dynamic shape tensor<\?x4xf32>",
    )


# --- elementwise -------------------------------------------------------------


@pytest.mark.parametrize("cls", UNARY, ids=lambda c: c.name)
def test_unary_keeps_type_and_wants_floats(cls):
    assert result_type(cls(v([2, 8], f16))) == t([2, 8], f16)
    assert result_type(cls(v([], f32))) == t([], f32)
    rejected(
        lambda: cls(v([4], i32)),
        rf"{cls.name}: operand 'input' must have a float element type \(f16 or "
        r"f32\), got i32",
    )


@pytest.mark.parametrize("cls", BINARY, ids=lambda c: c.name)
@pytest.mark.parametrize(
    "lhs, rhs, expected",
    [
        ([2, 8], [2, 8], [2, 8]),
        ([4, 1, 8], [8], [4, 1, 8]),
        ([4, 1, 8], [3, 1], [4, 3, 8]),
        ([], [5, 6], [5, 6]),
        ([1, 6], [5, 1], [5, 6]),
    ],
)
def test_binary_broadcasts_like_numpy(cls, lhs, rhs, expected):
    assert result_type(cls(v(lhs), v(rhs))) == t(expected)


@pytest.mark.parametrize("cls", BINARY, ids=lambda c: c.name)
def test_binary_rejects_non_broadcastable_shapes(cls):
    rejected(
        lambda: cls(v([2, 8]), v([3])),
        rf"{cls.name}: operand shapes do not broadcast: 'lhs' \[2, 8\], 'rhs' \[3\]",
    )


@pytest.mark.parametrize("cls", BINARY, ids=lambda c: c.name)
def test_binary_rejects_wrong_result_and_mixed_types(cls):
    op = with_result(cls(v([4, 1]), v([1, 5])), t([4, 1]))
    rejected(
        lambda: op,
        rf"{cls.name}: result type \[4, 1\] f32 does not match the inferred type "
        r"\[4, 5\] f32",
    )
    rejected(
        lambda: cls(v([4], f32), v([4], f16)),
        rf"{cls.name}: operands 'lhs' \(f32\) and 'rhs' \(f16\) must have the same "
        "element type",
    )


def test_integer_arithmetic_but_float_pow():
    assert result_type(rlx.SubOp(v([2, 3], i32), v([3], i32))) == t([2, 3], i32)
    rejected(
        lambda: rlx.PowOp(v([3], i32), v([3], i32)),
        r"rlx\.pow: operand 'lhs' must have a float element type",
    )
    rejected(lambda: rlx.AddOp(v([3], i1), v([3], i1)), r"rlx\.add: .*i1")


@pytest.mark.parametrize("predicate", COMPARE)
def test_compare_gives_i1_of_the_broadcast_shape(predicate):
    op = rlx.CompareOp(v([4, 1], i32), v([6], i32), predicate)
    assert result_type(op) == t([4, 6], i1)
    assert op.predicate.data == predicate


def test_compare_rejects_unknown_predicate():
    rejected(
        lambda: rlx.CompareOp(v([4]), v([4]), "lte"),
        r'rlx\.compare: property \'predicate\' is "lte", expected one of "eq", '
        r'"ne", "lt", "le", "gt", "ge"',
    )


def test_where_broadcasts_all_three_operands():
    op = rlx.WhereOp(v([1, 1, 4, 4], i1), v([2, 3, 4, 4]), v([]))
    assert result_type(op) == t([2, 3, 4, 4])
    rejected(
        lambda: rlx.WhereOp(v([4], f32), v([4]), v([4])),
        r"rlx\.where: operand 'cond' must be i1, got f32",
    )
    rejected(
        lambda: rlx.WhereOp(v([5, 5], i1), v([2, 1, 5, 5]), v([4])),
        r"rlx\.where: operand shapes do not broadcast: 'cond' \[5, 5\], 'on_true' "
        r"\[2, 1, 5, 5\], 'on_false' \[4\]",
    )


def test_cast_changes_element_type_only():
    assert result_type(rlx.CastOp(v([2, 8]), f16)) == t([2, 8], f16)
    assert result_type(rlx.CastOp(v([4], i1), f32)) == t([4], f32)
    op = with_result(rlx.CastOp(v([2, 8]), f16), t([16], f16))
    rejected(
        lambda: op, r"rlx\.cast: result shape \[16\] differs from input shape \[2, 8\]"
    )


@pytest.mark.parametrize(
    "build",
    [
        lambda x: rlx.ReluOp(x),
        lambda x: rlx.AddOp(x, x),
        lambda x: rlx.SoftmaxOp(x),
        lambda x: rlx.ReduceSumOp(x, [0]),
    ],
    ids=["relu", "add", "softmax", "reduce_sum"],
)
def test_dynamic_shapes_and_unsupported_elements_are_rejected(build):
    rejected(
        lambda: build(v([DYNAMIC_INDEX, 4])),
        r"operand '(input|lhs)' has a dynamic shape tensor<\?x4xf32>; only static "
        "shapes are supported",
    )
    rejected(
        lambda: build(v([2, 4], f64)),
        r"operand '(input|lhs)' has unsupported element type f64",
    )


# --- linear algebra and shape ------------------------------------------------


@pytest.mark.parametrize(
    "lhs, rhs, transpose_lhs, transpose_rhs, expected",
    [
        ([4, 16], [16, 32], None, None, [4, 32]),
        ([4, 16], [32, 16], None, True, [4, 32]),
        ([16, 4], [16, 32], True, None, [4, 32]),
        ([16, 4], [32, 16], True, True, [4, 32]),
        ([4, 16], [16, 32], False, False, [4, 32]),
        ([2, 8, 5, 16], [2, 8, 7, 16], None, True, [2, 8, 5, 7]),
        ([2, 8, 5, 16], [16, 3], None, None, [2, 8, 5, 3]),
        ([3, 1, 4, 6], [5, 6, 2], None, None, [3, 5, 4, 2]),
        ([4, 6], [7, 6, 2], None, None, [7, 4, 2]),
    ],
)
def test_matmul_infers_numpy_shapes(lhs, rhs, transpose_lhs, transpose_rhs, expected):
    op = rlx.MatmulOp(v(lhs), v(rhs), transpose_lhs, transpose_rhs)
    assert result_type(op) == t(expected)


def test_matmul_transpose_flags_are_optional_properties():
    assert "transpose_rhs" not in rlx.MatmulOp(v([4, 8]), v([8, 2])).properties
    op = rlx.MatmulOp(v([4, 8]), v([2, 8]), transpose_rhs=True)
    assert op.properties["transpose_rhs"] == IntegerAttr(1, i1)


def test_matmul_rejects_contraction_mismatch():
    rejected(
        lambda: rlx.MatmulOp(v([4, 16]), v([8, 32])),
        r"rlx\.matmul: contraction dimensions differ: operand 'lhs' \[4, 16\] and operand 'rhs' "
        r"\[8, 32\]",
    )
    rejected(
        lambda: rlx.MatmulOp(v([4, 16]), v([16, 32]), transpose_rhs=True),
        r"rlx\.matmul: contraction dimensions differ: operand 'lhs' \[4, 16\] and operand 'rhs' "
        r"\[16, 32\] \(after transposes \[4, 16\] x \[32, 16\]\)",
    )
    rejected(
        lambda: rlx.MatmulOp(v([16]), v([16, 32])),
        r"rlx\.matmul: operand 'lhs' must have rank >= 2, got shape \[16\]",
    )


def test_matmul_rejects_wrong_result():
    op = with_result(rlx.MatmulOp(v([2, 4, 8]), v([8, 5])), t([4, 5]))
    rejected(
        lambda: op,
        r"rlx\.matmul: result type \[4, 5\] f32 does not match the inferred type "
        r"\[2, 4, 5\] f32",
    )


def test_reshape_and_expand_take_the_shape_from_the_builder():
    assert result_type(rlx.ReshapeOp(v([2, 3, 4], i32), [6, 4])) == t([6, 4], i32)
    assert result_type(rlx.ExpandOp(v([1, 4]), [3, 2, 4])) == t([3, 2, 4])
    assert result_type(rlx.ExpandOp(v([]), [2, 2])) == t([2, 2])
    rejected(
        lambda: rlx.ReshapeOp(v([2, 3, 4]), [5, 5]),
        r"rlx\.reshape: cannot reshape operand 'input' \[2, 3, 4\] \(24 elements\) "
        r"to \[5, 5\] \(25 elements\)",
    )
    rejected(
        lambda: rlx.ExpandOp(v([3, 4]), [2, 4]),
        r"rlx\.expand: operand 'input' \[3, 4\] does not broadcast to \[2, 4\]",
    )
    rejected(
        lambda: rlx.ExpandOp(v([1, 1, 4]), [3, 4]),
        r"rlx\.expand: operand 'input' \[1, 1, 4\] does not broadcast to \[3, 4\]",
    )


def test_transpose_permutes_axes():
    op = rlx.TransposeOp(v([2, 3, 4, 5]), [0, 2, 1, 3])
    assert result_type(op) == t([2, 4, 3, 5])
    assert op.perm == DenseArrayBase.from_list(i64, [0, 2, 1, 3])
    for perm in ([0, 2, 2], [1, 0], [0, 1, 3]):
        rejected(
            lambda perm=perm: rlx.TransposeOp(v([2, 3, 4]), perm),
            rf"rlx\.transpose: perm \[{', '.join(map(str, perm))}\] is not a "
            r"permutation of the axes of operand 'input' \[2, 3, 4\]",
        )


@pytest.mark.parametrize(
    "axis, start, length, expected",
    [(1, 0, 4, [2, 4, 8]), (-1, 6, 2, [2, 10, 2]), (0, 1, 1, [1, 10, 8])],
)
def test_narrow_slices_one_axis(axis, start, length, expected):
    assert result_type(rlx.NarrowOp(v([2, 10, 8]), axis, start, length)) == t(expected)


def test_narrow_rejects_out_of_bounds():
    rejected(
        lambda: rlx.NarrowOp(v([2, 10]), 1, 8, 4),
        r"rlx\.narrow: slice \[8, 12\) is out of bounds for axis 1 of operand "
        r"'input' \[2, 10\]",
    )
    rejected(
        lambda: rlx.NarrowOp(v([2, 10]), -1, -1, 1),
        r"rlx\.narrow: slice \[-1, 0\) is out of bounds",
    )
    rejected(
        lambda: rlx.NarrowOp(v([2, 10]), 2, 0, 1),
        r"rlx\.narrow: property 'axis' value 2 is out of range \[-2, 2\) \(rank 2\)",
    )


def test_concat_joins_along_axis():
    op = rlx.ConcatOp([v([2, 3]), v([4, 3]), v([2, 3])], -2)
    assert result_type(op) == t([8, 3])
    assert result_type(rlx.ConcatOp([v([2, 3]), v([2, 5])], 1)) == t([2, 8])
    assert result_type(rlx.ConcatOp([v([1], i32)], 0)) == t([1], i32)
    rejected(
        lambda: rlx.ConcatOp([v([2, 3]), v([4, 5])], 1),
        r"rlx\.concat: operand 'inputs#1' \[4, 5\] must match operand 'inputs#0' "
        r"\[2, 3\] in all dimensions but the axis \(axis 1\)",
    )
    rejected(lambda: rlx.ConcatOp([], 0), r"rlx\.concat: expects at least one input")


@pytest.mark.parametrize(
    "table, indices, axis, expected",
    [
        ([2048, 64], [4, 7], 0, [4, 7, 64]),
        ([2048, 64], [], 0, [64]),
        ([3, 5, 6], [2], 1, [3, 2, 6]),
        ([3, 5, 6], [4, 7], -1, [3, 5, 4, 7]),
    ],
)
def test_gather_is_numpy_take(table, indices, axis, expected):
    op = rlx.GatherOp(v(table, f16), v(indices, i32), axis)
    assert result_type(op) == t(expected, f16)


def test_gather_rejects_non_i32_indices_and_wrong_result():
    for element in (i8, f32):
        rejected(
            lambda element=element: rlx.GatherOp(v([2048, 64]), v([4], element)),
            rf"rlx\.gather: operand 'indices' must be i32, got {element}",
        )
    op = with_result(rlx.GatherOp(v([32000, 2048]), v([4], i32)), t([4, 2047]))
    rejected(
        lambda: op,
        r"rlx\.gather: result type \[4, 2047\] f32 does not match the inferred type "
        r"\[4, 2048\] f32",
    )


# --- reductions and normalization -------------------------------------------


@pytest.mark.parametrize("cls", REDUCE, ids=lambda c: c.name)
@pytest.mark.parametrize(
    "axes, keep_dims, expected",
    [
        ([2], None, [2, 3]),
        ([-1], True, [2, 3, 1]),
        ([0, 2], False, [3]),
        ([2, -3], True, [1, 3, 1]),
        ([0, 1, 2], None, []),
    ],
)
def test_reductions(cls, axes, keep_dims, expected):
    op = cls(v([2, 3, 4]), axes, keep_dims)
    assert result_type(op) == t(expected)
    assert ("keep_dims" in op.properties) == (keep_dims is not None)


@pytest.mark.parametrize("cls", REDUCE, ids=lambda c: c.name)
def test_reductions_reject_bad_axes(cls):
    rejected(
        lambda: cls(v([2, 3, 4]), [3]),
        rf"{cls.name}: property 'axes' value 3 is out of range \[-3, 3\) \(rank 3\)",
    )
    rejected(
        lambda: cls(v([2, 3, 4]), [1, -2]),
        rf"{cls.name}: property 'axes' \[1, -2\] repeats an axis",
    )
    rejected(lambda: cls(v([2, 3]), []), rf"{cls.name}: axes must not be empty")


def test_softmax_axis_defaults_to_last():
    op = rlx.SoftmaxOp(v([2, 4, 5], f16))
    assert result_type(op) == t([2, 4, 5], f16)
    assert "axis" not in op.properties
    assert result_type(rlx.SoftmaxOp(v([2, 4, 5]), -3)) == t([2, 4, 5])
    rejected(
        lambda: rlx.SoftmaxOp(v([2, 8]), 2),
        r"rlx\.softmax: property 'axis' value 2 is out of range \[-2, 2\) \(rank 2\)",
    )


def test_norms_keep_the_input_type():
    x = v([2, 5, 64])
    op = rlx.RmsNormOp(x, v([64]), 1e-6)
    assert result_type(op) == t([2, 5, 64])
    assert op.eps == FloatAttr(1e-6, f32)
    assert result_type(rlx.LayerNormOp(x, v([64]), v([64]), 1e-5)) == t([2, 5, 64])


def test_norms_reject_bad_parameter_shapes():
    rejected(
        lambda: rlx.RmsNormOp(v([2, 5, 64]), v([32]), 1e-6),
        r"rlx\.rms_norm: operand 'gamma' \[32\] must be \[64\] for operand 'input' "
        r"\[2, 5, 64\]",
    )
    rejected(
        lambda: rlx.LayerNormOp(v([4, 32]), v([32]), v([4]), 1e-5),
        r"rlx\.layer_norm: operand 'beta' \[4\] must be \[32\] for operand 'input' "
        r"\[4, 32\]",
    )
    rejected(
        lambda: rlx.RmsNormOp(v([2, 64], f16), v([64], f32), 1e-6),
        r"rlx\.rms_norm: operands 'input' \(f16\) and 'gamma' \(f32\) must have the "
        "same element type",
    )


# --- rotary embedding --------------------------------------------------------


@pytest.mark.parametrize("cls", [rlx.RopeOp, rlx.RopeBackwardOp], ids=lambda c: c.name)
def test_rope_shapes(cls):
    operand = "input" if cls is rlx.RopeOp else "d_out"
    for style in ROPE:
        op = cls(v([1, 8, 16, 64]), v([16, 32]), v([16, 32]), style)
        assert result_type(op) == t([1, 8, 16, 64])
    rejected(
        lambda: cls(v([1, 2, 4, 7]), v([4, 3]), v([4, 3])),
        rf"{cls.name}: operand '{operand}' \[1, 2, 4, 7\] needs an even head "
        "dimension",
    )
    rejected(
        lambda: cls(v([1, 2, 4, 8]), v([4, 8]), v([4, 4])),
        rf"{cls.name}: operand 'cos' \[4, 8\] must be \[4, 4\] for operand "
        rf"'{operand}' \[1, 2, 4, 8\]",
    )
    rejected(
        lambda: cls(v([1, 2, 4, 8]), v([4, 4]), v([4, 4]), "neox"),
        rf'{cls.name}: property \'style\' is "neox", expected one of "half", '
        '"interleaved"',
    )


# --- attention ---------------------------------------------------------------


def test_attention_output_has_query_heads_and_value_dim():
    q, k, v_ = v([2, 8, 3, 16], f16), v([2, 2, 7, 16], f16), v([2, 2, 7, 32], f16)
    op = rlx.AttentionOp(q, k, v_, mask="causal")
    assert result_type(op) == t([2, 8, 3, 32], f16)
    assert op.mask == StringAttr("causal")
    assert op.scale is None


def test_attention_bias_implies_bias_mask():
    q = v([1, 4, 5, 16])
    op = rlx.AttentionOp(q, q, q, v([1, 1, 5, 5]), scale=0.125)
    assert result_type(op) == t([1, 4, 5, 16])
    assert op.mask == StringAttr("bias")
    assert op.scale == FloatAttr(0.125, f32)
    assert rlx.attention_scale(op) == 0.125
    assert rlx.attention_scale(rlx.AttentionOp(q, q, q)) == 0.25


def test_attention_rejects_bad_heads_and_masks():
    q, kv = v([1, 6, 5, 16]), v([1, 4, 5, 16])
    rejected(
        lambda: rlx.AttentionOp(q, kv, kv),
        r"rlx\.attention: query heads \(6, operand 'q'\) must be a multiple of "
        r"key/value heads \(4, operand 'k'\)",
    )
    q = v([1, 4, 5, 16])
    rejected(
        lambda: rlx.AttentionOp(q, q, q, mask="bias"),
        r"rlx\.attention: mask \"bias\" needs the operand 'bias'",
    )
    rejected(
        lambda: rlx.AttentionOp(q, q, q, v([1, 1, 5, 5]), mask="none"),
        r"rlx\.attention: operand 'bias' is given but mask is \"none\"",
    )
    rejected(
        lambda: rlx.AttentionOp(q, q, q, v([2, 1, 5, 5])),
        r"rlx\.attention: operand 'bias' \[2, 1, 5, 5\] does not broadcast to the "
        r"scores \[1, 4, 5, 5\]",
    )
    rejected(
        lambda: rlx.AttentionOp(q, v([1, 4, 5, 8]), q),
        r"rlx\.attention: operand 'k' \[1, 4, 5, 8\] must be \[1, Hkv, Skv, 16\] for "
        r"operand 'q' \[1, 4, 5, 16\]",
    )


@pytest.mark.parametrize(
    "wrt, expected",
    [("query", [2, 6, 3, 8]), ("key", [2, 2, 4, 8]), ("value", [2, 2, 4, 16])],
)
def test_attention_backward_result_per_wrt(wrt, expected):
    q, k, v_ = v([2, 6, 3, 8]), v([2, 2, 4, 8]), v([2, 2, 4, 16])
    d_out = v([2, 6, 3, 16])
    op = rlx.AttentionBackwardOp(q, k, v_, d_out, wrt, mask="causal")
    assert result_type(op) == t(expected)
    assert op.wrt == StringAttr(wrt)


def test_attention_backward_rejects_bad_wrt_result_and_d_out():
    q, kv = v([2, 6, 3, 8]), v([2, 2, 4, 8])
    rejected(
        lambda: rlx.AttentionBackwardOp(q, kv, kv, q, "q"),
        r'rlx\.attention_backward: property \'wrt\' is "q", expected one of '
        r'"query", "key", "value"',
    )
    op = with_result(rlx.AttentionBackwardOp(q, kv, kv, q, "key"), t([2, 6, 4, 8]))
    rejected(
        lambda: op,
        r"rlx\.attention_backward: result type \[2, 6, 4, 8\] f32 does not match the "
        r"inferred type \[2, 2, 4, 8\] f32",
    )
    rejected(
        lambda: rlx.AttentionBackwardOp(q, kv, kv, v([2, 2, 3, 8]), "value"),
        r"rlx\.attention_backward: operand 'd_out' \[2, 2, 3, 8\] must be "
        r"\[2, 6, 3, 8\]",
    )


# --- loss and training -------------------------------------------------------


@pytest.mark.parametrize("labels", [i32, f32, f16])
def test_cross_entropy_shapes(labels):
    logits = v([6, 100])
    loss = rlx.SoftmaxCrossEntropyOp(logits, v([6], labels))
    assert result_type(loss) == t([6])
    grad = rlx.SoftmaxCrossEntropyBackwardOp(logits, v([6], labels), v([6]))
    assert result_type(grad) == t([6, 100])


def test_cross_entropy_rejects_bad_labels_and_d_loss():
    logits = v([6, 100])
    rejected(
        lambda: rlx.SoftmaxCrossEntropyOp(logits, v([5], i32)),
        r"rlx\.softmax_cross_entropy: operand 'labels' \[5\] must be \[6\] for "
        r"operand 'logits' \[6, 100\]",
    )
    rejected(
        lambda: rlx.SoftmaxCrossEntropyOp(logits, v([6], i8)),
        r"rlx\.softmax_cross_entropy: operand 'labels' must be i32 or a float type "
        "holding class indices, got i8",
    )
    rejected(
        lambda: rlx.SoftmaxCrossEntropyBackwardOp(logits, v([6], i32), v([6, 100])),
        r"rlx\.softmax_cross_entropy_backward: operand 'd_loss' \[6, 100\] must be "
        r"\[6\] for operand 'logits' \[6, 100\]",
    )


def test_rms_norm_backward_shapes():
    x, dy = v([2, 5, 64]), v([2, 5, 64])
    op = rlx.RmsNormBackwardInputOp(x, v([64]), dy, 1e-6)
    assert result_type(op) == t([2, 5, 64])
    assert result_type(rlx.RmsNormBackwardGammaOp(x, dy, 1e-6)) == t([64])
    rejected(
        lambda: rlx.RmsNormBackwardGammaOp(x, v([2, 5, 32]), 1e-6),
        r"rlx\.rms_norm_backward_gamma: operand 'd_out' \[2, 5, 32\] must have the "
        r"shape of operand 'input' \[2, 5, 64\]",
    )
    rejected(
        lambda: rlx.RmsNormBackwardInputOp(x, v([5]), dy, 1e-6),
        r"rlx\.rms_norm_backward_input: operand 'gamma' \[5\] must be \[64\]",
    )


@pytest.mark.parametrize("kind", KINDS)
def test_activation_backward_kinds(kind):
    op = rlx.ActivationBackwardOp(v([4, 32], f16), v([4, 32], f16), kind)
    assert result_type(op) == t([4, 32], f16)


def test_activation_backward_rejects_bad_kind_and_d_out():
    rejected(
        lambda: rlx.ActivationBackwardOp(v([4]), v([4]), "softmax"),
        r"rlx\.activation_backward: property 'kind' is \"softmax\", expected one of",
    )
    rejected(
        lambda: rlx.ActivationBackwardOp(v([4, 32]), v([32]), "silu"),
        r"rlx\.activation_backward: operand 'd_out' \[32\] must have the shape of "
        r"operand 'input' \[4, 32\]",
    )


# --- quantization ------------------------------------------------------------


def test_quantize_and_dequantize_types():
    q = rlx.QuantizeOp(v([4, 32], f16), 0.125, -3)
    assert result_type(q) == t([4, 32], i8)
    assert q.zero_point == IntegerAttr(-3, i64)
    assert result_type(rlx.DequantizeOp(v([4, 32], i8), 0.5)) == t([4, 32], f32)
    dq = rlx.DequantizeOp(v([4, 32], i8), 0.5, 3, f16)
    assert result_type(dq) == t([4, 32], f16)


@pytest.mark.parametrize(
    "scale, zero_point, match",
    [
        (0.1, 128, "zero_point 128 is outside the int8 range"),
        (0.1, -129, "zero_point -129 is outside the int8 range"),
        (0.0, 0, r"scale 0\.0 must be a positive finite number"),
        (-0.5, 0, r"scale -0\.5 must be a positive finite number"),
        (float("inf"), 0, "scale inf must be a positive finite number"),
    ],
)
def test_quantization_parameters_are_checked(scale, zero_point, match):
    rejected(
        lambda: rlx.QuantizeOp(v([4]), scale, zero_point), r"rlx\.quantize: " + match
    )
    rejected(
        lambda: rlx.DequantizeOp(v([4], i8), scale, zero_point),
        r"rlx\.dequantize: " + match,
    )


def test_dequantize_needs_i8_input():
    rejected(
        lambda: rlx.DequantizeOp(v([4, 32], i32), 0.5),
        r"rlx\.dequantize: operand 'input' must be i8, got i32",
    )
    rejected(
        lambda: rlx.DequantizeOp(v([4, 32], i8), 0.5, 0, i32),
        r"rlx\.dequantize: result type tensor<4x32xi32> must be an f16 or f32 tensor",
    )


# --- enum properties ---------------------------------------------------------


def rope_args() -> list[SSAValue]:
    return [v([1, 2, 4, 8]), v([4, 4]), v([4, 4])]


def attention(mask: str) -> rlx.AttentionOp:
    q, kv = v([1, 2, 3, 8]), v([1, 1, 5, 8])
    bias = v([1, 1, 3, 5]) if mask == "bias" else None
    return rlx.AttentionOp(q, kv, kv, bias, mask=mask)


def attention_backward(wrt: str) -> rlx.AttentionBackwardOp:
    q, kv = v([1, 2, 3, 8]), v([1, 1, 5, 8])
    return rlx.AttentionBackwardOp(q, kv, kv, q, wrt)


@pytest.mark.parametrize(
    "prop, allowed, build",
    [
        ("predicate", COMPARE, lambda s: rlx.CompareOp(v([4]), v([4]), s)),
        ("style", ROPE, lambda s: rlx.RopeOp(*rope_args(), s)),
        ("style", ROPE, lambda s: rlx.RopeBackwardOp(*rope_args(), s)),
        ("mask", MASKS, attention),
        ("wrt", WRT, attention_backward),
        ("kind", KINDS, lambda s: rlx.ActivationBackwardOp(v([4]), v([4]), s)),
    ],
    ids=[
        "compare",
        "rope",
        "rope_backward",
        "attention",
        "attention_backward",
        "activation_backward",
    ],
)
def test_enum_properties_accept_exactly_the_documented_values(prop, allowed, build):
    for value in allowed:
        op = build(value)
        op.verify()
        assert op.properties[prop] == StringAttr(value)
    for value in ("", "Half", "bogus"):
        rejected(lambda value=value: build(value), rf"property '{prop}' is \"{value}\"")

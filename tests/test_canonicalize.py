"""xDSL's `canonicalize` on mil programs (patterns in
`xdsl_ane.passes.canonicalization`), checked by numbers: each function is
interpreted before and after on the same random inputs and weights, and the
results must be identical (every pattern only moves data or evaluates an op
with the interpreter's own implementation). Each case also states which ops
remain, and a second canonicalize changes nothing. Random chains of
transposes, reshapes and elementwise ops (hypothesis) close the file.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from canonicalize_check import (
    arange_weights,
    build_module,
    check_same,
    check_text,
    consts,
    mil_ops,
    parse,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import ModuleOp, TensorType, f16, f32
from xdsl.ir import Operation, SSAValue
from xdsl.traits import HasCanonicalizationPatternsTrait

from xdsl_ane.dialects import mil
from xdsl_ane.dialects.dense import dense_from_numpy
from xdsl_ane.dialects.typing import tensor
from xdsl_ane.passes import canonicalization as canon

# --- registration ----------------------------------------------------------------


@pytest.mark.parametrize(
    "op_type, pattern",
    [
        (mil.TransposeOp, canon.ComposeTransposes),
        (mil.TransposeOp, canon.RemoveIdentityTranspose),
        (mil.TransposeOp, canon.FoldTransposeOfWeight),
        (mil.ReshapeOp, canon.ComposeReshapes),
        (mil.ReshapeOp, canon.RemoveIdentityReshape),
        (mil.ReshapeOp, canon.FoldReshapeOfWeight),
        (mil.ReluOp, canon.SinkLayoutThroughElementwise),
        (mil.RsqrtOp, canon.SinkLayoutThroughElementwise),
        (mil.AddOp, canon.SinkLayoutThroughElementwise),
        (mil.LessOp, canon.SinkLayoutThroughElementwise),
        (mil.SelectOp, canon.SinkLayoutThroughElementwise),
        (mil.CastOp, canon.SinkLayoutThroughElementwise),
        (mil.ConcatOp, canon.ConcatInSourceView),
        (mil.ConcatOp, canon.DropEmptyConcatOperands),
    ],
)
def test_patterns_registered_on_op(op_type: type[Operation], pattern: type) -> None:
    """The stock canonicalize pass finds each pattern through the op's traits."""
    traits = op_type.get_traits_of_type(HasCanonicalizationPatternsTrait)
    found = [p for t in traits for p in t.get_patterns(op_type)]
    assert any(isinstance(p, pattern) for p in found)


def test_matmul_is_not_sunk_through() -> None:
    traits = mil.MatmulOp.get_traits_of_type(HasCanonicalizationPatternsTrait)
    found = [p for t in traits for p in t.get_patterns(mil.MatmulOp)]
    assert not any(isinstance(p, canon.SinkLayoutThroughElementwise) for p in found)


# --- transpose and reshape chains --------------------------------------------------


def test_transpose_chain_composes() -> None:
    check_text(
        """
        func.func @f(%x: tensor<2x3x4x5xf32>) -> (tensor<5x3x2x4xf32>, tensor<2x3x4x5xf32>) {
          %a = mil.transpose %x {perm = array<i64: 3, 0, 1, 2>} : (tensor<2x3x4x5xf32>) -> tensor<5x2x3x4xf32>
          %b = mil.transpose %a {perm = array<i64: 0, 2, 1, 3>} : (tensor<5x2x3x4xf32>) -> tensor<5x3x2x4xf32>
          %c = mil.transpose %b {perm = array<i64: 2, 1, -1, 0>} : (tensor<5x3x2x4xf32>) -> tensor<2x3x4x5xf32>
          func.return %b, %c : tensor<5x3x2x4xf32>, tensor<2x3x4x5xf32>
        }
        """,
        {"transpose": 1},
    )


def test_reshape_chain_composes() -> None:
    check_text(
        """
        func.func @f(%x: tensor<2x3x4xf16>) -> (tensor<4x6xf16>, tensor<2x3x4xf16>) {
          %a = mil.reshape %x {shape = array<i64: 6, 4>} : (tensor<2x3x4xf16>) -> tensor<6x4xf16>
          %b = mil.reshape %a {shape = array<i64: -1, 0>} : (tensor<6x4xf16>) -> tensor<6x4xf16>
          %c = mil.reshape %b {shape = array<i64: 24>} : (tensor<6x4xf16>) -> tensor<24xf16>
          %d = mil.reshape %c {shape = array<i64: 4, 6>} : (tensor<24xf16>) -> tensor<4x6xf16>
          %e = mil.reshape %d {shape = array<i64: 2, 3, 4>} : (tensor<4x6xf16>) -> tensor<2x3x4xf16>
          func.return %d, %e : tensor<4x6xf16>, tensor<2x3x4xf16>
        }
        """,
        {"reshape": 1},
    )


def test_mixed_chain_keeps_what_does_not_cancel() -> None:
    check_text(
        """
        func.func @f(%x: tensor<6x4xi32>) -> tensor<3x8xi32> {
          %a = mil.transpose %x {perm = array<i64: 1, 0>} : (tensor<6x4xi32>) -> tensor<4x6xi32>
          %b = mil.transpose %a {perm = array<i64: 1, 0>} : (tensor<4x6xi32>) -> tensor<6x4xi32>
          %c = mil.reshape %b {shape = array<i64: 4, 6>} : (tensor<6x4xi32>) -> tensor<4x6xi32>
          %d = mil.transpose %c {perm = array<i64: 1, 0>} : (tensor<4x6xi32>) -> tensor<6x4xi32>
          %e = mil.reshape %d {shape = array<i64: 3, 8>} : (tensor<6x4xi32>) -> tensor<3x8xi32>
          func.return %e : tensor<3x8xi32>
        }
        """,
        {"reshape": 2, "transpose": 1},
    )


# --- layout ops across elementwise ops ---------------------------------------------


def test_transposes_sink_and_cancel() -> None:
    """An ANE-style round trip: [1, C, 1, S] -> [S, C], elementwise work with
    a row-broadcast operand of the same layout and a scalar, and back."""
    check_text(
        """
        func.func @f(%x: tensor<1x8x1x5xf32>, %y: tensor<1x8x1x1xf32>) -> tensor<1x8x1x5xf32> {
          %t = mil.transpose %x {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x8x1x5xf32>) -> tensor<1x1x5x8xf32>
          %u = mil.transpose %y {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x8x1x1xf32>) -> tensor<1x1x1x8xf32>
          %h = mil.const dense<0.5> : tensor<f32>
          %a = mil.mul %t, %u : (tensor<1x1x5x8xf32>, tensor<1x1x1x8xf32>) -> tensor<1x1x5x8xf32>
          %b = mil.sub %h, %a : (tensor<f32>, tensor<1x1x5x8xf32>) -> tensor<1x1x5x8xf32>
          %g = mil.gelu %b {mode = "TANH_APPROXIMATION"} : tensor<1x1x5x8xf32>
          %c = mil.clip %g {alpha = -1.0 : f32, beta = 1.0 : f32} : tensor<1x1x5x8xf32>
          %back = mil.transpose %c {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x1x5x8xf32>) -> tensor<1x8x1x5xf32>
          func.return %back : tensor<1x8x1x5xf32>
        }
        """,
        {"mul": 1, "sub": 1, "gelu": 1, "clip": 1},
    )


def test_reshapes_sink_and_cancel() -> None:
    check_text(
        """
        func.func @f(%x: tensor<1x16x1x4xf16>, %y: tensor<1x16x1x4xf16>) -> tensor<1x16x1x4xf16> {
          %a = mil.reshape %x {shape = array<i64: 4, 4, 4>} : (tensor<1x16x1x4xf16>) -> tensor<4x4x4xf16>
          %b = mil.reshape %y {shape = array<i64: 4, 4, 4>} : (tensor<1x16x1x4xf16>) -> tensor<4x4x4xf16>
          %one = mil.const dense<1.0> : tensor<1xf16>
          %s = mil.add %a, %one : (tensor<4x4x4xf16>, tensor<1xf16>) -> tensor<4x4x4xf16>
          %m = mil.maximum %s, %b : (tensor<4x4x4xf16>, tensor<4x4x4xf16>) -> tensor<4x4x4xf16>
          %r = mil.inverse %m : tensor<4x4x4xf16>
          %back = mil.reshape %r {shape = array<i64: 1, 16, 1, 4>} : (tensor<4x4x4xf16>) -> tensor<1x16x1x4xf16>
          func.return %back : tensor<1x16x1x4xf16>
        }
        """,
        {"add": 1, "maximum": 1, "inverse": 1},
    )


def test_layout_sinks_through_compare_select_cast() -> None:
    check_text(
        """
        func.func @f(%x: tensor<3x4xf32>, %y: tensor<3x4xf32>, %z: tensor<3x4xf32>) -> tensor<3x4xi32> {
          %tx = mil.transpose %x {perm = array<i64: 1, 0>} : (tensor<3x4xf32>) -> tensor<4x3xf32>
          %ty = mil.transpose %y {perm = array<i64: 1, 0>} : (tensor<3x4xf32>) -> tensor<4x3xf32>
          %tz = mil.transpose %z {perm = array<i64: 1, 0>} : (tensor<3x4xf32>) -> tensor<4x3xf32>
          %zero = mil.const dense<0.0> : tensor<f32>
          %c = mil.less %tx, %zero : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xi1>
          %s = mil.select %c, %ty, %tz : (tensor<4x3xi1>, tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
          %i = mil.cast %s {dtype = "int32"} : (tensor<4x3xf32>) -> tensor<4x3xi32>
          %back = mil.transpose %i {perm = array<i64: 1, 0>} : (tensor<4x3xi32>) -> tensor<3x4xi32>
          func.return %back : tensor<3x4xi32>
        }
        """,
        {"less": 1, "select": 1, "cast": 1},
    )


def test_shared_layout_op_is_not_moved() -> None:
    check_text(
        """
        func.func @f(%x: tensor<2x6xf32>) -> (tensor<2x6xf32>, tensor<12xf32>) {
          %a = mil.reshape %x {shape = array<i64: 12>} : (tensor<2x6xf32>) -> tensor<12xf32>
          %e = mil.exp %a : tensor<12xf32>
          %back = mil.reshape %e {shape = array<i64: 2, 6>} : (tensor<12xf32>) -> tensor<2x6xf32>
          func.return %back, %a : tensor<2x6xf32>, tensor<12xf32>
        }
        """,
        {"reshape": 2, "exp": 1},
    )


def test_scalar_that_would_change_rank_blocks_the_move() -> None:
    check_text(
        """
        func.func @f(%x: tensor<6xf32>) -> tensor<6xf32> {
          %a = mil.reshape %x {shape = array<i64: 1, 2, 3>} : (tensor<6xf32>) -> tensor<1x2x3xf32>
          %s = mil.const dense<2.0> : tensor<1x1x1xf32>
          %m = mil.mul %a, %s : (tensor<1x2x3xf32>, tensor<1x1x1xf32>) -> tensor<1x2x3xf32>
          %back = mil.reshape %m {shape = array<i64: 6>} : (tensor<1x2x3xf32>) -> tensor<6xf32>
          func.return %back : tensor<6xf32>
        }
        """,
        {"reshape": 2, "mul": 1},
    )


# --- constant folding --------------------------------------------------------------


def test_constant_subgraph_folds() -> None:
    """Computing ops of every family on small inline consts fold to one
    const per result, with the interpreter's exact values."""
    after = check_text(
        """
        func.func @f(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf16>, tensor<2xi32>, tensor<2x2xf32>) {
          %a = mil.const dense<[[1.0, -2.0, 3.0], [0.5, 0.25, -4.0]]> : tensor<2x3xf32>
          %b = mil.const dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
          %m = mil.matmul %a, %b : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
          %s = mil.softmax %a {axis = -1 : i64} : tensor<2x3xf32>
          %y = mil.add %x, %s : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
          %h = mil.cast %a {dtype = "fp16"} : (tensor<2x3xf32>) -> tensor<2x3xf16>
          %e = mil.exp %h : tensor<2x3xf16>
          %i = mil.const dense<[4, 9]> : tensor<2xi32>
          %j = mil.const dense<[2, -2]> : tensor<2xi32>
          %q = mil.real_div %i, %j : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
          func.return %y, %e, %q, %m : tensor<2x3xf32>, tensor<2x3xf16>, tensor<2xi32>, tensor<2x2xf32>
        }
        """,
        {"add": 1},
    )
    assert all(c.val is not None for c in consts(after))


def const(emit, value: np.ndarray | float, element_type=f32) -> SSAValue:
    return emit(mil.ConstOp(dense_from_numpy(value, element_type)))


def test_large_layout_of_const_folds() -> None:
    """Causal masks built from consts: a 64x64 product (4096 elements) is too
    large to fold as compute, so nothing after it folds; layout ops of a
    256x256 const fold (65536 elements); an 8x8 product folds with its
    transpose."""

    def large(emit, scores: SSAValue) -> list[SSAValue]:
        mask = emit(
            mil.MulOp(const(emit, np.triu(np.ones((64, 64)), 1)), const(emit, -1e4))
        )
        mask = emit(mil.CastOp(mask, "fp16"))
        mask = emit(mil.ReshapeOp(mask, [1, 1, 64, 64]))
        return [emit(mil.AddOp(scores, emit(mil.TileOp(mask, [1, 1, 4, 4]))))]

    module = build_module([tensor([1, 4, 256, 256], f16)], large)
    assert mil_ops(check_same(module)) == mil_ops(module)

    def band(emit, mask: SSAValue) -> list[SSAValue]:
        big = const(emit, np.triu(np.ones((256, 256)), 1) * -1e4, f16)
        return [emit(mil.AddOp(mask, emit(mil.ReshapeOp(big, [1, 1, 256, 256]))))]

    module = build_module([tensor([1, 4, 256, 256], f16)], band)
    assert mil_ops(check_same(module)) == Counter({"add": 1})

    def small(emit, x: SSAValue) -> list[SSAValue]:
        mask = emit(mil.MulOp(const(emit, np.tril(np.ones((8, 8)))), const(emit, -1e4)))
        return [emit(mil.AddOp(x, emit(mil.TransposeOp(mask, [1, 0]))))]

    module = build_module([tensor([8, 8], f32)], small)
    assert mil_ops(check_same(module)) == Counter({"add": 1})


def test_layout_ops_of_const_fold() -> None:
    check_text(
        """
        func.func @f(%x: tensor<2x1x4xf32>) -> tensor<2x1x4xf32> {
          %c = mil.const dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]> : tensor<6xf32>
          %r = mil.reshape %c {shape = array<i64: 2, 3>} : (tensor<6xf32>) -> tensor<2x3xf32>
          %t = mil.transpose %r {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
          %s = mil.slice_by_size %t {begin = array<i64: 1, 0>, size = array<i64: 2, -1>} : (tensor<3x2xf32>) -> tensor<2x2xf32>
          %e = mil.expand_dims %s {axes = array<i64: 1>} : (tensor<2x2xf32>) -> tensor<2x1x2xf32>
          %k = mil.concat %e, %e {axis = 2 : i64, interleave = true} : (tensor<2x1x2xf32>, tensor<2x1x2xf32>) -> tensor<2x1x4xf32>
          %q = mil.squeeze %k {axes = array<i64: 1>} : (tensor<2x1x4xf32>) -> tensor<2x4xf32>
          %u = mil.expand_dims %q {axes = array<i64: 1>} : (tensor<2x4xf32>) -> tensor<2x1x4xf32>
          %y = mil.add %x, %u : (tensor<2x1x4xf32>, tensor<2x1x4xf32>) -> tensor<2x1x4xf32>
          func.return %y : tensor<2x1x4xf32>
        }
        """,
        {"add": 1},
    )


def test_weight_const_is_not_folded_by_value() -> None:
    after = check_text(
        """
        func.func @f() -> tensor<2x3xf32> {
          %w = mil.const weight "w" : tensor<2x3xf32>
          %one = mil.const dense<1.0> : tensor<f32>
          %y = mil.add %w, %one : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
          func.return %y : tensor<2x3xf32>
        }
        """,
        {"add": 1},
        arange_weights(w=(2, 3)),
    )
    assert [c.weight.data for c in consts(after) if c.weight is not None] == ["w"]


# --- weight views ------------------------------------------------------------------

W_SHAPE = (4, 6)


def test_weight_transpose_then_reshape() -> None:
    """W [4, 6] -> transpose [6, 4] -> reshape [3, 8]: one const with
    weight_shape [4, 6], perm [1, 0]; a matmul reads it with runtime data."""
    after = check_text(
        """
        func.func @f(%x: tensor<2x3xf32>) -> tensor<2x8xf32> {
          %w = mil.const weight "w" : tensor<4x6xf32>
          %t = mil.transpose %w {perm = array<i64: 1, 0>} : (tensor<4x6xf32>) -> tensor<6x4xf32>
          %r = mil.reshape %t {shape = array<i64: 3, 8>} : (tensor<6x4xf32>) -> tensor<3x8xf32>
          %y = mil.matmul %x, %r : (tensor<2x3xf32>, tensor<3x8xf32>) -> tensor<2x8xf32>
          func.return %y : tensor<2x8xf32>
        }
        """,
        {"matmul": 1},
        arange_weights(w=W_SHAPE),
    )
    (const,) = consts(after)
    assert const.file_shape() == W_SHAPE
    assert const.perm is not None and tuple(const.perm.get_values()) == (1, 0)


def test_weight_reshape_chain() -> None:
    """Reshapes of a transposed view keep the perm and file shape."""
    after = check_text(
        """
        func.func @f(%x: tensor<1x3xf32>) -> tensor<1x8xf32> {
          %w = mil.const weight "w" {weight_shape = array<i64: 4, 6>, perm = array<i64: 1, 0>} : tensor<24xf32>
          %a = mil.reshape %w {shape = array<i64: 2, 12>} : (tensor<24xf32>) -> tensor<2x12xf32>
          %b = mil.reshape %a {shape = array<i64: 3, 8>} : (tensor<2x12xf32>) -> tensor<3x8xf32>
          %y = mil.matmul %x, %b : (tensor<1x3xf32>, tensor<3x8xf32>) -> tensor<1x8xf32>
          func.return %y : tensor<1x8xf32>
        }
        """,
        {"matmul": 1},
        arange_weights(w=W_SHAPE),
    )
    (const,) = consts(after)
    assert const.file_shape() == W_SHAPE


def test_weight_transposes_compose_through_pure_transpose_view() -> None:
    after = check_text(
        """
        func.func @f() -> tensor<4x2x3xf32> {
          %w = mil.const weight "w" {weight_shape = array<i64: 2, 3, 4>, perm = array<i64: 1, 0, 2>} : tensor<3x2x4xf32>
          %t = mil.transpose %w {perm = array<i64: 2, 1, 0>} : (tensor<3x2x4xf32>) -> tensor<4x2x3xf32>
          func.return %t : tensor<4x2x3xf32>
        }
        """,
        {},
        arange_weights(w=(2, 3, 4)),
    )
    (const,) = consts(after)
    assert const.perm is not None and tuple(const.perm.get_values()) == (2, 0, 1)


def test_weight_transpose_of_reshaping_view_stays() -> None:
    check_text(
        """
        func.func @f() -> tensor<6x4xf32> {
          %w = mil.const weight "w" {weight_shape = array<i64: 6, 4>} : tensor<4x6xf32>
          %t = mil.transpose %w {perm = array<i64: 1, 0>} : (tensor<4x6xf32>) -> tensor<6x4xf32>
          func.return %t : tensor<6x4xf32>
        }
        """,
        {"transpose": 1},
        arange_weights(w=(6, 4)),
    )


def test_shared_weight_keeps_its_view() -> None:
    check_text(
        """
        func.func @f() -> (tensor<4x6xf32>, tensor<24xf32>) {
          %w = mil.const weight "w" : tensor<4x6xf32>
          %r = mil.reshape %w {shape = array<i64: 24>} : (tensor<4x6xf32>) -> tensor<24xf32>
          func.return %w, %r : tensor<4x6xf32>, tensor<24xf32>
        }
        """,
        {"reshape": 1},
        arange_weights(w=W_SHAPE),
    )


# --- concatenation in the sources' view ------------------------------------------------


def test_concat_of_heads_joins_them_as_heads() -> None:
    """The packed output of an attention kernel: results computed as heads
    [1, H, D, S], reshaped to [1, H·D, 1, S] and concatenated on the
    channels, are joined as heads and reshaped once; a source computed as
    [1, 1, H·D, S] whose head view already exists uses it."""
    check_text(
        """
        func.func @f(%a: tensor<1x2x4x5xf32>, %b: tensor<1x1x12x5xf32>) -> (tensor<1x28x1x5xf32>, tensor<1x3x4x5xf32>) {
          %x = mil.exp %a : tensor<1x2x4x5xf32>
          %y = mil.relu %a : tensor<1x2x4x5xf32>
          %bh = mil.reshape %b {shape = array<i64: 1, 3, 4, 5>} : (tensor<1x1x12x5xf32>) -> tensor<1x3x4x5xf32>
          %rx = mil.reshape %x {shape = array<i64: 1, 8, 1, 5>} : (tensor<1x2x4x5xf32>) -> tensor<1x8x1x5xf32>
          %ry = mil.reshape %y {shape = array<i64: 1, 8, 1, 5>} : (tensor<1x2x4x5xf32>) -> tensor<1x8x1x5xf32>
          %rb = mil.reshape %b {shape = array<i64: 1, 12, 1, 5>} : (tensor<1x1x12x5xf32>) -> tensor<1x12x1x5xf32>
          %c = mil.concat %rx, %ry, %rb {axis = 1} : (tensor<1x8x1x5xf32>, tensor<1x8x1x5xf32>, tensor<1x12x1x5xf32>) -> tensor<1x28x1x5xf32>
          func.return %c, %bh : tensor<1x28x1x5xf32>, tensor<1x3x4x5xf32>
        }
        """,
        {"exp": 1, "relu": 1, "concat": 1, "reshape": 2},
    )


def test_concat_adds_a_view_where_it_still_saves() -> None:
    """Two reshapes of heads and one of a [1, 8, 1, 5] value that has no
    head view: one new reshape for it, still one op fewer."""
    after = check_text(
        """
        func.func @f(%a: tensor<1x2x4x5xf32>, %b: tensor<1x2x4x5xf32>, %c: tensor<1x1x8x5xf32>) -> tensor<1x24x1x5xf32> {
          %ra = mil.reshape %a {shape = array<i64: 1, 8, 1, 5>} : (tensor<1x2x4x5xf32>) -> tensor<1x8x1x5xf32>
          %rb = mil.reshape %b {shape = array<i64: 1, 8, 1, 5>} : (tensor<1x2x4x5xf32>) -> tensor<1x8x1x5xf32>
          %rc = mil.reshape %c {shape = array<i64: 1, 8, 1, 5>} : (tensor<1x1x8x5xf32>) -> tensor<1x8x1x5xf32>
          %j = mil.concat %ra, %rb, %rc {axis = 1} : (tensor<1x8x1x5xf32>, tensor<1x8x1x5xf32>, tensor<1x8x1x5xf32>) -> tensor<1x24x1x5xf32>
          func.return %j : tensor<1x24x1x5xf32>
        }
        """,
        {"concat": 1, "reshape": 2},
    )
    (concat,) = [op for op in after.walk() if isinstance(op, mil.ConcatOp)]
    assert concat.result.type == tensor((1, 6, 4, 5), f32)


@pytest.mark.parametrize(
    "text",
    [
        # Dimensions before the axis are not 1: not a concatenation of buffers.
        """
        func.func @f(%a: tensor<2x2x4xf32>, %b: tensor<2x2x4xf32>) -> tensor<2x16xf32> {
          %ra = mil.reshape %a {shape = array<i64: 2, 8>} : (tensor<2x2x4xf32>) -> tensor<2x8xf32>
          %rb = mil.reshape %b {shape = array<i64: 2, 8>} : (tensor<2x2x4xf32>) -> tensor<2x8xf32>
          %j = mil.concat %ra, %rb {axis = 1} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x16xf32>
          func.return %j : tensor<2x16xf32>
        }
        """,
        # One reshape: moving it below the concat saves nothing.
        """
        func.func @f(%a: tensor<1x2x4x5xf32>, %b: tensor<1x8x1x5xf32>) -> tensor<1x16x1x5xf32> {
          %ra = mil.reshape %a {shape = array<i64: 1, 8, 1, 5>} : (tensor<1x2x4x5xf32>) -> tensor<1x8x1x5xf32>
          %j = mil.concat %ra, %b {axis = 1} : (tensor<1x8x1x5xf32>, tensor<1x8x1x5xf32>) -> tensor<1x16x1x5xf32>
          func.return %j : tensor<1x16x1x5xf32>
        }
        """,
        # The reshapes have other uses: they stay, so nothing is saved.
        """
        func.func @f(%a: tensor<1x2x4x5xf32>, %b: tensor<1x2x4x5xf32>) -> (tensor<1x16x1x5xf32>, tensor<1x8x1x5xf32>, tensor<1x8x1x5xf32>) {
          %ra = mil.reshape %a {shape = array<i64: 1, 8, 1, 5>} : (tensor<1x2x4x5xf32>) -> tensor<1x8x1x5xf32>
          %rb = mil.reshape %b {shape = array<i64: 1, 8, 1, 5>} : (tensor<1x2x4x5xf32>) -> tensor<1x8x1x5xf32>
          %j = mil.concat %ra, %rb {axis = 1} : (tensor<1x8x1x5xf32>, tensor<1x8x1x5xf32>) -> tensor<1x16x1x5xf32>
          func.return %j, %ra, %rb : tensor<1x16x1x5xf32>, tensor<1x8x1x5xf32>, tensor<1x8x1x5xf32>
        }
        """,
        # Interleaved: not an append.
        """
        func.func @f(%a: tensor<1x2x4x5xf32>, %b: tensor<1x2x4x5xf32>) -> tensor<1x16x1x5xf32> {
          %ra = mil.reshape %a {shape = array<i64: 1, 8, 1, 5>} : (tensor<1x2x4x5xf32>) -> tensor<1x8x1x5xf32>
          %rb = mil.reshape %b {shape = array<i64: 1, 8, 1, 5>} : (tensor<1x2x4x5xf32>) -> tensor<1x8x1x5xf32>
          %j = mil.concat %ra, %rb {axis = 1, interleave = true} : (tensor<1x8x1x5xf32>, tensor<1x8x1x5xf32>) -> tensor<1x16x1x5xf32>
          func.return %j : tensor<1x16x1x5xf32>
        }
        """,
    ],
    ids=["leading-dimension", "one-reshape", "shared-reshapes", "interleave"],
)
def test_concat_stays_where_the_view_saves_nothing(text: str) -> None:
    before = parse(text)
    after = check_same(before)
    assert mil_ops(after) == mil_ops(before)


# --- empty concat operands ------------------------------------------------------------


def test_empty_concat_operands_are_dropped() -> None:
    """Core ML has no empty tensors: an empty const joined to values adds
    nothing and goes (a lone remaining operand replaces the concat)."""
    after = check_text(
        """
        func.func @f(%x: tensor<2x3xf32>, %y: tensor<2x4xf32>) -> (tensor<2x7xf32>, tensor<2x4xf32>) {
          %e = mil.const dense<> : tensor<2x0xf32>
          %j = mil.concat %e, %x, %e, %y {axis = 1} : (tensor<2x0xf32>, tensor<2x3xf32>, tensor<2x0xf32>, tensor<2x4xf32>) -> tensor<2x7xf32>
          %k = mil.concat %y, %e {axis = -1} : (tensor<2x4xf32>, tensor<2x0xf32>) -> tensor<2x4xf32>
          func.return %j, %k : tensor<2x7xf32>, tensor<2x4xf32>
        }
        """,
        {"concat": 1},
    )
    assert consts(after) == []
    (concat,) = [op for op in after.walk() if isinstance(op, mil.ConcatOp)]
    assert [v.type for v in concat.values] == [tensor((2, 3), f32), tensor((2, 4), f32)]


def test_empty_constant_of_an_rlx_program_does_not_reach_core_ml() -> None:
    """rlx lets a constant be empty; after `ane-pipeline` no empty tensor
    is left in the program Core ML reads."""
    import xdsl_ane
    from xdsl_ane.frontend.mlir import parse_module_text

    module = parse_module_text(
        """
        func.func @main(%y: tensor<2x4xf32>) -> tensor<2x4xf32> {
          %e = rlx.constant dense<> : tensor<2x0xf32>
          %c = rlx.concat %e, %y {axis = 1 : i64} : (tensor<2x0xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
          func.return %c : tensor<2x4xf32>
        }
        """,
        "empty.mlir",
    )
    compiled = xdsl_ane.compile(module)
    values = [
        v
        for op in compiled.module.walk()
        for v in (*op.results, *(a for r in op.regions for a in r.block.args))
    ]
    shapes = [v.type.get_shape() for v in values if isinstance(v.type, TensorType)]
    assert shapes and all(0 not in shape for shape in shapes)
    assert mil_ops(compiled.module) == Counter()  # the concat is the input


# --- dead ops ------------------------------------------------------------------------


def test_dead_ops_are_erased() -> None:
    after = check_text(
        """
        func.func @f(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
          %w = mil.const weight "unused" : tensor<3x3xf32>
          %m = mil.matmul %x, %w : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x3xf32>
          %s = mil.reduce_sum %m {axes = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2xf32>
          %r = mil.relu %x : tensor<2x3xf32>
          func.return %r : tensor<2x3xf32>
        }
        """,
        {"relu": 1},
        arange_weights(unused=(3, 3)),
    )
    assert consts(after) == []


# --- random chains ------------------------------------------------------------------

UNARY = [mil.ReluOp, mil.AbsOp, mil.ExpOp, mil.SquareOp]


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


@st.composite
def shapes(draw: st.DrawFn, count: int | None = None) -> tuple[int, ...]:
    """A shape of rank 1 to 4; with `count`, one holding `count` elements."""
    rank = draw(st.integers(1, 4))
    if count is None:
        return tuple(draw(st.integers(1, 4)) for _ in range(rank))
    dims = []
    for _ in range(rank - 1):
        d = draw(st.sampled_from(divisors(count)))
        dims.append(d)
        count //= d
    dims.append(count)
    return tuple(draw(st.permutations(dims)))


@st.composite
def layout_steps(draw: st.DrawFn, shape: tuple[int, ...], elementwise: bool):
    """A list of ("transpose", perm) / ("reshape", shape) / ("unary", op)
    steps applicable one after the other from `shape`."""
    steps = []
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(
            st.sampled_from(
                ["transpose", "reshape", "unary"]
                if elementwise
                else ["transpose", "reshape"]
            )
        )
        if kind == "transpose":
            perm = tuple(draw(st.permutations(range(len(shape)))))
            steps.append(("transpose", perm))
            shape = tuple(shape[p] for p in perm)
        elif kind == "reshape":
            shape = draw(shapes(int(np.prod(shape))))
            steps.append(("reshape", shape))
        else:
            steps.append(("unary", draw(st.sampled_from(UNARY))))
    return steps


def apply_steps(emit, x: SSAValue, steps) -> SSAValue:
    for kind, arg in steps:
        if kind == "transpose":
            x = emit(mil.TransposeOp(x, arg))
        elif kind == "reshape":
            x = emit(mil.ReshapeOp(x, arg))
        else:
            x = emit(arg(x))
    return x


def inverse_steps(start: tuple[int, ...], steps) -> list:
    """The layout steps undoing `steps` (elementwise steps dropped)."""
    shapes_before = []
    shape = start
    for kind, arg in steps:
        shapes_before.append(shape)
        if kind == "transpose":
            shape = tuple(shape[p] for p in arg)
        elif kind == "reshape":
            shape = arg
    inverse = []
    for (kind, arg), before in zip(reversed(steps), reversed(shapes_before)):
        if kind == "transpose":
            inverse.append(("transpose", tuple(int(i) for i in np.argsort(arg))))
        elif kind == "reshape":
            inverse.append(("reshape", before))
    return inverse


def assert_chains_folded(module: ModuleOp) -> None:
    """No transpose reads a transpose and no reshape reads a reshape."""
    for op in module.walk():
        if isinstance(op, mil.TransposeOp | mil.ReshapeOp):
            source = op.operands[0].owner
            assert not isinstance(source, type(op)), f"{op.name} of {op.name} left"


def layout_count(module: ModuleOp) -> int:
    counts = mil_ops(module)
    return counts["transpose"] + counts["reshape"]


RANDOM = settings(max_examples=50, deadline=None, derandomize=True)


@RANDOM
@given(data=st.data())
def test_random_layout_chains(data: st.DataObject) -> None:
    """Random chains of transposes, reshapes and unary ops stay numerically
    identical and never keep a transpose of a transpose or a reshape of a
    reshape, nor gain layout ops."""
    start = data.draw(shapes())
    steps = data.draw(layout_steps(start, elementwise=True))
    module = build_module(
        [tensor(start, f32)], lambda emit, x: [apply_steps(emit, x, steps)]
    )
    after = check_same(module, seeds=(0,))
    assert_chains_folded(after)
    assert layout_count(after) <= layout_count(module)


@RANDOM
@given(data=st.data())
def test_random_chain_and_inverse_cancel(data: st.DataObject) -> None:
    """A random chain with unary ops and then its inverse layout steps: the
    layout ops sink past the unary ops and all cancel."""
    start = data.draw(shapes())
    steps = data.draw(layout_steps(start, elementwise=True))
    inverse = inverse_steps(start, steps)
    module = build_module(
        [tensor(start, f32)],
        lambda emit, x: [apply_steps(emit, apply_steps(emit, x, steps), inverse)],
    )
    after = check_same(module, seeds=(0,))
    assert layout_count(after) == 0
    assert sum(mil_ops(after).values()) == sum(k == "unary" for k, _ in steps)


@RANDOM
@given(data=st.data())
def test_random_weight_view_chains(data: st.DataObject) -> None:
    """Random transpose/reshape chains on a weight const (arange data) give
    the same values; transposes followed by reshapes fold into the const."""
    start = data.draw(shapes())
    steps = data.draw(layout_steps(start, elementwise=False))
    weights = {"w": np.arange(int(np.prod(start)), dtype=np.float32).reshape(start)}
    module = build_module(
        [],
        lambda emit: [
            apply_steps(
                emit, emit(mil.ConstOp.from_weight("w", tensor(start, f32))), steps
            )
        ],
    )
    after = check_same(module, weights, seeds=(0,))
    assert_chains_folded(after)
    kinds = [k for k, _ in steps]
    if "reshape" not in kinds or "transpose" not in kinds[kinds.index("reshape") :]:
        assert layout_count(after) == 0

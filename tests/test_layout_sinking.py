"""The canonicalizations of `xdsl_ane.passes.layout_sinking` and
`FoldBiasIntoMatmul`, checked by numbers: each function is interpreted
before and after `canonicalize` on the same random inputs and weights (to
rounding: a layer_norm over another axis, a conv for a matmul and a matmul
flag for a transpose sum in another order), and the ops that remain are
stated. A second canonicalize changes nothing."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

import numpy as np
import pytest
from ane_form import function_of
from canonicalize_check import canonicalized, mil_ops, parse
from xdsl.ir import Operation
from xdsl.traits import HasCanonicalizationPatternsTrait

from xdsl_ane.dialects import mil
from xdsl_ane.interpreter.core import random_inputs, run_function
from xdsl_ane.passes import layout_sinking as sinking
from xdsl_ane.passes.conv_bias import FoldBiasIntoMatmul


def check_close(
    text: str, remaining: Mapping[str, int], weights: Mapping[str, np.ndarray] = {}
) -> None:
    module = parse(text)
    after = canonicalized(module)
    for seed in (0, 1):
        inputs = random_inputs(function_of(module), seed)
        expected = run_function(module, inputs, weights)
        actual = run_function(after, inputs, weights)
        for a, e in zip(actual, expected, strict=True):
            assert a.dtype == e.dtype and a.shape == e.shape
            np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-5)
    assert mil_ops(after) == Counter(remaining)
    assert str(canonicalized(after)) == str(after)


def random_weights(**shapes: tuple[int, ...]) -> dict[str, np.ndarray]:
    generator = np.random.default_rng(0)
    return {
        name: generator.standard_normal(shape).astype(np.float32)
        for name, shape in shapes.items()
    }


@pytest.mark.parametrize(
    "op_type, pattern",
    [
        (mil.TransposeOp, sinking.FoldOrderPreservingChain),
        (mil.ReshapeOp, sinking.FoldOrderPreservingChain),
        (mil.TransposeOp, sinking.SinkTransposeThroughLayerNorm),
        (mil.TransposeOp, sinking.ChannelsLastMatmulToConv),
        (mil.TransposeOp, sinking.FoldTransposeIntoMatmul),
        (mil.MulOp, sinking.SinkTransposeThroughConstOperand),
        (mil.AddOp, FoldBiasIntoMatmul),
    ],
)
def test_patterns_registered_on_op(op_type: type[Operation], pattern: type) -> None:
    traits = op_type.get_traits_of_type(HasCanonicalizationPatternsTrait)
    found = [p for t in traits for p in t.get_patterns(op_type)]
    assert any(isinstance(p, pattern) for p in found)


def test_channels_last_block_becomes_convs_without_transposes() -> None:
    """ConvNeXt's block after its depthwise conv: permute to channels-last,
    LayerNorm, Linear, GELU, Linear, layer scale, permute back, residual:
    13 ops -> 6, the linears 1×1 convs with their biases inside."""
    check_close(
        """
        func.func @f(%x: tensor<1x8x3x5xf32>) -> tensor<1x8x3x5xf32> {
          %g = mil.const weight "g" : tensor<8xf32>
          %b = mil.const weight "b" : tensor<8xf32>
          %w1 = mil.const weight "w1" : tensor<16x8xf32>
          %b1 = mil.const weight "b1" : tensor<16xf32>
          %w2 = mil.const weight "w2" : tensor<8x16xf32>
          %b2 = mil.const weight "b2" : tensor<8xf32>
          %s = mil.const weight "s" : tensor<8xf32>
          %t = mil.transpose %x {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x8x3x5xf32>) -> tensor<1x3x5x8xf32>
          %n = mil.layer_norm %t, gamma %g, beta %b {axes = array<i64: -1>, epsilon = 1.0e-06 : f32} : (tensor<1x3x5x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<1x3x5x8xf32>
          %m1 = mil.matmul %n, %w1 {transpose_y = true} : (tensor<1x3x5x8xf32>, tensor<16x8xf32>) -> tensor<1x3x5x16xf32>
          %a1 = mil.add %m1, %b1 : (tensor<1x3x5x16xf32>, tensor<16xf32>) -> tensor<1x3x5x16xf32>
          %h = mil.gelu %a1 {mode = "EXACT"} : tensor<1x3x5x16xf32>
          %m2 = mil.matmul %h, %w2 {transpose_y = true} : (tensor<1x3x5x16xf32>, tensor<8x16xf32>) -> tensor<1x3x5x8xf32>
          %a2 = mil.add %m2, %b2 : (tensor<1x3x5x8xf32>, tensor<8xf32>) -> tensor<1x3x5x8xf32>
          %l = mil.mul %s, %a2 : (tensor<8xf32>, tensor<1x3x5x8xf32>) -> tensor<1x3x5x8xf32>
          %back = mil.transpose %l {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x3x5x8xf32>) -> tensor<1x8x3x5xf32>
          %y = mil.add %x, %back : (tensor<1x8x3x5xf32>, tensor<1x8x3x5xf32>) -> tensor<1x8x3x5xf32>
          func.return %y : tensor<1x8x3x5xf32>
        }
        """,
        {"layer_norm": 1, "conv": 2, "gelu": 1, "mul": 1, "add": 1},
        random_weights(
            g=(8,), b=(8,), w1=(16, 8), b1=(16,), w2=(8, 16), b2=(8,), s=(8,)
        ),
    )


def test_layer_norm_between_inverse_transposes_runs_on_the_channels() -> None:
    """ConvNeXt's channels-first LayerNorm (stem, downsampling): permute,
    norm over the last axis, permute back -> one norm over axis 1."""
    check_close(
        """
        func.func @f(%x: tensor<1x8x3x5xf32>) -> tensor<1x8x3x5xf32> {
          %t = mil.transpose %x {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x8x3x5xf32>) -> tensor<1x3x5x8xf32>
          %n = mil.layer_norm %t {axes = array<i64: 3>} : (tensor<1x3x5x8xf32>) -> tensor<1x3x5x8xf32>
          %back = mil.transpose %n {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x3x5x8xf32>) -> tensor<1x8x3x5xf32>
          func.return %back : tensor<1x8x3x5xf32>
        }
        """,
        {"layer_norm": 1},
    )


def test_layer_norm_whose_axes_would_reorder_keeps_its_transpose() -> None:
    check_close(
        """
        func.func @f(%x: tensor<2x3x4xf32>) -> tensor<4x3x2xf32> {
          %t = mil.transpose %x {perm = array<i64: 2, 1, 0>} : (tensor<2x3x4xf32>) -> tensor<4x3x2xf32>
          %n = mil.layer_norm %t {axes = array<i64: 1, 2>} : (tensor<4x3x2xf32>) -> tensor<4x3x2xf32>
          func.return %n : tensor<4x3x2xf32>
        }
        """,
        {"transpose": 1, "layer_norm": 1},
    )


def test_tokens_read_back_as_an_image_are_one_reshape() -> None:
    """DPT's reassembly (Depth Anything): tokens in ANE form [1, C, 1, S],
    the class token sliced off, read as [1, S, C], split into [1, H, W, C]
    and permuted to [1, C, H, W] — the same elements in the same order."""
    check_close(
        """
        func.func @f(%x: tensor<1x8x1x13xf32>) -> tensor<1x8x3x4xf32> {
          %s = mil.slice_by_size %x {begin = array<i64: 0, 0, 0, 1>, size = array<i64: 1, 8, 1, 12>} : (tensor<1x8x1x13xf32>) -> tensor<1x8x1x12xf32>
          %a = mil.reshape %s {shape = array<i64: 1, 8, 12>} : (tensor<1x8x1x12xf32>) -> tensor<1x8x12xf32>
          %b = mil.transpose %a {perm = array<i64: 0, 2, 1>} : (tensor<1x8x12xf32>) -> tensor<1x12x8xf32>
          %c = mil.reshape %b {shape = array<i64: 1, 3, 4, 8>} : (tensor<1x12x8xf32>) -> tensor<1x3x4x8xf32>
          %d = mil.transpose %c {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x3x4x8xf32>) -> tensor<1x8x3x4xf32>
          func.return %d : tensor<1x8x3x4xf32>
        }
        """,
        {"slice_by_size": 1, "reshape": 1},
    )


def test_attention_head_transposes_become_matmul_flags() -> None:
    """Heads read from the ANE form [1, H, D, S]: q and k transposed to
    [1, H, S, D] for q·kᵀ, v for p·v, and the result transposed back —
    four transposes, none left."""
    check_close(
        """
        func.func @f(%q: tensor<1x2x4x6xf32>, %k: tensor<1x2x4x6xf32>, %v: tensor<1x2x4x6xf32>) -> tensor<1x2x4x6xf32> {
          %qt = mil.transpose %q {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x6xf32>) -> tensor<1x2x6x4xf32>
          %kt = mil.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x6xf32>) -> tensor<1x2x6x4xf32>
          %vt = mil.transpose %v {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x6xf32>) -> tensor<1x2x6x4xf32>
          %s = mil.matmul %qt, %kt {transpose_y = true} : (tensor<1x2x6x4xf32>, tensor<1x2x6x4xf32>) -> tensor<1x2x6x6xf32>
          %p = mil.softmax %s {axis = -1 : i64} : tensor<1x2x6x6xf32>
          %o = mil.matmul %p, %vt : (tensor<1x2x6x6xf32>, tensor<1x2x6x4xf32>) -> tensor<1x2x6x4xf32>
          %ot = mil.transpose %o {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x6x4xf32>) -> tensor<1x2x4x6xf32>
          func.return %ot : tensor<1x2x4x6xf32>
        }
        """,
        {"matmul": 2, "softmax": 1},
    )


def test_matmul_by_a_weight_plus_bias_is_one_linear() -> None:
    """Swin's window attention projections: x [windows, tokens, C]."""
    check_close(
        """
        func.func @f(%x: tensor<4x6x8xf32>) -> tensor<4x6x16xf32> {
          %w = mil.const weight "w" : tensor<16x8xf32>
          %b = mil.const weight "b" : tensor<16xf32>
          %m = mil.matmul %x, %w {transpose_y = true} : (tensor<4x6x8xf32>, tensor<16x8xf32>) -> tensor<4x6x16xf32>
          %y = mil.add %b, %m : (tensor<16xf32>, tensor<4x6x16xf32>) -> tensor<4x6x16xf32>
          func.return %y : tensor<4x6x16xf32>
        }
        """,
        {"linear": 1},
        random_weights(w=(16, 8), b=(16,)),
    )


def test_matmul_of_a_runtime_value_or_rank_4_stays() -> None:
    """linear takes a const weight and x of rank 1 to 3."""
    check_close(
        """
        func.func @f(%x: tensor<2x4x6x8xf32>, %w: tensor<16x8xf32>) -> (tensor<2x4x6x16xf32>, tensor<6x16xf32>) {
          %c = mil.const weight "c" : tensor<16x8xf32>
          %b = mil.const weight "b" : tensor<16xf32>
          %m = mil.matmul %x, %c {transpose_y = true} : (tensor<2x4x6x8xf32>, tensor<16x8xf32>) -> tensor<2x4x6x16xf32>
          %y = mil.add %m, %b : (tensor<2x4x6x16xf32>, tensor<16xf32>) -> tensor<2x4x6x16xf32>
          %r = mil.reshape %x {shape = array<i64: 48, 8>} : (tensor<2x4x6x8xf32>) -> tensor<48x8xf32>
          %s = mil.slice_by_size %r {begin = array<i64: 0, 0>, size = array<i64: 6, 8>} : (tensor<48x8xf32>) -> tensor<6x8xf32>
          %n = mil.matmul %s, %w {transpose_y = true} : (tensor<6x8xf32>, tensor<16x8xf32>) -> tensor<6x16xf32>
          %z = mil.add %n, %b : (tensor<6x16xf32>, tensor<16xf32>) -> tensor<6x16xf32>
          func.return %y, %z : tensor<2x4x6x16xf32>, tensor<6x16xf32>
        }
        """,
        {"matmul": 2, "add": 2, "reshape": 1, "slice_by_size": 1},
        random_weights(c=(16, 8), b=(16,)),
    )

"""mil-ane-layout checked by numbers: the lowered program on logical data and
its ANE form on the same data mapped by the recorded layouts agree."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from ane_form import function_of, run_ane_form, weight_arguments
from tiny_decoder import TINY_DECODER
from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.dialects.builtin import f32, i32
from xdsl.transforms.canonicalize import CanonicalizePass
from xdsl.utils.exceptions import PassFailedException

from xdsl_ane.dialects import rlx
from xdsl_ane.dialects.ane import LayoutAttr, arg_layouts
from xdsl_ane.dialects.functions import build_function
from xdsl_ane.dialects.typing import tensor
from xdsl_ane.interpreter.core import random_inputs, run_function
from xdsl_ane.models.transformer import (
    QWEN3_0_6B,
    build_attention_block,
    build_decoder_layer,
    make_weights,
    stateless_builder,
)
from xdsl_ane.passes.ane_layout import MilAneLayoutPass
from xdsl_ane.passes.driver import make_context
from xdsl_ane.passes.layouts import ane_form_problems, layout_of
from xdsl_ane.passes.rlx_to_mil import ConvertRlxToMilPass


def lowered(module: builtin.ModuleOp) -> builtin.ModuleOp:
    module = module.clone()
    ConvertRlxToMilPass().apply(Context(), module)
    return module


def op_counts(module: builtin.ModuleOp) -> Counter[str]:
    return Counter(
        op.name
        for op in module.walk()
        if op.name.startswith("mil.") and op.name != "mil.const"
    )


def check_layout(
    module: builtin.ModuleOp,
    weights: dict[str, np.ndarray],
    mode: str,
    seed: int = 0,
    canonicalize: bool = True,
    rtol: float = 1e-5,
) -> builtin.ModuleOp:
    """Lowers `module` (rlx), lays it out, and compares with the rlx program."""
    function = function_of(module)
    inputs = random_inputs(function, seed)
    expected = run_function(module, inputs, weights)
    ane = lowered(module)
    MilAneLayoutPass(weights=mode).apply(Context(), ane)
    if canonicalize:
        CanonicalizePass().apply(make_context(), ane)
    ane.verify()
    assert ane_form_problems(function_of(ane)) == []
    actual = run_ane_form(ane, inputs, weights, [y.shape for y in expected])
    for a, e in zip(actual, expected):
        scale = float(np.abs(e).max()) or 1.0
        np.testing.assert_allclose(a, e, rtol=rtol, atol=rtol * scale)
    return ane


@pytest.mark.parametrize("mode", ["static", "dynamic"])
@pytest.mark.parametrize("build", [build_attention_block, build_decoder_layer])
def test_qwen3_blocks(build, mode):
    module = build(TINY_DECODER)
    weights = make_weights(module, TINY_DECODER, 0)
    ane = check_layout(module, weights, mode)
    counts = op_counts(ane)
    if mode == "static":
        assert counts["mil.conv"] == (4 if build is build_attention_block else 7)
        assert counts["mil.matmul"] == 2  # q·kᵀ and p·v
    else:
        assert counts["mil.conv"] == 0
        assert len(weight_arguments(function_of(ane))) == counts["mil.matmul"] - 2


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["static", "dynamic"])
def test_qwen3_decoder_layer_real_size(mode):
    config = QWEN3_0_6B.with_(seq_len=16)
    module = build_decoder_layer(config)
    weights = make_weights(module, config, 0)
    check_layout(module, weights, mode, rtol=1e-4)


def test_boundaries_are_recorded():
    module = lowered(build_attention_block(TINY_DECODER))
    MilAneLayoutPass().apply(Context(), module)
    function = function_of(module)
    (arg,) = arg_layouts(function)
    assert arg == LayoutAttr("bsc", (1, 8, 64), (1, 64, 1, 8))
    assert arg.map == "[1, S, C] -> [1, C, 1, S]"
    assert function.function_type.inputs.data[0] == tensor((1, 64, 1, 8), f32)


def attention_kernel(s: int, skv: int, h: int = 4, hkv: int = 2, d: int = 8):
    """Attention with [1, H, S, D] inputs and output: a kernel boundary with
    heads, mapped to [1, H·D, 1, S]."""
    types = [
        tensor((1, h, s, d), f32),
        tensor((1, hkv, skv, d), f32),
        tensor((1, hkv, skv, d), f32),
    ]

    def body(q, k, v):
        return [rlx.AttentionOp(q, k, v, mask="causal").result]

    return builtin.ModuleOp([build_function("attention", types, body, ["q", "k", "v"])])


@pytest.mark.parametrize("s, skv", [(6, 6), (4, 6), (6, 4)])
def test_head_layout_arguments(s, skv):
    ane = check_layout(attention_kernel(s, skv), {}, "static")
    layouts = [a.kind.data for a in arg_layouts(function_of(ane))]
    assert layouts == ["bhsd", "bhsd", "bhsd"]


def training_head(n: int, hidden: int, vocab: int):
    """logits = h·Wᵀ; loss and d_logits of softmax cross-entropy."""
    b = stateless_builder(TINY_DECODER)
    types = [tensor((n, hidden), f32), tensor((n,), i32), tensor((n,), f32)]

    def body(h, labels, d_loss):
        logits = b.linear(h, 0, "lm_head", vocab)
        loss = rlx.SoftmaxCrossEntropyOp(logits, labels).result
        grad = rlx.SoftmaxCrossEntropyBackwardOp(logits, labels, d_loss).result
        return [loss, grad]

    return builtin.ModuleOp(
        [build_function("head", types, body, ["h", "labels", "d_loss"])]
    )


@pytest.mark.parametrize("mode", ["static", "dynamic"])
def test_training_head(mode):
    module = training_head(8, 32, 100)
    weights = {
        "layers.0.lm_head.weight": np.random.default_rng(0)
        .standard_normal((100, 32))
        .astype(np.float32)
    }
    function = function_of(module)
    inputs = random_inputs(function, 0)
    inputs[1] = np.arange(8, dtype=np.int32) * 7 % 100
    expected = run_function(module, inputs, weights)
    ane = lowered(module)
    MilAneLayoutPass(weights=mode).apply(Context(), ane)
    CanonicalizePass().apply(make_context(), ane)
    ane.verify()
    assert ane_form_problems(function_of(ane)) == []
    actual = run_ane_form(ane, inputs, weights, [y.shape for y in expected])
    for a, e in zip(actual, expected):
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-6)


def elementwise_program():
    """Channel-layout rules: broadcasting consts, reductions with kept dims,
    softmax and layer_norm over the channels, a [S, C] boundary."""
    types = [tensor((6, 16), f32), tensor((16,), f32)]

    def body(x, g):
        y = rlx.MulOp(x, g).result
        m = rlx.ReduceMaxOp(y, [-1], keep_dims=True).result
        z = rlx.SubOp(y, m).result
        p = rlx.SoftmaxOp(z).result
        ln = rlx.LayerNormOp(p, g, g, 1e-5).result
        return [rlx.AddOp(ln, rlx.ExpOp(z).result).result, m]

    return builtin.ModuleOp([build_function("f", types, body, ["x", "g"])])


def test_channel_rules_stay_in_ane_form():
    ane = check_layout(elementwise_program(), {}, "static")
    counts = op_counts(ane)
    # Only boundary conversions of the [C]-shaped argument remain.
    assert counts["mil.transpose"] == 0, counts


def test_unmappable_shape_is_a_diagnostic():
    types = [tensor((2, 3, 4), f32)]
    module = builtin.ModuleOp(
        [build_function("f", types, lambda x: [rlx.ReluOp(x).result], ["x"])]
    )
    module = lowered(module)
    with pytest.raises(
        PassFailedException, match=r"@f: argument .* no \[1, C, 1, S\] layout"
    ):
        MilAneLayoutPass().apply(Context(), module)


def test_rlx_left_is_a_diagnostic():
    module = build_attention_block(TINY_DECODER)
    with pytest.raises(PassFailedException, match="convert-rlx-to-mil first"):
        MilAneLayoutPass().apply(Context(), module)


@pytest.mark.parametrize(
    "shape", [(), (5,), (3, 5), (1, 3, 5), (1, 2, 3, 4), (1, 6, 1, 7)]
)
def test_layouts_round_trip(shape):
    layout = layout_of(shape)
    x = np.random.default_rng(0).standard_normal(shape)
    a = layout.to_ane(x)
    assert a.shape == layout.ane and len(a.shape) == 4
    np.testing.assert_array_equal(layout.to_logical(a), x)


def test_bhsd_channel_order():
    """[1, H, S, D] maps x[0, h, s, d] to channel h·D + d at position s."""
    x = np.random.default_rng(1).standard_normal((1, 3, 5, 4))
    a = layout_of(x.shape).to_ane(x)
    assert a[0, 2 * 4 + 1, 0, 3] == x[0, 2, 3, 1]


def test_weight_used_both_ways_gets_two_arguments():
    """One weight used as x·Wᵀ and as dy·W: with dynamic weights each use
    needs its own [1, Cin, 1, Cout] argument (regression: one shared argument
    gave wrong numbers)."""
    types = [tensor((8, 32), f32), tensor((8, 16), f32)]

    def body(x, dy):
        w = rlx.ParamOp("w", tensor((16, 32), f32)).result
        return [
            rlx.MatmulOp(x, w, transpose_rhs=True).result,
            rlx.MatmulOp(dy, w).result,
        ]

    module = builtin.ModuleOp([build_function("f", types, body, ["x", "dy"])])
    weights = {
        "w": np.random.default_rng(0).standard_normal((16, 32)).astype(np.float32)
    }
    ane = check_layout(module, weights, "dynamic")
    stored = [s for _, _, s in weight_arguments(function_of(ane))]
    assert sorted(stored) == [False, True]

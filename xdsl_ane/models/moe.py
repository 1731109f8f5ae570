"""The mixture-of-experts MLP of a decoder layer (`MoeConfig`), computed
densely: every expert's FFN runs on every token and the routing weights,
zero for the experts a token does not pick, weigh their sum. Called by
`LlmBuilder.mlp` for the layers `MoeConfig.layers` lists.

The router is one linear to E logits. The top k are picked in float
ops the ANE runs (rlx.topk runs off it, and so does any op on argmax's
integer index): k rounds, each taking the largest score, the lowest
expert index holding it (torch.topk's choice on ties) as a one-hot mask
[1, S, E], and masking it out of the next round; the weights are the
softmax's probabilities where picked, 0 elsewhere, divided by their sum
where the family renormalizes (the softmax over the k picked logits is
that too). Each expert is three linears of its own weights (the ANE's
1×1 convolutions): per layer 3·E matmuls, about 8·E + 8·k ops.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
from xdsl.ir import SSAValue

from xdsl_ane.ane.limits import MASKED
from xdsl_ane.dialects import rlx
from xdsl_ane.dialects.typing import shape_of
from xdsl_ane.models.checkpoint_use import expert_weights, gpt_oss_expert
from xdsl_ane.models.configs import LlmConfig, MoeConfig
from xdsl_ane.models.constants import const


class ExpertsBuilder(Protocol):
    """What the experts need of the decoder's builder (`LlmBuilder`)."""

    c: LlmConfig
    base: str

    def param(self, name: str, shape: tuple[int, ...]) -> SSAValue: ...

    def activate(self, x: SSAValue, layer: int) -> SSAValue: ...

    def rms_norm(
        self,
        x: SSAValue,
        name: str | None,
        stream: int | None = None,
        branch: bool = False,
    ) -> SSAValue: ...


def experts_mlp(
    b: ExpertsBuilder, h: SSAValue, layer: int, weights: SSAValue | None = None
) -> SSAValue:
    """Σ_e w_e · down_e(act(gate_e(h)) · up_e(h)) of the normed hidden
    states h [1, S, hidden], w [1, S, E] the routing weights of
    `routing_weights` on the router's logits h · Gᵀ (or `weights`)."""
    c, moe = b.c, b.c.moe
    assert moe is not None
    width, hidden = moe.ffn_size, c.hidden_size
    if weights is None:
        weights = routing_weights(router_logits(b, h, layer), moe)
    total = None
    for expert in range(moe.experts):
        if moe.swiglu is not None:
            y = gpt_oss_expert_mlp(b, h, layer, expert)
            y = rlx.MulOp(y, rlx.NarrowOp(weights, 2, expert, 1).result).result
            total = y if total is None else rlx.AddOp(total, y).result
            continue
        gate, up, down = (
            b.param(name, shape)
            for name, shape in zip(
                expert_weights(c, layer, expert, b.base),
                [(width, hidden), (width, hidden), (hidden, width)],
            )
        )
        gated = b.activate(rlx.MatmulOp(h, gate, transpose_rhs=True).result, layer)
        inner = rlx.MulOp(gated, rlx.MatmulOp(h, up, transpose_rhs=True).result)
        y = rlx.MatmulOp(inner.result, down, transpose_rhs=True).result
        y = rlx.MulOp(y, rlx.NarrowOp(weights, 2, expert, 1).result).result
        total = y if total is None else rlx.AddOp(total, y).result
    assert total is not None
    return total


def normed_experts(
    b: ExpertsBuilder, x: SSAValue, dense: SSAValue, layer: int
) -> SSAValue:
    """Gemma 4's mixture beside the dense MLP (Family.normed_experts), of
    the residual stream x [1, S, hidden] and the dense MLP's output:
    post_1(dense) + post_2(Σ_e w_e · expert_e(pre_2(x))), the router's
    logits of RMSNorm(x) (no weight) · scale · hidden^−½, the picked
    weights (renormalized) times per_expert_scale. The norms that read the
    stream are the layer's second norm's kind under the fp16 scales."""
    c, moe, p = b.c, b.c.moe, f"{b.base}layers.{layer}."
    assert moe is not None
    stream = 2 * layer + 1
    routed = b.rms_norm(x, None, stream)
    scale = b.param(p + "router.scale", (c.hidden_size,))
    scale = rlx.MulOp(scale, const(np.full(1, c.hidden_size**-0.5, np.float32))).result
    router = b.param(p + "router.proj.weight", (moe.experts, c.hidden_size))
    logits = rlx.MatmulOp(
        rlx.MulOp(routed, scale).result, router, transpose_rhs=True
    ).result
    weights = routing_weights(logits, moe)
    per_expert = b.param(p + "router.per_expert_scale", (moe.experts,))
    weights = rlx.MulOp(weights, per_expert).result
    h = b.rms_norm(x, p + "pre_feedforward_layernorm_2", stream)
    experts = experts_mlp(b, h, layer, weights)
    return rlx.AddOp(
        b.rms_norm(dense, p + "post_feedforward_layernorm_1"),
        b.rms_norm(experts, p + "post_feedforward_layernorm_2"),
    ).result


def router_logits(b: ExpertsBuilder, h: SSAValue, layer: int) -> SSAValue:
    """The router's logits h · Gᵀ (+ its bias) [1, S, E]."""
    c, moe = b.c, b.c.moe
    assert moe is not None
    gate_name = f"{b.base}layers.{layer}.mlp.gate."
    router = b.param(gate_name + "weight", (moe.experts, c.hidden_size))
    logits = rlx.MatmulOp(h, router, transpose_rhs=True).result
    if c.family.router_bias:
        logits = rlx.AddOp(logits, b.param(gate_name + "bias", (moe.experts,))).result
    return logits


def gpt_oss_expert_mlp(b: ExpertsBuilder, h: SSAValue, layer: int, expert: int):
    """GPT-OSS's expert `expert`: gate_up = h · W + b [1, S, 2F] (gate and
    up interleaved), then down((up + 1) · glu) + its bias, glu the clamped
    gate times sigmoid(α · gate), gate ≤ limit and up in ±limit."""
    matrices = [
        b.param(view.name, (view.end - view.start, view.shape[-1]))
        for view in gpt_oss_expert(b.c, layer, expert, b.base)
    ]
    return gpt_oss_expert_math(h, *matrices, b.c.moe)


def gpt_oss_expert_math(h, gate_up, gate_up_bias, down, down_bias, moe):
    """GPT-OSS's expert on h from its gate_up [H, 2F] and bias [1, 2F],
    down [F, H] and bias [1, H] (params or a routed segment's inputs)."""
    assert moe is not None and moe.swiglu is not None
    alpha, limit = moe.swiglu
    f, s = moe.ffn_size, shape_of(h)[1]
    both = rlx.AddOp(rlx.MatmulOp(h, gate_up).result, gate_up_bias).result
    both = rlx.ReshapeOp(both, (1, s, f, 2)).result
    gate, up = (
        rlx.ReshapeOp(rlx.NarrowOp(both, 3, i, 1).result, (1, s, f)).result
        for i in range(2)
    )
    top = const(np.full(1, limit, np.float32))
    gate = rlx.MinOp(gate, top).result
    up = rlx.MaxOp(rlx.MinOp(up, top).result, const(np.full(1, -limit, np.float32)))
    scaled = rlx.MulOp(gate, const(np.full(1, alpha, np.float32))).result
    glu = rlx.MulOp(gate, rlx.SigmoidOp(scaled).result).result
    one = const(np.ones(1, np.float32))
    inner = rlx.MulOp(rlx.AddOp(up.result, one).result, glu).result
    return rlx.AddOp(rlx.MatmulOp(inner, down).result, down_bias).result


def routing_weights(logits: SSAValue, moe: MoeConfig) -> SSAValue:
    """The weight of each expert per token [1, S, E] from the router's
    logits [1, S, E]: p = softmax(logits) where picked (the top k of p, or
    of the logits with topk_of_logits), 0 elsewhere; divided by its sum
    over the picked where renormalized. Each round picks the lowest index
    among the largest scores (torch.topk's choice on ties) by comparing
    floats alone: an integer index (argmax's) would leave the ANE."""
    probabilities = rlx.SoftmaxOp(logits, -1).result
    scores = logits if moe.topk_of_logits else probabilities
    index = const(np.arange(moe.experts, dtype=np.float32).reshape(1, 1, -1))
    past = const(np.full((1, 1, 1), moe.experts, np.float32))
    zero = const(np.zeros((1, 1, 1), np.float32))
    masked = const(np.full((1, 1, 1), MASKED, np.float32))
    weights = None
    for round_ in range(moe.top_k):
        largest = rlx.ReduceMaxOp(scores, [2], keep_dims=True).result
        tied = rlx.CompareOp(scores, largest, "ge").result
        candidates = rlx.WhereOp(tied, index, past).result
        first = rlx.ReduceMinOp(candidates, [2], keep_dims=True).result
        picked = rlx.CompareOp(index, first, "eq").result  # [1, S, E]
        weight = rlx.WhereOp(picked, probabilities, zero).result
        weights = weight if weights is None else rlx.AddOp(weights, weight).result
        if round_ + 1 < moe.top_k:
            scores = rlx.WhereOp(picked, masked, scores).result
    assert weights is not None
    if not moe.renormalize:
        return weights
    total = rlx.ReduceSumOp(weights, [2], keep_dims=True).result
    return rlx.DivOp(weights, total).result

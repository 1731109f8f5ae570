"""Qwen3.5's gated delta-net (transformers' Qwen3_5GatedDeltaNet), the
mixer of its `linear_attention` layers, in the chunked form: one prefill
call of S tokens is one chunk.

    q, k, v = silu(causal_conv(in_proj_qkv(h)))   (short_conv.causal_conv)
    z = in_proj_z(h);  β = sigmoid(in_proj_b(h))
    g = −exp(A_log) · softplus(in_proj_a(h) + dt_bias)      (≤ 0, per head)

q and k are L2-normed (q also times d_k^−½) and repeated from the key
heads to the value heads. The state S [d_k, d_v] of a head follows
S_t = exp(g_t)·S_{t−1} + k_t ⊗ β_t(v_t − exp(g_t)·S_{t−1}ᵀk_t) and
o_t = S_tᵀ q_t. Over a chunk, with cum the running sum of g and
P[i, j] = exp(cum_i − cum_j) for j ≤ i (0 above):

    T = I + strict_lower((β·k)kᵀ ∘ P)        (a unit lower triangle)
    U = T⁻¹(β·v),  W = T⁻¹(β·k·exp(cum))
    V = U − W·S₀
    o = (q·exp(cum))·S₀ + ((q kᵀ) ∘ P)·V
    S = exp(cum_S)·S₀ + (k·exp(cum_S − cum))ᵀ·V

T⁻¹ is the finite series Σ_j (I − T)^j, as ⌈log₂ S⌉ products
(I + M)(I + M²)(I + M⁴)… of M = I − T, which is nilpotent: matmuls the
ANE runs, where transformers solves the triangle. Then per head
RMSNorm(o)·weight·silu(z) and out_proj. The states: `delta_state`
[layers, value heads, d_k, d_v] and `delta_conv_state`."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from xdsl.ir import SSAValue

from xdsl_ane.dialects import rlx
from xdsl_ane.dialects.typing import shape_of
from xdsl_ane.models.configs import DeltaShape
from xdsl_ane.models.short_conv import causal_conv, constant
from xdsl_ane.models.ssm import ChunkState, Decays, heads_first, running_sum, time_steps

DELTA_STATE = "delta_state"
DELTA_CONV_STATE = "delta_conv_state"


def delta_net(b: Any, h: SSAValue, layer: int, position, caches) -> SSAValue:
    """The mixer of layer `layer` over its normed input h [1, S, hidden],
    `b` the decoder's LlmBuilder."""
    c = b.c
    m: DeltaShape = c.delta
    s = shape_of(h)[1]
    name = "linear_attn."
    p = f"{b.base}layers.{layer}.{name}"
    kd, vd = m.k_heads * m.k_dim, m.v_heads * m.v_dim
    qkv = b.linear(h, layer, name + "in_proj_qkv", m.conv_width)
    z = b.linear(h, layer, name + "in_proj_z", vd)
    beta = b.linear(h, layer, name + "in_proj_b", m.v_heads)
    a = b.linear(h, layer, name + "in_proj_a", m.v_heads)
    where = (position, caches)
    qkv = causal_conv(
        b,
        qkv,
        layer,
        p + "conv1d",
        m.conv_taps,
        DELTA_CONV_STATE,
        where,
        name + "conv1d",
    )
    qkv = rlx.SiluOp(qkv).result
    q = normed_heads(rlx.NarrowOp(qkv, 2, 0, kd).result, m, m.k_dim**-0.5)
    k = normed_heads(rlx.NarrowOp(qkv, 2, kd, kd).result, m, 1.0)
    v = heads_first(rlx.NarrowOp(qkv, 2, 2 * kd, vd).result, m.v_heads, m.v_dim)
    beta = rlx.TransposeOp(
        rlx.ReshapeOp(rlx.SigmoidOp(beta).result, (s, m.v_heads)).result, (1, 0)
    ).result  # [Hv, S]
    a_log = b.param(p + "A_log", (m.v_heads,))
    A = rlx.NegOp(rlx.ExpOp(rlx.ReshapeOp(a_log, (m.v_heads, 1)).result).result).result
    g = rlx.MulOp(time_steps(b, a, p + "dt_bias", m.v_heads), A).result  # [Hv, S]
    cum = running_sum(g)
    o = chunk(b, layer, (q, k, v, beta, cum), m, where)  # [Hv, S, dv]
    o = rlx.ReshapeOp(rlx.TransposeOp(o, (1, 0, 2)).result, (1, s, m.v_heads, m.v_dim))
    ones = constant(np.ones(m.v_dim, np.float32))
    o = rlx.RmsNormOp(o.result, ones, m.eps).result
    o = rlx.MulOp(o, b.param(p + "norm.weight", (m.v_dim,))).result
    o = rlx.ReshapeOp(o, (1, s, vd)).result
    o = rlx.MulOp(o, rlx.SiluOp(z).result).result
    return b.linear(o, layer, name + "out_proj", c.hidden_size)


def normed_heads(x: SSAValue, m: DeltaShape, scale: float) -> SSAValue:
    """q or k [1, S, Hk·dk] L2-normed per head (times `scale`: d_k^−½ for
    q), repeated to the value heads: [Hv, S, dk], value head h reading key
    head h // (Hv / Hk). x·rsqrt(Σx² + 1e−6) is RMSNorm with eps 1e−6/dk
    times dk^−½."""
    s = shape_of(x)[1]
    heads = heads_first(x, m.k_heads, m.k_dim)  # [Hk, S, dk]
    gamma = constant(np.full(m.k_dim, scale / math.sqrt(m.k_dim), np.float32))
    heads = rlx.RmsNormOp(heads, gamma, 1e-6 / m.k_dim).result
    repeats = m.v_heads // m.k_heads
    if repeats == 1:
        return heads
    grouped = rlx.ReshapeOp(heads, (m.k_heads, 1, s, m.k_dim)).result
    grouped = rlx.ConcatOp([grouped] * repeats, 1).result
    return rlx.ReshapeOp(grouped, (m.v_heads, s, m.k_dim)).result


def inverse_unit_lower(t_minus_identity: SSAValue, s: int, heads: int) -> SSAValue:
    """(I + N)⁻¹ of a strictly lower N [H, S, S]: Σ_j (−N)^j as the
    products (I + M)(I + M²)(I + M⁴)…, M = −N (M^S = 0)."""
    result = constant(
        np.broadcast_to(np.eye(s, dtype=np.float32), (heads, s, s)).copy()
    )
    power = rlx.NegOp(t_minus_identity).result
    steps = math.ceil(math.log2(s)) if s > 1 else 0
    for i in range(steps):
        result = rlx.AddOp(result, rlx.MatmulOp(result, power).result).result
        if i + 1 < steps:
            power = rlx.MatmulOp(power, power).result
    return result


def chunk(b: Any, layer: int, values, m: DeltaShape, where) -> SSAValue:
    """o [Hv, S, dv] of the chunk from the state before it (zero at position
    0, and without states); writes the state after it."""
    q, k, v, beta, cum = values
    caches = where[1]
    s = shape_of(q)[1]
    decays = Decays(cum, m.v_heads)
    beta3 = rlx.ReshapeOp(beta, (m.v_heads, s, 1)).result
    k_beta = rlx.MulOp(k, beta3).result
    system = rlx.MatmulOp(k_beta, k, transpose_rhs=True).result
    system = rlx.MulOp(system, decays.pairs).result
    strict = constant(np.tril(np.ones((s, s), np.float32), -1))
    inverse = inverse_unit_lower(rlx.MulOp(system, strict).result, s, m.v_heads)
    u = rlx.MatmulOp(inverse, rlx.MulOp(v, beta3).result).result
    w = rlx.MatmulOp(inverse, rlx.MulOp(k_beta, decays.grown).result).result
    intra = rlx.MatmulOp(q, k, transpose_rhs=True).result
    intra = rlx.MulOp(intra, decays.pairs).result
    if not caches or DELTA_STATE not in caches:  # S₀ = 0
        return rlx.MatmulOp(intra, u).result
    state = ChunkState(b, layer, DELTA_STATE, (m.v_heads, m.k_dim, m.v_dim), where)
    v_new = rlx.SubOp(u, rlx.MatmulOp(w, state.before).result).result
    carried = rlx.MatmulOp(rlx.MulOp(q, decays.grown).result, state.before).result
    o = rlx.AddOp(carried, rlx.MatmulOp(intra, v_new).result).result
    state.carry(decays, k, v_new)
    return o

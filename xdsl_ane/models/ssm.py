"""Mamba2's state-space mixer (transformers' Mamba2Mixer), in the chunked
form: one prefill call of S tokens is one chunk.

    z, xBC, dt = in_proj(h)
    x, B, C = silu(causal_conv(xBC))             (short_conv.causal_conv)
    dt = softplus(dt + dt_bias), clamped to time_step_limit;  a = dt · A,
    A = −exp(A_log)  (per head)

Per head, with head h reading group h // (heads / groups) of B and C, the
state h [P, N] (P the head's dim, N the state size) follows
h_t = exp(a_t)·h_{t−1} + dt_t·x_t ⊗ B_t and y_t = h_t·C_t + D·x_t. Over
a chunk, with cum the running sum of a:

    y_i = Σ_{j≤i} exp(cum_i − cum_j)(C_i·B_j) dt_j x_j + exp(cum_i) h₀·C_i + D x_i
    h_S = exp(cum_S) h₀ + Σ_j exp(cum_S − cum_j) dt_j x_j ⊗ B_j

— matmuls of [S, S] scores per head, as attention's, and the running
sum a product by a triangle of ones (h₀: the state before the call, zero
at position 0). Then the gated RMSNorm per group
of norm(y · silu(z)) · weight and out_proj. The states: `ssm_state`
[layers, heads, P, N] and `ssm_conv_state` [layers, 1, T − 1, conv
width]."""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.ir import SSAValue

from xdsl_ane.ane.limits import MASKED
from xdsl_ane.dialects import rlx
from xdsl_ane.dialects.typing import shape_of
from xdsl_ane.models.configs import SsmShape
from xdsl_ane.models.short_conv import causal_conv, constant, started, write_rows

SSM_STATE = "ssm_state"
SSM_CONV_STATE = "ssm_conv_state"


def ssm_mixer(b: Any, h: SSAValue, layer: int, position, caches) -> SSAValue:
    """The mixer of layer `layer` over its normed input h [1, S, hidden],
    `b` the decoder's LlmBuilder."""
    c = b.c
    m: SsmShape = c.ssm
    s = shape_of(h)[1]
    p = f"{b.base}layers.{layer}.mixer."
    proj = b.linear(h, layer, "mixer.in_proj", m.projection)
    z = rlx.NarrowOp(proj, 2, 0, m.inner).result
    xbc = rlx.NarrowOp(proj, 2, m.inner, m.conv_width).result
    dt = rlx.NarrowOp(proj, 2, m.inner + m.conv_width, m.heads).result
    where = (position, caches)
    xbc = causal_conv(
        b, xbc, layer, p + "conv1d", m.conv_taps, SSM_CONV_STATE, where, "mixer.conv1d"
    )
    xbc = rlx.SiluOp(xbc).result
    x = heads_first(rlx.NarrowOp(xbc, 2, 0, m.inner).result, m.heads, m.head_dim)
    width = m.groups * m.state_size
    B = group_heads(rlx.NarrowOp(xbc, 2, m.inner, width).result, m)
    C = group_heads(rlx.NarrowOp(xbc, 2, m.inner + width, width).result, m)
    dt = time_steps(b, dt, p + "dt_bias", m.heads, m.dt_limit)  # [H, S]
    a_log = b.param(p + "A_log", (m.heads,))
    A = rlx.NegOp(rlx.ExpOp(rlx.ReshapeOp(a_log, (m.heads, 1)).result).result).result
    # the running sum as a product by a triangle of ones: the ANE's (it
    # has no cumsum)
    upper = constant(np.triu(np.ones((s, s), np.float32)))
    cum = rlx.MatmulOp(rlx.MulOp(dt, A).result, upper).result  # [H, S]
    xdt = rlx.MulOp(x, rlx.ReshapeOp(dt, (m.heads, s, 1)).result).result
    y = chunk_output(b, layer, (x, B, C, xdt, cum), m, where)
    y = rlx.TransposeOp(y, (1, 0, 2)).result
    y = rlx.ReshapeOp(y, (1, s, m.inner)).result
    y = gated_norm(b, y, z, p, m)
    return b.linear(y, layer, "mixer.out_proj", c.hidden_size)


def heads_first(v: SSAValue, heads: int, dim: int) -> SSAValue:
    """[1, S, H·D] -> [H, S, D]."""
    s = shape_of(v)[1]
    return rlx.TransposeOp(rlx.ReshapeOp(v, (s, heads, dim)).result, (1, 0, 2)).result


def group_heads(v: SSAValue, m: SsmShape) -> SSAValue:
    """B or C [1, S, G·N] as [H, S, N], head h reading group h // (H / G)."""
    s = shape_of(v)[1]
    grouped = heads_first(v, m.groups, m.state_size)  # [G, S, N]
    grouped = rlx.ReshapeOp(grouped, (m.groups, 1, s, m.state_size)).result
    repeats = m.heads // m.groups
    if repeats > 1:
        grouped = rlx.ConcatOp([grouped] * repeats, 1).result
    return rlx.ReshapeOp(grouped, (m.heads, s, m.state_size)).result


def time_steps(
    b: Any,
    dt: SSAValue,
    bias: str,
    heads: int,
    limit: tuple[float, float] = (0.0, float("inf")),
) -> SSAValue:
    """softplus(dt + the param `bias`) [1, S, H], clamped to `limit`
    (time_step_limit), as [H, S]."""
    s = shape_of(dt)[1]
    dt = rlx.AddOp(dt, b.param(bias, (heads,))).result
    one = constant(np.ones(1, np.float32))
    dt = rlx.LogOp(rlx.AddOp(rlx.ExpOp(dt).result, one).result).result
    low, high = limit
    if low > 0:
        dt = rlx.MaxOp(dt, constant(np.full(1, low, np.float32))).result
    if np.isfinite(high):
        dt = rlx.MinOp(dt, constant(np.full(1, high, np.float32))).result
    return rlx.TransposeOp(rlx.ReshapeOp(dt, (s, heads)).result, (1, 0)).result


def chunk_output(b: Any, layer: int, values, m: SsmShape, where):
    """y [H, S, P] of the chunk (from the state it starts from, where the
    program has one); writes the state it ends with."""
    x, B, C, xdt, cum = values
    position, caches = where
    s = shape_of(x)[1]
    column = rlx.ReshapeOp(cum, (m.heads, s, 1)).result
    row = rlx.ReshapeOp(cum, (m.heads, 1, s)).result
    causal = constant(np.tril(np.ones((s, s), np.bool_)))
    diff = rlx.SubOp(column, row).result
    diff = rlx.WhereOp(causal, diff, constant(np.full(1, MASKED, np.float32))).result
    scores = rlx.MulOp(
        rlx.MatmulOp(C, B, transpose_rhs=True).result, rlx.ExpOp(diff).result
    ).result
    y = rlx.MatmulOp(scores, xdt).result  # [H, S, P]
    d = rlx.ReshapeOp(
        b.param(f"{b.base}layers.{layer}.mixer.D", (m.heads,)), (m.heads, 1, 1)
    )
    y = rlx.AddOp(y, rlx.MulOp(x, d.result).result).result
    state = caches.get(SSM_STATE) if caches else None
    if state is None:
        return y
    index = b.decoder.cache_layers()[SSM_STATE].index(layer)
    old = rlx.ReadStateOp(state).result
    shape = (m.heads, m.head_dim, m.state_size)
    mine = rlx.ReshapeOp(rlx.NarrowOp(old, 0, index, 1).result, shape).result
    h0 = started(position, mine, constant(np.zeros(shape, np.float32)))
    carried = rlx.MatmulOp(C, h0, transpose_rhs=True).result  # [H, S, P]
    y = rlx.AddOp(y, rlx.MulOp(carried, rlx.ExpOp(column).result).result).result
    last = rlx.NarrowOp(cum, 1, s - 1, 1).result  # [H, 1]
    weights = rlx.ExpOp(rlx.SubOp(last, cum).result).result  # [H, S]
    weighted = rlx.MulOp(xdt, rlx.ReshapeOp(weights, (m.heads, s, 1)).result).result
    added = rlx.MatmulOp(
        rlx.TransposeOp(weighted, (0, 2, 1)).result, B
    ).result  # [H, P, N]
    decay = rlx.ReshapeOp(rlx.ExpOp(last).result, (m.heads, 1, 1)).result
    new = rlx.AddOp(rlx.MulOp(h0, decay).result, added).result
    write_rows(state, old, index, rlx.ReshapeOp(new, (1, *shape)).result)
    return y


def gated_norm(b: Any, y: SSAValue, z: SSAValue, p: str, m: SsmShape) -> SSAValue:
    """RMSNorm per group of y · silu(z) [1, S, inner], times the weight."""
    s = shape_of(y)[1]
    y = rlx.MulOp(y, rlx.SiluOp(z).result).result
    size = m.inner // m.groups
    grouped = rlx.ReshapeOp(y, (1, s, m.groups, size)).result
    ones = constant(np.ones(size, np.float32))
    normed = rlx.RmsNormOp(grouped, ones, m.eps).result
    normed = rlx.ReshapeOp(normed, (1, s, m.inner)).result
    return rlx.MulOp(normed, b.param(p + "norm.weight", (m.inner,))).result

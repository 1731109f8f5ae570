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
from xdsl_ane.models.xielu import softplus

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
    cum = running_sum(rlx.MulOp(dt, A).result)  # [H, S]
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
    dt = softplus(rlx.AddOp(dt, b.param(bias, (heads,))).result)
    low, high = limit
    if low > 0:
        dt = rlx.MaxOp(dt, constant(np.full(1, low, np.float32))).result
    if np.isfinite(high):
        dt = rlx.MinOp(dt, constant(np.full(1, high, np.float32))).result
    return rlx.TransposeOp(rlx.ReshapeOp(dt, (s, heads)).result, (1, 0)).result


class Decays:
    """The decays of a chunk from the running sum cum [H, S] of the log
    decays: `pairs` P [H, S, S], exp(cum_i − cum_j) where j ≤ i and 0
    above; `grown` exp(cum) [H, S, 1] (since the chunk's start);
    `to_end` exp(cum_S − cum) [H, S, 1] (until its end); `whole`
    exp(cum_S) [H, 1, 1]."""

    def __init__(self, cum: SSAValue, heads: int):
        s = shape_of(cum)[1]
        column = rlx.ReshapeOp(cum, (heads, s, 1)).result
        row = rlx.ReshapeOp(cum, (heads, 1, s)).result
        causal = constant(np.tril(np.ones((s, s), np.bool_)))
        masked = constant(np.full(1, MASKED, np.float32))
        diff = rlx.WhereOp(causal, rlx.SubOp(column, row).result, masked).result
        self.pairs = rlx.ExpOp(diff).result
        self.grown = rlx.ExpOp(column).result
        last = rlx.NarrowOp(cum, 1, s - 1, 1).result  # [H, 1]
        to_end = rlx.ExpOp(rlx.SubOp(last, cum).result).result
        self.to_end = rlx.ReshapeOp(to_end, (heads, s, 1)).result
        self.whole = rlx.ReshapeOp(rlx.ExpOp(last).result, (heads, 1, 1)).result


def running_sum(x: SSAValue) -> SSAValue:
    """The running sum of x [H, S] along S, as a product by a triangle of
    ones: the ANE's (it has no cumsum)."""
    s = shape_of(x)[1]
    return rlx.MatmulOp(x, constant(np.triu(np.ones((s, s), np.float32)))).result


class ChunkState:
    """A recurrent mixer's state of layer `layer` (`name` of the caches,
    [layers, *shape]): `before` the chunk, zero at position 0; `carry`
    writes the one after it."""

    def __init__(self, b: Any, layer: int, name: str, shape, where):
        position, caches = where
        self.state = caches[name]
        self.index = b.decoder.cache_layers()[name].index(layer)
        self.old = rlx.ReadStateOp(self.state).result
        self.shape = tuple(shape)
        mine = rlx.NarrowOp(self.old, 0, self.index, 1).result
        mine = rlx.ReshapeOp(mine, self.shape).result
        zeros = constant(np.zeros(self.shape, np.float32))
        self.before = started(position, mine, zeros)

    def carry(self, decays: Decays, left: SSAValue, right: SSAValue) -> None:
        """Writes exp(cum_S)·before + (left · to_end)ᵀ · right: [H, S, A] by
        [H, S, B] sums to the state's [H, A, B]."""
        decayed = rlx.MulOp(left, decays.to_end).result
        added = rlx.MatmulOp(rlx.TransposeOp(decayed, (0, 2, 1)).result, right).result
        new = rlx.AddOp(rlx.MulOp(self.before, decays.whole).result, added).result
        value = rlx.ReshapeOp(new, (1, *self.shape)).result
        write_rows(self.state, self.old, self.index, value)


def chunk_output(b: Any, layer: int, values, m: SsmShape, where):
    """y [H, S, P] of the chunk (from the state it starts from, where the
    program has one); writes the state it ends with."""
    x, B, C, xdt, cum = values
    caches = where[1]
    decays = Decays(cum, m.heads)
    scores = rlx.MulOp(rlx.MatmulOp(C, B, transpose_rhs=True).result, decays.pairs)
    y = rlx.MatmulOp(scores.result, xdt).result  # [H, S, P]
    d = rlx.ReshapeOp(
        b.param(f"{b.base}layers.{layer}.mixer.D", (m.heads,)), (m.heads, 1, 1)
    )
    y = rlx.AddOp(y, rlx.MulOp(x, d.result).result).result
    if not caches or SSM_STATE not in caches:
        return y
    state = ChunkState(b, layer, SSM_STATE, (m.heads, m.head_dim, m.state_size), where)
    carried = rlx.MatmulOp(C, state.before, transpose_rhs=True).result  # [H, S, P]
    y = rlx.AddOp(y, rlx.MulOp(carried, decays.grown).result).result
    state.carry(decays, xdt, B)
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

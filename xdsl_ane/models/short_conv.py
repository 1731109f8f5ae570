"""Depthwise causal convolutions over the sequence whose last inputs are
recurrent state, and LFM2's gated short convolution built of one
(transformers' Lfm2ShortConv), the mixer of its `conv` layers in place of
attention:

    B, C, x = in_proj(h)                 (thirds of [S, 3·hidden])
    y = out_proj(C · conv(B · x))

`causal_conv` of T taps: out[t] = Σ_k w[:, k] · u[t + k] over u, the last
T − 1 rows of the input before this call followed by this call's S rows,
plus the bias where there is one. Those T − 1 rows are the layer's
recurrent state (a state [layers, 1, T − 1, width] beside the KV cache,
the width last as the ANE wants a state's last axis a multiple of 32):
read before the call, zero at position 0 (a new sequence), and written
back as the last T − 1 rows of u. A prefill chunk's padding rows would
enter the state, so a model with one runs a prompt's short last chunk
through decode (`kv_cache.prompt_calls`)."""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.ir import SSAValue

from xdsl_ane.dialects import rlx
from xdsl_ane.dialects.typing import shape_of
from xdsl_ane.models.constants import const as constant

CONV_STATE = "conv_state"
"""The state of the short convolutions' last rows."""


def short_conv(b: Any, h: SSAValue, layer: int, position, caches) -> SSAValue:
    """The mixer of conv layer `layer` over its normed input h [1, S, D],
    with `b` the decoder's LlmBuilder (its params, linears and caches)."""
    c = b.c
    d = c.hidden_size
    bcx = b.linear(h, layer, "conv.in_proj", 3 * d)
    gate_b, gate_c, x = (rlx.NarrowOp(bcx, 2, i * d, d).result for i in range(3))
    bx = rlx.MulOp(gate_b, x).result
    name = f"{b.base}layers.{layer}.conv.conv"
    out = causal_conv(
        b, bx, layer, name, c.conv_taps, CONV_STATE, (position, caches), "conv.conv"
    )
    return b.linear(rlx.MulOp(gate_c, out).result, layer, "conv.out_proj", d)


def causal_conv(
    b: Any,
    u: SSAValue,
    layer: int,
    name: str,
    taps: int,
    state_name: str,
    where: tuple[Any, Any],
    bias_key: str,
) -> SSAValue:
    """The depthwise causal convolution of `taps` taps over u [1, S, W],
    with weight `name`.weight [W, 1, taps] (and `name`.bias [W] where
    config.biases has `bias_key`); `where` = (position, caches): the
    state `state_name` holds layer `layer`'s last rows (stateless without
    caches: zeros)."""
    c = b.c
    position, caches = where
    s, width = shape_of(u)[1], shape_of(u)[2]
    state = caches.get(state_name) if caches else None
    old, row, previous = read_rows(b, layer, state, state_name, position, taps, width)
    window = rlx.ConcatOp([previous, u], 1).result  # [1, T − 1 + S, W]
    weight = b.param(name + ".weight", (width, 1, taps))
    weight = rlx.TransposeOp(rlx.ReshapeOp(weight, (width, taps)).result, (1, 0)).result
    out = None
    for k in range(taps):
        tap = rlx.MulOp(
            rlx.NarrowOp(window, 1, k, s).result, rlx.NarrowOp(weight, 0, k, 1).result
        ).result
        out = tap if out is None else rlx.AddOp(out, tap).result
    assert out is not None
    if bias_key in c.biases:
        out = rlx.AddOp(out, b.param(name + ".bias", (width,))).result
    if state is not None:
        last = rlx.NarrowOp(window, 1, s, taps - 1).result
        write_rows(state, old, row, rlx.ReshapeOp(last, (1, 1, taps - 1, width)).result)
    return out


def write_rows(state, old: SSAValue, row: int, value: SSAValue) -> None:
    """Writes `value` [1, …] at row `row` of the state's value `old`."""
    begin = np.zeros(len(shape_of(old)), np.int32)
    begin[0] = row
    rlx.WriteStateOp(state, rlx.SliceUpdateOp(old, value, constant(begin)).result)


def read_rows(b: Any, layer: int, state, state_name: str, position, taps, width):
    """(the state's value, the layer's row in it, its last rows [1, T − 1,
    W]: zero at position 0 and in a stateless program)."""
    zeros = constant(np.zeros((1, taps - 1, width), np.float32))
    if state is None:
        return None, 0, zeros
    row = b.decoder.cache_layers()[state_name].index(layer)
    old = rlx.ReadStateOp(state).result
    mine = rlx.NarrowOp(old, 0, row, 1).result
    mine = rlx.ReshapeOp(mine, (1, taps - 1, width)).result
    return old, row, started(position, mine, zeros)


def started(position: SSAValue, value: SSAValue, zeros: SSAValue) -> SSAValue:
    """`value` past position 0, `zeros` at it (a new sequence)."""
    after = rlx.CompareOp(position, constant(np.zeros(1, np.int32)), "gt").result
    after = rlx.ReshapeOp(after, (1,) * len(shape_of(value))).result
    return rlx.WhereOp(after, value, zeros).result

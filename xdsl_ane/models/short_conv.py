"""LFM2's gated short convolution, the mixer of its `conv` layers in place
of attention (transformers' Lfm2ShortConv):

    B, C, x = in_proj(h)                 (thirds of [S, 3·hidden])
    y = out_proj(C · conv(B · x))

`conv` is a depthwise causal convolution of T taps (`conv_L_cache`) over
the sequence: out[t] = Σ_k w[:, k] · u[t + k] over u, the last T − 1 rows
of B·x before this call followed by this call's S rows, plus the bias
where `conv_bias` is set. Those T − 1 rows are the layer's recurrent
state (the decoder's `conv_state` [layers, 1, T − 1, hidden], Core ML
state beside the KV cache, hidden last as the ANE wants a state's last
axis a multiple of 32): read before the call, zero at position 0 (a new
sequence), and written back as the last T − 1 rows of u. A prefill
chunk's padding rows would enter the state, so a model with it runs a
prompt's short last chunk through decode (`llm.prompt_calls`)."""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.ir import SSAValue

from xdsl_ane.dialects import rlx
from xdsl_ane.dialects.typing import shape_of

CONV_STATE = "conv_state"
"""The state of the short convolutions' last rows."""


def constant(value: np.ndarray) -> SSAValue:
    return rlx.ConstantOp.of(value).result


def short_conv(b: Any, h: SSAValue, layer: int, position, caches) -> SSAValue:
    """The mixer of conv layer `layer` over its normed input h [1, S, D],
    with `b` the decoder's LlmBuilder (its params, linears and caches)."""
    c = b.c
    d, taps, s = c.hidden_size, c.conv_taps, shape_of(h)[1]
    bcx = b.linear(h, layer, "conv.in_proj", 3 * d)
    gate_b, gate_c, x = (rlx.NarrowOp(bcx, 2, i * d, d).result for i in range(3))
    bx = rlx.MulOp(gate_b, x).result
    state = caches.get(CONV_STATE) if caches else None
    old, row, previous = read_conv_state(b, layer, state, position)
    window = rlx.ConcatOp([previous, bx], 1).result  # [1, T − 1 + S, D]
    name = f"{b.base}layers.{layer}.conv.conv"
    weight = b.param(name + ".weight", (d, 1, taps))
    weight = rlx.TransposeOp(rlx.ReshapeOp(weight, (d, taps)).result, (1, 0)).result
    out = None
    for k in range(taps):
        tap = rlx.MulOp(
            rlx.NarrowOp(window, 1, k, s).result, rlx.NarrowOp(weight, 0, k, 1).result
        ).result
        out = tap if out is None else rlx.AddOp(out, tap).result
    assert out is not None
    if "conv.conv" in c.biases:
        out = rlx.AddOp(out, b.param(name + ".bias", (d,))).result
    if state is not None:
        last = rlx.ReshapeOp(
            rlx.NarrowOp(window, 1, s, taps - 1).result, (1, 1, taps - 1, d)
        ).result
        begin = constant(np.array([row, 0, 0, 0], np.int32))
        rlx.WriteStateOp(state, rlx.SliceUpdateOp(old, last, begin).result)
    y = rlx.MulOp(gate_c, out).result
    return b.linear(y, layer, "conv.out_proj", d)


def read_conv_state(b: Any, layer: int, state, position):
    """(the state's value, the layer's row in it, its last rows [1, T − 1,
    D]: zero at position 0 and in a stateless program)."""
    c = b.c
    zeros = constant(np.zeros((1, c.conv_taps - 1, c.hidden_size), np.float32))
    if state is None:
        return None, 0, zeros
    row = b.decoder.cache_layers()[CONV_STATE].index(layer)
    old = rlx.ReadStateOp(state).result
    mine = rlx.ReshapeOp(
        rlx.NarrowOp(old, 0, row, 1).result, (1, c.conv_taps - 1, c.hidden_size)
    ).result
    started = rlx.CompareOp(position, constant(np.zeros(1, np.int32)), "gt").result
    started = rlx.ReshapeOp(started, (1, 1, 1)).result
    return old, row, rlx.WhereOp(started, mine, zeros).result

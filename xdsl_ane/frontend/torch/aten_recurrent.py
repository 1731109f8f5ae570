"""ATen's recurrent layers to rlx: `lstm.input` (nn.LSTM, one or more
layers, one or both directions, batch_first or not), unrolled over the
static sequence length.

Per layer and direction the input projection of every step is one matmul,
x · W_ihᵀ + (b_ih + b_hh); each step then adds h · W_hhᵀ and applies the
gates in torch's order (input, forget, cell, output):

    i, f, o = σ(gates)   g = tanh(gates)   c = f·c + i·g   h = o·tanh(c)

The reverse direction walks the steps from the last and writes each output
at its own step; the directions' outputs are joined along the features.
A zero initial state (nn.LSTM's default) drops the first step's h · W_hhᵀ
and f·c.
"""

from __future__ import annotations

from typing import Any

import torch
from xdsl.ir import SSAValue

from xdsl_ane.dialects import rlx
from xdsl_ane.dialects.typing import shape_of
from xdsl_ane.frontend.torch.aten import narrow, reshape, translates
from xdsl_ane.frontend.torch.translate import (
    Const,
    TranslationError,
    Translator,
    element_type,
)

aten = torch.ops.aten


def is_zero(value: Any) -> bool:
    return isinstance(value, Const) and not bool(value.value.any())


def initial_state(tr: Translator, state: Any, index: int, element) -> SSAValue | None:
    """Row `index` of h0 or c0 [L·D, B, H] as [B, H]; None when it is zero."""
    if isinstance(state, Const):
        row = state.value[index]
        if not bool(row.any()):
            return None
        return tr.value(Const(row.contiguous(), f"{state.origin}.{index}"), element)
    state = tr.value(state, element)
    _, batch, hidden = shape_of(state)
    return reshape(narrow(state, 0, index, 1), (batch, hidden))


def summed_bias(tr: Translator, b_ih: Any, b_hh: Any, element) -> SSAValue:
    if isinstance(b_ih, Const) and isinstance(b_hh, Const):
        total = Const(b_ih.value + b_hh.value, f"{b_ih.weight or b_ih.origin}.sum")
        return tr.value(total, element)
    return rlx.AddOp(tr.value(b_ih, element), tr.value(b_hh, element)).result


def direction(
    tr: Translator,
    seq: SSAValue,
    weights: list[Any],
    state: tuple[SSAValue | None, SSAValue | None],
    reverse: bool,
    element,
) -> tuple[SSAValue, SSAValue, SSAValue]:
    """One direction of one layer over seq [B, T, I]: its outputs [B, T, H]
    and its last h and c [B, H]."""
    batch, steps, _ = shape_of(seq)
    w_ih, w_hh = tr.value(weights[0], element), tr.value(weights[1], element)
    hidden = shape_of(w_hh)[1]
    projected = rlx.MatmulOp(seq, w_ih, transpose_rhs=True).result
    if len(weights) == 4:
        bias = summed_bias(tr, weights[2], weights[3], element)
        projected = rlx.AddOp(projected, bias).result
    h, c = state
    outputs: list[SSAValue] = [seq] * steps
    for t in reversed(range(steps)) if reverse else range(steps):
        gates = reshape(narrow(projected, 1, t, 1), (batch, 4 * hidden))
        if h is not None:
            recurrent = rlx.MatmulOp(h, w_hh, transpose_rhs=True).result
            gates = rlx.AddOp(gates, recurrent).result
        sigmoid = rlx.SigmoidOp(gates).result
        i = narrow(sigmoid, 1, 0, hidden)
        f = narrow(sigmoid, 1, hidden, hidden)
        g = rlx.TanhOp(narrow(gates, 1, 2 * hidden, hidden)).result
        o = narrow(sigmoid, 1, 3 * hidden, hidden)
        c_new = rlx.MulOp(i, g).result
        if c is not None:
            c_new = rlx.AddOp(rlx.MulOp(f, c).result, c_new).result
        c = c_new
        h = rlx.MulOp(o, rlx.TanhOp(c).result).result
        outputs[t] = reshape(h, (batch, 1, hidden))
    assert h is not None and c is not None
    joined = outputs[0] if steps == 1 else rlx.ConcatOp(outputs, 1).result
    return joined, h, c


@translates(aten.lstm.input)
def lstm(
    tr: Translator,
    node,
    x,
    hx,
    params,
    has_biases,
    num_layers,
    dropout,
    train,
    bidirectional,
    batch_first,
):
    """(output, h_n, c_n) of nn.LSTM, unrolled (see the module docstring)."""
    element = element_type(node.meta["val"][0].dtype, f"the result of {node.name}")
    directions = 2 if bidirectional else 1
    per_direction = 4 if has_biases else 2
    if len(params) != num_layers * directions * per_direction:
        raise TranslationError("lstm with projections (proj_size) is not supported")
    if train and dropout:
        raise TranslationError("lstm with dropout in training mode: export in eval()")
    seq = tr.value(x, element)  # nn.LSTM adds the batch axis of unbatched input
    if not batch_first:
        seq = rlx.TransposeOp(seq, (1, 0, 2)).result
    h0, c0 = hx
    last_h, last_c = [], []
    for layer in range(num_layers):
        outputs = []
        for d in range(directions):
            k = layer * directions + d
            weights = params[k * per_direction : (k + 1) * per_direction]
            state = (
                initial_state(tr, h0, k, element),
                initial_state(tr, c0, k, element),
            )
            out, h, c = direction(tr, seq, weights, state, d == 1, element)
            outputs.append(out)
            last_h.append(h)
            last_c.append(c)
        seq = outputs[0] if directions == 1 else rlx.ConcatOp(outputs, 2).result
    output = seq if batch_first else rlx.TransposeOp(seq, (1, 0, 2)).result
    finals = []
    for states in (last_h, last_c):
        rows = [reshape(s, (1, *shape_of(s))) for s in states]
        finals.append(rows[0] if len(rows) == 1 else rlx.ConcatOp(rows, 0).result)
    return [output, *finals]

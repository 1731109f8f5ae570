"""Per-layer inputs (Gemma 4's per-layer embeddings: LlmConfig's
per_layer_width P). Once per call, from the token ids and their
embedding, each layer's input of P [1, S, L·P] (`per_layer_inputs`); in
each layer, after the MLP's residual add, a branch gated by it
(`per_layer_branch`). Functions of the decoder's builder `b`
(`llm.LlmBuilder`), which calls them; a split model's embedding package
returns the inputs, which each package of layers takes."""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.ir import SSAValue

from xdsl_ane.dialects import rlx
from xdsl_ane.dialects.typing import shape_of
from xdsl_ane.models.constants import const

PER_LAYER_TABLE = "model.embed_tokens_per_layer.weight"
"""The per-layer embedding [vocab_size_per_layer_input, L·P]."""

PER_LAYER_INPUTS = "per_layer_inputs"
"""The embedding package's output of them, and the layers' input."""


def times(x: SSAValue, factor: float) -> SSAValue:
    """x · factor (a float32 constant), in x's rank."""
    scale = const(np.full((1,) * len(shape_of(x)), factor, np.float32))
    return rlx.MulOp(x, scale).result


def per_layer_inputs(b: Any, ids: SSAValue, embedded: SSAValue) -> SSAValue:
    """(E_pl[ids] · √P + RMSNorm_P(embedded · W_plᵀ · hidden^−½)) · 2^−½
    [1, S, L·P], as transformers' get_per_layer_inputs and
    project_per_layer_inputs: `embedded` the token embeddings [1, S,
    hidden] times √hidden, as the first layer reads them (before any
    stream scale); the norm over each layer's P."""
    c = b.c
    width, layers = c.per_layer_width, c.num_layers
    tokens = shape_of(ids)[0]
    table = b.embed(ids, PER_LAYER_TABLE, layers * width)
    identity = times(
        rlx.ReshapeOp(table, (1, tokens, layers * width)).result,
        float(np.float32(width**0.5)),
    )
    weight = b.param(
        b.base + "per_layer_model_projection.weight", (layers * width, c.hidden_size)
    )
    projected = rlx.MatmulOp(embedded, weight, transpose_rhs=True).result
    projected = times(projected, c.hidden_size**-0.5)
    projected = rlx.ReshapeOp(projected, (1, tokens, layers, width)).result
    projected = b.rms_norm(projected, b.base + "per_layer_projection_norm")
    projected = rlx.ReshapeOp(projected, (1, tokens, layers * width)).result
    return times(rlx.AddOp(projected, identity).result, 2.0**-0.5)


def per_layer_branch(b: Any, x: SSAValue, layer: int) -> SSAValue:
    """x + norm(proj(act(gate(x)) · input_layer)): layer `layer`'s branch
    of its per-layer input (b.per_layer, [1, S, L·P]). The gate reads the
    stream itself: under a stream scale α its output is divided by α
    (exact, a power of two) before the activation, which is not linear;
    the norm that ends the branch scales by α as the others do."""
    c, width = b.c, b.c.per_layer_width
    p = f"{b.base}layers.{layer}."
    gate = b.linear(x, layer, "per_layer_input_gate", width)
    if c.stream_scale is not None:
        gate = times(gate, 1 / c.stream_scale)
    own = rlx.NarrowOp(b.per_layer, 2, layer * width, width).result
    gated = rlx.MulOp(b.activate(gate, layer), own).result
    y = b.linear(gated, layer, "per_layer_projection", c.hidden_size)
    y = b.rms_norm(y, p + "post_per_layer_input_norm", branch=True)
    return b.residual(x, y)

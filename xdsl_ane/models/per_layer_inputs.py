"""Per-layer inputs (Gemma 4's per-layer embeddings: LlmConfig's
per_layer_width P). Once per call, from the token ids and their
embedding, each layer's input of P [1, S, L·P] (`per_layer_inputs`); in
each layer, after the MLP's residual add, a branch gated by it
(`per_layer_branch`). Functions of the decoder's builder `b`
(`llm.LlmBuilder`), which calls them; a split model's embedding package
returns the inputs, which each package of layers takes.

The per-layer table itself [vocab, L·P] (4.7 GB in fp16 at Gemma 4 E2B's
262144 × 35 · 256) is not in any package: it is a file of fp16 beside
it (`per_layer.bin`, `write_per_layer`), from which the runtime gathers
the rows of a call's ids (`gathered_rows`, a read of just those rows of
a memory map) and passes them as the input `per_layer_rows` [1, S, L·P]
of the function that takes input_ids; the rest (the scale by √P, the
projection of the embedding, its norm, the sum) stays in the program."""

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

PER_LAYER_ROWS = "per_layer_rows"
"""The input of the table's rows by id [1, S, L·P], gathered by the
runtime from the file beside the package."""

PER_LAYER_FILE = "per_layer.bin"
"""The file of the table beside the package (OUT.per_layer.bin, or in a
split model's directory)."""


def times(x: SSAValue, factor: float) -> SSAValue:
    """x · factor (a float32 constant), in x's rank."""
    scale = const(np.full((1,) * len(shape_of(x)), factor, np.float32))
    return rlx.MulOp(x, scale).result


def per_layer_inputs(b: Any, ids: SSAValue, embedded: SSAValue) -> SSAValue:
    """(E_pl[ids] · √P + RMSNorm_P(embedded · W_plᵀ · hidden^−½)) · 2^−½
    [1, S, L·P], as transformers' get_per_layer_inputs and
    project_per_layer_inputs: `embedded` the token embeddings [1, S,
    hidden] times √hidden, as the first layer reads them (before any
    stream scale); the norm over each layer's P. E_pl[ids] is the input
    b.per_layer_rows (`PER_LAYER_ROWS`)."""
    c = b.c
    width, layers = c.per_layer_width, c.num_layers
    tokens = shape_of(ids)[0]
    assert b.per_layer_rows is not None  # the input (`PER_LAYER_ROWS`)
    identity = times(b.per_layer_rows, float(np.float32(width**0.5)))
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


def per_layer_shape(config: Any) -> tuple[int, int]:
    """The file's table: the per-layer embedding's rows the ids reach
    (the vocabulary's; the checkpoint may hold more) by L·P."""
    return (config.vocab_size, config.num_layers * config.per_layer_width)


def per_layer_record(config: Any) -> dict[str, Any]:
    """The manifest's `per_layer` record: the file, its table's dtype and
    shape, the input its rows go to and the ids read as the pad's."""
    return {
        "file": PER_LAYER_FILE,
        "dtype": "fp16",
        "shape": list(per_layer_shape(config)),
        "input": PER_LAYER_ROWS,
        "padded_ids": list(config.padded_ids),
        "pad_id": config.pad_id,
        "protocol": "each call of a function taking per_layer_rows passes "
        "the file's rows of its input_ids (padding included; padded_ids read "
        "pad_id's row) as [1, S, L·P]",
    }


def table_rows(config: Any, checkpoint: Any, start: int, end: int) -> np.ndarray:
    """Rows [start, end) of the checkpoint's per-layer table, float32."""
    name = config.weight_name(PER_LAYER_TABLE)
    table = checkpoint.lazy(name, (config.per_layer_vocab, per_layer_shape(config)[1]))
    return np.asarray(table.read_rows(start, end), np.float32).reshape(end - start, -1)


def write_per_layer(config: Any, checkpoint: Any, path: Any) -> None:
    """The file of the table at `path`: its rows in fp16, C order, a block
    of them at a time (the table is never all in memory)."""
    rows = per_layer_shape(config)[0]
    block = 4096
    with open(path, "wb") as out:
        for start in range(0, rows, block):
            end = min(rows, start + block)
            table_rows(config, checkpoint, start, end).astype(np.float16).tofile(out)


def own_ids(config: Any, ids: Any) -> np.ndarray:
    """The ids whose rows are read: placeholders (padded_ids) the pad's."""
    ids = np.asarray(ids, np.int64).reshape(-1)
    if config.padded_ids:
        ids = np.where(np.isin(ids, list(config.padded_ids)), config.pad_id, ids)
    return ids


def gathered_rows(table: np.ndarray, ids: Any, record: dict[str, Any]) -> np.ndarray:
    """The input `per_layer_rows` [1, S, L·P] of the ids [S] from `table`
    (the file's memory map [vocab, L·P]: only these rows are read), as
    the manifest's `per_layer` record says."""
    ids = np.asarray(ids, np.int64).reshape(-1)
    padded = record.get("padded_ids") or []
    if padded:
        ids = np.where(np.isin(ids, padded), int(record["pad_id"]), ids)
    return np.asarray(table[ids], np.float32)[None]


def checkpoint_rows(config: Any, checkpoint: Any, ids: Any) -> np.ndarray:
    """`per_layer_rows` [1, S, L·P] of the ids read from the checkpoint
    (the calibration and the tests run the program without the file)."""
    own = own_ids(config, ids)
    rows = {t: table_rows(config, checkpoint, t, t + 1)[0] for t in set(own.tolist())}
    return np.stack([rows[t] for t in own.tolist()])[None]

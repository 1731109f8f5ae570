"""The decoder's tables of the vocabulary's size, in chunks of at most
`LlmShape.chunk` rows (the ANE's 16384 per dimension): the embedding's
gather (`embedded_rows`) and the head's logits, one output per chunk, or
the next token computed in the model (`head_logits`). Functions of the
decoder's builder `b` (`llm.LlmBuilder`), which calls them."""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.ir import SSAValue

from xdsl_ane.dialects import rlx
from xdsl_ane.dialects.typing import shape_of
from xdsl_ane.models.checkpoint_use import chunk_name, chunks
from xdsl_ane.models.constants import const, scaled, softcapped
from xdsl_ane.models.hf_config import EMBED, head_name


def embedded_rows(
    b: Any, ids: SSAValue, name: str = EMBED, width: int | None = None
) -> SSAValue:
    """Rows by id of the embedding, or of the table `name` of `width`,
    gathered from chunks of ≤ chunk rows:
    Σ_chunks where(start ≤ id < end, table_chunk[clamp(id − start)], 0)."""
    c, s = b.c, shape_of(ids)[0]
    width = c.hidden_size if width is None else width
    parts = chunks(c.vocab_size, b.shape.chunk)
    if len(parts) == 1:
        return rlx.GatherOp(b.param(name, (c.vocab_size, width)), ids).result
    total = None
    zero = const(np.zeros((1, 1), np.float32))
    for start, end in parts:
        table = b.param(chunk_name(name, start, end), (end - start, width))
        local = rlx.SubOp(ids, const(np.array([start], np.int32))).result
        clamped = rlx.MinOp(
            rlx.MaxOp(local, const(np.array([0], np.int32))).result,
            const(np.array([end - start - 1], np.int32)),
        ).result
        rows = rlx.GatherOp(table, clamped).result
        inside = rlx.CompareOp(
            rlx.ReshapeOp(local, (s, 1)).result,
            const(np.array([[end - start]], np.int32)),
            "lt",
        ).result
        above = rlx.CompareOp(
            rlx.ReshapeOp(local, (s, 1)).result,
            const(np.array([[0]], np.int32)),
            "ge",
        ).result
        rows = rlx.WhereOp(inside, rlx.WhereOp(above, rows, zero).result, zero).result
        total = rows if total is None else rlx.AddOp(total, rows).result
    assert total is not None
    return total


def padded_placeholders(b: Any, ids: SSAValue) -> SSAValue:
    """The ids with config.padded_ids (a multimodal checkpoint's image,
    video and audio placeholders) replaced by pad_id, as its model does
    before either embedding where no media comes with them."""
    c = b.c
    for placeholder in c.padded_ids:
        found = rlx.CompareOp(ids, const(np.array([placeholder], np.int32)), "eq")
        pad = const(np.array([c.pad_id], np.int32))
        ids = rlx.WhereOp(found.result, pad, ids).result
    return ids


def head_logits(b: Any, h: SSAValue) -> list[SSAValue]:
    """The logits [S, rows] of each chunk of the head's rows, with the
    family's divisor and soft-cap; with argmax, the next token [S]."""
    c = b.c
    name = head_name(c)
    parts = chunks(c.vocab_size, b.shape.chunk)
    logits = []
    for start, end in parts:
        w_name = name if len(parts) == 1 else chunk_name(name, start, end)
        w = b.param(w_name, (end - start, c.hidden_size))
        y = rlx.MatmulOp(h, w, transpose_rhs=True).result
        if c.logits_divisor is not None:
            y = scaled(y, 1 / c.logits_divisor)
        if c.final_softcap is not None:
            y = softcapped(y, c.final_softcap)
        logits.append(y)
    if not b.shape.argmax:
        return logits
    return [next_token(logits, parts)]


def next_token(logits: list[SSAValue], parts) -> SSAValue:
    """argmax over the chunks: each chunk's best (value, index + start),
    then the chunk whose best is largest (the first on ties)."""
    s = shape_of(logits[0])[0]
    best = [rlx.ReduceMaxOp(x, [1], keep_dims=True).result for x in logits]
    index = [
        rlx.AddOp(
            rlx.ReshapeOp(rlx.ArgmaxOp(x, axis=1).result, (s, 1)).result,
            const(np.array([[start]], np.int32)),
        ).result
        for x, (start, _) in zip(logits, parts)
    ]
    if len(logits) == 1:
        return rlx.ReshapeOp(index[0], (s,)).result
    values = rlx.ConcatOp(best, 1).result
    indices = rlx.ConcatOp(index, 1).result
    winner = rlx.ReshapeOp(rlx.ArgmaxOp(values, axis=1).result, (s, 1)).result
    picked = rlx.CompareOp(
        winner, const(np.arange(len(logits), dtype=np.int32)[None, :]), "eq"
    ).result
    chosen = rlx.WhereOp(picked, indices, const(np.zeros((1, 1), np.int32))).result
    return rlx.ReduceSumOp(chosen, [1]).result

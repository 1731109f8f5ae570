"""The KV caches of a decoder's attention layers as Core ML state: the
full cache written at the runtime position (`cached`), and the sliding
layers' ring of their window (`ring_cached`, `ring_positions`). Functions
of the decoder's builder `b` (`llm.LlmBuilder`), which calls them."""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.ir import SSAValue

from xdsl_ane.dialects import rlx
from xdsl_ane.dialects.typing import shape_of
from xdsl_ane.models.constants import const


def cached(b: Any, state, layer: int, new: SSAValue, position: SSAValue) -> SSAValue:
    """Writes k or v [1, Hkv, S, D] into the cache at [layer, 0, position,
    0] and returns this layer's whole cache [1, Hkv, context, D]; without
    a cache (stateless), k or v itself."""
    if state is None:
        return new
    index = b.decoder.cache_layers()["key_cache"].index(layer)
    old = rlx.ReadStateOp(state).result
    zero = const(np.zeros(1, np.int32))
    begin = rlx.ConcatOp(
        [const(np.array([index], np.int32)), zero, position, zero], 0
    ).result
    updated = rlx.SliceUpdateOp(old, new, begin).result
    rlx.WriteStateOp(state, updated)
    return rlx.NarrowOp(updated, 0, index, 1).result


def ring_cached(b: Any, state, layer: int, new: SSAValue, index: SSAValue) -> SSAValue:
    """Writes k or v [1, Hkv, S, D] into layer's ring [1, Hkv, W, D] of
    the local cache (slot of position q: q mod W) and returns the keys
    it attends over: the ring before the write followed by the new
    rows, [1, Hkv, W + S, D]. The write is one gather along the slots
    of that concatenation (`index`, from `ring_positions`)."""
    row = b.decoder.cache_layers()["local_key_cache"].index(layer)
    old = rlx.ReadStateOp(state).result
    keys = rlx.ConcatOp([rlx.NarrowOp(old, 0, row, 1).result, new], 2).result
    ring = rlx.GatherOp(keys, index, axis=2).result
    zero = np.zeros(3, np.int32)
    begin = const(np.concatenate([[row], zero]).astype(np.int32))
    rlx.WriteStateOp(state, rlx.SliceUpdateOp(old, ring, begin).result)
    return keys


def ring_positions(b: Any, position: SSAValue, tokens: int):
    """The local cache's write index [W] and additive mask [1, 1, S, W +
    S] for S tokens at position p. The ring holds positions p − W .. p −
    1, slot j the one at t_j = (j − p) mod W from the oldest, p − W +
    t_j; query i sees it iff t_j > i (within its window) and p − W + t_j
    ≥ 0, and new row i' iff i' ≤ i. After the write slot j holds new
    row t_j where t_j < S, else its old row (index W + t_j or j)."""
    w = b.decoder.local_window
    assert w is not None
    context = b.shape.context
    first = rlx.GatherOp(
        const(np.arange(context, dtype=np.int32) % w), position
    ).result  # p mod W, [1]
    slots = const(np.arange(w, dtype=np.int32))
    t = rlx.SubOp(slots, first).result
    t = rlx.WhereOp(
        rlx.CompareOp(t, const(np.zeros(1, np.int32)), "lt").result,
        rlx.AddOp(t, const(np.array([w], np.int32))).result,
        t,
    ).result
    index = rlx.WhereOp(
        rlx.CompareOp(t, const(np.array([tokens], np.int32)), "lt").result,
        rlx.AddOp(t, const(np.array([w], np.int32))).result,
        slots,
    ).result
    row = rlx.ReshapeOp(t, (1, w)).result
    newer = rlx.CompareOp(
        row, const(np.arange(tokens, dtype=np.int32)[:, None]), "gt"
    ).result  # [S, W]
    stored = rlx.CompareOp(
        rlx.AddOp(row, rlx.ReshapeOp(position, (1, 1)).result).result,
        const(np.array([[w]], np.int32)),
        "ge",
    ).result  # [1, W]
    old = rlx.WhereOp(newer, stored, const(np.zeros((1, 1), np.bool_))).result
    causal = const(np.tril(np.ones((tokens, tokens), np.bool_)))
    visible = rlx.ConcatOp([old, causal], 1).result
    if b.blocks is not None:  # an image's rows see each other both ways
        visible = block_visible(b.blocks, visible, position, -w)
    return index, b.additive(visible, tokens)


def block_visible(
    blocks: SSAValue, visible: SSAValue, position: SSAValue, keys: int
) -> SSAValue:
    """`visible` [S, K] (K keys from position 0, or the ring's W old and
    then the call's S new: `keys` < 0 is -W) where also query i sees key j
    of its own image: j among this call's rows and blocks[i] = blocks[j]
    ≥ 0 (transformers' OR of the causal and the block mask)."""
    tokens = shape_of(blocks)[0]
    none = const(np.zeros((1, 1), np.bool_))
    if keys < 0:  # the ring: the new rows are the last S keys
        row = rlx.ReshapeOp(blocks, (1, tokens)).result
        inside = const(np.ones((1, tokens), np.bool_))
        old = const(np.full((1, -keys), -1, np.int32))
        key_blocks = rlx.ConcatOp([old, row], 1).result
        inside = rlx.ConcatOp([const(np.zeros((1, -keys), np.bool_)), inside], 1).result
    else:
        at = rlx.SubOp(
            const(np.arange(keys, dtype=np.int32)), position
        ).result  # j − position, [K]
        inside = rlx.WhereOp(
            rlx.CompareOp(at, const(np.zeros(1, np.int32)), "ge").result,
            rlx.CompareOp(at, const(np.array([tokens], np.int32)), "lt").result,
            const(np.zeros(1, np.bool_)),
        ).result
        index = rlx.WhereOp(inside, at, const(np.zeros(1, np.int32))).result
        key_blocks = rlx.ReshapeOp(rlx.GatherOp(blocks, index).result, (1, keys)).result
        inside = rlx.ReshapeOp(inside, (1, keys)).result
    query_blocks = rlx.ReshapeOp(blocks, (tokens, 1)).result
    same = rlx.CompareOp(key_blocks, query_blocks, "eq").result
    image = rlx.CompareOp(query_blocks, const(np.zeros((1, 1), np.int32)), "ge").result
    same = rlx.WhereOp(same, image, none).result
    same = rlx.WhereOp(same, inside, none).result
    return rlx.WhereOp(same, const(np.ones((1, 1), np.bool_)), visible).result

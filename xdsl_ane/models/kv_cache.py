"""The KV caches of a decoder's attention layers as Core ML state: which
layers each state holds and its shape (`cache_layers`, `cache_shapes`),
the full cache written at the runtime position (`cached`), and the
sliding layers' ring of their window (`ring_cached`, `ring_positions`);
the keys and values a layer attends over (`layer_kv`), its own or, where
it shares them (Gemma 4's `num_kv_shared_layers`), an earlier layer's.
Functions of the decoder's builder `b` (`llm.LlmBuilder`), which calls
them, and of its `Decoder`.

A layer that shares keys and values reads its source layer's in the same
program. In a package of layers that does not hold the source (a split
model), the source's package returns the new rows it writes
(`shared_keys_{source}`, `shared_values_{source}`, [1, Hkv, S, D], after
norm and RoPE) and the first sharing layer of the package writes them
into a cache of its own, which the others read: the same keys and values
as the source's cache, for a copy of it."""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.ir import SSAValue

from xdsl_ane.dialects import rlx
from xdsl_ane.dialects.typing import shape_of
from xdsl_ane.models.constants import const
from xdsl_ane.models.delta_net import DELTA_CONV_STATE, DELTA_STATE
from xdsl_ane.models.short_conv import CONV_STATE
from xdsl_ane.models.ssm import SSM_CONV_STATE, SSM_STATE

KEY_STATES = {
    "key_cache": "value_cache",
    "local_key_cache": "local_value_cache",
    "sliding_key_cache": "sliding_value_cache",
}
"""The attention caches, keys' state to values': the full layers' (and
the sliding ones' where they share its shape and have no ring), the
sliding layers' ring, and their full-length cache where their heads
differ from the full layers' (Gemma 4) and there is no ring."""


def holds_kv(config: Any, layer: int, first: int) -> bool:
    """Whether `layer` writes a cache in a program of the layers from
    `first`: one of its own, or the first of those sharing a source
    outside the program (before `first`)."""
    source = config.kv_source(layer)
    if source is None:
        return True
    if source >= first:
        return False
    return not any(config.kv_source(i) == source for i in range(first, layer))


def cache_layers(decoder: Any) -> dict[str, list[int]]:
    """The layers of decoder.shape.layers in each cache state, in order:
    sliding layers in `local_*` when they have a ring (local_window), in
    `sliding_*` when their heads differ from the full layers' and they
    have none, the others in `key_cache` / `value_cache`; the recurrent
    mixers' states; a state without layers is absent."""
    c = decoder.config
    first, end = decoder.shape.layers or (0, c.num_layers)
    layers = [i for i in range(first, end) if holds_kv(c, i, first)]
    ring = decoder.local_window is not None
    sliding = [i for i in layers if i in c.sliding_layers]
    local = sliding if ring else []
    apart = sliding if not ring and c.global_heads is not None else []
    conv = [i for i in layers if i in c.conv_layers]
    ssm = [i for i in layers if i in c.ssm_layers]
    delta = [i for i in layers if i in c.delta_layers]
    mixers = local + apart + conv + ssm + delta
    full = [i for i in layers if i not in mixers]
    by_state = {
        "key_cache": full,
        "value_cache": full,
        "local_key_cache": local,
        "local_value_cache": local,
        "sliding_key_cache": apart,
        "sliding_value_cache": apart,
        CONV_STATE: conv,
        SSM_STATE: ssm,
        SSM_CONV_STATE: ssm,
        DELTA_STATE: delta,
        DELTA_CONV_STATE: delta,
    }
    return {name: layers for name, layers in by_state.items() if layers}


def cache_shapes(decoder: Any) -> dict[str, tuple[int, ...]]:
    """The cache states' shapes by name: [layers, Hkv, positions, D] of
    the attention caches (the context's positions, or the window's in the
    ring), the recurrent mixers' states."""
    if decoder.shape.part not in ("all", "layers"):
        return {}
    window, c = decoder.local_window, decoder.config
    shapes = {}
    for name, layers in cache_layers(decoder).items():
        n = len(layers)
        if name == CONV_STATE:
            shapes[name] = (n, 1, c.conv_taps - 1, c.hidden_size)
        elif name == SSM_STATE:
            assert c.ssm is not None
            shapes[name] = (n, c.ssm.heads, c.ssm.head_dim, c.ssm.state_size)
        elif name == SSM_CONV_STATE:
            assert c.ssm is not None
            shapes[name] = (n, 1, c.ssm.conv_taps - 1, c.ssm.conv_width)
        elif name == DELTA_STATE:
            assert c.delta is not None
            d = c.delta
            shapes[name] = (n, d.v_heads, d.k_dim, d.v_dim)
        elif name == DELTA_CONV_STATE:
            assert c.delta is not None
            shapes[name] = (n, 1, c.delta.conv_taps - 1, c.delta.conv_width)
        else:
            positions = window if name.startswith("local") else decoder.shape.context
            kv_heads, head_dim = c.heads_of(layers[0])
            shapes[name] = (n, kv_heads, positions, head_dim)
    return shapes


def shared_inputs(decoder: Any) -> list[int]:
    """The source layers before decoder.shape.layers whose keys and values
    layers in it share: their new rows are inputs."""
    c = decoder.config
    first, end = decoder.shape.layers or (0, c.num_layers)
    sources = {c.kv_source(i) for i in range(first, end)}
    return sorted(s for s in sources if s is not None and s < first)


def shared_outputs(decoder: Any) -> list[int]:
    """The source layers in decoder.shape.layers whose keys and values
    layers after it share: their new rows are outputs."""
    c = decoder.config
    first, end = decoder.shape.layers or (0, c.num_layers)
    return sorted({s for layer, s in c.kv_sources if first <= s < end <= layer})


def shared_names(source: int) -> list[str]:
    """The inputs or outputs of `source`'s new keys and values."""
    return [f"shared_keys_{source}", f"shared_values_{source}"]


def layer_kv(b: Any, layer: int, k, v, mask, position, caches):
    """The keys, values and mask layer `layer` attends over: its cache after
    writing k and v (or k and v themselves, stateless), a ring's with the
    ring's mask; a layer that shares an earlier layer's reads that one's,
    or writes the rows of `b.kv_inputs` (its source's, from another
    package) into its own. Each source's new rows are kept in
    `b.kv_rows`, for a package's outputs."""
    source = b.c.kv_source(layer)
    if source is not None and source in b.shared_kv:
        keys, values = b.shared_kv[source]
        return keys, values, b.ring[1] if in_ring(b, layer) else mask
    if source is not None:
        k, v = b.kv_inputs[source]
    b.kv_rows[layer] = (k, v)
    if caches is None:  # stateless
        keys, values = k, v
    elif in_ring(b, layer):
        index, mask = b.ring
        keys = ring_cached(b, caches["local_key_cache"], layer, k, index)
        values = ring_cached(b, caches["local_value_cache"], layer, v, index)
    else:
        held = b.decoder.cache_layers()
        name = next(n for n in KEY_STATES if layer in held.get(n, ()))
        keys = cached(b, caches[name], layer, k, position, name)
        values = cached(b, caches[KEY_STATES[name]], layer, v, position, name)
    b.shared_kv[layer if source is None else source] = (keys, values)
    return keys, values, mask


def in_ring(b: Any, layer: int) -> bool:
    """Whether `layer`'s keys are in the ring (or its source's are)."""
    return b.decoder.local_window is not None and layer in b.c.sliding_layers


def cached(
    b: Any, state, layer: int, new: SSAValue, position: SSAValue, name: str
) -> SSAValue:
    """Writes k or v [1, Hkv, S, D] into the cache at [layer, 0, position,
    0] and returns this layer's whole cache [1, Hkv, context, D]; without
    a cache (stateless), k or v itself. `name`: the keys' state, which
    lists the layers."""
    if state is None:
        return new
    index = b.decoder.cache_layers()[name].index(layer)
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


def prompt_calls(
    length: int, prefill: int, window: int | None, recurrent: bool = False
) -> list[tuple[str, int, int]]:
    """The calls that run a prompt of `length` tokens: (function, start,
    count), prefill once per `prefill` tokens (chunked prefill) and the last
    chunk padded; with a ring of `window` (local_window), padding rows
    would overwrite slots later tokens still read unless the padded call
    ends within the first window (start + prefill ≤ W), so a shorter last
    chunk past it runs through decode, a token per call; with `recurrent`
    state (short convolutions), padding rows would enter it, so a shorter
    last chunk always does."""
    calls = []
    for start in range(0, length, prefill):
        count = min(prefill, length - start)
        padded_ok = not recurrent and (window is None or start + prefill <= window)
        if count == prefill or padded_ok:
            calls.append(("prefill", start, count))
        else:
            calls += [("decode", p, 1) for p in range(start, length)]
    return calls

"""Gemma 4's per-layer fields of config.json (Family.layer_fields), read
as Gemma4TextConfig reads them: the full layers' own heads, the layers
that read an earlier layer's keys and values and their wider MLPs, and
the per-layer inputs. A layer's kind is whether it slides (the last one
never does: the config class forces it full)."""

from __future__ import annotations

from typing import Any

GLOBAL_HEAD_DIM = 512
"""Gemma4TextConfig's `global_head_dim` where config.json leaves it out."""

PER_LAYER_WIDTH = 256
"""Its `hidden_size_per_layer_input` where config.json leaves it out."""

PER_LAYER_VOCAB = 262_144
"""Its `vocab_size_per_layer_input` where config.json leaves it out."""

OVERRIDES = ("head_dim", "num_key_value_heads")
"""The fields `per_layer_config` may set for a layer here."""


def layer_fields(
    read: Any, heads: int, kv_heads: int, head_dim: int, vocab: int, window: dict
) -> dict[str, Any]:
    """The LlmConfig fields of Family.layer_fields (`read`: the
    ConfigReader; `window`: the sliding window and layers): global_heads,
    keys_as_values, kv_sources, wide_layers, per_layer_width and
    per_layer_vocab. A value transformers refuses, or one here with no
    meaning, is an error naming its field."""
    layers = read.integer("num_hidden_layers")
    sliding = window["sliding_layers"]
    fields: dict[str, Any] = {
        "global_heads": global_heads(read, heads, (kv_heads, head_dim), sliding),
        "keys_as_values": read.flag("attention_k_eq_v"),
    }
    sources = kv_sources(read, layers, sliding)
    fields["kv_sources"] = tuple(sorted(sources.items()))
    if read.flag("use_double_wide_mlp"):
        fields["wide_layers"] = frozenset(sources)
    width = read.integer("hidden_size_per_layer_input", PER_LAYER_WIDTH, minimum=0)
    if width:
        rows = read.integer("vocab_size_per_layer_input", PER_LAYER_VOCAB)
        if rows < vocab:
            raise read.error(
                "vocab_size_per_layer_input",
                f"is {rows}, below vocab_size {vocab}: the ids past it have no "
                "per-layer embedding",
            )
        fields |= {"per_layer_width": width, "per_layer_vocab": rows}
    return fields


def global_heads(
    read: Any, heads: int, sliding_heads: tuple[int, int], sliding: frozenset[int]
) -> tuple[int, int] | None:
    """(KV heads, head dim) of the full layers where they differ from the
    sliding ones': `per_layer_config`'s, which must give every full layer
    the same and no sliding layer any, or else `global_head_dim` (default
    512) with `num_global_key_value_heads` where `attention_k_eq_v`."""
    overrides = read.c.get("per_layer_config")
    if overrides is None:
        head_dim = read.integer("global_head_dim", GLOBAL_HEAD_DIM)
        kv_heads = sliding_heads[0]
        if read.flag("attention_k_eq_v") and read.c.get("num_global_key_value_heads"):
            kv_heads = read.integer("num_global_key_value_heads")
        found = {(kv_heads, head_dim)}
    else:
        found = per_layer_heads(read, overrides, sliding_heads, sliding)
    if len(found) > 1:
        raise read.error(
            "per_layer_config", "gives the full layers different heads: not supported"
        )
    (full,) = found
    kv_heads, head_dim = full
    if heads % kv_heads:
        raise read.error(
            "num_global_key_value_heads",
            f"is {kv_heads}; num_attention_heads {heads} must be a multiple of it",
        )
    if head_dim % 2:
        raise read.error("global_head_dim", f"is {head_dim}; RoPE needs an even one")
    return None if full == sliding_heads else full


def per_layer_heads(
    read: Any, overrides: Any, sliding_heads: tuple[int, int], sliding: frozenset[int]
) -> set[tuple[int, int]]:
    """The (KV heads, head dim) `per_layer_config` gives the full layers."""
    layers = read.integer("num_hidden_layers")
    if not isinstance(overrides, dict) or not all(
        isinstance(v, dict) and set(v) <= set(OVERRIDES) for v in overrides.values()
    ):
        raise read.error(
            "per_layer_config",
            "must map layer indices to " + " and ".join(OVERRIDES) + " alone",
        )
    by_layer: dict[int, dict[str, Any]] = {}
    for key, value in overrides.items():
        if not str(key).isdigit() or int(key) >= layers:
            raise read.error("per_layer_config", f"has layer {key!r} of {layers}")
        by_layer[int(key)] = value
    if any(layer in sliding for layer in by_layer):
        raise read.error(
            "per_layer_config", "changes a sliding layer's heads: not supported"
        )
    found = set()
    for layer in range(layers):
        if layer in sliding:
            continue
        given = by_layer.get(layer, {})
        kv_heads = given.get("num_key_value_heads", sliding_heads[0])
        head_dim = given.get("head_dim", sliding_heads[1])
        if not all(isinstance(v, int) and v >= 1 for v in (kv_heads, head_dim)):
            raise read.error("per_layer_config", f"gives layer {layer} {given!r}")
        found.add((kv_heads, head_dim))
    return found or {sliding_heads}


def kv_sources(read: Any, layers: int, sliding: frozenset[int]) -> dict[int, int]:
    """The last `num_kv_shared_layers` layers by the earlier layer whose
    keys and values each reads: the last before them of its kind."""
    shared = read.integer("num_kv_shared_layers", 0, minimum=0)
    if shared >= layers:
        raise read.error(
            "num_kv_shared_layers",
            f"is {shared}; at most {layers - 1} of the {layers} layers can share",
        )
    first = layers - shared
    sources = {}
    for layer in range(first, layers):
        kind = layer in sliding
        earlier = [i for i in range(first) if (i in sliding) == kind]
        if not earlier:
            raise read.error(
                "num_kv_shared_layers",
                f"is {shared}: layer {layer}'s kind has no earlier layer to share",
            )
        sources[layer] = earlier[-1]
    return sources

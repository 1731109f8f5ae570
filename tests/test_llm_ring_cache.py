"""Sliding-window layers with a cache the size of their window: a ring
written at position mod W (models/llm.py `local_window`, `ring_cached`,
`ring_positions`), checked against transformers and against the same
model with every layer in the full cache."""

from __future__ import annotations

import json

import numpy as np
import pytest
from llm_checkpoints import (
    assert_same_greedy,
    program_greedy,
    reference_greedy,
    write_checkpoint,
)

from xdsl_ane.api.llm import PackageRunner, reference_generate
from xdsl_ane.api.llm_compile import compile_llm
from xdsl_ane.models.hf_config import llm_config
from xdsl_ane.models.kv_cache import prompt_calls
from xdsl_ane.models.llm import Decoder, LlmShape
from xdsl_ane.weights.checkpoint import read_checkpoint

QWEN3_MIXED = {
    "use_sliding_window": True,
    "sliding_window": 6,
    "layer_types": ["sliding_attention", "full_attention"],
}


def test_cache_shapes_by_layer_kind(tmp_path):
    """A sliding layer's cache holds its window; a full layer's the context;
    a state without layers is absent; prefill > W keeps the full cache."""
    write_checkpoint(tmp_path / "mixed", "qwen3", **QWEN3_MIXED)
    write_checkpoint(tmp_path / "mistral", "mistral", sliding_window=6)
    mixed = llm_config(read_checkpoint(tmp_path / "mixed"))
    mistral = llm_config(read_checkpoint(tmp_path / "mistral"))
    shape = LlmShape(context=32, prefill=4)
    h, d = mixed.num_kv_heads, mixed.head_dim
    assert Decoder(mixed, shape).cache_shapes() == {
        "key_cache": (1, h, 32, d),
        "value_cache": (1, h, 32, d),
        "local_key_cache": (1, h, 6, d),
        "local_value_cache": (1, h, 6, d),
    }
    assert set(Decoder(mistral, shape).cache_shapes()) == {
        "local_key_cache",
        "local_value_cache",
    }
    assert Decoder(mistral, LlmShape(context=32, prefill=8)).local_window is None
    assert Decoder(mistral, LlmShape(context=6, prefill=4)).local_window is None
    wide = LlmShape(context=32, prefill=8)
    assert Decoder(mistral, wide).cache_shapes()["key_cache"] == (2, h, 32, d)
    names = [
        a.name_hint for a in Decoder(mixed, shape).build().body.block.first_op.args
    ]
    assert names == ["input_ids", "position", *Decoder(mixed, shape).cache_shapes()]


def test_prompt_calls():
    """Full prefill chunks; a padded last chunk only within the first window,
    else its tokens through decode; no ring: always one padded chunk; with
    recurrent state, never one."""
    assert prompt_calls(11, 4, None) == [
        ("prefill", 0, 4),
        ("prefill", 4, 4),
        ("prefill", 8, 3),
    ]
    assert prompt_calls(3, 4, 6) == [("prefill", 0, 3)]
    assert prompt_calls(9, 4, 6) == [
        ("prefill", 0, 4),
        ("prefill", 4, 4),
        ("decode", 8, 1),
    ]
    assert prompt_calls(10, 4, 12) == [
        ("prefill", 0, 4),
        ("prefill", 4, 4),
        ("prefill", 8, 2),
    ]
    # recurrent state (short convolutions): never a padded chunk
    assert prompt_calls(10, 4, None, recurrent=True) == [
        ("prefill", 0, 4),
        ("prefill", 4, 4),
        ("decode", 8, 1),
        ("decode", 9, 1),
    ]
    assert prompt_calls(8, 4, None, recurrent=True) == [
        ("prefill", 0, 4),
        ("prefill", 4, 4),
    ]


@pytest.mark.parametrize(
    "family, fields",
    [
        ("mistral", {"sliding_window": 6}),
        ("qwen3", QWEN3_MIXED),
        ("gemma2", {}),  # soft-capped scores over the ring
        ("gemma3_text", {"sliding_window": 5}),  # its own RoPE for the ring
    ],
)
@pytest.mark.parametrize("length", [3, 9, 14])
def test_ring_cache_matches_transformers(tmp_path, family, fields, length):
    """Prompts shorter than the window, ending one token past a chunk, and
    past the window twice over, then 12 greedy steps (the ring wraps several
    times): transformers' logits and tokens, and the full cache's."""
    model = write_checkpoint(tmp_path / "ckpt", family, **fields)
    prompt = [int(t) for t in np.random.default_rng(length).integers(1, 250, length)]
    shape = LlmShape(context=32, prefill=4)
    config = llm_config(read_checkpoint(tmp_path / "ckpt"))
    assert Decoder(config, shape).local_window is not None
    got = program_greedy(tmp_path / "ckpt", prompt, 12, shape)
    assert_same_greedy(got, reference_greedy(model, prompt, 12))
    full = program_greedy(tmp_path / "ckpt", prompt, 12, LlmShape(32, prefill=8))
    assert full[2] == got[2]


def test_ring_package_states_and_tokens(tmp_path):
    """The fp16 package declares the ring states at the window's size and,
    through PackageRunner's prompt_calls, gives transformers' greedy tokens
    for a prompt whose padded last chunk would overwrite the ring."""
    checkpoint = tmp_path / "ckpt"
    write_checkpoint(checkpoint, "qwen3", **QWEN3_MIXED)
    out = tmp_path / "llm.mlpackage"
    compile_llm(checkpoint, context=32, prefill=4, chunk=128).save(out)
    record = json.loads((tmp_path / "llm.manifest.json").read_text())["llm"]
    assert record["local_window"] == 6
    assert record["states"]["local_key_cache"]["shape"][2] == 6
    assert record["states"]["key_cache"]["shape"][2] == 32
    prompt = [5, 17, 200, 3, 99, 42, 7, 250, 11]
    tokens, _ = PackageRunner(out).generate(prompt, 16)
    assert tokens == reference_generate(checkpoint, prompt, 16)[0]

"""Vocabulary chunks of the training step's classifier kernels, and the
per-row values that travel with them.

The classifier works on vocabulary chunks (`vocab_chunks`): a `[S, V]`
logits tensor is beyond the ANE's 16384 limit per dimension, and so is a
packed input `[1, D, 1, S + V_chunk]` for V_chunk = 16384; the default
chunk (16064 for Qwen3-0.6B, 10 chunks) keeps every kernel within it, a
smaller last chunk gets its own `*_last` kernels. The label's logit
h·W[label] and the one-hot part of the gradient are gathers and scatters of
S weight rows, done by the runtime like the embedding lookup: no integer
labels (and no O(S·V) one-hot) in any kernel. Per-row values (lse, d_loss,
one lse per chunk) travel as `[S, k]` with k padded (`row_columns`) so that
S·k is a multiple of D and they pack with the `[1, D, 1, S]` activations; a
kernel reads only the leading columns. Each kernel uses each weight in one
orientation (x·Wᵀ or dy·W), hence `classifier_projection_backward` apart
from `classifier_backward`.
"""

from __future__ import annotations

import math

from xdsl_ane.ane.limits import MAX_DIMENSION
from xdsl_ane.models.configs import LlmConfig

CHUNK_WEIGHT = "lm_head.chunk.weight"
"""The classifier kernels' weight: one vocabulary chunk of lm_head.weight."""


def row_columns(config: LlmConfig, values: int) -> int:
    """Columns k ≥ `values` of a per-row input [S, k] such that S·k is a
    multiple of the hidden size, so it packs with the [1, D, 1, S] inputs."""
    step = config.hidden_size // math.gcd(config.seq_len, config.hidden_size)
    return -(-values // step) * step


def default_vocab_chunk(config: LlmConfig) -> int:
    """The largest chunk (a multiple of 64) whose kernels keep every packed
    dimension within 16384: the classifier kernels' input is
    [1, D, 1, S + V_chunk (+ row stats)]."""
    row_stats = config.seq_len * row_columns(config, 2) // config.hidden_size
    return (MAX_DIMENSION - config.seq_len - row_stats) // 64 * 64


def vocab_chunks(config: LlmConfig, chunk: int | None = None) -> list[tuple[int, int]]:
    """(start, size) of each vocabulary chunk: chunks of `chunk` classes
    (default `default_vocab_chunk`) and a smaller last one."""
    size = min(chunk or default_vocab_chunk(config), config.vocab_size)
    return [
        (start, min(size, config.vocab_size - start))
        for start in range(0, config.vocab_size, size)
    ]


def classifier_kernel_suffixes(
    config: LlmConfig, chunk: int | None = None
) -> dict[int, str]:
    """Chunk size -> kernel name suffix: "" for the full chunks, "_last"
    for a smaller last chunk."""
    sizes = [size for _, size in vocab_chunks(config, chunk)]
    suffixes = {sizes[0]: ""}
    if sizes[-1] != sizes[0]:
        suffixes[sizes[-1]] = "_last"
    return suffixes

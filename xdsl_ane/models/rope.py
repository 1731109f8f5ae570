"""RoPE's frequencies and tables for a decoder's config: default, linear,
Llama 3, YaRN, LongRoPE and proportional scaling, the sliding layers' own RoPE, computed
in float32 as Hugging Face does."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from xdsl_ane.errors import XdslAneError
from xdsl_ane.models.configs import LlmConfig

ROPE_POSITION = "rope_position"
"""The input of a multimodal-RoPE decoder's positions [S, 3] (temporal,
height, width per token: LlmConfig.mrope_section); the masks and the
cache rows still follow `position`."""


def text_rope_positions(start: int, count: int) -> np.ndarray:
    """ROPE_POSITION of `count` text tokens from position `start`: start + i
    on every axis, [count, 3] i32."""
    at = np.arange(start, start + count, dtype=np.int32)
    return np.repeat(at[:, None], 3, 1)


def inverse_frequencies(
    config: LlmConfig, local: bool = False, context: int | None = None
) -> np.ndarray:
    """base^(−2i/D); rope type linear divides them all by `factor`, llama3
    rescales by Llama 3's rule (low frequencies divided by `factor`, high
    ones kept, a smooth blend between), yarn blends interpolated and
    extrapolated frequencies over a ramp of dims, longrope divides by its
    long factors where the `context` passes the original length, else by
    its short ones (transformers' rule for a sequence of that length),
    proportional keeps the first `partial_rotary_factor` of the
    frequencies (of the whole head's exponents) and sets the rest to 0,
    so those dims pass unrotated, all divided by `factor`."""
    d = config.rotated_of(local)
    theta, s = rope_of(config, local)
    inv = theta ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    if s is None:
        return inv
    if s["rope_type"] == "proportional":
        angles = int(s["partial_rotary_factor"] * d // 2)
        return np.where(np.arange(d // 2) < angles, inv, 0.0) / s["factor"]
    if s["rope_type"] == "linear":
        return inv / s["factor"]
    if s["rope_type"] == "yarn":
        return yarn_frequencies(inv, theta, d, s)
    if s["rope_type"] == "longrope":
        old = s["original_max_position_embeddings"]
        long = context is not None and context > old
        factors = np.asarray(s["long_factor" if long else "short_factor"])
        if factors.shape != inv.shape:
            raise XdslAneError(
                f"rope_parameters.{'long' if long else 'short'}_factor has "
                f"{factors.size} factors; RoPE over {d} dims needs {inv.size}"
            )
        return inv / factors
    factor, low, high = s["factor"], s["low_freq_factor"], s["high_freq_factor"]
    old = s["original_max_position_embeddings"]
    wavelen = 2 * math.pi / inv
    scaled = np.where(wavelen > old / low, inv / factor, inv)
    smooth = (old / wavelen - low) / (high - low)
    blended = (1 - smooth) * scaled / factor + smooth * scaled
    medium = (wavelen >= old / high) & (wavelen <= old / low)
    return np.where(medium, blended, scaled)


def rope_of(config: LlmConfig, local: bool) -> tuple[float, dict[str, Any] | None]:
    """(theta, scaling) of the full layers or, `local`, the sliding ones."""
    if local and config.local_rope:
        return config.local_rope
    return config.rope_theta, config.rope_scaling


def yarn_frequencies(inv: np.ndarray, base: float, d: int, s: dict) -> np.ndarray:
    """YaRN (transformers' _compute_yarn_parameters): inv / factor below
    the correction range, inv above it, a linear ramp between."""
    factor, old = s["factor"], s["original_max_position_embeddings"]

    def correction_dim(rotations: float) -> float:
        return (d * math.log(old / (rotations * 2 * math.pi))) / (2 * math.log(base))

    low, high = correction_dim(s["beta_fast"]), correction_dim(s["beta_slow"])
    if s["truncate"]:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, d - 1)
    if low == high:
        high += 0.001
    ramp = np.clip((np.arange(d // 2, dtype=np.float32) - low) / (high - low), 0, 1)
    extrapolated = 1 - ramp
    return (inv / factor) * (1 - extrapolated) + inv * extrapolated


def attention_factor(config: LlmConfig, local: bool = False) -> float:
    """The factor yarn and longrope scale cos and sin by (1 otherwise)."""
    _, s = rope_of(config, local)
    if s is None or s["rope_type"] not in ("yarn", "longrope"):
        return 1.0
    if s["attention_factor"] is not None:
        return s["attention_factor"]
    factor, old = s["factor"], s["original_max_position_embeddings"]
    if s["rope_type"] == "longrope":
        return 1.0 if factor <= 1 else math.sqrt(1 + math.log(factor) / math.log(old))

    def mscale(scale: float, m: float = 1.0) -> float:
        return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0

    if s["mscale"] and s["mscale_all_dim"]:
        return mscale(factor, s["mscale"]) / mscale(factor, s["mscale_all_dim"])
    return mscale(factor)


def rope_tables(
    config: LlmConfig, context: int, local: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin [context, D/2] of θ = position · inv_freq, computed in
    float32 as Hugging Face does (`local`: the sliding layers' RoPE), times
    the scaling's attention factor (yarn, longrope)."""
    inv = inverse_frequencies(config, local, context).astype(np.float32)
    angles = np.arange(context, dtype=np.float32)[:, None] * inv[None, :]
    factor = np.float32(attention_factor(config, local))
    return np.cos(angles) * factor, np.sin(angles) * factor

"""Linear (symmetric) int8/int4 quantization with a scale per block:
w ≈ scale · q, q = clip(round(w / scale), qmin, qmax).

The scale of a block is its largest magnitude over qmax, shrunk by the
clipping ratio (of a few candidates, 1.0 included) that gives the least
squared error in that block: clipping the rare largest weights buys finer
steps for all others, which matters most at 4 bits. Blocks are the rows of
a [B, n] view; the caller arranges a tensor's blocks that way."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

RANGES = {8: (-128, 127), 4: (-8, 7)}
CLIP_RATIOS = (1.0, 0.95, 0.9, 0.85, 0.8, 0.75, 0.7)


@dataclass
class LinearQuantized:
    """`data` (int8 holding int8 or int4 values) and `scale` [B] in the
    weights' float dtype: block b decompresses to scale[b] · data[b]."""

    data: np.ndarray
    scale: np.ndarray
    squared_error: np.ndarray
    """Σ (x − x̂)² per block, float64."""


def quantize_linear(blocks: np.ndarray, nbits: int) -> LinearQuantized:
    """Symmetric quantization of each row of `blocks` [B, n] to `nbits`."""
    qmin, qmax = RANGES[nbits]
    values = blocks.astype(np.float32)
    dtype = blocks.dtype if blocks.dtype.kind == "f" else np.dtype(np.float32)
    magnitude = np.abs(values).max(axis=1)
    best_scale = best_data = best_error = None
    for ratio in CLIP_RATIOS:
        scale = stored_scale(magnitude * ratio / qmax, dtype)
        data, error = quantize_with(values, scale, qmin, qmax)
        if best_error is None:
            best_scale, best_data, best_error = scale, data, error
            continue
        better = error < best_error
        best_scale = np.where(better, scale, best_scale)
        best_data = np.where(better[:, None], data, best_data)
        best_error = np.where(better, error, best_error)
    assert best_scale is not None and best_data is not None
    return LinearQuantized(best_data, best_scale, best_error)


def stored_scale(scale: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """The scale as stored: in the weights' dtype, an all-zero block's 1
    (any scale decompresses zeros exactly) and none rounded to zero."""
    scale = np.where(scale > 0, scale, 1.0).astype(dtype)
    tiny = np.finfo(dtype).smallest_subnormal
    return np.maximum(scale, tiny).astype(dtype)


def quantize_with(
    values: np.ndarray, scale: np.ndarray, qmin: int, qmax: int
) -> tuple[np.ndarray, np.ndarray]:
    """The int8 data of `values` at `scale` per row, and the squared error
    of its decompression as MIL computes it (in the scale's dtype)."""
    step = scale.astype(np.float32)[:, None]
    data = np.clip(np.rint(values / step), qmin, qmax).astype(np.int8)
    restored = (data.astype(scale.dtype) * scale[:, None]).astype(np.float64)
    error = ((restored - values) ** 2).sum(axis=1)
    return data, error

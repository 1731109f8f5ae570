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
CLIP_RATIOS = {
    8: (1.0, 0.98, 0.96),
    4: (1.0, 0.92, 0.85, 0.78),
}
"""The clipping ratios tried: at 8 bits the steps are fine and only the few
largest weights gain from clipping."""


@dataclass
class LinearQuantized:
    """`data` (int8 holding int8 or int4 values) and `scale` [B] in the
    weights' float dtype: block b decompresses to scale[b] · data[b]."""

    data: np.ndarray
    scale: np.ndarray
    squared_error: np.ndarray
    """Σ (x − x̂)² per block, float64."""


ROWS_AT_ONCE = 1 << 20
"""About the most elements quantized in one pass over rows: the float32
working copies of a pass stay a few MB rather than 4-8 bytes an element
of the whole tensor (a 3072 x 8192 projection: 100 MB each)."""


def quantize_linear(blocks: np.ndarray, nbits: int) -> LinearQuantized:
    """Symmetric quantization of each row of `blocks` [B, n] to `nbits`,
    ROWS_AT_ONCE elements' rows at a time (each row's result depends on
    that row alone)."""
    rows = max(1, ROWS_AT_ONCE // max(1, blocks.shape[1]))
    if blocks.shape[0] <= rows:
        return quantize_rows(blocks, nbits)
    parts = [
        quantize_rows(blocks[start : start + rows], nbits)
        for start in range(0, blocks.shape[0], rows)
    ]
    return LinearQuantized(
        np.concatenate([p.data for p in parts]),
        np.concatenate([p.scale for p in parts]),
        np.concatenate([p.squared_error for p in parts]),
    )


def quantize_rows(blocks: np.ndarray, nbits: int) -> LinearQuantized:
    """`quantize_linear` of all of `blocks` at once."""
    qmin, qmax = RANGES[nbits]
    values = blocks.astype(np.float32)
    dtype = blocks.dtype if blocks.dtype.kind == "f" else np.dtype(np.float32)
    magnitude = np.abs(values).max(axis=1)
    best_scale = best_data = best_error = None
    for ratio in CLIP_RATIOS[nbits]:
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
    scaled = np.divide(values, step)
    np.rint(scaled, out=scaled)
    np.clip(scaled, qmin, qmax, out=scaled)
    data = scaled.astype(np.int8)
    # MIL computes scale · data in the scale's dtype; fp16 products of an
    # integer below 2^11 and an fp16 scale are exact in float32 before
    # rounding, so rounding the float32 product to fp16 is MIL's value.
    restored = np.multiply(scaled, step).astype(scale.dtype).astype(np.float32)
    np.subtract(restored, values, out=restored)
    error = np.einsum("ij,ij->i", restored, restored, dtype=np.float64)
    return data, error

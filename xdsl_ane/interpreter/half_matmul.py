"""f16 matrix products through torch, where torch is installed (the
`torch` extra): the interpreter's fast path for an LLM's products, one
token (decode) or a prefill's tokens times a weight.

The interpreter's rule for an f16 product is float32 accumulation rounded
to f16 once (`numerics.accumulates_in_float32`). numpy meets it by widening
both operands to float32 for BLAS; for a weight read once per product the
widening costs several times the product: numpy converts f16 element by
element, into fresh memory whose pages the kernel supplies on first touch.
torch's half GEMV and GEMM convert in registers and accumulate each dot
product in float32, add a bias in float32 too, and round once: the same
rule in another summation order (a result differs from numpy's by a
last-place rounding, or where a sum cancels, within float32's error bound
K·2⁻²⁴·Σ|a·b|; tests/test_half_matmul.py).

torch's half GEMM is a plain loop, slower than float32 BLAS once many rows
share each weight (a 64-token prefill), so only products with at most
`THIN_ROWS` rows (or columns) take it; a wider product by a matrix runs
torch's float32 GEMM on the weight widened a block at a time into a
reused buffer (`wide_matmul`), which is the numpy path's arithmetic
without its cost of widening.
"""

from __future__ import annotations

import functools
import math
import threading
import warnings
from typing import Any

import numpy as np

THIN_ROWS = 16
"""The most rows (or columns) of a product that torch's half kernels take:
a decode step's products have one. Up to about 16 rows torch's kernel
costs less per weight element than numpy's widening and BLAS; at 64 it
costs about as much (issue 42's measurements)."""


MIN_ELEMENTS = 2**20
"""The fewest elements of a product's larger operand for this path: below
it numpy's widening costs a few milliseconds at most, less than importing
torch (seconds), which a program of small products then never does
(`xdsl-ane run` stays light)."""

THREADS = 1
"""torch's threads for these products (the caller's setting is restored
after each). A thin product streams its weight once, and one core nearly
saturates the memory bandwidth; each parallel region ends at a barrier
that waits for its slowest thread, which on a shared machine may be
descheduled for a time slice, and a decode step has hundreds of them."""


@functools.cache
def torch_module() -> Any:
    """torch, or None where it is not installed (imported once, on the first
    f16 product)."""
    try:
        import torch
    except ImportError:
        return None
    return torch


def _tensor(torch: Any, a: np.ndarray) -> Any:
    # torch shares the array's memory; it warns that a read-only array (a
    # weight read from a blob) stays read-only only by convention, and the
    # product never writes it.
    if any(s < 0 for s in a.strides):
        a = np.ascontiguousarray(a)
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message=".*not writable", category=UserWarning
        )
        return torch.from_numpy(a)


def half_matmul(a: Any, b: Any, bias: Any = None) -> np.ndarray | None:
    """a @ b (+ bias) for f16 operands through torch: numpy's matmul on the
    last two axes (batch axes broadcast), the bias [N] (leading axes of size
    1) added before the one rounding. A thin product runs torch's half
    kernel; a wide one by a matrix (a prefill's projection) torch's float32
    GEMM, `b` widened a chunk at a time (`wide_matmul`), and by a batch of
    matrices (a prefill's attention) float32 GEMMs on both widened. None
    where no path applies: torch missing, an operand not an f16 array of
    rank ≥ 2, both smaller than `MIN_ELEMENTS`, a bias with a batched `b`
    or of another shape."""
    if not all(isinstance(x, np.ndarray) and x.dtype == np.float16 for x in (a, b)):
        return None
    if a.ndim < 2 or b.ndim < 2 or max(a.size, b.size) < MIN_ELEMENTS:
        return None
    shape = (*np.broadcast_shapes(a.shape[:-2], b.shape[:-2]), a.shape[-2], b.shape[-1])
    if math.prod(b.shape[:-2]) == 1:
        # one matrix (a conv's weight [1, K, N]): torch folds a's leading
        # axes into rows, one GEMV or GEMM
        b = b.reshape(b.shape[-2:])
    rows = a.shape[-2] if b.ndim > 2 else math.prod(a.shape[:-1])
    thin = min(rows, b.shape[-1]) <= THIN_ROWS
    if bias is not None and not (
        isinstance(bias, np.ndarray)
        and bias.dtype == np.float16
        and b.ndim == 2
        and bias.ndim <= len(shape)
        and bias.size == bias.shape[-1] == b.shape[-1]
    ):
        return None
    torch = torch_module()
    if torch is None:
        return None
    ta, tb = _tensor(torch, a), _tensor(torch, b)
    tbias = None if bias is None else _tensor(torch, bias.reshape(-1))
    threads = torch.get_num_threads()
    torch.set_num_threads(THREADS)
    try:
        if not thin and b.ndim > 2:
            # a batch of small matrices (a prefill's attention): widened
            # whole, float32 GEMMs; numpy's threads wait on each other
            # at every matrix of the batch
            out = torch.matmul(ta.float(), tb.float()).half()
        elif not thin:
            out = wide_matmul(torch, ta.reshape(-1, a.shape[-1]), tb, tbias)
        elif bias is None and b.ndim > 2 and b.strides[-1] != b.itemsize:
            # a batch of transposed matrices (attention's q·kᵀ over the
            # cache): torch's batched half kernel is much slower on them
            # than on the row-major (a·b)ᵀ = bᵀ·aᵀ
            out = torch.matmul(tb.mT, ta.mT).mT
        elif bias is None:
            out = torch.matmul(ta, tb)
        else:
            out = torch.addmm(tbias, ta.reshape(-1, a.shape[-1]), tb)
    finally:
        torch.set_num_threads(threads)
    return out.reshape(shape).numpy()


WIDENED_ELEMENTS = 2**22
"""How many elements of `b` a wide product widens at a time (16 MB of
float32, in a buffer kept across calls)."""

_scratch = threading.local()


def wide_matmul(torch: Any, a: Any, b: Any, bias: Any) -> Any:
    """a [M, K] @ b [K, N] (+ bias [N]) of f16 tensors as float32 GEMMs,
    rounded to f16 once: `a` widened whole, `b` a block of columns at a
    time into a reused buffer (torch converts f16 with SIMD instructions
    into memory already touched; numpy's widening of a whole weight costs
    more than the GEMM of a 64-token prefill). The columns of a block are
    laid out as `b`'s are in a weight's transposed view, rows of the
    weight, so each block is one contiguous copy."""
    k, n = b.shape
    step = max(1, min(n, WIDENED_ELEMENTS // max(k, 1)))
    buffer = getattr(_scratch, "buffer", None)
    if buffer is None or buffer.numel() < step * k:
        buffer = _scratch.buffer = torch.empty(step * k, dtype=torch.float32)
    rows = a.float()
    out = torch.empty((a.shape[0], n), dtype=torch.float32)
    for start in range(0, n, step):
        end = min(start + step, n)
        block = buffer[: (end - start) * k].view(end - start, k).T
        block.copy_(b[:, start:end])
        torch.mm(rows, block, out=out[:, start:end])
    if bias is not None:
        out += bias.float()
    return out.half()

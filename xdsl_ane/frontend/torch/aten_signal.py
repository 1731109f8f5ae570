"""ATen's signal ops to rlx: the real FFT (`_fft_r2c`, what torch.fft.rfft
and torch.stft export to), the framing `Tensor.unfold` before it, and the
complex values it makes (`ComplexValue`), read by `view_as_real`, `abs`,
multiplication by a number and view ops.

The real DFT along an axis of size n is two matmuls by constant matrices,
Re X[k] = Σ_t x[t] cos(2πtk/n) and Im X[k] = −Σ_t x[t] sin(2πtk/n), k ≤
n/2 (one-sided). Core ML has no complex tensors, so a complex value is
the pair of real tensors, each carried through the view ops that follow
(a permute, a slice) until something real is read from it. The matrices
hold the factor 1/√n and the pair a scale outside (√n for torch's default
normalization): a spectrogram's magnitude √(re² + im²) then squares
numbers n times smaller, which fp16 holds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from xdsl.ir import SSAValue

from xdsl_ane.dialects import rlx
from xdsl_ane.dialects.typing import element_type_of, is_float, shape_of
from xdsl_ane.frontend.torch.aten import (
    RESHAPES,
    axis_of,
    reshape,
    scalar,
    take,
    translates,
    transposed,
)
from xdsl_ane.frontend.torch.translate import (
    Composite,
    Const,
    TranslationError,
    Translator,
    target_name,
)

aten = torch.ops.aten

COMPONENTWISE = {
    *RESHAPES,
    aten.permute.default,
    aten.transpose.int,
    aten.slice.Tensor,
    aten.select.int,
    aten.expand.default,
}
"""View ops of a complex value: applied to its real and imaginary parts alike."""

NORMALIZATION = {0: "backward", 1: "ortho", 2: "forward"}
"""_fft_r2c's `normalization`: none, 1/√n, 1/n."""


@dataclass(eq=False)
class ComplexValue(Composite):
    """scale · (real + i·imag), a complex tensor as two real ones."""

    real: SSAValue
    imag: SSAValue
    scale: float = 1.0

    def read(self, tr: Translator, node, args: Any, kwargs: Any) -> Any:
        target = node.target
        if target in tr.no_ops:
            return self
        if target is aten.view_as_real.default:
            return self.as_real(tr)
        if target is aten.abs.default:
            squares = rlx.AddOp(
                rlx.MulOp(self.real, self.real).result,
                rlx.MulOp(self.imag, self.imag).result,
            ).result
            return scaled(tr, rlx.SqrtOp(squares).result, self.scale)
        if target in (aten.mul.Scalar, aten.mul.Tensor) and isinstance(
            args[1], int | float
        ):
            return ComplexValue(self.real, self.imag, self.scale * float(args[1]))
        if target in COMPONENTWISE and args[0] is self:
            translation = tr.translations[target]
            rest = args[1:]
            return ComplexValue(
                translation(tr, node, self.real, *rest, **kwargs),
                translation(tr, node, self.imag, *rest, **kwargs),
                self.scale,
            )
        raise TranslationError(
            f"a complex value read by {target_name(node)}: only view_as_real, abs, "
            "multiplication by a number and view ops of complex values are supported"
        )

    def as_real(self, tr: Translator) -> SSAValue:
        """view_as_real: [..., 2], the real part then the imaginary."""
        shape = shape_of(self.real)
        parts = [reshape(p, (*shape, 1)) for p in (self.real, self.imag)]
        pair = rlx.ConcatOp(parts, len(shape)).result
        return scaled(tr, pair, self.scale)


def scaled(tr: Translator, x: SSAValue, factor: float) -> SSAValue:
    return x if factor == 1.0 else rlx.MulOp(x, scalar(tr, factor, x)).result


def dft_matrices(n: int, bins: int) -> tuple[np.ndarray, np.ndarray]:
    """[n, bins] each: cos(2πtk/n)/√n and −sin(2πtk/n)/√n (t·k reduced mod
    n first, so the angles stay exact for large n)."""
    t = np.arange(n)[:, None]
    k = np.arange(bins)[None, :]
    angle = 2 * np.pi * ((t * k) % n) / n
    root = math.sqrt(n)
    return (
        (np.cos(angle) / root).astype(np.float32),
        (-np.sin(angle) / root).astype(np.float32),
    )


@translates(aten._fft_r2c.default)
def fft_r2c(tr: Translator, node, x, dim, normalization, onesided):
    """The real DFT along one axis: x · C and x · S, with the axis moved last
    and back."""
    x = tr.value(x)
    element = element_type_of(x)
    rank = len(shape_of(x))
    dims = [axis_of(int(d), rank) for d in dim]
    if len(dims) != 1:
        raise TranslationError(
            f"an FFT over {len(dims)} axes: only a real FFT along one axis (rfft, "
            "stft) is supported"
        )
    axis = dims[0]
    n = shape_of(x)[axis]
    bins = n // 2 + 1 if onesided else n
    perm = [a for a in range(rank) if a != axis] + [axis]
    x = transposed(x, perm)
    cos, sin = dft_matrices(n, bins)
    parts = []
    for matrix, part in ((cos, "cos"), (sin, "sin")):
        m = tr.value(Const(torch.from_numpy(matrix), f"dft{n}x{bins}.{part}"), element)
        y = rlx.MatmulOp(x, m).result
        parts.append(transposed(y, np.argsort(perm).tolist()))
    norm = NORMALIZATION[int(normalization)]
    scale = {"backward": math.sqrt(n), "ortho": 1.0, "forward": 1 / math.sqrt(n)}
    return ComplexValue(parts[0], parts[1], scale[norm])


@translates(aten.unfold.default)
def unfold_windows(tr: Translator, node, x, dim, size, step):
    """Tensor.unfold (stft's frames): windows of `size` every `step` along
    `dim`, as a new last axis. Along the last axis of a float tensor, a conv
    with the identity kernel (stride `step`) and a transpose; otherwise the
    constant positions it reads (`take`)."""
    x = tr.value(x, tr.result_element(node))
    shape = shape_of(x)
    axis = axis_of(dim, len(shape))
    count = (shape[axis] - size) // step + 1
    out_shape = tr.result_shape(node)
    element = element_type_of(x)
    if axis == len(shape) - 1 and is_float(element):
        batch = int(np.prod(shape[:-1]))
        eye = np.eye(size, dtype=np.float32).reshape(size, 1, size)
        kernel = tr.value(Const(torch.from_numpy(eye), f"frames{size}"), element)
        frames = rlx.ConvOp(
            reshape(x, (batch, 1, shape[-1])), kernel, None, strides=[int(step)]
        ).result  # [B, size, count]
        return reshape(rlx.TransposeOp(frames, (0, 2, 1)).result, out_shape)
    positions = np.arange(count)[:, None] * step + np.arange(size)[None, :]
    windows = take(tr, node, x, axis, positions)
    perm = [a for a in range(len(shape) + 1) if a != axis + 1] + [axis + 1]
    return transposed(windows, perm)


@translates(aten.view_as_real.default)
def view_as_real(tr: Translator, node, x):
    """Reached only for a value that is not a `ComplexValue` (those read it
    themselves): a complex tensor rlx does not hold."""
    raise TranslationError(
        "view_as_real of a complex tensor that does not come from a real FFT: "
        "only _fft_r2c's results are supported"
    )

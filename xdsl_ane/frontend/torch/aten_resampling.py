"""ATen's resampling, padding and vision activation ops to rlx:
upsampling (nearest and bilinear), constant, reflection and replication
padding, hardtanh, hardswish, hardsigmoid, leaky ReLU and ELU."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.ir import SSAValue

from xdsl_ane.dialects import rlx
from xdsl_ane.dialects.typing import shape_of
from xdsl_ane.frontend.torch.aten import (
    aten,
    narrow,
    scalar,
    translates,
)
from xdsl_ane.frontend.torch.translate import (
    TranslationError,
    Translator,
)

# --- resampling, padding and vision activations ------------------------------------

UPSAMPLE = {
    aten.upsample_nearest1d.vec: ("nearest", False),
    aten.upsample_nearest1d.default: ("nearest", False),
    aten.upsample_nearest2d.vec: ("nearest", False),
    aten.upsample_nearest2d.default: ("nearest", False),
    aten.upsample_linear1d.vec: ("bilinear", True),
    aten.upsample_linear1d.default: ("bilinear", True),
    aten.upsample_bilinear2d.vec: ("bilinear", True),
    aten.upsample_bilinear2d.default: ("bilinear", True),
    aten.upsample_bicubic2d.vec: ("bicubic", True),
    aten.upsample_bicubic2d.default: ("bicubic", True),
}
"""ATen's upsampling ops: rlx.upsample's mode, and whether the op takes
align_corners (after the output size)."""


def upsample_scales(node, rest: Sequence[Any], kwargs: dict[str, Any]) -> list[Any]:
    """The scale factors an upsample node was given, one per spatial axis
    (None where it has none): `.vec` takes a list, the default overloads
    one scale per axis (`scales`, `scales_h`, `scales_w`)."""
    if node.target._overloadname == "vec":
        scales = rest[0] if rest else kwargs.get("scale_factors")
        return list(scales) if scales is not None else []
    names = ("scales_h", "scales_w") if "2d" in node.target.__name__ else ("scales",)
    given = list(rest) + [None] * len(names)
    return [kwargs.get(n, given[i]) for i, n in enumerate(names)]


@translates(*UPSAMPLE)
def upsample(tr: Translator, node, x, output_size, *rest, **kwargs):
    """rlx.upsample to the size torch computed. A scale factor without
    recompute_scale_factor samples at d / scale instead of d · in/out; that
    is the same grid only where both round to one float32 (integer scales),
    the rest is refused (align_corners ignores the scale)."""
    mode, takes_corners = UPSAMPLE[node.target]
    align_corners = False
    if takes_corners:
        align_corners = bool(rest[0] if rest else kwargs.get("align_corners", False))
        rest = rest[1:]
    x = tr.value(x, tr.result_element(node))
    shape = shape_of(x)
    size = tr.result_shape(node)[2:]
    if not align_corners:
        for n, m, scale in zip(shape[2:], size, upsample_scales(node, rest, kwargs)):
            if scale and np.float32(1 / scale) != np.float32(n) / np.float32(m):
                raise TranslationError(
                    f"upsample of size {n} by scale_factor {scale} to {m}: torch "
                    f"samples at d / {scale}, not d · {n}/{m}; pass size= or "
                    "recompute_scale_factor=True"
                )
    return rlx.UpsampleOp(x, mode, size, True if align_corners else None).result


def torch_pads(pad: Sequence[int], rank: int) -> list[tuple[int, int]]:
    """torch's pad list (last axis first: left, right, top, bottom, ...)
    as (before, after) for every axis."""
    pairs = [(0, 0)] * rank
    for i in range(len(pad) // 2):
        pairs[rank - 1 - i] = (int(pad[2 * i]), int(pad[2 * i + 1]))
    return pairs


def padded(x: SSAValue, pairs: list[tuple[int, int]], mode: str, value=None):
    pads = [p for pair in pairs for p in pair]
    if not any(pads):
        return x
    return rlx.PadOp(x, pads, None if mode == "constant" else mode, value).result


@translates(aten.constant_pad_nd.default)
def constant_pad_nd(tr: Translator, node, x, pad, value=0):
    """rlx.pad "constant"; a negative pad crops, as a narrow first."""
    x = tr.value(x, tr.result_element(node))
    pairs = torch_pads(pad, len(shape_of(x)))
    for axis, (before, after) in enumerate(pairs):
        if before < 0 or after < 0:
            start, end = max(-before, 0), shape_of(x)[axis] - max(-after, 0)
            x = narrow(x, axis, start, end - start)
    pairs = [(max(b, 0), max(a, 0)) for b, a in pairs]
    return padded(x, pairs, "constant", float(value) if value else None)


PAD_MODES = {
    aten.reflection_pad1d.default: "reflect",
    aten.reflection_pad2d.default: "reflect",
    aten.replication_pad1d.default: "replicate",
    aten.replication_pad2d.default: "replicate",
}


@translates(aten.pad.default)
def pad(tr: Translator, node, x, pad, mode="constant", value=None):
    """torch.export's pad: constant_pad_nd, or a reflection or replication
    pad, by `mode`."""
    if mode == "constant":
        return constant_pad_nd(tr, node, x, pad, 0 if value is None else value)
    if mode not in ("reflect", "replicate"):
        raise TranslationError(f"pad mode {mode!r} is not supported")
    x = tr.value(x, tr.result_element(node))
    return padded(x, torch_pads(pad, len(shape_of(x))), mode)


@translates(*PAD_MODES)
def reflection_or_replication_pad(tr: Translator, node, x, padding):
    x = tr.value(x, tr.result_element(node))
    pairs = torch_pads(padding, len(shape_of(x)))
    return padded(x, pairs, PAD_MODES[node.target])


@translates(aten.hardtanh.default)
def hardtanh(tr: Translator, node, x, min_val=-1.0, max_val=1.0):
    """clamp(x, min_val, max_val); ReLU6 is hardtanh(x, 0, 6)."""
    x = tr.value(x, tr.result_element(node))
    return rlx.ClampOp(x, float(min_val), float(max_val)).result


@translates(aten.hardswish.default, aten.hardsigmoid.default)
def hard_activation(tr: Translator, node, x):
    op = rlx.HardswishOp if node.target is aten.hardswish.default else rlx.HardsigmoidOp
    return op(tr.value(x, tr.result_element(node))).result


@translates(aten.leaky_relu.default)
def leaky_relu(tr: Translator, node, x, negative_slope=0.01):
    return rlx.LeakyReluOp(
        tr.value(x, tr.result_element(node)), float(negative_slope)
    ).result


@translates(aten.elu.default)
def elu(tr: Translator, node, x, alpha=1.0, scale=1.0, input_scale=1.0):
    """scale · elu(input_scale · x, alpha) (SELU is elu with both scales)."""
    x = tr.value(x, tr.result_element(node))
    if input_scale != 1:
        x = rlx.MulOp(x, scalar(tr, input_scale, x)).result
    y = rlx.EluOp(x, float(alpha)).result
    if scale != 1:
        y = rlx.MulOp(y, scalar(tr, scale, y)).result
    return y

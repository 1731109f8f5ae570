"""ATen's fake quantization to rlx: `fake_quantize_per_tensor_affine` (the
quantization-aware training and PTQ simulation op) as rlx.quantize then
rlx.dequantize, which lower to MIL's quantize and dequantize."""

from __future__ import annotations

import torch

from xdsl_ane.dialects import rlx
from xdsl_ane.dialects.typing import element_type_of
from xdsl_ane.frontend.torch.aten import translates
from xdsl_ane.frontend.torch.aten_pooling import UnusedOutputs
from xdsl_ane.frontend.torch.translate import Const, TranslationError, Translator

aten = torch.ops.aten

INT8 = (-128, 127)


def number(value) -> float:
    return value.value.item() if isinstance(value, Const) else float(value)


@translates(
    aten.fake_quantize_per_tensor_affine.default,
    aten.fake_quantize_per_tensor_affine.tensor_qparams,
)
def fake_quantize(tr: Translator, node, x, scale, zero_point, quant_min, quant_max):
    """(clamp(round(x / s) + z, qmin, qmax) − z) · s. rlx's int8 holds any
    range of at most 256 levels shifted by k (q − k, zero point z − k); a
    range narrower than int8's clamps x to [(qmin − z)·s, (qmax − z)·s]
    first."""
    for name, value in (("scale", scale), ("zero point", zero_point)):
        if not isinstance(value, Const | float | int):
            raise TranslationError(
                f"fake_quantize with a {name} computed at runtime: only constant "
                "quantization parameters are supported"
            )
    s, z = number(scale), int(number(zero_point))
    low, high = int(quant_min), int(quant_max)
    if high - low > 255:
        raise TranslationError(
            f"fake_quantize to [{low}, {high}]: at most 256 levels (8 bits)"
        )
    shift = 0 if low >= INT8[0] and high <= INT8[1] else low - INT8[0]
    if not INT8[0] <= z - shift <= INT8[1]:
        raise TranslationError(
            f"fake_quantize with zero point {z} outside its range [{low}, {high}]"
        )
    x = tr.value(x, tr.result_element(node))
    if (low - shift, high - shift) != INT8:
        x = rlx.ClampOp(x, (low - z) * s, (high - z) * s).result
    q = rlx.QuantizeOp(x, s, z - shift).result
    return rlx.DequantizeOp(q, s, z - shift, element_type_of(x)).result


@translates(aten.fake_quantize_per_tensor_affine_cachemask.default)
def fake_quantize_with_mask(tr: Translator, node, *args):
    """The decomposed form, with the mask of clamped values (for the
    gradient) as a second output, which only training reads."""
    y = fake_quantize(tr, node, *args)
    return UnusedOutputs(y, "fake_quantize_per_tensor_affine", ("mask",))

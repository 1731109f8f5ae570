"""Traits saying what the passes may rely on about the values of a mil op.

The passes ask for a trait (`op.has_trait(Elementwise)`) rather than list op
classes, so an op added to a family, or given the trait, is handled
everywhere the property matters.
"""

from __future__ import annotations

from xdsl.traits import OpTrait


class Elementwise(OpTrait):
    """Each result element is computed from the operands' elements at the
    same position, under numpy broadcasting, and the op's properties alone:
    the op commutes with a layout change (a transpose or reshape) applied to
    all its operands alike. Unary math and activations, binary arithmetic and
    comparisons, select and cast. `mil-ane-layout` computes such ops in ANE
    form; canonicalization sinks layout ops below them."""


class CopiesElements(OpTrait):
    """Each result element is one operand element, at most converted to the
    result's dtype, taken from a position that the shapes and properties fix:
    no arithmetic combines values. Folding such an op is a copy however
    large the result, so canonicalization folds larger results of it."""


class RearrangesElements(CopiesElements):
    """Each result element is an operand element, unchanged: the op reshapes,
    permutes, slices, repeats, joins or splits (reshape, transpose,
    expand_dims, squeeze, slice_by_size, tile, concat, split). A value that
    means something element by element, such as an additive mask, means the
    same after it (`mil-fp16` follows masks through these ops)."""


class ImageOp(OpTrait):
    """Its input x (operand 0) and its result are `[N, C, *spatial]`: an
    image `[1, C, H, W]` or a signal `[1, C, W]` there is one (convolutions,
    pooling, batch and instance norms, upsampling, pixel_shuffle and
    pixel_unshuffle). `mil-ane-layout` lays such values out `nchw` / `ncw`
    instead of by shape alone."""


class ImageLink(OpTrait):
    """Its input x and its result are images or signals together, when
    either is (pad: a conv's padded input; a pad alone may pad a sequence)."""


class EpsilonGuarded(OpTrait):
    """Its `epsilon` keeps a log, a reciprocal or a normalization finite
    (log, rsqrt, inverse, layer_norm, batch_norm, instance_norm). In fp16 an
    epsilon below 1e-7 (MIL's defaults included) is 0 or subnormal, so
    `mil-fp16` raises it to 1e-7."""

"""ATen math, ordering and statistics ops to rlx: erf, floor, round,
log1p, isnan, clamp by tensors; max/min along a dim with their indices,
argmax, argmin, topk, sort and argsort; cumprod and logcumsumexp; flip,
diagonal, repeat; var and std, mean and sum of everything; one_hot (and
the `_assert_async` guards of its core ATen form).

Where rlx composes an op exactly, the translation is that composition
(isnan is x ≠ x, argmin the argmax of −x, flip and diagonal constant-index
reads through `aten.take`, repeat a concat per axis); erf, floor, round,
topk (sort too) and argsort are rlx ops of their own (MIL has them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from xdsl.dialects.builtin import i32
from xdsl.ir import Attribute, SSAValue

from xdsl_ane.dialects import rlx
from xdsl_ane.dialects.typing import element_type_of, is_float, shape_of
from xdsl_ane.frontend.torch.aten import (
    NO_OPS,
    axis_of,
    reshape,
    scalar,
    take,
    translates,
    transposed,
)
from xdsl_ane.frontend.torch.translate import (
    NONE_RESULTS,
    TranslationError,
    Translator,
    element_type,
)

aten = torch.ops.aten

GUARDS = {aten._assert_async.default, aten._assert_async.msg}
"""Runtime checks of the data (one_hot's "class values must be in range"
in core ATen): nothing to compute, dropped with the ops that feed them."""
NO_OPS.update(GUARDS)
NONE_RESULTS.update(GUARDS)


def all_axes_or(dims: Any, rank: int) -> list[int]:
    """`dims` (an int, a list, or None / [] for every axis) non-negative."""
    if dims is None or (isinstance(dims, Sequence) and len(dims) == 0):
        return list(range(rank))
    if isinstance(dims, int):
        dims = [dims]
    return [axis_of(d, rank) for d in dims]


# --- elementwise -----------------------------------------------------------------

UNARY_MATH = {
    aten.erf.default: rlx.ErfOp,
    aten.floor.default: rlx.FloorOp,
    aten.round.default: rlx.RoundOp,
}


@translates(*UNARY_MATH)
def unary_math(tr: Translator, node, x):
    """erf, floor and round (halves to even); floor and round of integers
    are the integers."""
    x = tr.value(x, tr.result_element(node))
    if not is_float(element_type_of(x)):
        return x
    return UNARY_MATH[node.target](x).result


@translates(aten.round.decimals)
def round_decimals(tr: Translator, node, x, decimals=0):
    """round(x · 10^d) / 10^d, as torch computes it."""
    x = tr.value(x, tr.result_element(node))
    if decimals == 0:
        return rlx.RoundOp(x).result
    scale = scalar(tr, 10.0**decimals, x)
    return rlx.DivOp(rlx.RoundOp(rlx.MulOp(x, scale).result).result, scale).result


@translates(aten.log1p.default)
def log1p(tr: Translator, node, x):
    """log(1 + x) as log(u) · x / (u − 1), u = 1 + x, and x itself where
    u = 1 (Goldberg's correction: the rounding of 1 + x cancels, so small
    x keep their relative precision, in fp16 too)."""
    x = tr.value(x, tr.result_element(node))
    one = scalar(tr, 1.0, x)
    u = rlx.AddOp(x, one).result
    d = rlx.SubOp(u, one).result
    ratio = rlx.DivOp(rlx.MulOp(rlx.LogOp(u).result, x).result, d).result
    tiny = rlx.CompareOp(d, scalar(tr, 0.0, x), "eq").result
    return rlx.WhereOp(tiny, x, ratio).result


@translates(aten.isnan.default)
def isnan(tr: Translator, node, x):
    """x ≠ x: true of NaN alone."""
    x = tr.value(x)
    return rlx.CompareOp(x, x, "ne").result


@translates(aten.clamp.Tensor, aten.clamp_min.Tensor, aten.clamp_max.Tensor)
def clamp_tensor(tr: Translator, node, x, low=None, high=None):
    """min(max(x, low), high) with tensor bounds (high wins where
    low > high, as in torch)."""
    if node.target is aten.clamp_max.Tensor:
        low, high = None, low
    element = tr.result_element(node)
    x = tr.value(x, element)
    if low is not None:
        x = rlx.MaxOp(x, tr.value(low, element)).result
    if high is not None:
        x = rlx.MinOp(x, tr.value(high, element)).result
    return x


# --- ordering ----------------------------------------------------------------------


def negated(tr: Translator, x: SSAValue) -> SSAValue:
    """−x, integers too (argmin as the argmax of −x)."""
    if is_float(element_type_of(x)):
        return rlx.NegOp(x).result
    return rlx.MulOp(x, scalar(tr, -1, x)).result


def values_element(node) -> Attribute:
    """The element type of the first result (the values) of an op that also
    returns indices."""
    return element_type(node.meta["val"][0].dtype, f"the values of {node.name}")


def arg_extreme(
    tr: Translator, x: SSAValue, axis: int, keep: bool, largest: bool
) -> SSAValue:
    """The i32 index of the first largest (or smallest) value along `axis`."""
    if not largest:
        x = negated(tr, x)
    return rlx.ArgmaxOp(x, axis, keep or None).result


def value_input(tr: Translator, node, x) -> SSAValue:
    """x, in its own element type (booleans as i32, which rlx orders)."""
    meta = node.args[0].meta["val"]
    if meta.dim() == 0:
        raise TranslationError(f"{node.target} of a scalar: only tensors of rank ≥ 1")
    x = tr.value(x)
    return tr.value(x, i32) if meta.dtype == torch.bool else x


@translates(aten.max.dim, aten.min.dim)
def max_min_dim(tr: Translator, node, x, dim, keepdim=False):
    """(values, indices) along `dim`: reduce_max and argmax (min: reduce_min
    and the argmax of −x), the first index on ties as in torch."""
    x = value_input(tr, node, x)
    axis = axis_of(dim, len(shape_of(x)))
    largest = node.target is aten.max.dim
    reduce = rlx.ReduceMaxOp if largest else rlx.ReduceMinOp
    values = reduce(x, [axis], bool(keepdim)).result
    values = tr.value(values, values_element(node))
    return [values, arg_extreme(tr, x, axis, bool(keepdim), largest)]


@translates(aten.max.default, aten.min.default)
def max_min(tr: Translator, node, x):
    """The largest (smallest) element."""
    x = tr.value(x, tr.result_element(node))
    rank = len(shape_of(x))
    if rank == 0:
        return x
    reduce = rlx.ReduceMaxOp if node.target is aten.max.default else rlx.ReduceMinOp
    return reduce(x, list(range(rank))).result


@translates(aten.argmax.default, aten.argmin.default)
def argmax(tr: Translator, node, x, dim=None, keepdim=False):
    """argmax (argmin: argmax of −x) along `dim`, or of x flattened."""
    x = value_input(tr, node, x)
    largest = node.target is aten.argmax.default
    if dim is None:
        flat = reshape(x, (int(np.prod(shape_of(x))),))
        index = arg_extreme(tr, flat, 0, False, largest)
        return reshape(index, tr.result_shape(node))
    return arg_extreme(tr, x, axis_of(dim, len(shape_of(x))), bool(keepdim), largest)


def ordered(tr: Translator, node, x, k: int, dim: int, largest: bool) -> list:
    """rlx.topk's (values, i32 indices), the values in torch's result type."""
    x = value_input(tr, node, x)
    axis = axis_of(dim, len(shape_of(x)))
    op = rlx.TopkOp(x, int(k), axis, None if largest else False)
    return [tr.value(op.values, values_element(node)), op.indices]


@translates(aten.topk.default)
def topk(tr: Translator, node, x, k, dim=-1, largest=True, sorted=True):
    """The k largest (smallest) along `dim`, sorted (torch leaves the order
    of sorted=False open)."""
    return ordered(tr, node, x, k, dim, bool(largest))


@translates(aten.sort.default, aten.sort.stable)
def sort(tr: Translator, node, x, dim=-1, descending=False, stable=None):
    """topk of every element along `dim`: equal values keep their order
    (torch's stable sort; its default sort leaves it open)."""
    size = node.args[0].meta["val"].shape[dim]
    return ordered(tr, node, x, int(size), dim, bool(descending))


@translates(aten.argsort.default, aten.argsort.stable)
def argsort(tr: Translator, node, x, dim=-1, descending=False, stable=None):
    """rlx.argsort: the indices of `sort`, equal values in their order."""
    x = value_input(tr, node, x)
    axis = axis_of(dim, len(shape_of(x)))
    return rlx.ArgsortOp(x, axis, bool(descending) or None).result


# --- running products and sums ---------------------------------------------------------


def float_input(tr: Translator, node, x) -> SSAValue:
    element = tr.result_element(node)
    if not is_float(element):
        raise TranslationError(
            f"{node.target} of {node.args[0].meta['val'].dtype}: only floating-point "
            "tensors are supported"
        )
    return tr.value(x, element)


@translates(aten.cumprod.default)
def cumprod(tr: Translator, node, x, dim, dtype=None):
    """Π_{j ≤ i} x_j = exp(cumsum(log |x|)) · (−1)^(negatives so far), the
    parity n − 2·⌊n/2⌋ of the running count n of negatives; a zero makes
    log |x| = −∞ and the products from it on 0 (MIL's cumsum is the only
    running op, so the product is summed as logs)."""
    x = float_input(tr, node, x)
    axis = axis_of(dim, len(shape_of(x)))
    magnitude = rlx.ExpOp(
        rlx.CumsumOp(rlx.LogOp(rlx.AbsOp(x).result).result, axis).result
    ).result
    negative = rlx.CompareOp(x, scalar(tr, 0.0, x), "lt").result
    count = rlx.CumsumOp(rlx.CastOp(negative, element_type_of(x)).result, axis).result
    half = rlx.FloorOp(rlx.MulOp(count, scalar(tr, 0.5, x)).result).result
    odd = rlx.SubOp(count, rlx.MulOp(half, scalar(tr, 2.0, x)).result).result
    sign = rlx.SubOp(scalar(tr, 1.0, x), rlx.MulOp(odd, scalar(tr, 2.0, x)).result)
    return rlx.MulOp(magnitude, sign.result).result


@translates(aten.logcumsumexp.default)
def logcumsumexp(tr: Translator, node, x, dim):
    """log Σ_{j ≤ i} e^(x_j) = m + log cumsum(e^(x − m)), m the maximum along
    `dim` (so no exp overflows; a running value more than ~87 below m, ~17
    in fp16, underflows to −∞)."""
    x = float_input(tr, node, x)
    axis = axis_of(dim, len(shape_of(x)))
    m = rlx.ReduceMaxOp(x, [axis], True).result
    e = rlx.ExpOp(rlx.SubOp(x, m).result).result
    return rlx.AddOp(m, rlx.LogOp(rlx.CumsumOp(e, axis).result).result).result


# --- rearranging -------------------------------------------------------------------------


@translates(aten.flip.default)
def flip(tr: Translator, node, x, dims):
    """Each axis of `dims` read backwards (constant indices, `take`)."""
    x = tr.value(x)
    rank = len(shape_of(x))
    for axis in sorted({axis_of(d, rank) for d in dims}):
        size = shape_of(x)[axis]
        if size > 1:
            x = take(tr, node, x, axis, np.arange(size)[::-1])
    return x


@translates(aten.diagonal.default)
def diagonal(tr: Translator, node, x, offset=0, dim1=0, dim2=1):
    """x[..., i, i + offset] over the axes dim1 and dim2, moved last and
    merged: the constant flat positions i·n2 + i + offset (`take`); the
    diagonal is the result's last axis."""
    x = tr.value(x)
    rank = len(shape_of(x))
    a, b = axis_of(dim1, rank), axis_of(dim2, rank)
    rest = [i for i in range(rank) if i not in (a, b)]
    y = transposed(x, [*rest, a, b])
    *outer, n1, n2 = shape_of(y)
    rows = np.arange(max(0, -offset), min(n1, n2 - offset))
    merged = reshape(y, (*outer, n1 * n2))
    return take(tr, node, merged, len(outer), rows * n2 + rows + offset)


@translates(aten.repeat.default)
def repeat(tr: Translator, node, x, repeats):
    """np.tile: x with leading axes of size 1 up to len(repeats), then r
    copies concatenated along each axis repeated r > 1 times."""
    x = tr.value(x)
    shape = shape_of(x)
    y = reshape(x, (1,) * (len(repeats) - len(shape)) + tuple(shape))
    for axis, r in enumerate(repeats):
        if r > 1:
            y = rlx.ConcatOp([y] * int(r), axis).result
    return y


# --- statistics -------------------------------------------------------------------------


def variance(
    tr: Translator, node, x, dims: Any, correction: float, keepdim: bool
) -> SSAValue:
    """mean((x − mean x)²) · n / (n − correction) over `dims` (all when
    None); the mean of squares rather than their sum keeps fp16 in range."""
    x = float_input(tr, node, x)
    shape = shape_of(x)
    if not shape:
        raise TranslationError(f"{node.target} of a scalar: only tensors of rank ≥ 1")
    axes = all_axes_or(dims, len(shape))
    n = int(np.prod([shape[a] for a in axes]))
    if n - correction <= 0:
        raise TranslationError(
            f"{node.target} of {n} element(s) with correction {correction}: "
            "n − correction must be positive"
        )
    mean = rlx.ReduceMeanOp(x, axes, True).result
    d = rlx.SubOp(x, mean).result
    var = rlx.ReduceMeanOp(rlx.MulOp(d, d).result, axes, keepdim or None).result
    if correction:
        var = rlx.MulOp(var, scalar(tr, n / (n - correction), var)).result
    return var


@translates(aten.var.correction, aten.std.correction)
def var_correction(tr: Translator, node, x, dim=None, correction=None, keepdim=False):
    """var (std: its square root) with `correction` (default 1)."""
    c = 1.0 if correction is None else float(correction)
    var = variance(tr, node, x, dim, c, bool(keepdim))
    return rlx.SqrtOp(var).result if "std" in str(node.target) else var


@translates(aten.var.dim, aten.std.dim)
def var_dim(tr: Translator, node, x, dim=None, unbiased=True, keepdim=False):
    """var (std) with Bessel's correction unless `unbiased` is false."""
    var = variance(tr, node, x, dim, 1.0 if unbiased else 0.0, bool(keepdim))
    return rlx.SqrtOp(var).result if "std" in str(node.target) else var


@translates(aten.mean.default, aten.sum.default)
def reduce_all(tr: Translator, node, x, dtype=None):
    """The mean (sum) of every element: a rank-0 result."""
    x = tr.value(x, tr.result_element(node))
    rank = len(shape_of(x))
    if rank == 0:
        return x
    reduce = rlx.ReduceMeanOp if node.target is aten.mean.default else rlx.ReduceSumOp
    return reduce(x, list(range(rank))).result


@translates(aten.any.default, aten.any.dim, aten.any.dims)
def any_(tr: Translator, node, x, dim=None, keepdim=False):
    """Whether any element along `dim` is nonzero: max(x ≠ 0 as i32) > 0
    (what feeds core ATen's one_hot guards)."""
    x = tr.value(x)
    rank = len(shape_of(x))
    nonzero = rlx.CompareOp(x, tr.value(0, element_type_of(x)), "ne").result
    if rank == 0:
        return nonzero
    counts = rlx.CastOp(nonzero, i32).result
    most = rlx.ReduceMaxOp(counts, all_axes_or(dim, rank), bool(keepdim)).result
    return rlx.CompareOp(most, tr.value(0, i32), "gt").result


@translates(aten.one_hot.default)
def one_hot(tr: Translator, node, x, num_classes=-1):
    """x[..., None] == arange(num_classes), as the result's integers; a
    class outside [0, num_classes) is a row of zeros (torch raises)."""
    if num_classes is None or num_classes < 0:
        raise TranslationError(
            "one_hot without num_classes: its size would depend on the data; "
            "pass num_classes"
        )
    ids = tr.value(x, i32)
    column = reshape(ids, (*shape_of(ids), 1))
    classes = tr.constant(np.arange(int(num_classes)), i32)
    hot = rlx.CompareOp(column, classes, "eq").result
    return tr.value(hot, tr.result_element(node))

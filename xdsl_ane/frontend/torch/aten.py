"""ATen ops to rlx, one function per op family.

Each translation receives the translator, the fx node and the node's
arguments already looked up (runtime values as `SSAValue`, constants as
`Const`, everything else as Python values), and returns the node's value.
Result shapes come from the node's recorded `meta["val"]` where an op's
arguments leave them implicit (`view` with −1, `squeeze`), so every shape
in the program is the one torch computed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from xdsl.dialects.builtin import i1, i32
from xdsl.ir import Attribute, SSAValue

from xdsl_ane.dialects import rlx
from xdsl_ane.dialects.typing import element_type_of, is_float, shape_of
from xdsl_ane.errors import XdslAneError
from xdsl_ane.frontend.torch import patterns
from xdsl_ane.frontend.torch.translate import (
    NONE_RESULTS,
    Const,
    TranslationError,
    Translator,
    Value,
    element_type,
    empty_value,
    is_empty,
)

aten = torch.ops.aten

TRANSLATIONS: dict[Any, Any] = {}


def translates(*ops: Any):
    """Registers `fn` as the translation of each op; an op registered twice
    (or also listed as a no-op or shape-only op) is an error, not a silent
    replacement of the first translation."""

    def register(fn):
        for op in ops:
            taken = (
                f"a translation ({TRANSLATIONS[op].__name__})"
                if op in TRANSLATIONS
                else "a no-op entry"
                if op in NO_OPS
                else "a shape-only entry"
                if op in SHAPE_ONLY
                else None
            )
            if taken is not None or ops.count(op) > 1:
                raise XdslAneError(
                    f"ATen op {op} already has {taken or 'this translation'}; "
                    f"{fn.__name__} cannot register it again"
                )
        for op in ops:
            TRANSLATIONS[op] = fn
        return fn

    return register


NO_OPS = {
    aten._assert_tensor_metadata.default,
    *patterns.IDENTITY,
    aten.dropout.default,
    aten.feature_dropout.default,
    aten.alpha_dropout.default,
}
"""Ops with nothing to compute here: checks, copies (`patterns.IDENTITY`),
dropout (inference)."""
NONE_RESULTS.add(aten._assert_tensor_metadata.default)

SHAPE_ONLY = {
    aten.zeros_like.default,
    aten.ones_like.default,
    aten.full_like.default,
    aten.empty_like.default,
    aten.new_zeros.default,
    aten.new_ones.default,
    aten.new_full.default,
    aten.new_empty.default,
    aten.sym_size.int,
}
"""Ops that read only the shape and dtype of a runtime tensor: folded."""


# --- helpers -------------------------------------------------------------------------


def promoted(tr: Translator, node: torch.fx.Node, operands: Sequence[Any]) -> Attribute:
    """The element type torch computes `operands` in (type promotion)."""
    stand_ins = []
    for arg in node.args[: len(operands)]:
        if isinstance(arg, torch.fx.Node):
            meta = arg.meta["val"]
            stand_ins.append(torch.empty([1] * meta.dim(), dtype=meta.dtype))
        else:
            stand_ins.append(arg)
    if len(stand_ins) == 1:
        dtype = stand_ins[0].dtype
    else:
        dtype = torch.result_type(stand_ins[0], stand_ins[1])
        for extra in stand_ins[2:]:
            dtype = torch.promote_types(dtype, torch.result_type(stand_ins[0], extra))
    return element_type(dtype, f"the operands of {node.name}")


def reshape(x: SSAValue, shape: Sequence[int]) -> SSAValue:
    shape = tuple(int(d) for d in shape)
    if shape_of(x) == shape:
        return x
    return rlx.ReshapeOp(x, shape).result


def axis_of(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


def scalar(tr: Translator, value: float | int | bool, like: SSAValue) -> SSAValue:
    return tr.constant(np.asarray(value), element_type_of(like))


# --- elementwise ---------------------------------------------------------------------

BINARY = {
    aten.add.Tensor: rlx.AddOp,
    aten.add.Scalar: rlx.AddOp,
    aten.sub.Tensor: rlx.SubOp,
    aten.sub.Scalar: rlx.SubOp,
    aten.mul.Tensor: rlx.MulOp,
    aten.mul.Scalar: rlx.MulOp,
    aten.div.Tensor: rlx.DivOp,
    aten.div.Scalar: rlx.DivOp,
    aten.maximum.default: rlx.MaxOp,
    aten.minimum.default: rlx.MinOp,
    aten.pow.Tensor_Tensor: rlx.PowOp,
}


@translates(*BINARY)
def binary(tr: Translator, node, lhs, rhs, alpha=1):
    """lhs ∘ rhs in the promoted type; `alpha` scales rhs (add, sub)."""
    if node.target in (aten.mul.Tensor, aten.mul.Scalar):
        fused = patterns.rms_norm(tr, node)
        if fused is not None:
            return fused
    if node.target in (aten.add.Tensor, aten.add.Scalar):
        fused = patterns.rope(tr, node)
        if fused is not None:
            return fused
    element = tr.result_element(node)
    compute = promoted(tr, node, [lhs, rhs])
    if is_float(element) and not is_float(compute):
        compute = element  # int / int is a true division
    a, b = tr.value(lhs, compute), tr.value(rhs, compute)
    if alpha != 1:
        b = rlx.MulOp(b, scalar(tr, alpha, b)).result
    result = BINARY[node.target](a, b).result
    return tr.value(result, element)


@translates(aten.rsub.Scalar, aten.rsub.Tensor)
def rsub(tr: Translator, node, lhs, rhs, alpha=1):
    """rhs − alpha·lhs."""
    element = tr.result_element(node)
    a, b = tr.value(lhs, element), tr.value(rhs, element)
    if alpha != 1:
        a = rlx.MulOp(a, scalar(tr, alpha, a)).result
    return rlx.SubOp(b, a).result


@translates(aten.pow.Tensor_Scalar)
def pow_scalar(tr: Translator, node, x, exponent):
    """Small integer powers as products (exact, and safe for negative
    bases on the ANE), ½ and −½ as sqrt and rsqrt."""
    x = tr.value(x, tr.result_element(node))
    if exponent == 1:
        return x
    if exponent == 0.5:
        return rlx.SqrtOp(x).result
    if exponent == -0.5:
        return rlx.RsqrtOp(x).result
    if exponent == -1:
        return rlx.ReciprocalOp(x).result
    if float(exponent).is_integer() and 2 <= exponent <= 4:
        result = x
        for _ in range(int(exponent) - 1):
            result = rlx.MulOp(result, x).result
        return result
    return rlx.PowOp(x, scalar(tr, exponent, x)).result


UNARY = {
    aten.neg.default: rlx.NegOp,
    aten.exp.default: rlx.ExpOp,
    aten.log.default: rlx.LogOp,
    aten.sqrt.default: rlx.SqrtOp,
    aten.rsqrt.default: rlx.RsqrtOp,
    aten.tanh.default: rlx.TanhOp,
    aten.sigmoid.default: rlx.SigmoidOp,
    aten.relu.default: rlx.ReluOp,
    aten.abs.default: rlx.AbsOp,
    aten.sin.default: rlx.SinOp,
    aten.cos.default: rlx.CosOp,
    aten.reciprocal.default: rlx.ReciprocalOp,
    aten.silu.default: rlx.SiluOp,
}


@translates(*UNARY)
def unary(tr: Translator, node, x):
    return UNARY[node.target](tr.value(x, tr.result_element(node))).result


@translates(aten.gelu.default)
def gelu(tr: Translator, node, x, approximate="none"):
    x = tr.value(x)
    if approximate == "tanh":
        return rlx.GeluTanhOp(x).result
    return rlx.GeluOp(x).result


@translates(aten.clamp.default, aten.clamp_min.default, aten.clamp_max.default)
def clamp(tr: Translator, node, x, low=None, high=None):
    """rlx.clamp with constant float bounds, else max and min."""
    if node.target is aten.clamp_max.default:
        low, high = None, low
    x = tr.value(x, tr.result_element(node))
    bounds = [b for b in (low, high) if b is not None]
    if is_float(element_type_of(x)) and all(isinstance(b, int | float) for b in bounds):
        if low is not None and high is not None and low > high:
            low = high  # torch: every element is max
        return rlx.ClampOp(
            x,
            None if low is None else float(low),
            None if high is None else float(high),
        ).result
    if low is not None:
        x = rlx.MaxOp(x, tr.value(low, element_type_of(x))).result
    if high is not None:
        x = rlx.MinOp(x, tr.value(high, element_type_of(x))).result
    return x


COMPARE = {
    aten.eq: "eq",
    aten.ne: "ne",
    aten.lt: "lt",
    aten.le: "le",
    aten.gt: "gt",
    aten.ge: "ge",
}


@translates(*(getattr(op, form) for op in COMPARE for form in ("Tensor", "Scalar")))
def compare(tr: Translator, node, lhs, rhs):
    predicate = COMPARE[node.target.overloadpacket]
    element = promoted(tr, node, [lhs, rhs])
    return rlx.CompareOp(
        tr.value(lhs, element), tr.value(rhs, element), predicate
    ).result


@translates(aten.where.self)
def where(tr: Translator, node, cond, on_true, on_false):
    element = tr.result_element(node)
    return rlx.WhereOp(
        tr.value(cond, i1), tr.value(on_true, element), tr.value(on_false, element)
    ).result


@translates(aten.masked_fill.Scalar, aten.masked_fill.Tensor)
def masked_fill(tr: Translator, node, x, mask, value):
    x = tr.value(x, tr.result_element(node))
    return rlx.WhereOp(
        tr.value(mask, i1), tr.value(value, element_type_of(x)), x
    ).result


@translates(aten.logical_not.default, aten.bitwise_not.default)
def logical_not(tr: Translator, node, x):
    if node.args[0].meta["val"].dtype != torch.bool and "bitwise" in str(node.target):
        raise TranslationError(
            f"bitwise_not of {node.args[0].meta['val'].dtype}: only booleans are "
            "supported"
        )
    x = tr.value(x, i1)
    return rlx.WhereOp(x, scalar(tr, False, x), scalar(tr, True, x)).result


@translates(aten._to_copy.default)
def to_copy(tr: Translator, node, x, **kwargs):
    """A dtype conversion (device, layout and memory format are no-ops)."""
    return tr.value(x, tr.result_element(node))


# --- linear algebra --------------------------------------------------------------------


@translates(aten.linear.default)
def linear(tr: Translator, node, x, weight, bias=None):
    """x·Wᵀ + b with W [out, in] as nn.Linear stores it."""
    element = tr.result_element(node)
    y = rlx.MatmulOp(
        tr.value(x, element), tr.value(weight, element), transpose_rhs=True
    )
    if bias is None:
        return y.result
    return rlx.AddOp(y.result, tr.value(bias, element)).result


@translates(aten.addmm.default)
def addmm(tr: Translator, node, bias, x, weight, beta=1, alpha=1):
    """beta·b + alpha·(x·W) (GPT-2's Conv1D stores W [in, out])."""
    element = tr.result_element(node)
    y = rlx.MatmulOp(tr.value(x, element), tr.value(weight, element)).result
    if alpha != 1:
        y = rlx.MulOp(y, scalar(tr, alpha, y)).result
    b = tr.value(bias, element)
    if beta != 1:
        b = rlx.MulOp(b, scalar(tr, beta, b)).result
    return rlx.AddOp(y, b).result


@translates(aten.mm.default, aten.bmm.default, aten.matmul.default)
def matmul(tr: Translator, node, lhs, rhs):
    element = tr.result_element(node)
    a, b = tr.value(lhs, element), tr.value(rhs, element)
    if len(shape_of(a)) == 1 or len(shape_of(b)) == 1:
        raise TranslationError("matmul with a vector operand is not supported")
    return rlx.MatmulOp(a, b).result


@translates(aten.convolution.default)
def convolution(
    tr: Translator,
    node,
    x,
    weight,
    bias,
    stride,
    padding,
    dilation,
    transposed,
    output_padding,
    groups,
):
    """conv / conv_transpose (1-D and 2-D); torch pads both ends of each
    spatial axis alike, rlx takes (before, after) per axis."""
    element = tr.result_element(node)
    xv, wv = tr.value(x, element), tr.value(weight, element)
    spatial = len(shape_of(xv)) - 2

    def per_axis(values) -> list[int]:
        values = [int(v) for v in values]
        return values * spatial if len(values) == 1 else values

    pads = [p for p in per_axis(padding) for p in (p, p)]
    props = dict(
        strides=per_axis(stride),
        padding=pads if any(pads) else None,
        dilations=per_axis(dilation),
        groups=int(groups) if groups != 1 else None,
    )
    b = None if bias is None else tr.value(bias, element)
    if transposed:
        extra = per_axis(output_padding)
        op = rlx.ConvTransposeOp(
            xv, wv, b, output_padding=extra if any(extra) else None, **props
        )
    else:
        op = rlx.ConvOp(xv, wv, b, **props)
    return op.result


@translates(aten.conv1d.default, aten.conv2d.default)
def conv_nd(
    tr: Translator,
    node,
    x,
    weight,
    bias=None,
    stride=1,
    padding=0,
    dilation=1,
    groups=1,
):
    """torch.export's conv1d / conv2d (int padding): `convolution` untransposed."""
    spatial = len(node.args[1].meta["val"].shape) - 2

    def listed(v):
        return list(v) if isinstance(v, Sequence) else [v] * spatial

    return convolution(
        tr,
        node,
        x,
        weight,
        bias,
        listed(stride),
        listed(padding),
        listed(dilation),
        False,
        [0] * spatial,
        groups,
    )


@translates(aten.embedding.default)
def embedding(tr: Translator, node, weight, indices, *rest):
    """table[indices] (padding_idx only matters for training)."""
    return rlx.GatherOp(tr.value(weight), tr.value(indices, i32), 0).result


# --- reductions and normalization ----------------------------------------------------------

REDUCE = {
    aten.mean.dim: rlx.ReduceMeanOp,
    aten.sum.dim_IntList: rlx.ReduceSumOp,
    aten.amax.default: rlx.ReduceMaxOp,
    aten.amin.default: rlx.ReduceMinOp,
}


@translates(*REDUCE)
def reduce(tr: Translator, node, x, dims=None, keepdim=False, **kwargs):
    x = tr.value(x, tr.result_element(node))
    rank = len(shape_of(x))
    if dims is None or (isinstance(dims, Sequence) and len(dims) == 0):
        dims = list(range(rank))
    if isinstance(dims, int):
        dims = [dims]
    if rank == 0:
        return x
    return REDUCE[node.target](
        x, [axis_of(d, rank) for d in dims], bool(keepdim)
    ).result


@translates(aten.cumsum.default)
def cumsum(tr: Translator, node, x, dim, dtype=None):
    """Running sums in the result's type (torch sums integers as int64)."""
    x = tr.value(x, tr.result_element(node))
    return rlx.CumsumOp(x, axis_of(dim, len(shape_of(x)))).result


@translates(aten.linalg_vector_norm.default)
def vector_norm(tr: Translator, node, x, ord=2, dim=None, keepdim=False, dtype=None):
    """(Σ |x|^p)^(1/p) over `dim`; p = 2 as √Σx², 1 as Σ|x|, ±inf as the
    max / min of |x|."""
    x = tr.value(x, tr.result_element(node))
    rank = len(shape_of(x))
    dims = list(range(rank)) if dim is None or dim == [] else dim
    axes = [axis_of(d, rank) for d in ([dims] if isinstance(dims, int) else dims)]
    keep = bool(keepdim)
    p = float(ord)
    if p == 2:
        squares = rlx.MulOp(x, x).result
        return rlx.SqrtOp(rlx.ReduceSumOp(squares, axes, keep).result).result
    magnitude = rlx.AbsOp(x).result
    if p == 1:
        return rlx.ReduceSumOp(magnitude, axes, keep).result
    if p == float("inf"):
        return rlx.ReduceMaxOp(magnitude, axes, keep).result
    if p == float("-inf"):
        return rlx.ReduceMinOp(magnitude, axes, keep).result
    if p <= 0:
        raise TranslationError(f"linalg_vector_norm of order {ord}: only p > 0")
    powered = rlx.PowOp(magnitude, scalar(tr, p, x)).result
    total = rlx.ReduceSumOp(powered, axes, keep).result
    return rlx.PowOp(total, scalar(tr, 1 / p, x)).result


@translates(aten._softmax.default, aten.softmax.int)
def softmax(tr: Translator, node, x, dim, *rest):
    x = tr.value(x, tr.result_element(node))
    return rlx.SoftmaxOp(x, axis_of(dim, len(shape_of(x)))).result


@translates(aten._log_softmax.default, aten.log_softmax.int)
def log_softmax(tr: Translator, node, x, dim, *rest):
    """x − max − log Σ exp(x − max)."""
    x = tr.value(x, tr.result_element(node))
    axis = axis_of(dim, len(shape_of(x)))
    shifted = rlx.SubOp(x, rlx.ReduceMaxOp(x, [axis], True).result).result
    total = rlx.ReduceSumOp(rlx.ExpOp(shifted).result, [axis], True).result
    return rlx.SubOp(shifted, rlx.LogOp(total).result).result


def last_axis_params(tr: Translator, node, x: SSAValue, normalized_shape) -> int:
    if len(normalized_shape) != 1:
        raise TranslationError(
            f"normalization over {list(normalized_shape)} (more than the last axis) "
            "is not supported"
        )
    return shape_of(x)[-1]


def ones(tr: Translator, size: int, element: Attribute, value: float = 1.0) -> SSAValue:
    return tr.constant(np.full((size,), value), element)


@translates(aten.layer_norm.default)
def layer_norm(
    tr: Translator, node, x, normalized_shape, weight=None, bias=None, eps=1e-5, *rest
):
    x = tr.value(x, tr.result_element(node))
    size = last_axis_params(tr, node, x, normalized_shape)
    element = element_type_of(x)
    gamma = ones(tr, size, element) if weight is None else tr.value(weight, element)
    beta = ones(tr, size, element, 0.0) if bias is None else tr.value(bias, element)
    return rlx.LayerNormOp(x, gamma, beta, float(eps)).result


@translates(aten.rms_norm.default)
def rms_norm(tr: Translator, node, x, normalized_shape, weight=None, eps=None):
    x = tr.value(x, tr.result_element(node))
    size = last_axis_params(tr, node, x, normalized_shape)
    element = element_type_of(x)
    if eps is None:
        eps = torch.finfo(node.meta["val"].dtype).eps
    gamma = ones(tr, size, element) if weight is None else tr.value(weight, element)
    return rlx.RmsNormOp(x, gamma, float(eps)).result


# --- attention ----------------------------------------------------------------------------


@translates(aten.scaled_dot_product_attention.default)
def attention(
    tr: Translator,
    node,
    q,
    k,
    v,
    attn_mask=None,
    dropout_p=0.0,
    is_causal=False,
    scale=None,
    enable_gqa=False,
):
    """rlx.attention over the key/value heads before a repeat-kv chain
    (grouped-query attention kept), with a constant causal mask as
    `mask = "causal"` and any other mask as the bias operand."""
    element = tr.result_element(node)
    q = tr.value(q, element)
    k = patterns.unrepeated_kv(tr, node.args[1], element)
    v = patterns.unrepeated_kv(tr, node.args[2], element)
    for name, t in (("query", q), ("key", k), ("value", v)):
        if len(shape_of(t)) != 4:
            raise TranslationError(
                f"attention {name} of shape {list(shape_of(t))}: rank 4 [B, H, S, D] "
                "is supported"
            )
    mask, bias = patterns.attention_mask(tr, attn_mask, is_causal, q, k, element)
    return rlx.AttentionOp(
        q, k, v, bias, mask=mask, scale=None if scale is None else float(scale)
    ).result


# --- shape ------------------------------------------------------------------------------------


RESHAPES = (
    aten.view.default,
    aten._unsafe_view.default,
    aten.reshape.default,
    aten.unsqueeze.default,
    aten.squeeze.dim,
    aten.squeeze.dims,
    aten.squeeze.default,
    aten.flatten.using_ints,
    aten.unflatten.int,
)
"""The ATen ops that change only a tensor's shape."""


@translates(*RESHAPES)
def view(tr: Translator, node, x, *rest):
    return reshape(tr.value(x), tr.result_shape(node))


@translates(aten.expand.default)
def expand(tr: Translator, node, x, *rest, **kwargs):
    x = tr.value(x)
    shape = tr.result_shape(node)
    if shape_of(x) == shape:
        return x
    return rlx.ExpandOp(x, shape).result


MAX_TRANSPOSE_RANK = 4
"""A permutation of a higher rank is done at the lowest rank it can be."""


def transposed(x: SSAValue, perm: Sequence[int]) -> SSAValue:
    """x with its axes permuted. Above `MAX_TRANSPOSE_RANK` (Swin's window
    partition is rank 6; Core ML takes ≤ 5) size-1 axes are dropped and axes
    that stay adjacent merged, between two reshapes."""
    perm = list(perm)
    if perm == sorted(perm):
        return x
    shape = shape_of(x)
    if len(shape) <= MAX_TRANSPOSE_RANK:
        return rlx.TransposeOp(x, perm).result
    kept = [a for a in perm if shape[a] != 1]
    groups: list[list[int]] = []
    for a in kept:
        if groups and a == groups[-1][-1] + 1:
            groups[-1].append(a)
        else:
            groups.append([a])
    order = sorted(range(len(groups)), key=lambda g: groups[g][0])
    merged = [int(np.prod([shape[a] for a in groups[g]])) for g in order]
    small_perm = [order.index(g) for g in range(len(groups))]
    y = reshape(x, merged)
    if small_perm != sorted(small_perm):
        y = rlx.TransposeOp(y, small_perm).result
    return reshape(y, [shape[a] for a in perm])


@translates(aten.permute.default)
def permute(tr: Translator, node, x, dims):
    x = tr.value(x)
    rank = len(shape_of(x))
    return transposed(x, [axis_of(d, rank) for d in dims])


@translates(aten.transpose.int)
def transpose(tr: Translator, node, x, dim0, dim1):
    x = tr.value(x)
    rank = len(shape_of(x))
    perm = list(range(rank))
    a, b = axis_of(dim0, rank), axis_of(dim1, rank)
    perm[a], perm[b] = perm[b], perm[a]
    return transposed(x, perm)


@translates(aten.t.default)
def t(tr: Translator, node, x):
    x = tr.value(x)
    return rlx.TransposeOp(x, (1, 0)).result if len(shape_of(x)) == 2 else x


def narrow(x: SSAValue, axis: int, start: int, length: int) -> SSAValue:
    if start == 0 and length == shape_of(x)[axis]:
        return x
    return rlx.NarrowOp(x, axis, start, length).result


@translates(aten.slice.Tensor)
def slice_(tr: Translator, node, x, dim=0, start=None, end=None, step=1):
    """A narrow; with a step, the constant indices it reads (`take`)."""
    x = tr.value(x)
    shape = shape_of(x)
    axis = axis_of(dim, len(shape))
    size = shape[axis]
    begin = 0 if start is None else (start + size if start < 0 else start)
    begin = min(max(begin, 0), size)
    length = tr.result_shape(node)[axis]
    if step == 1:
        return narrow(x, axis, begin, length)
    return take(tr, node, x, axis, np.arange(length) * int(step) + begin)


@translates(aten.select.int)
def select(tr: Translator, node, x, dim, index):
    x = tr.value(x)
    shape = shape_of(x)
    axis = axis_of(dim, len(shape))
    index = index + shape[axis] if index < 0 else index
    return reshape(narrow(x, axis, index, 1), tr.result_shape(node))


@translates(aten.cat.default)
def cat(tr: Translator, node, tensors, dim=0):
    """The non-empty operands joined (torch allows empty ones, even a 1-D
    [0] among operands of any rank; the result is never empty here)."""
    element = tr.result_element(node)
    values = [tr.value(t, element) for t in tensors if not is_empty(t)]
    if len(values) == 1:
        return values[0]
    return rlx.ConcatOp(values, axis_of(dim, len(shape_of(values[0])))).result


@translates(aten.split_with_sizes.default, aten.split.Tensor, aten.chunk.default)
def split(tr: Translator, node, x, sizes, dim=0):
    """Consecutive narrows; an empty piece is an empty constant."""
    x = tr.value(x)
    axis = axis_of(dim, len(shape_of(x)))
    pieces, start = [], 0
    for i, meta in enumerate(node.meta["val"]):
        length = int(meta.shape[axis])
        empty = empty_value(meta, f"{node.name}.{i}")
        pieces.append(empty if empty is not None else narrow(x, axis, start, length))
        start += length
    return pieces


@translates(aten.unbind.int)
def unbind(tr: Translator, node, x, dim=0):
    x = tr.value(x)
    axis = axis_of(dim, len(shape_of(x)))
    return [
        reshape(narrow(x, axis, i, 1), tuple(meta.shape))
        for i, meta in enumerate(node.meta["val"])
    ]


# --- indexing -------------------------------------------------------------------------

MAX_NARROWS = 4
"""Constant indices that fall into at most this many runs of consecutive
ones (a slice, a roll, a head split) are read as narrows joined by a
concat; others by one rlx.gather of a constant index."""


def take(tr: Translator, node, x: SSAValue, axis: int, indices: Any) -> SSAValue:
    """numpy `take(x, indices, axis)` for constant `indices` (negative ones
    count from the end): result shape x.shape[:axis] + indices.shape +
    x.shape[axis+1:]."""
    shape = shape_of(x)
    size = shape[axis]
    wanted = np.asarray(indices, dtype=np.int64)
    flat = wanted.reshape(-1)
    flat = np.where(flat < 0, flat + size, flat)
    outside = flat[(flat < 0) | (flat >= size)]
    if outside.size:
        raise TranslationError(
            f"index {int(outside[0])} is out of range for axis {axis} of size {size}"
        )
    result_shape = (*shape[:axis], *wanted.shape, *shape[axis + 1 :])
    breaks = np.flatnonzero(np.diff(flat) != 1) + 1
    runs = np.split(flat, breaks)
    steps = np.unique(np.diff(flat))
    if len(runs) > 2 and len(steps) == 1 and steps[0] > 1:
        y = every_nth(x, axis, int(flat[0]), int(steps[0]), flat.size)
        if y is not None:
            return reshape(y, result_shape)
    if len(runs) <= MAX_NARROWS:
        pieces = [narrow(x, axis, int(run[0]), len(run)) for run in runs]
        y = pieces[0] if len(pieces) == 1 else rlx.ConcatOp(pieces, axis).result
    else:
        index = Const(torch.from_numpy(flat.astype(np.int32)), f"{node.name}.indices")
        y = rlx.GatherOp(x, tr.materialize(index, i32), axis).result
    return reshape(y, result_shape)


def every_nth(
    x: SSAValue, axis: int, start: int, step: int, count: int
) -> SSAValue | None:
    """x[..., start : start + step·count : step, ...] (a strided slice, Swin's
    patch merging) in three ops at rank 4 whatever the count: the axis split
    into (count, step) with the axes before and after merged, a narrow of one
    phase, a reshape back; None where no window of count·step fits the axis."""
    shape = shape_of(x)
    first = min(start, shape[axis] - count * step)
    if first < 0:
        return None
    window = narrow(x, axis, first, count * step)
    outer, inner = int(np.prod(shape[:axis])), int(np.prod(shape[axis + 1 :]))
    split = reshape(window, (outer, count, step, inner))
    phase = rlx.NarrowOp(split, 2, start - first, 1).result
    return reshape(phase, (*shape[:axis], count, *shape[axis + 1 :]))


def gathered(tr: Translator, node, x: SSAValue, axis: int, index: Value) -> SSAValue:
    """x's slices along `axis` at `index`: constant indices through `take`,
    runtime ones through rlx.gather (i32)."""
    if isinstance(index, Const):
        return take(tr, node, x, axis, index.value.numpy())
    return rlx.GatherOp(x, tr.value(index, i32), axis).result


@translates(aten.index_select.default)
def index_select(tr: Translator, node, x, dim, index):
    x = tr.value(x)
    return gathered(tr, node, x, axis_of(dim, len(shape_of(x))), index)


@translates(aten.index.Tensor)
def index(tr: Translator, node, x, indices):
    """Advanced indexing `x[..., i, j, ...]`. One index tensor (constant or
    runtime) is a gather along its axis. Several constant ones broadcast to
    one shape and read the flat index of the axes they index (those axes
    merged into one); torch puts the broadcast axes where the indexed axes
    were when these are adjacent, first otherwise."""
    x = tr.value(x)
    shape = shape_of(x)
    positions = [(axis, i) for axis, i in enumerate(indices) if i is not None]
    for axis, i in positions:
        if isinstance(i, Const) and i.value.dtype == torch.bool:
            raise TranslationError(
                f"index by a boolean mask on axis {axis}: its result's size depends "
                "on the mask; index by integer positions instead"
            )
    if len(positions) == 1:
        axis, i = positions[0]
        return gathered(tr, node, x, axis, i)
    runtime = [axis for axis, i in positions if not isinstance(i, Const)]
    if runtime:
        raise TranslationError(
            f"index by {len(positions)} index tensors, of which the one on axis "
            f"{runtime[0]} is computed at runtime: only one runtime index tensor "
            "is supported"
        )
    axes = [axis for axis, _ in positions]
    arrays = np.broadcast_arrays(
        *(i.value.numpy().astype(np.int64) for _, i in positions)
    )
    if axes != list(range(axes[0], axes[0] + len(axes))):
        rest = [a for a in range(len(shape)) if a not in axes]
        x = rlx.TransposeOp(x, (*axes, *rest)).result
        shape = shape_of(x)
        axes = list(range(len(axes)))
    first, last = axes[0], axes[-1] + 1
    sizes = shape[first:last]
    wrapped = [np.where(a < 0, a + n, a) for a, n in zip(arrays, sizes)]
    for axis, a, n in zip(axes, wrapped, sizes):
        if ((a < 0) | (a >= n)).any():
            raise TranslationError(f"index out of range for axis {axis} of size {n}")
    flat = np.ravel_multi_index(tuple(wrapped), sizes)
    merged = reshape(x, (*shape[:first], int(np.prod(sizes)), *shape[last:]))
    return take(tr, node, merged, first, flat)


def uniform_except(value: torch.Tensor, axis: int) -> bool:
    """Whether `value` is the same along every axis but `axis`."""
    index = [0] * value.dim()
    index[axis] = slice(None)
    row = value[tuple(index)]
    view = [1] * value.dim()
    view[axis] = value.shape[axis]
    return bool(torch.equal(row.reshape(view).expand(value.shape), value))


@translates(aten.gather.default)
def gather(tr: Translator, node, x, dim, index, sparse_grad=False):
    """torch.gather: out[..., j, ...] = x[..., index[..., j, ...], ...] along
    `dim`. With constant indices, the flat positions of x it reads; with
    runtime ones from a constant x that varies along `dim` alone (a buffer
    of position or token-type ids, expanded), a gather from that row."""
    rank = node.args[0].meta["val"].dim()
    axis = axis_of(dim, rank)
    out_shape = tr.result_shape(node)
    if isinstance(index, Const):
        x = tr.value(x)
        positions = np.indices(out_shape)
        positions[axis] = index.value.numpy()
        size = shape_of(x)[axis]
        positions[axis] = np.where(
            positions[axis] < 0, positions[axis] + size, positions[axis]
        )
        if ((positions[axis] < 0) | (positions[axis] >= size)).any():
            raise TranslationError(
                f"gather index out of range for axis {axis} of size {size}"
            )
        flat = np.ravel_multi_index(tuple(positions), shape_of(x))
        return take(tr, node, reshape(x, (int(np.prod(shape_of(x))),)), 0, flat)
    if isinstance(x, Const) and uniform_except(x.value, axis):
        picker = [0] * rank
        picker[axis] = slice(None)
        row = Const(x.value[tuple(picker)].contiguous(), f"{node.name}.row")
        element = tr.result_element(node)
        return rlx.GatherOp(tr.value(row, element), tr.value(index, i32), 0).result
    raise TranslationError(
        "gather with runtime indices from a tensor that is not a constant varying "
        f"along axis {axis} alone: MIL's gather_along_axis is not supported"
    )


@translates(aten.as_strided.default)
def as_strided(tr: Translator, node, x, size, stride, storage_offset=None):
    """A view of x's storage (its recorded strides): the elements it reads,
    by their positions in x (a reshape where they are x's in order)."""
    meta = node.args[0].meta["val"]
    x = tr.value(x)
    count = int(np.prod(meta.shape))
    logical = np.arange(count).reshape(tuple(meta.shape))
    stored = (
        sum(np.indices(tuple(meta.shape))[k] * s for k, s in enumerate(meta.stride()))
        + meta.storage_offset()
    )
    where = {}
    for position, flat in zip(np.ravel(stored), np.ravel(logical)):
        where.setdefault(int(position), int(flat))
    offset = meta.storage_offset() if storage_offset is None else int(storage_offset)
    wanted = offset + sum(
        np.indices(tuple(size))[k] * int(s) for k, s in enumerate(stride)
    )
    try:
        flat = np.vectorize(where.__getitem__, otypes=[np.int64])(wanted)
    except KeyError as e:
        raise TranslationError(
            f"as_strided reads storage position {e.args[0]}, outside its input of "
            f"shape {list(meta.shape)}"
        ) from None
    if flat.size == count and (np.ravel(flat) == np.arange(count)).all():
        return reshape(x, tuple(size))
    return take(tr, node, reshape(x, (count,)), 0, flat)


@translates(
    aten.bitwise_and.Tensor,
    aten.bitwise_or.Tensor,
    aten.bitwise_xor.Tensor,
    aten.logical_and.default,
    aten.logical_or.default,
    aten.logical_xor.default,
)
def boolean(tr: Translator, node, lhs, rhs):
    """and / or / xor of booleans as selects (rlx has no logical ops)."""
    for arg in node.args[:2]:
        if isinstance(arg, torch.fx.Node) and arg.meta["val"].dtype != torch.bool:
            raise TranslationError(
                f"{node.target.__name__} of {arg.meta['val'].dtype}: only booleans "
                "are supported"
            )
    a, b = tr.value(lhs, i1), tr.value(rhs, i1)
    name = node.target.__name__.split(".")[0]
    if name.endswith("and"):
        return rlx.WhereOp(a, b, scalar(tr, False, a)).result
    if name.endswith("_or"):
        return rlx.WhereOp(a, scalar(tr, True, a), b).result
    not_b = rlx.WhereOp(b, scalar(tr, False, b), scalar(tr, True, b)).result
    return rlx.WhereOp(a, not_b, b).result


def supported_ops() -> list[str]:
    return sorted(str(op) for op in TRANSLATIONS)

"""rlx rotary embedding and attention: rlx.rope and rlx.attention, and their
gradients rlx.rope_backward and rlx.attention_backward.

Every one of them takes a `layout` property saying where the sequence and
the head dimension are in its rank-4 operands: "bhsd" (the default,
[B, H, S, D], as in PyTorch) or "bhds" ([B, H, D, S], the head dimension
before the sequence: a pure reshape of the ANE form [1, H·D, 1, S], in
which every attention product is a matmul with transpose flags). The RoPE
tables are [S, D/2] in both layouts."""

from __future__ import annotations

import math
from abc import ABC
from collections.abc import Mapping, Sequence
from typing import TypeVar

import numpy as np
from xdsl.dialects.builtin import StringAttr, TensorType
from xdsl.ir import Attribute
from xdsl.irdl import (
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
)

from xdsl_ane.dialects.rlx.base import FUNCTIONAL, RlxOp, Value, rlx_op_definition
from xdsl_ane.dialects.typing import (
    F32Attr,
    OpTypeError,
    choice,
    f32_attr,
    float_prop,
    fmt_shape,
    require_float,
    require_rank,
    require_same_element_type,
    str_attr,
    str_prop,
    tensor,
    tensor_of,
)

# --- layouts -----------------------------------------------------------------

T = TypeVar("T")

LAYOUTS = ("bhsd", "bhds")
"""Where the sequence (S) and head (D) dimensions are in a rank-4 operand."""


def layout_of(op_name: str, properties: Mapping[str, Attribute]) -> str:
    """The checked `layout` property ("bhsd" when absent)."""
    return choice(op_name, "layout", str_prop(properties, "layout", "bhsd"), LAYOUTS)


def sequence_and_head(shape: Sequence[int], layout: str) -> tuple[int, int]:
    """(S, D) of a rank-4 shape in `layout`."""
    return (shape[2], shape[3]) if layout == "bhsd" else (shape[3], shape[2])


def in_layout(batch: T, heads: T, s: T, d: T, layout: str) -> tuple[T, ...]:
    """The rank-4 shape with these sizes (or names) in `layout`."""
    return (batch, heads, s, d) if layout == "bhsd" else (batch, heads, d, s)


def layout_text(batch: object, heads: object, s: object, d: object, layout: str) -> str:
    """A shape in `layout` for a message, sizes or names: `[1, Hkv, Skv, 64]`."""
    return "[" + ", ".join(map(str, in_layout(batch, heads, s, d, layout))) + "]"


def causal_visible(s: int, skv: int) -> np.ndarray:
    """[S, Skv] bools: query i sees key j iff j ≤ i + (Skv − S), the
    keys of a causal mask (the S queries being the last of Skv positions)."""
    return np.arange(skv)[None, :] <= np.arange(s)[:, None] + (skv - s)


class LayoutOp(RlxOp, ABC):
    """An op with the `layout` property."""

    layout = opt_prop_def(StringAttr)

    @property
    def layout_name(self) -> str:
        """The `layout` property, "bhsd" when absent."""
        return self.layout.data if self.layout is not None else "bhsd"


# --- rotary embedding --------------------------------------------------------

ROPE_STYLES = ("half", "interleaved")


def check_rope(
    op_name: str,
    operand: str,
    x: Attribute,
    cos: Attribute,
    sin: Attribute,
    properties: Mapping[str, Attribute],
) -> TensorType:
    """x [B, H, S, D] ("bhsd") or [B, H, D, S] ("bhds") with cos, sin
    [S, D/2] of x's element type."""
    choice(op_name, "style", str_prop(properties, "style"), ROPE_STYLES)
    layout = layout_of(op_name, properties)
    t = tensor_of(op_name, operand, x)
    require_float(op_name, operand, t)
    s, d = sequence_and_head(require_rank(op_name, operand, t, 4), layout)
    if d % 2:
        raise OpTypeError(
            op_name,
            f"operand '{operand}' {fmt_shape(t.get_shape())} needs an even head dimension",
        )
    named = [(operand, t)]
    for name, table in (("cos", cos), ("sin", sin)):
        tt = tensor_of(op_name, name, table)
        if tt.get_shape() != (s, d // 2):
            raise OpTypeError(
                op_name,
                f"operand '{name}' {fmt_shape(tt.get_shape())} must be "
                f"{fmt_shape((s, d // 2))} for operand '{operand}' {fmt_shape(t.get_shape())}",
            )
        named.append((name, tt))
    require_same_element_type(op_name, named)
    return t


@rlx_op_definition
class RopeOp(LayoutOp):
    """Rotary embedding: each pair (a, b) of the head dimension becomes
    (a·cos − b·sin, a·sin + b·cos); "half" pairs (i, i + D/2), "interleaved"
    pairs (2i, 2i + 1); pair i at sequence position s turns by the angle of
    cos[s, i], sin[s, i]. `layout` as in rlx.attention (default "bhsd")."""

    name = "rlx.rope"
    input = operand_def(TensorType)
    cos = operand_def(TensorType)
    sin = operand_def(TensorType)
    result = result_def(TensorType)
    style = prop_def(StringAttr)
    assembly_format = FUNCTIONAL

    def __init__(
        self,
        input: Value,
        cos: Value,
        sin: Value,
        style: str = "half",
        layout: str | None = None,
    ):
        self.init_inferred(
            [input, cos, sin], {"style": str_attr(style), "layout": str_attr(layout)}
        )

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        return [check_rope(cls.name, "input", *operand_types, properties)]


@rlx_op_definition
class RopeBackwardOp(LayoutOp):
    """Gradient of rlx.rope: the rotation by −θ applied to d_out; `style`
    and `layout` as in rlx.rope."""

    name = "rlx.rope_backward"
    d_out = operand_def(TensorType)
    cos = operand_def(TensorType)
    sin = operand_def(TensorType)
    result = result_def(TensorType)
    style = prop_def(StringAttr)
    assembly_format = FUNCTIONAL

    def __init__(
        self,
        d_out: Value,
        cos: Value,
        sin: Value,
        style: str = "half",
        layout: str | None = None,
    ):
        self.init_inferred(
            [d_out, cos, sin], {"style": str_attr(style), "layout": str_attr(layout)}
        )

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        return [check_rope(cls.name, "d_out", *operand_types, properties)]


# --- attention ---------------------------------------------------------------

MASKS = ("none", "causal", "bias")
ATTENTION_WRT = ("query", "key", "value")


def check_attention(
    op_name: str,
    operand_types: Sequence[Attribute],
    properties: Mapping[str, Attribute],
    with_d_out: bool,
) -> tuple[TensorType, TensorType, TensorType]:
    """Checks q [B,H,S,D], k [B,Hkv,Skv,D], v [B,Hkv,Skv,Dv], (d_out
    [B,H,S,Dv]) in "bhsd" (S and D exchanged in "bhds"), optional bias
    broadcastable to the scores [B,H,S,Skv]; H % Hkv == 0."""
    mask = choice(op_name, "mask", str_prop(properties, "mask", "none"), MASKS)
    layout = layout_of(op_name, properties)
    names = ["q", "k", "v"] + (["d_out"] if with_d_out else [])
    ts = [tensor_of(op_name, n, t) for n, t in zip(names, operand_types)]
    for n, t in zip(names, ts):
        require_float(op_name, n, t)
        require_rank(op_name, n, t, 4)
    require_same_element_type(op_name, list(zip(names, ts)))
    q, k, v = ts[:3]
    b, h = q.get_shape()[:2]
    s, d = sequence_and_head(q.get_shape(), layout)
    kb, hkv = k.get_shape()[:2]
    skv, kd = sequence_and_head(k.get_shape(), layout)
    if kb != b or kd != d:
        expected = layout_text(b, "Hkv", "Skv", d, layout)
        raise OpTypeError(
            op_name,
            f"operand 'k' {fmt_shape(k.get_shape())} must be {expected} "
            f"for operand 'q' {fmt_shape(q.get_shape())}",
        )
    vb, vh = v.get_shape()[:2]
    vs, dv = sequence_and_head(v.get_shape(), layout)
    if (vb, vh, vs) != (b, hkv, skv):
        expected = layout_text(b, hkv, skv, "Dv", layout)
        raise OpTypeError(
            op_name,
            f"operand 'v' {fmt_shape(v.get_shape())} must be {expected} "
            f"for operand 'k' {fmt_shape(k.get_shape())}",
        )
    if hkv == 0 or h % hkv:
        raise OpTypeError(
            op_name,
            f"query heads ({h}, operand 'q') must be a multiple of key/value heads "
            f"({hkv}, operand 'k') for grouped-query attention",
        )
    out = in_layout(b, h, s, dv, layout)
    if with_d_out and ts[3].get_shape() != out:
        raise OpTypeError(
            op_name,
            f"operand 'd_out' {fmt_shape(ts[3].get_shape())} must be "
            f"{fmt_shape(out)}, the attention output shape",
        )
    extra = operand_types[len(names) :]
    if mask == "bias":
        if len(extra) != 1:
            raise OpTypeError(op_name, "mask \"bias\" needs the operand 'bias'")
        bias = tensor_of(op_name, "bias", extra[0])
        require_same_element_type(op_name, [("q", q), ("bias", bias)])
        scores = (b, h, s, skv)
        bias_shape = bias.get_shape()
        fits = len(bias_shape) <= 4 and all(
            d in (1, t) for d, t in zip(reversed(bias_shape), reversed(scores))
        )
        if not fits:
            raise OpTypeError(
                op_name,
                f"operand 'bias' {fmt_shape(bias.get_shape())} does not broadcast to "
                f"the scores {fmt_shape(scores)}",
            )
    elif extra:
        raise OpTypeError(
            op_name, f'operand \'bias\' is given but mask is "{mask}" (expected "bias")'
        )
    return q, k, v


def attention_scale(op: AttentionOp | AttentionBackwardOp) -> float:
    """The `scale` property, or D^-0.5 for a head dimension D."""
    scale = float_prop(op.properties, "scale")
    if scale is not None:
        return scale
    q = op.q.type
    assert isinstance(q, TensorType)
    _, d = sequence_and_head(q.get_shape(), op.layout_name)
    return 1.0 / math.sqrt(d)


class AttentionBase(LayoutOp, ABC):
    # Operands are declared on each op: xDSL orders operand definitions of a
    # subclass before inherited ones, and the operand order is the contract.
    result = result_def(TensorType)
    mask = opt_prop_def(StringAttr)
    scale = opt_prop_def(F32Attr)

    def builder_properties(self) -> dict[str, str | float | None]:
        """mask, scale and layout as builder arguments, to rebuild the op."""
        return {
            "mask": self.mask.data if self.mask is not None else None,
            "scale": self.scale.value.data if self.scale is not None else None,
            "layout": self.layout.data if self.layout is not None else None,
        }


@rlx_op_definition
class AttentionOp(AttentionBase):
    """softmax(q·kᵀ·scale + mask)·v with query head h reading key/value head
    h // (H/Hkv); `mask` "none" (the default), "causal" (query i sees key j
    iff j ≤ i + (Skv − S)) or "bias" (the operand `bias`, broadcast to
    [B, H, S, Skv]); `scale` defaults to D^−0.5. `layout` "bhsd" (the
    default) or "bhds", where every operand and the result have D before S."""

    name = "rlx.attention"
    q = operand_def(TensorType)
    k = operand_def(TensorType)
    v = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    assembly_format = "$q `,` $k `,` $v (`,` $bias^)? attr-dict `:` functional-type(operands, results)"

    def __init__(
        self,
        q: Value,
        k: Value,
        v: Value,
        bias: Value | None = None,
        mask: str | None = None,
        scale: float | None = None,
        layout: str | None = None,
    ):
        if bias is not None and mask is None:
            mask = "bias"
        self.init_inferred(
            [q, k, v, [bias] if bias is not None else []],
            {
                "mask": str_attr(mask),
                "scale": f32_attr(scale),
                "layout": str_attr(layout),
            },
        )

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        q, _, v = check_attention(cls.name, operand_types, properties, False)
        layout = layout_of(cls.name, properties)
        b, h = q.get_shape()[:2]
        s, _ = sequence_and_head(q.get_shape(), layout)
        _, dv = sequence_and_head(v.get_shape(), layout)
        return [tensor(in_layout(b, h, s, dv, layout), q.element_type)]


@rlx_op_definition
class AttentionBackwardOp(AttentionBase):
    """Gradient of rlx.attention with respect to q, k or v (`wrt`); under
    grouped-query attention the key/value gradient is summed over the query
    heads sharing each key/value head. `mask`, `scale` and `layout` as in
    rlx.attention."""

    name = "rlx.attention_backward"
    q = operand_def(TensorType)
    k = operand_def(TensorType)
    v = operand_def(TensorType)
    d_out = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    wrt = prop_def(StringAttr)
    assembly_format = (
        "$q `,` $k `,` $v `,` $d_out (`,` $bias^)? attr-dict `:` "
        "functional-type(operands, results)"
    )

    def __init__(
        self,
        q: Value,
        k: Value,
        v: Value,
        d_out: Value,
        wrt: str,
        bias: Value | None = None,
        mask: str | None = None,
        scale: float | None = None,
        layout: str | None = None,
    ):
        if bias is not None and mask is None:
            mask = "bias"
        self.init_inferred(
            [q, k, v, d_out, [bias] if bias is not None else []],
            {
                "wrt": str_attr(wrt),
                "mask": str_attr(mask),
                "scale": f32_attr(scale),
                "layout": str_attr(layout),
            },
        )

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        wrt = choice(cls.name, "wrt", str_prop(properties, "wrt"), ATTENTION_WRT)
        q, k, v = check_attention(cls.name, operand_types, properties, True)
        return [{"query": q, "key": k, "value": v}[wrt]]


OPS = (
    RopeOp,
    AttentionOp,
    AttentionBackwardOp,
    RopeBackwardOp,
)
"""The ops of this family, as the rlx dialect lists them."""

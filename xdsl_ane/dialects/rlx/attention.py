"""rlx rotary embedding and attention: rlx.rope and rlx.attention, and their
gradients rlx.rope_backward and rlx.attention_backward."""

from __future__ import annotations

import math
from abc import ABC
from collections.abc import Mapping, Sequence

from xdsl.dialects.builtin import StringAttr, TensorType
from xdsl.ir import Attribute
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
)

from xdsl_ane.dialects.rlx.base import FUNCTIONAL, RlxOp, Value
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
    """x [B, H, S, D] with cos, sin [S, D/2] of x's element type."""
    choice(op_name, "style", str_prop(properties, "style"), ROPE_STYLES)
    t = tensor_of(op_name, operand, x)
    require_float(op_name, operand, t)
    _, _, s, d = require_rank(op_name, operand, t, 4)
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


@irdl_op_definition
class RopeOp(RlxOp):
    """Rotary embedding: each pair (a, b) of the head dimension becomes
    (a·cos − b·sin, a·sin + b·cos); "half" pairs (i, i + D/2), "interleaved"
    pairs (2i, 2i + 1)."""

    name = "rlx.rope"
    input = operand_def(TensorType)
    cos = operand_def(TensorType)
    sin = operand_def(TensorType)
    result = result_def(TensorType)
    style = prop_def(StringAttr)
    assembly_format = FUNCTIONAL

    def __init__(self, input: Value, cos: Value, sin: Value, style: str = "half"):
        self.init_inferred([input, cos, sin], {"style": str_attr(style)})

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        return [check_rope(cls.name, "input", *operand_types, properties)]


@irdl_op_definition
class RopeBackwardOp(RlxOp):
    """Gradient of rlx.rope: the rotation by −θ applied to d_out."""

    name = "rlx.rope_backward"
    d_out = operand_def(TensorType)
    cos = operand_def(TensorType)
    sin = operand_def(TensorType)
    result = result_def(TensorType)
    style = prop_def(StringAttr)
    assembly_format = FUNCTIONAL

    def __init__(self, d_out: Value, cos: Value, sin: Value, style: str = "half"):
        self.init_inferred([d_out, cos, sin], {"style": str_attr(style)})

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
    [B,H,S,Dv]), optional bias broadcastable to [B,H,S,Skv]; H % Hkv == 0."""
    mask = choice(op_name, "mask", str_prop(properties, "mask", "none"), MASKS)
    names = ["q", "k", "v"] + (["d_out"] if with_d_out else [])
    ts = [tensor_of(op_name, n, t) for n, t in zip(names, operand_types)]
    for n, t in zip(names, ts):
        require_float(op_name, n, t)
        require_rank(op_name, n, t, 4)
    require_same_element_type(op_name, list(zip(names, ts)))
    q, k, v = ts[:3]
    b, h, s, d = q.get_shape()
    kb, hkv, skv, kd = k.get_shape()
    if kb != b or kd != d:
        raise OpTypeError(
            op_name,
            f"operand 'k' {fmt_shape(k.get_shape())} must be [{b}, Hkv, Skv, {d}] "
            f"for operand 'q' {fmt_shape(q.get_shape())}",
        )
    vb, vh, vs, dv = v.get_shape()
    if (vb, vh, vs) != (b, hkv, skv):
        raise OpTypeError(
            op_name,
            f"operand 'v' {fmt_shape(v.get_shape())} must be [{b}, {hkv}, {skv}, Dv] "
            f"for operand 'k' {fmt_shape(k.get_shape())}",
        )
    if hkv == 0 or h % hkv:
        raise OpTypeError(
            op_name,
            f"query heads ({h}, operand 'q') must be a multiple of key/value heads "
            f"({hkv}, operand 'k') for grouped-query attention",
        )
    if with_d_out and ts[3].get_shape() != (b, h, s, dv):
        raise OpTypeError(
            op_name,
            f"operand 'd_out' {fmt_shape(ts[3].get_shape())} must be "
            f"{fmt_shape((b, h, s, dv))}, the attention output shape",
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
    return 1.0 / math.sqrt(q.get_shape()[-1])


class AttentionBase(RlxOp, ABC):
    # Operands are declared on each op: xDSL orders operand definitions of a
    # subclass before inherited ones, and the operand order is the contract.
    result = result_def(TensorType)
    mask = opt_prop_def(StringAttr)
    scale = opt_prop_def(F32Attr)


@irdl_op_definition
class AttentionOp(AttentionBase):
    """softmax(q·kᵀ·scale + mask)·v with query head h reading key/value head
    h // (H/Hkv); "causal" lets query i see key j iff j ≤ i + (Skv − S)."""

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
    ):
        if bias is not None and mask is None:
            mask = "bias"
        self.init_inferred(
            [q, k, v, [bias] if bias is not None else []],
            {"mask": str_attr(mask), "scale": f32_attr(scale)},
        )

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        q, _, v = check_attention(cls.name, operand_types, properties, False)
        return [tensor((*q.get_shape()[:3], v.get_shape()[3]), q.element_type)]


@irdl_op_definition
class AttentionBackwardOp(AttentionBase):
    """Gradient of rlx.attention with respect to q, k or v (`wrt`); under
    grouped-query attention the key/value gradient is summed over the query
    heads sharing each key/value head."""

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
    ):
        if bias is not None and mask is None:
            mask = "bias"
        self.init_inferred(
            [q, k, v, d_out, [bias] if bias is not None else []],
            {"wrt": str_attr(wrt), "mask": str_attr(mask), "scale": f32_attr(scale)},
        )

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        wrt = choice(cls.name, "wrt", str_prop(properties, "wrt"), ATTENTION_WRT)
        q, k, v = check_attention(cls.name, operand_types, properties, True)
        return [{"query": q, "key": k, "value": v}[wrt]]

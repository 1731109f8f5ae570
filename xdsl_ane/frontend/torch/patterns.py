"""The patterns Hugging Face writes by hand, recognised in the fx graph and
emitted as rlx's own ops.

- RMSNorm, `weight · (x · rsqrt(mean(x², −1) + eps))` (Llama, Qwen, their
  q/k norms) → `rlx.rms_norm`;
- rotate-half RoPE, `x·cos + cat(−x₂, x₁)·sin` with constant tables whose
  halves are equal → `rlx.rope` style "half" with the [S, D/2] tables;
- repeat-kv, `reshape(expand(unsqueeze(k, 2)))` from Hkv to H heads, before
  attention → the Hkv heads themselves (rlx.attention is grouped-query);
- an attention mask that is a constant causal mask → `mask = "causal"`, an
  all-true one → none, any other → the bias operand.

Each matcher looks through no-op nodes (`strip`) and returns None when the
graph is not exactly its pattern; the generic translation then applies.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from xdsl.dialects.builtin import i1
from xdsl.ir import Attribute, SSAValue

from xdsl_ane.ane.limits import MASKED
from xdsl_ane.dialects import rlx
from xdsl_ane.dialects.typing import element_type_of, is_float, shape_of
from xdsl_ane.frontend.torch.translate import Const, Translator

aten = torch.ops.aten
Node = torch.fx.Node

IDENTITY = {
    aten.alias.default,
    aten.clone.default,
    aten.detach.default,
    aten.contiguous.default,
    aten.lift_fresh_copy.default,
}
"""The copies: ops whose result is their first argument. Matchers look
through them (`strip`); the translation maps them to their argument, as it
does the other `aten.NO_OPS` (checks and inference dropout, which matchers
do not look through)."""


def strip(x: Any) -> Any:
    """The node behind copies and same-dtype conversions."""
    while isinstance(x, Node):
        if x.target in IDENTITY:
            x = x.args[0]
        elif x.target is aten._to_copy.default and same_dtype(x, x.args[0]):
            x = x.args[0]
        else:
            break
    return x


def strip_casts(x: Any) -> Any:
    """The node behind copies and dtype conversions (HF's RMSNorm returns
    `weight * x.to(input_dtype)` of a float32 normalization)."""
    while is_op(x, aten._to_copy.default, *IDENTITY):
        x = x.args[0]
    return x


def same_dtype(a: Node, b: Any) -> bool:
    return isinstance(b, Node) and a.meta["val"].dtype == b.meta["val"].dtype


def is_op(x: Any, *targets: Any) -> bool:
    return isinstance(x, Node) and x.target in targets


def last_axis(node: Node, axis: int) -> bool:
    return axis in (-1, node.meta["val"].dim() - 1)


# --- RMSNorm ---------------------------------------------------------------------------


def normalized(node: Node) -> tuple[Node, float] | None:
    """(x, eps) if node is x · rsqrt(mean(x², last axis, keepdim) + eps)."""
    a, b = node.args[:2]
    for x, r in ((a, b), (b, a)):
        r = strip(r)
        if not is_op(r, aten.rsqrt.default):
            continue
        s = strip(r.args[0])
        if not is_op(s, aten.add.Tensor, aten.add.Scalar):
            continue
        mean, eps = s.args[:2]
        if isinstance(mean, int | float):
            mean, eps = eps, mean
        mean = strip(mean)
        if not isinstance(eps, int | float) or not is_op(mean, aten.mean.dim):
            continue
        dims = mean.args[1]
        keepdim = mean.args[2] if len(mean.args) > 2 else mean.kwargs.get("keepdim")
        if not keepdim or list(dims or []) == [] or len(dims) != 1:
            continue
        square = strip(mean.args[0])
        if not last_axis(square, dims[0]) or not is_square_of(square, strip(x)):
            continue
        return x, float(eps)
    return None


def is_square_of(square: Any, x: Any) -> bool:
    if is_op(square, aten.pow.Tensor_Scalar):
        return square.args[1] == 2 and strip(square.args[0]) is x
    if is_op(square, aten.mul.Tensor):
        return strip(square.args[0]) is x and strip(square.args[1]) is x
    return False


def rms_norm(tr: Translator, node: Node) -> SSAValue | None:
    """`rlx.rms_norm(x, weight)` at the weight's mul; a normalization without
    a weight (recorded, in case a weight follows) with a unit weight."""
    facts = tr.facts.setdefault("rms", {})
    a, b = node.args[:2]
    for weight, y in ((a, b), (b, a)):
        fact = facts.get(strip_casts(y)) if isinstance(y, Node) else None
        if fact is None:
            continue
        x_node, eps = fact
        x = tr.env[x_node]
        gamma = tr.lookup(weight)
        if not isinstance(gamma, Const | SSAValue) or tuple(shape(gamma)) != (
            shape_of(x)[-1],
        ):
            continue
        result = rlx.RmsNormOp(x, tr.value(gamma, element_type_of(x)), eps).result
        return tr.value(result, tr.result_element(node))
    match = normalized(node)
    if match is None:
        return None
    x_node, eps = match
    x = tr.env.get(x_node)
    if not isinstance(x, SSAValue) or not is_float(element_type_of(x)):
        return None
    facts[node] = (x_node, eps)
    size = shape_of(x)[-1]
    unit = tr.constant(np.ones((size,)), element_type_of(x))
    return tr.value(rlx.RmsNormOp(x, unit, eps).result, tr.result_element(node))


def shape(value: Const | SSAValue) -> tuple[int, ...]:
    if isinstance(value, Const):
        return tuple(value.value.shape)
    return shape_of(value)


# --- RoPE ---------------------------------------------------------------------------------


def times_constant(tr: Translator, x: Any) -> tuple[Node, torch.Tensor] | None:
    """(y, table) if x is y · table with a constant float table."""
    if not is_op(x, aten.mul.Tensor):
        return None
    a, b = x.args[:2]
    for y, table in ((a, b), (b, a)):
        value = tr.lookup(table)
        if (
            isinstance(y, Node)
            and isinstance(tr.env.get(y), SSAValue)
            and isinstance(value, Const)
            and value.value.is_floating_point()
        ):
            return y, value.value
    return None


def rotate_half_source(rot: Any) -> Node | None:
    """x if rot is cat(−x[..., D/2:], x[..., :D/2]) on the last axis."""
    rot = strip(rot)
    if not is_op(rot, aten.cat.default) or len(rot.args[0]) != 2:
        return None
    dim = rot.args[1] if len(rot.args) > 1 else 0
    if not last_axis(rot, dim):
        return None
    first, second = (strip(t) for t in rot.args[0])
    if not is_op(first, aten.neg.default):
        return None
    upper, lower = strip(first.args[0]), second
    if not (is_op(upper, aten.slice.Tensor) and is_op(lower, aten.slice.Tensor)):
        return None
    source = strip(upper.args[0])
    if strip(lower.args[0]) is not source or not isinstance(source, Node):
        return None
    d = source.meta["val"].shape[-1]
    h = d // 2
    if d % 2 or not all(last_axis(source, s.args[1]) for s in (upper, lower)):
        return None
    if slice_bounds(upper, d) != (h, d) or slice_bounds(lower, d) != (0, h):
        return None
    return source


def slice_bounds(node: Node, size: int) -> tuple[int, int]:
    args = list(node.args) + [None] * (4 - len(node.args))
    start, end = args[2], args[3]
    start = 0 if start is None else (start + size if start < 0 else start)
    end = size if end is None else (end + size if end < 0 else min(end, size))
    return start, end


def half_table(table: torch.Tensor, s: int, d: int) -> torch.Tensor | None:
    """A [.., S, D] table with leading ones and equal halves as [S, D/2]."""
    if table.dim() < 2 or tuple(table.shape[-2:]) != (s, d):
        return None
    if any(size != 1 for size in table.shape[:-2]):
        return None
    flat = table.reshape(s, d)
    if not torch.equal(flat[:, : d // 2], flat[:, d // 2 :]):
        return None
    return flat[:, : d // 2].to(torch.float32)


def rope(tr: Translator, node: Node) -> SSAValue | None:
    """`rlx.rope(x, cos, sin, "half")` for x·cos + rotate_half(x)·sin."""
    a, b = node.args[:2]
    for direct, rotated in ((a, b), (b, a)):
        first = times_constant(tr, direct)
        second = times_constant(tr, rotated)
        if first is None or second is None:
            continue
        (x_node, cos), (rot, sin) = first, second
        if rotate_half_source(rot) is not strip(x_node):
            continue
        x = tr.env[x_node]
        if len(shape_of(x)) != 4 or not is_float(element_type_of(x)):
            continue
        _, _, s, d = shape_of(x)
        cos_half, sin_half = half_table(cos, s, d), half_table(sin, s, d)
        if cos_half is None or sin_half is None:
            continue
        element = element_type_of(x)
        cos_value = tr.value(tr.named_table("rope.cos", cos_half), element)
        sin_value = tr.value(tr.named_table("rope.sin", sin_half), element)
        result = rlx.RopeOp(x, cos_value, sin_value, "half").result
        return tr.value(result, tr.result_element(node))
    return None


# --- attention ----------------------------------------------------------------------------


def unrepeated_kv(tr: Translator, arg: Any, element: Attribute) -> SSAValue:
    """The key/value heads before Hugging Face's repeat_kv
    (`x[:, :, None].expand(B, Hkv, R, S, D).reshape(B, Hkv·R, S, D)`), whose
    head order h → h // R is rlx.attention's own; else the value itself."""
    n = strip(arg)
    if is_op(n, aten.view.default, aten._unsafe_view.default, aten.reshape.default):
        e = strip(n.args[0])
        if is_op(e, aten.expand.default):
            u = strip(e.args[0])
            if is_op(u, aten.unsqueeze.default) and u.args[1] in (2, -3):
                source = u.args[0]
                b, hkv, s, d = source.meta["val"].shape
                repeated = tuple(e.meta["val"].shape)
                if (
                    len(repeated) == 5
                    and repeated[:2] == (b, hkv)
                    and repeated[3:] == (s, d)
                    and tuple(n.meta["val"].shape) == (b, hkv * repeated[2], s, d)
                    and isinstance(tr.env.get(source), SSAValue)
                ):
                    return tr.value(tr.env[source], element)
    return tr.value(tr.lookup(arg), element)


def attention_mask(
    tr: Translator,
    mask: Any,
    is_causal: bool,
    q: SSAValue,
    k: SSAValue,
    element: Attribute,
) -> tuple[str, SSAValue | None]:
    """rlx.attention's `mask` property and bias operand for sdpa's mask."""
    b, h, s, _ = shape_of(q)
    skv = shape_of(k)[2]
    if mask is None:
        return ("causal" if is_causal else "none"), None
    if isinstance(mask, Const):
        value = mask.value
        allowed = value if value.dtype == torch.bool else None
        if allowed is None and value.is_floating_point():
            blocked = value <= MASKED
            if torch.all((value == 0) | blocked):
                allowed = ~blocked
        if allowed is not None and allowed.dim() <= 4:
            try:
                full = torch.broadcast_to(allowed, (b, h, s, skv))
            except RuntimeError:
                full = None
            if full is not None:
                causal = torch.ones(s, skv, dtype=torch.bool).tril(skv - s)
                if bool(full.all()):
                    return "none", None
                if torch.equal(full, causal.expand(b, h, s, skv)):
                    return "causal", None
        if value.dtype == torch.bool:
            bias = torch.where(value, 0.0, MASKED).to(torch.float32)
            return "bias", tr.value(Const(bias, f"{mask.origin}.bias"), element)
        return "bias", tr.value(mask, element)
    value = tr.value(mask)
    if element_type_of(value) == i1:
        zero = tr.constant(np.asarray(0.0), element)
        masked = tr.constant(np.asarray(MASKED), element)
        return "bias", rlx.WhereOp(value, zero, masked).result
    return "bias", tr.value(value, element)

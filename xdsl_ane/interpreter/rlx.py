"""Numpy semantics of every rlx op (DESIGN.md's op table is the specification).

Each op returns an array of exactly its result type's shape and dtype, and
f16 ops compute in float16, except that reductions (reduce_sum, reduce_mean,
softmax, cumsum, the norms and their gradients, matmul, the sums inside
attention and cross-entropy) accumulate in float32 and round to f16 once. The table leaves a few cases open; here they are:

- `rlx.cast`: float to integer rounds toward zero and saturates at the target
  range, NaN becomes 0 (ARM's FCVTZS, Rust's `as`); integer to a narrower
  integer wraps (two's complement); to i1 is `x != 0`; from i1 is 0 or 1.
- Integer `rlx.div` rounds toward zero; division by zero is an error. Integer
  `rlx.reduce_mean` is the sum over the count, rounded toward zero. Integer
  overflow wraps.
- `rlx.attention`: a query row that sees no key (causal with Skv < S puts
  rows i < S − Skv there, a bias row of all −inf too) outputs zeros, and its
  gradients are zero; never NaN. A key with score −inf gets probability 0.
- `rlx.gather` indices lie in [0, n); `rlx.softmax_cross_entropy` labels lie
  in [0, C) and, when float, hold integers; anything else is an
  `InterpretationError` naming the op.
- `rlx.quantize` maps NaN to the zero point (the code of 0.0).

Floating-point exceptions follow IEEE (inf, NaN) without numpy warnings.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
from xdsl.interpreter import (
    InterpreterFunctions,
    register_impls,
)
from xdsl.ir import Operation

from xdsl_ane.dialects import rlx
from xdsl_ane.dialects.rlx.convolution import conv_parameters
from xdsl_ane.dialects.rlx.normalization import rms_axis
from xdsl_ane.dialects.rlx.resampling import pad_parameters
from xdsl_ane.dialects.typing import (
    bool_prop,
    float_prop,
    int_prop,
    ints_prop,
    str_prop,
)
from xdsl_ane.interpreter import convolution, resampling
from xdsl_ane.interpreter.numerics import (
    GELU_TANH_CUBIC,
    INV_SQRT_2PI,
    SQRT_2_OVER_PI,
    Array,
    Compute,
    accumulates_in_float32,
    cast,
    checked_impl,
    cos,
    cumulative_sum,
    divide,
    erf,
    exp,
    gelu_tanh,
    layer_norm,
    log,
    log_sum_exp,
    matmul,
    mean,
    normal_cdf,
    result_shape,
    sigmoid,
    sin,
    softmax,
    tanh,
    top_k,
    total,
)
from xdsl_ane.interpreter.numerics import family_impls as shared_family_impls
from xdsl_ane.interpreter.numerics import result_dtype as numeric_result_dtype
from xdsl_ane.interpreter.spatial import avg_pool, batch_norm, group_norm, max_pool
from xdsl_ane.interpreter.values import (
    InterpretationError,
    dense_to_numpy,
)
from xdsl_ane.weights.store import WeightStore


def rlx_impl(op_type: type[Operation]) -> Callable[[Compute], Any]:
    """`checked_impl` without conversion: a result of the wrong dtype (an
    accidental upcast of f16 math) fails loudly."""
    return checked_impl(op_type, convert=False)


def family_impls(
    op_types: Iterable[type[Operation]], compute: Compute
) -> dict[str, Any]:
    return shared_family_impls(op_types, compute, convert=False)


def result_dtype(op: Operation) -> np.dtype:
    return numeric_result_dtype(op.results[0].type)


# --- elementwise -------------------------------------------------------------


UNARY_FUNCTIONS: dict[type[Operation], Callable[[Array], Array]] = {
    rlx.ReluOp: lambda x: np.maximum(x, 0),
    rlx.GeluOp: lambda x: x * normal_cdf(x),
    rlx.GeluTanhOp: gelu_tanh,
    rlx.SiluOp: lambda x: x * sigmoid(x),
    rlx.SigmoidOp: sigmoid,
    rlx.TanhOp: tanh,
    rlx.ExpOp: exp,
    rlx.LogOp: log,
    rlx.SqrtOp: np.sqrt,
    rlx.RsqrtOp: lambda x: 1 / np.sqrt(x),
    rlx.NegOp: np.negative,
    rlx.AbsOp: np.abs,
    rlx.SinOp: sin,
    rlx.CosOp: cos,
    rlx.ReciprocalOp: lambda x: 1 / x,
    rlx.ErfOp: erf,
    rlx.FloorOp: np.floor,
    rlx.RoundOp: np.round,
}


BINARY_FUNCTIONS: dict[type[Operation], Callable[[Array, Array], Array]] = {
    rlx.AddOp: np.add,
    rlx.SubOp: np.subtract,
    rlx.MulOp: np.multiply,
    rlx.DivOp: divide,
    rlx.MaxOp: np.maximum,
    rlx.MinOp: np.minimum,
    rlx.PowOp: np.power,
}

COMPARE_FUNCTIONS: dict[str, Callable[[Array, Array], Array]] = {
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
}


# --- linear algebra, reductions, normalization -------------------------------


REDUCE_FUNCTIONS: dict[
    type[Operation], Callable[[Array, tuple[int, ...], bool], Array]
] = {
    rlx.ReduceSumOp: total,
    rlx.ReduceMeanOp: mean,
    rlx.ReduceMaxOp: lambda x, axis, keepdims: np.max(x, axis=axis, keepdims=keepdims),
    rlx.ReduceMinOp: lambda x, axis, keepdims: np.min(x, axis=axis, keepdims=keepdims),
}


def rms_scale(x: Array, eps: float, axis: int = -1) -> Array:
    """r = rsqrt(mean(x², axis) + eps), keeping the axis as 1; the callers
    below accumulate in float32."""
    return 1 / np.sqrt(np.mean(x * x, axis=axis, keepdims=True) + eps)


@accumulates_in_float32
def rms_norm(x: Array, gamma: Array, eps: float, axis: int = -1) -> Array:
    return x * rms_scale(x, eps, axis) * gamma


@accumulates_in_float32
def rms_norm_backward_input(
    x: Array, gamma: Array, d_out: Array, eps: float, axis: int = -1
) -> Array:
    """d_x = r·(γ·d_y) − x·r³·mean(x·γ·d_y), r = rsqrt(mean(x²) + eps),
    computed as r·(g − n·mean(n·g)) with n = x·r, g = γ·d_y: the same value
    without r³, which would overflow f16 for rows near zero."""
    r = rms_scale(x, eps, axis)
    g = gamma * d_out
    n = x * r
    return r * (g - n * np.mean(n * g, axis=axis, keepdims=True))


@accumulates_in_float32
def rms_norm_backward_gamma(
    x: Array,
    d_out: Array,
    eps: float,
    axis: int = -1,
    gamma_shape: tuple[int, ...] | None = None,
) -> Array:
    """d_γ = Σ of d_y · x · r over the axes γ broadcasts along: every axis
    but the last for γ [D], else those where `gamma_shape` is 1."""
    contribution = d_out * x * rms_scale(x, eps, axis)
    if gamma_shape is None:
        return np.sum(contribution, axis=tuple(range(x.ndim - 1)))
    summed = tuple(i for i, n in enumerate(gamma_shape) if n == 1)
    return np.sum(contribution, axis=summed, keepdims=True).reshape(gamma_shape)


def rope(x: Array, cos: Array, sin: Array, style: str, layout: str = "bhsd") -> Array:
    """Rotates each pair (a, b) of the head dimension by θ: (a·cos − b·sin,
    a·sin + b·cos); "half" pairs (i, i + D/2), "interleaved" (2i, 2i + 1).
    cos and sin are [S, D/2] and broadcast over [B, H]; in "bhds" x is
    [B, H, D, S]."""
    if layout == "bhds":
        return np.swapaxes(rope(np.swapaxes(x, 2, 3), cos, sin, style), 2, 3)
    if style == "half":
        half = x.shape[-1] // 2
        a, b = x[..., :half], x[..., half:]
        return np.concatenate([a * cos - b * sin, a * sin + b * cos], axis=-1)
    a, b = x[..., 0::2], x[..., 1::2]
    return np.stack([a * cos - b * sin, a * sin + b * cos], axis=-1).reshape(x.shape)


# --- attention ---------------------------------------------------------------


def repeat_heads(x: Array, groups: int) -> Array:
    """[B, Hkv, ...] -> [B, Hkv·groups, ...] in the order k0,k0,k1,k1,...: query
    head h reads key/value head h // groups (Hugging Face Qwen/Llama)."""
    return np.repeat(x, groups, axis=1)


def sum_head_groups(x: Array, kv_heads: int) -> Array:
    """The adjoint of `repeat_heads`: sums each group of consecutive heads."""
    b, h, *rest = x.shape
    return total(x.reshape(b, kv_heads, h // kv_heads, *rest), axis=2)


@accumulates_in_float32
def masked_softmax(scores: Array, visible: Array) -> Array:
    """Softmax over the last axis of the visible entries; hidden entries get 0,
    and a row with no visible entry is all zeros (not NaN)."""
    masked = np.where(visible, scores, -np.inf)
    row_max = np.max(masked, axis=-1, keepdims=True)
    row_max = np.where(np.isfinite(row_max), row_max, 0)
    e = np.where(visible, np.exp(masked - row_max), 0)
    row_sum = np.sum(e, axis=-1, keepdims=True)
    return e / np.where(row_sum > 0, row_sum, 1)


def attention_probabilities(
    q: Array, k: Array, bias: Array | None, mask: str, scale: float
) -> Array:
    """P = softmax(q·kᵀ·scale + mask) over repeated key heads, [B, H, S, Skv]."""
    k = repeat_heads(k, q.shape[1] // k.shape[1])
    scores = matmul(q, np.swapaxes(k, -1, -2)) * scale
    s, skv = scores.shape[-2:]
    visible = np.ones(scores.shape, dtype=bool)
    if mask == "causal":
        visible = visible & rlx.causal_visible(s, skv)
    elif mask == "bias":
        assert bias is not None
        scores = scores + bias
    return masked_softmax(scores, visible & (scores > -np.inf))


def attention_parts(
    op: rlx.AttentionOp | rlx.AttentionBackwardOp, values: tuple[Array, ...], count: int
) -> tuple[list[Array], Array | None, str, float]:
    """The first `count` operands in "bhsd" (swapped from "bhds"), the
    optional bias, the mask and the scale."""
    bias = values[count] if len(values) > count else None
    mask = str_prop(op.properties, "mask", "none")
    assert mask is not None
    operands = [in_bhsd(v, op.layout_name) for v in values[:count]]
    return operands, bias, mask, rlx.attention_scale(op)


def in_bhsd(x: Array, layout: str) -> Array:
    """A rank-4 array in `layout` as [B, H, S, D], or back (its own inverse)."""
    return x if layout == "bhsd" else np.swapaxes(x, 2, 3)


def attention_gradient(
    q: Array,
    k: Array,
    v: Array,
    d_out: Array,
    bias: Array | None,
    mask: str,
    scale: float,
    wrt: str,
) -> Array:
    """With P the probabilities and O = P·V (V repeated per query head):
    dV = Pᵀ·dO, dP = dO·Vᵀ, dS = P ⊙ (dP − rowsum(dP ⊙ P)),
    dQ = dS·K·scale, dK = dSᵀ·Q·scale; dK and dV are summed over each group of
    query heads sharing a key/value head."""
    groups = q.shape[1] // k.shape[1]
    p = attention_probabilities(q, k, bias, mask, scale)
    if wrt == "value":
        return sum_head_groups(matmul(np.swapaxes(p, -1, -2), d_out), k.shape[1])
    d_p = matmul(d_out, np.swapaxes(repeat_heads(v, groups), -1, -2))
    d_s = p * (d_p - total(d_p * p, axis=-1, keepdims=True))
    if wrt == "query":
        return matmul(d_s, repeat_heads(k, groups)) * scale
    return sum_head_groups(matmul(np.swapaxes(d_s, -1, -2), q) * scale, k.shape[1])


# --- loss and training -------------------------------------------------------


def class_indices(op: Operation, labels: Array, classes: int) -> Array:
    """Labels as int64 indices; raises unless each is an integer in [0, C)."""
    if labels.dtype.kind == "f" and not np.all(labels == np.round(labels)):
        bad = labels[labels != np.round(labels)][0]
        raise InterpretationError(f"{op.name}: label {bad} is not an integer")
    indices = labels.astype(np.int64)
    out_of_range = (indices < 0) | (indices >= classes)
    if np.any(out_of_range):
        raise InterpretationError(
            f"{op.name}: label {labels[out_of_range][0]} is outside [0, {classes})"
        )
    return indices


def normal_pdf(x: Array) -> Array:
    return exp(-0.5 * x * x) * INV_SQRT_2PI


def gelu_tanh_derivative(x: Array) -> Array:
    """(1 + t)/2 + x/2 · (1 − t²) · √(2/π) · (1 + 3·0.044715 x²), t = tanh(u).
    Where tanh saturates (1 − t² = 0) the second term is 0, also when x² has
    overflowed."""
    t = tanh(SQRT_2_OVER_PI * (x + GELU_TANH_CUBIC * x**3))
    sech2 = 1 - t * t
    du = SQRT_2_OVER_PI * (1 + 3 * GELU_TANH_CUBIC * x * x)
    return 0.5 * (1 + t) + np.where(sech2 > 0, 0.5 * x * sech2 * du, 0)


def silu_derivative(x: Array) -> Array:
    """d/dx x·σ(x) = σ(x)·(1 + x·(1 − σ(x)))."""
    s = sigmoid(x)
    return s * (1 + x * (1 - s))


def sigmoid_derivative(x: Array) -> Array:
    s = sigmoid(x)
    return s * (1 - s)


ACTIVATION_DERIVATIVES: dict[str, Callable[[Array], Array]] = {
    "relu": lambda x: (x > 0).astype(x.dtype),
    "silu": silu_derivative,
    "gelu": lambda x: normal_cdf(x) + x * normal_pdf(x),
    "gelu_tanh": gelu_tanh_derivative,
    "sigmoid": sigmoid_derivative,
    "tanh": lambda x: 1 - tanh(x) ** 2,
}


def quantization(
    op: Operation, scales: Array | None, dtype: np.dtype
) -> tuple[float | Array, int]:
    """The scale (a float, or the `scales` operand repeated over its blocks
    to the data's shape, in `dtype`) and the zero point of a quantize or
    dequantize."""
    zero_point = int_prop(op.properties, "zero_point")
    if scales is None:
        scale = float_prop(op.properties, "scale")
        assert scale is not None
        return scale, zero_point
    shape = op.operands[0].type.get_shape()
    for axis, (d, b) in enumerate(zip(shape, scales.shape)):
        scales = np.repeat(scales, d // b, axis)
    return scales.astype(dtype), zero_point


def optional_operands(op: Operation, values: Iterable[Array]) -> list[Array | None]:
    """The values of `op`'s operands after the first, None for an absent
    optional one."""
    given = dict(zip(op.operands[1:], values))
    names = [name for name, _ in op.get_irdl_definition().operands[1:]]
    return [given.get(v) if (v := getattr(op, n)) is not None else None for n in names]


# --- the interpreter functions -----------------------------------------------


@register_impls
class RlxFunctions(InterpreterFunctions):
    """numpy implementations of the rlx ops; `rlx.param` reads `weights`."""

    def __init__(self, weights: WeightStore | None = None):
        self.weights = weights if weights is not None else WeightStore()

    @rlx_impl(rlx.ConstantOp)
    def run_constant(self, op: rlx.ConstantOp) -> Array:
        return dense_to_numpy(op.value)

    @rlx_impl(rlx.ParamOp)
    def run_param(self, op: rlx.ParamOp) -> Array:
        return self.weights.get(op.param_name.data, op.result.type, op.name)

    # --- elementwise families ---

    def unary(self, op: Operation, x: Array) -> Array:
        return UNARY_FUNCTIONS[type(op)](x)

    def binary(self, op: Operation, lhs: Array, rhs: Array) -> Array:
        try:
            return BINARY_FUNCTIONS[type(op)](lhs, rhs)
        except ZeroDivisionError as e:
            raise InterpretationError(f"{op.name}: {e}") from e

    locals().update(family_impls(UNARY_FUNCTIONS, unary))
    locals().update(family_impls(BINARY_FUNCTIONS, binary))

    @rlx_impl(rlx.CompareOp)
    def run_compare(self, op: rlx.CompareOp, lhs: Array, rhs: Array) -> Array:
        return COMPARE_FUNCTIONS[op.predicate.data](lhs, rhs)

    @rlx_impl(rlx.WhereOp)
    def run_where(
        self, op: rlx.WhereOp, cond: Array, on_true: Array, on_false: Array
    ) -> Array:
        return np.where(cond, on_true, on_false)

    @rlx_impl(rlx.CastOp)
    def run_cast(self, op: rlx.CastOp, x: Array) -> Array:
        return cast(x, result_dtype(op))

    # --- linear algebra and shape ---

    @rlx_impl(rlx.MatmulOp)
    def run_matmul(self, op: rlx.MatmulOp, lhs: Array, rhs: Array) -> Array:
        if bool_prop(op.properties, "transpose_lhs"):
            lhs = np.swapaxes(lhs, -1, -2)
        if bool_prop(op.properties, "transpose_rhs"):
            rhs = np.swapaxes(rhs, -1, -2)
        return matmul(lhs, rhs)

    @rlx_impl(rlx.ReshapeOp)
    def run_reshape(self, op: rlx.ReshapeOp, x: Array) -> Array:
        return x.reshape(result_shape(op))

    @rlx_impl(rlx.ExpandOp)
    def run_expand(self, op: rlx.ExpandOp, x: Array) -> Array:
        return np.broadcast_to(x, result_shape(op)).copy()

    @rlx_impl(rlx.TransposeOp)
    def run_transpose(self, op: rlx.TransposeOp, x: Array) -> Array:
        return np.transpose(x, ints_prop(op.properties, "perm"))

    @rlx_impl(rlx.NarrowOp)
    def run_narrow(self, op: rlx.NarrowOp, x: Array) -> Array:
        start = int_prop(op.properties, "start")
        length = int_prop(op.properties, "length")
        axis = int_prop(op.properties, "axis")
        return np.take(x, range(start, start + length), axis=axis)

    @rlx_impl(rlx.ConcatOp)
    def run_concat(self, op: rlx.ConcatOp, *inputs: Array) -> Array:
        return np.concatenate(inputs, axis=int_prop(op.properties, "axis"))

    @rlx_impl(rlx.GatherOp)
    def run_gather(self, op: rlx.GatherOp, table: Array, indices: Array) -> Array:
        axis = int_prop(op.properties, "axis")
        n = table.shape[axis]
        out_of_range = (indices < 0) | (indices >= n)
        if np.any(out_of_range):
            raise InterpretationError(
                f"{op.name}: index {indices[out_of_range][0]} is outside [0, {n}) "
                f"on axis {axis} of the table"
            )
        return np.take(table, indices, axis=axis)

    # --- reductions and normalization ---

    def reduce(self, op: Operation, x: Array) -> Array:
        axes = ints_prop(op.properties, "axes")
        assert axes is not None
        keepdims = bool_prop(op.properties, "keep_dims")
        return REDUCE_FUNCTIONS[type(op)](x, axes, keepdims)

    locals().update(family_impls(REDUCE_FUNCTIONS, reduce))

    @rlx_impl(rlx.SoftmaxOp)
    def run_softmax(self, op: rlx.SoftmaxOp, x: Array) -> Array:
        return softmax(x, int_prop(op.properties, "axis", -1))

    @rlx_impl(rlx.CumsumOp)
    def run_cumsum(self, op: rlx.CumsumOp, x: Array) -> Array:
        return cumulative_sum(
            x,
            int_prop(op.properties, "axis"),
            bool_prop(op.properties, "exclusive"),
            bool_prop(op.properties, "reverse"),
        )

    @rlx_impl(rlx.TopkOp)
    def run_topk(self, op: rlx.TopkOp, x: Array) -> tuple[Array, Array]:
        return top_k(
            x,
            int_prop(op.properties, "k"),
            int_prop(op.properties, "axis", -1),
            bool_prop(op.properties, "largest", True),
        )

    @rlx_impl(rlx.ArgsortOp)
    def run_argsort(self, op: rlx.ArgsortOp, x: Array) -> Array:
        """The indices of a stable sort along the axis (of −x, descending)."""
        axis = int_prop(op.properties, "axis", -1)
        descending = bool_prop(op.properties, "descending", False)
        return top_k(x, x.shape[axis], axis, descending)[1]

    @rlx_impl(rlx.RmsNormOp)
    def run_rms_norm(self, op: rlx.RmsNormOp, x: Array, gamma: Array) -> Array:
        return rms_norm(x, gamma, op.eps.value.data, rms_axis(op))

    @rlx_impl(rlx.LayerNormOp)
    def run_layer_norm(
        self, op: rlx.LayerNormOp, x: Array, gamma: Array, beta: Array
    ) -> Array:
        """(x − mean) · rsqrt(var + eps) · γ + β over the last axis."""
        return layer_norm(x, (-1,), op.eps.value.data, gamma, beta)

    @rlx_impl(rlx.BatchNormOp)
    def run_batch_norm(self, op: rlx.BatchNormOp, x: Array, *params: Array) -> Array:
        mean, var, gamma, beta = optional_operands(op, params)
        return batch_norm(x, mean, var, gamma, beta, op.eps())

    @rlx_impl(rlx.GroupNormOp)
    def run_group_norm(self, op: rlx.GroupNormOp, x: Array, *params: Array) -> Array:
        gamma, beta = optional_operands(op, params)
        return group_norm(x, op.groups.value.data, gamma, beta, op.eps())

    # --- pooling ---

    @rlx_impl(rlx.MaxPoolOp)
    def run_max_pool(self, op: rlx.MaxPoolOp, x: Array) -> Array:
        w = op.windows()
        return max_pool(x, w.kernel, w.strides, w.padding, result_shape(op)[2:])

    @rlx_impl(rlx.AvgPoolOp)
    def run_avg_pool(self, op: rlx.AvgPoolOp, x: Array) -> Array:
        w = op.windows()
        out = result_shape(op)[2:]
        return avg_pool(x, w.kernel, w.strides, w.padding, out, op.includes_padding())

    @rlx_impl(rlx.RopeOp)
    def run_rope(self, op: rlx.RopeOp, x: Array, cos: Array, sin: Array) -> Array:
        return rope(x, cos, sin, op.style.data, op.layout_name)

    # --- attention ---

    @rlx_impl(rlx.AttentionOp)
    def run_attention(self, op: rlx.AttentionOp, *values: Array) -> Array:
        (q, k, v), bias, mask, scale = attention_parts(op, values, 3)
        p = attention_probabilities(q, k, bias, mask, scale)
        out = matmul(p, repeat_heads(v, q.shape[1] // k.shape[1]))
        return in_bhsd(out, op.layout_name)

    @rlx_impl(rlx.AttentionBackwardOp)
    def run_attention_backward(
        self, op: rlx.AttentionBackwardOp, *values: Array
    ) -> Array:
        (q, k, v, d_out), bias, mask, scale = attention_parts(op, values, 4)
        grad = attention_gradient(q, k, v, d_out, bias, mask, scale, op.wrt.data)
        return in_bhsd(grad, op.layout_name)

    # --- loss ---

    @rlx_impl(rlx.SoftmaxCrossEntropyOp)
    def run_softmax_cross_entropy(
        self, op: rlx.SoftmaxCrossEntropyOp, logits: Array, labels: Array
    ) -> Array:
        """loss = logsumexp(x) − x[label], with logsumexp = m + log Σ exp(x − m)."""
        rows = np.arange(logits.shape[0])
        indices = class_indices(op, labels, logits.shape[1])
        return log_sum_exp(logits) - logits[rows, indices]

    @rlx_impl(rlx.SoftmaxCrossEntropyBackwardOp)
    def run_softmax_cross_entropy_backward(
        self,
        op: rlx.SoftmaxCrossEntropyBackwardOp,
        logits: Array,
        labels: Array,
        d_loss: Array,
    ) -> Array:
        """d_logits = (softmax(x) − onehot(label)) · d_loss[:, None]."""
        indices = class_indices(op, labels, logits.shape[1])
        gradient = softmax(logits)
        gradient[np.arange(logits.shape[0]), indices] -= 1
        return gradient * d_loss[:, None]

    # --- training ---

    @rlx_impl(rlx.RmsNormBackwardInputOp)
    def run_rms_norm_backward_input(
        self, op: rlx.RmsNormBackwardInputOp, x: Array, gamma: Array, d_out: Array
    ) -> Array:
        return rms_norm_backward_input(x, gamma, d_out, op.eps.value.data, rms_axis(op))

    @rlx_impl(rlx.RmsNormBackwardGammaOp)
    def run_rms_norm_backward_gamma(
        self, op: rlx.RmsNormBackwardGammaOp, x: Array, d_out: Array
    ) -> Array:
        gamma_shape = ints_prop(op.properties, "gamma_shape")
        return rms_norm_backward_gamma(
            x,
            d_out,
            op.eps.value.data,
            rms_axis(op),
            gamma_shape,
        )

    @rlx_impl(rlx.RopeBackwardOp)
    def run_rope_backward(
        self, op: rlx.RopeBackwardOp, d_out: Array, cos: Array, sin: Array
    ) -> Array:
        """A rotation's transpose is the rotation by −θ: sin → −sin."""
        return rope(d_out, cos, -sin, op.style.data, op.layout_name)

    @rlx_impl(rlx.ActivationBackwardOp)
    def run_activation_backward(
        self, op: rlx.ActivationBackwardOp, x: Array, d_out: Array
    ) -> Array:
        return ACTIVATION_DERIVATIVES[op.kind.data](x) * d_out

    # --- convolution ---

    @rlx_impl(rlx.ConvOp)
    def run_conv(self, op: rlx.ConvOp, x: Array, w: Array, *bias: Array) -> Array:
        p = conv_parameters(op)
        b = bias[0] if bias else None
        return convolution.conv(x, w, b, p.strides, p.padding, p.dilations, p.groups)

    @rlx_impl(rlx.ConvTransposeOp)
    def run_conv_transpose(
        self, op: rlx.ConvTransposeOp, x: Array, w: Array, *bias: Array
    ) -> Array:
        p = conv_parameters(op)
        b = bias[0] if bias else None
        return convolution.conv_transpose(
            x, w, b, p.strides, p.padding, p.output_padding, p.dilations, p.groups
        )

    # --- quantization ---

    # --- resampling and vision activations ---

    @rlx_impl(rlx.UpsampleOp)
    def run_upsample(self, op: rlx.UpsampleOp, x: Array) -> Array:
        return resampling.upsample(
            x,
            op.mode.data,
            ints_prop(op.properties, "size"),
            bool_prop(op.properties, "align_corners"),
        )

    @rlx_impl(rlx.PadOp)
    def run_pad(self, op: rlx.PadOp, x: Array) -> Array:
        pairs, mode, value = pad_parameters(op.name, op.properties, op.input.type)
        return resampling.pad(x, pairs, mode, value)

    @rlx_impl(rlx.PixelShuffleOp)
    def run_pixel_shuffle(self, op: rlx.PixelShuffleOp, x: Array) -> Array:
        return resampling.pixel_shuffle(x, int_prop(op.properties, "upscale_factor"))

    @rlx_impl(rlx.PixelUnshuffleOp)
    def run_pixel_unshuffle(self, op: rlx.PixelUnshuffleOp, x: Array) -> Array:
        return resampling.pixel_unshuffle(
            x, int_prop(op.properties, "downscale_factor")
        )

    @rlx_impl(rlx.HardswishOp)
    def run_hardswish(self, op: rlx.HardswishOp, x: Array) -> Array:
        return resampling.hardswish(x)

    @rlx_impl(rlx.HardsigmoidOp)
    def run_hardsigmoid(self, op: rlx.HardsigmoidOp, x: Array) -> Array:
        return resampling.hardsigmoid(x)

    @rlx_impl(rlx.LeakyReluOp)
    def run_leaky_relu(self, op: rlx.LeakyReluOp, x: Array) -> Array:
        return resampling.leaky_relu(x, op.alpha_of(op))

    @rlx_impl(rlx.EluOp)
    def run_elu(self, op: rlx.EluOp, x: Array) -> Array:
        return resampling.elu(x, op.alpha_of(op))

    @rlx_impl(rlx.ClampOp)
    def run_clamp(self, op: rlx.ClampOp, x: Array) -> Array:
        low = float_prop(op.properties, "min")
        high = float_prop(op.properties, "max")
        if low is not None:
            x = np.maximum(x, x.dtype.type(low))
        if high is not None:
            x = np.minimum(x, x.dtype.type(high))
        return x

    @rlx_impl(rlx.QuantizeOp)
    def run_quantize(
        self, op: rlx.QuantizeOp, x: Array, scales: Array | None = None
    ) -> Array:
        """clamp(round_half_even(x / scale) + zp, −128, 127)."""
        scale, zero_point = quantization(op, scales, x.dtype)
        q = np.clip(np.rint(x / scale) + zero_point, -128, 127)
        return np.where(np.isnan(q), zero_point, q).astype(np.int8)

    @rlx_impl(rlx.DequantizeOp)
    def run_dequantize(
        self, op: rlx.DequantizeOp, q: Array, scales: Array | None = None
    ) -> Array:
        """(q − zp) · scale; q − zp is exact in int32 and in the result dtype."""
        scale, zero_point = quantization(op, scales, result_dtype(op))
        return (q.astype(np.int32) - zero_point).astype(result_dtype(op)) * scale

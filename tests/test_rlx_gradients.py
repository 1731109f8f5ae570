"""Composite and backward rlx ops against float64 references.

The rlx ops run on f32 inputs. Forward references are float64 numpy written
here from the math; gradients are checked against central finite differences
of those float64 forwards: for an op computing the vector-Jacobian product
Jᵀ·w of a forward f, the reference is ∂/∂x Σ w·f(x), one coordinate at a time.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from xdsl.builder import ImplicitBuilder
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType, f16, f32, i8, i32
from xdsl.interpreter import Interpreter
from xdsl.ir import Block, Region, SSAValue

from xdsl_ane.dialects import rlx
from xdsl_ane.interpreter.core import InterpretationError
from xdsl_ane.interpreter.func import FuncFunctions
from xdsl_ane.interpreter.rlx import RlxFunctions

ELEMENT_TYPES = {
    np.dtype(np.float32): f32,
    np.dtype(np.float16): f16,
    np.dtype(np.int32): i32,
    np.dtype(np.int8): i8,
}


def run(build: Callable, *inputs: np.ndarray) -> np.ndarray:
    """Runs `func.func @kernel(inputs...) { return build(*args) }`."""
    arg_types = [TensorType(ELEMENT_TYPES[x.dtype], list(x.shape)) for x in inputs]
    block = Block(arg_types=arg_types)
    with ImplicitBuilder(block) as args:
        result = SSAValue.get(build(*args))
        func.ReturnOp(result)
    f = func.FuncOp("kernel", (arg_types, [result.type]), Region(block))
    module = ModuleOp([f])
    module.verify()
    interpreter = Interpreter(module)
    interpreter.register_implementations(FuncFunctions())
    interpreter.register_implementations(RlxFunctions())
    (value,) = interpreter.call_op(f, tuple(inputs))
    return value


def numeric_vjp(
    forward: Callable[[np.ndarray], np.ndarray],
    x: np.ndarray,
    weights: np.ndarray,
    h: float = 1e-6,
) -> np.ndarray:
    """∂/∂x Σ weights · forward(x) by central differences in float64."""
    x = x.astype(np.float64)
    gradient = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        plus, minus = x.copy(), x.copy()
        plus[index] += h
        minus[index] -= h
        difference = np.sum(weights * (forward(plus) - forward(minus)))
        gradient[index] = difference / (2 * h)
    return gradient


def check_f32(actual: np.ndarray, expected: np.ndarray, rtol=1e-4, atol=1e-5):
    assert actual.dtype == np.float32
    assert actual.shape == expected.shape
    np.testing.assert_allclose(actual.astype(np.float64), expected, rtol, atol)


def normal(rng, shape, scale=1.0, dtype=np.float32) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(dtype)


def f64(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float64)


# --- softmax cross-entropy ----------------------------------------------------


def cross_entropy64(logits: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """−log softmax(logits)[label] per row, in float64."""
    x = f64(logits)
    shifted = x - x.max(axis=1, keepdims=True)
    log_probabilities = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return -np.array([log_probabilities[n, int(y)] for n, y in enumerate(labels)])


@pytest.mark.parametrize("label_dtype", [np.int32, np.float32])
def test_softmax_cross_entropy(label_dtype, rng):
    logits = normal(rng, (6, 11), scale=4)
    logits[0] += 1000  # stable for large logits
    labels = np.array([0, 10, 5, 5, 2, 7], label_dtype)
    y = run(rlx.SoftmaxCrossEntropyOp, logits, labels)
    check_f32(y, cross_entropy64(logits, labels))


@pytest.mark.parametrize("label_dtype", [np.int32, np.float32])
def test_softmax_cross_entropy_backward(label_dtype, rng):
    logits = normal(rng, (5, 7), scale=2)
    labels = np.array([3, 0, 6, 3, 1], label_dtype)
    d_loss = normal(rng, (5,))
    y = run(rlx.SoftmaxCrossEntropyBackwardOp, logits, labels, d_loss)
    expected = numeric_vjp(lambda x: cross_entropy64(x, labels), logits, f64(d_loss))
    check_f32(y, expected)


@pytest.mark.parametrize(
    "labels, message",
    [
        (np.array([0, 7], np.int32), "label 7 is outside \\[0, 7\\)"),
        (np.array([-1, 2], np.int32), "label -1 is outside"),
        (np.array([0.0, 2.5], np.float32), "label 2.5 is not an integer"),
        (np.array([0.0, 9.0], np.float32), "label 9.0 is outside"),
    ],
)
def test_bad_labels_raise(labels, message, rng):
    logits = normal(rng, (2, 7))
    with pytest.raises(
        InterpretationError, match="rlx.softmax_cross_entropy: " + message
    ):
        run(rlx.SoftmaxCrossEntropyOp, logits, labels)
    with pytest.raises(InterpretationError, match=message):
        run(rlx.SoftmaxCrossEntropyBackwardOp, logits, labels, normal(rng, (2,)))


# --- attention ----------------------------------------------------------------


def attention64(q, k, v, mask="none", bias=None, scale=None) -> np.ndarray:
    """softmax(q·kᵀ·scale + mask)·v head by head in float64; query head h uses
    key/value head h // (H/Hkv). A query that sees no key outputs zeros."""
    q, k, v = f64(q), f64(k), f64(v)
    b, h, s, d = q.shape
    hkv, skv = k.shape[1], k.shape[2]
    scale = d**-0.5 if scale is None else scale
    bias = None if bias is None else np.broadcast_to(f64(bias), (b, h, s, skv))
    out = np.zeros((b, h, s, v.shape[3]))
    for n in range(b):
        for head in range(h):
            kv = head // (h // hkv)
            scores = q[n, head] @ k[n, kv].T * scale
            visible = np.ones((s, skv), dtype=bool)
            if mask == "causal":
                for i in range(s):
                    visible[i] = np.arange(skv) <= i + (skv - s)
            if mask == "bias":
                scores = scores + bias[n, head]
                visible &= scores > -np.inf
            for i in range(s):
                if not visible[i].any():
                    continue
                row = scores[i, visible[i]]
                weights = np.exp(row - row.max())
                out[n, head, i] = weights / weights.sum() @ v[n, kv][visible[i]]
    return out


def repeat_kv_heads(x: np.ndarray, groups: int) -> np.ndarray:
    """k0, k0, k1, k1, ...: the Hugging Face Qwen/Llama order."""
    return np.concatenate(
        [x[:, [j]] for j in range(x.shape[1]) for _ in range(groups)], axis=1
    )


def attention_inputs(rng, b=1, h=4, hkv=2, s=5, skv=5, d=8, dv=None):
    return (
        normal(rng, (b, h, s, d)),
        normal(rng, (b, hkv, skv, d)),
        normal(rng, (b, hkv, skv, dv or d)),
    )


def build_attention(mask, scale=None):
    def build(q, k, v, *bias):
        return rlx.AttentionOp(q, k, v, *bias, mask=mask, scale=scale)

    return build


@pytest.mark.parametrize("mask", ["none", "causal", "bias"])
@pytest.mark.parametrize("skv", [5, 8])
def test_attention_grouped_query_16_over_8(mask, skv, rng):
    q, k, v = attention_inputs(rng, b=2, h=16, hkv=8, s=5, skv=skv, d=8, dv=6)
    bias = [normal(rng, (1, 16, 5, skv), scale=2)] if mask == "bias" else []
    y = run(build_attention(mask), q, k, v, *bias)
    check_f32(y, attention64(q, k, v, mask, *bias))
    # The same as multi-head attention over keys repeated k0,k0,k1,k1,...
    repeated = (repeat_kv_heads(k, 2), repeat_kv_heads(v, 2))
    check_f32(y, attention64(q, *repeated, mask, *bias))
    # ... and not over keys concatenated k0,k1,...,k7,k0,k1,...,k7.
    tiled = (np.concatenate([k, k], axis=1), np.concatenate([v, v], axis=1))
    assert not np.allclose(y, attention64(q, *tiled, mask, *bias), atol=1e-2)


def test_attention_bias_broadcasts_and_scale_property(rng):
    q, k, v = attention_inputs(rng, h=4, hkv=4, s=3, skv=6)
    bias = normal(rng, (3, 6), scale=3)
    y = run(lambda *xs: rlx.AttentionOp(*xs, mask="bias", scale=0.7), q, k, v, bias)
    check_f32(y, attention64(q, k, v, "bias", bias, scale=0.7))


def test_causal_attention_sees_the_prefix():
    """With Skv = S + 2, query i sees keys 0 ..= i + 2: with v = one-hot rows
    and equal scores, output i is uniform over the first i + 3 keys."""
    s, skv = 3, 5
    q = np.zeros((1, 1, s, 4), np.float32)
    k = np.zeros((1, 1, skv, 4), np.float32)
    v = np.eye(skv, dtype=np.float32).reshape(1, 1, skv, skv)
    y = run(build_attention("causal"), q, k, v)
    expected = np.array(
        [[1 / (i + 3) if j <= i + 2 else 0.0 for j in range(skv)] for i in range(s)]
    )
    check_f32(y[0, 0], expected)


def test_fully_masked_rows_output_zeros_never_nan(rng):
    # Causal with Skv < S: query i sees keys j ≤ i − 3, so rows 0..2 see none.
    q, k, v = attention_inputs(rng, h=4, hkv=2, s=6, skv=3)
    y = run(build_attention("causal"), q, k, v)
    assert np.all(np.isfinite(y)) and np.all(y[:, :, :3] == 0)
    check_f32(y, attention64(q, k, v, "causal"))
    # A bias row of −inf hides a key; an all −inf row is fully masked.
    bias = np.zeros((1, 1, 6, 3), np.float32)
    bias[..., 1, :] = -np.inf
    bias[..., 4, 0] = -np.inf
    y = run(build_attention("bias"), q, k, v, bias)
    assert np.all(np.isfinite(y)) and np.all(y[:, :, 1] == 0)
    check_f32(y, attention64(q, k, v, "bias", bias))
    d_out = normal(rng, y.shape)
    for wrt in ("query", "key", "value"):
        g = run(
            lambda *xs, wrt=wrt: rlx.AttentionBackwardOp(*xs[:4], wrt, bias=xs[4]),
            q,
            k,
            v,
            d_out,
            bias,
        )
        assert np.all(np.isfinite(g))


def test_attention_f16_computes_in_float16(rng):
    q, k, v = (x.astype(np.float16) for x in attention_inputs(rng, h=4, hkv=2))
    y = run(build_attention("causal"), q, k, v)
    assert y.dtype == np.float16
    np.testing.assert_allclose(f64(y), attention64(q, k, v, "causal"), 1e-2, 1e-2)


@pytest.mark.slow
def test_attention_real_sizes_grouped_query_16_over_8(rng):
    """Qwen3-0.6B's shape: 16 query heads over 8 key/value heads of 128."""
    q, k, v = attention_inputs(rng, h=16, hkv=8, s=64, skv=64, d=128)
    y = run(build_attention("causal"), q, k, v)
    repeated = attention64(q, repeat_kv_heads(k, 2), repeat_kv_heads(v, 2), "causal")
    check_f32(y, repeated)
    tiled = attention64(
        q, np.concatenate([k, k], axis=1), np.concatenate([v, v], axis=1), "causal"
    )
    assert not np.allclose(y, tiled, atol=1e-2)


WRT_OPERAND = {"query": 0, "key": 1, "value": 2}


@pytest.mark.parametrize("heads", [(4, 2), (16, 8), (2, 2)])
@pytest.mark.parametrize("mask", ["none", "causal", "bias"])
@pytest.mark.parametrize("wrt", ["query", "key", "value"])
def test_attention_backward(wrt, mask, heads, rng):
    h, hkv = heads
    s, skv = (5, 5) if h == 16 else (4, 6)
    q, k, v = attention_inputs(rng, h=h, hkv=hkv, s=s, skv=skv, d=4, dv=3)
    bias = [normal(rng, (1, h, s, skv), scale=2)] if mask == "bias" else []
    d_out = normal(rng, (1, h, s, 3))
    y = run(
        lambda q_, k_, v_, d_, *b: rlx.AttentionBackwardOp(
            q_, k_, v_, d_, wrt, *b, mask=mask
        ),
        q,
        k,
        v,
        d_out,
        *bias,
    )
    operands = [q, k, v]
    i = WRT_OPERAND[wrt]

    def forward(x: np.ndarray) -> np.ndarray:
        args = [x if j == i else operands[j] for j in range(3)]
        return attention64(*args, mask, *bias)

    check_f32(y, numeric_vjp(forward, operands[i], f64(d_out)))


def test_attention_backward_with_scale_property(rng):
    q, k, v = attention_inputs(rng, h=4, hkv=2, s=3, skv=3, d=4)
    d_out = normal(rng, q.shape)
    y = run(
        lambda *xs: rlx.AttentionBackwardOp(*xs, "key", mask="causal", scale=1.3),
        q,
        k,
        v,
        d_out,
    )
    expected = numeric_vjp(
        lambda x: attention64(q, x, v, "causal", scale=1.3), k, f64(d_out)
    )
    check_f32(y, expected)


# --- rotary embedding -----------------------------------------------------------


def rope64(x: np.ndarray, cos: np.ndarray, sin: np.ndarray, style: str) -> np.ndarray:
    """Each pair (a, b) -> (a·cos − b·sin, a·sin + b·cos), element by element."""
    x = f64(x)
    out = np.empty_like(x)
    half = x.shape[-1] // 2
    for i in range(half):
        a_index, b_index = (i, i + half) if style == "half" else (2 * i, 2 * i + 1)
        a, b = x[..., a_index], x[..., b_index]
        c, s = f64(cos[:, i]), f64(sin[:, i])
        out[..., a_index] = a * c - b * s
        out[..., b_index] = a * s + b * c
    return out


@pytest.mark.parametrize("style", ["half", "interleaved"])
def test_rope_backward_is_the_vjp_of_rope(style, rng):
    x = normal(rng, (1, 2, 5, 8))
    theta = rng.uniform(-math.pi, math.pi, (5, 4))
    cos, sin = np.cos(theta).astype(np.float32), np.sin(theta).astype(np.float32)
    check_f32(
        run(lambda *a: rlx.RopeOp(*a, style), x, cos, sin), rope64(x, cos, sin, style)
    )
    d_out = normal(rng, x.shape)
    y = run(lambda *a: rlx.RopeBackwardOp(*a, style), d_out, cos, sin)
    check_f32(y, numeric_vjp(lambda v: rope64(v, cos, sin, style), x, f64(d_out)))
    # A rotation's inverse is its transpose: rope_backward undoes rope.
    roundtrip = run(
        lambda v, c, s: rlx.RopeBackwardOp(rlx.RopeOp(v, c, s, style), c, s, style),
        x,
        cos,
        sin,
    )
    check_f32(roundtrip, f64(x))


@pytest.mark.parametrize("style", ["half", "interleaved"])
def test_rope_bhds_is_rope_of_the_transpose(style, rng):
    """layout "bhds": x [B, H, D, S] rotated as its transpose [B, H, S, D]
    (the same tables [S, D/2]); the gradient is the vjp of that forward."""
    x = normal(rng, (1, 2, 8, 5))
    theta = rng.uniform(-math.pi, math.pi, (5, 4))
    cos, sin = np.cos(theta).astype(np.float32), np.sin(theta).astype(np.float32)

    def forward64(v: np.ndarray) -> np.ndarray:
        return np.swapaxes(rope64(np.swapaxes(v, 2, 3), cos, sin, style), 2, 3)

    y = run(lambda *a: rlx.RopeOp(*a, style, layout="bhds"), x, cos, sin)
    check_f32(y, forward64(x))
    d_out = normal(rng, x.shape)
    dx = run(lambda *a: rlx.RopeBackwardOp(*a, style, layout="bhds"), d_out, cos, sin)
    check_f32(dx, numeric_vjp(forward64, x, f64(d_out)))


@pytest.mark.parametrize("wrt", [None, "query", "key", "value"])
def test_attention_bhds_is_attention_of_the_transposes(wrt, rng):
    """layout "bhds": q, k, v and the output have D before S; the same
    attention (and gradients) as "bhsd" on the transposes, grouped-query
    and causal included."""
    q, k, v = attention_inputs(rng, h=4, hkv=2, s=5, skv=6, d=8, dv=3)
    t = [np.ascontiguousarray(np.swapaxes(a, 2, 3)) for a in (q, k, v)]
    if wrt is None:
        y = run(lambda *a: rlx.AttentionOp(*a, mask="causal", layout="bhds"), *t)
        check_f32(np.swapaxes(y, 2, 3), attention64(q, k, v, "causal"))
        return
    d_out = normal(rng, (1, 4, 5, 3))
    d_out_t = np.ascontiguousarray(np.swapaxes(d_out, 2, 3))
    grad = run(
        lambda *a: rlx.AttentionBackwardOp(*a, wrt, mask="causal", layout="bhds"),
        *t,
        d_out_t,
    )
    index = {"query": 0, "key": 1, "value": 2}[wrt]
    inputs = [q, k, v]

    def forward(x: np.ndarray) -> np.ndarray:
        args = list(inputs)
        args[index] = x
        return attention64(*args, "causal")

    expected = numeric_vjp(forward, inputs[index], f64(d_out))
    check_f32(np.swapaxes(grad, 2, 3), expected)


# --- RMSNorm ----------------------------------------------------------------------

EPS = 1e-5


def rms_norm64(x: np.ndarray, gamma: np.ndarray) -> np.ndarray:
    x = f64(x)
    return x / np.sqrt(np.mean(x**2, axis=-1, keepdims=True) + EPS) * f64(gamma)


def test_rms_norm_backward_input(rng):
    x, gamma, d_out = normal(rng, (2, 3, 6)), normal(rng, (6,)), normal(rng, (2, 3, 6))
    y = run(lambda *a: rlx.RmsNormBackwardInputOp(*a, EPS), x, gamma, d_out)
    check_f32(y, numeric_vjp(lambda v: rms_norm64(v, gamma), x, f64(d_out)))


def test_rms_norm_backward_gamma_sums_leading_axes(rng):
    x, gamma, d_out = normal(rng, (2, 3, 6)), normal(rng, (6,)), normal(rng, (2, 3, 6))
    y = run(lambda *a: rlx.RmsNormBackwardGammaOp(*a, EPS), x, d_out)
    check_f32(y, numeric_vjp(lambda g: rms_norm64(x, g), gamma, f64(d_out)))


def rms_norm_axis64(x: np.ndarray, gamma: np.ndarray, axis: int) -> np.ndarray:
    x = f64(x)
    return x / np.sqrt(np.mean(x**2, axis=axis, keepdims=True) + EPS) * f64(gamma)


@pytest.mark.parametrize("gamma_shape", [(1, 3, 6, 1), (1, 1, 6, 1), (2, 3, 6, 1)])
def test_rms_norm_over_axis_with_broadcast_gamma(gamma_shape, rng):
    """RMSNorm over axis 2 of [B, H, D, S] with γ per head ([1, H, D, 1]),
    shared ([1, 1, D, 1]) or per batch and head: forward against float64,
    both gradients against finite differences (dγ in γ's own shape)."""
    x, d_out = normal(rng, (2, 3, 6, 4)), normal(rng, (2, 3, 6, 4))
    gamma = normal(rng, gamma_shape)
    y = run(lambda *a: rlx.RmsNormOp(*a, EPS, axis=2), x, gamma)
    check_f32(y, rms_norm_axis64(x, gamma, 2))
    dx = run(lambda *a: rlx.RmsNormBackwardInputOp(*a, EPS, axis=2), x, gamma, d_out)
    check_f32(dx, numeric_vjp(lambda v: rms_norm_axis64(v, gamma, 2), x, f64(d_out)))
    d_gamma = run(
        lambda *a: rlx.RmsNormBackwardGammaOp(*a, EPS, axis=2, gamma_shape=gamma_shape),
        x,
        d_out,
    )
    assert d_gamma.shape == gamma_shape
    expected = numeric_vjp(lambda g: rms_norm_axis64(x, g, 2), gamma, f64(d_out))
    check_f32(d_gamma, expected)


# --- activations ------------------------------------------------------------------

ACTIVATIONS64 = {
    "relu": lambda x: np.maximum(x, 0),
    "silu": lambda x: x / (1 + np.exp(-x)),
    "gelu": lambda x: x * 0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2))),
    "gelu_tanh": lambda x: (
        0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    ),
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "tanh": np.tanh,
}


@pytest.mark.parametrize("kind", ACTIVATIONS64)
def test_activation_backward(kind, rng):
    x = normal(rng, (4, 9), scale=2.5)
    x[np.abs(x) < 1e-3] = 0.5  # relu's kink
    d_out = normal(rng, x.shape)
    y = run(lambda *a: rlx.ActivationBackwardOp(*a, kind), x, d_out)
    check_f32(y, numeric_vjp(ACTIVATIONS64[kind], x, f64(d_out)))


@pytest.mark.parametrize("kind", ACTIVATIONS64)
def test_activation_backward_f16_saturates_without_nan(kind):
    x = np.array([-60000.0, -300.0, -30.0, -1.0, 0.5, 30.0, 300.0, 60000.0], np.float16)
    y = run(lambda *a: rlx.ActivationBackwardOp(*a, kind), x, np.ones_like(x))
    assert y.dtype == np.float16 and np.all(np.isfinite(y))
    expected = numeric_vjp(ACTIVATIONS64[kind], x[3:5], np.ones(2))
    np.testing.assert_allclose(f64(y[3:5]), expected, 1e-2, 1e-2)


# --- quantization -----------------------------------------------------------------


@pytest.mark.parametrize("dtype, element_type", [(np.float32, f32), (np.float16, f16)])
@pytest.mark.parametrize("zero_point", [0, -20, 7])
def test_quantize_dequantize_round_trip(zero_point, dtype, element_type, rng):
    scale = 0.05
    low, high = (-128 - zero_point) * scale, (127 - zero_point) * scale
    x = rng.uniform(low, high, 500).astype(dtype)
    q = run(lambda v: rlx.QuantizeOp(v, scale, zero_point), x)
    assert q.dtype == np.int8
    expected = np.clip(np.rint(f64(x) / scale) + zero_point, -128, 127)
    # f16 computes x / scale in float16 (spacing 1/8 near 128), which may move a
    # value across a rounding boundary.
    np.testing.assert_allclose(q, expected, atol=0 if dtype == np.float32 else 1)
    back = run(lambda v: rlx.DequantizeOp(v, scale, zero_point, element_type), q)
    assert back.dtype == dtype
    # Rounding to the grid errs by at most half a step (plus the f16 rounding of
    # the result).
    slack = 1e-6 if dtype == np.float32 else 2e-3 * max(abs(low), abs(high))
    assert np.max(np.abs(f64(back) - f64(x))) <= scale / 2 + slack


def test_quantize_clamps_outside_the_int8_grid():
    scale, zero_point = 0.1, 10
    x = np.array([-1e6, -14.0, -13.8, 11.7, 11.8, 1e6, np.inf, -np.inf], np.float32)
    q = run(lambda v: rlx.QuantizeOp(v, scale, zero_point), x)
    # x / 0.1 + 10: -1e7, -130, -128, 127, 128, 1e7, inf, -inf
    np.testing.assert_array_equal(
        q, np.array([-128, -128, -128, 127, 127, 127, 127, -128])
    )
    back = run(lambda v: rlx.DequantizeOp(v, scale, zero_point), q)
    check_f32(back, np.array([-13.8, -13.8, -13.8, 11.7, 11.7, 11.7, 11.7, -13.8]))


# Keep the references honest: the float64 forwards agree with the textbook values.
@pytest.mark.parametrize(
    "kind, x, derivative",
    [
        ("relu", [2.0, -2.0], [1.0, 0.0]),
        ("sigmoid", [0.0], [0.25]),
        ("tanh", [0.0], [1.0]),
        ("silu", [0.0], [0.5]),
        (
            "gelu",
            [0.0, 1.0],
            [
                0.5,
                0.5 * (1 + math.erf(2**-0.5)) + math.exp(-0.5) / math.sqrt(2 * math.pi),
            ],
        ),
        ("gelu_tanh", [0.0], [0.5]),
    ],
)
def test_activation_backward_known_values(kind, x, derivative):
    x = np.array(x, np.float32)
    y = run(lambda *a: rlx.ActivationBackwardOp(*a, kind), x, np.ones_like(x))
    check_f32(y, np.array(derivative))

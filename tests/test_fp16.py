"""`mil-fp16` checked by numbers.

rlx programs are lowered with `convert-rlx-to-mil`; the f32 mil program and
its `mil-fp16` version run in the interpreter on the same data (inputs cast
to float16 for the fp16 one, weights kept fp32: the interpreter's weight
store converts them) and their outputs are compared with a norm-relative
error ||a − b|| / ||a|| of at most 1e-2. The edge cases are the ones fp16
breaks: query rows that see no key, −1e9 and −inf masks, tiny epsilons and
softmax cross-entropy over Qwen3's 151936 classes with logits up to ±1e4,
checked against float64 references.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from lowering_cases import build_module, lower, relative_error
from tiny_decoder import TINY_DECODER
from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.dialects.builtin import TensorType, f16, f32, i32
from xdsl.ir import Attribute

from xdsl_ane.dialects import mil, rlx
from xdsl_ane.dialects.dense import dense_from_numpy, dense_to_numpy
from xdsl_ane.dialects.typing import float_prop, tensor
from xdsl_ane.interpreter.core import run_function
from xdsl_ane.models.transformer import (
    QWEN3_0_6B,
    build_decoder_layer,
    make_weights,
)
from xdsl_ane.passes.fp16 import MIN_EPSILON, MilFp16Pass

TOLERANCE = 1e-2
"""Norm-relative error allowed between the f32 and the fp16 program."""

QWEN3_VOCAB = QWEN3_0_6B.vocab_size


def to_fp16(module: builtin.ModuleOp) -> builtin.ModuleOp:
    """A clone of `module` after mil-fp16; it verifies and holds no f32."""
    converted = module.clone()
    MilFp16Pass().apply(Context(), converted)
    converted.verify()
    text = str(converted)
    assert "xf32>" not in text and "<f32>" not in text
    return converted


def run_both(
    module: builtin.ModuleOp,
    inputs: list[np.ndarray],
    weights: dict[str, np.ndarray] | None = None,
) -> tuple[builtin.ModuleOp, list[np.ndarray], list[np.ndarray]]:
    """Lowers `module`, runs the f32 mil program and its fp16 version (float
    inputs cast to float16) and returns (fp16 module, f32 outputs, fp16
    outputs); every fp16 float output is float16 and finite."""
    lowered = lower(module)
    half = to_fp16(lowered)
    inputs16 = [x.astype(np.float16) if x.dtype == np.float32 else x for x in inputs]
    expected = run_function(lowered, inputs, weights)
    actual = run_function(half, inputs16, weights)
    for e, a in zip(expected, actual):
        if e.dtype == np.float32:
            assert a.dtype == np.float16
            assert np.all(np.isfinite(a)), "the fp16 program produced inf or NaN"
    return half, expected, actual


def fp16_exact(rng: np.random.Generator, shape: tuple[int, ...], scale=1.0):
    """float32 values that float16 holds exactly, so both programs see the
    same inputs."""
    values = scale * rng.standard_normal(shape)
    return values.astype(np.float16).astype(np.float32)


def inline_consts(module: builtin.ModuleOp) -> list[np.ndarray]:
    return [
        dense_to_numpy(op.val)
        for op in module.walk()
        if isinstance(op, mil.ConstOp) and op.val is not None
    ]


# --- a Qwen3-style decoder layer ------------------------------------------------


def decoder_weights(module: builtin.ModuleOp) -> dict[str, np.ndarray]:
    """make_weights with projections scaled from N(0, 0.02²) to N(0, 0.1²), so
    that the layer's contribution is not lost next to its residual."""
    weights = make_weights(module, TINY_DECODER)
    return {k: v * 5 if "proj" in k else v for k, v in weights.items()}


def test_decoder_layer_by_numbers():
    module = build_decoder_layer(TINY_DECODER)
    weights = decoder_weights(module)
    x = fp16_exact(
        np.random.default_rng(0), (1, TINY_DECODER.seq_len, TINY_DECODER.hidden_size)
    )
    half, (expected,), (actual,) = run_both(module, [x], weights)
    assert relative_error(expected, actual) < TOLERANCE
    # the layer's own contribution, residual removed
    assert relative_error(expected - x, actual - x) < TOLERANCE
    # RMSNorm's eps (1e-6 in the config) is kept, not raised to 1e-7
    epsilons = [
        float_prop(op.properties, "epsilon")
        for op in half.walk()
        if isinstance(op, mil.RsqrtOp)
    ]
    assert epsilons and all(e == pytest.approx(TINY_DECODER.rms_eps) for e in epsilons)


def test_weights_file_stays_fp32():
    """Weight consts only change their declared type; the fp32 weights are
    converted when read."""
    module = build_decoder_layer(TINY_DECODER)
    half = to_fp16(lower(module))
    declared = [
        op.result.type
        for op in half.walk()
        if isinstance(op, mil.ConstOp) and op.weight is not None
    ]
    assert declared and all(
        isinstance(t, TensorType) and t.element_type == f16 for t in declared
    )
    assert all(
        w.dtype == np.float32 for w in make_weights(module, TINY_DECODER).values()
    )


def test_pass_is_idempotent():
    half = to_fp16(lower(build_decoder_layer(TINY_DECODER)))
    assert str(to_fp16(half)) == str(half)


# --- a training head: vocabulary logits and softmax cross-entropy --------------


def training_head(vocab: int) -> builtin.ModuleOp:
    """(h [S, hidden], labels [S], d_loss [S]) -> (loss [S], d_logits [S, V])
    with logits = h·Wᵀ, W the [V, hidden] param "lm_head.weight"."""
    s, d = TINY_DECODER.seq_len, TINY_DECODER.hidden_size

    def body(h, labels, d_loss):
        w = rlx.ParamOp("lm_head.weight", tensor((vocab, d), f32))
        logits = rlx.MatmulOp(h, w, transpose_rhs=True)
        return [
            rlx.SoftmaxCrossEntropyOp(logits, labels),
            rlx.SoftmaxCrossEntropyBackwardOp(logits, labels, d_loss),
        ]

    types = [tensor((s, d), f32), tensor((s,), i32), tensor((s,), f32)]
    return build_module(types, body, "training_head")


def test_training_head_by_numbers():
    vocab = 512
    rng = np.random.default_rng(1)
    s, d = TINY_DECODER.seq_len, TINY_DECODER.hidden_size
    weights = {"lm_head.weight": (0.3 * rng.standard_normal((vocab, d))).astype("f4")}
    inputs = [
        fp16_exact(rng, (s, d)),
        rng.integers(0, vocab, s).astype(np.int32),
        fp16_exact(rng, (s,)),
    ]
    _, expected, actual = run_both(training_head(vocab), inputs, weights)
    for e, a in zip(expected, actual):
        assert relative_error(e, a) < TOLERANCE


# --- softmax cross-entropy over 151936 classes ----------------------------------


def cross_entropy_module(classes: int, float_type: Attribute) -> builtin.ModuleOp:
    """(logits [2, C], labels [2], d_loss [2]) -> (loss, d_logits)."""
    types = [tensor((2, classes), float_type), tensor((2,), i32)]
    types.append(tensor((2,), float_type))
    return build_module(
        types,
        lambda x, labels, d: [
            rlx.SoftmaxCrossEntropyOp(x, labels),
            rlx.SoftmaxCrossEntropyBackwardOp(x, labels, d),
        ],
    )


def cross_entropy_reference(
    logits: np.ndarray, labels: np.ndarray, d_loss: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Loss and d_logits in float64."""
    x = logits.astype(np.float64)
    m = x.max(axis=-1, keepdims=True)
    e = np.exp(x - m)
    lse = np.log(e.sum(axis=-1)) + m[:, 0]
    rows = np.arange(len(labels))
    loss = lse - x[rows, labels]
    softmax = e / e.sum(axis=-1, keepdims=True)
    softmax[rows, labels] -= 1
    return loss, softmax * d_loss[:, None].astype(np.float64)


def large_logits(kind: str, rng: np.random.Generator) -> np.ndarray:
    shape = (2, QWEN3_VOCAB)
    if kind == "ties_at_1e4":  # ±1e4: ~76000 classes tie for the maximum
        return 1e4 * rng.choice([-1.0, 1.0], shape)
    if kind == "uniform_1e4":
        return rng.uniform(-1e4, 1e4, shape)
    # an untrained model: logits near 0, Σ exp ≈ 151936 > 65504
    return 0.1 * rng.standard_normal(shape)


@pytest.mark.parametrize("kind", ["ties_at_1e4", "uniform_1e4", "near_zero"])
def test_cross_entropy_qwen3_vocabulary(kind: str):
    rng = np.random.default_rng(2)
    logits = large_logits(kind, rng).astype(np.float16)
    labels = rng.integers(0, QWEN3_VOCAB, 2).astype(np.int32)
    labels[0] = int(np.argmax(logits[0]))  # one loss near 0, one large
    d_loss = np.array([1.0, 0.5], np.float16)
    half = to_fp16(lower(cross_entropy_module(QWEN3_VOCAB, f32)))
    loss, d_logits = run_function(half, [logits, labels, d_loss])
    ref_loss, ref_d_logits = cross_entropy_reference(logits, labels, d_loss)
    assert loss.dtype == d_logits.dtype == np.float16
    assert np.all(np.isfinite(loss)) and np.all(np.isfinite(d_logits))
    # loss = logsumexp − picked, and logsumexp is rounded at the magnitude of
    # the largest logit: fp16 precision is one ulp there (8 at 1e4)
    magnitude = np.maximum(np.abs(logits).max(axis=-1), np.abs(ref_loss))
    ulp = np.spacing(magnitude.astype(np.float16)).astype(np.float64)
    assert np.all(np.abs(loss - ref_loss) <= ulp + 1e-2 * np.abs(ref_loss))
    # The one-hot term dominates the norm; the test below checks the other
    # classes' probabilities one by one.
    assert relative_error(ref_d_logits, d_logits) < TOLERANCE


def test_cross_entropy_gradient_per_class():
    """Near-uniform probabilities over the Qwen3 vocabulary (≈ 6.6e-6, fp16
    subnormals) should survive in d_logits class by class; a softmax that
    accumulates its sum in float32 gives them within 5%."""
    rng = np.random.default_rng(2)
    logits = large_logits("near_zero", rng).astype(np.float16)
    labels = rng.integers(0, QWEN3_VOCAB, 2).astype(np.int32)
    d_loss = np.array([1.0, 0.5], np.float16)
    half = to_fp16(lower(cross_entropy_module(QWEN3_VOCAB, f32)))
    d_logits = run_function(half, [logits, labels, d_loss])[1]
    expected = cross_entropy_reference(logits, labels, d_loss)[1]
    np.testing.assert_allclose(d_logits, expected, rtol=5e-2, atol=1e-7)


def test_cross_entropy_overflows_without_the_rewrite():
    """The lowering computed directly in fp16 sums 151936 values near 1 to inf;
    after mil-fp16 the loss is log(151936) ≈ 11.93."""
    logits = np.zeros((2, QWEN3_VOCAB), np.float16)
    labels = np.array([0, 7], np.int32)
    d_loss = np.ones(2, np.float16)
    direct = lower(cross_entropy_module(QWEN3_VOCAB, f16))
    assert np.all(np.isinf(run_function(direct, [logits, labels, d_loss])[0]))
    half = to_fp16(lower(cross_entropy_module(QWEN3_VOCAB, f32)))
    loss = run_function(half, [logits, labels, d_loss])[0]
    np.testing.assert_allclose(loss, math.log(QWEN3_VOCAB), atol=2e-2)


# --- attention masks --------------------------------------------------------------


def test_attention_rows_that_see_no_key():
    """Causal attention with 6 queries over 4 keys: query rows 0 and 1 see
    no key and are zero; grouped-query heads (4 over 2)."""
    rng = np.random.default_rng(3)
    shapes = [(1, 4, 6, 16), (1, 2, 4, 16), (1, 2, 4, 16)]
    module = build_module(
        [tensor(s, f32) for s in shapes],
        lambda q, k, v: rlx.AttentionOp(q, k, v, mask="causal"),
    )
    inputs = [fp16_exact(rng, s) for s in shapes]
    half, (expected,), (actual,) = run_both(module, inputs)
    assert relative_error(expected, actual) < TOLERANCE
    assert np.all(actual[:, :, :2] == 0)
    for value in inline_consts(half):
        assert np.all(np.isfinite(value)) and np.all(value >= -1e4)


@pytest.mark.parametrize("masked", [-1e9, -np.inf, float(np.finfo(np.float32).min)])
def test_attention_bias_masks(masked: float):
    """Two additive masks of −∞-like values: in fp16 each becomes −1e4, so
    their sum (−2e4) and the scores stay finite and masked keys get 0."""
    rng = np.random.default_rng(4)
    causal = np.triu(np.full((5, 5), masked), k=1)
    padding = np.zeros((1, 1, 1, 5))
    padding[..., 4] = masked  # the last key is padding
    shape = (1, 2, 5, 8)

    def body(q, k, v):
        a = rlx.ConstantOp(dense_from_numpy(causal, f32))
        b = rlx.ConstantOp(dense_from_numpy(padding, f32))
        return rlx.AttentionOp(q, k, v, bias=rlx.AddOp(a, b))

    module = build_module([tensor(shape, f32)] * 3, body)
    inputs = [fp16_exact(rng, shape) for _ in range(3)]
    half, (expected,), (actual,) = run_both(module, inputs)
    assert relative_error(expected, actual) < TOLERANCE
    for value in inline_consts(half):
        assert np.all(np.isfinite(value)) and np.all(value >= -1e4)


# --- epsilons ------------------------------------------------------------------------


def test_rms_norm_eps_1e_6_on_tiny_rows():
    """RMSNorm with eps 1e-6 keeps its epsilon; a row of zeros stays 0 and a
    row of tiny values is normalized like in f32."""
    rng = np.random.default_rng(5)
    x = fp16_exact(rng, (3, 64))
    x[1] = 0
    x[2] = (1e-3 * x[2]).astype(np.float16)
    gamma = fp16_exact(rng, (64,))
    module = build_module(
        [tensor((3, 64), f32), tensor((64,), f32)],
        lambda x, g: rlx.RmsNormOp(x, g, 1e-6),
    )
    _, (expected,), (actual,) = run_both(module, [x, gamma])
    assert np.all(actual[1] == 0)
    for row in (0, 2):
        assert relative_error(expected[row], actual[row]) < TOLERANCE


def test_rms_norm_backward_on_tiny_rows():
    """The RMSNorm input gradient of rows near zero (r ≈ 1/sqrt(eps) = 1000)
    stays finite in fp16: the lowering avoids r², which would overflow."""
    rng = np.random.default_rng(6)
    x = fp16_exact(rng, (3, 64))
    x[1] = 0
    x[2] = (1e-4 * x[2]).astype(np.float16)
    gamma = fp16_exact(rng, (64,))
    dy = fp16_exact(rng, (3, 64))
    module = build_module(
        [tensor((3, 64), f32), tensor((64,), f32), tensor((3, 64), f32)],
        lambda x, g, dy: rlx.RmsNormBackwardInputOp(x, g, dy, 1e-6),
    )
    _, (expected,), (actual,) = run_both(module, [x, gamma, dy])
    for row in range(3):
        assert relative_error(expected[row], actual[row]) < TOLERANCE


def test_log_without_epsilon():
    """rlx.log lowers to MIL log(x, 1e-45), which rounds to log(x + 0) in
    fp16; mil-fp16 raises the epsilon to 1e-7: log(0) is finite and positive
    inputs are unchanged."""
    x = np.array([[0.0, 1e-4, 0.5, 3.0, 6e4]], np.float32)
    module = build_module([tensor((1, 5), f32)], lambda x: rlx.LogOp(x))
    half, (expected,), (actual,) = run_both(module, [x])
    np.testing.assert_allclose(actual[0, 1:], expected[0, 1:], rtol=1e-3)
    assert actual[0, 0] == pytest.approx(math.log(np.float16(MIN_EPSILON)), abs=1e-2)


# --- quantization ---------------------------------------------------------------------


def test_quantize_dequantize():
    rng = np.random.default_rng(6)
    x = fp16_exact(rng, (4, 8))
    module = build_module(
        [tensor((4, 8), f32)],
        lambda x: rlx.DequantizeOp(rlx.QuantizeOp(x, 0.05, 3), 0.05, 3),
    )
    _, (expected,), (actual,) = run_both(module, [x])
    assert relative_error(expected, actual) < TOLERANCE


# --- consts ------------------------------------------------------------------------------


def test_infinite_consts_saturate():
    """±inf in an inline const (f32 or f16), and f32 stand-ins for it
    (1e9 and beyond), saturate at ±65504: the fp16 program holds no inf.
    (A finite value fp16 cannot hold is refused: test_fp16_range.py.)"""
    values32 = np.array([np.inf, -np.inf, 1e9, 0.5])
    values16 = np.array([np.inf, -np.inf, 2.0, 0.5])

    def body(x):
        a = rlx.ConstantOp(dense_from_numpy(values32, f32))
        b = rlx.ConstantOp(dense_from_numpy(values16, f16))
        return rlx.MinOp(rlx.MulOp(x, a), rlx.CastOp(b, f32))

    module = build_module([tensor((4,), f32)], body)
    consts = inline_consts(to_fp16(lower(module)))
    assert all(np.all(np.isfinite(c)) for c in consts)
    for expected in ([65504, -65504, 65504, 0.5], [65504, -65504, 2, 0.5]):
        assert any(np.array_equal(c, np.float16(expected)) for c in consts)

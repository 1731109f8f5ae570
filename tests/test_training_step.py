"""A whole training step from the compiled kernels, checked three ways.

A small model of Qwen3's shape family (2 layers, grouped-query heads 2:1,
QK-norm, vocabulary 1000 in three chunks, sequence 32) runs one step through
`TrainingRuntime`: the kernels compiled with dynamic weights and packed I/O,
fed and read by their manifests, run in the interpreter. Then

- the loss equals the rlx model's (the config-driven decoder stack, final
  norm, lm_head and mean softmax cross-entropy, interpreted);
- every weight gradient equals the one of a monolithic rlx program of the
  forward and backward ops (rlx.attention_backward, rms_norm_backward_*,
  rope_backward, activation_backward, softmax_cross_entropy_backward,
  matmuls), interpreted;
- every weight gradient passes a directional-derivative check: central
  differences along random directions of an independent float64 numpy
  forward written here from Hugging Face's Qwen3 code.

fp32 kernels for the tight checks; one fp16 run for the loss.
"""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import builtin
from xdsl.dialects.builtin import f32, i32
from xdsl.ir import SSAValue

from xdsl_ane.dialects import rlx
from xdsl_ane.dialects.dense import dense_from_numpy
from xdsl_ane.dialects.functions import build_function
from xdsl_ane.dialects.typing import tensor
from xdsl_ane.interpreter.core import run_function
from xdsl_ane.models.configs import QWEN3_0_6B, LlmConfig
from xdsl_ane.models.kernels import compile_training_kernels
from xdsl_ane.models.rope import rope_tables
from xdsl_ane.models.runtime import TrainingRuntime
from xdsl_ane.models.transformer import stateless_builder

# Qwen3-0.6B-size kernels and training steps: -m 'not slow' skips them.
pytestmark = pytest.mark.slow

SMALL = QWEN3_0_6B.with_(
    hidden_size=64,
    num_heads=4,
    num_kv_heads=2,
    head_dim=32,
    ffn_size=128,
    num_layers=2,
    vocab_size=1000,
    seq_len=32,
)
VOCAB_CHUNK = 384
"""Chunks of 384, 384 and 232 classes: both classifier kernel sizes and the
cross-chunk logsumexp are exercised."""


def layer_shapes(c: LlmConfig) -> dict[str, tuple[int, ...]]:
    shapes = {
        "input_layernorm.weight": (c.hidden_size,),
        "self_attn.q_proj.weight": (c.q_dim, c.hidden_size),
        "self_attn.k_proj.weight": (c.kv_dim, c.hidden_size),
        "self_attn.v_proj.weight": (c.kv_dim, c.hidden_size),
        "self_attn.q_norm.weight": (c.head_dim,),
        "self_attn.k_norm.weight": (c.head_dim,),
        "self_attn.o_proj.weight": (c.hidden_size, c.q_dim),
        "post_attention_layernorm.weight": (c.hidden_size,),
        "mlp.gate_proj.weight": (c.ffn_size, c.hidden_size),
        "mlp.up_proj.weight": (c.ffn_size, c.hidden_size),
        "mlp.down_proj.weight": (c.hidden_size, c.ffn_size),
    }
    if not c.family.qk_norm:
        del shapes["self_attn.q_norm.weight"], shapes["self_attn.k_norm.weight"]
    return shapes


def weight_shapes(c: LlmConfig) -> dict[str, tuple[int, ...]]:
    """Every trainable weight, Hugging Face names without `model.`."""
    shapes = {"embed_tokens.weight": (c.vocab_size, c.hidden_size)}
    for layer in range(c.num_layers):
        for name, shape in layer_shapes(c).items():
            shapes[f"layers.{layer}.{name}"] = shape
    shapes["norm.weight"] = (c.hidden_size,)
    shapes["lm_head.weight"] = (c.vocab_size, c.hidden_size)
    return shapes


def make_model_weights(c: LlmConfig, seed: int = 0) -> dict[str, np.ndarray]:
    """Norm scales near 1, matrices N(0, 1/in) so that attention is far from
    uniform and the logits spread; RoPE tables from the config."""
    rng = np.random.default_rng(seed)
    weights = {}
    for name, shape in weight_shapes(c).items():
        if len(shape) == 1:
            value = 1.0 + 0.1 * rng.standard_normal(shape)
        elif name == "embed_tokens.weight":
            value = rng.standard_normal(shape)
        else:
            value = rng.standard_normal(shape) / np.sqrt(shape[1])
        weights[name] = value.astype(np.float32)
    weights["rope.cos"], weights["rope.sin"] = rope_tables(c, c.seq_len)
    return weights


def make_batch(c: LlmConfig, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    tokens = rng.integers(0, c.vocab_size, c.seq_len + 1)
    return tokens[:-1], tokens[1:]


# --- float64 numpy reference (Hugging Face Qwen3) ------------------------------------


def rms_norm64(x: np.ndarray, gamma: np.ndarray, eps: float) -> np.ndarray:
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * gamma


def rope64(x: np.ndarray, cos: np.ndarray, sin: np.ndarray, style: str) -> np.ndarray:
    """ "half": x·cos + rotate_half(x)·sin, cos/sin [S, D/2] duplicated to
    [S, D] (Hugging Face); "interleaved": each pair (x[2i], x[2i+1]) rotated
    by θ_i (GPT-J)."""
    if style == "interleaved":
        even, odd = x[..., 0::2], x[..., 1::2]
        out = np.empty_like(x)
        out[..., 0::2] = even * cos - odd * sin
        out[..., 1::2] = even * sin + odd * cos
        return out
    cos, sin = np.concatenate([cos, cos], -1), np.concatenate([sin, sin], -1)
    half = x.shape[-1] // 2
    return x * cos + np.concatenate([-x[..., half:], x[..., :half]], -1) * sin


def loss64(
    w: dict[str, np.ndarray],
    tokens: np.ndarray,
    labels: np.ndarray,
    c: LlmConfig,
) -> float:
    """Qwen3ForCausalLM's mean cross-entropy in float64."""
    p = {k: v.astype(np.float64) for k, v in w.items()}
    s, h, hkv, d, eps = c.seq_len, c.num_heads, c.num_kv_heads, c.head_dim, c.rms_eps
    causal = np.tril(np.ones((s, s), bool))
    x = p["embed_tokens.weight"][tokens]
    for layer in range(c.num_layers):
        pre = f"layers.{layer}."

        def heads(t: np.ndarray, n: int) -> np.ndarray:
            return t.reshape(s, n, d).transpose(1, 0, 2)

        a = rms_norm64(x, p[pre + "input_layernorm.weight"], eps)
        q = heads(a @ p[pre + "self_attn.q_proj.weight"].T, h)
        k = heads(a @ p[pre + "self_attn.k_proj.weight"].T, hkv)
        v = heads(a @ p[pre + "self_attn.v_proj.weight"].T, hkv)
        if c.family.qk_norm:
            q = rms_norm64(q, p[pre + "self_attn.q_norm.weight"], eps)
            k = rms_norm64(k, p[pre + "self_attn.k_norm.weight"], eps)
        q = rope64(q, p["rope.cos"], p["rope.sin"], c.family.rope_style)
        k = rope64(k, p["rope.cos"], p["rope.sin"], c.family.rope_style)
        k, v = np.repeat(k, h // hkv, axis=0), np.repeat(v, h // hkv, axis=0)
        scores = np.where(causal, q @ k.transpose(0, 2, 1) * d**-0.5, -np.inf)
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        o = (probs @ v).transpose(1, 0, 2).reshape(s, h * d)
        x = x + o @ p[pre + "self_attn.o_proj.weight"].T
        m = rms_norm64(x, p[pre + "post_attention_layernorm.weight"], eps)
        gate = m @ p[pre + "mlp.gate_proj.weight"].T
        up = m @ p[pre + "mlp.up_proj.weight"].T
        x = x + (gate / (1 + np.exp(-gate)) * up) @ p[pre + "mlp.down_proj.weight"].T
    classifier = p.get("lm_head.weight", p["embed_tokens.weight"])
    logits = rms_norm64(x, p["norm.weight"], eps) @ classifier.T
    top = logits.max(-1, keepdims=True)
    lse = np.log(np.exp(logits - top).sum(-1)) + top[:, 0]
    return float(np.mean(lse - logits[np.arange(s), labels]))


# --- rlx programs ------------------------------------------------------------------------


def constant(value: np.ndarray) -> SSAValue:
    return rlx.ConstantOp(dense_from_numpy(value, f32)).result


def build_model_loss(c: LlmConfig) -> builtin.ModuleOp:
    """`loss(x: [1, S, D] embeddings, labels: [S]) -> []`: the config-driven
    decoder (the one builder, stateless), the final norm, lm_head, mean
    cross-entropy."""

    def body(x: SSAValue, labels: SSAValue) -> list[SSAValue]:
        b = stateless_builder(c)
        h = rlx.ReshapeOp(b.final_norm(b.stack(x)), (c.seq_len, c.hidden_size))
        head = b.param("lm_head.weight", (c.vocab_size, c.hidden_size))
        logits = rlx.MatmulOp(h.result, head, transpose_rhs=True).result
        rows = rlx.SoftmaxCrossEntropyOp(logits, labels).result
        return [rlx.ReduceMeanOp(rows, (0,)).result]

    types = [tensor((1, c.seq_len, c.hidden_size), f32), tensor((c.seq_len,), i32)]
    return builtin.ModuleOp([build_function("loss", types, body, ["x", "labels"])])


class MonolithicStep:
    """Forward and backward of the whole model as one rlx function
    `step(x0: [S, D], labels: [S]) -> (loss, dx0, gradients...)`, built from
    rlx's forward and backward ops in the standard [1, H, S, Dh] head form."""

    def __init__(self, c: LlmConfig):
        self.c = c
        self.names = [n for n in weight_shapes(c) if n != "embed_tokens.weight"]

    def param(self, name: str) -> SSAValue:
        shape = weight_shapes(self.c).get(name) or (
            self.c.seq_len,
            self.c.head_dim // 2,
        )
        return rlx.ParamOp(name, tensor(shape, f32)).result

    def linear(self, x: SSAValue, name: str) -> SSAValue:
        return rlx.MatmulOp(x, self.param(name), transpose_rhs=True).result

    def back(self, dy: SSAValue, name: str) -> SSAValue:
        return rlx.MatmulOp(dy, self.param(name)).result

    @staticmethod
    def grad_w(dy: SSAValue, x: SSAValue) -> SSAValue:
        return rlx.MatmulOp(dy, x, transpose_lhs=True).result

    def split(self, x: SSAValue, n: int) -> SSAValue:
        x = rlx.ReshapeOp(x, (1, self.c.seq_len, n, self.c.head_dim)).result
        return rlx.TransposeOp(x, (0, 2, 1, 3)).result

    def merge(self, x: SSAValue) -> SSAValue:
        _, n, s, d = x.type.get_shape()  # type: ignore[attr-defined]
        x = rlx.TransposeOp(x, (0, 2, 1, 3)).result
        return rlx.ReshapeOp(x, (s, n * d)).result

    def build(self) -> builtin.ModuleOp:
        c = self.c
        types = [tensor((c.seq_len, c.hidden_size), f32), tensor((c.seq_len,), i32)]
        function = build_function("step", types, self.body, ["x0", "labels"])
        return builtin.ModuleOp([function])

    def body(self, x: SSAValue, labels: SSAValue) -> list[SSAValue]:
        c, eps = self.c, self.c.rms_eps
        cos, sin = self.param("rope.cos"), self.param("rope.sin")
        saved = []
        for layer in range(c.num_layers):
            p = f"layers.{layer}."
            h1 = rlx.RmsNormOp(x, self.param(p + "input_layernorm.weight"), eps).result
            q4 = self.split(self.linear(h1, p + "self_attn.q_proj.weight"), c.num_heads)
            k4 = self.split(
                self.linear(h1, p + "self_attn.k_proj.weight"), c.num_kv_heads
            )
            v4 = self.split(
                self.linear(h1, p + "self_attn.v_proj.weight"), c.num_kv_heads
            )
            qn = rlx.RmsNormOp(
                q4, self.param(p + "self_attn.q_norm.weight"), eps
            ).result
            kn = rlx.RmsNormOp(
                k4, self.param(p + "self_attn.k_norm.weight"), eps
            ).result
            qr = rlx.RopeOp(qn, cos, sin, c.family.rope_style).result
            kr = rlx.RopeOp(kn, cos, sin, c.family.rope_style).result
            attn = self.merge(rlx.AttentionOp(qr, kr, v4, mask="causal").result)
            x2 = rlx.AddOp(x, self.linear(attn, p + "self_attn.o_proj.weight")).result
            g_post = self.param(p + "post_attention_layernorm.weight")
            h2 = rlx.RmsNormOp(x2, g_post, eps).result
            gate = self.linear(h2, p + "mlp.gate_proj.weight")
            up = self.linear(h2, p + "mlp.up_proj.weight")
            act = rlx.MulOp(rlx.SiluOp(gate).result, up).result
            out = rlx.AddOp(x2, self.linear(act, p + "mlp.down_proj.weight")).result
            saved.append((x, h1, q4, k4, v4, qr, kr, attn, x2, h2, gate, up, act))
            x = out
        hf = rlx.RmsNormOp(x, self.param("norm.weight"), eps).result
        logits = self.linear(hf, "lm_head.weight")
        loss = rlx.ReduceMeanOp(rlx.SoftmaxCrossEntropyOp(logits, labels).result, (0,))

        grads: dict[str, SSAValue] = {}
        d_loss = constant(np.full(c.seq_len, 1.0 / c.seq_len, np.float32))
        d_logits = rlx.SoftmaxCrossEntropyBackwardOp(logits, labels, d_loss).result
        grads["lm_head.weight"] = self.grad_w(d_logits, hf)
        dh = self.back(d_logits, "lm_head.weight")
        grads["norm.weight"] = rlx.RmsNormBackwardGammaOp(x, dh, eps).result
        dx = rlx.RmsNormBackwardInputOp(x, self.param("norm.weight"), dh, eps).result
        for layer in reversed(range(c.num_layers)):
            p = f"layers.{layer}."
            x, h1, q4, k4, v4, qr, kr, attn, x2, h2, gate, up, act = saved[layer]
            grads[p + "mlp.down_proj.weight"] = self.grad_w(dx, act)
            d_act = self.back(dx, p + "mlp.down_proj.weight")
            d_silu = rlx.MulOp(d_act, up).result
            d_gate = rlx.ActivationBackwardOp(gate, d_silu, "silu").result
            d_up = rlx.MulOp(d_act, rlx.SiluOp(gate).result).result
            grads[p + "mlp.gate_proj.weight"] = self.grad_w(d_gate, h2)
            grads[p + "mlp.up_proj.weight"] = self.grad_w(d_up, h2)
            dh2 = rlx.AddOp(
                self.back(d_gate, p + "mlp.gate_proj.weight"),
                self.back(d_up, p + "mlp.up_proj.weight"),
            ).result
            g_post = p + "post_attention_layernorm.weight"
            grads[g_post] = rlx.RmsNormBackwardGammaOp(x2, dh2, eps).result
            dx2 = rlx.AddOp(
                dx, rlx.RmsNormBackwardInputOp(x2, self.param(g_post), dh2, eps).result
            ).result
            grads[p + "self_attn.o_proj.weight"] = self.grad_w(dx2, attn)
            d_attn = self.split(
                self.back(dx2, p + "self_attn.o_proj.weight"), c.num_heads
            )
            d_qkv = [
                rlx.AttentionBackwardOp(qr, kr, v4, d_attn, wrt, mask="causal").result
                for wrt in ("query", "key", "value")
            ]
            d_inputs = {}
            for name, d_rot, pre in (("q", d_qkv[0], q4), ("k", d_qkv[1], k4)):
                d_normed = rlx.RopeBackwardOp(
                    d_rot, cos, sin, c.family.rope_style
                ).result
                gamma = p + f"self_attn.{name}_norm.weight"
                grads[gamma] = rlx.RmsNormBackwardGammaOp(pre, d_normed, eps).result
                d_inputs[name] = self.merge(
                    rlx.RmsNormBackwardInputOp(
                        pre, self.param(gamma), d_normed, eps
                    ).result
                )
            d_inputs["v"] = self.merge(d_qkv[2])
            dh1 = None
            for name, d in d_inputs.items():
                weight = p + f"self_attn.{name}_proj.weight"
                grads[weight] = self.grad_w(d, h1)
                term = self.back(d, weight)
                dh1 = term if dh1 is None else rlx.AddOp(dh1, term).result
            assert dh1 is not None
            g_in = p + "input_layernorm.weight"
            grads[g_in] = rlx.RmsNormBackwardGammaOp(x, dh1, eps).result
            dx = rlx.AddOp(
                dx2, rlx.RmsNormBackwardInputOp(x, self.param(g_in), dh1, eps).result
            ).result
        return [loss.result, dx] + [grads[name] for name in self.names]


# --- the checks ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def model():
    weights = make_model_weights(SMALL)
    tokens, labels = make_batch(SMALL)
    return weights, tokens, labels


@pytest.fixture(scope="module")
def fp32_step(model):
    weights, tokens, labels = model
    kernels = compile_training_kernels(SMALL, fp16=False, vocab_chunk=VOCAB_CHUNK)
    runtime = TrainingRuntime(SMALL, weights, kernels)
    return runtime.step(tokens, labels)


def relative(expected: float, actual: float) -> float:
    return abs(actual - expected) / abs(expected)


def test_loss_equals_rlx_model(model, fp32_step):
    weights, tokens, labels = model
    loss, _ = fp32_step
    module = build_model_loss(SMALL)
    x = weights["embed_tokens.weight"][tokens][None]
    (expected,) = run_function(module, [x, labels.astype(np.int32)], weights)
    assert relative(float(expected), loss) < 1e-5
    assert relative(loss64(weights, tokens, labels, SMALL), loss) < 1e-5


def test_gradients_equal_monolithic_rlx(model, fp32_step):
    weights, tokens, labels = model
    loss, grads = fp32_step
    step = MonolithicStep(SMALL)
    x0 = weights["embed_tokens.weight"][tokens]
    loss_rlx, dx0, *expected = run_function(
        step.build(), [x0, labels.astype(np.int32)], weights
    )
    assert relative(float(loss_rlx), loss) < 1e-5
    d_embed = np.zeros_like(weights["embed_tokens.weight"])
    np.add.at(d_embed, tokens, dx0)
    assert set(grads) == set(weight_shapes(SMALL))
    for name, e in zip(["embed_tokens.weight", *step.names], [d_embed, *expected]):
        a = grads[name]
        assert a.shape == e.shape, name
        error = np.linalg.norm(a - e) / np.linalg.norm(e)
        assert error < 1e-4, f"{name}: relative error {error:.2e}"


def check_directional_derivatives(
    config: LlmConfig,
    weights: dict[str, np.ndarray],
    tokens: np.ndarray,
    labels: np.ndarray,
    grads: dict[str, np.ndarray],
) -> None:
    """Σ ∇W·U against (L(W + εU) − L(W − εU)) / 2ε of the float64 model,
    one random direction per weight and one along all weights at once."""
    rng = np.random.default_rng(2)
    names = [name for name in weights if not name.startswith("rope.")]
    assert set(grads) == set(names)
    base = {k: v.astype(np.float64) for k, v in weights.items()}

    def check(direction: dict[str, np.ndarray], what: str) -> None:
        eps = 1e-4
        plus = {k: v + eps * direction.get(k, 0) for k, v in base.items()}
        minus = {k: v - eps * direction.get(k, 0) for k, v in base.items()}
        difference = loss64(plus, tokens, labels, config) - loss64(
            minus, tokens, labels, config
        )
        numeric = difference / (2 * eps)
        analytic = sum(float(np.sum(grads[k] * u)) for k, u in direction.items())
        assert abs(numeric - analytic) <= 1e-3 * abs(numeric) + 1e-9, (
            f"{what}: numeric {numeric:.6e}, gradient {analytic:.6e}"
        )

    for name in names:
        check({name: rng.standard_normal(base[name].shape)}, name)
    check({n: rng.standard_normal(base[n].shape) for n in names}, "all weights")


def test_gradients_directional_derivatives(model, fp32_step):
    weights, tokens, labels = model
    check_directional_derivatives(SMALL, weights, tokens, labels, fp32_step[1])


def test_step_without_gqa_and_qk_norm_interleaved_rope():
    """The runtime's other paths: as many key/value heads as query heads (no
    gqa_reduce), no QK-norm, interleaved RoPE, a single vocabulary chunk, the
    classifier tied to the embedding."""
    config = SMALL.with_(num_kv_heads=4, qk_norm=False, rope_style="interleaved")
    weights = make_model_weights(config, seed=3)
    del weights["lm_head.weight"]
    tokens, labels = make_batch(config, seed=4)
    kernels = compile_training_kernels(config, fp16=False)
    assert "gqa_reduce" not in kernels and "classifier_forward_last" not in kernels
    loss, grads = TrainingRuntime(config, weights, kernels).step(tokens, labels)
    assert relative(loss64(weights, tokens, labels, config), loss) < 1e-5
    check_directional_derivatives(config, weights, tokens, labels, grads)


def test_fp16_step(model, fp32_step):
    """fp16 kernels: the loss within 1e-2, the gradients (loss-scaled by S)
    within a few 1e-3 of the fp32 ones (relative norms)."""
    weights, tokens, labels = model
    kernels = compile_training_kernels(SMALL, fp16=True, vocab_chunk=VOCAB_CHUNK)
    runtime = TrainingRuntime(SMALL, weights, kernels, loss_scale=SMALL.seq_len)
    loss, grads = runtime.step(tokens, labels)
    assert relative(loss64(weights, tokens, labels, SMALL), loss) < 1e-2
    for name, reference in fp32_step[1].items():
        error = np.linalg.norm(grads[name] - reference) / np.linalg.norm(reference)
        assert error < 2e-2, f"{name}: relative error {error:.2e}"

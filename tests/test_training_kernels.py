"""The training kernels one by one: every kernel of the set compiles for the
real Qwen3-0.6B config (sequence 256, vocabulary 151936 in chunks) into ANE
form with one fp16 input and one fp16 output, without lint findings, and
with at most the hand-written reference's op count; each kernel's rlx
function and its compiled form agree on the same data (f32, real size and
small variants); the head forms the kernels use (heads as [1, H, Dh, S],
RoPE on it, the grouped-query repeat and reduction) match rlx's own ops and
Hugging Face's head order."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.dialects.builtin import Float16Type, f32

from xdsl_ane.ane.limits import MAX_DIMENSION
from xdsl_ane.dialects import rlx
from xdsl_ane.dialects.functions import build_function
from xdsl_ane.dialects.typing import tensor
from xdsl_ane.interpreter.core import random_inputs, run_function
from xdsl_ane.models.configs import QWEN3_0_6B, LlmConfig
from xdsl_ane.models.kernels import (
    REFERENCE_OP_COUNTS,
    compile_kernel,
    compile_training_kernels,
    op_count_table,
)
from xdsl_ane.models.rope import rope_tables
from xdsl_ane.models.runtime import run_kernel
from xdsl_ane.models.training import (
    KernelBuilder,
    build_training_kernels,
    function_of,
    heads,
    merge_heads,
)
from xdsl_ane.models.transformer import rope_weights
from xdsl_ane.models.vocabulary import vocab_chunks
from xdsl_ane.passes.ane_lint import lint_module
from xdsl_ane.passes.gqa_tile import repeat_heads, sum_head_groups
from xdsl_ane.passes.layouts import ane_form_problems
from xdsl_ane.passes.pipeline import AnePipelinePass

# Qwen3-0.6B-size kernels and training steps: -m 'not slow' skips them.
pytestmark = pytest.mark.slow

REAL = QWEN3_0_6B

SMALL = QWEN3_0_6B.with_(
    hidden_size=64,
    num_heads=4,
    num_kv_heads=2,
    head_dim=32,
    ffn_size=128,
    vocab_size=1000,
    seq_len=32,
)
VARIANTS = {
    "small": SMALL,
    "small-mha-interleaved": SMALL.with_(
        num_kv_heads=4, qk_norm=False, rope_style="interleaved"
    ),
}

LAYER_KERNELS = [
    "rms_norm_forward",
    "attention_forward",
    "output_projection",
    "ffn_forward",
    "ffn_backward_w2",
    "silu_backward",
    "ffn_backward_w13",
    "output_projection_backward",
    "attention_backward_1",
    "attention_backward_2",
    "gqa_reduce",
    "rope_backward",
    "q_projection_backward",
    "kv_projection_backward",
    "rms_norm_backward",
]
CLASSIFIER_KERNELS = [
    "classifier_forward",
    "classifier_backward",
    "classifier_projection_backward",
]


def kernel_weights(
    module: builtin.ModuleOp, config: LlmConfig, seed: int = 0
) -> dict[str, np.ndarray]:
    """Data for every rlx.param of a kernel: matrices N(0, 1/in), the RoPE
    tables (and their head forms) from the config."""
    rng = np.random.default_rng(seed)
    weights = rope_weights(config)
    for op in module.walk():
        if isinstance(op, rlx.ParamOp) and op.param_name.data not in weights:
            shape = op.result.type.get_shape()  # type: ignore[attr-defined]
            value = np.random.default_rng(rng.integers(1 << 30)).standard_normal(shape)
            weights[op.param_name.data] = (value / np.sqrt(shape[-1])).astype(
                np.float32
            )
    return weights


# --- real size: compile, ANE form, op counts ---------------------------------------


@pytest.fixture(scope="module")
def real_kernels():
    return compile_training_kernels(REAL, fp16=True)


def test_kernel_set(real_kernels):
    chunks = vocab_chunks(REAL)
    assert len(chunks) == 10
    assert sum(size for _, size in chunks) == REAL.vocab_size
    sizes = sorted({size for _, size in chunks}, reverse=True)
    assert sizes[0] <= MAX_DIMENSION
    expected = set(LAYER_KERNELS + CLASSIFIER_KERNELS + ["cross_entropy_combine"])
    expected |= {name + "_last" for name in CLASSIFIER_KERNELS}
    c = REAL
    shapes = {
        (c.q_dim, c.hidden_size),
        (c.kv_dim, c.hidden_size),
        (c.hidden_size, c.q_dim),
        (c.ffn_size, c.hidden_size),
        (c.hidden_size, c.ffn_size),
        *((size, c.hidden_size) for size in sizes),
    }
    expected |= {f"weight_gradient_{rows}x{columns}" for rows, columns in shapes}
    assert set(real_kernels) == expected


def test_ane_form_one_input_one_output(real_kernels):
    """One packed fp16 input and one packed fp16 output per kernel (no
    integer data in any kernel), every dimension within the ANE's 16384,
    nothing the lint would report."""
    for name, kernel in real_kernels.items():
        function = kernel.function
        assert ane_form_problems(function, fp16=True) == [], name
        signature = function.function_type
        assert len(signature.inputs.data) == 1, name
        assert len(signature.outputs.data) == 1, name
        for t in (*signature.inputs.data, *signature.outputs.data):
            assert isinstance(t.element_type, Float16Type), name  # type: ignore[attr-defined]
            assert max(t.get_shape()) <= MAX_DIMENSION, (name, t)  # type: ignore[attr-defined]
        assert lint_module(kernel.module).findings == [], name


def test_op_counts_against_reference(real_kernels):
    """At or below the hand-written kernels' op counts (consts excluded),
    the attention forward with Qwen3's QK-norm (which the reference lacks)
    included, and the ten together at least 10% below the reference's."""
    print("\n" + op_count_table(real_kernels))
    for name, reference in REFERENCE_OP_COUNTS.items():
        assert real_kernels[name].op_count() <= reference, name
    ours = sum(real_kernels[name].op_count() for name in REFERENCE_OP_COUNTS)
    assert ours <= 0.9 * sum(REFERENCE_OP_COUNTS.values())
    plain = build_training_kernels(REAL.with_(qk_norm=False))["attention_forward"]
    plain_count = compile_kernel(plain).op_count()
    print(
        f"attention_forward without QK-norm: {plain_count} "
        f"(reference {REFERENCE_OP_COUNTS['attention_forward']}); "
        f"with: {real_kernels['attention_forward'].op_count()}"
    )
    assert plain_count <= real_kernels["attention_forward"].op_count()


# --- numbers: rlx function vs compiled kernel --------------------------------------


def check_kernel_numerics(module: builtin.ModuleOp, config: LlmConfig) -> None:
    """The rlx function and its compiled form (f32, dynamic weights, packed
    I/O driven by the manifest) on the same inputs and weights."""
    weights = kernel_weights(module, config)
    function = function_of(module)
    inputs = random_inputs(function, 0)
    expected = run_function(module, inputs, weights)
    kernel = compile_kernel(module, fp16=False, lint=False)
    actual = run_kernel(kernel, dict(zip(kernel.arg_names, inputs)), weights, weights)
    assert list(actual) == kernel.result_names
    for name, e in zip(kernel.result_names, expected):
        a = actual[name]
        assert a.shape == e.shape, name
        error = np.linalg.norm(a - e) / np.linalg.norm(e)
        assert error < 1e-5, f"{function.sym_name.data}.{name}: {error:.2e}"


REAL_KERNELS = build_training_kernels(REAL)


@pytest.mark.parametrize("name", list(REAL_KERNELS))
def test_kernel_numerics_real_size(name):
    check_kernel_numerics(REAL_KERNELS[name], REAL)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_kernel_numerics_small(variant):
    config = VARIANTS[variant]
    for module in build_training_kernels(config, vocab_chunk=384).values():
        check_kernel_numerics(module, config)


# --- the head forms --------------------------------------------------------------------


def run_rlx(types, body, inputs, weights=None):
    module = builtin.ModuleOp([build_function("f", types, body)])
    module.verify()
    return run_function(module, inputs, weights or {})


@pytest.mark.parametrize("style", ["half", "interleaved"])
@pytest.mark.parametrize("inverse", [False, True], ids=["rope", "rope_backward"])
def test_rope_on_head_form_is_rlx_rope(style, inverse):
    """KernelBuilder.rope on [1, H, Dh, S] ("bhds", the config's tables baked)
    is rlx.rope (or rlx.rope_backward) on the standard [1, H, S, Dh] with
    the tables rope.cos / rope.sin of the config, before and after the
    pipeline (fp32)."""
    c = SMALL.with_(rope_style=style)
    b = KernelBuilder(c)
    cos, sin = rope_tables(c, c.seq_len)
    x = np.random.default_rng(0).standard_normal((c.seq_len, c.q_dim))
    x = x.astype(np.float32)

    def ours(x):
        return [merge_heads(b.rope(heads(x, c.num_heads), inverse))]

    def theirs(x):
        t = rlx.ReshapeOp(x, (1, c.seq_len, c.num_heads, c.head_dim)).result
        t = rlx.TransposeOp(t, (0, 2, 1, 3)).result
        half = (c.seq_len, c.head_dim // 2)
        cos, sin = (
            rlx.ParamOp(n, tensor(half, f32)).result for n in ("rope.cos", "rope.sin")
        )
        op = rlx.RopeBackwardOp if inverse else rlx.RopeOp
        t = rlx.TransposeOp(op(t, cos, sin, style).result, (0, 2, 1, 3)).result
        return [rlx.ReshapeOp(t, (c.seq_len, c.q_dim)).result]

    types = [tensor((c.seq_len, c.q_dim), f32)]
    weights = {"rope.cos": cos, "rope.sin": sin}
    (a,) = run_rlx(types, ours, [x])
    (e,) = run_rlx(types, theirs, [x], weights)
    np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-6)
    module = builtin.ModuleOp([build_function("f", types, ours)])
    AnePipelinePass(fp16=False, lint=False).apply(Context(), module)
    (compiled,) = run_function(module, [x.T.reshape(1, c.q_dim, 1, c.seq_len)])
    np.testing.assert_allclose(
        compiled.reshape(c.q_dim, c.seq_len).T, e, rtol=1e-5, atol=1e-6
    )


def test_kernels_need_no_rope_weights():
    """The kernels hold the config's RoPE tables as constants: no kernel
    reads a rope.* weight, so the runtime is given none."""
    c = SMALL
    for name, module in build_training_kernels(c).items():
        params = {
            op.param_name.data for op in module.walk() if isinstance(op, rlx.ParamOp)
        }
        assert not {p for p in params if p.startswith("rope.")}, name


def test_grouped_query_head_order():
    """Query head h reads key/value head h // (H/Hkv) (repeat_kv's k0, k0,
    k1, k1, ...), and the reduction sums exactly those heads back."""
    c = SMALL
    repeats = c.num_heads // c.num_kv_heads
    x = np.random.default_rng(0).standard_normal((c.seq_len, c.kv_dim))
    x = x.astype(np.float32)
    types = [tensor((c.seq_len, c.kv_dim), f32)]
    (repeated,) = run_rlx(
        types,
        lambda x: [merge_heads(repeat_heads(heads(x, c.num_kv_heads), repeats))],
        [x],
    )
    per_head = x.reshape(c.seq_len, c.num_kv_heads, c.head_dim)
    expected = np.repeat(per_head, repeats, axis=1).reshape(c.seq_len, c.q_dim)
    np.testing.assert_array_equal(repeated, expected)

    (reduced,) = run_rlx(
        [tensor((c.seq_len, c.q_dim), f32)],
        lambda y: [merge_heads(sum_head_groups(heads(y, c.num_heads), c.num_kv_heads))],
        [expected],
    )
    np.testing.assert_allclose(reduced, repeats * x, rtol=1e-6)


def test_attention_forward_outputs_use_hugging_face_head_order():
    """v_rep of the attention kernel: query head h gets v head h // R."""
    c = SMALL.with_(qk_norm=False)
    module = build_training_kernels(c)["attention_forward"]
    weights = kernel_weights(module, c)
    (h,) = random_inputs(function_of(module), 0)
    outputs = dict(
        zip(["attn", "q_rot", "k_rep", "v_rep"], run_function(module, [h], weights))
    )
    v = h @ weights["layers.0.self_attn.v_proj.weight"].T
    repeats = c.num_heads // c.num_kv_heads
    v_heads = v.reshape(c.seq_len, c.num_kv_heads, c.head_dim)
    expected = np.repeat(v_heads, repeats, axis=1).reshape(c.seq_len, c.q_dim)
    np.testing.assert_allclose(outputs["v_rep"], expected, rtol=1e-5, atol=1e-6)

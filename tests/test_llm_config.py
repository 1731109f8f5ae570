"""config.json fields and checkpoint tensors against what compile-llm
builds: each field that changes the math is honoured (the fp32 program
gives transformers' logits and tokens on the same checkpoint) or refused
in one line naming it; every tensor of the checkpoint is read or named in
the error; --context, --prefill and --chunk are checked as options."""

from __future__ import annotations

import inspect
import json

import numpy as np
import pytest
import transformers
from llm_checkpoints import (
    assert_same_greedy,
    program_greedy,
    reference_greedy,
    write_checkpoint,
)

from xdsl_ane.api.llm import PackageRunner, reference_generate
from xdsl_ane.api.llm_compile import compile_llm
from xdsl_ane.errors import XdslAneError
from xdsl_ane.models.hf_config import ACTIVATIONS, FAMILIES, IGNORED_FIELDS, llm_config
from xdsl_ane.models.llm import LlmShape
from xdsl_ane.tools.cli import main
from xdsl_ane.weights.checkpoint import read_checkpoint

# Compiles and runs LLM checkpoints against transformers: -m 'not slow' skips them.
pytestmark = pytest.mark.slow


PROMPT = [5, 17, 200, 3, 99]
SHAPE = LlmShape(context=16, prefill=4)  # the prompt takes two prefill calls
STEPS = 4


def honoured(directory, family: str, **fields) -> None:
    """A checkpoint with config `fields`: the fp32 program reads every
    tensor and gives transformers' logits and tokens."""
    model = write_checkpoint(directory, family, **fields)
    config = json.loads((directory / "config.json").read_text())
    for name, value in fields.items():
        if name != "rope_scaling":  # saved as rope_parameters
            assert config[name] == value, name
    assert_same_greedy(
        program_greedy(directory, PROMPT, STEPS, SHAPE),
        reference_greedy(model, PROMPT, STEPS),
    )


@pytest.mark.parametrize(
    "family,fields",
    [
        ("llama", {"attention_bias": True}),
        ("qwen3", {"attention_bias": True}),
        ("llama", {"mlp_bias": True}),
        ("llama", {"attention_bias": True, "mlp_bias": True, "hidden_act": "gelu"}),
        ("llama", {"rope_scaling": {"rope_type": "linear", "factor": 4.0}}),
        ("llama", {"head_dim": 32}),  # q is 128 wide, hidden 64
        ("llama", {"pretraining_tp": 2}),  # transformers 5 no longer reads it
        ("qwen2", {"rms_norm_eps": 0.05}),
        ("qwen2", {"use_sliding_window": True, "sliding_window": 16}),
        # a window of at least the context changes nothing
        (
            "qwen3",
            {
                "use_sliding_window": True,
                "sliding_window": 16,
                "layer_types": ["full_attention", "sliding_attention"],
            },
        ),
        # a window below the context on no layer: layers from 2 on slide
        (
            "qwen2",
            {"use_sliding_window": True, "sliding_window": 8, "max_window_layers": 2},
        ),
        ("mistral", {"sliding_window": 16}),
        ("gpt_neox", {"use_parallel_residual": False}),
        ("gpt2", {"scale_attn_by_inverse_layer_idx": True}),
        (
            "qwen2",
            {
                "rope_scaling": {
                    "rope_type": "yarn",
                    "factor": 4.0,
                    "original_max_position_embeddings": 8,
                }
            },
        ),
        (
            "llama",
            {
                "rope_scaling": {
                    "rope_type": "yarn",
                    "factor": 8.0,
                    "original_max_position_embeddings": 16,
                    "beta_fast": 16.0,
                    "mscale": 0.7,
                    "mscale_all_dim": 1.0,
                }
            },
        ),
        # long factors (every call is past the original 4 positions) and
        # short ones (none reaches 64), each with its attention factor
        (
            "phi3",
            {
                "rope_scaling": {
                    "rope_type": "longrope",
                    "long_factor": [1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0],
                    "short_factor": [1.0] * 8,
                    "original_max_position_embeddings": 4,
                }
            },
        ),
        (
            "phi3",
            {
                "rope_scaling": {
                    "rope_type": "longrope",
                    "long_factor": [1.0] * 8,
                    "short_factor": [1.0, 1.1, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0],
                    "original_max_position_embeddings": 64,
                }
            },
        ),
        ("gpt2", {"scale_attn_weights": False, "activation_function": "gelu"}),
        ("gpt_neox", {"attention_bias": False, "hidden_act": "gelu_new"}),
        (
            "phi3",
            {"rope_parameters": {"rope_theta": 1e4, "partial_rotary_factor": 0.5}},
        ),
        # layer 1 of experts, layer 0 dense; the top 2 not renormalized
        (
            "qwen3_moe",
            {"mlp_only_layers": [], "decoder_sparse_step": 2, "norm_topk_prob": False},
        ),
        ("olmoe", {"norm_topk_prob": True, "num_experts_per_tok": 3}),
        # Gemma 4 with each of its features off in turn, biases on, a
        # per-layer table of more rows than the vocabulary, the full
        # layers' heads 2 of 32 with values of their own
        ("gemma4_text", {"enable_moe_block": False}),
        # (transformers fails on shared layers without per-layer inputs)
        ("gemma4_text", {"hidden_size_per_layer_input": 0, "num_kv_shared_layers": 0}),
        ("gemma4_text", {"num_kv_shared_layers": 0}),
        ("gemma4_text", {"use_double_wide_mlp": False, "attention_bias": True}),
        ("gemma4_text", {"vocab_size_per_layer_input": 320}),
        ("gemma4_text", {"attention_k_eq_v": False}),
    ],
    ids=lambda v: v if isinstance(v, str) else ",".join(v),
)
def test_field_honoured(tmp_path, family, fields):
    honoured(tmp_path, family, **fields)


@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
def test_hidden_act_honoured(tmp_path, activation):
    honoured(tmp_path, "qwen2", hidden_act=activation)


def edited(directory, family: str = "llama", **fields):
    """A valid checkpoint whose config.json then gets `fields` (None
    removes one); returns its path."""
    write_checkpoint(directory, family)
    path = directory / "config.json"
    config = json.loads(path.read_text()) | fields
    path.write_text(json.dumps({k: v for k, v in config.items() if v is not None}))
    return directory


LLAMA3 = {
    "rope_type": "llama3",
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 32,
    "rope_theta": 500000.0,
}


@pytest.mark.parametrize(
    "family,fields,message",
    [
        (
            "llama",
            {"hidden_act": "gelu_accurate"},
            "field 'hidden_act' is 'gelu_accurate'; supported: silu",
        ),
        ("llama", {"hidden_act": "quick_gelu"}, "field 'hidden_act' is 'quick_gelu'"),
        ("llama", {"hidden_act": ["silu"]}, "field 'hidden_act' is ['silu']"),
        (
            "qwen2",
            {
                "rope_parameters": {
                    "rope_type": "yarn",
                    "factor": 4.0,
                    "rope_theta": 1e4,
                }
            },
            "field 'rope_parameters.original_max_position_embeddings' is missing "
            "(rope type yarn)",
        ),
        (
            "qwen2",
            {
                "rope_parameters": {
                    "rope_type": "dynamic",
                    "factor": 2.0,
                    "rope_theta": 1e4,
                }
            },
            "rope type 'dynamic'",
        ),
        (
            "qwen2",
            {"rope_parameters": None, "rope_scaling": {"type": "longrope"}},
            "field 'rope_scaling.original_max_position_embeddings' is missing "
            "(rope type longrope)",
        ),
        (
            "qwen2",
            {"rope_parameters": {"rope_theta": 1e4, "partial_rotary_factor": 0.5}},
            "field 'rope_parameters.partial_rotary_factor' is 0.5; a qwen2 model "
            "rotates the whole head (1.0)",
        ),
        (
            "llama",
            {"rope_parameters": LLAMA3 | {"factor": None}},
            "field 'rope_parameters.factor' is missing (rope type llama3)",
        ),
        (
            "llama",
            {"rope_parameters": {"rope_type": "linear", "rope_theta": "big"}},
            "field 'rope_parameters.rope_theta' is 'big'; expected a number",
        ),
        (
            "llama",
            {"num_key_value_heads": 3},
            "field 'num_key_value_heads' is 3; num_attention_heads 4 must be a multiple of it",
        ),
        (
            "llama",
            {"rms_norm_eps": "1e-6"},
            "field 'rms_norm_eps' is '1e-6'; expected a number",
        ),
        (
            "llama",
            {"num_hidden_layers": "2"},
            "field 'num_hidden_layers' is '2'; expected an integer",
        ),
        (
            "llama",
            {"num_attention_heads": 0},
            "field 'num_attention_heads' is 0; expected an integer ≥ 1",
        ),
        (
            "llama",
            {"head_dim": None, "hidden_size": 66},
            "field 'head_dim' is missing and hidden_size 66 is not a multiple of num_attention_heads 4",
        ),
        ("llama", {"head_dim": 15}, "field 'head_dim' is 15; RoPE needs an even one"),
        (
            "llama",
            {"attention_bias": "yes"},
            "field 'attention_bias' is 'yes'; expected true or false",
        ),
        (
            "llama",
            {"quantization_config": {"quant_method": "gptq", "bits": 4}},
            "field 'quantization_config' is set",
        ),
        (
            "qwen3",
            {"layer_types": ["full_attention"]},
            "field 'layer_types' must list one type per layer (2)",
        ),
        (
            "qwen3",
            {"layer_types": ["full_attention", "chunked_attention"]},
            "field 'layer_types' has ['chunked_attention']",
        ),
        (
            "gpt2",
            {"add_cross_attention": True},
            "field 'add_cross_attention' is true: cross-attention layers are not "
            "supported",
        ),
        # a family's own field names in its errors
        ("gpt2", {"n_head": 0}, "field 'n_head' is 0; expected an integer ≥ 1"),
        (
            "gemma2",
            {"attn_logit_softcapping": -1.0},
            "field 'attn_logit_softcapping' is -1.0; expected a positive number",
        ),
        # values outside their domain (RoPE tables of NaN, a zero epsilon)
        (
            "qwen3",
            {"rope_theta": 0, "rope_parameters": {"rope_theta": 0}},
            "field 'rope_theta' is 0; expected a number > 0",
        ),
        (
            "qwen3",
            {"rope_parameters": {"rope_type": "default", "rope_theta": -1.0}},
            "field 'rope_parameters.rope_theta' is -1.0; expected a number > 0",
        ),
        ("llama", {"rms_norm_eps": 0.0}, "field 'rms_norm_eps' is 0.0; expected a"),
        ("gpt2", {"layer_norm_epsilon": -1e-5}, "field 'layer_norm_epsilon' is -1e-05"),
        (
            "llama",
            {"rope_parameters": LLAMA3 | {"factor": 0.0}},
            "field 'rope_parameters.factor' is 0.0; expected a number > 0",
        ),
        (
            "llama",
            {"rope_parameters": LLAMA3 | {"low_freq_factor": -1.0}},
            "field 'rope_parameters.low_freq_factor' is -1.0; expected a number > 0",
        ),
        (
            "gemma3_text",
            {"query_pre_attn_scalar": 0},
            "field 'query_pre_attn_scalar' is 0; expected a number > 0",
        ),
        (
            "granite",
            {"residual_multiplier": 0.0},
            "field 'residual_multiplier' is 0.0; expected a number > 0",
        ),
        ("mistral", {"sliding_window": 0}, "field 'sliding_window' is 0; expected an"),
        (
            "gemma4_text",
            {"use_bidirectional_attention": "all"},
            "field 'use_bidirectional_attention' is 'all': only causal",
        ),
        (
            "gemma4_text",
            {"vocab_size_per_layer_input": 200},
            "field 'vocab_size_per_layer_input' is 200, below vocab_size 300",
        ),
        (
            "gemma4_text",
            {"num_kv_shared_layers": 3},
            "field 'num_kv_shared_layers' is 3: layer 1's kind has no earlier",
        ),
        (
            "gemma4_text",
            {"per_layer_config": {"0": {"head_dim": 32}}},
            "field 'per_layer_config' changes a sliding layer's heads",
        ),
        (
            "gemma4_text",
            {"per_layer_config": {"1": {"intermediate_size": 32}}},
            "field 'per_layer_config' must map layer indices to head_dim and "
            "num_key_value_heads alone",
        ),
        (
            "gemma4_text",
            {"per_layer_config": {"1": {"head_dim": 32}, "3": {"head_dim": 64}}},
            "field 'per_layer_config' gives the full layers different heads",
        ),
        (
            "gemma4_text",
            {"top_k_experts": 5},
            "field 'top_k_experts' is 5; more than the 4 experts",
        ),
        ("llama", {"vocab_size": 0}, "field 'vocab_size' is 0; expected an integer"),
        (
            "olmoe",
            {"clip_qkv": 8.0},
            "field 'clip_qkv' is 8.0: clamping q, k and v is not supported",
        ),
        (
            "mixtral",
            {"num_experts_per_tok": 5},
            "field 'num_experts_per_tok' is 5; more than the 4 experts",
        ),
        (
            "qwen3_moe",
            {"mlp_only_layers": "all"},
            "field 'mlp_only_layers' is 'all'; expected layer indices",
        ),
        (
            "qwen3_moe",
            {"decoder_sparse_step": 0},
            "field 'decoder_sparse_step' is 0; expected an integer ≥ 1",
        ),
    ],
    ids=lambda v: v if isinstance(v, str) and len(v) < 10 else None,
)
def test_field_refused(tmp_path, family, fields, message):
    checkpoint = read_checkpoint(edited(tmp_path, family, **fields))
    with pytest.raises(XdslAneError) as error:
        llm_config(checkpoint)
    text = str(error.value)
    assert text.startswith(f"{tmp_path / 'config.json'}: ") and message in text, text
    assert "\n" not in text


@pytest.mark.parametrize("field, size", [("vocab_size", 10**9), ("hidden_size", 96)])
def test_sizes_that_do_not_match_the_tensors_name_both(tmp_path, capsys, field, size):
    """A vocab_size of 1e9 for a 300-row table ran for minutes and then
    blamed --max-package-size: the table's shape is checked first."""
    from xdsl_ane.tools.cli import main

    edited(tmp_path / "ckpt", "qwen3", **{field: size})
    out = tmp_path / "m.mlpackage"
    capsys.readouterr()
    assert main(["compile-llm", str(tmp_path / "ckpt"), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert f"ckpt/config.json: vocab_size {300 if size == 96 else size}" in err
    assert "do not match tensor 'model.embed_tokens.weight'" in err
    assert "[300, 64]" in err and not out.exists()


def test_every_field_of_the_families_is_read_or_ignored():
    """Each field transformers 5.23's config classes of the supported
    families declare is either read by llm_config (its source names it) or
    listed in IGNORED_FIELDS with why; a new field fails here until it is
    one or the other."""
    import xdsl_ane.models.configs as configs
    import xdsl_ane.models.hf_config as hf_config
    import xdsl_ane.models.layer_fields as layer_fields

    source = "".join(inspect.getsource(m) for m in (hf_config, configs, layer_fields))
    classes = {
        family.name: getattr(transformers, arch).config_class
        for arch, family in FAMILIES.items()
    }
    for family, config_class in classes.items():
        for name in config_class.__annotations__:
            assert name in IGNORED_FIELDS or f'"{name}"' in source, (family, name)


SLIDING = {
    "mistral": ("mistral", {"sliding_window": 6}),
    "qwen3_layer_types": (
        "qwen3",
        {
            "use_sliding_window": True,
            "sliding_window": 6,
            "layer_types": ["sliding_attention", "full_attention"],
        },
    ),
    "qwen2_max_window_layers": (
        "qwen2",
        {"use_sliding_window": True, "sliding_window": 5, "max_window_layers": 1},
    ),
    "qwen3_moe": ("qwen3_moe", {"use_sliding_window": True, "sliding_window": 6}),
}


@pytest.mark.parametrize("name", sorted(SLIDING))
def test_sliding_window_below_the_context(tmp_path, name):
    """Layers whose window is smaller than the context attend only within
    it, in prefill and decode: a prompt of 11 tokens (three prefill calls)
    and 12 greedy steps, both past the window, give transformers' logits and
    tokens; the same checkpoint without the window gives other logits."""
    family, fields = SLIDING[name]
    model = write_checkpoint(tmp_path / "ckpt", family, **fields)
    shape = LlmShape(context=32, prefill=4)
    prompt = [5, 17, 200, 3, 99, 42, 7, 250, 11, 64, 128]
    got = program_greedy(tmp_path / "ckpt", prompt, 12, shape)
    assert_same_greedy(got, reference_greedy(model, prompt, 12))
    unwindowed = edited(tmp_path / "full", family, sliding_window=None)
    full = program_greedy(unwindowed, prompt, 12, shape)
    assert np.abs(full[0][-1] - got[0][-1]).max() > 1e-3


def test_sliding_window_package_generates_transformers_tokens(tmp_path):
    """The fp16 package of a Mistral whose window (6) is below the prompt
    plus generation (11 + 16): transformers' greedy tokens."""
    checkpoint = tmp_path / "ckpt"
    write_checkpoint(checkpoint, "mistral", sliding_window=6)
    out = tmp_path / "llm.mlpackage"
    compile_llm(checkpoint, context=32, prefill=4, chunk=128).save(out)
    prompt = [5, 17, 200, 3, 99, 42, 7, 250, 11, 64, 128]
    tokens, _ = PackageRunner(out).generate(prompt, 16)
    assert tokens == reference_generate(checkpoint, prompt, 16)[0]


def test_sliding_layers_follow_the_config(tmp_path):
    """Which layers slide, as transformers picks them."""
    cases = [
        ("mistral", {"sliding_window": 6}, {0, 1}),
        (
            "qwen3",
            {
                "use_sliding_window": True,
                "sliding_window": 6,
                "layer_types": ["sliding_attention", "full_attention"],
            },
            {0},
        ),
        # (without layer_types, which a saved Qwen2 config.json holds)
        (
            "qwen2",
            {
                "use_sliding_window": True,
                "sliding_window": 6,
                "max_window_layers": 1,
                "layer_types": None,
            },
            {1},
        ),
        ("qwen2", {"use_sliding_window": False, "sliding_window": 6}, set()),
        # without layer_types (older config.json files), each family's own
        # rule: every k-th layer full (Gemma 2: 2; Gemma 3, EXAONE 4: the
        # sliding_window_pattern; OLMo 3: 4), SmolLM3's layers without RoPE
        ("gemma2", {"sliding_window": 6, "layer_types": None}, {0}),
        (
            "gemma3_text",
            {"sliding_window": 6, "sliding_window_pattern": 2, "layer_types": None},
            {0},
        ),
        ("gemma3_text", {"sliding_window": 6, "layer_types": None}, {0, 1}),
        ("olmo3", {"sliding_window": 6, "layer_types": None}, {0, 1}),
        (
            "exaone4",
            {"sliding_window": 6, "sliding_window_pattern": 2, "layer_types": None},
            {0},
        ),
        (
            "smollm3",
            {
                "use_sliding_window": True,
                "sliding_window": 6,
                "no_rope_layers": [1, 0],
                "layer_types": None,
            },
            {1},
        ),
        # Gemma 4: every 6th full, and the last always (here of 4)
        (
            "gemma4_text",
            {"layer_types": None, "num_kv_shared_layers": 0, "per_layer_config": None},
            {0, 1, 2},
        ),
        (
            "gemma4_text",
            {
                "layer_types": ["sliding_attention"] * 4,
                "num_kv_shared_layers": 0,
                "per_layer_config": None,
            },
            {0, 1, 2},
        ),
    ]
    for i, (family, fields, layers) in enumerate(cases):
        config = llm_config(
            read_checkpoint(edited(tmp_path / str(i), family, **fields))
        )
        assert config.sliding_layers == frozenset(layers), (family, fields)


def test_extra_layers_are_named(tmp_path):
    """A checkpoint of 3 layers whose config says 2: the third layer's
    tensors are an error, not dropped."""
    write_checkpoint(tmp_path, "llama", layers=3)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(json.loads(path.read_text()) | {"num_hidden_layers": 2}))
    with pytest.raises(XdslAneError) as error:
        compile_llm(tmp_path, context=16, prefill=4)
    assert (
        "tensor 'model.layers.2.input_layernorm.weight' is not used "
        "(num_hidden_layers is 2); 8 more tensors are not used"
    ) in str(error.value)


def test_biases_the_config_turns_off_are_named(tmp_path):
    write_checkpoint(tmp_path, "llama", attention_bias=True, mlp_bias=True)
    path = tmp_path / "config.json"
    config = json.loads(path.read_text())
    path.write_text(json.dumps(config | {"mlp_bias": False}))
    with pytest.raises(
        XdslAneError,
        match=r"'model.layers.0.mlp.down_proj.bias' is not used \(mlp_bias is false\)",
    ):
        compile_llm(tmp_path, context=16, prefill=4)
    path.write_text(json.dumps(config | {"attention_bias": False}))
    with pytest.raises(
        XdslAneError,
        match=r"self_attn.k_proj.bias' is not used \(attention_bias is false\)",
    ):
        compile_llm(tmp_path, context=16, prefill=4)
    # Mistral has no biases at all, whatever the config says
    path.write_text(json.dumps(config | {"architectures": ["MistralForCausalLM"]}))
    with pytest.raises(
        XdslAneError, match=r"is not used \(a mistral model has no bias on"
    ):
        compile_llm(tmp_path, context=16, prefill=4)


def rewrite_weights(directory, change) -> None:
    """model.safetensors with `change(tensors)` applied to its tensors."""
    from safetensors.numpy import load_file, save_file

    path = directory / "model.safetensors"
    tensors = load_file(path)
    change(tensors)
    save_file(tensors, path, metadata={"format": "pt"})


def test_harmless_and_tied_head_tensors(tmp_path):
    """RoPE's saved inverse frequencies (old checkpoints) are ignored as
    transformers ignores them; a tied checkpoint may hold lm_head.weight
    equal to the embedding, not a different one."""
    write_checkpoint(tmp_path, "llama", tied=True)
    inv = np.ones(8, np.float32)
    rewrite_weights(
        tmp_path,
        lambda t: t.update(
            {
                "model.rotary_emb.inv_freq": inv,
                "model.layers.0.self_attn.rotary_emb.inv_freq": inv,
                "lm_head.weight": t["model.embed_tokens.weight"].copy(),
            }
        ),
    )
    compile_llm(tmp_path, context=16, prefill=4)

    def differ(t):
        t["lm_head.weight"] = t["lm_head.weight"] + 1

    rewrite_weights(tmp_path, differ)
    with pytest.raises(
        XdslAneError,
        match=r"'lm_head.weight' is not used \(tie_word_embeddings is true and it "
        r"differs from model.embed_tokens.weight\)",
    ):
        compile_llm(tmp_path, context=16, prefill=4)


def test_package_honours_biases_and_activation(tmp_path):
    """The fp16 package (not only the fp32 program) of a Llama with q/k/v/o
    and MLP biases and tanh GELU generates transformers' tokens."""
    checkpoint = tmp_path / "ckpt"
    write_checkpoint(
        checkpoint,
        "llama",
        attention_bias=True,
        mlp_bias=True,
        hidden_act="gelu_pytorch_tanh",
    )
    out = tmp_path / "llm.mlpackage"
    compile_llm(checkpoint, context=16, prefill=4, chunk=128).save(out)
    tokens, logits = PackageRunner(out).generate(PROMPT, 8)
    ref_tokens, ref_logits = reference_generate(checkpoint, PROMPT, 8)
    assert tokens == ref_tokens
    for got, ref in zip(logits, ref_logits):
        np.testing.assert_allclose(got, ref, rtol=2e-2, atol=2e-2 * np.abs(ref).max())


@pytest.mark.parametrize(
    "options,message",
    [
        (["--context", "0"], "--context 0: must be at least 1"),
        (["--context", "16", "--prefill", "0"], "--prefill 0: must be at least 1"),
        (
            ["--context", "8", "--prefill", "64"],
            "--prefill 64 is more than --context 8",
        ),
        (["--context", "16", "--prefill", "6"], "--prefill 6 must divide --context 16"),
        (
            ["--context", "16", "--prefill", "4", "--chunk", "0"],
            "--chunk 0: must lie in [1, 16384]",
        ),
        (
            ["--context", "16", "--prefill", "4", "--chunk", "16385"],
            "--chunk 16385: must lie in [1, 16384]",
        ),
        (
            ["--context", "300"],
            "--context 300 is beyond the model's max_position_embeddings 256 (",
        ),
        (
            ["--context", "16", "--prefill", "4", "--experts", "routed"],
            "--experts routed: the model has no mixture of experts",
        ),
    ],
)
def test_options_are_named(tmp_path, capsys, options, message):
    """Bad --context, --prefill or --chunk: one line naming the option (not
    config.json, unless the model's limit is the reason), nothing written."""
    checkpoint = tmp_path / "ckpt"
    write_checkpoint(checkpoint, "qwen3")
    capsys.readouterr()
    out = tmp_path / "x.mlpackage"
    assert main(["compile-llm", str(checkpoint), "-o", str(out), *options]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    assert ("config.json" in err) == ("max_position_embeddings" in message)
    assert not out.exists() and not (tmp_path / "x.manifest.json").exists()


def test_exaone4_full_layers_have_no_rope_only_with_a_window(tmp_path):
    windowed = llm_config(read_checkpoint(edited(tmp_path / "a", "exaone4")))
    assert (windowed.sliding_layers, windowed.nope_layers) == ({0}, {1})
    plain = edited(tmp_path / "b", "exaone4", sliding_window=None, layer_types=None)
    config = llm_config(read_checkpoint(plain))
    assert (config.sliding_layers, config.nope_layers) == (frozenset(), frozenset())


def test_seed_oss_biases_follow_its_defaults(tmp_path):
    """attention_bias defaults to true in Seed-OSS's config class: left out
    of config.json, q, k and v keep their biases; attention_out_bias alone
    says whether o_proj has one."""
    config = llm_config(
        read_checkpoint(edited(tmp_path, "seed_oss", attention_bias=None))
    )
    assert "self_attn.q_proj" in config.biases
    assert "self_attn.o_proj" in config.biases


def test_ministral3_query_scale_past_its_start_is_refused(tmp_path, capsys):
    """Ministral 3 scales queries from original_max_position_embeddings on
    (llama_4_scaling_beta); a context past it is refused naming both."""
    from xdsl_ane.tools.cli import main

    checkpoint = edited(tmp_path / "ckpt", "ministral3")
    path = checkpoint / "config.json"
    config = json.loads(path.read_text())
    config["rope_parameters"]["original_max_position_embeddings"] = 16
    path.write_text(json.dumps(config))
    assert llm_config(read_checkpoint(checkpoint)).query_scale_from == 16
    out = tmp_path / "m.mlpackage"
    capsys.readouterr()
    args = ["compile-llm", str(checkpoint), "-o", str(out), "--context", "32"]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and not out.exists()
    assert (
        "--context 32 is beyond rope_parameters.original_max_position_embeddings 16"
        in err
    )
    assert "llama_4_scaling_beta" in err


def test_apertus_package_generates_transformers_tokens(tmp_path):
    """Apertus's xIELU (learned parameters per layer, made of elementwise
    ops) through the fp16 package: transformers' greedy tokens."""
    checkpoint = tmp_path / "ckpt"
    write_checkpoint(checkpoint, "apertus", tied=True)
    out = tmp_path / "llm.mlpackage"
    compile_llm(checkpoint, context=32, prefill=4, chunk=128).save(out)
    prompt = [5, 17, 200, 3, 99, 42, 7]
    tokens, _ = PackageRunner(out).generate(prompt, 12)
    assert tokens == reference_generate(checkpoint, prompt, 12)[0]


def test_lfm2_package_generates_transformers_tokens(tmp_path):
    """LFM2's short convolutions, their last rows Core ML state beside the
    KV cache of its attention layers, through the fp16 package: a prompt
    of two prefill chunks and a short last one (through decode, which the
    manifest's `recurrent` asks for), transformers' greedy tokens; twice,
    so the second generation starts from zeroed states."""
    checkpoint = tmp_path / "ckpt"
    write_checkpoint(checkpoint, "lfm2", tied=True, layers=3)
    out = tmp_path / "llm.mlpackage"
    compile_llm(checkpoint, context=32, prefill=4, chunk=128).save(out)
    runner = PackageRunner(out)
    assert runner.record["recurrent"] is True
    assert runner.record["states"]["conv_state"]["shape"] == [2, 1, 2, 64]
    prompt = [5, 17, 200, 3, 99, 42, 7, 250, 11, 64, 128]
    expected = reference_generate(checkpoint, prompt, 12)[0]
    for _ in range(2):
        tokens, _ = runner.generate(prompt, 12)
        assert tokens == expected
    from xdsl_ane.api.train import training_setup

    with pytest.raises(XdslAneError, match="layer_types: lfm2 models with short"):
        training_setup(checkpoint, 8)


def test_mamba2_package_generates_transformers_tokens(tmp_path):
    """Mamba2's state-space mixers (the chunk's sums as [S, S] products per
    head, the state carried between calls as Core ML state) through the
    fp16 package: transformers' greedy tokens after a prompt of two
    prefill chunks and a short last one, twice in a row."""
    checkpoint = tmp_path / "ckpt"
    write_checkpoint(checkpoint, "mamba2", layers=2)
    out = tmp_path / "llm.mlpackage"
    compile_llm(checkpoint, context=32, prefill=4, chunk=128).save(out)
    runner = PackageRunner(out)
    states = {k: v["shape"] for k, v in runner.record["states"].items()}
    assert states == {"ssm_state": [2, 8, 16, 16], "ssm_conv_state": [2, 1, 3, 192]}
    assert runner.record["recurrent"] is True
    prompt = [5, 17, 200, 3, 99, 42, 7, 250, 11, 64, 128]
    expected = reference_generate(checkpoint, prompt, 12)[0]
    for _ in range(2):
        tokens, _ = runner.generate(prompt, 12)
        assert tokens == expected
    from xdsl_ane.api.train import training_setup

    with pytest.raises(XdslAneError, match="architectures: mamba2 models"):
        training_setup(checkpoint, 8)


def test_granite4_hybrid_package_generates_transformers_tokens(tmp_path):
    """Granite 4's hybrid: Mamba2 mixers and attention with RoPE in turn,
    each layer with its shared MLP and Granite's multipliers, through the
    fp16 package: transformers' greedy tokens; training is refused naming
    architectures."""
    checkpoint = tmp_path / "ckpt"
    write_checkpoint(
        checkpoint, "granitemoehybrid", layers=4, position_embedding_type="rope"
    )
    out = tmp_path / "llm.mlpackage"
    compile_llm(checkpoint, context=32, prefill=4, chunk=128).save(out)
    runner = PackageRunner(out)
    assert set(runner.record["states"]) == {
        "key_cache",
        "value_cache",
        "ssm_state",
        "ssm_conv_state",
    }
    prompt = [5, 17, 200, 3, 99, 42, 7, 250, 11, 64, 128]
    tokens, _ = runner.generate(prompt, 12)
    assert tokens == reference_generate(checkpoint, prompt, 12)[0]
    from xdsl_ane.api.train import training_setup

    with pytest.raises(XdslAneError, match="architectures: granitemoehybrid models"):
        training_setup(checkpoint, 8)


def test_granite4_hybrid_with_experts_matches_transformers(tmp_path):
    """Granite 4's hybrid with a mixture of experts beside each layer's
    shared MLP (4 experts, the top 2 of the router's logits): the fp32
    program gives transformers' logits and greedy tokens over an 11-token
    prompt in three calls."""
    model = write_checkpoint(
        tmp_path,
        "granitemoehybrid",
        layers=2,
        num_local_experts=4,
        num_experts_per_tok=2,
        intermediate_size=32,
    )
    config = llm_config(read_checkpoint(tmp_path))
    assert config.moe is not None and config.moe.layers == {0, 1}
    prompt = [5, 17, 200, 3, 99, 42, 7, 250, 11, 64, 128]
    shape = LlmShape(context=32, prefill=4, chunk=128)
    got = program_greedy(tmp_path, prompt, 12, shape)
    assert_same_greedy(got, reference_greedy(model, prompt, 12))


def test_qwen3_5_package_generates_transformers_tokens(tmp_path):
    """Qwen3.5: gated delta-nets (the chunk's triangle inverted as a
    product of matmuls, the state carried as Core ML state) beside gated
    attention with (1 + w) norms and partial RoPE, through the fp16
    package: transformers' greedy tokens after a prompt of two prefill
    chunks of 8 and a short last one; training is refused."""
    checkpoint = tmp_path / "ckpt"
    write_checkpoint(checkpoint, "qwen3_5", layers=4)
    out = tmp_path / "llm.mlpackage"
    compile_llm(checkpoint, context=32, prefill=8, chunk=128).save(out)
    runner = PackageRunner(out)
    states = {k: v["shape"] for k, v in runner.record["states"].items()}
    assert states["delta_state"] == [2, 4, 16, 16]
    assert states["delta_conv_state"] == [2, 1, 3, 128]
    prompt = [5, 17, 200, 3, 99, 42, 7, 250, 11, 64, 128, 9, 31, 77, 2, 150, 8, 60]
    tokens, _ = runner.generate(prompt, 10)
    assert tokens == reference_generate(checkpoint, prompt, 10)[0]
    from xdsl_ane.api.train import training_setup

    with pytest.raises(XdslAneError, match="architectures: qwen3_5 models"):
        training_setup(checkpoint, 8)


@pytest.mark.parametrize("family", ["qwen3_moe", "granitemoe", "gpt_oss"])
def test_moe_package_generates_transformers_tokens(tmp_path, family):
    """A mixture of experts computed densely (every expert on every token,
    weighted by the top-k routing) through the fp16 package: transformers'
    greedy tokens. Qwen3-MoE has a dense layer beside the experts'; Granite-
    MoE's experts are read as rows of its stacked tensors; GPT-OSS's too,
    with biases, its clamped activation, a router bias, attention sinks and
    a window in every other layer."""
    checkpoint = tmp_path / "ckpt"
    write_checkpoint(checkpoint, family)
    out = tmp_path / "llm.mlpackage"
    compile_llm(checkpoint, context=32, prefill=4, chunk=128).save(out)
    prompt = [5, 17, 200, 3, 99, 42, 7]
    tokens, _ = PackageRunner(out).generate(prompt, 12)
    assert tokens == reference_generate(checkpoint, prompt, 12)[0]


@pytest.mark.parametrize("family", ["qwen3_moe", "granitemoe", "gpt_oss"])
def test_routed_experts_decode_reads_only_the_picked(tmp_path, family):
    """--experts routed: the package cut at each layer with experts, their
    weights a file beside it; prefill passes every expert, decode the k
    each token picks. It generates the dense package's tokens and logits
    (and transformers' tokens): bit for bit, but for GPT-OSS, whose
    dense package folds each expert's biases into its convolutions (one
    fp16 rounding where the routed add has two: 2 ulp), and the estimate's weight
    bytes per decode token are at most 1.5 times the active parameters'
    (fewer than the dense package's, which reads every expert)."""
    from xdsl_ane.api.estimation import estimate
    from xdsl_ane.weights.checkpoint import read_checkpoint

    checkpoint = tmp_path / "ckpt"
    write_checkpoint(checkpoint, family)
    options = dict(context=32, prefill=4, chunk=512)
    compile_llm(checkpoint, **options, experts="routed").save(tmp_path / "r.mlpackage")
    compile_llm(checkpoint, **options).save(tmp_path / "d.mlpackage")
    assert (tmp_path / "r.experts.bin").is_file()
    prompt = [5, 17, 200, 3, 99, 42, 7]
    routed = PackageRunner(tmp_path / "r.mlpackage")
    tokens, logits = routed.generate(prompt, 10)
    dense_tokens, dense_logits = PackageRunner(tmp_path / "d.mlpackage").generate(
        prompt, 10
    )
    assert tokens == dense_tokens == reference_generate(checkpoint, prompt, 10)[0]
    tolerance = 1e-3 if family == "gpt_oss" else 0
    for got, ref in zip(logits, dense_logits):
        np.testing.assert_allclose(got, ref, rtol=0, atol=tolerance)
    record = routed.record["experts"]
    e = record["count"]
    ck = read_checkpoint(checkpoint)
    total = sum(int(np.prod(t.shape)) for t in ck.tensors.values())
    # one expert's parameters in every layer with experts
    expert_params = len(record["layers"]) * sum(
        int(np.prod(shape[1:])) for shape in record["shapes"].values()
    )
    active = total - expert_params * (e - record["top_k"])

    def decode(path) -> tuple[int, int]:
        """(bytes, weight bytes) a decode call's ops move."""
        ops = [o for o in estimate(path).ops if o.function.startswith("decode")]
        return sum(o.bytes for o in ops), sum(o.weight_bytes for o in ops)

    expert_bytes = 2 * expert_params  # fp16
    (routed, weights), (dense, _) = (
        decode(tmp_path / "r.mlpackage"),
        decode(tmp_path / "d.mlpackage"),
    )
    assert weights + record["top_k"] * expert_bytes <= 1.5 * 2 * active
    # the unpicked experts' bytes are all saved: the picked experts' inputs
    # move once (no slice or reshape copies them), the cut's activations
    # are small beside them
    assert dense - routed >= 0.9 * (e - record["top_k"]) * expert_bytes


def test_experts_other_than_the_config_are_named(tmp_path):
    """A checkpoint with more experts than config.json says: the router's
    tensor named with both shapes; a layer config.json makes dense where
    the checkpoint has experts: the dense MLP's tensor named missing."""
    checkpoint = edited(tmp_path / "a", "mixtral", num_local_experts=3)
    with pytest.raises(
        XdslAneError,
        match=r"tensor 'model.layers.0.block_sparse_moe.gate.weight' has shape "
        r"\[4, 64\], the config needs \[3, 64\]",
    ):
        compile_llm(checkpoint, context=16, prefill=4)
    checkpoint = edited(tmp_path / "b", "qwen3_moe", mlp_only_layers=[0, 1])
    with pytest.raises(
        XdslAneError,
        match=r"tensor 'model.layers.0.mlp.gate_proj.weight' is missing",
    ):
        compile_llm(checkpoint, context=16, prefill=4)


def test_moe_refusals(tmp_path):
    """What --experts routed does not take (compression, split packages,
    a model without experts) and training are refused
    in one line, naming the option or the field; an unknown --experts value
    from Python names it too."""
    checkpoint = tmp_path / "ckpt"
    write_checkpoint(checkpoint, "mixtral")
    routed = dict(context=16, prefill=4, experts="routed")
    for extra in ({"compress": "int8"}, {"layers_per_package": 1}):
        with pytest.raises(XdslAneError, match=r"^experts='routed': routed experts"):
            compile_llm(checkpoint, **routed, **extra)
    write_checkpoint(tmp_path / "dense", "qwen3")
    with pytest.raises(XdslAneError, match=r"^experts='routed': the model has no"):
        compile_llm(tmp_path / "dense", **routed)
    with pytest.raises(XdslAneError, match=r"^experts='sparse': expected dense or"):
        compile_llm(checkpoint, context=16, prefill=4, experts="sparse")
    from xdsl_ane.api.train import training_setup

    with pytest.raises(XdslAneError, match="config.json: num_experts: mixtral models"):
        training_setup(checkpoint, 8)


def test_routed_experts_in_several_inputs(tmp_path, monkeypatch):
    """Where E experts' channels would pass the ANE's dimension limit, an
    input holds as many as fit (here one, the limit lowered to 64): the
    prefill takes its experts in E inputs per kind and still generates
    the dense package's tokens and logits."""
    import xdsl_ane.models.routed as routed

    checkpoint = tmp_path / "ckpt"
    write_checkpoint(checkpoint, "qwen3_moe")
    options = dict(context=32, prefill=4, chunk=512)
    compile_llm(checkpoint, **options).save(tmp_path / "d.mlpackage")
    monkeypatch.setattr(routed, "MAX_DIMENSION", 64)
    compile_llm(checkpoint, **options, experts="routed").save(tmp_path / "r.mlpackage")
    runner = PackageRunner(tmp_path / "r.mlpackage")
    assert runner.record["experts"]["per_input"] == {"prefill": 1, "decode": 1}
    assert "experts_gate_3" in runner.record["segments"][1]["inputs"]["prefill"]
    prompt = [5, 17, 200, 3, 99, 42, 7]
    tokens, logits = runner.generate(prompt, 6)
    dense = PackageRunner(tmp_path / "d.mlpackage").generate(prompt, 6)
    assert tokens == dense[0]
    for got, ref in zip(logits, dense[1]):
        np.testing.assert_array_equal(got, ref)


def test_gemma4_package_generates_transformers_tokens(tmp_path, capsys):
    """Gemma 4 text (full layers with heads of their own, keys as values,
    value norms, proportional RoPE, per-layer inputs, two layers sharing
    the first two's keys and values, experts beside each MLP, layer
    scalars) through the fp16 package, as `generate --reference` checks
    it: transformers' 12 greedy tokens after a prompt of two prefill
    chunks, the sliding layers in a ring of their own shape; the estimate
    places every op; training is refused naming architectures."""
    checkpoint = tmp_path / "ckpt"
    write_checkpoint(checkpoint, "gemma4_text", tied=True, dtype="bfloat16")
    out = tmp_path / "llm.mlpackage"
    package = compile_llm(checkpoint, context=32, prefill=4, chunk=128)
    package.save(out)
    states = {k: v["shape"] for k, v in package.manifest_record["states"].items()}
    assert states == {  # layers 2 and 3 read layers 0 and 1's
        "key_cache": [1, 1, 32, 32],
        "value_cache": [1, 1, 32, 32],
        "local_key_cache": [1, 2, 6, 16],
        "local_value_cache": [1, 2, 6, 16],
    }
    from xdsl_ane.api.estimation import estimate

    report = estimate(package, "m4")
    products = [o for o in report.ops if o.op in ("conv", "matmul", "softmax")]
    assert products and all(o.unit == "ane" for o in products)
    assert report.total_ms > 0
    capsys.readouterr()
    prompt = "5,17,200,3,99,42,7"
    command = ["generate", str(out), "--prompt-ids", prompt, "--max-new-tokens"]
    assert main([*command, "12", "--reference", str(checkpoint)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == "same tokens", lines
    from xdsl_ane.api.train import training_setup

    with pytest.raises(XdslAneError, match="architectures: gemma4_text models"):
        training_setup(checkpoint, 8)


def test_gemma4_per_layer_table_is_a_file_beside_the_packages(tmp_path):
    """Gemma 4's per-layer embedding table is no constant of the package:
    it is OUT.per_layer.bin (OUT/per_layer.bin split), the checkpoint's
    rows in fp16, which the manifest records; the package's blob is
    smaller than the table's bytes. Whole and split generate the same
    tokens from it; a short file is a one-line error naming it."""
    checkpoint = tmp_path / "ckpt"
    write_checkpoint(  # a table of 2000 × 4 · 128, 2 MB in fp16
        checkpoint,
        "gemma4_text",
        tied=True,
        vocab_size=2000,
        vocab_size_per_layer_input=2000,
        hidden_size_per_layer_input=128,
    )
    config = llm_config(read_checkpoint(checkpoint))
    name = "model.embed_tokens_per_layer.weight"
    table = read_checkpoint(checkpoint).tensor(name)[: config.vocab_size]
    expected = np.asarray(table, np.float32).astype(np.float16).tobytes()
    options = dict(context=32, prefill=4, chunk=512)
    whole = compile_llm(checkpoint, **options, output=tmp_path / "w.mlpackage")
    record = whole.manifest_record["per_layer"]
    assert record["file"] == "per_layer.bin" and record["dtype"] == "fp16"
    assert record["shape"] == [config.vocab_size, config.num_layers * 128]
    assert record["input"] == "per_layer_rows"
    assert "per_layer_rows" in whole.manifest_record["inputs"]
    assert (tmp_path / "w.per_layer.bin").read_bytes() == expected
    (blob,) = (tmp_path / "w.mlpackage").rglob("weight.bin")
    assert blob.stat().st_size < len(expected)
    row = 2 * config.num_layers * 128  # a row's bytes; row 0 (padding) is 0
    assert expected[5 * row : 6 * row] not in blob.read_bytes()
    split = tmp_path / "s"
    compile_llm(checkpoint, **options, layers_per_package=2, output=split)
    assert (split / "per_layer.bin").read_bytes() == expected
    embed = json.loads((split / "manifest.json").read_text())["llm"]["packages"][0]
    assert embed["inputs"] == ["input_ids", "per_layer_rows"]
    prompt = [5, 17, 200, 3, 99, 42, 7]
    tokens = PackageRunner(tmp_path / "w.mlpackage").generate(prompt, 6)[0]
    assert PackageRunner(split).generate(prompt, 6)[0] == tokens
    with open(split / "per_layer.bin", "r+b") as f:
        f.truncate(len(expected) - 2)
    with pytest.raises(XdslAneError) as error:
        PackageRunner(split)
    assert str(error.value) == (
        f"{split / 'per_layer.bin'}: the per-layer embedding table is missing or "
        f"not {len(expected)} bytes"
    )
    (tmp_path / "w.per_layer.bin").unlink()
    with pytest.raises(XdslAneError, match="w.per_layer.bin: the per-layer"):
        PackageRunner(tmp_path / "w.mlpackage")


def test_gemma4_config_of_the_hub_form(tmp_path):
    """A config.json as Google's checkpoints write it: global_head_dim and
    num_global_key_value_heads rather than per_layer_config, and no
    sliding_window (512: beyond the context, yet the sliding layers keep
    their heads apart from the full ones'): the fp32 program gives
    transformers' logits and tokens."""
    checkpoint = edited(
        tmp_path,
        "gemma4_text",
        per_layer_config=None,
        global_head_dim=32,
        num_global_key_value_heads=1,
        sliding_window=None,
    )
    config = llm_config(read_checkpoint(checkpoint))
    assert config.sliding_window == 512 and config.global_heads == (1, 32)
    assert config.kv_sources == ((2, 0), (3, 1))
    model = transformers.Gemma4ForCausalLM.from_pretrained(checkpoint).eval()
    shape = LlmShape(context=16, prefill=8)
    assert_same_greedy(
        program_greedy(checkpoint, PROMPT, STEPS, shape),
        reference_greedy(model, PROMPT, STEPS),
    )


def test_gemma4_default_configs_are_read():
    """Gemma4TextConfig's defaults (per-layer inputs of 256 over 262144
    rows, every 6th layer full with heads of 512, proportional RoPE of a
    quarter of them) and a mixture-of-experts one as the 26B-A4B's (128
    experts, top 8, 2 KV heads of the full layers, keys as values): the
    config reads and the caches take each kind's heads."""
    from pathlib import Path

    from xdsl_ane.models.llm import Decoder
    from xdsl_ane.weights.checkpoint import Checkpoint

    experts = dict(
        enable_moe_block=True,
        num_experts=128,
        top_k_experts=8,
        moe_intermediate_size=704,
        attention_k_eq_v=True,
        num_global_key_value_heads=2,
        hidden_size_per_layer_input=0,
    )
    for fields, full_heads in [({}, (4, 512)), (experts, (2, 512))]:
        saved = transformers.Gemma4TextConfig(**fields).to_dict()
        saved["architectures"] = ["Gemma4ForCausalLM"]
        config = llm_config(Checkpoint(Path("ckpt"), saved))
        assert config.global_heads == full_heads
        assert (config.num_kv_heads, config.head_dim) == (4, 256)
        full = set(range(config.num_layers)) - config.sliding_layers
        assert full == {5, 11, 17, 23, 29} and config.sliding_window == 512
        assert config.rope_scaling == {
            "rope_type": "proportional",
            "factor": 1.0,
            "partial_rotary_factor": 0.25,
        }
        assert config.local_rope == (10000.0, None)
        assert config.keys_as_values == bool(fields)
        if fields:
            assert config.moe is not None and config.per_layer_width is None
            assert (config.moe.experts, config.moe.top_k) == (128, 8)
        else:
            assert config.moe is None
            assert (config.per_layer_width, config.per_layer_vocab) == (256, 262144)
        shapes = Decoder(config, LlmShape(context=4096, prefill=64)).cache_shapes()
        assert shapes["key_cache"] == (5, *full_heads[:1], 4096, 512)
        assert shapes["local_key_cache"] == (25, 4, 512, 256)


def test_gemma4_multimodal_checkpoint_is_read_for_its_text(tmp_path, capsys):
    """A Gemma4ForConditionalGeneration checkpoint (Google's form: the
    decoder's fields in text_config, its tensors under
    model.language_model., a vision encoder beside) compiles to its text
    decoder, the image placeholder embedded as padding as the multimodal
    model does without an image; the fp16 package gives transformers'
    12 greedy tokens for a prompt holding the placeholder (3)."""
    checkpoint = tmp_path / "ckpt"
    write_checkpoint(checkpoint, "gemma4", tied=True)
    out = tmp_path / "llm.mlpackage"
    compile_llm(checkpoint, context=32, prefill=4, chunk=128).save(out)
    assert PackageRunner(out).record["family"] == "gemma4"
    capsys.readouterr()
    command = ["generate", str(out), "--prompt-ids", "5,3,17,200,3,99,42"]
    assert (
        main([*command, "--max-new-tokens", "12", "--reference", str(checkpoint)]) == 0
    )
    assert capsys.readouterr().out.splitlines()[-1] == "same tokens"
    path = checkpoint / "config.json"
    path.write_text(json.dumps(json.loads(path.read_text()) | {"text_config": None}))
    with pytest.raises(XdslAneError, match="field 'text_config' is None"):
        llm_config(read_checkpoint(checkpoint))

"""Tiny Hugging Face checkpoints written by the tests: random weights of a
small config in the Hugging Face file layout (save_pretrained), one per
family, and transformers' own logits for a prompt and greedy steps."""

from __future__ import annotations

from pathlib import Path

import numpy as np

SMALL = dict(
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    vocab_size=300,
    max_position_embeddings=256,
)


def family_config(family: str, tied: bool = False, layers: int = 2, **overrides):
    """transformers' config of `family` at the SMALL size; `overrides` are
    config fields set on top (attention_bias=True, hidden_act="gelu")."""
    import transformers

    if family == "gemma4":  # Gemma 4 text with a tiny vision encoder beside
        vision = transformers.Gemma4VisionConfig(
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=2,
            head_dim=16,
            position_embedding_size=64,
        )
        text = family_config("gemma4_text", tied, layers, **overrides)
        return transformers.Gemma4Config(  # token 3 is the image's placeholder
            text_config=text,
            vision_config=vision,
            audio_config=None,
            image_token_id=3,
            tie_word_embeddings=tied,
        )
    fields = dict(SMALL, tie_word_embeddings=tied, num_hidden_layers=layers)
    if family == "qwen3":
        fields.update(head_dim=16, rms_norm_eps=1e-6)
    elif family == "llama":
        fields.update(
            rope_scaling={
                "rope_type": "llama3",
                "factor": 8.0,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
                "original_max_position_embeddings": 32,
            },
            rope_theta=500000.0,
        )
    elif family == "mistral":
        fields.update(sliding_window=None)
    elif family == "gemma":
        fields.update(head_dim=16)
    elif family == "gemma3_text":
        # a sliding layer (window 6, its own RoPE base) and a full one; a
        # query scale that is not head_dim's; soft-capped logits
        fields.update(
            head_dim=16,
            layer_types=["sliding_attention", "full_attention"],
            sliding_window=6,
            query_pre_attn_scalar=24,
            final_logit_softcapping=5.0,
        )
    elif family == "gemma4_text":
        # sliding and full layers in turn, the full ones with heads of
        # their own (one KV head of 32, its keys its values); the last two
        # layers read the first two's keys and values, with MLPs twice as
        # wide; per-layer inputs of 8; 4 experts (top 2) beside each MLP
        layers = max(layers, 4)
        fields.update(
            num_hidden_layers=layers,
            head_dim=16,
            global_head_dim=32,
            num_global_key_value_heads=1,
            attention_k_eq_v=True,
            layer_types=["sliding_attention", "full_attention"] * (layers // 2),
            sliding_window=6,
            num_kv_shared_layers=2,
            use_double_wide_mlp=True,
            hidden_size_per_layer_input=8,
            vocab_size_per_layer_input=300,
            enable_moe_block=True,
            num_experts=4,
            top_k_experts=2,
            moe_intermediate_size=32,
            final_logit_softcapping=5.0,
        )
    elif family == "gpt_neox":  # every head its own key and value
        del fields["num_key_value_heads"]
    elif family == "gpt2":  # its own field names; the MLP 4 × hidden
        fields = dict(
            n_embd=64,
            n_layer=layers,
            n_head=4,
            n_positions=256,
            vocab_size=300,
            tie_word_embeddings=tied,
            bos_token_id=0,
            eos_token_id=0,
        )
    elif family == "granite":  # multipliers away from 1
        fields.update(
            embedding_multiplier=2.0,
            residual_multiplier=0.5,
            attention_multiplier=0.3,
            logits_scaling=4.0,
        )
    elif family == "smollm3":  # the second layer without RoPE
        fields.update(no_rope_layers=[1, 0], pad_token_id=0)
    elif family == "gemma2":
        # soft-capped scores and logits, the caps near the values' sizes
        # (small random weights: a score cap of 50 would change nothing; at
        # 0.01 leaving it out moves the logits by 2%)
        fields.update(
            head_dim=16,
            layer_types=["sliding_attention", "full_attention"],
            sliding_window=6,
            query_pre_attn_scalar=24,
            attn_logit_softcapping=0.01,
            final_logit_softcapping=5.0,
        )
    elif family == "phi3":
        fields.update(sliding_window=None, pad_token_id=0)
    elif family in ("glm", "glm4"):  # half of each head rotated, interleaved
        fields.update(head_dim=16, pad_token_id=0, eos_token_id=1)
    elif family == "olmo3":
        # a sliding layer with its own RoPE, a full one with YaRN's
        fields.update(
            layer_types=["sliding_attention", "full_attention"],
            sliding_window=6,
            pad_token_id=0,
            eos_token_id=1,
            rope_parameters={
                "full_attention": {
                    "rope_type": "yarn",
                    "rope_theta": 10000.0,
                    "factor": 4.0,
                    "original_max_position_embeddings": 64,
                },
                "sliding_attention": {"rope_type": "default", "rope_theta": 5000.0},
            },
        )
    elif family == "exaone4":  # the full layer without RoPE
        fields.update(
            layer_types=["sliding_attention", "full_attention"], sliding_window=6
        )
    elif family == "seed_oss":  # biases on q, k, v (its default), o, the MLP
        fields.update(head_dim=16, attention_out_bias=True, mlp_bias=True)
    elif family == "apertus":  # xIELU, QK-norm, llama3 RoPE, its norms' names
        fields.update(head_dim=16, pad_token_id=0, eos_token_id=1)
    elif family == "lfm2":  # conv and attention layers in turn, conv biases
        types = ["full_attention" if i % 2 else "conv" for i in range(layers)]
        fields.update(layer_types=types, conv_bias=True, block_multiple_of=32)
    elif family == "mamba2":  # its own fields: 8 heads of 16 in 2 groups
        fields = dict(
            hidden_size=64,
            num_hidden_layers=layers,
            vocab_size=300,
            num_heads=8,
            head_dim=16,
            state_size=16,
            n_groups=2,
            tie_word_embeddings=tied,
            pad_token_id=0,
            bos_token_id=1,
            eos_token_id=2,
        )
    elif family == "granitemoehybrid":  # Mamba2 and attention layers, no experts
        types = ["attention" if i % 2 else "linear_attention" for i in range(layers)]
        fields.update(
            layer_types=types,
            num_local_experts=0,
            shared_intermediate_size=96,
            mamba_n_heads=8,
            mamba_d_head=16,
            mamba_d_state=16,
            mamba_n_groups=2,
            embedding_multiplier=2.0,
            residual_multiplier=0.5,
            attention_multiplier=0.3,
            logits_scaling=4.0,
        )
    elif family == "qwen3_5":  # delta-nets and gated attention in turn
        types = [
            "full_attention" if i % 2 else "linear_attention" for i in range(layers)
        ]
        fields.update(
            layer_types=types,
            head_dim=16,
            linear_key_head_dim=16,
            linear_value_head_dim=16,
            linear_num_key_heads=2,
            linear_num_value_heads=4,
            pad_token_id=0,
            eos_token_id=1,
        )
    elif family == "gpt_oss":  # sinks, windows in turn, 4 experts (top 2)
        fields.update(
            head_dim=16,
            num_local_experts=4,
            num_experts_per_tok=2,
            intermediate_size=32,
            sliding_window=6,
            pad_token_id=0,
            eos_token_id=1,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        )
    elif family == "ministral3":  # YaRN; queries scaled from position 16384
        fields.update(head_dim=16, pad_token_id=0)
    elif family == "qwen3_moe":  # layer 0 of 4 experts, layer 1 dense
        fields.update(
            head_dim=16,
            num_experts=4,
            num_experts_per_tok=2,
            moe_intermediate_size=32,
            norm_topk_prob=True,
            mlp_only_layers=[1],
        )
    elif family in ("mixtral", "olmoe"):  # 4 experts, the top 2 per token
        fields.update(
            num_local_experts=4,
            num_experts_per_tok=2,
            intermediate_size=48,
            pad_token_id=0,
            eos_token_id=1,
        )
    elif family == "granitemoe":  # stacked experts; multipliers away from 1
        fields.update(
            num_local_experts=4,
            num_experts_per_tok=2,
            intermediate_size=48,
            embedding_multiplier=2.0,
            residual_multiplier=0.5,
            attention_multiplier=0.3,
            logits_scaling=4.0,
        )
    return model_class_of(family).config_class(**(fields | overrides))


def model_class_of(family: str):
    """transformers' class of `family`: its row of models.hf_config.FAMILIES."""
    import transformers

    from xdsl_ane.models.hf_config import FAMILIES

    (arch,) = [a for a, f in FAMILIES.items() if f.name == family]
    return getattr(transformers, arch)


def write_checkpoint(
    directory: Path,
    family: str = "qwen3",
    tied: bool = False,
    dtype: str = "float32",
    shard_size: str | None = None,
    seed: int = 0,
    layers: int = 2,
    **overrides,
):
    """save_pretrained of a randomly initialized model (config fields
    `overrides` set on the family's small config); returns transformers'
    model read back from the files in float32 (its RoPE buffers computed
    anew, not rounded to the file's dtype)."""
    import torch

    torch.manual_seed(seed)
    config = family_config(family, tied, layers, **overrides)
    model_class = model_class_of(family)
    model = model_class(config).eval()
    with torch.no_grad():  # norms away from 1, biases from 0, xIELU's per layer
        for name, p in model.named_buffers():  # Gemma 4's, saved
            if name.endswith(".layer_scalar"):
                p.copy_(0.5 + torch.rand_like(p))
        for name, p in model.named_parameters():
            per_layer = (
                ".act_fn.",
                ".A_log",
                ".D",
                "dt_bias",
                "_proj_bias",
                ".sinks",
                ".router.scale",
                ".per_expert_scale",
            )
            if (
                "norm" in name
                or name.endswith(".bias")
                or any(k in name for k in per_layer)
            ):
                p.add_(0.1 * torch.randn_like(p))
            if "linear_attn.A_log" in name:  # slow decays: the delta rule counts
                p.copy_(-3.0 + 0.1 * torch.randn_like(p))
            routers = (
                ".mlp.gate.weight",
                ".router.weight",
                ".router.proj.weight",
                ".router.layer.weight",
                ".mlp.router.bias",
            )
            if name.endswith(routers):
                p.normal_(0.0, 0.3)  # routers whose top k differ by token
    saved = model.to(getattr(torch, dtype))
    kwargs = {"max_shard_size": shard_size} if shard_size else {}
    saved.save_pretrained(directory, **kwargs)
    return model_class.from_pretrained(directory, dtype=torch.float32).eval()


def reference_greedy(model, prompt: list[int], steps: int):
    """transformers' logits for the prompt (last row each step) and the
    greedy tokens: (prefill logits [N, V], [logits [V] per step], tokens).
    A model whose output has no past_key_values (Mamba2's cache_params)
    runs the whole sequence again each step, without a cache."""
    import torch

    with torch.no_grad():
        ids = torch.tensor([prompt])
        out = model(ids, use_cache=True)
        prefill = out.logits[0].numpy()
        past = getattr(out, "past_key_values", None)
        token = int(prefill[-1].argmax())
        tokens, steps_logits = [token], []
        for _ in range(steps):
            if past is None:
                out = model(torch.tensor([prompt + tokens]), use_cache=False)
            else:
                out = model(
                    torch.tensor([[token]]), past_key_values=past, use_cache=True
                )
                past = out.past_key_values
            logits = out.logits[0, -1].numpy()
            steps_logits.append(logits)
            token = int(np.argmax(logits))
            tokens.append(token)
    return prefill, steps_logits, tokens


def program_greedy(directory: Path, prompt: list[int], steps: int, shape):
    """The fp32 rlx program of checkpoint `directory` (every tensor read,
    check_all_used) in the interpreter: prefill calls of shape.prefill
    tokens at positions 0, N, 2N, ... (prompt_calls), then greedy
    decode: (prompt logits [N, V], [logits [V] per step], tokens)."""
    from xdsl_ane.interpreter.core import StatefulRuntime
    from xdsl_ane.models.checkpoint_use import check_all_used
    from xdsl_ane.models.hf_config import llm_config
    from xdsl_ane.models.kv_cache import prompt_calls
    from xdsl_ane.models.llm import Decoder
    from xdsl_ane.weights.checkpoint import read_checkpoint

    checkpoint = read_checkpoint(directory)
    config = llm_config(checkpoint)
    module = Decoder(config, shape).build()
    module.verify()
    check_all_used(checkpoint, config, shape.chunk, [module])
    runtime = StatefulRuntime(
        module, Decoder(config, shape).weights(checkpoint, module)
    )
    rows = []
    window = Decoder(config, shape).local_window
    recurrent = config.recurrent
    calls = prompt_calls(len(prompt), shape.prefill, window, recurrent)
    for function, start, count in calls:
        ids = np.zeros(shape.prefill if function == "prefill" else 1, np.int32)
        ids[:count] = prompt[start : start + count]
        out = runtime.call(function, program_inputs(checkpoint, config, ids, start))
        rows.append(np.concatenate(out, 1)[:count].astype(np.float32))
    logits = np.concatenate(rows)
    token = int(logits[-1].argmax())
    tokens, steps_logits = [token], []
    for i in range(steps):
        position = np.array([len(prompt) + i], np.int32)
        ids = np.array([token], np.int32)
        out = runtime.call("decode", program_inputs(checkpoint, config, ids, position))
        step = np.concatenate(out, 1)[0].astype(np.float32)
        steps_logits.append(step)
        token = int(step.argmax())
        tokens.append(token)
    return logits, steps_logits, tokens


def assert_same_greedy(got, expected, rtol: float = 1e-4) -> None:
    """program_greedy against reference_greedy: logits within rtol of the
    largest prompt logit, the same tokens."""
    scale = np.abs(expected[0]).max()
    np.testing.assert_allclose(got[0], expected[0], rtol=rtol, atol=rtol * scale)
    for g, e in zip(got[1], expected[1]):
        np.testing.assert_allclose(g, e, rtol=rtol, atol=rtol * scale)
    assert got[2] == expected[2]


def program_inputs(checkpoint, config, ids, position) -> list[np.ndarray]:
    """input_ids, position and, with per-layer inputs (Gemma 4), the
    per-layer table's rows of the ids, as the runtime reads them from the
    file beside the package."""
    from xdsl_ane.models.per_layer_inputs import checkpoint_rows

    given = [ids, np.asarray(position, np.int32).reshape(1)]
    if config.per_layer_width:
        given.append(checkpoint_rows(config, checkpoint, ids))
    return given

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


def family_config(family: str, tied: bool = False, layers: int = 2):
    import transformers

    common = dict(SMALL, tie_word_embeddings=tied, num_hidden_layers=layers)
    if family == "qwen3":
        return transformers.Qwen3Config(head_dim=16, rms_norm_eps=1e-6, **common)
    if family == "qwen2":
        return transformers.Qwen2Config(**common)
    if family == "llama":
        return transformers.LlamaConfig(
            rope_scaling={
                "rope_type": "llama3",
                "factor": 8.0,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
                "original_max_position_embeddings": 32,
            },
            rope_theta=500000.0,
            **common,
        )
    if family == "mistral":
        return transformers.MistralConfig(sliding_window=None, **common)
    raise KeyError(family)


def write_checkpoint(
    directory: Path,
    family: str = "qwen3",
    tied: bool = False,
    dtype: str = "float32",
    shard_size: str | None = None,
    seed: int = 0,
    layers: int = 2,
):
    """save_pretrained of a randomly initialized model; returns
    transformers' model read back from the files in float32 (its RoPE
    buffers computed anew, not rounded to the file's dtype)."""
    import torch
    import transformers

    torch.manual_seed(seed)
    config = family_config(family, tied, layers)
    model_class = {
        "qwen3": transformers.Qwen3ForCausalLM,
        "qwen2": transformers.Qwen2ForCausalLM,
        "llama": transformers.LlamaForCausalLM,
        "mistral": transformers.MistralForCausalLM,
    }[family]
    model = model_class(config).eval()
    with torch.no_grad():  # norms away from 1 and biases away from 0
        for name, p in model.named_parameters():
            if "norm" in name or name.endswith(".bias"):
                p.add_(0.1 * torch.randn_like(p))
    saved = model.to(getattr(torch, dtype))
    kwargs = {"max_shard_size": shard_size} if shard_size else {}
    saved.save_pretrained(directory, **kwargs)
    return model_class.from_pretrained(directory, dtype=torch.float32).eval()


def reference_greedy(model, prompt: list[int], steps: int):
    """transformers' logits for the prompt (last row each step) and the
    greedy tokens: (prefill logits [N, V], [logits [V] per step], tokens)."""
    import torch

    with torch.no_grad():
        ids = torch.tensor([prompt])
        out = model(ids, use_cache=True)
        prefill = out.logits[0].numpy()
        past = out.past_key_values
        token = int(prefill[-1].argmax())
        tokens, steps_logits = [token], []
        for _ in range(steps):
            out = model(torch.tensor([[token]]), past_key_values=past, use_cache=True)
            past = out.past_key_values
            logits = out.logits[0, -1].numpy()
            steps_logits.append(logits)
            token = int(np.argmax(logits))
            tokens.append(token)
    return prefill, steps_logits, tokens

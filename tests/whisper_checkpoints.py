"""Tiny Whisper checkpoints written by the tests: a random
WhisperForConditionalGeneration of a small config (save_pretrained), with a
generation_config.json of Whisper's special tokens and a feature
extractor's preprocessor_config.json, all built offline. The vocabulary is
Whisper's layout in miniature: text tokens, then <|endoftext|>,
<|startoftranscript|>, the language tokens, <|translate|>,
<|transcribe|>, <|startoflm|>, <|startofprev|>, <|nospeech|>,
<|notimestamps|> and the timestamps <|0.00|> ... in steps of 0.02 s."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

TEXT_TOKENS = 40
LANGUAGES = ["en", "de", "fr"]
TIMESTAMPS = 1501
"""<|0.00|> ... <|30.00|>: a 30 s window in steps of 0.02 s."""


def special_tokens(multilingual: bool = True) -> dict[str, int]:
    """Whisper's special tokens by name, after the text tokens."""
    names = ["<|endoftext|>", "<|startoftranscript|>"]
    if multilingual:
        names += [f"<|{code}|>" for code in LANGUAGES]
    names += [
        "<|translate|>",
        "<|transcribe|>",
        "<|startoflm|>",
        "<|startofprev|>",
        "<|nospeech|>",
        "<|notimestamps|>",
    ]
    return {name: TEXT_TOKENS + i for i, name in enumerate(names)}


def vocab_size(multilingual: bool = True) -> int:
    return TEXT_TOKENS + len(special_tokens(multilingual)) + TIMESTAMPS


def generation_config(multilingual: bool = True) -> dict:
    """generation_config.json as Whisper's checkpoints have it."""
    ids = special_tokens(multilingual)
    config = {
        "decoder_start_token_id": ids["<|startoftranscript|>"],
        "eos_token_id": ids["<|endoftext|>"],
        "pad_token_id": ids["<|endoftext|>"],
        "bos_token_id": ids["<|endoftext|>"],
        "no_timestamps_token_id": ids["<|notimestamps|>"],
        "prev_sot_token_id": ids["<|startofprev|>"],
        "is_multilingual": multilingual,
        "max_length": 448,
        "begin_suppress_tokens": [TEXT_TOKENS - 1, ids["<|endoftext|>"]],
        "suppress_tokens": [1, 2, 7, 11, ids["<|startoflm|>"]],
    }
    if multilingual:
        config |= {
            "lang_to_id": {f"<|{c}|>": ids[f"<|{c}|>"] for c in LANGUAGES},
            "task_to_id": {
                "transcribe": ids["<|transcribe|>"],
                "translate": ids["<|translate|>"],
            },
            "forced_decoder_ids": [[1, None], [2, ids["<|transcribe|>"]]],
        }
    else:
        config["forced_decoder_ids"] = [[1, ids["<|notimestamps|>"]]]
    return config


def write_whisper(
    directory: Path,
    mels: int = 80,
    multilingual: bool = True,
    decoder_layers: int = 2,
    seed: int = 0,
    dtype: str = "float32",
    **overrides,
):
    """save_pretrained of a random tiny Whisper (2 encoder layers, its own
    decoder layer count) with generation_config.json and
    preprocessor_config.json; returns transformers' model read back."""
    import torch
    import transformers

    torch.manual_seed(seed)
    ids = special_tokens(multilingual)
    fields = dict(
        vocab_size=vocab_size(multilingual),
        num_mel_bins=mels,
        d_model=32,
        encoder_layers=2,
        encoder_attention_heads=2,
        encoder_ffn_dim=64,
        decoder_layers=decoder_layers,
        decoder_attention_heads=4,
        decoder_ffn_dim=48,
        max_source_positions=1500,
        max_target_positions=64,
        decoder_start_token_id=ids["<|startoftranscript|>"],
        pad_token_id=ids["<|endoftext|>"],
        eos_token_id=ids["<|endoftext|>"],
        bos_token_id=ids["<|endoftext|>"],
    )
    config = transformers.WhisperConfig(**(fields | overrides))
    model = transformers.WhisperForConditionalGeneration(config).eval()
    with torch.no_grad():  # norms away from 1, biases away from 0
        for name, p in model.named_parameters():
            if "norm" in name or name.endswith(".bias"):
                p.add_(0.1 * torch.randn_like(p))
            elif name.endswith("embed_tokens.weight"):
                p.normal_(0.0, 0.5)  # logits that differ from token to token
    model.to(getattr(torch, dtype)).save_pretrained(directory)
    (Path(directory) / "generation_config.json").write_text(
        json.dumps(generation_config(multilingual), indent=2)
    )
    extractor = transformers.WhisperFeatureExtractor(feature_size=mels)
    extractor.save_pretrained(directory)
    return transformers.WhisperForConditionalGeneration.from_pretrained(
        directory, dtype=torch.float32
    ).eval()


def tone(seconds: float, pitch: float = 440.0, rate: int = 16000, seed: int = 0):
    """A tone with noise, [N] float32 in [-1, 1]."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * rate)) / rate
    wave = 0.4 * np.sin(2 * np.pi * pitch * t) * (1 + 0.5 * np.sin(2 * np.pi * 1.3 * t))
    return (wave + 0.02 * rng.standard_normal(len(t))).astype(np.float32)

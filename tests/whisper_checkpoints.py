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
        "max_initial_timestamp_index": 50,
        "begin_suppress_tokens": [TEXT_TOKENS - 1, ids["<|endoftext|>"]],
        "suppress_tokens": [1, 2, 7, 11]
        + [ids[t] for t in ("<|translate|>", "<|transcribe|>", "<|startoflm|>")]
        + [ids[t] for t in ("<|startofprev|>", "<|nospeech|>")],
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
    tied: bool = False,
    **overrides,
):
    """save_pretrained of a random tiny Whisper (2 encoder layers, its own
    decoder layer count; the head `proj_out` its own unless `tied`) with generation_config.json and
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
        tie_word_embeddings=tied,
    )
    config = transformers.WhisperConfig(**(fields | overrides))
    model = transformers.WhisperForConditionalGeneration(config).eval()
    # norms away from 1, biases away from 0; at init the sinusoidal
    # positions drown the convolutions' output and the cross-attention is
    # too weak for the audio to change the tokens: larger conv weights and
    # cross-attention values, and embeddings whose logits differ
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name or name.endswith(".bias"):
                p.add_(0.1 * torch.randn_like(p))
            elif ".conv" in name:
                p.normal_(0.0, 0.3)
            elif name.endswith(("embed_tokens.weight", "proj_out.weight")):
                p.normal_(0.0, 0.1)
            elif "encoder_attn.v_proj" in name or "encoder_attn.out_proj" in name:
                p.mul_(8**0.5)
        # timestamps (most of the vocabulary) less likely than text
        head = model.get_output_embeddings().weight
        head[ids["<|notimestamps|>"] + 1 :] *= 0.3
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


def noise(seconds: float, seed: int = 1, rate: int = 16000):
    """Gaussian noise, [N] float32."""
    rng = np.random.default_rng(seed)
    return (0.3 * rng.standard_normal(int(seconds * rate))).astype(np.float32)


WORDS = (
    "the a cat dog sat ran on in under over mat rug red blue green small big "
    "old new one two three four five and but then now here there is was saw "
    "met quick slow bird fish tree house"
).split()
"""The text tokens' words: ids 0 .. 39."""


def write_tokenizer(directory: Path, multilingual: bool = True) -> None:
    """tokenizer.json (a WordLevel tokenizer: every text id a word, the
    special tokens and timestamps added as special) and
    tokenizer_config.json, built with the tokenizers package."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    assert len(WORDS) == TEXT_TOKENS
    tokenizer = Tokenizer(
        models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="the")
    )
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.decoder = decoders.WordPiece(prefix="##")  # words joined by spaces
    stamps = [f"<|{i * 0.02:.2f}|>" for i in range(TIMESTAMPS)]
    tokenizer.add_special_tokens(
        [AddedToken(t, special=True) for t in [*special_tokens(multilingual), *stamps]]
    )
    tokenizer.save(str(Path(directory) / "tokenizer.json"))
    (Path(directory) / "tokenizer_config.json").write_text(
        json.dumps({"eos_token": "<|endoftext|>", "bos_token": "<|endoftext|>"})
    )

"""Whisper's decoding rules (models/transcription.py) against transformers'
own pieces on random inputs: the timestamp logits processor, the segments
a long-form window keeps and how far it seeks; and the cross-attention
computed once per window, the language detection included."""

from __future__ import annotations

import numpy as np
import pytest
from whisper_checkpoints import generation_config, special_tokens, vocab_size

from xdsl_ane.models.transcription import Transcriber, WhisperTokens, window_tokens

TOKENS = WhisperTokens.of(generation_config(), {})
BEGIN = special_tokens()["<|notimestamps|>"] + 1


def random_sequence(rng: np.random.Generator, length: int) -> list[int]:
    """Text and timestamp tokens, timestamps often in pairs."""
    out: list[int] = []
    while len(out) < length:
        if rng.random() < 0.4:
            stamp = int(rng.integers(BEGIN, BEGIN + 300))
            out += [stamp] * int(rng.integers(1, 3))
        else:
            out.append(int(rng.integers(0, 40)))
    return out[:length]


@pytest.mark.slow  # transformers and torch
def test_timestamp_rules_are_transformers():
    import torch
    from transformers import GenerationConfig
    from transformers.generation.logits_process import WhisperTimeStampLogitsProcessor

    config = GenerationConfig(**generation_config())
    rng = np.random.default_rng(0)
    prompt = [41, 42, 46]  # start, <|en|>, <|transcribe|>
    for trial in range(60):
        new = random_sequence(rng, int(rng.integers(0, 8)))
        logits = rng.normal(size=vocab_size()).astype(np.float32)
        if trial % 3 == 0:  # timestamps likely
            logits[BEGIN:] += 3.0
        processor = WhisperTimeStampLogitsProcessor(config, begin_index=len(prompt))
        expected = processor(torch.tensor([prompt + new]), torch.tensor(logits[None]))
        got = TOKENS.timestamp_rules(logits.copy(), new, not new)
        np.testing.assert_array_equal(np.isinf(got), np.isinf(expected[0].numpy()))
        assert int(np.argmax(got)) == int(expected[0].argmax())


@pytest.mark.slow
def test_window_segments_are_transformers():
    import torch
    from transformers import WhisperForConditionalGeneration

    retrieve = WhisperForConditionalGeneration._retrieve_segment
    rng = np.random.default_rng(1)
    for _ in range(80):
        sequence = random_sequence(rng, int(rng.integers(1, 12)))
        frames = int(rng.integers(100, 3001))
        segments, offset = retrieve(
            seek_sequence=torch.tensor(sequence),
            seek_outputs=[None],
            time_offset=torch.zeros(1, dtype=torch.float64),
            timestamp_begin=BEGIN,
            seek_num_frames=torch.tensor([frames]),
            time_precision=0.02,
            time_precision_features=0.01,
            input_stride=2,
            prev_idx=0,
            idx=0,
            return_token_timestamps=False,
            decoder_input_ids=torch.zeros((1, 4)),
        )
        kept = [int(t) for s in segments for t in s["tokens"]]
        assert window_tokens(sequence, BEGIN, frames) == (kept, int(offset))


@pytest.mark.parametrize("language", [None, "de"])
def test_cross_attention_once_per_window(language):
    """A fake model: prefill (the encoder output given) runs once per
    window, with the language detected or given."""
    prefills, vocabulary = [], vocab_size()

    def logits(tokens, position, encoded):
        if encoded is not None:
            prefills.append(position)
        rows = np.zeros((len(tokens), vocabulary), np.float32)
        rows[:, BEGIN + 20] = 3.0  # <|0.40|> first (within max_initial_timestamp),
        rows[:, TOKENS.eos] = 2.5  # then the end
        rows[:, 43] = 2.0  # <|de|>, detected
        return rows

    transcriber = Transcriber(TOKENS, lambda window: window, logits, context=32)
    features = np.zeros((80, 7000), np.float32)  # three windows
    # a single timestamp ends each window: the next starts after it
    assert transcriber.transcribe(features, language, 4) == [BEGIN + 20] * 3
    assert prefills == [0, 0, 0]
    assert transcriber.prompt == [41, 43, 46]  # start, <|de|>, <|transcribe|>


def test_language_codes_tokens_and_names():
    from xdsl_ane.errors import XdslAneError

    assert TOKENS.language_id("de") == TOKENS.language_id("German") == 43
    assert TOKENS.language_id("<|fr|>") == TOKENS.language_id("french") == 44
    with pytest.raises(
        XdslAneError, match=r"language='klingon': not one of .*\(en, de, fr\)"
    ):
        TOKENS.language_id("klingon")
    english = WhisperTokens.of(generation_config(multilingual=False), {})
    with pytest.raises(XdslAneError, match="English-only"):
        english.language_id("en")
    assert TOKENS.task_id("translate") == TOKENS.task_to_id["translate"]
    with pytest.raises(XdslAneError, match="task='translate': .*English-only"):
        english.task_id("translate")


@pytest.mark.slow  # transformers
def test_language_names_are_transformers():
    from transformers.models.whisper.tokenization_whisper import TO_LANGUAGE_CODE

    from xdsl_ane.models.whisper_languages import LANGUAGE_CODES

    assert LANGUAGE_CODES == TO_LANGUAGE_CODE

"""Whisper checkpoints to rlx programs: the fp32 encoder and the stateful
decoder (prefill computing the cross-attention caches, decode reading
them) interpreted against transformers on the same weights; a decoder
with more layers than the encoder; bad checkpoints give one line."""

from __future__ import annotations

import json

import numpy as np
import pytest
from whisper_checkpoints import tone, write_whisper

from xdsl_ane.dialects import rlx
from xdsl_ane.errors import XdslAneError
from xdsl_ane.interpreter.core import StatefulRuntime, run_function
from xdsl_ane.models.audio import log_mel
from xdsl_ane.models.whisper import (
    WhisperBuilder,
    WhisperShape,
    check_all_read,
    whisper_config,
    whisper_weights,
)
from xdsl_ane.weights.checkpoint import read_checkpoint

# Runs Whisper checkpoints against transformers: -m "not slow" skips them.
pytestmark = pytest.mark.slow


def arrays(weights):
    return {name: np.asarray(w) for name, w in weights.items()}


@pytest.mark.parametrize("mels,decoder_layers,tied", [(80, 3, False), (128, 1, True)])
def test_fp32_programs_match_transformers(tmp_path, mels, decoder_layers, tied):
    """The embedding and the head in 3 chunks: a tied table's chunks are
    the same params at both ends."""
    import torch

    model = write_whisper(tmp_path, mels=mels, decoder_layers=decoder_layers, tied=tied)
    checkpoint = read_checkpoint(tmp_path)
    config = whisper_config(checkpoint)
    assert (config.encoder_layers, config.decoder_layers) == (2, decoder_layers)
    builder = WhisperBuilder(config, WhisperShape(context=16, prefill=4, chunk=700))
    encoder, decoder = builder.encoder_module(), builder.decoder_module()
    check_all_read(checkpoint, [encoder, decoder])
    tables = {
        op.param_name.data
        for op in decoder.walk()
        if isinstance(op, rlx.ParamOp) and "[" in op.param_name.data
    }
    assert len(tables) == (3 if tied else 6)
    features = log_mel(tone(2.0), mels)[None]
    weights = arrays(whisper_weights(config, checkpoint, encoder))
    (hidden,) = run_function(encoder, [features], weights, "encode")
    with torch.no_grad():
        expected = model.model.encoder(torch.from_numpy(features)).last_hidden_state
    np.testing.assert_allclose(hidden, expected.numpy(), atol=1e-4)

    runtime = StatefulRuntime(
        decoder, arrays(whisper_weights(config, checkpoint, decoder))
    )
    prompt = [41, 42, 46]  # <|startoftranscript|> <|en|> <|transcribe|>
    padded = np.array(prompt + [0], np.int32)
    start = np.array([0], np.int32)
    logits = np.concatenate(runtime.call("prefill", [padded, start, hidden]), 1)
    encoded = (expected,)
    with torch.no_grad():
        out = model(encoder_outputs=encoded, decoder_input_ids=torch.tensor([prompt]))
    np.testing.assert_allclose(logits[:3], out.logits[0].numpy(), atol=1e-4)
    past, token = out.past_key_values, int(logits[2].argmax())
    for i in range(6):
        at = np.array([len(prompt) + i], np.int32)
        step = runtime.call("decode", [np.array([token], np.int32), at])
        step = np.concatenate(step, 1)[0]
        with torch.no_grad():
            out = model(
                encoder_outputs=encoded,
                decoder_input_ids=torch.tensor([[token]]),
                past_key_values=past,
            )
        past = out.past_key_values
        np.testing.assert_allclose(step, out.logits[0, -1].numpy(), atol=1e-4)
        token = int(step.argmax())


def test_bad_whisper_checkpoints(tmp_path):
    write_whisper(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps(config | {"d_model": 31}))
    with pytest.raises(XdslAneError, match="'encoder_attention_heads' is 2, which"):
        whisper_config(read_checkpoint(tmp_path))
    (tmp_path / "config.json").write_text(
        json.dumps(
            config | {"architectures": ["LlamaForCausalLM"], "model_type": "llama"}
        )
    )
    with pytest.raises(XdslAneError, match="compile-asr reads WhisperForConditional"):
        whisper_config(read_checkpoint(tmp_path))
    (tmp_path / "config.json").write_text(json.dumps(config | {"decoder_layers": 1}))
    checkpoint = read_checkpoint(tmp_path)
    builder = WhisperBuilder(whisper_config(checkpoint), WhisperShape(context=16))
    with pytest.raises(XdslAneError, match="'model.decoder.layers.1.* is not used"):
        check_all_read(checkpoint, [builder.encoder_module(), builder.decoder_module()])
    with pytest.raises(XdslAneError, match="max_target_positions 64"):
        WhisperShape(context=128).check(whisper_config(checkpoint))

"""compile-asr and transcribe: a tiny random Whisper compiled to its fp16
encoder and decoder packages transcribes WAV files into transformers'
greedy tokens through the interpreter (language detected and given, one
window and the long form), other audio gives other tokens, --reference
names the first token that differs, and bad input is one line
(test_whisper_examples.py: more checkpoints, the README's example)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest
from cli_helpers import cli
from whisper_checkpoints import noise, tone, write_tokenizer, write_whisper

from xdsl_ane.api.asr import AsrRunner, reference_transcribe
from xdsl_ane.models.audio import write_wav

# Compiles and runs Whisper checkpoints against transformers: -m "not slow" skips them.
pytestmark = pytest.mark.slow


class TinyWhisper(NamedTuple):
    checkpoint: Path
    package: Path
    printed: str


@pytest.fixture(scope="module")
def tiny_whisper(tmp_path_factory) -> TinyWhisper:
    """A multilingual tiny Whisper (80 mel bins, 3 decoder layers over 2
    encoder layers) with its tokenizer, compiled by the command and
    reloaded by coremltools' loader (--validate)."""
    root = tmp_path_factory.mktemp("whisper")
    checkpoint = root / "ckpt"
    write_whisper(checkpoint, decoder_layers=3)
    write_tokenizer(checkpoint)
    package = root / "asr"
    args = ["-o", str(package), "--context", "32", "--validate"]
    result = cli("compile-asr", str(checkpoint), *args)
    assert result.returncode == 0, result.stderr
    return TinyWhisper(checkpoint, package, result.stdout)


def test_compile_asr_writes_two_packages_and_a_manifest(tiny_whisper):
    package = tiny_whisper.package
    names = sorted(p.name for p in package.iterdir())
    assert names == [
        "decoder.manifest.json",
        "decoder.mlpackage",
        "encoder.manifest.json",
        "encoder.mlpackage",
        "generation_config.json",
        "manifest.json",
        "preprocessor_config.json",
        "tokenizer.json",
        "tokenizer_config.json",
    ]
    record = json.loads((package / "manifest.json").read_text())["asr"]
    states = {k: v["shape"] for k, v in record["decoder"]["states"].items()}
    assert states == {
        "key_cache": [3, 4, 32, 8],
        "value_cache": [3, 4, 32, 8],
        "cross_key_cache": [3, 4, 1504, 8],
        "cross_value_cache": [3, 4, 1504, 8],
    }
    again = ["compile-asr", str(tiny_whisper.checkpoint), "-o", str(package)]
    assert "already exists" in cli(*again, "--context", "32").stderr
    assert cli(*again, "--context", "32", "--force").returncode == 0
    printed = tiny_whisper.printed
    assert "encoder: " in printed and "decoder: " in printed
    assert "(@prefill " in printed and "@decode " in printed  # the estimate
    assert "3 decoder layers" in printed
    assert "validated: coremltools' MIL loader rebuilt both packages" in printed
    estimate = cli("estimate", str(package), "--chip", "m2").stdout.splitlines()[-1]
    for function in ("@encoder/encode", "@decoder/prefill", "@decoder/decode"):
        assert function in estimate


def test_transcribe_gives_transformers_tokens(tiny_whisper, tmp_path):
    """A stereo 22.05 kHz WAV, language detected: the text, the ids and
    transformers' ids on the same samples."""
    t = tone(4.0, rate=22050)
    write_wav(tmp_path / "in.wav", np.stack([t, 0.5 * t], 1), 22050)
    result = cli(
        "transcribe",
        str(tiny_whisper.package),
        str(tmp_path / "in.wav"),
        "--max-new-tokens",
        "10",
        "--reference",
        str(tiny_whisper.checkpoint),
    )
    assert result.returncode == 0, result.stderr
    text, tokens, reference, same = result.stdout.splitlines()
    assert tokens.startswith("tokens: ") and reference == "reference: " + tokens[8:]
    assert same == "same tokens"
    assert text and all(word.isalpha() for word in text.split())


def test_language_other_audio_and_the_long_form(tiny_whisper):
    runner = AsrRunner(tiny_whisper.package)
    checkpoint = tiny_whisper.checkpoint
    cases = [(tone(20.0), "de"), (noise(20.0), "de"), (tone(41.0, 700.0), None)]
    found = []
    for samples, language in cases:
        tokens = runner.transcribe(samples, language, 8)
        assert tokens == reference_transcribe(checkpoint, samples, language, 8)
        found.append(tokens)
    assert found[0] != found[1]  # other audio, other tokens
    begin = runner.tokens.timestamp_begin
    assert found[2][0] >= begin  # the long form starts each window at a timestamp


def test_translate_task(tiny_whisper):
    """`task="translate"`: its token forced after the language, given or
    detected, as transformers' generate forces it (the tokens that follow
    are transformers' too)."""
    runner = AsrRunner(tiny_whisper.package)
    checkpoint = tiny_whisper.checkpoint
    samples = tone(12.0, 300.0)
    translate = runner.tokens.task_to_id["translate"]
    for language in ("de", None):
        tokens = runner.transcribe(samples, language, 8, task="translate")
        assert runner.prompt[2] == translate
        expected = reference_transcribe(checkpoint, samples, language, 8, "translate")
        assert tokens == expected
        transcribed = runner.transcribe(samples, language, 8, task="transcribe")
        assert runner.prompt[2] == runner.tokens.task_to_id["transcribe"]
        assert transcribed == reference_transcribe(
            checkpoint, samples, language, 8, "transcribe"
        )


@pytest.mark.parametrize(
    "content,message",
    [
        (b"not audio", "not a readable WAV file (file does not start with RIFF id)"),
        (None, "8-bit samples; transcribe reads 16-bit PCM WAV"),
    ],
)
def test_bad_input_is_one_line(tiny_whisper, tmp_path, content, message):
    path = tmp_path / "in.wav"
    if content is None:
        import wave

        with wave.open(str(path), "wb") as f:
            f.setnchannels(1)
            f.setsampwidth(1)
            f.setframerate(8000)
            f.writeframes(bytes(800))
    else:
        path.write_bytes(content)
    result = cli("transcribe", str(tiny_whisper.package), str(path))
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == f"xdsl-ane: error: {path}: {message}\n"


def test_bad_options_are_one_line(tiny_whisper, tmp_path):
    write_wav(tmp_path / "in.wav", tone(1.0))
    audio, package = str(tmp_path / "in.wav"), str(tiny_whisper.package)
    for args, message in [
        ([package, audio, "--language", "xx"], "--language xx: not one of the"),
        ([package, audio, "--max-new-tokens", "40"], "--max-new-tokens 40: a forced"),
        ([str(tmp_path), audio], "not a compile-asr directory"),
    ]:
        result = cli("transcribe", *args)
        assert result.returncode == 1 and message in result.stderr, result.stderr
        assert result.stderr.count("\n") == 1
    result = cli("compile-asr", str(tiny_whisper.checkpoint), "-o", "x.mlpackage")
    assert "name it without .mlpackage" in result.stderr
    limit = ["--max-package-size", "100KB"]
    result = cli(
        "compile-asr", str(tiny_whisper.checkpoint), "-o", str(tmp_path / "o"), *limit
    )
    assert (
        "holds" in result.stderr and "over --max-package-size 100 KB" in result.stderr
    )


def test_reference_of_another_checkpoint(tiny_whisper, tmp_path):
    """--reference fails naming the first token that differs, or, for a
    checkpoint of another shape, before anything runs."""
    write_wav(tmp_path / "in.wav", tone(3.0))
    other = tmp_path / "other"
    write_whisper(other, decoder_layers=3, seed=5)
    args = ["transcribe", str(tiny_whisper.package), str(tmp_path / "in.wav")]
    result = cli(*args, "--max-new-tokens", "6", "--reference", str(other))
    assert result.returncode == 1, result.stdout
    assert "differs from the reference: " in result.stderr
    assert result.stdout.splitlines()[-1].startswith("reference: ")
    write_whisper(tmp_path / "shallow", decoder_layers=1)
    result = cli(*args, "--reference", str(tmp_path / "shallow"))
    assert result.returncode == 1 and result.stdout == ""
    assert "decoder_layers is 1, the package's is 3" in result.stderr

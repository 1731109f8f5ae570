"""compile-asr and transcribe: a tiny random Whisper compiled to its fp16
encoder and decoder packages transcribes WAV files into transformers'
greedy tokens through the interpreter (language detected and given, one
window and the long form, 80 and 128 mel bins, multilingual and
English-only), other audio gives other tokens, and bad input is one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest
from cli_helpers import cli
from whisper_checkpoints import tone, write_tokenizer, write_whisper

from xdsl_ane.api.asr import AsrRunner, compile_asr, reference_transcribe
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
    encoder layers) with its tokenizer, compiled by the command."""
    root = tmp_path_factory.mktemp("whisper")
    checkpoint = root / "ckpt"
    write_whisper(checkpoint, decoder_layers=3)
    write_tokenizer(checkpoint)
    package = root / "asr"
    result = cli("compile-asr", str(checkpoint), "-o", str(package), "--context", "32")
    assert result.returncode == 0, result.stderr
    return TinyWhisper(checkpoint, package, result.stdout)


def noise(seconds: float, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (0.3 * rng.standard_normal(int(16000 * seconds))).astype(np.float32)


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


def test_128_mel_bins_english_only_tied(tmp_path):
    checkpoint = tmp_path / "ckpt"
    write_whisper(checkpoint, mels=128, multilingual=False, decoder_layers=1, tied=True)
    # a prefill of 1: the second token of the forced prompt is decoded
    compile_asr(checkpoint, context=16, prefill=1, output=tmp_path / "asr")
    runner = AsrRunner(tmp_path / "asr")
    samples = noise(6.0, seed=3)
    tokens = runner.transcribe(samples, None, 6)
    assert tokens == reference_transcribe(checkpoint, samples, None, 6)
    assert runner.tokens.prompt(None, False, lambda: 0) == [41, 47]  # sot, notimestamps


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


README = Path(__file__).resolve().parent.parent / "README.md"


def readme_example() -> tuple[str, list[tuple[str, list[str]]]]:
    """The README's speech example: the compile-asr command named before it
    and each `$ xdsl-ane transcribe` line of its block with what it prints."""
    import re

    text = README.read_text()
    (compile_command,) = re.findall(
        r"`(xdsl-ane compile-asr whisper-tiny [^`]*)`", text
    )
    block = text.split("```text\n$ xdsl-ane transcribe asr", 1)[1]
    block = "$ xdsl-ane transcribe asr" + block.split("```", 1)[0]
    runs: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            runs.append((line[2:], []))
        elif line:
            runs[-1][1].append(line)
    return compile_command, runs


def test_readme_speech_example(tmp_path):
    """The README's example prints what it shows."""
    import shlex

    compile_command, runs = readme_example()
    assert len(runs) == 2
    write_whisper(tmp_path / "whisper-tiny", decoder_layers=3)
    write_tokenizer(tmp_path / "whisper-tiny")
    speech = tone(4.0, rate=22050)
    write_wav(tmp_path / "speech.wav", np.stack([speech, 0.5 * speech], 1), 22050)
    write_wav(tmp_path / "noise.wav", noise(6.0))
    result = cli(*shlex.split(compile_command)[1:], cwd=str(tmp_path))
    assert result.returncode == 0, result.stderr
    for command, expected in runs:
        result = cli(*shlex.split(command)[1:], cwd=str(tmp_path))
        assert result.returncode == 0, result.stderr
        assert result.stdout.splitlines() == expected, command

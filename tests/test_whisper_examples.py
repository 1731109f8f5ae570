"""compile-asr beyond the first checkpoint: the README's speech example
prints what it shows; an English-only tied checkpoint of 128 mel bins
with a prefill shorter than its forced prompt gives transformers'
tokens, plain and with --compress int8 (fewer bytes); an encoder or a
decoder split into chained packages by the size limit gives them too."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from cli_helpers import cli, readme_example
from whisper_checkpoints import noise, tone, write_tokenizer, write_whisper

from xdsl_ane.api.asr import AsrRunner, compile_asr, reference_transcribe
from xdsl_ane.models.audio import write_wav

# Compiles and runs Whisper checkpoints against transformers: -m "not slow" skips them.
pytestmark = pytest.mark.slow


def package_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def test_128_mel_bins_english_only_tied(tmp_path):
    checkpoint = tmp_path / "ckpt"
    write_whisper(checkpoint, mels=128, multilingual=False, decoder_layers=1, tied=True)
    # a prefill of 1: the second token of the forced prompt is decoded
    compile_asr(checkpoint, context=16, prefill=1, output=tmp_path / "asr")
    runner = AsrRunner(tmp_path / "asr")
    samples = noise(6.0, seed=3)
    tokens = runner.transcribe(samples, None, 6)
    assert tokens == reference_transcribe(checkpoint, samples, None, 6)
    assert runner.prompt == [41, 47]  # <|startoftranscript|> <|notimestamps|>
    # --compress int8: the tied token table (of the tiny model's matrices
    # the only one large enough) compressed once for both ends; fewer
    # bytes, and it still transcribes
    out = tmp_path / "int8"
    args = ["--context", "16", "--prefill", "1", "--compress", "int8"]
    result = cli("compile-asr", str(checkpoint), "-o", str(out), *args)
    assert result.returncode == 0, result.stderr
    assert "int8" in result.stdout
    plain = package_bytes(tmp_path / "asr" / "decoder.mlpackage")
    assert package_bytes(out / "decoder.mlpackage") < 0.9 * plain
    assert 1 <= len(AsrRunner(out).transcribe(samples, None, 4)) <= 4


README = Path(__file__).resolve().parent.parent / "README.md"


def test_split_encoder(tmp_path):
    """An encoder over --max-package-size becomes chained packages of its
    layers (the stem's table of positions alone fills the first), which
    give transformers' tokens; estimate reports each."""
    checkpoint = tmp_path / "ckpt"
    write_whisper(checkpoint, decoder_layers=1, tied=True, encoder_layers=4)
    out = tmp_path / "asr"
    args = ["-o", str(out), "--context", "16", "--max-package-size", "150KB"]
    result = cli("compile-asr", str(checkpoint), *args)
    assert result.returncode == 0, result.stderr
    assert "2 chained packages of layers 0-0, 1-3" in result.stdout
    names = sorted(p.name for p in out.glob("*.mlpackage"))
    assert names == [
        "decoder.mlpackage",
        "encoder_0-0.mlpackage",
        "encoder_1-3.mlpackage",
    ]
    samples = noise(5.0, seed=4)
    tokens = AsrRunner(out).transcribe(samples, "de", 6)
    assert tokens == reference_transcribe(checkpoint, samples, "de", 6)
    estimate = cli("estimate", str(out)).stdout.splitlines()[-1]
    assert "@encoder_0-0/encode" in estimate and "@encoder_1-3/encode" in estimate
    small = ["-o", str(tmp_path / "small"), "--max-package-size", "100KB"]
    result = cli("compile-asr", str(checkpoint), *small)
    assert "the encoder's layer 0 alone holds" in result.stderr


def test_split_decoder(tmp_path):
    """A decoder over --max-package-size becomes chained packages of its
    layers (the embedding with the first, the head with the last), each
    with its layers' caches, which give transformers' tokens, the long
    form's timestamps included; estimate reports each part."""
    checkpoint = tmp_path / "ckpt"
    write_whisper(checkpoint, decoder_layers=4, encoder_layers=1)
    out = tmp_path / "asr"
    args = ["-o", str(out), "--context", "16", "--max-package-size", "160KB"]
    result = cli("compile-asr", str(checkpoint), *args)
    assert result.returncode == 0, result.stderr
    assert "decoder's weights pass --max-package-size 160KB: 2 chained " in (
        result.stdout
    )
    names = sorted(p.name for p in out.glob("*.mlpackage"))
    assert names == [
        "decoder_0-1.mlpackage",
        "decoder_2-3.mlpackage",
        "encoder.mlpackage",
    ]
    runner = AsrRunner(out)
    parts = runner.record["decoder"]["parts"]
    assert [p["inputs"]["decode"][0] for p in parts] == ["input_ids", "hidden_states"]
    assert parts[0]["states"]["cross_key_cache"]["shape"][0] == 2
    for samples, language in ((noise(5.0, seed=5), "de"), (tone(35.0, 500.0), None)):
        tokens = runner.transcribe(samples, language, 6)
        assert tokens == reference_transcribe(checkpoint, samples, language, 6)
    estimate = cli("estimate", str(out)).stdout
    assert "@decoder_0-1/decode" in estimate and "@decoder_2-3/decode" in estimate


def test_readme_speech_example(tmp_path):
    """The README's example prints what it shows."""
    import shlex

    compile_command, runs = readme_example(
        "xdsl-ane compile-asr whisper-tiny", "xdsl-ane transcribe asr"
    )
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

"""Audio in: WAV files read as 16 kHz mono (any rate resampled, stereo mixed
down; anything but 16-bit PCM one line naming the problem), and Whisper's
log-mel features as transformers' WhisperFeatureExtractor computes them,
80 and 128 bins, one window and the long form."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from whisper_checkpoints import tone

from xdsl_ane.errors import XdslAneError
from xdsl_ane.models.audio import log_mel, mel_filters, read_wav, resample, write_wav


@pytest.mark.slow  # transformers' feature extractor, through torch
@pytest.mark.parametrize("mels", [80, 128])
@pytest.mark.parametrize("seconds", [2.5, 41.3])
def test_features_are_the_feature_extractors(mels, seconds):
    from transformers import WhisperFeatureExtractor

    extractor = WhisperFeatureExtractor(feature_size=mels)
    audio = tone(seconds)
    long = len(audio) > 480000
    options = dict(truncation=False, padding="longest") if long else {}
    expected = extractor(audio, sampling_rate=16000, return_tensors="np", **options)
    expected = expected.input_features[0]
    got = log_mel(audio, mels, pad_to_window=not long)
    assert (
        got.shape == expected.shape == (mels, 3000 if not long else len(audio) // 160)
    )
    # (transformers computes in float32 through torch.stft, this in float64)
    np.testing.assert_allclose(got, expected, atol=1e-4)
    np.testing.assert_array_equal(mel_filters(mels), extractor.mel_filters)


def test_wav_reading_mixes_down_and_resamples(tmp_path):
    t = np.arange(44100) / 44100
    left = 0.5 * np.sin(2 * np.pi * 300 * t)
    write_wav(tmp_path / "stereo.wav", np.stack([left, 0.5 * left], 1), 44100)
    samples = read_wav(tmp_path / "stereo.wav")
    assert samples.dtype == np.float32 and len(samples) == 16000
    expected = 0.375 * np.sin(2 * np.pi * 300 * np.arange(16000) / 16000)
    inner = slice(100, -100)  # away from the edges the filter sees zeros past
    np.testing.assert_allclose(samples[inner], expected[inner], atol=2e-3)
    write_wav(tmp_path / "mono.wav", expected)
    np.testing.assert_allclose(read_wav(tmp_path / "mono.wav"), expected, atol=1e-4)
    up = resample(samples, 16000, 22050)
    assert len(up) == 22050


def wav_header(format_tag: int, bits: int, frames: int, data_bytes: int) -> bytes:
    """A RIFF/WAVE header of one channel at 16 kHz."""
    block = bits // 8
    fmt = struct.pack("<HHIIHH", format_tag, 1, 16000, 16000 * block, block, bits)
    return (
        b"RIFF"
        + struct.pack("<I", 36 + data_bytes)
        + b"WAVEfmt "
        + struct.pack("<I", 16)
        + fmt
        + b"data"
        + struct.pack("<I", frames * block)
    )


@pytest.mark.parametrize(
    "content,message",
    [
        (
            b"ID3\x03\x00 an mp3, say",
            "not a readable WAV file (file does not start with RIFF id)",
        ),
        (wav_header(1, 16, 100, 0)[:30], "not a readable WAV file"),
        (
            wav_header(1, 16, 1000, 400) + bytes(400),
            "truncated: the header says 1000 frames, the file holds 200",
        ),
        (
            wav_header(1, 8, 100, 100) + bytes(100),
            "8-bit samples; transcribe reads 16-bit PCM WAV",
        ),
        (
            wav_header(3, 32, 100, 400) + bytes(400),
            "float samples; transcribe reads 16-bit PCM",
        ),
        (wav_header(1, 16, 0, 0), "holds no samples"),
    ],
)
def test_bad_wav_files_are_one_line(tmp_path, content, message):
    path = tmp_path / "in.wav"
    path.write_bytes(content)
    with pytest.raises(XdslAneError, match=f"^{path}: .*") as e:
        read_wav(path)
    assert message in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(XdslAneError, match="no such file"):
        read_wav(tmp_path / "missing.wav")


def extensible_wav(
    subformat: int, bits: int, samples: bytes, channels: int = 2
) -> bytes:
    """A WAVE_FORMAT_EXTENSIBLE file at 16 kHz."""
    block = channels * bits // 8
    guid = struct.pack("<H", subformat) + bytes.fromhex("000000001000800000aa00389b71")
    fmt = struct.pack(
        "<HHIIHHHHI", 0xFFFE, channels, 16000, 16000 * block, block, bits, 22, bits, 3
    )
    fmt += guid
    body = b"WAVEfmt " + struct.pack("<I", len(fmt)) + fmt
    body += b"data" + struct.pack("<I", len(samples)) + samples
    return b"RIFF" + struct.pack("<I", len(body)) + body


def test_extensible_wav_files(tmp_path):
    """WAVE_FORMAT_EXTENSIBLE (which Python 3.11's wave does not read):
    16-bit PCM is read, float is one line."""
    left = (1000 * np.arange(100)).astype("<i2")
    stereo = np.stack([left, left // 2], 1).astype("<i2")
    path = tmp_path / "ext.wav"
    path.write_bytes(extensible_wav(1, 16, stereo.tobytes()))
    expected = (left.astype(np.float32) + (left // 2).astype(np.float32)) / 2 / 32768
    np.testing.assert_allclose(read_wav(path), expected, atol=1e-6)
    path.write_bytes(extensible_wav(3, 32, bytes(800)))
    with pytest.raises(XdslAneError, match="float samples; transcribe reads 16-bit"):
        read_wav(path)

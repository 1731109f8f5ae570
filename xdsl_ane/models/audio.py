"""Audio in for speech recognition: WAV files (16-bit PCM, any rate, any
channel count) as 16 kHz mono float32 samples, and Whisper's log-mel
features of them, as transformers' `WhisperFeatureExtractor` computes them.

The front end runs in numpy, beside the encoder package rather than in it
(docs/DESIGN.md, "Speech recognition"): the power spectrum of a 30 s
window spans 1e-10 (the floor before log10) to ~4e4, below fp16's
smallest subnormal (6e-8) at one end and near its largest value (65504)
at the other, so an fp16 STFT cannot give the extractor's features; its
400-sample frames are also far past the ANE's conv kernel width of 13.
In numpy it runs on the CPU while the ANE is free, once per window
(`bench/asr.py` times it beside the encoder's estimate).

The features: frames of 400 samples every 160 (reflect-padded by 200 at
both ends, as torch.stft(center=True)), a periodic Hann window, |rFFT|²,
Slaney mel filters from 0 to 8 kHz, log10 of max(·, 1e-10), the last frame
dropped, max(x, max(x) − 8), then (x + 4) / 4.
"""

from __future__ import annotations

import struct
import wave
from pathlib import Path

import numpy as np

from xdsl_ane.errors import XdslAneError

SAMPLE_RATE = 16000
N_FFT = 400
HOP = 160
WINDOW_SAMPLES = 30 * SAMPLE_RATE
"""Whisper's 30 s window in samples; 3000 frames of features."""
WINDOW_FRAMES = WINDOW_SAMPLES // HOP


# --- WAV ---------------------------------------------------------------------------


def read_wav(path: str | Path) -> np.ndarray:
    """The samples of a 16-bit PCM WAV file as float32 in [-1, 1), channels
    averaged, resampled to 16 kHz. Anything else (not a WAV, truncated, 8-bit,
    24-bit or float samples) is one line naming the file and the problem."""
    path = Path(path)
    try:
        with wave.open(str(path), "rb") as f:
            channels, width = f.getnchannels(), f.getsampwidth()
            rate, frames = f.getframerate(), f.getnframes()
            data = f.readframes(frames)
    except FileNotFoundError:
        raise XdslAneError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise XdslAneError(f"{path}: is a directory, not a WAV file") from None
    except (wave.Error, EOFError) as e:
        if str(e) != f"unknown format: {EXTENSIBLE}":
            raise XdslAneError(
                f"{path}: not a readable WAV file ({wav_problem(e)})"
            ) from None
        channels, width, rate, frames, data = read_extensible(path)
    if width != 2:
        raise XdslAneError(
            f"{path}: {8 * width}-bit samples; transcribe reads 16-bit PCM WAV"
        )
    if len(data) < frames * channels * width:
        raise XdslAneError(
            f"{path}: truncated: the header says {frames} frames, the file holds "
            f"{len(data) // (channels * width)}"
        )
    if frames == 0:
        raise XdslAneError(f"{path}: holds no samples")
    samples = np.frombuffer(data, "<i2").reshape(-1, channels).astype(np.float32)
    mono = samples.mean(axis=1) / np.float32(32768)
    return resample(mono, rate, SAMPLE_RATE)


EXTENSIBLE = 0xFFFE
"""WAVE_FORMAT_EXTENSIBLE: the format in the fmt chunk's sub-format GUID
(Python 3.11's `wave` reads only plain PCM)."""


def read_extensible(path: Path) -> tuple[int, int, int, int, bytes]:
    """(channels, sample width, rate, frames, data) of a
    WAVE_FORMAT_EXTENSIBLE file whose sub-format is PCM; float or another
    sub-format is one line."""
    content = path.read_bytes()
    chunks, at = {}, 12
    while at + 8 <= len(content):
        name, size = (
            content[at : at + 4],
            struct.unpack("<I", content[at + 4 : at + 8])[0],
        )
        chunks.setdefault(name, content[at + 8 : at + 8 + size])
        at += 8 + size + (size & 1)
    fmt, data = chunks.get(b"fmt "), chunks.get(b"data")
    if fmt is None or len(fmt) < 26 or data is None:
        raise XdslAneError(f"{path}: not a readable WAV file (no fmt or data chunk)")
    channels, rate = struct.unpack("<HI", fmt[2:8])
    (bits,), (subformat,) = (
        struct.unpack("<H", fmt[14:16]),
        struct.unpack("<H", fmt[24:26]),
    )
    if subformat != 1:
        kind = "float samples" if subformat == 3 else f"sub-format {subformat}, not PCM"
        raise XdslAneError(
            f"{path}: not a readable WAV file ({kind}; transcribe reads 16-bit PCM)"
        )
    width = bits // 8
    return channels, width, rate, len(data) // max(1, channels * width), data


def wav_problem(error: Exception) -> str:
    """wave's reason in words (`unknown format: 3`: IEEE float samples)."""
    text = str(error) or "the file ends inside its header"
    if text == "unknown format: 3":
        return "float samples; transcribe reads 16-bit PCM"
    if text.startswith("unknown format"):
        return f"{text}, not PCM; transcribe reads 16-bit PCM"
    return text


def write_wav(path: str | Path, samples: np.ndarray, rate: int = SAMPLE_RATE) -> None:
    """float samples in [-1, 1] ([N] or [N, channels]) as a 16-bit PCM WAV."""
    data = np.asarray(samples, np.float64)
    data = data[:, None] if data.ndim == 1 else data
    pcm = np.clip(np.round(data * 32767), -32768, 32767).astype("<i2")
    with wave.open(str(path), "wb") as f:
        f.setnchannels(data.shape[1])
        f.setsampwidth(2)
        f.setframerate(rate)
        f.writeframes(pcm.tobytes())


def resample(x: np.ndarray, rate: int, target: int, taps: int = 6) -> np.ndarray:
    """x at `rate` Hz resampled to `target` Hz by band-limited interpolation:
    a Hann-windowed sinc of cutoff 0.99 · min(rate, target) / 2 and `taps`
    zero crossings each side (torchaudio's `resample` defaults). Output
    sample j sits at time j / target."""
    if rate == target:
        return x.astype(np.float32)
    cutoff = 0.99 * min(rate, target) / 2  # Hz
    half = taps * rate / (2 * cutoff)  # the filter's half-width in input samples
    count = int(np.ceil(len(x) * target / rate))
    out = np.empty(count, np.float32)
    step = 4096
    for begin in range(0, count, step):
        t = np.arange(begin, min(begin + step, count)) * (rate / target)
        first = np.floor(t - half).astype(np.int64)
        offsets = np.arange(int(np.ceil(2 * half)) + 2)
        index = first[:, None] + offsets[None, :]
        distance = t[:, None] - index  # in input samples
        inside = np.abs(distance) <= half
        window = np.where(inside, 0.5 + 0.5 * np.cos(np.pi * distance / half), 0.0)
        kernel = (2 * cutoff / rate) * np.sinc(2 * cutoff * distance / rate) * window
        valid = (index >= 0) & (index < len(x))
        values = x[np.clip(index, 0, len(x) - 1)] * valid
        out[begin : begin + len(t)] = np.sum(values * kernel, axis=1)
    return out


# --- log-mel features --------------------------------------------------------------


def hertz_to_mel(f: np.ndarray) -> np.ndarray:
    """Slaney's mel scale: linear below 1 kHz, logarithmic above."""
    f = np.asarray(f, np.float64)
    linear = 3.0 * f / 200.0
    log = 15.0 + np.log(np.maximum(f, 1e-10) / 1000.0) * (27.0 / np.log(6.4))
    return np.where(f >= 1000.0, log, linear)


def mel_to_hertz(m: np.ndarray) -> np.ndarray:
    m = np.asarray(m, np.float64)
    linear = 200.0 * m / 3.0
    log = 1000.0 * np.exp(np.log(6.4) / 27.0 * (m - 15.0))
    return np.where(m >= 15.0, log, linear)


def mel_filters(mels: int) -> np.ndarray:
    """[N_FFT/2 + 1, mels] triangular Slaney-normalised filters from 0 to
    8 kHz (transformers' `mel_filter_bank(norm="slaney",
    mel_scale="slaney")`)."""
    bins = np.linspace(0, SAMPLE_RATE // 2, N_FFT // 2 + 1)
    edges = mel_to_hertz(np.linspace(hertz_to_mel(0.0), hertz_to_mel(8000.0), mels + 2))
    slopes = edges[None, :] - bins[:, None]  # [bins, mels + 2]
    widths = np.diff(edges)
    down = -slopes[:, :-2] / widths[:-1]
    up = slopes[:, 2:] / widths[1:]
    filters = np.maximum(0.0, np.minimum(down, up))
    return filters * (2.0 / (edges[2:] - edges[:-2]))[None, :]


def log_mel(samples: np.ndarray, mels: int, pad_to_window: bool = True) -> np.ndarray:
    """[mels, frames] features of 16 kHz samples: 3000 frames of the first
    30 s (zero-padded) with `pad_to_window`, else samples // 160 frames of
    all of them (transformers' `truncation=False, padding="longest"`)."""
    x = np.asarray(samples, np.float32)
    if pad_to_window:
        x = np.pad(x[:WINDOW_SAMPLES], (0, max(0, WINDOW_SAMPLES - len(x))))
    if len(x) <= N_FFT // 2:  # reflect padding needs more samples than that
        x = np.pad(x, (0, N_FFT // 2 + 1 - len(x)))
    padded = np.pad(x, N_FFT // 2, mode="reflect")
    count = 1 + (len(padded) - N_FFT) // HOP
    frames = np.lib.stride_tricks.as_strided(
        padded, (count, N_FFT), (padded.strides[0] * HOP, padded.strides[0])
    )
    window = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(N_FFT) / N_FFT)
    power = np.abs(np.fft.rfft(frames * window, axis=1)) ** 2  # [frames, bins]
    mel = power[:-1] @ mel_filters(mels)  # the last frame dropped
    log = np.log10(np.maximum(mel, 1e-10))
    log = np.maximum(log, log.max() - 8.0)
    return ((log + 4.0) / 4.0).T.astype(np.float32)

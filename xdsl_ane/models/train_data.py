"""Training data: token ids from a file, cut into sequences and batches.

A data file is one stream of token ids:

| suffix | contents |
|---|---|
| `.npy` | a numpy array of any integer dtype, any shape (flattened) |
| `.bin` | raw little-endian uint16 ids, as nanoGPT's `prepare.py` writes them, or int32 (`dtype="int32"`); an llm.c file (a 256-int32 header: magic 20240520, version 1, token count) is read past its header |
| `.txt` | UTF-8 text, tokenized by the caller's tokenizer (the checkpoint's `tokenizer.json`) |

Sequence i is tokens[i·(S+1) : (i+1)·(S+1)]: its first S ids are the
inputs, its last S the labels (each input's next token); the tokens after
the last whole sequence are not used. Optimizer step k (from 0) takes
sequences k·B … k·B+B−1, wrapping around to the start of the data.

Every problem with a file is an `XdslAneError` whose one line names the file.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from xdsl_ane.errors import XdslAneError

BIN_DTYPES = {"uint16": np.dtype("<u2"), "int32": np.dtype("<i4")}
"""The id types of a `.bin` file, little-endian."""

LLMC_MAGIC = 20240520
"""The first int32 of an llm.c token file's 1024-byte header."""
LLMC_HEADER_INTS = 256


def read_tokens(
    path: str | Path,
    vocab_size: int,
    tokenizer: Callable[[str], Sequence[int]] | None = None,
    dtype: str = "uint16",
) -> np.ndarray:
    """The token ids of a `.npy`, `.bin` or `.txt` file, as a 1-D int64
    array, each checked to be in [0, vocab_size). `tokenizer` maps text to
    ids (for a `tokenizers.Tokenizer`, `lambda text: tok.encode(text).ids`)
    and is needed for `.txt` only; `dtype` ("uint16" or "int32") is the id
    type of a `.bin` file."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".npy":
        tokens = _read_npy(path)
    elif suffix == ".bin":
        tokens = _read_bin(path, dtype)
    elif suffix == ".txt":
        tokens = _read_txt(path, tokenizer)
    else:
        raise XdslAneError(
            f"{path}: unknown data format '{path.suffix}' "
            "(expected token ids in .npy or .bin, or text in .txt)"
        )
    if tokens.size == 0:
        raise XdslAneError(f"{path}: no token ids (the file is empty)")
    return _checked(path, tokens, vocab_size)


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as e:
        raise XdslAneError(
            f"{path}: cannot read the data file: {e.strerror or e}"
        ) from None


def _read_npy(path: Path) -> np.ndarray:
    try:
        array = np.load(path, allow_pickle=False)
    except OSError as e:
        raise XdslAneError(
            f"{path}: cannot read the data file: {e.strerror or e}"
        ) from None
    except EOFError:
        raise XdslAneError(f"{path}: no token ids (the file is empty)") from None
    except ValueError as e:
        raise XdslAneError(f"{path}: not a .npy array of token ids ({e})") from None
    if not isinstance(array, np.ndarray):
        raise XdslAneError(f"{path}: not a .npy array of token ids")
    if array.dtype.kind not in "iu":
        raise XdslAneError(f"{path}: holds {array.dtype} values, not integer token ids")
    return array.reshape(-1)


def _read_bin(path: Path, dtype: str) -> np.ndarray:
    if dtype not in BIN_DTYPES:
        raise XdslAneError(
            f"{path}: unknown .bin id type '{dtype}' "
            f"(expected {' or '.join(BIN_DTYPES)})"
        )
    data = _read_bytes(path)
    item = BIN_DTYPES[dtype].itemsize
    if dtype == "uint16" and _has_llmc_header(data):
        return np.frombuffer(data, BIN_DTYPES[dtype], offset=4 * LLMC_HEADER_INTS)
    if len(data) % item:
        parity = "an odd length" if item == 2 else f"not a multiple of {item}"
        raise XdslAneError(
            f"{path}: {len(data)} bytes is not a whole number of {dtype} "
            f"token ids ({parity})"
        )
    return np.frombuffer(data, BIN_DTYPES[dtype])


def _has_llmc_header(data: bytes) -> bool:
    """Whether `data` is llm.c's format: magic, version 1 (uint16 ids),
    the token count, padding to 256 int32s, then exactly that many ids."""
    if len(data) < 4 * LLMC_HEADER_INTS:
        return False
    magic, version, count = np.frombuffer(data, "<i4", count=3)
    return (
        magic == LLMC_MAGIC
        and version == 1
        and len(data) == 4 * LLMC_HEADER_INTS + 2 * int(count)
    )


def _read_txt(
    path: Path, tokenizer: Callable[[str], Sequence[int]] | None
) -> np.ndarray:
    if tokenizer is None:
        raise XdslAneError(
            f"{path}: a .txt data file is tokenized with the checkpoint's "
            "tokenizer, and there is no tokenizer.json beside the checkpoint"
        )
    data = _read_bytes(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise XdslAneError(f"{path}: not UTF-8 text (byte {e.start})") from None
    if not text:
        return np.zeros(0, dtype=np.int64)
    return np.asarray(tokenizer(text), dtype=np.int64).reshape(-1)


def _checked(path: Path, tokens: np.ndarray, vocab_size: int) -> np.ndarray:
    """`tokens` as int64, or an error naming the first id outside the
    vocabulary and its position."""
    negative = tokens < 0 if tokens.dtype.kind == "i" else np.zeros(0, dtype=bool)
    too_large = tokens >= vocab_size
    bad = too_large | negative if negative.size else too_large
    if bad.any():
        position = int(np.argmax(bad))
        value = int(tokens[position])
        if value < 0:
            problem = "is negative"
        else:
            problem = f"is not below the vocabulary size {vocab_size}"
        raise XdslAneError(f"{path}: token id {value} at position {position} {problem}")
    return tokens.astype(np.int64)


def sequences(tokens: np.ndarray, seq_len: int, source: str = "the data") -> np.ndarray:
    """The whole sequences of `tokens`, [n, seq_len + 1]: row i is
    tokens[i·(S+1) : (i+1)·(S+1)], inputs its first S, labels its last S.
    Tokens after the last whole sequence are dropped. `source` names the
    data in the error when there is not one sequence."""
    if seq_len < 1:
        raise XdslAneError(f"sequence length {seq_len}: must be at least 1")
    length = seq_len + 1
    count = tokens.size // length
    if count == 0:
        raise XdslAneError(
            f"{source}: {tokens.size} tokens are fewer than one sequence of "
            f"{length} (sequence length {seq_len} and the last label)"
        )
    return tokens[: count * length].reshape(count, length)


def batch(seqs: np.ndarray, step: int, batch: int) -> tuple[np.ndarray, np.ndarray]:
    """The inputs and labels [batch, S] of optimizer step `step` (from 0):
    sequences step·B … step·B+B−1, indices taken modulo the number of
    sequences, so the data wraps around (an epoch ends, the next begins,
    even inside one batch)."""
    if batch < 1:
        raise XdslAneError(f"batch size {batch}: must be at least 1")
    rows = seqs[(step * batch + np.arange(batch)) % len(seqs)]
    return np.ascontiguousarray(rows[:, :-1]), np.ascontiguousarray(rows[:, 1:])

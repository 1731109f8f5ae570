"""Training data: each file format, each bad file (one line naming it), and
the sequence and batch rule of DESIGN.md ("Training from a checkpoint")."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from xdsl_ane.errors import XdslAneError
from xdsl_ane.models.train_data import LLMC_MAGIC, batch, read_tokens, sequences

IDS = np.array([5, 0, 49, 7, 7, 12, 3], dtype=np.int64)


def letters(text: str) -> list[int]:
    """A tokenizer of the test: one id per letter a–z."""
    return [ord(c) - ord("a") for c in text if c.isalpha()]


def assert_refused(path: Path, message: str, **kwargs) -> None:
    kwargs.setdefault("vocab_size", 50)
    with pytest.raises(XdslAneError, match=message) as error:
        read_tokens(path, **kwargs)
    text = str(error.value)
    assert "\n" not in text
    assert text.startswith(f"{path}: ")


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.int32, np.int64, np.uint64])
def test_npy_of_any_integer_dtype_flattened(tmp_path, dtype):
    path = tmp_path / "ids.npy"
    np.save(path, np.append(IDS, 1).astype(dtype).reshape(2, 4))
    tokens = read_tokens(path, vocab_size=50)
    assert tokens.dtype == np.int64
    np.testing.assert_array_equal(tokens, np.append(IDS, 1))


def test_bin_uint16_little_endian_by_default(tmp_path):
    path = tmp_path / "train.bin"
    IDS.astype("<u2").tofile(path)
    np.testing.assert_array_equal(read_tokens(path, vocab_size=50), IDS)


def test_bin_int32(tmp_path):
    path = tmp_path / "train.bin"
    (IDS + 70000).astype("<i4").tofile(path)
    tokens = read_tokens(path, vocab_size=70050, dtype="int32")
    np.testing.assert_array_equal(tokens, IDS + 70000)


def test_bin_with_llmc_header(tmp_path):
    header = np.zeros(256, "<i4")
    header[:3] = LLMC_MAGIC, 1, len(IDS)
    path = tmp_path / "tiny_train.bin"
    path.write_bytes(header.tobytes() + IDS.astype("<u2").tobytes())
    np.testing.assert_array_equal(read_tokens(path, vocab_size=50), IDS)


def test_txt_through_the_tokenizer(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("abc\nzy", encoding="utf-8")
    np.testing.assert_array_equal(
        read_tokens(path, 26, tokenizer=letters), [0, 1, 2, 25, 24]
    )


def test_txt_through_a_huggingface_tokenizer(tmp_path):
    import tokenizers

    vocab = {"[UNK]": 0, "hello": 1, "world": 2}
    tokenizer = tokenizers.Tokenizer(
        tokenizers.models.WordLevel(vocab, unk_token="[UNK]")
    )
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    path = tmp_path / "corpus.txt"
    path.write_text("hello world hello there", encoding="utf-8")
    tokens = read_tokens(path, 3, tokenizer=lambda text: tokenizer.encode(text).ids)
    np.testing.assert_array_equal(tokens, [1, 2, 1, 0])


def test_id_beyond_the_vocabulary_named_with_its_position(tmp_path):
    path = tmp_path / "ids.npy"
    np.save(path, np.array([1, 2, 50, 3, 99], np.int32))
    assert_refused(
        path, "token id 50 at position 2 is not below the vocabulary size 50"
    )


def test_negative_id(tmp_path):
    path = tmp_path / "ids.npy"
    np.save(path, np.array([1, -4, 60], np.int64))
    assert_refused(path, "token id -4 at position 1 is negative")


def test_id_beyond_the_vocabulary_in_a_bin(tmp_path):
    path = tmp_path / "train.bin"
    np.array([1, 65535], "<u2").tofile(path)
    assert_refused(path, "token id 65535 at position 1 is not below")


@pytest.mark.parametrize("name", ["ids.npy", "train.bin", "corpus.txt"])
def test_empty_file(tmp_path, name):
    path = tmp_path / name
    path.write_bytes(b"")
    assert_refused(path, "no token ids", tokenizer=letters)


def test_empty_npy_array(tmp_path):
    path = tmp_path / "ids.npy"
    np.save(path, np.zeros(0, np.int32))
    assert_refused(path, "no token ids")


def test_odd_length_bin(tmp_path):
    path = tmp_path / "train.bin"
    path.write_bytes(b"\x01\x00\x02")
    assert_refused(
        path, "3 bytes is not a whole number of uint16 token ids \\(an odd length\\)"
    )


def test_int32_bin_of_partial_length(tmp_path):
    path = tmp_path / "train.bin"
    path.write_bytes(b"\x01\x00\x00\x00\x02\x00")
    assert_refused(path, "6 bytes is not a whole number of int32", dtype="int32")


def test_unknown_bin_dtype(tmp_path):
    path = tmp_path / "train.bin"
    path.write_bytes(b"\x01\x00")
    assert_refused(path, "unknown .bin id type 'float32'", dtype="float32")


def test_txt_without_a_tokenizer(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("abc", encoding="utf-8")
    assert_refused(path, "no tokenizer.json beside the checkpoint")


def test_txt_not_utf8(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_bytes(b"ab\xffcd")
    assert_refused(path, "not UTF-8 text \\(byte 2\\)", tokenizer=letters)


def test_npy_of_floats(tmp_path):
    path = tmp_path / "ids.npy"
    np.save(path, np.ones(4, np.float32))
    assert_refused(path, "holds float32 values, not integer token ids")


def test_npy_that_is_not_npy(tmp_path):
    path = tmp_path / "ids.npy"
    path.write_bytes(b"not an array at all")
    assert_refused(path, "not a .npy array of token ids")


@pytest.mark.parametrize("name", ["missing.npy", "missing.bin", "missing.txt"])
def test_unreadable_file(tmp_path, name):
    assert_refused(
        tmp_path / name, "cannot read the data file: No such file", tokenizer=letters
    )


def test_directory(tmp_path):
    path = tmp_path / "data.bin"
    path.mkdir()
    assert_refused(path, "cannot read the data file")


def test_unknown_suffix(tmp_path):
    path = tmp_path / "ids.csv"
    path.write_text("1,2,3")
    assert_refused(path, "unknown data format '.csv'")


def test_sequences_are_consecutive_windows_of_seq_len_plus_one():
    tokens = np.arange(23)
    seqs = sequences(tokens, seq_len=4)
    # 23 tokens: four sequences of 5, the last 3 tokens unused.
    np.testing.assert_array_equal(seqs, np.arange(20).reshape(4, 5))


def test_fewer_tokens_than_one_sequence():
    with pytest.raises(
        XdslAneError, match="train.bin: 8 tokens are fewer than one sequence of 9"
    ):
        sequences(np.arange(8), seq_len=8, source="train.bin")


def test_batches_take_consecutive_sequences_and_wrap():
    seqs = sequences(np.arange(20), seq_len=3)  # 5 sequences of 4
    inputs, labels = batch(seqs, step=0, batch=2)
    np.testing.assert_array_equal(inputs, [[0, 1, 2], [4, 5, 6]])
    np.testing.assert_array_equal(labels, [[1, 2, 3], [5, 6, 7]])
    inputs, labels = batch(seqs, step=2, batch=2)  # sequences 4, then 0
    np.testing.assert_array_equal(inputs, [[16, 17, 18], [0, 1, 2]])
    np.testing.assert_array_equal(labels, [[17, 18, 19], [1, 2, 3]])
    inputs, _ = batch(seqs, step=1, batch=7)  # more than the data: 7 … 13 mod 5
    np.testing.assert_array_equal(inputs[:, 0], [8, 12, 16, 0, 4, 8, 12])
    assert inputs.flags.c_contiguous and labels.flags.c_contiguous

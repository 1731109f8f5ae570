"""Mutation fuzzing of the inputs people hand to xdsl-ane: valid `.mlir`
(rlx and mil) and `.mil` programs with bytes flipped, text truncated,
tokens swapped or replaced, numbers and element types changed, and lines
deleted or duplicated go through `xdsl_ane.compile` (parse, verify, weights
check, pipeline) and both printers; random text goes into both parsers.
Each must either succeed or raise one `XdslAneError` whose message is one
line naming the file, within a time limit; any other exception, an internal
error or a hang is a bug. Bounded and derandomized: a failure reproduces."""

from __future__ import annotations

import re
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xdsl_ane
from xdsl_ane.backend.mil_text import write_mil_text_dir
from xdsl_ane.errors import XdslAneError, XdslAneInternalError
from xdsl_ane.frontend.mil_text import parse_mil_text
from xdsl_ane.frontend.mlir import parse_module_text
from xdsl_ane.models.transformer import QWEN3_0_6B, build_decoder_layer, make_weights

FUZZ = settings(
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
TINY = QWEN3_0_6B.with_(
    hidden_size=16, num_heads=2, num_kv_heads=1, head_dim=8, ffn_size=24, seq_len=4
)

KERNEL = """\
func.func @kernel(%x: tensor<4x8xf32>, %y: tensor<8xf32>, %labels: tensor<4xi32>) -> (tensor<4x8xf32>, tensor<4xf32>) {
  %w = rlx.param "w" : tensor<8x8xf32>
  %g = rlx.param "g" : tensor<8xf32>
  %0 = rlx.matmul %x, %w {transpose_rhs = true} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %1 = rlx.add %0, %y : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %2 = rlx.rms_norm %1, %g {eps = 1.000000e-05 : f32} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %3 = rlx.softmax %2 {axis = -1 : i64} : tensor<4x8xf32>
  %4 = rlx.reduce_max %3 {axes = array<i64: 1>, keep_dims = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %5 = "rlx.sub"(%3, %4) : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %6 = rlx.softmax_cross_entropy %5, %labels : (tensor<4x8xf32>, tensor<4xi32>) -> tensor<4xf32>
  %7 = rlx.narrow %5 {axis = 1 : i64, start = 0 : i64, length = 8 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %7, %6 : tensor<4x8xf32>, tensor<4xf32>
}
"""
KERNEL_WEIGHTS = {
    "w": np.eye(8, dtype=np.float32),
    "g": np.ones(8, np.float32),
}


def seeds(directory: Path) -> dict[str, tuple[str, dict[str, np.ndarray]]]:
    """Valid programs by name (the suffix says .mlir or .mil), with weights."""
    layer = build_decoder_layer(TINY)
    layer_weights = make_weights(layer, TINY, 0)
    compiled = xdsl_ane.compile(
        layer,
        weights=layer_weights,
        pipeline="ane-pipeline{weights=dynamic lint=false}",
    )
    kernel = xdsl_ane.compile(
        directory / "kernel.mlir", weights=KERNEL_WEIGHTS
    )  # (the seed compiles)
    write_mil_text_dir(kernel.module, kernel.weights, directory / "kernel")
    return {
        "kernel.mlir": (KERNEL, KERNEL_WEIGHTS),
        "layer.mlir": (str(layer) + "\n", layer_weights),
        "layer_mil.mlir": (str(compiled.module) + "\n", compiled.weights),
        "kernel/model.mil": ((directory / "kernel" / "model.mil").read_text(), {}),
    }


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> tuple[Path, dict]:
    """The seeds, each written to its file."""
    directory = tmp_path_factory.mktemp("corpus")
    (directory / "kernel.mlir").write_text(KERNEL)
    programs = seeds(directory)
    for name, (text, _weights) in programs.items():
        (directory / name).write_text(text)
    return directory, programs


# --- mutations -------------------------------------------------------------------

TOKEN = re.compile(r"%?[\w.]+|\"[^\"\n]*\"|\S")


def flip(text: str, data: st.DataObject) -> str:
    i = data.draw(st.integers(0, len(text) - 1), label="at")
    char = data.draw(
        st.sampled_from(list('0123456789%@#:,;()[]{}<>="x-. \n\\\x00é')), label="char"
    )
    return text[:i] + char + text[i + 1 :]


def truncate(text: str, data: st.DataObject) -> str:
    return text[: data.draw(st.integers(0, len(text) - 1), label="length")]


def swap_tokens(text: str, data: st.DataObject) -> str:
    tokens = list(TOKEN.finditer(text))
    a, b = (tokens[data.draw(st.integers(0, len(tokens) - 1), label=n)] for n in "ab")
    if a.start() > b.start():
        a, b = b, a
    if a.end() > b.start():
        return text
    return (
        text[: a.start()]
        + b.group()
        + text[a.end() : b.start()]
        + a.group()
        + text[b.end() :]
    )


def replace_token(text: str, data: st.DataObject) -> str:
    """A token replaced by another token of the text, or by a near miss."""
    tokens = list(TOKEN.finditer(text))
    target = tokens[data.draw(st.integers(0, len(tokens) - 1), label="target")]
    words = sorted({t.group() for t in tokens})
    replacement = data.draw(
        st.one_of(
            st.sampled_from(words),
            st.sampled_from(
                [
                    "0",
                    "-1",
                    "99999999999",
                    "1e309",
                    "nan",
                    "?",
                    "f64",
                    "i64",
                    "bf16",
                    "tensor<?x4xf32>",
                    "tensor<0x4xf32>",
                    "array<i64>",
                    "dense<>",
                    "true",
                    '""',
                    "fp64",
                    "uint8",
                    "int64",
                    "BLOBFILE",
                    "@model_path",
                ]
            ),  # fmt: skip
        ),
        label="replacement",
    )
    return text[: target.start()] + replacement + text[target.end() :]


NUMBER = re.compile(r"(?<![\w.%])-?\d+(?:\.\d+)?(?:e[-+]?\d+)?")
TYPE = re.compile(r"\b(?:f32|f16|i32|i8|i1|fp16|fp32|int32|int8|bool)\b")


def change_number(text: str, data: st.DataObject) -> str:
    """A number (a dimension, an axis, a value) replaced by another one:
    programs that still parse but mean something else."""
    numbers = list(NUMBER.finditer(text))
    if not numbers:
        return text
    target = numbers[data.draw(st.integers(0, len(numbers) - 1), label="number")]
    value = data.draw(
        st.sampled_from(["0", "1", "2", "-1", "-2", "3", "7", "16385", "1.5", "-0.0"]),
        label="value",
    )
    return text[: target.start()] + value + text[target.end() :]


def change_type(text: str, data: st.DataObject) -> str:
    types = list(TYPE.finditer(text))
    if not types:
        return text
    target = types[data.draw(st.integers(0, len(types) - 1), label="type")]
    replacement = data.draw(
        st.sampled_from(
            ["f32", "f16", "i32", "i8", "i1", "fp16", "fp32", "int32", "bool"]
        ),
        label="new_type",
    )
    return text[: target.start()] + replacement + text[target.end() :]


def delete_line(text: str, data: st.DataObject) -> str:
    lines = text.splitlines(keepends=True)
    i = data.draw(st.integers(0, len(lines) - 1), label="line")
    return "".join(lines[:i] + lines[i + 1 :])


def duplicate_line(text: str, data: st.DataObject) -> str:
    lines = text.splitlines(keepends=True)
    i = data.draw(st.integers(0, len(lines) - 1), label="line")
    return "".join(lines[: i + 1] + lines[i:])


MUTATIONS = {
    "flip": flip,
    "truncate": truncate,
    "swap_tokens": swap_tokens,
    "replace_token": replace_token,
    "delete_line": delete_line,
    "duplicate_line": duplicate_line,
    "change_number": change_number,
    "change_type": change_type,
}


def mutate(text: str, data: st.DataObject) -> str:
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        name = data.draw(st.sampled_from(sorted(MUTATIONS)), label="mutation")
        text = MUTATIONS[name](text, data) if text else text
    return text


# --- the property ----------------------------------------------------------------


class TooSlow(BaseException):
    """Raised by the alarm: not an Exception, so nothing on the way converts
    it into an XdslAneError."""


@contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    """Fails an input that takes longer than `seconds` (a hang, such as xDSL
    0.75's lexer backtracking exponentially on an unterminated string)."""

    def alarm(signum, frame):
        raise TooSlow(f"took longer than {seconds} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        yield
    except TooSlow as e:
        raise AssertionError(str(e)) from None
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def compile_cleanly(path: Path, weights: dict[str, np.ndarray]) -> None:
    """Compiles and prints `path`; an error must be one clean XdslAneError."""
    try:
        with time_limit(20):
            model = xdsl_ane.compile(path, weights=weights or None)
            model.mil_text  # noqa: B018  (the printers run lazily)
            model.proto  # noqa: B018
    except XdslAneInternalError as e:
        raise AssertionError(f"internal error: {e}") from e
    except XdslAneError as e:
        message = str(e)
        assert message and "\n" not in message, repr(message)
        assert path.name in message, message


def test_seeds_compile(corpus):
    """Every seed compiles and prints: a seed failing, even cleanly, would
    leave its mutants testing nothing but the error path."""
    directory, programs = corpus
    for name, (_text, weights) in programs.items():
        with time_limit(60):
            model = xdsl_ane.compile(directory / name, weights=weights or None)
            assert model.mil_text, name  # the printers run lazily
            model.proto  # noqa: B018


@pytest.mark.slow
@pytest.mark.parametrize(
    "seed, examples",
    [
        ("kernel.mlir", 150),
        ("layer.mlir", 50),
        ("layer_mil.mlir", 80),
        ("kernel/model.mil", 150),
    ],
)
def test_mutated_inputs_fail_cleanly(corpus, seed, examples):
    directory, programs = corpus
    text, weights = programs[seed]
    path = directory / seed
    mutant = path.with_name("mutant" + path.suffix)

    @settings(FUZZ, max_examples=examples)
    @given(data=st.data())
    def check(data: st.DataObject):
        mutant.write_text(mutate(text, data), errors="surrogateescape")
        compile_cleanly(mutant, weights)

    check()


@pytest.mark.parametrize("suffix", [".mil", ".mlir"])
def test_random_text_fails_cleanly(suffix):
    """Arbitrary text into the MIL text and MLIR parsers directly."""
    name = "random" + suffix
    parse = parse_mil_text if suffix == ".mil" else parse_module_text

    alphabet = st.sampled_from(
        list('%@^"(){}[]<>:,=-.x0123456789 \n') + sorted(set(TOKEN.findall(KERNEL)))
    )

    @settings(FUZZ, max_examples=60)
    @given(
        text=st.one_of(
            st.binary(max_size=300).map(lambda b: b.decode("latin-1")),
            st.lists(alphabet, max_size=120).map("".join),
        )
    )
    def check(text: str):
        try:
            with time_limit(20):
                parse(text, name)
        except XdslAneInternalError as e:
            raise AssertionError(f"internal error: {e}") from e
        except XdslAneError as e:
            assert "\n" not in str(e) and name in str(e), str(e)

    check()

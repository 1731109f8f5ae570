"""Bad input through the command line: a scripted sweep runs every kind of
bad input (one subprocess each, run concurrently); each must exit 1 with
exactly one `xdsl-ane: error:` line, no traceback, nothing at the output
path (an existing output untouched) and no temporary files left beside it.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import cli_process
from robustness_inputs import (
    COMPILE,
    KERNEL_MIL,
    PROGRAM,
    RUN,
    WEIGHT,
    leftovers,
    replaced,
)

import xdsl_ane
from xdsl_ane.weights.safetensors import write_safetensors

BLOB_MIL = """\
program(1.3)
{
    func main<ios18>(tensor<fp16, [1, 4, 1, 8]> x) {
        tensor<fp16, [1, 4, 1, 1]> b = const()[name = string("b"), val = tensor<fp16, [1, 4, 1, 1]>(BLOBFILE(path = string("@model_path/weights/weight.bin"), offset = uint64(64)))];
        tensor<fp16, [1, 4, 1, 8]> y = add(x = x, y = b)[name = string("y")];
    } -> (y);
}
"""


@dataclass
class Case:
    """One bad input: files to create in the case's directory, the command,
    the output path (checked: absent, or as `previous` left it) and the
    words the error line must contain."""

    files: dict[str, str | bytes | Callable[[Path], None]]
    args: list[str]
    output: str | None = None
    needles: list[str] = field(default_factory=list)
    previous: str | None = None
    """Created at `output` before the run (a file's text), to check that a
    failing command leaves it as it was."""


def weights_file(**arrays: np.ndarray) -> Callable[[Path], None]:
    return lambda path: np.savez(path, **arrays)


def npy_file(path: Path) -> None:
    with open(path, "wb") as f:
        np.save(f, WEIGHT)


def safetensors_file(path: Path) -> None:
    write_safetensors(path, {"w": WEIGHT})


def blob_dir(path: Path) -> None:
    path.mkdir()
    (path / "weight.bin").write_bytes(b"not a blob")


GOOD = {"p.mlir": PROGRAM, "w.npz": weights_file(w=WEIGHT)}
INPUTS = {"arg0": np.zeros((2, 3), np.float32), "arg1": np.zeros(3, np.float32)}


CASES: dict[str, Case] = {
    # malformed .mlir
    "truncated-mlir": Case(
        {**GOOD, "p.mlir": PROGRAM[:230]}, COMPILE, "out.mlpackage", ["p.mlir:"]
    ),
    "garbage-mlir": Case(
        {**GOOD, "p.mlir": "func.func @f(%x: tensor<2x3xf32> {\n"},
        COMPILE,
        "out.mlpackage",
        ["p.mlir:"],
    ),
    "binary-mlir": Case(
        {**GOOD, "p.mlir": b"\xff\xfe\x00garbage"}, COMPILE, "out.mlpackage", ["p.mlir"]
    ),
    "empty-mlir": Case({**GOOD, "p.mlir": ""}, COMPILE, "out.mlpackage", ["p.mlir"]),
    "missing-mlir": Case(
        {"w.npz": weights_file(w=WEIGHT)}, COMPILE, "out.mlpackage", ["p.mlir"]
    ),
    "stray-quote": Case(  # xDSL's lexer would take exponential time
        {**GOOD, "p.mlir": replaced('"w"', '"w')},
        COMPILE,
        "out.mlpackage",
        ["p.mlir:2:", "unterminated string"],
    ),
    "unknown-op": Case(
        {**GOOD, "p.mlir": replaced("rlx.add", "rlx.addd")},
        COMPILE,
        "out.mlpackage",
        ["p.mlir:3:", "rlx.addd"],
    ),
    "misspelled-property": Case(
        {**GOOD, "p.mlir": replaced("{axes =", "{axis =")},
        COMPILE,
        "out.mlpackage",
        ["p.mlir", "rlx.reduce_sum", "axes"],
    ),
    "verifier": Case(
        {
            **GOOD,
            "p.mlir": replaced(
                "tensor<3xf32>) -> tensor<2x3xf32>", "tensor<3xf32>) -> tensor<3x3xf32>"
            ),
        },
        COMPILE,
        "out.mlpackage",
        ["p.mlir"],
    ),
    "dynamic-shape": Case(
        {**GOOD, "p.mlir": replaced("%y: tensor<3xf32>", "%y: tensor<?xf32>")},
        COMPILE,
        "out.mlpackage",
        ["p.mlir"],
    ),
    "unsupported-layout": Case(
        {
            "p.mlir": "func.func @f(%x: tensor<2x3x4x5x6xf32>) -> tensor<2x3x4x5x6xf32> {\n"
            "  %0 = rlx.relu %x : tensor<2x3x4x5x6xf32>\n"
            "  func.return %0 : tensor<2x3x4x5x6xf32>\n}\n"
        },
        ["compile", "p.mlir", "-o", "out.mlpackage"],
        "out.mlpackage",
        ["p.mlir", "mil-ane-layout", "[2, 3, 4, 5, 6]"],
    ),
    "not-a-tensor": Case(
        {"p.mlir": "func.func @f(%x: f32) -> f32 {\n  func.return %x : f32\n}\n"},
        ["compile", "p.mlir", "-o", "out.mlpackage"],
        "out.mlpackage",
        ["p.mlir", "f32", "not a tensor"],
    ),
    "unsupported-element-type": Case(
        {
            "p.mlir": "func.func @f(%x: tensor<2x3xi64>) -> tensor<2x3xi64> {\n"
            "  func.return %x : tensor<2x3xi64>\n}\n"
        },
        ["compile", "p.mlir", "-o", "out.mlpackage"],
        "out.mlpackage",
        ["p.mlir", "i64"],
    ),
    "not-lowered-op": Case(
        {
            "p.mlir": "func.func @f(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {\n"
            "  %0 = arith.addf %x, %x : tensor<2x3xf32>\n"
            "  func.return %0 : tensor<2x3xf32>\n}\n"
        },
        ["compile", "p.mlir", "-o", "out.mlpackage"],
        "out.mlpackage",
        ["p.mlir", "arith"],
    ),
    "empty-module-mil-text": Case(  # used to write the output, then fail
        {"p.mlir": "builtin.module {}\n"},
        ["compile", "p.mlir", "-o", "out", "--emit", "mil-text"],
        "out",
        ["p.mlir", "no func.func"],
    ),
    # weights
    "missing-weight": Case(
        {"p.mlir": PROGRAM},
        ["compile", "p.mlir", "-o", "out.mlpackage"],
        "out.mlpackage",
        ["p.mlir", "'w'", "not in the weights file"],
    ),
    "missing-weights-file": Case(
        {"p.mlir": PROGRAM}, COMPILE, "out.mlpackage", ["w.npz", "does not exist"]
    ),
    "corrupt-weights": Case(
        {**GOOD, "w.npz": b"PK\x03\x04 not really a zip"},
        COMPILE,
        "out.mlpackage",
        ["w.npz"],
    ),
    "npy-as-weights": Case(
        {**GOOD, "w.npz": npy_file}, COMPILE, "out.mlpackage", ["w.npz", ".npy"]
    ),
    "corrupt-safetensors": Case(
        {"p.mlir": PROGRAM, "w.safetensors": b"\x02\x00\x00\x00\x00\x00\x00\x00[]"},
        ["compile", "p.mlir", "--weights", "w.safetensors", "-o", "out.mlpackage"],
        "out.mlpackage",
        ["w.safetensors", "safetensors"],
    ),
    "misshaped-weight": Case(
        {**GOOD, "w.npz": weights_file(w=WEIGHT.T.copy())},
        COMPILE,
        "out.mlpackage",
        ["'w'", "[3, 2]", "[2, 3]"],
    ),
    "mistyped-weight": Case(
        {**GOOD, "w.npz": weights_file(w=WEIGHT.astype(np.int32))},
        COMPILE,
        "out.mlpackage",
        ["'w'", "int32"],
    ),
    # outputs
    "existing-output": Case(
        GOOD, COMPILE, "out.mlpackage", ["out.mlpackage", "--force"], previous="old"
    ),
    "existing-output-mil-text": Case(
        GOOD,
        [*COMPILE[:-1], "out", "--emit", "mil-text"],
        "out",
        ["out", "--force"],
        previous="old",
    ),
    "missing-output-dir": Case(
        GOOD, [*COMPILE[:-1], "no/such/out.mlpackage"], None, ["no/such"]
    ),
    "output-under-a-file": Case(
        {**GOOD, "file": "x"}, [*COMPILE[:-1], "file/out.mlpackage"], None, ["file"]
    ),
    "package-suffix": Case(GOOD, [*COMPILE[:-1], "out.pkg"], "out.pkg", [".mlpackage"]),
    # pipelines
    "pipeline-syntax": Case(
        GOOD, [*COMPILE, "-p", "ane-pipeline{"], "out.mlpackage", ["column 14"]
    ),
    "unknown-pass": Case(
        GOOD, [*COMPILE, "-p", "ane-pipelin"], "out.mlpackage", ["ane-pipelin"]
    ),
    "misspelled-option": Case(
        GOOD,
        [*COMPILE, "-p", "ane-pipeline{weight=static}"],
        "out.mlpackage",
        ["weight", "weights"],
    ),
    "bad-option-value": Case(
        GOOD,
        [*COMPILE, "-p", "mil-ane-layout{weights=foo}"],
        "out.mlpackage",
        ["p.mlir", "weights=foo"],
    ),
    # MIL text
    "malformed-mil": Case(
        {"k.mil": KERNEL_MIL.replace("relu(x = x)", "relu(x = z)")},
        ["compile", "k.mil", "-o", "out.mlpackage"],
        "out.mlpackage",
        ["k.mil:4:", "'z'"],
    ),
    "truncated-mil": Case(
        {"k.mil": KERNEL_MIL[:120]},
        ["compile", "k.mil", "-o", "out.mlpackage"],
        "out.mlpackage",
        ["k.mil:"],
    ),
    "missing-blob": Case(
        {"k.mil": BLOB_MIL},
        ["compile", "k.mil", "-o", "out.mlpackage"],
        "out.mlpackage",
        ["k.mil:4:", "weight.bin"],
    ),
    "corrupt-blob": Case(
        {"k.mil": BLOB_MIL, "weights": blob_dir},
        ["compile", "k.mil", "-o", "out.mlpackage"],
        "out.mlpackage",
        ["k.mil:4:", "MILBlob"],
    ),
    "import-malformed-mil": Case(
        {"k.mil": KERNEL_MIL.replace("fp16, [1, 4, 1, 8]> y", "fp17, [1, 4, 1, 8]> y")},
        ["import", "k.mil", "-o", "out.mlir"],
        "out.mlir",
        ["k.mil:4:", "fp17"],
    ),
    "import-existing-output": Case(
        {"k.mil": KERNEL_MIL},
        ["import", "k.mil", "-o", "out.mlir"],
        "out.mlir",
        ["out.mlir", "--force"],
        previous="old",
    ),
    # run
    "run-missing-inputs-file": Case(
        GOOD, [*RUN, "--inputs", "x.npz", "--output", "y.npz"], "y.npz", ["x.npz"]
    ),
    "run-missing-input": Case(
        {**GOOD, "x.npz": weights_file(arg0=INPUTS["arg0"])},
        [*RUN, "--inputs", "x.npz", "--output", "y.npz"],
        "y.npz",
        ["x.npz", "arg1"],
    ),
    "run-misshaped-input": Case(
        {
            **GOOD,
            "x.npz": weights_file(arg0=INPUTS["arg0"], arg1=np.zeros(4, np.float32)),
        },
        [*RUN, "--inputs", "x.npz", "--output", "y.npz"],
        "y.npz",
        ["p.mlir", "arg1", "[4]", "[3]"],
    ),
    "run-mistyped-input": Case(
        {
            **GOOD,
            "x.npz": weights_file(arg0=INPUTS["arg0"], arg1=np.zeros(3, np.int32)),
        },
        [*RUN, "--inputs", "x.npz", "--output", "y.npz"],
        "y.npz",
        ["p.mlir", "arg1", "int32"],
    ),
    "run-corrupt-inputs": Case(
        {**GOOD, "x.npz": b"garbage"},
        [*RUN, "--inputs", "x.npz", "--output", "y.npz"],
        "y.npz",
        ["x.npz"],
    ),
    "run-unknown-function": Case(
        GOOD, [*RUN, "--random", "0", "--function", "g"], None, ["'g'"]
    ),
    "run-negative-seed": Case(GOOD, [*RUN, "--random", "-1"], None, ["-1"]),
    "run-existing-output-fails": Case(
        {"p.mlir": PROGRAM},
        ["run", "p.mlir", "--random", "0", "--output", "y.npz", "--force"],
        "y.npz",
        ["'w'"],
        previous="old",
    ),
    # compile-model
    "compile-model-unknown-model": Case(
        {}, ["compile-model", "qwen9", "-o", "out"], "out", ["qwen9"]
    ),
    "compile-model-existing-output": Case(
        {}, ["compile-model", "qwen3-0.6b", "-o", "out"], "out", ["out"], previous="old"
    ),
    "compile-model-bad-seq-len": Case(
        {},
        ["compile-model", "qwen3-0.6b", "--seq-len", "0", "-o", "out"],
        "out",
        ["--seq-len"],
    ),
}


def prepare(directory: Path, case: Case) -> None:
    directory.mkdir()
    for name, content in case.files.items():
        path = directory / name
        if callable(content):
            content(path)
        elif isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    if case.previous is not None and case.output is not None:
        (directory / case.output).write_text(case.previous)


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> dict[str, tuple[Path, subprocess.CompletedProcess]]:
    """Every case run once, concurrently."""
    root = tmp_path_factory.mktemp("sweep")
    for name, case in CASES.items():
        prepare(root / name, case)
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {
            name: pool.submit(cli_process, *case.args, cwd=root / name, timeout=300)
            for name, case in CASES.items()
        }
        return {name: (root / name, f.result()) for name, f in futures.items()}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input_is_one_clean_error(sweep, name):
    case = CASES[name]
    directory, result = sweep[name]
    assert "Traceback" not in result.stderr, result.stderr
    errors = [
        ln for ln in result.stderr.splitlines() if ln.startswith("xdsl-ane: error:")
    ]
    assert len(errors) == 1, result.stderr
    assert result.returncode == 1, result
    for needle in case.needles:
        assert needle in errors[0], errors[0]
    if case.output is not None:
        output = directory / case.output
        if case.previous is None:
            assert not output.exists(), f"{output} was written"
        else:
            assert output.read_text() == case.previous
    assert leftovers(directory) == []


@pytest.mark.slow
def test_extra_weights_warn_and_compile(tmp_path):
    (tmp_path / "p.mlir").write_text(PROGRAM)
    np.savez(tmp_path / "w.npz", w=WEIGHT, unused=np.zeros(3, np.float32))
    result = cli_process(*COMPILE, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    warnings = [ln for ln in result.stderr.splitlines() if "warning" in ln]
    assert len(warnings) == 1 and "not used by the program" in warnings[0]
    assert (tmp_path / "out.mlpackage" / "Manifest.json").exists()
    assert leftovers(tmp_path) == []


def test_safetensors_weights_compile(tmp_path):
    (tmp_path / "p.mlir").write_text(PROGRAM)
    safetensors_file(tmp_path / "w.safetensors")
    model = xdsl_ane.compile(tmp_path / "p.mlir", weights=tmp_path / "w.safetensors")
    model.save(tmp_path / "out", emit="mil-text")
    assert (tmp_path / "out" / "manifest.json").exists()

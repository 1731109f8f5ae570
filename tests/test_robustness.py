"""Robustness of xdsl-ane against bad input, failures and interruptions.

1. A scripted sweep runs every kind of bad input through the command line
   (one subprocess each, run concurrently): each must exit 1 with exactly
   one `xdsl-ane: error:` line, no traceback, nothing at the output path
   (an existing output untouched) and no temporary files left beside it.
2. Failures injected mid-write (a writer monkeypatched to raise, or to be
   interrupted) leave the previous output as it was and no temporary
   files; an interrupted command exits 130.
3. Plain `xdsl-opt --verify-diagnostics` reports our passes' failures in
   one line.
4. Regression tests for the bugs the fuzzers (test_fuzz_*.py) found.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from ane_form import run_ane_form
from xdsl.context import Context

import xdsl_ane
from xdsl_ane.errors import XdslAneError, XdslAneInternalError
from xdsl_ane.frontend.mil_text import parse_mil_text
from xdsl_ane.frontend.mlir import parse_module_text
from xdsl_ane.frontend.safetensors import write_safetensors
from xdsl_ane.interpreter.core import run_function
from xdsl_ane.passes.pipeline import AnePipelinePass
from xdsl_ane.tools import cli

PROGRAM = """\
func.func @f(%x: tensor<2x3xf32>, %y: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<2xf32>) {
  %w = rlx.param "w" : tensor<2x3xf32>
  %0 = rlx.add %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = rlx.mul %0, %w : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = rlx.reduce_sum %1 {axes = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return %1, %2 : tensor<2x3xf32>, tensor<2xf32>
}
"""
WEIGHT = np.arange(6, dtype=np.float32).reshape(2, 3)
KERNEL_MIL = """\
program(1.3)
{
    func main<ios18>(tensor<fp16, [1, 4, 1, 8]> x) {
        tensor<fp16, [1, 4, 1, 8]> y = relu(x = x)[name = string("y")];
    } -> (y);
}
"""
BLOB_MIL = """\
program(1.3)
{
    func main<ios18>(tensor<fp16, [1, 4, 1, 8]> x) {
        tensor<fp16, [1, 4, 1, 1]> b = const()[name = string("b"), val = tensor<fp16, [1, 4, 1, 1]>(BLOBFILE(path = string("@model_path/weights/weight.bin"), offset = uint64(64)))];
        tensor<fp16, [1, 4, 1, 8]> y = add(x = x, y = b)[name = string("y")];
    } -> (y);
}
"""


def xdsl_ane_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "xdsl_ane.tools.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
    )


def leftovers(directory: Path) -> list[str]:
    """Temporary files or directories a writer left behind."""
    return sorted(
        p.name
        for p in directory.iterdir()
        if p.name.startswith(".") and p.name.endswith((".tmp", ".old"))
    )


def snapshot(path: Path) -> dict[str, bytes] | None:
    """The content of a file or directory tree, None if absent."""
    if not path.exists():
        return None
    if path.is_file():
        return {"": path.read_bytes()}
    return {
        str(p.relative_to(path)): p.read_bytes() for p in path.rglob("*") if p.is_file()
    }


# --- 1. the sweep ------------------------------------------------------------------


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
COMPILE = ["compile", "p.mlir", "--weights", "w.npz", "-o", "out.mlpackage"]
RUN = ["run", "p.mlir", "--weights", "w.npz"]
INPUTS = {"arg0": np.zeros((2, 3), np.float32), "arg1": np.zeros(3, np.float32)}


def replaced(old: str, new: str) -> str:
    assert old in PROGRAM
    return PROGRAM.replace(old, new)


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
            name: pool.submit(xdsl_ane_cli, *case.args, cwd=root / name)
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
    result = xdsl_ane_cli(*COMPILE, cwd=tmp_path)
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


# --- 2. failures and interruptions mid-write ---------------------------------------


@pytest.fixture
def model() -> xdsl_ane.CompiledModel:
    return xdsl_ane.compile(parse_module_text(PROGRAM, "p.mlir"), weights={"w": WEIGHT})


class Interrupted(Exception):
    pass


def failing(error: BaseException, write_first: Callable[..., None] | None = None):
    """A replacement writer that writes part of its output, then raises."""

    def writer(*args, **kwargs):
        if write_first is not None:
            write_first(*args, **kwargs)
        raise error

    return writer


def partial_dir(self, directory, *args, **kwargs):
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "weight.bin").write_bytes(b"half")


def partial_blob(path, entries):
    Path(path).write_bytes(b"half")


WRITERS = {
    # emit: (object, attribute) whose call is made to fail after writing part
    # the package's manifest and spec are written, then half of its blob (the
    # blob writer of both the streamed first save, on its thread, and a save
    # of a model already printed)
    "mlpackage": ("xdsl_ane.backend.weights.write_entries", partial_blob),
    "proto": ("xdsl_ane.backend.milproto.ProtoResult.write_weights", partial_dir),
    "mil-text": ("xdsl_ane.backend.weights.WeightBlob.write_weights_dir", partial_dir),
}


def output_of(tmp_path: Path, emit: str) -> Path:
    return tmp_path / ("out.mlpackage" if emit == "mlpackage" else "out")


@pytest.mark.parametrize(
    "error",
    [OSError(28, "No space left on device"), Interrupted("boom"), KeyboardInterrupt()],
    ids=["disk-full", "exception", "interrupt"],
)
@pytest.mark.parametrize("emit", sorted(WRITERS))
def test_failed_save_keeps_previous_output(model, tmp_path, monkeypatch, emit, error):
    output = output_of(tmp_path, emit)
    model.save(output, emit=emit)
    before = snapshot(output)
    manifest = tmp_path / "out.manifest.json"
    manifest_before = snapshot(manifest)
    target, partial = WRITERS[emit]
    monkeypatch.setattr(target, failing(error, partial))
    expected = (
        KeyboardInterrupt if isinstance(error, KeyboardInterrupt) else XdslAneError
    )
    with pytest.raises(expected) as raised:
        model.save(output, emit=emit, force=True)
    if isinstance(error, Interrupted):
        assert isinstance(raised.value, XdslAneInternalError)
    if isinstance(error, OSError):
        assert "No space left" in str(raised.value)
    assert snapshot(output) == before
    assert snapshot(manifest) == manifest_before
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("emit", sorted(WRITERS))
def test_failed_first_save_writes_nothing(model, tmp_path, monkeypatch, emit):
    target, partial = WRITERS[emit]
    monkeypatch.setattr(target, failing(OSError(5, "I/O error"), partial))
    with pytest.raises(XdslAneError, match="I/O error"):
        model.save(output_of(tmp_path, emit), emit=emit)
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_failing_manifest_writes_nothing(model, tmp_path, monkeypatch):
    def broken(self):
        raise KeyError("ane.arg_layouts")

    monkeypatch.setattr(xdsl_ane.CompiledModel, "manifest", broken)
    with pytest.raises(XdslAneInternalError, match="manifest"):
        model.save(tmp_path / "out.mlpackage")
    assert list(tmp_path.iterdir()) == []


def test_unwritable_directory_is_reported_before_compiling(
    tmp_path, monkeypatch, capsys
):
    """(Tests run as root here, where chmod does not make a directory
    unwritable, so the permission check is patched.)"""
    (tmp_path / "p.mlir").write_text(PROGRAM)
    np.savez(tmp_path / "w.npz", w=WEIGHT)
    monkeypatch.setattr("os.access", lambda path, mode: False)

    def never(*args, **kwargs):
        raise AssertionError("compiled although the output cannot be written")

    monkeypatch.setattr("xdsl_ane.api.compile", never)
    assert run_cli(monkeypatch, tmp_path, *COMPILE) == 1
    err = capsys.readouterr().err.strip()
    assert err == "xdsl-ane: error: out.mlpackage: directory . is not writable"


def run_cli(monkeypatch, tmp_path: Path, *args: str) -> int:
    monkeypatch.chdir(tmp_path)
    return cli.main(list(args))


@pytest.mark.parametrize(
    "error, status", [(KeyboardInterrupt(), 130), (OSError(28, "disk full"), 1)]
)
def test_cli_compile_interrupted(tmp_path, monkeypatch, capsys, error, status):
    (tmp_path / "p.mlir").write_text(PROGRAM)
    np.savez(tmp_path / "w.npz", w=WEIGHT)
    (tmp_path / "out").mkdir()  # a previous output of xdsl-ane's
    (tmp_path / "out" / "model.mil").write_text("previous")
    (tmp_path / "out" / "manifest.json").write_text('{"functions": {}}')
    target, partial = WRITERS["mil-text"]
    monkeypatch.setattr(target, failing(error, partial))
    args = [*COMPILE[:-1], "out", "--emit", "mil-text", "--force"]
    assert run_cli(monkeypatch, tmp_path, *args) == status
    assert "Traceback" not in capsys.readouterr().err
    assert snapshot(tmp_path / "out") == {
        "model.mil": b"previous",
        "manifest.json": b'{"functions": {}}',
    }
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize(
    "error, status", [(KeyboardInterrupt(), 130), (OSError(28, "disk full"), 1)]
)
def test_cli_import_writes_both_files_or_neither(
    tmp_path, monkeypatch, capsys, error, status
):
    model = xdsl_ane.compile(
        parse_module_text(PROGRAM, "p.mlir"), weights={"w": WEIGHT}
    )
    model.save(tmp_path / "k", emit="mil-text")
    real_savez = np.savez
    monkeypatch.setattr(np, "savez", failing(error, lambda f, **a: real_savez(f, **a)))
    assert (
        run_cli(monkeypatch, tmp_path, "import", "k/model.mil", "-o", "k.mlir")
        == status
    )
    assert "Traceback" not in capsys.readouterr().err
    assert not (tmp_path / "k.mlir").exists()
    assert not (tmp_path / "k.weights.npz").exists()
    assert leftovers(tmp_path) == []


def test_cli_run_interrupted_keeps_previous_output(tmp_path, monkeypatch, capsys):
    (tmp_path / "p.mlir").write_text(PROGRAM)
    np.savez(tmp_path / "w.npz", w=WEIGHT)
    (tmp_path / "y.npz").write_bytes(b"previous")
    real_savez = np.savez
    monkeypatch.setattr(
        np, "savez", failing(KeyboardInterrupt(), lambda f, **a: real_savez(f, **a))
    )
    status = run_cli(
        monkeypatch, tmp_path, *RUN, "--random", "0", "--output", "y.npz", "--force"
    )
    assert status == 130
    assert "interrupted" in capsys.readouterr().err
    assert (tmp_path / "y.npz").read_bytes() == b"previous"
    assert leftovers(tmp_path) == []


def test_cli_run_interpreter_bug_is_one_line_naming_the_op(
    tmp_path, monkeypatch, capsys
):
    """An exception inside an op's interpreter function (as the rank-0 erf
    bug raised) is one line naming the op."""
    (tmp_path / "p.mlir").write_text(
        "func.func @f(%x: tensor<f32>) -> tensor<f32> {\n"
        "  %0 = rlx.gelu %x : tensor<f32>\n  func.return %0 : tensor<f32>\n}\n"
    )

    def broken(x):
        raise AttributeError("'float' object has no attribute 'astype'")

    monkeypatch.setattr("xdsl_ane.interpreter.numerics.erf", broken)
    status = run_cli(monkeypatch, tmp_path, "run", "p.mlir", "--random", "0")
    assert status == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "p.mlir: interpreting rlx.gelu: internal error" in err


def test_cli_unexpected_exception_is_one_line(tmp_path, monkeypatch, capsys):
    """A bug anywhere still ends in one line and status 1."""
    (tmp_path / "p.mlir").write_text(PROGRAM)
    np.savez(tmp_path / "w.npz", w=WEIGHT)

    def broken(*args, **kwargs):
        raise ZeroDivisionError("oops")

    monkeypatch.setattr("xdsl_ane.api.check_weights", broken)
    assert run_cli(monkeypatch, tmp_path, *COMPILE) == 1
    err = capsys.readouterr().err
    assert (
        err.count("\n") == 1 and "internal error" in err and "ZeroDivisionError" in err
    )
    assert not (tmp_path / "out.mlpackage").exists()


# --- 3. plain xdsl-opt -------------------------------------------------------------


XDSL_OPT = Path(sys.executable).with_name("xdsl-opt")


@pytest.mark.slow
@pytest.mark.parametrize(
    "program, passes, needle",
    [
        ("rank5", "ane-pipeline", "no [1, C, 1, S] layout"),
        ("scalar", "ane-pipeline", "not a tensor"),
        ("scalar", "mil-ane-layout", "not a tensor"),
        ("ok", "mil-ane-layout{weights=foo}", "weights=foo"),
        ("ok", "ane-pipeline{weights=foo}", "weights=foo"),
        ("ok", "convert-rlx-to-mil,mil-pack-io", "mil-pack-io"),
    ],
)
def test_xdsl_opt_pass_failures_are_one_line(tmp_path, program, passes, needle):
    texts = {
        "ok": PROGRAM,
        "rank5": "func.func @f(%x: tensor<1x2x1x2x2xf32>) -> tensor<1x2x1x2x2xf32> {\n"
        "  func.return %x : tensor<1x2x1x2x2xf32>\n}\n",
        "scalar": "func.func @f(%x: f32) -> f32 {\n  func.return %x : f32\n}\n",
    }
    path = tmp_path / "p.mlir"
    path.write_text(texts[program])
    result = subprocess.run(
        [str(XDSL_OPT), str(path), "-p", passes, "--verify-diagnostics"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Traceback" not in result.stderr + result.stdout
    lines = [ln for ln in result.stdout.splitlines() if ln.strip()]
    assert len(lines) == 1 and needle in lines[0], result.stdout


@pytest.mark.slow
def test_xdsl_opt_printer_rejects_non_tensors_in_one_line(tmp_path):
    path = tmp_path / "p.mlir"
    path.write_text("func.func @f(%x: f32) -> f32 {\n  func.return %x : f32\n}\n")
    for target in ("mil-text", "mil-proto-text"):
        result = subprocess.run(
            [str(XDSL_OPT), str(path), "-t", target, "--verify-diagnostics"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert "Traceback" not in result.stderr, result.stderr
        lines = [ln for ln in result.stdout.splitlines() if ln.strip()]
        assert len(lines) == 1 and "f32" in lines[0], result.stdout


# --- 4. regressions from the fuzzers -----------------------------------------------


def compile_and_compare(text: str, weights: dict, inputs: list, fp16: bool) -> None:
    module = parse_module_text(text, "regression.mlir")
    expected = run_function(module, inputs, weights)
    for mode in ("static", "dynamic"):
        compiled = module.clone()
        AnePipelinePass(weights=mode, fp16=fp16, lint=False).apply(Context(), compiled)
        compiled.verify()
        actual = run_ane_form(compiled, inputs, weights, [e.shape for e in expected])
        for e, a in zip(expected, actual):
            np.testing.assert_allclose(a, e, rtol=1e-2 if fp16 else 1e-5, atol=1e-3)


def test_padded_broadcast_operand_with_a_layout_chain():
    """mil-ane-layout asserted (`Layout.to_ane`) when an operand that reaches
    its layout through reshapes is broadcast with leading ones ([1, 1] read
    as [1, 1, 1]); found by test_fuzz_pipeline."""
    text = """\
func.func @f(%i: tensor<1x1xi32>, %y: tensor<1x1x1xf32>) -> tensor<1x1x1xf32> {
  %t = rlx.param "t" : tensor<7x1xf32>
  %0 = rlx.gather %t, %i {axis = 0 : i64} : (tensor<7x1xf32>, tensor<1x1xi32>) -> tensor<1x1x1xf32>
  %1 = rlx.reshape %0 : tensor<1x1x1xf32> -> tensor<1x1xf32>
  %2 = rlx.add %1, %y : (tensor<1x1xf32>, tensor<1x1x1xf32>) -> tensor<1x1x1xf32>
  func.return %2 : tensor<1x1x1xf32>
}
"""
    weights = {"t": np.arange(7, dtype=np.float32).reshape(7, 1)}
    inputs = [np.array([[3]], np.int32), np.ones((1, 1, 1), np.float32)]
    for fp16 in (False, True):
        compile_and_compare(text, weights, inputs, fp16)


def test_weight_name_with_a_newline_gives_one_line(tmp_path):
    """An escaped newline in a name used to split the error message (found
    by test_fuzz_parsers)."""
    path = tmp_path / "p.mlir"
    path.write_text(replaced('"w"', '"a\\0Ab"'))
    with pytest.raises(XdslAneError) as raised:
        xdsl_ane.compile(path)
    assert "\n" not in str(raised.value) and "a\\nb" in str(raised.value)


def test_stray_quote_is_reported_fast(tmp_path):
    """xDSL 0.75's string-literal regex backtracks exponentially on an
    unterminated literal followed by a long line; parse_module_text checks
    literals first (found by test_fuzz_parsers)."""
    text = 'func.func @f(%x: tensor<4x8xf32>, %y: tensor<8xf32>, %la"els: tensor<4xi32>, %z: tensor<4xi32>) -> () {\n  func.return\n}\n'
    with pytest.raises(XdslAneError, match=r"p.mlir:1:57: unterminated string"):
        parse_module_text(text, "p.mlir")
    # Valid strings, escapes and quotes in comments still parse.
    parse_module_text(
        '// a "quote\nfunc.func @f() {\n  %0 = rlx.constant dense<1.0> : tensor<f32>\n'
        '  %1 = rlx.param "a\\"b\\0A\\\\" : tensor<f32>\n  func.return\n}\n',
        "ok.mlir",
    )


def test_where_with_the_widest_condition():
    """convert-rlx-to-mil lowered rlx.where to mil.select unchanged, but MIL
    takes select's shape from a and b: a condition wider than both branches
    failed mil.select's verifier (found by test_fuzz_pipeline)."""
    text = """\
func.func @f(%c: tensor<2x3xi1>, %a: tensor<1x3xf32>) -> tensor<2x3xf32> {
  %0 = rlx.neg %a : tensor<1x3xf32>
  %1 = rlx.where %c, %a, %0 : (tensor<2x3xi1>, tensor<1x3xf32>, tensor<1x3xf32>) -> tensor<2x3xf32>
  func.return %1 : tensor<2x3xf32>
}
"""
    inputs = [np.array([[1, 0, 1], [0, 1, 0]], bool), np.ones((1, 3), np.float32)]
    compile_and_compare(text, {}, inputs, fp16=False)


def test_gelu_of_a_scalar_interprets():
    """The interpreter's erf (np.frompyfunc) gave a Python float for a rank-0
    array: rlx.gelu on tensor<f32> raised AttributeError (found by
    test_fuzz_pipeline)."""
    module = parse_module_text(
        "func.func @f(%x: tensor<f32>) -> tensor<f32> {\n"
        "  %0 = rlx.gelu %x : tensor<f32>\n  func.return %0 : tensor<f32>\n}\n",
        "p.mlir",
    )
    (y,) = run_function(module, [np.array(1.0, np.float32)], {})
    assert abs(float(y) - 0.8413447) < 1e-6


def test_rms_norm_backward_input_f16_row_of_zeros():
    """The rlx interpreter computed r³ in f16, which overflows for a row near
    zero (r = 1/sqrt(eps)): nan where the lowering and the math are finite
    (found by test_fuzz_pipeline)."""
    module = parse_module_text(
        "func.func @f(%x: tensor<1x4xf16>, %g: tensor<4xf16>, %d: tensor<1x4xf16>) -> tensor<1x4xf16> {\n"
        "  %0 = rlx.rms_norm_backward_input %x, %g, %d {eps = 1.0e-05 : f32} : "
        "(tensor<1x4xf16>, tensor<4xf16>, tensor<1x4xf16>) -> tensor<1x4xf16>\n"
        "  func.return %0 : tensor<1x4xf16>\n}\n",
        "p.mlir",
    )
    x = np.zeros((1, 4), np.float16)
    g = np.ones(4, np.float16)
    d = np.full((1, 4), 0.1, np.float16)
    (y,) = run_function(module, [x, g, d], {})
    assert np.all(np.isfinite(y))


@pytest.mark.parametrize("literal", ["0x1p16385", "1e400", "-1e400"])
def test_mil_float_literal_beyond_float64(literal):
    """A hex float beyond float64 raised OverflowError (an internal error)
    in the MIL text parser, and a decimal one became inf (found by
    test_fuzz_parsers)."""
    text = KERNEL_MIL.replace("relu(x = x)", f"mul(x = x, y = fp16({literal}))")
    with pytest.raises(XdslAneError, match=r"k.mil:4:\d+: .* is out of range for fp16"):
        parse_mil_text(text, "k.mil")


def test_api_rejects_wrong_arguments_with_its_one_exception(tmp_path):
    """Misused API arguments were internal errors (TypeError) or misleading
    shape errors (a weight given as a list of strings)."""
    path = tmp_path / "p.mlir"
    path.write_text(PROGRAM)
    cases = [
        ((123,), {}, "expected a builtin.ModuleOp or the path"),
        ((path,), {"weights": 5}, "expected a mapping"),
        ((path,), {"weights": {"w": ["a", "b"]}}, "'w' is not a numeric array"),
    ]
    for args, kwargs, needle in cases:
        with pytest.raises(XdslAneError) as raised:
            xdsl_ane.compile(*args, **kwargs)
        assert not isinstance(raised.value, XdslAneInternalError)
        assert needle in str(raised.value)
    # Nested lists of numbers are arrays like any other.
    model = xdsl_ane.compile(path, weights={"w": WEIGHT.tolist()})
    assert model.weights["w"].shape == (2, 3)


def test_out_of_memory_is_an_error_naming_the_file(tmp_path, monkeypatch):
    path = tmp_path / "p.mlir"
    path.write_text(PROGRAM)

    def exhausted(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr("xdsl_ane.api.run_pipeline", exhausted)
    with pytest.raises(XdslAneError, match=r"p.mlir: out of memory"):
        xdsl_ane.compile(path, weights={"w": WEIGHT})

"""Failures injected mid-write (a writer monkeypatched to raise, or to be
interrupted) leave the previous output as it was and no temporary files;
an interrupted command exits 130, an unexpected exception is one line.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from robustness_inputs import (
    COMPILE,
    PROGRAM,
    RUN,
    WEIGHT,
    leftovers,
)

import xdsl_ane
from xdsl_ane.errors import XdslAneError, XdslAneInternalError
from xdsl_ane.frontend.mlir import parse_module_text
from xdsl_ane.tools import cli


def snapshot(path: Path) -> dict[str, bytes] | None:
    """The content of a file or directory tree, None if absent."""
    if not path.exists():
        return None
    if path.is_file():
        return {"": path.read_bytes()}
    return {
        str(p.relative_to(path)): p.read_bytes() for p in path.rglob("*") if p.is_file()
    }


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

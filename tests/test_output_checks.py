"""Outputs checked before any work (issue: outputs): `estimate --plot`
replaces a file only with --force and writes it whole; `--emit mil-text`
or `proto` refuses a `.mlpackage` name; a directory the file system will
not write in (/proc) is refused before compiling; an unknown deployment
target fails at once in the API; a manifest-less `.mil` runs on its own
arguments; an empty tensor is refused naming it; the chart follows
`--by`."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import cli, error_line

import xdsl_ane
from xdsl_ane.errors import XdslAneError

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = """
func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = rlx.relu %x : tensor<4x8xf32>
  %z = rlx.neg %y : tensor<4x8xf32>
  func.return %z : tensor<4x8xf32>
}
"""


@pytest.fixture
def source(tmp_path) -> Path:
    path = tmp_path / "m.mlir"
    path.write_text(PROGRAM)
    return path


def test_plot_replaces_a_file_only_with_force(source, tmp_path):
    chart = tmp_path / "e.png"
    chart.write_bytes(b"mine")
    error_line(
        cli("estimate", str(source), "--plot", str(chart)),
        f"{chart}: already exists (use --force to replace it)",
    )
    assert chart.read_bytes() == b"mine"
    assert cli("estimate", str(source), "--plot", str(chart), "--force").returncode == 0
    assert chart.read_bytes()[:4] == b"\x89PNG"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.png", "m.mlir"]


def test_plot_bars_follow_by(source, tmp_path, monkeypatch):
    """The chart has the table's rows: per op, or per layer with --by."""
    from xdsl_ane.estimator import report

    bars: list[int] = []
    real = report.layers

    def counted(estimate):
        groups = real(estimate)
        bars.append(len(groups))
        return groups

    monkeypatch.setattr(report, "layers", counted)
    assert (
        cli("estimate", str(source), "--plot", str(tmp_path / "a.png")).returncode == 0
    )
    assert bars == []  # two ops: per op, as the table
    args = ["--plot", str(tmp_path / "b.png"), "--by", "layer"]
    assert cli("estimate", str(source), *args).returncode == 0
    assert bars and set(bars) == {1}  # the table and the chart, per layer


@pytest.mark.parametrize("emit", ["mil-text", "proto"])
def test_a_directory_emit_is_not_named_as_a_package(source, tmp_path, emit):
    out = tmp_path / "x.mlpackage"
    error_line(
        cli("compile", str(source), "-o", str(out), "--emit", emit),
        f"--emit {emit} writes a directory",
        "without .mlpackage",
    )
    assert not out.exists()
    compiled = xdsl_ane.compile(source)
    with pytest.raises(XdslAneError, match="not a package"):
        compiled.save(out, emit=emit)


@pytest.mark.skipif(not Path("/proc/self").exists(), reason="needs Linux /proc")
def test_a_directory_that_refuses_files_fails_before_compiling(source):
    result = cli("compile", str(source), "-o", "/proc/x.mlpackage")
    error_line(result, "/proc/x.mlpackage: cannot write in /proc")
    assert "MIL protobuf" not in result.stderr and result.stdout == ""


def test_an_unknown_target_fails_at_once(source, monkeypatch):
    import xdsl_ane.api as api

    monkeypatch.setattr(api, "_compile_module", None)  # no work may start
    with pytest.raises(XdslAneError, match="deployment target 'iOS99': expected one"):
        xdsl_ane.compile(source, target="iOS99")


def test_a_mil_file_runs_on_its_own_arguments(tmp_path):
    out = tmp_path / "y.npz"
    result = cli(
        "run",
        str(ROOT / "examples" / "kernel.mil"),
        "--random",
        "0",
        "--output",
        str(out),
    )
    assert result.returncode == 0, result.stderr
    assert "has no layout record: run on its own arguments" in result.stderr
    assert out.is_file()


def test_an_empty_tensor_is_refused_naming_it(tmp_path):
    source = tmp_path / "e.mlir"
    source.write_text(PROGRAM.replace("4x8", "0x4"))
    out = tmp_path / "e.mlpackage"
    error_line(
        cli("compile", str(source), "-o", str(out)),
        "e.mlir:2:1: @main argument 0 has type tensor<0x4xf32>, with no elements",
    )
    assert not out.exists()

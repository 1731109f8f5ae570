"""One output policy for every command: an existing output is replaced only
with --force, and never one of the command's inputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from cli_helpers import cli, error_line

PROGRAM = """\
func.func @f(%x: tensor<8x32xf32>) -> tensor<8x16xf32> {
  %w = rlx.param "w" : tensor<16x32xf32>
  %y = rlx.matmul %x, %w {transpose_rhs = true} : (tensor<8x32xf32>, tensor<16x32xf32>) -> tensor<8x16xf32>
  func.return %y : tensor<8x16xf32>
}
"""


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "mlp.mlir").write_text(PROGRAM)
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "w.npz", w=rng.standard_normal((16, 32)).astype(np.float32))
    return tmp_path


def test_compile_never_replaces_its_input(work):
    source = work / "mlp.mlir"
    before = source.read_text()
    for emit in ("mil-text", "mlpackage", "proto"):
        result = cli(
            "compile",
            str(source),
            "-o",
            str(source),
            "--weights",
            str(work / "w.npz"),
            "--emit",
            emit,
            "--force",
        )
        error_line(result, "is the input", "mlp.mlir")
    result = cli(
        "compile",
        str(source),
        "-o",
        str(work / "w.npz"),
        "--weights",
        str(work / "w.npz"),
        "--force",
    )
    error_line(result, "is the input", "w.npz")
    # nor a directory that holds an input
    result = cli(
        "compile",
        str(source),
        "-o",
        str(work),
        "--weights",
        str(work / "w.npz"),
        "--emit",
        "mil-text",
        "--force",
    )
    error_line(result, "holds the input")
    assert source.read_text() == before
    assert source.is_file()


def test_compile_manifest_is_an_output_too(work):
    (work / "out.manifest.json").write_text("{}")
    args = [
        "compile",
        str(work / "mlp.mlir"),
        "-o",
        str(work / "out.mlpackage"),
        "--weights",
        str(work / "w.npz"),
    ]
    error_line(cli(*args), "out.manifest.json", "already exists", "--force")
    assert (work / "out.manifest.json").read_text() == "{}"
    assert not (work / "out.mlpackage").exists()
    assert cli(*args, "--force").returncode == 0
    assert "functions" in (work / "out.manifest.json").read_text()


def test_run_output_needs_force(work):
    out = work / "y.npz"
    args = [
        "run",
        str(work / "mlp.mlir"),
        "--random",
        "0",
        "--weights",
        str(work / "w.npz"),
        "--output",
        str(out),
    ]
    assert cli(*args).returncode == 0
    first = np.load(out)["out0"]
    np.savez(out, out0=np.zeros(1))
    error_line(cli(*args), "y.npz", "already exists")
    assert np.load(out)["out0"].shape == (1,)
    assert cli(*args, "--force").returncode == 0
    np.testing.assert_array_equal(np.load(out)["out0"], first)
    # never the inputs or weights file
    error_line(
        cli(
            "run",
            str(work / "mlp.mlir"),
            "--random",
            "0",
            "--weights",
            str(work / "w.npz"),
            "--output",
            str(work / "w.npz"),
            "--force",
        ),
        "is the input",
        "w.npz",
    )


def test_import_never_replaces_its_input(tmp_path):
    kernel = tmp_path / "k.mil"
    kernel.write_text(
        "program(1.3)\n{\n    func main<ios18>(tensor<fp16, [1, 4, 1, 2]> x) {\n"
        '        tensor<fp16, [1, 4, 1, 2]> y = relu(x = x)[name = string("y")];\n'
        "    } -> (y);\n}\n"
    )
    before = kernel.read_text()
    error_line(
        cli("import", str(kernel), "-o", str(tmp_path / "k.mil"), "--force"),
        "is the input",
    )
    assert kernel.read_text() == before
    # the weights file beside the output is checked before anything is read
    (tmp_path / "k2.weights.npz").write_text("x")
    error_line(
        cli("import", str(kernel), "-o", str(tmp_path / "k2.mlir")),
        "k2.weights.npz",
        "already exists",
    )
    assert not (tmp_path / "k2.mlir").exists()


def compile_args(work: Path, out: Path, emit: str) -> list[str]:
    return [
        "compile",
        str(work / "mlp.mlir"),
        "-o",
        str(out),
        "--weights",
        str(work / "w.npz"),
        "--emit",
        emit,
    ]


def tree(path: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(path)): p.read_bytes() for p in path.rglob("*") if p.is_file()
    }


@pytest.mark.parametrize(
    "emit,name", [("mil-text", "out"), ("proto", "out"), ("mlpackage", "out.mlpackage")]
)
def test_force_replaces_only_what_xdsl_ane_wrote(work, emit, name):
    """--force replaces a directory output xdsl-ane wrote, but neither one
    holding a file it did not write nor a directory it did not write: those
    are refused, and left as they were."""
    out = work / name
    assert cli(*compile_args(work, out, emit)).returncode == 0
    assert cli(*compile_args(work, out, emit), "--force").returncode == 0
    (out / "notes.txt").write_text("mine")
    before = tree(out)
    error_line(
        cli(*compile_args(work, out, emit), "--force"),
        str(out),
        "holds notes.txt, which xdsl-ane did not write",
    )
    assert tree(out) == before
    (out / "notes.txt").unlink()
    assert cli(*compile_args(work, out, emit), "--force").returncode == 0
    # a directory of the user's at the output path
    mine = work / ("mine.mlpackage" if emit == "mlpackage" else "mine")
    (mine / "Data").mkdir(parents=True)
    (mine / "Data" / "photo.jpg").write_text("x")
    (mine / "manifest.json").write_text('{"photos": 1}')
    before = tree(mine)
    error_line(
        cli(*compile_args(work, mine, emit), "--force"),
        str(mine),
        "a directory xdsl-ane did not write",
    )
    assert tree(mine) == before


def test_run_writes_to_o(work):
    """-o is the output option of every command, run's included."""
    out = work / "y.npz"
    args = ["run", str(work / "mlp.mlir"), "--random", "0", "--weights"]
    result = cli(*args, str(work / "w.npz"), "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert np.load(out)["out0"].shape == (8, 16)
    error_line(
        cli(*args, str(work / "w.npz"), "--force"),
        "--force: applies only with --output",
    )

"""Errors name an option the way the caller wrote it (issue 41): from the
Python API the parameter (`max_package_size=0`, `compress='bad'`), never
a command-line flag; the same mistake through `xdsl-ane` names the flag
(`--max-package-size 0`, `--compress bad`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import cli, error_line

import xdsl_ane
from xdsl_ane.api.models import compile_model
from xdsl_ane.api.run import run
from xdsl_ane.api.text import Sampling
from xdsl_ane.errors import XdslAneError, command_line, from_command_line, option

PROGRAM = """
func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = rlx.relu %x : tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}
"""


@pytest.fixture
def source(tmp_path) -> Path:
    path = tmp_path / "m.mlir"
    path.write_text(PROGRAM)
    return path


def api_error(call, *needles: str) -> str:
    """`call()` raises an XdslAneError holding every needle and no `--`."""
    with pytest.raises(XdslAneError) as info:
        call()
    message = str(info.value)
    for needle in needles:
        assert needle in message, message
    assert "--" not in message, message
    return message


def test_option_text():
    assert option("max_package_size", 0) == "max_package_size=0"
    assert option("compress", "bad") == "compress='bad'"
    assert option("path", Path("a/b.png"), flag="--plot") == "path='a/b.png'"
    assert option("force", True) == "force=True"
    assert option("layers_per_package") == "layers_per_package"
    assert not from_command_line()
    with command_line():
        assert from_command_line()
        assert option("max_package_size", 0) == "--max-package-size 0"
        assert option("compress", "bad") == "--compress bad"
        assert option("path", Path("a/b.png"), flag="--plot") == "--plot a/b.png"
        assert option("pipeline", "x", flag="-p") == "-p x"
        assert option("force", True) == "--force"
        assert option("layers_per_package") == "--layers-per-package"
    assert not from_command_line()


def test_compile_llm_size_limit(tmp_path):
    checkpoint = str(tmp_path / "ckpt")  # checked before it is read
    api_error(
        lambda: xdsl_ane.compile_llm(checkpoint, max_package_size=0),
        "max_package_size=0: must be at least 1 byte",
    )
    api_error(
        lambda: xdsl_ane.compile_llm(checkpoint, layers_per_package=0),
        "layers_per_package=0: must be at least 1",
    )
    out = str(tmp_path / "out")
    error_line(
        cli("compile-llm", checkpoint, "-o", out, "--max-package-size", "0"),
        "--max-package-size 0: must be at least 1 byte",
    )
    error_line(
        cli("compile-llm", checkpoint, "-o", out, "--layers-per-package", "0"),
        "--layers-per-package 0: must be at least 1",
    )


def test_compile_compress_and_emit(source, tmp_path):
    out = tmp_path / "m.mlpackage"
    api_error(
        lambda: xdsl_ane.compile(source, compress="bad"),
        "compress='bad': unknown compression mode 'bad'",
    )
    error_line(
        cli("compile", str(source), "-o", str(out), "--compress", "bad"),
        "--compress bad: unknown compression mode 'bad'",
    )
    model = xdsl_ane.compile(source)
    api_error(lambda: model.save(tmp_path / "x", emit="bogus"), "emit='bogus':")
    api_error(
        lambda: model.save(out, emit="mil-text"),
        "emit='mil-text' writes a directory of mil-text",
    )
    error_line(
        cli("compile", str(source), "-o", str(out), "--emit", "mil-text"),
        "--emit mil-text writes a directory of mil-text",
    )
    assert not out.exists()


def test_existing_output_names_force(source, tmp_path):
    out = tmp_path / "m.mlpackage"
    model = xdsl_ane.compile(source)
    model.save(out)
    api_error(
        lambda: model.save(out),
        f"{out}: already exists (use force=True to replace it)",
    )
    error_line(
        cli("compile", str(source), "-o", str(out)),
        f"{out}: already exists (use --force to replace it)",
    )


def test_run_source_with_a_layout(source):
    api_error(
        lambda: run(source, layout="ane", seed=0),
        "layout='ane': applies only to a compiled model",
    )
    error_line(
        cli("run", str(source), "--random", "0", "--layout", "ane"),
        "--layout ane: applies only to a compiled model",
    )


def test_compile_model_and_sampling(tmp_path):
    out = tmp_path / "model"
    api_error(
        lambda: compile_model("qwen3-0.6b", out, seq_len=0),
        "seq_len=0: must be at least 1",
    )
    api_error(
        lambda: compile_model("qwen3-0.6b", out, training=True, layers=2),
        "layers=2: does not apply with training=True",
    )
    error_line(
        cli("compile-model", "qwen3-0.6b", "-o", str(out), "--seq-len", "0"),
        "--seq-len 0: must be at least 1",
    )
    error_line(
        cli(
            "compile-model", "qwen3-0.6b", "-o", str(out), "--training", "--layers", "2"
        ),
        "--layers 2: does not apply with --training",
    )
    api_error(lambda: Sampling(top_k=-1), "top_k=-1: must be at least 0")
    error_line(
        cli("generate", str(tmp_path / "p"), "--prompt-ids", "1", "--top-k", "-1"),
        "--top-k -1: must be at least 0",
    )
    assert not out.exists()

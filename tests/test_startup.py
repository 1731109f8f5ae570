"""What starting xdsl-ane loads: importing the package, the command line
(`xdsl-ane --help` builds its whole parser), the `xdsl.universe` entry
point that `xdsl-opt` reads, and commands on an `.mlir` that print MIL
text, estimate or interpret load neither torch, transformers nor
coremltools (each loads in the modules that use it), nor xDSL's
interpreters package (every xDSL interpreter, RISC-V included), even
where a function is interpreted. Checked on `sys.modules` in a fresh interpreter;
a structure, not a timer (bench/startup.py measures the time)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

HEAVY = ("torch", "transformers", "coremltools", "matplotlib", "safetensors")
RISCV = ("xdsl.interpreters.riscv", "xdsl.interpreters.riscv_snitch")

PROGRAM = """\
func.func @f(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %y = rlx.relu %x : tensor<2x8xf32>
  func.return %y : tensor<2x8xf32>
}
"""


def loaded_after(code: str) -> set[str]:
    """The modules of HEAVY, RISCV and xdsl.interpreters that are loaded
    after running `code` in a fresh interpreter."""
    probe = textwrap.dedent(code) + textwrap.dedent(
        f"""
        import json, sys
        watched = {[*HEAVY, *RISCV, "xdsl.interpreters"]!r}
        print(json.dumps([m for m in watched if m in sys.modules]))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize(
    "code",
    [
        "import xdsl_ane",
        "import xdsl_ane.tools.cli",
        "import xdsl_ane.universe",
        # `xdsl-ane --help`: every command's parser, then the help text
        """
        import contextlib, io
        from xdsl_ane.tools.cli import build_parser
        with contextlib.redirect_stdout(io.StringIO()):
            build_parser().format_help()
        """,
    ],
)
def test_starting_loads_no_heavy_module(code):
    assert loaded_after(code) == set()


def test_commands_on_an_mlir_load_only_what_they_use(tmp_path):
    source = tmp_path / "p.mlir"
    source.write_text(PROGRAM)

    def command(*args: str) -> str:
        return f"""
        import contextlib, io
        from xdsl_ane.tools.cli import main
        with contextlib.redirect_stdout(io.StringIO()):
            assert main({list(args)!r}) == 0
        """

    opt = f"""
    import contextlib, io, sys
    from xdsl.xdsl_opt_main import xDSLOptMain
    sys.argv = ["xdsl-opt", {str(source)!r}, "-p", "convert-rlx-to-mil",
                "-t", "mil-text"]
    with contextlib.redirect_stdout(io.StringIO()):
        xDSLOptMain().run()
    """
    assert loaded_after(opt) == set()
    assert loaded_after(command("estimate", str(source))) == set()
    # interpreting a function: the project's own func interpreter, not
    # xDSL's package of them all
    assert loaded_after(command("run", str(source), "--random", "0")) == set()

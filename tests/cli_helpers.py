"""Running the `xdsl-ane` command in tests (in this process, so that each
call does not pay for importing coremltools again, or in a process of its
own), and checking its one-line errors."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from xdsl_ane.tools.cli import main


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


def cli(*args: str, cwd: str | None = None) -> Result:
    """`xdsl-ane ARGS` as the console script runs it (`main` catches every
    error itself, so an escaping exception is a failure of the test)."""
    out, err = io.StringIO(), io.StringIO()
    previous = os.getcwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(args))
    finally:
        os.chdir(previous)
    return Result(code, out.getvalue(), err.getvalue())


def cli_process(
    *args: str, cwd: Path | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """`xdsl-ane ARGS` in a fresh interpreter: for runs that must not share
    this process's state (its memory, its imports) or that run at once."""
    return subprocess.run(
        [sys.executable, "-m", "xdsl_ane.tools.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
    )


def error_line(result: Result | subprocess.CompletedProcess[str], *needles: str) -> str:
    """The command failed with exit 1 and exactly one `xdsl-ane: error:`
    line (no traceback) holding every needle; returns that line."""
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    errors = [
        ln for ln in result.stderr.splitlines() if ln.startswith("xdsl-ane: error: ")
    ]
    assert len(errors) == 1, result.stderr
    for needle in needles:
        assert needle in errors[0], errors[0]
    return errors[0]


def saved_output_names(path) -> dict[str, list[str]]:
    """Each function's output names in a saved .mlpackage, as coremltools
    reads them: the program's block outputs and the description's."""
    from xdsl_ane.backend.weights import quiet_coremltools

    with quiet_coremltools():
        import coremltools as ct

        spec = ct.models.MLModel(str(path), skip_model_load=True).get_spec()
    names = {}
    for name, f in spec.mlProgram.functions.items():
        block = f.block_specializations[f.opset]
        names[name] = list(block.outputs)
    described = spec.description.functions or [spec.description]
    for d in described:
        key = getattr(d, "name", "") or "main"
        assert [o.name for o in d.output] == names[key], key
    return names


def readme_example(
    compile_prefix: str, command: str
) -> tuple[str, list[tuple[str, list[str]]]]:
    """A README example: the `compile_prefix ...` command named before it,
    and each `$ command ...` line of its ```text block with the lines it
    prints."""
    import re

    text = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    (compile_command,) = re.findall(rf"`({re.escape(compile_prefix)} [^`]*)`", text)
    start = f"$ {command}"
    block = start + text.split("```text\n" + start, 1)[1].split("```", 1)[0]
    runs: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            runs.append((line[2:], []))
        elif line:
            runs[-1][1].append(line)
    return compile_command, runs

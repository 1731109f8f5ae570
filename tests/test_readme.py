"""The README states what is true: its op-count tables are what the
pipeline produces today, and its rlx table covers the dialect."""

from __future__ import annotations

import importlib
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from xdsl_ane.dialects.rlx import RLX

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def load_bench(name: str):
    """A module of the `bench` package, imported as `python -m bench.NAME`
    imports it (the repository root on the path)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    return importlib.import_module(f"bench.{name}")


def test_op_count_tables_are_current():
    tables = load_bench("op_counts").tables()
    assert tables in README, "README op counts are stale: run python -m bench.op_counts"


# --- figures of the bench: generated from bench/results.json, nowhere else ------

MEASURED = re.compile(
    r"\b\d+(?:,\d{3})*(?:\.\d+)?\s?(?:s|ms|minutes?|hours?|[KMG]i?B)\b"
    r"|\b\d+\.\d+\s?[×x](?=\W)"
)
"""A time, a size or a speedup: what a run measures."""

NOT_MEASURED = {
    "README.md": ["> 1 GB weights per function"],  # ane-lint's threshold
    "bench/README.md": ["880 MB of fp16 weights"],  # 440M parameters × 2 bytes
}
"""Figures with such units that state a rule or a size by definition."""

ESTIMATE = re.compile(
    r"^\s*estimate on [^(]+\(\d[\d.]* TOPS fp16, \d+ GB/s\): .*$", re.MULTILINE
)
"""The summary line of `xdsl-ane estimate`: computed from the chip table,
not measured, and checked by the transcript test that runs the command."""


def bench_report():
    return load_bench("report")


def test_generated_figures_are_what_results_json_gives():
    report = bench_report()
    results = json.loads((ROOT / "bench" / "results.json").read_text())
    assert report.stale(results) == [], "run python -m bench.report --write"


def test_no_measured_figure_outside_the_generated_blocks():
    report = bench_report()
    for name in ("README.md", "bench/README.md", "Makefile"):
        path = ROOT / name
        text = path.read_text()
        if report.BEGIN in text:
            head, _, tail = report.generated(path, text)
            text = head + tail
        text = ESTIMATE.sub("", text)
        for allowed in NOT_MEASURED.get(name, []):
            assert allowed in text, (name, allowed)
            text = text.replace(allowed, "")
        typed = [m.group(0) for m in MEASURED.finditer(text)]
        assert typed == [], f"{name}: figures typed by hand: {typed}"


def test_design_layout_lists_the_package_directories():
    """docs/DESIGN.md's layout block names each directory of the package,
    and no other, at its place in the tree."""
    design = (ROOT / "docs" / "DESIGN.md").read_text()
    block = design.split("## Layout of the repository", 1)[1].split("```")[1]
    listed, parents = set(), []
    for line in block.splitlines():
        entry = line.strip().split(" ", 1)[0]
        if not entry.endswith("/"):
            continue
        depth = (len(line) - len(line.lstrip())) // 2
        parents[depth:] = [entry.rstrip("/")]
        listed.add("/".join(parents))
    on_disk = {
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "xdsl_ane").rglob("*")
        if path.is_dir() and path.name != "__pycache__"
    } | {"xdsl_ane"}
    assert {d for d in listed if d.split("/")[0] == "xdsl_ane"} == on_disk


def test_rlx_table_names_every_op():
    rows = [line for line in README.splitlines() if line.startswith("| `rlx.")]
    text = "\n".join(rows)
    for op in RLX.operations:
        short = op.name.removeprefix("rlx.")
        assert f"`{op.name}`" in text or f"`{short}`" in text, op.name


# --- the README's commands, run as written ------------------------------------

PROGRESS = re.compile(r"^xdsl-ane: (\[\d+/\d+\] )?.*: \d+\.\d s$")
"""A progress line (a step that took a second or more), not part of a
transcript's output."""


def readme_blocks() -> list[tuple[str, list[str]]]:
    """Each fenced block of the README: its language and lines."""
    blocks, language, lines = [], None, []
    for line in README.splitlines():
        if line.startswith("```"):
            if language is None:
                language, lines = line[3:].strip(), []
            else:
                blocks.append((language, lines))
                language = None
        elif language is not None:
            lines.append(line)
    return blocks


def shell_commands() -> list[str]:
    """The commands of the ```sh blocks, continuation lines joined, `make`
    (which is what runs these tests) left out."""
    commands = []
    for language, lines in readme_blocks():
        if language != "sh":
            continue
        text = "\n".join(lines).replace("\\\n", " ")
        for line in text.splitlines():
            words = shlex.split(line, comments=True)
            if words and words[0] != "make":
                commands.append(shlex.join(words))
    return commands


def transcripts() -> list[tuple[str, list[str]]]:
    """`$ command` lines of the plain blocks and the output shown after each."""
    found: list[tuple[str, list[str]]] = []
    for language, lines in readme_blocks():
        if language:
            continue
        current: list[str] | None = None  # the output of this block's last $
        for line in lines:
            if line.startswith("$ "):
                current = []
                found.append((line[2:], current))
            elif current is not None and line:
                current.append(line)
    return found


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory) -> Path:
    """A directory as a new user has it after `make demo`: the examples, the
    demo's layer and weights in out/, and a `model.pt2` written by
    `torch.export.save`."""
    import numpy as np
    import torch

    from xdsl_ane.models.transformer import (
        QWEN3_0_6B,
        build_decoder_layer,
        make_weights,
    )

    root = tmp_path_factory.mktemp("readme")
    (root / "examples").symlink_to(ROOT / "examples")
    (root / "out").mkdir()
    module = build_decoder_layer(QWEN3_0_6B)
    (root / "out" / "qwen3_decoder_layer.mlir").write_text(str(module) + "\n")
    np.savez(
        root / "out" / "qwen3_decoder_layer.weights.npz",
        **make_weights(module, QWEN3_0_6B, 0),
    )
    torch.manual_seed(0)  # the same weights each run: transcripts show numbers
    mlp = torch.nn.Sequential(
        torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.LayerNorm(64)
    ).eval()
    program = torch.export.export(mlp, (torch.randn(8, 32),))
    torch.export.save(program, root / "model.pt2")
    return root


def run_in(sandbox: Path, command: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{ROOT / '.venv' / 'bin'}:{os.environ['PATH']}"}
    return subprocess.run(
        ["bash", "-c", command],
        cwd=sandbox,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_readme_has_commands_to_run():
    commands = shell_commands()
    assert any(c.startswith("xdsl-opt examples/kernel.mil") for c in commands)
    assert any(c.startswith("xdsl-ane run layer.mlpackage") for c in commands)
    assert len(transcripts()) >= 2


@pytest.mark.slow
def test_readme_shell_commands_run_as_written(sandbox):
    for command in shell_commands():
        result = run_in(sandbox, command)
        assert result.returncode == 0, (command, result.stderr[-2000:])


@pytest.mark.slow
def test_readme_transcripts_are_what_the_commands_print(sandbox):
    for command, expected in transcripts():
        result = run_in(sandbox, f"{command} --force" if " -o " in command else command)
        printed = [
            line
            for line in (result.stdout + result.stderr).splitlines()
            if line and not PROGRESS.match(line)
        ]
        failing = any(line.startswith("xdsl-ane: error:") for line in expected)
        assert (result.returncode != 0) == failing, (command, result.stderr)
        assert printed == expected, command


def test_op_reference_is_current():
    from xdsl_ane.tools.op_reference import DOCUMENT, document

    assert DOCUMENT.read_text() == document(), (
        "docs/ops.md is stale: run python -m xdsl_ane.tools.op_reference"
    )
    for name in ("rlx.attention", "mil.reduce_sum", "mil.constexpr_affine_dequantize"):
        assert f"| `{name}` |" in DOCUMENT.read_text()

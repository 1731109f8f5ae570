"""Progress of long steps: plain lines in a log, one redrawn line on a
terminal, nothing from the API unless asked."""

from __future__ import annotations

import io

import numpy as np
from xdsl.dialects import builtin
from xdsl.dialects.builtin import f32

import xdsl_ane
from xdsl_ane.dialects import rlx
from xdsl_ane.dialects.functions import build_function
from xdsl_ane.dialects.typing import tensor
from xdsl_ane.progress import Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def module() -> builtin.ModuleOp:
    def body(x):
        w = rlx.ParamOp("w", tensor((16, 32), f32)).result
        return [rlx.SiluOp(rlx.MatmulOp(x, w, transpose_rhs=True).result).result]

    return builtin.ModuleOp([build_function("f", [tensor((8, 32), f32)], body, ["x"])])


WEIGHTS = {"w": np.ones((16, 32), np.float32)}


def test_a_log_gets_one_line_per_step(tmp_path):
    log = io.StringIO()
    progress = Progress(log, threshold=0.0)
    model = xdsl_ane.compile(module(), weights=WEIGHTS, progress=progress)
    model.save(tmp_path / "f.mlpackage")
    lines = log.getvalue().splitlines()
    assert lines[0].startswith("xdsl-ane: [1/")
    assert "pass convert-rlx-to-mil" in log.getvalue()
    assert any("ane-lint" in ln for ln in lines)
    assert any("MIL protobuf" in ln for ln in lines)
    assert any("writing f.mlpackage" in ln for ln in lines)
    # steps past the announced passes carry no counter
    counted = [ln for ln in lines if ln.startswith("xdsl-ane: [")]
    total = int(counted[0].split("/")[1].split("]")[0])
    assert all(int(ln.split("[")[1].split("/")[0]) <= total for ln in counted)
    assert all(ln.startswith("xdsl-ane: ") and ln.endswith(" s") for ln in lines)


def test_short_steps_stay_silent_in_a_log():
    log = io.StringIO()
    xdsl_ane.compile(module(), weights=WEIGHTS, progress=Progress(log, threshold=60))
    assert log.getvalue() == ""


def test_a_terminal_gets_one_redrawn_line():
    screen = Terminal()
    xdsl_ane.compile(module(), weights=WEIGHTS, progress=Progress(screen))
    text = screen.getvalue()
    assert "\r\x1b[K[1/" in text and "pass mil-ane-layout ..." in text
    assert "\n" not in text  # redrawn in place, and cleared at the end
    assert text.endswith("\r\x1b[K")


def test_the_api_prints_nothing_by_default(capsys):
    xdsl_ane.compile(module(), weights=WEIGHTS).proto  # noqa: B018
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""

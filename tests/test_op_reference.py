"""docs/ops.md's generator: every op described by its own docstring, and a
command line that reads its options."""

from __future__ import annotations

import os

import pytest
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Dialect
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def

from xdsl_ane.errors import XdslAneError
from xdsl_ane.tools import op_reference


class Family(IRDLOperation):
    """What every op of the family does."""


@irdl_op_definition
class Undocumented(Family):
    name = "test.undocumented"
    x = operand_def(TensorType)


@irdl_op_definition
class Documented(Family):
    """Its own text."""

    name = "test.documented"
    x = operand_def(TensorType)


def test_an_op_without_a_docstring_of_its_own_is_an_error():
    with pytest.raises(XdslAneError, match=r"test\.undocumented .*no docstring"):
        op_reference.op_rows(Dialect("test", [Documented, Undocumented]))


def test_an_op_reads_as_its_own_docstring_not_its_family():
    (row,) = op_reference.op_rows(Dialect("test", [Documented]))[2:]
    assert row.endswith("| Its own text. |"), row


def test_every_rlx_and_mil_op_has_a_docstring_of_its_own():
    op_reference.document()  # raises naming the first op without one


def test_help_prints_usage_and_writes_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit:
        op_reference.main(["--help"])
    assert exit.value.code == 0
    assert "--output" in capsys.readouterr().out
    assert os.listdir(tmp_path) == []


def test_output_and_check(tmp_path, capsys):
    out = tmp_path / "ops.md"
    assert op_reference.main(["--check", "-o", str(out)]) == 1  # missing
    assert op_reference.main(["-o", str(out)]) == 0
    assert out.read_text() == op_reference.document()
    assert op_reference.main(["--check", "--output", str(out)]) == 0
    out.write_text(out.read_text() + "stale\n")
    assert op_reference.main(["--check", "-o", str(out)]) == 1
    assert "stale" in capsys.readouterr().err

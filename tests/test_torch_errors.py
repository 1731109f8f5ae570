"""PyTorch in, bad input: ATen ops without a translation (one error listing
each with its node and source line), symbolic dimensions, modules that do
not export, dtypes rlx has no type for, empty inputs and outputs, a
duplicate translation, and torch missing altogether."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import nn
from torch_check import export

import xdsl_ane
from xdsl_ane import XdslAneError

# Exports torch programs and Hugging Face models built from configs: -m 'not slow' skips them.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent


class TwoUnsupported(nn.Module):
    def forward(self, x):
        y = torch.lgamma(x)
        return torch.digamma(y) + torch.erfinv(torch.tanh(x))


def test_every_unsupported_op_in_one_error():
    x = torch.randn(1, 4, 8)
    with pytest.raises(XdslAneError) as error:
        xdsl_ane.from_torch(export(TwoUnsupported(), (x,)))
    message = str(error.value)
    assert "\n" not in message
    assert "3 node(s)" in message
    for op in ("aten.lgamma.default", "aten.digamma.default", "aten.erfinv.default"):
        assert op in message
    for node in ("node lgamma ", "node digamma ", "node erfinv "):
        assert node in message
    # each names the source line of the model that wrote it
    assert message.count("test_torch_errors.py:") == 3


def test_constant_subgraphs_need_no_translation():
    class Folded(nn.Module):
        def forward(self, x):
            table = torch.cumsum(torch.ones(8), 0)  # folded: no user input
            return x * table

    x = torch.randn(1, 4, 8)
    imported = xdsl_ane.from_torch(export(Folded(), (x,)))
    assert not any(op.name == "rlx.cumsum" for op in imported.module.walk())


def test_symbolic_dimension_names_the_input():
    class Linear(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(8, 8)

        def forward(self, x):
            return self.proj(x)

    x = torch.randn(1, 4, 8)
    sequence = torch.export.Dim("sequence", min=2, max=64)
    program = torch.export.export(Linear(), (x,), dynamic_shapes={"x": {1: sequence}})
    with pytest.raises(XdslAneError, match=r"input 'x' dimension 1 is symbolic"):
        xdsl_ane.from_torch(program)


def test_module_that_fails_to_export_gives_torch_reason_in_one_line():
    class DataDependent(nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                return x
            return -x

    with pytest.raises(XdslAneError) as error:
        xdsl_ane.from_torch(DataDependent(), (torch.randn(1, 4),))
    message = str(error.value)
    assert message.startswith("from_torch: DataDependent does not export: ")
    assert "\n" not in message and "Traceback" not in message


def test_module_without_example_args():
    with pytest.raises(XdslAneError, match="needs example_args"):
        xdsl_ane.from_torch(nn.Linear(2, 2))


def test_not_a_program():
    with pytest.raises(XdslAneError, match="expected a torch.export.ExportedProgram"):
        xdsl_ane.from_torch(42)


def test_unsupported_dtype_is_rejected_naming_the_value():
    class Float8(nn.Module):
        def forward(self, x):
            return x.float() * 2

    x = torch.randn(1, 4, 8).to(torch.float8_e4m3fn)
    with pytest.raises(
        XdslAneError, match=r"^from_torch: input 'x' has dtype torch.float8_e4m3fn"
    ):
        xdsl_ane.from_torch(export(Float8(), (x,)))


class EmptyOutput(nn.Module):
    def forward(self, x):
        return x * 2, x[:, :0]


class EmptyTable(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("table", torch.zeros(0, 4))

    def forward(self, ids):
        return torch.nn.functional.embedding(ids, self.table)


def test_empty_output_is_refused_in_one_line():
    x = torch.randn(2, 4)
    with pytest.raises(XdslAneError) as error:
        xdsl_ane.from_torch(export(EmptyOutput(), (x,)))
    assert str(error.value) == (
        "from_torch: output 'output_1' is empty (shape [2, 0]); "
        "Core ML has no empty tensors"
    )


def test_empty_input_is_refused_in_one_line():
    class Sum(nn.Module):
        def forward(self, x, e):
            return x + e.sum()

    with pytest.raises(XdslAneError) as error:
        xdsl_ane.from_torch(export(Sum(), (torch.randn(2, 4), torch.randn(2, 0))))
    assert str(error.value) == (
        "from_torch: input 'e' is empty (shape [2, 0]); Core ML has no empty tensors"
    )


def test_empty_tensor_read_by_a_non_empty_result_names_the_node():
    ids = torch.zeros(1, 3, dtype=torch.long)
    with pytest.raises(XdslAneError) as error:
        xdsl_ane.from_torch(export(EmptyTable(), (ids,)))
    message = str(error.value)
    assert message.startswith("from_torch: node embedding (aten.embedding.default)")
    assert "constant 'table' is empty (shape [0, 4])" in message


def test_duplicate_translation_is_an_error():
    from xdsl_ane.frontend.torch import aten

    aten_ops = torch.ops.aten
    before = dict(aten.TRANSLATIONS)

    def again(tr, node, *args):
        return None

    with pytest.raises(
        XdslAneError, match=r"aten.add.Tensor already has a translation \(binary\)"
    ):
        aten.translates(aten_ops.lgamma.default, aten_ops.add.Tensor)(again)
    with pytest.raises(XdslAneError, match="already has a no-op entry"):
        aten.translates(aten_ops.clone.default)(again)
    with pytest.raises(XdslAneError, match="already has this translation"):
        aten.translates(aten_ops.lgamma.default, aten_ops.lgamma.default)(again)
    assert aten.TRANSLATIONS == before  # nothing registered, nothing replaced


WITHOUT_TORCH = """
import sys
sys.modules["torch"] = None  # import torch raises ImportError
import numpy as np
import xdsl_ane
from xdsl.dialects import builtin
from xdsl.dialects.builtin import f32
from xdsl_ane.dialects import rlx
from xdsl_ane.dialects.typing import tensor
from xdsl_ane.dialects.functions import build_function

module = builtin.ModuleOp([build_function("f", [tensor((4, 8), f32)], lambda x: [rlx.SiluOp(x).result])])
xdsl_ane.compile(module)
try:
    xdsl_ane.from_torch("model.pt2")
except xdsl_ane.XdslAneError as e:
    print(e)
"""


def test_core_works_without_torch_and_names_the_extra():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_TORCH],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert "pip install 'xdsl-ane[torch]'" in done.stdout


class InPlace(nn.Module):
    """conv → batch norm → += → relu_ : torch.export's own ops, in place;
    with `view`, a view of the tensor taken before `+=` mutates it."""

    def __init__(self, view: bool = False):
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.view = view

    def forward(self, x):
        y = self.bn(self.conv(x))
        z = y.clone()
        if not self.view:
            z += x
            return torch.relu_(z) + y
        first = z[:, :2]
        z += x
        return torch.relu_(z)[:, :2] * 2 + first


def export_in_place(view: bool):
    x = torch.randn(1, 4, 8, 8)
    exported = export(InPlace(view).eval(), (x,))
    targets = {str(n.target) for n in exported.graph.nodes if n.op == "call_function"}
    assert {"aten.conv2d.default", "aten.batch_norm.default", "aten.add_.Tensor"} <= (
        targets
    )
    return exported, x


def test_exported_ops_translate_without_decomposition(monkeypatch):
    """A graph whose every op translates, in-place ones included, is read
    as torch.export wrote it: run_decompositions (a re-trace of the whole
    program) is not called, and the numbers are torch's."""
    from torch_check import check_program

    from xdsl_ane.frontend.torch import program as program_module

    def refuse(*args):
        raise AssertionError("decomposed")

    exported, x = export_in_place(view=False)
    monkeypatch.setattr(program_module, "decompose", refuse)
    check_program(exported, (x,))


def test_a_view_of_a_mutated_tensor_is_decomposed_first(monkeypatch):
    """`first` views z before `z += x` changes it, so it sees the change:
    only the decomposition's functional graph says so, and it is used."""
    from torch_check import check_program

    from xdsl_ane.frontend.torch import program as program_module

    calls = []
    decompose = program_module.decompose
    monkeypatch.setattr(
        program_module, "decompose", lambda *a: calls.append(1) or decompose(*a)
    )
    exported, x = export_in_place(view=True)
    check_program(exported, (x,))
    assert calls

"""PyTorch in, bad input: ATen ops without a translation (one error listing
each with its node and source line), symbolic dimensions, modules that do
not export, and torch missing altogether."""

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

ROOT = Path(__file__).resolve().parent.parent


class TwoUnsupported(nn.Module):
    def forward(self, x):
        y = torch.cumsum(x, dim=-1)
        return torch.sort(y, dim=-1).values + torch.erfinv(torch.tanh(x))


def test_every_unsupported_op_in_one_error():
    x = torch.randn(1, 4, 8)
    with pytest.raises(XdslAneError) as error:
        xdsl_ane.from_torch(export(TwoUnsupported(), (x,)))
    message = str(error.value)
    assert "\n" not in message
    assert "3 node(s)" in message
    for op in ("aten.cumsum.default", "aten.sort.default", "aten.erfinv.default"):
        assert op in message
    for node in ("node cumsum ", "node sort ", "node erfinv "):
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


def test_bfloat16_is_rejected_naming_the_value():
    model = nn.Linear(8, 8).to(torch.bfloat16)
    x = torch.randn(1, 4, 8, dtype=torch.bfloat16)
    with pytest.raises(
        XdslAneError, match=r"^from_torch: input 'input' has dtype torch.bfloat16"
    ):
        xdsl_ane.from_torch(export(model, (x,)))


WITHOUT_TORCH = """
import sys
sys.modules["torch"] = None  # import torch raises ImportError
import numpy as np
import xdsl_ane
from xdsl.dialects import builtin
from xdsl.dialects.builtin import f32
from xdsl_ane.dialects import rlx
from xdsl_ane.dialects.typing import tensor
from xdsl_ane.models.transformer import build_function

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

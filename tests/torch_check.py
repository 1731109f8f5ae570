"""Checking an imported torch program by numbers: the rlx program in the
interpreter against `program.module()` in fp32, the `ane-pipeline` result
in fp16 on the same inputs (mapped by the recorded layouts), and the
package through coremltools' loader."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from ane_form import run_ane_form
from lowering_cases import relative_error
from torch.utils import _pytree as pytree

import xdsl_ane
from xdsl_ane.interpreter.core import run_function

F32_TOLERANCE = 1e-4
FP16_TOLERANCE = 2e-2


@dataclass
class Checked:
    imported: xdsl_ane.TorchImport
    compiled: xdsl_ane.CompiledModel
    f32_errors: list[float]
    fp16_errors: list[float]

    def ops(self, name: str) -> list[Any]:
        return [op for op in self.imported.module.walk() if op.name == name]


class OneOp(torch.nn.Module):
    """A module that applies `f` to its inputs: a one-op program to export."""

    def __init__(self, f):
        super().__init__()
        self.f = f

    def forward(self, *args):
        return self.f(*args)


Fn = OneOp


def export(model: torch.nn.Module, args: tuple, kwargs: dict | None = None):
    with torch.no_grad():
        return torch.export.export(model, args, kwargs=kwargs or {})


def check_program(
    program: torch.export.ExportedProgram,
    args: tuple,
    kwargs: dict | None = None,
    validate: bool = True,
) -> Checked:
    """Imports `program` and checks it at both tolerances (asserting)."""
    imported = xdsl_ane.from_torch(program)
    with torch.no_grad():
        expected = [
            t.numpy()
            for t in pytree.tree_leaves(program.module()(*args, **(kwargs or {})))
        ]
    tensors = [
        a
        for a in pytree.tree_leaves((args, kwargs or {}))
        if isinstance(a, torch.Tensor)
    ]
    inputs = imported.numpy_inputs(*tensors)
    actual = run_function(imported.module, inputs, imported.weights)
    assert len(actual) == len(expected) == len(imported.output_names)
    f32_errors = []
    for e, a in zip(expected, actual):
        assert a.shape == e.shape and a.dtype == np.float32
        f32_errors.append(relative_error(e, a))
    assert max(f32_errors) < F32_TOLERANCE, f32_errors
    compiled = xdsl_ane.compile(imported.module, weights=imported.weights)
    assert not compiled.unused_weights
    on_ane = run_ane_form(
        compiled.module, inputs, compiled.weights, [e.shape for e in expected]
    )
    fp16_errors = []
    for e, a in zip(expected, on_ane):
        assert a.dtype == np.float16 and np.all(np.isfinite(a))
        fp16_errors.append(relative_error(e, a))
    assert max(fp16_errors) < FP16_TOLERANCE, fp16_errors
    if validate:
        report = compiled.validate()
        assert report.ok, report.findings
    return Checked(imported, compiled, f32_errors, fp16_errors)


def max_rank(module) -> int:
    ranks = [0]
    for op in module.walk():
        for r in op.results:
            shape = getattr(r.type, "get_shape", None)
            if shape is not None:
                ranks.append(len(shape()))
    return max(ranks)

"""The ATen math, ordering and statistics ops of `aten_math.py`, one
one-op module each against torch: the rlx program in the interpreter in
fp32, the `ane-pipeline` package in fp16 (in ANE form, mapped back), and
the package through coremltools' loader. Float results compare within
torch_check's tolerances, integer and boolean ones (indices, one_hot,
isnan) exactly; the inputs of the ordering ops are distinct multiples of
1/8, which fp16 holds exactly, so that their order is the same in both."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from ane_form import run_ane_form
from lowering_cases import relative_error
from torch.utils import _pytree as pytree
from torch_check import F32_TOLERANCE, FP16_TOLERANCE, Fn, export

import xdsl_ane
from xdsl_ane.errors import XdslAneError
from xdsl_ane.frontend.torch.program import decomposition_table
from xdsl_ane.interpreter.core import run_function

# Exports torch programs: -m 'not slow' skips them.
pytestmark = pytest.mark.slow


def generator() -> torch.Generator:
    return torch.Generator().manual_seed(0)


def randn(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=generator())


def distinct(*shape: int) -> torch.Tensor:
    """Distinct multiples of 1/8 around 0 in a random order (exact in fp16)."""
    n = int(np.prod(shape))
    order = torch.randperm(n, generator=generator())
    return ((order - n // 2) / 8).reshape(shape).float()


def check(program, inputs: tuple) -> xdsl_ane.TorchImport:
    """Imports `program` and compares its rlx program (fp32) and its fp16
    package (ANE form) with torch, asserting; returns the import."""
    imported = xdsl_ane.from_torch(program)
    with torch.no_grad():
        expected = [t.numpy() for t in pytree.tree_leaves(program.module()(*inputs))]
    arrays = imported.numpy_inputs(*inputs)
    actual = run_function(imported.module, arrays, imported.weights)
    compiled = xdsl_ane.compile(imported.module, weights=imported.weights)
    on_ane = run_ane_form(
        compiled.module, arrays, compiled.weights, [e.shape for e in expected]
    )
    assert len(actual) == len(on_ane) == len(expected)
    for e, a, h in zip(expected, actual, on_ane):
        assert a.shape == h.shape == e.shape
        if e.dtype.kind == "f":
            assert a.dtype == np.float32 and h.dtype == np.float16
            assert relative_error(e, a) < F32_TOLERANCE
            assert relative_error(e, h) < FP16_TOLERANCE
        else:
            np.testing.assert_array_equal(a, e.astype(a.dtype))
            np.testing.assert_array_equal(h, e.astype(h.dtype))
    report = compiled.validate()
    assert report.ok, report.findings
    return imported


def op_names(imported: xdsl_ane.TorchImport) -> set[str]:
    return {op.name for op in imported.module.walk()}


CASES = {
    # name: (f, inputs, rlx ops the program must have)
    "max_dim": (lambda x: torch.max(x, dim=1), [distinct(1, 6, 3)], {"rlx.argmax"}),
    "min_dim_keepdim": (
        lambda x: torch.min(x, dim=-1, keepdim=True),
        [distinct(3, 5)],
        {"rlx.argmax", "rlx.reduce_min"},
    ),
    "max_of_all": (lambda x: torch.max(x) + torch.min(x), [randn(3, 4)], set()),
    "argmax": (lambda x: torch.argmax(x, dim=1), [distinct(1, 7, 3)], {"rlx.argmax"}),
    "argmax_flattened": (lambda x: torch.argmax(x), [distinct(3, 4)], {"rlx.argmax"}),
    "argmin_keepdim": (
        lambda x: torch.argmin(x, dim=0, keepdim=True),
        [distinct(5, 4)],
        {"rlx.argmax"},
    ),
    "argmax_of_ints": (
        lambda ids: torch.argmax(ids, dim=-1),
        [torch.tensor([[3, 9, 2, 9], [-4, -1, -7, 0]])],
        {"rlx.argmax"},
    ),
    "topk": (lambda x: torch.topk(x, 3, dim=-1), [distinct(1, 4, 7)], {"rlx.topk"}),
    "topk_smallest": (
        lambda x: torch.topk(x, 2, dim=1, largest=False),
        [distinct(1, 6, 3)],
        {"rlx.topk"},
    ),
    "sort": (lambda x: torch.sort(x, dim=-1), [distinct(3, 8)], {"rlx.topk"}),
    "sort_descending": (
        lambda x: torch.sort(x, dim=0, descending=True),
        [distinct(5, 3)],
        {"rlx.topk"},
    ),
    "argsort": (lambda x: torch.argsort(x, dim=-1), [distinct(2, 9)], {"rlx.argsort"}),
    "argsort_stable_descending": (
        lambda x: torch.argsort(x, dim=0, descending=True, stable=True),
        [distinct(6, 3)],
        {"rlx.argsort"},
    ),
    "argsort_stable_ties": (
        lambda x: torch.argsort(x, dim=-1, stable=True),
        [
            torch.tensor(
                [[2.0, 1.0, 2.0, 0.0, 1.0, 2.0], [3.0, 3.0, -1.0, 3.0, 0.0, 0.0]]
            )
        ],
        {"rlx.argsort"},
    ),
    "sort_stable": (
        lambda x: torch.sort(x, stable=True, dim=-1).values,
        [distinct(3, 8)],
        {"rlx.topk"},
    ),
    "log1p": (
        lambda x: torch.log1p(x),
        [torch.cat([torch.rand(12, generator=generator()) * 3, torch.tensor([1e-5])])],
        {"rlx.log"},
    ),
    "erf": (torch.erf, [randn(4, 8)], {"rlx.erf"}),
    "floor": (lambda x: torch.floor(x * 4), [randn(4, 8)], {"rlx.floor"}),
    "round": (
        lambda x: torch.round(x * 4),
        [torch.cat([randn(16), torch.tensor([0.125, 0.375, -0.625])])],
        {"rlx.round"},
    ),
    "round_decimals": (
        lambda x: torch.round(x, decimals=1),
        [randn(3, 8)],
        {"rlx.round"},
    ),
    "isnan": (
        lambda x: torch.isnan(torch.log(x)),
        [randn(3, 8)],
        {"rlx.compare"},
    ),
    "clamp_tensor": (
        lambda x, low: torch.clamp(x, low, low + 0.5),
        [randn(4, 8), randn(1, 8)],
        {"rlx.max", "rlx.min"},
    ),
    "clamp_min_tensor": (
        lambda x, low: torch.clamp_min(x, low) + torch.clamp_max(x, low),
        [randn(4, 8), randn(1, 8) * 0.5],
        {"rlx.max", "rlx.min"},
    ),
    "flip": (
        lambda x: torch.flip(x, [0, 2]),
        [randn(1, 4, 6)],
        {"rlx.gather"},
    ),
    "cumprod": (
        lambda x: torch.cumprod(x, 1),
        [
            (torch.rand(3, 6, generator=generator()) + 0.5)
            * torch.tensor([1.0, -1.0, 1.0, -1.0, -1.0, 1.0])
        ],
        {"rlx.cumsum", "rlx.floor"},
    ),
    "cumprod_with_a_zero": (
        lambda x: torch.cumprod(x, -1),
        [torch.tensor([[0.5, -2.0, 0.0, 3.0, -1.5], [1.5, 1.25, -0.5, -2.0, 0.75]])],
        {"rlx.cumsum"},
    ),
    "logcumsumexp": (
        lambda x: torch.logcumsumexp(x, 1),
        [randn(1, 7, 3)],
        {"rlx.cumsum"},
    ),
    "diagonal": (lambda x: torch.diagonal(x) * 2, [randn(5, 5)], set()),
    "diagonal_offset_dims": (
        lambda x: torch.diagonal(x, 1, 1, 2),
        [randn(1, 4, 6)],
        set(),
    ),
    "repeat": (
        lambda x: x.repeat(1, 2, 3),
        [randn(2, 4)],
        {"rlx.concat"},
    ),
    "var_unbiased": (
        lambda x: torch.var(x, dim=1),
        [randn(1, 8, 4)],
        {"rlx.reduce_mean"},
    ),
    "var_correction_keepdim": (
        lambda x: torch.var(x, dim=(0, 2), correction=0, keepdim=True),
        [randn(1, 8, 4)],
        {"rlx.reduce_mean"},
    ),
    "var_of_all": (lambda x: torch.var(x), [randn(4, 8)], {"rlx.reduce_mean"}),
    "std": (lambda x: torch.std(x, dim=-1), [randn(4, 8)], {"rlx.sqrt"}),
    "mean_of_all": (lambda x: x.mean() * x, [randn(4, 8)], {"rlx.reduce_mean"}),
    "one_hot": (
        lambda ids: F.one_hot(ids, 5),
        [torch.tensor([[0, 3, 4, 1, 2, 2, 0, 4]])],
        {"rlx.compare"},
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_aten_op_against_torch(name):
    f, inputs, present = CASES[name]
    imported = check(export(Fn(f), tuple(inputs)), tuple(inputs))
    names = op_names(imported)
    assert present <= names, (name, present - names)


def test_one_hot_in_core_aten_drops_its_guards():
    """Decomposed to core ATen, F.one_hot is range checks (any, then
    `_assert_async`) beside eq(ids, arange): the checks are dropped."""
    ids = torch.tensor([[0, 3, 4, 1, 2, 2, 0, 4]])
    program = export(Fn(lambda i: F.one_hot(i, 5) * 3), (ids,))
    decomposed = program.run_decompositions(decomposition_table())
    targets = {str(n.target) for n in decomposed.graph.nodes}
    assert {"aten._assert_async.msg", "aten.any.dims"} <= targets
    imported = check(decomposed, (ids,))
    assert "rlx.reduce_max" not in op_names(imported)


def test_ordering_ops_lower_to_mil_topk_and_argmax():
    x = distinct(2, 6)
    program = export(Fn(lambda x: (torch.sort(x).values, torch.argmin(x, -1))), (x,))
    compiled = xdsl_ane.compile(xdsl_ane.from_torch(program).module)
    names = [op.name for op in compiled.module.walk()]
    assert names.count("mil.topk") == 1 and names.count("mil.reduce_argmax") == 1


def test_cumprod_of_integers_is_one_line():
    ids = torch.tensor([[2, 3, 1]])
    with pytest.raises(XdslAneError) as error:
        xdsl_ane.from_torch(export(Fn(lambda i: torch.cumprod(i, 1)), (ids,)))
    message = str(error.value)
    assert "\n" not in message and "cumprod" in message and "floating" in message

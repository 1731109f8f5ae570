"""rlx.topk and mil.topk, rlx.argsort and mil.argsort (and rlx's erf, floor,
round) by numbers: the rlx interpreter against torch (topk, sort, argsort),
the mil ops against coremltools' value inference, the lowering on the same
data, and the placement keeping both sorts off the ANE."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from lowering_cases import build_case, f16, f32, i32, lower, normal, small_ints
from mil_op_check import check, coreml, run

from xdsl_ane.ane.chips import get_chip
from xdsl_ane.dialects import mil, rlx
from xdsl_ane.estimator.cost import flops
from xdsl_ane.interpreter.core import random_inputs, run_function
from xdsl_ane.passes.placement import placement_rule

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from coremltools.converters.mil import Builder as mb

RNG = np.random.default_rng(0)


def distinct(shape: tuple[int, ...], dtype) -> np.ndarray:
    """Distinct values (no ties), exact in every dtype."""
    n = int(np.prod(shape))
    return (RNG.permutation(n) - n // 2).reshape(shape).astype(dtype)


def rlx_topk(x: np.ndarray, k: int, axis: int, largest: bool):
    element = {np.float32: f32, np.float16: f16, np.int32: i32}[x.dtype.type]
    module = build_case(
        [normal(*x.shape)],
        lambda dt, v: list(rlx.TopkOp(v, k, axis, None if largest else False).results),
        element,
    )
    return run_function(module, [x])


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize(("k", "axis"), [(1, -1), (3, 1), (4, 0), (6, 2)])
@pytest.mark.parametrize("dtype", [np.float32, np.int32], ids=["f32", "i32"])
def test_rlx_matches_torch(dtype, k, axis, largest):
    x = distinct((4, 5, 6), dtype)
    values, indices = rlx_topk(x, k, axis, largest)
    expected = torch.topk(torch.from_numpy(x), k, axis, largest=largest)
    assert values.dtype == dtype and indices.dtype == np.int32
    np.testing.assert_array_equal(values, expected.values.numpy())
    np.testing.assert_array_equal(indices, expected.indices.numpy())


def test_rlx_sort_of_ties_keeps_their_order():
    """k = the axis's size is torch's stable sort, ties in their order."""
    x = np.array([[2, 1, 2, 0, 1, 2]], np.float32)
    for largest in (True, False):
        values, indices = rlx_topk(x, 6, 1, largest)
        expected = torch.sort(
            torch.from_numpy(x), stable=True, dim=1, descending=largest
        )
        np.testing.assert_array_equal(values, expected.values.numpy())
        np.testing.assert_array_equal(indices, expected.indices.numpy())


@pytest.mark.parametrize("ascending", [False, True])
@pytest.mark.parametrize(("k", "axis"), [(None, None), (2, 1), (3, -2)])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32])
def test_mil_matches_coremltools_value_inference(dtype, k, axis, ascending):
    x = distinct((3, 4, 6), dtype)
    inputs = {"ascending": ascending}
    if k is not None:
        inputs |= {"k": k, "axis": axis}
    ours = run(lambda v: mil.TopkOp(v, k, axis, ascending or None), x)
    theirs = coreml(lambda v: mb.topk(x=v, **inputs), x)
    check(ours[0], theirs[0], dtype)
    check(ours[1], theirs[1], np.int32)


@pytest.mark.parametrize("largest", [True, False])
def test_lowering_by_numbers(largest):
    def body(dt, x):
        return list(rlx.TopkOp(x, 3, 0, None if largest else False).results)

    module = build_case([normal(5, 4)], body, f32)
    inputs = random_inputs(module.body.block.first_op, 0)
    expected = run_function(module, inputs)
    actual = run_function(lower(module), inputs)
    for e, a in zip(expected, actual):
        np.testing.assert_array_equal(a, e)


def rlx_argsort(x: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    element = {np.float32: f32, np.float16: f16, np.int32: i32}[x.dtype.type]
    module = build_case(
        [normal(*x.shape)],
        lambda dt, v: [rlx.ArgsortOp(v, axis, descending or None).result],
        element,
    )
    (indices,) = run_function(module, [x])
    return indices


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("axis", [-1, 0, 1])
@pytest.mark.parametrize(
    "dtype", [np.float32, np.float16, np.int32], ids=["f32", "f16", "i32"]
)
def test_rlx_argsort_matches_torch(dtype, axis, descending):
    shape = (4, 5, 6)
    if dtype == np.int32:
        x = distinct(shape, dtype)
    else:
        x = RNG.standard_normal(shape).astype(dtype)
    indices = rlx_argsort(x, axis, descending)
    expected = torch.argsort(
        torch.from_numpy(x.astype(np.float32)), dim=axis, descending=descending
    )
    assert indices.dtype == np.int32
    np.testing.assert_array_equal(indices, expected.numpy())


@pytest.mark.parametrize("descending", [False, True])
def test_rlx_argsort_of_ties_is_torchs_stable_argsort(descending):
    x = RNG.integers(-2, 3, size=(6, 40)).astype(np.float32)
    for axis in (0, 1):
        expected = torch.argsort(
            torch.from_numpy(x), dim=axis, descending=descending, stable=True
        )
        np.testing.assert_array_equal(
            rlx_argsort(x, axis, descending), expected.numpy()
        )


@pytest.mark.parametrize("ascending", [False, True])
@pytest.mark.parametrize("axis", [None, 0, -2])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32])
def test_mil_argsort_matches_coremltools_value_inference(dtype, axis, ascending):
    x = distinct((3, 4, 6), dtype)
    inputs = {"ascending": ascending} | ({} if axis is None else {"axis": axis})
    ours = run(lambda v: mil.ArgsortOp(v, axis, ascending or None), x)
    theirs = coreml(lambda v: mb.argsort(x=v, **inputs), x)
    check(ours, theirs, np.int32)


@pytest.mark.parametrize("descending", [False, True])
def test_argsort_lowering_by_numbers(descending):
    def body(dt, x):
        return [rlx.ArgsortOp(x, 0, descending or None).result]

    module = build_case([normal(5, 4)], body, f32)
    inputs = random_inputs(module.body.block.first_op, 0)
    (expected,) = run_function(module, inputs)
    (actual,) = run_function(lower(module), inputs)
    np.testing.assert_array_equal(actual, expected)


def test_argsort_runs_off_the_ane():
    def body(dt, x):
        return [rlx.ArgsortOp(x, 3).result]

    ane = lower(build_case([small_ints(1, 8, 1, 64, element=f16)], body, f16))
    (op,) = [op for op in ane.walk() if op.name == "mil.argsort"]
    placement = placement_rule(op, get_chip("m4"))
    assert (placement.unit, placement.rule) == ("cpu", "argsort")
    assert flops(op) == 8 * 64 * 6  # ⌈log₂ 64⌉ comparisons per element


UNARY = [
    (rlx.ErfOp, torch.erf),
    (rlx.FloorOp, torch.floor),
    (rlx.RoundOp, torch.round),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["f32", "f16"])
@pytest.mark.parametrize(("op", "reference"), UNARY, ids=["erf", "floor", "round"])
def test_unary_rlx_and_lowered_match_torch(op, reference, dtype):
    """erf, floor and round (halves to even: 0.5, 1.5, −2.5) in both
    dialects."""
    x = np.concatenate([RNG.standard_normal(13) * 3, [0.5, 1.5, -2.5, -0.5]]).astype(
        dtype
    )
    element = f32 if dtype == np.float32 else f16
    module = build_case([normal(*x.shape)], lambda dt, v: [op(v).result], element)
    expected = reference(torch.from_numpy(x.astype(np.float32))).numpy()
    for program in (module, lower(module)):
        (y,) = run_function(program, [x])
        assert y.dtype == dtype
        np.testing.assert_allclose(y, expected, rtol=1e-3, atol=1e-3)


def test_topk_runs_off_the_ane():
    def body(dt, x):
        return list(rlx.TopkOp(x, 4, 3).results)

    ane = lower(build_case([small_ints(1, 8, 1, 64, element=f16)], body, f16))
    (op,) = [op for op in ane.walk() if op.name == "mil.topk"]
    placement = placement_rule(op, get_chip("m4"))
    assert (placement.unit, placement.rule) == ("cpu", "topk")
    assert flops(op) == 8 * 64 * 6  # ⌈log₂ 64⌉ comparisons per element

"""rlx.cumsum and mil.cumsum end to end: the rlx interpreter against torch
(torch.cumsum, flipped for reverse, shifted by hand for exclusive), f16
rounded once and i32 wrapping; the mil op against coremltools' value and
type inference (its exclusive value inference is broken, so exclusive is
checked against the shifted sums); mil-ane-layout and mil-fp16 by numbers;
the placement keeping it off the ANE."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from ane_form import function_of, run_ane_form
from lowering_cases import build_case, f16, f32, i32, lower, normal, small_ints
from mil_op_check import check, coreml, run
from xdsl.context import Context
from xdsl.transforms.canonicalize import CanonicalizePass
from xdsl.utils.exceptions import VerifyException

from xdsl_ane.ane.chips import get_chip
from xdsl_ane.dialects import mil, rlx
from xdsl_ane.dialects.dense import dense_from_numpy
from xdsl_ane.estimator.cost import flops
from xdsl_ane.interpreter.core import random_inputs, run_function
from xdsl_ane.passes.ane_layout import MilAneLayoutPass
from xdsl_ane.passes.driver import make_context
from xdsl_ane.passes.fp16 import MilFp16Pass
from xdsl_ane.passes.layouts import ane_form_problems
from xdsl_ane.passes.placement import placement_rule

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from coremltools.converters.mil import Builder as mb

RNG = np.random.default_rng(0)


def torch_cumsum(x: np.ndarray, axis: int, exclusive: bool, reverse: bool):
    """The reference: torch.cumsum, on the flipped axis for reverse, with a
    zero first and the last sum dropped for exclusive."""
    t = torch.from_numpy(np.ascontiguousarray(x))
    if reverse:
        t = t.flip(axis)
    out = torch.cumsum(t, axis, dtype=t.dtype)
    if exclusive:
        n = out.shape[axis]
        first = torch.zeros_like(out.narrow(axis, 0, 1))
        out = torch.cat([first, out.narrow(axis, 0, n - 1)], axis)
    if reverse:
        out = out.flip(axis)
    return out.numpy()


def rlx_cumsum(x: np.ndarray, axis: int, exclusive=None, reverse=None):
    element = {np.float32: f32, np.float16: f16, np.int32: i32}[x.dtype.type]
    module = build_case(
        [normal(*x.shape)],
        lambda dt, v: rlx.CumsumOp(v, axis, exclusive, reverse),
        element,
    )
    (y,) = run_function(module, [x])
    return y


FLAGS = [(False, False), (True, False), (False, True), (True, True)]
FLAG_IDS = ["inclusive", "exclusive", "reverse", "exclusive_reverse"]


# --- the rlx interpreter against torch ---------------------------------------------


def test_small_example_by_hand():
    x = np.array([[1, 2, 3, 4]], np.int32)
    results = [rlx_cumsum(x, -1, e, r).tolist() for e, r in FLAGS]
    assert results == [
        [[1, 3, 6, 10]],
        [[0, 1, 3, 6]],
        [[10, 9, 7, 4]],
        [[9, 7, 4, 0]],
    ]


@pytest.mark.parametrize(("exclusive", "reverse"), FLAGS, ids=FLAG_IDS)
@pytest.mark.parametrize("axis", [0, 1, -1, -3])
@pytest.mark.parametrize("dtype", [np.float32, np.int32], ids=["f32", "i32"])
def test_rlx_matches_torch(dtype, axis, exclusive, reverse):
    if dtype == np.int32:
        x = RNG.integers(-50, 50, (3, 4, 7)).astype(np.int32)
    else:
        x = RNG.standard_normal((3, 4, 7)).astype(np.float32)
    y = rlx_cumsum(x, axis, exclusive, reverse)
    expected = torch_cumsum(x, axis, exclusive, reverse)
    assert y.dtype == dtype and y.shape == x.shape
    if dtype == np.int32:
        np.testing.assert_array_equal(y, expected)
    else:
        np.testing.assert_allclose(y, expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(("exclusive", "reverse"), FLAGS, ids=FLAG_IDS)
def test_rlx_f16_accumulates_in_float32_and_rounds_once(exclusive, reverse):
    x = RNG.uniform(0.5, 1.5, (2, 3000)).astype(np.float16)
    y = rlx_cumsum(x, 1, exclusive, reverse)
    assert y.dtype == np.float16
    exact = torch_cumsum(x.astype(np.float64), 1, exclusive, reverse)
    np.testing.assert_allclose(y.astype(np.float64), exact, rtol=1e-3, atol=1e-2)
    once = torch_cumsum(x.astype(np.float32), 1, exclusive, reverse)
    np.testing.assert_array_equal(y, once.astype(np.float16))


def test_rlx_f16_sums_past_2048():
    """Summed in float16 itself, a running count of ones stops at 2048."""
    y = rlx_cumsum(np.ones((1, 3000), np.float16), -1)
    assert float(y[0, -1]) == 3000.0


def test_rlx_i32_wraps():
    x = np.array([2**31 - 1, 1, 1], np.int32)
    assert rlx_cumsum(x, 0).tolist() == [2**31 - 1, -(2**31), -(2**31) + 1]


def test_roberta_position_ids():
    """transformers' create_position_ids_from_input_ids: cumsum of the
    non-padding mask, times the mask, plus the padding index."""
    pad = 1
    ids = np.array([[0, 31, 8, 2, 1, 1], [0, 5, 2, 1, 1, 1]], np.int32)
    mask = (ids != pad).astype(np.int32)
    positions = rlx_cumsum(mask, 1) * mask + pad
    t = torch.from_numpy(mask)
    expected = (torch.cumsum(t, 1) * t + pad).numpy()
    np.testing.assert_array_equal(positions, expected)
    assert positions.tolist() == [[2, 3, 4, 5, 1, 1], [2, 3, 4, 1, 1, 1]]


# --- mil.cumsum against coremltools ----------------------------------------------


def mil_cumsum(x: np.ndarray, axis=None, exclusive=None, reverse=None):
    return run(lambda v: mil.CumsumOp(v, axis, exclusive, reverse), x)


def coremltools_cumsum(x: np.ndarray, **inputs):
    return coreml(lambda v: mb.cumsum(x=v, **inputs), x)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [None, 1, 2, -1])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32])
def test_mil_matches_coremltools_value_inference(dtype, axis, reverse):
    if dtype == np.int32:
        x = RNG.integers(-50, 50, (3, 4, 6)).astype(np.int32)
    else:
        x = RNG.standard_normal((3, 4, 6)).astype(dtype)
    inputs = (
        {"reverse": reverse} if axis is None else {"axis": axis, "reverse": reverse}
    )
    ours = mil_cumsum(x, axis, reverse=reverse or None)
    check(ours, coremltools_cumsum(x, **inputs), dtype)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, 2, -1])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32])
def test_mil_exclusive_is_the_shifted_sums(dtype, axis, reverse):
    """coremltools' exclusive value inference fails (`np.zeros(shape,
    data)`), so exclusive is checked against its definition: the inclusive
    sums (coremltools' own) shifted by one along the axis, a zero first."""
    x = RNG.integers(-50, 50, (3, 4, 6)).astype(dtype)
    inclusive = np.asarray(coremltools_cumsum(x, axis=axis, reverse=reverse))
    step = -1 if reverse else 1
    shifted = np.roll(inclusive, step, axis=axis)
    edge = [slice(None)] * x.ndim
    edge[axis] = -1 if reverse else 0
    shifted[tuple(edge)] = 0
    ours = mil_cumsum(x, axis, exclusive=True, reverse=reverse or None)
    check(ours, shifted, dtype)


@pytest.mark.parametrize("axis", [-4, -3, -2, -1, 0, 1, 2, 3])
def test_mil_axis_range_is_coremltools(axis):
    """The verifier refuses exactly the axes coremltools' type inference
    refuses: [-1, rank - 1], so −2 and below are errors."""
    x = np.zeros((2, 3, 4), np.float32)
    try:
        coremltools_cumsum(x, axis=axis)
        theirs = True
    except ValueError:
        theirs = False
    try:
        mil_cumsum(x, axis)
        ours = True
    except VerifyException as e:
        assert "mil.cumsum: property 'axis'" in str(e)
        ours = False
    assert ours == theirs == (-1 <= axis <= 2), axis


# --- passes by numbers ---------------------------------------------------------------


def laid_out(module):
    ane = lower(module)
    MilAneLayoutPass().apply(Context(), ane)
    CanonicalizePass().apply(make_context(), ane)
    ane.verify()
    assert ane_form_problems(function_of(ane)) == []
    return ane


LAYOUT_CASES = [
    # (id, shape, axis): [S, C] along the channels and the sequence,
    # [1, S, C] (also its unit batch axis), [C]
    ("sc_channels", (6, 16), -1),
    ("sc_sequence", (6, 16), 0),
    ("bsc_channels", (1, 6, 16), 2),
    ("bsc_sequence", (1, 6, 16), -2),
    ("bsc_batch", (1, 6, 16), 0),
    ("c", (16,), 0),
]


@pytest.mark.parametrize(("exclusive", "reverse"), FLAGS, ids=FLAG_IDS)
@pytest.mark.parametrize(
    ("shape", "axis"), [c[1:] for c in LAYOUT_CASES], ids=[c[0] for c in LAYOUT_CASES]
)
def test_ane_layout_keeps_the_axis(shape, axis, exclusive, reverse):
    """mil-ane-layout runs the cumsum of an activation in [1, C, 1, S] form
    (no layout change around it) on the axis its axis becomes: the same
    numbers as the rlx program."""

    def body(dt, x):
        y = rlx.ReluOp(x).result
        s = rlx.CumsumOp(y, axis, exclusive or None, reverse or None).result
        return [rlx.AddOp(s, x).result]

    module = build_case([normal(*shape)], body, f32)
    inputs = random_inputs(function_of(module), 0)
    expected = run_function(module, inputs)
    ane = laid_out(module)
    names = [op.name for op in ane.walk()]
    assert "mil.cumsum" in names and "mil.transpose" not in names
    (actual,) = run_ane_form(ane, inputs, {}, [e.shape for e in expected])
    np.testing.assert_allclose(actual, expected[0], rtol=1e-6, atol=1e-6)


def position_ids(dt, ids):
    """cumsum(ids != 1) along the sequence, in i32."""
    pad = rlx.ConstantOp(dense_from_numpy(np.array(1), i32)).result
    mask = rlx.CastOp(rlx.CompareOp(ids, pad, "ne").result, i32).result
    return [rlx.CumsumOp(mask, 1).result]


def test_ane_layout_position_ids():
    """RoBERTa's position ids on i32 ids [1, S] through the layout."""
    module = build_case([small_ints(1, 12, element=i32)], position_ids, f32)
    inputs = [np.array([[0, 2, 1, 2, 2, 0, 1, 1, 2, 0, 0, 1]], np.int32)]
    expected = run_function(module, inputs)
    np.testing.assert_array_equal(
        expected[0], torch.cumsum(torch.from_numpy(inputs[0] != 1), 1).numpy()
    )
    ane = laid_out(module)
    (actual,) = run_ane_form(ane, inputs, {}, [e.shape for e in expected])
    np.testing.assert_array_equal(actual, expected[0])


def test_fp16_pass_by_numbers():
    """mil-fp16 makes an f32 cumsum f16 (within fp16 tolerance of the f32
    program) and leaves an i32 one as it is."""

    def body(dt, x, ids):
        return [rlx.CumsumOp(x, 1, exclusive=True).result, rlx.CumsumOp(ids, 0).result]

    args = [normal(4, 32), small_ints(5, 3, element=i32, low=-9, high=9)]
    module = build_case(args, body, f32)
    inputs = random_inputs(function_of(module), 3)
    expected = run_function(module, inputs)
    half = lower(module)
    MilFp16Pass().apply(Context(), half)
    half.verify()
    types = [str(op.results[0].type) for op in half.walk() if op.name == "mil.cumsum"]
    assert types == ["tensor<4x32xf16>", "tensor<5x3xi32>"]
    x16 = inputs[0].astype(np.float16)
    y16, ids = run_function(half, [x16, inputs[1]])
    assert y16.dtype == np.float16
    np.testing.assert_allclose(
        y16.astype(np.float32), expected[0], rtol=1e-2, atol=2e-2
    )
    np.testing.assert_array_equal(ids, expected[1])


# --- placement and cost --------------------------------------------------------------


@pytest.mark.parametrize("element", [f16, i32], ids=["f16", "i32"])
def test_cumsum_runs_off_the_ane(element):
    def body(dt, x):
        return [rlx.CumsumOp(x, 1).result]

    args = [small_ints(1, 8, 1, 64, element=element)]
    ane = lower(build_case(args, body, f16))
    (op,) = [op for op in ane.walk() if op.name == "mil.cumsum"]
    placement = placement_rule(op, get_chip("m4"))
    assert (placement.unit, placement.rule) == ("cpu", "cumsum")
    assert "cumsum" in placement.reason
    assert flops(op) == 8 * 64

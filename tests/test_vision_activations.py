"""rlx.hardswish, hardsigmoid, leaky_relu, elu and clamp end to end: numpy
semantics against torch, the mil ops they lower to (leaky_relu, elu,
sigmoid_hard, clip) against coremltools' type and value inference, the
lowering by numbers in f32 and f16, and the ATen translations (hardswish,
hardsigmoid, leaky_relu, elu, hardtanh, clamp) as one-op torch modules."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from lowering_cases import (
    F16_TOL,
    build_case,
    check_lowering,
    f16,
    f32,
    lower,
    make_inputs,
    mil_op_counts,
    normal,
    value,
)
from mil_op_check import check, coreml, run
from torch_check import OneOp, check_program, export
from xdsl.dialects.builtin import i32
from xdsl.utils.exceptions import VerifyException

import xdsl_ane
from xdsl_ane.dialects import mil, rlx
from xdsl_ane.interpreter import resampling
from xdsl_ane.interpreter.core import run_function

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from coremltools.converters.mil import Builder as mb

RNG = np.random.default_rng(0)
X = (RNG.standard_normal((4, 64)) * 4).astype(np.float32)
X[0, :4] = [-3.0, 3.0, 0.0, -0.0]  # the kinks


# --- numpy semantics against torch ----------------------------------------------

REFERENCES = [
    ("hardswish", resampling.hardswish, F.hardswish),
    ("hardsigmoid", resampling.hardsigmoid, F.hardsigmoid),
    (
        "leaky_relu",
        lambda x: resampling.leaky_relu(x, 0.2),
        lambda t: F.leaky_relu(t, 0.2),
    ),
    ("elu", lambda x: resampling.elu(x, 1.0), F.elu),
    ("elu_alpha", lambda x: resampling.elu(x, 0.3), lambda t: F.elu(t, 0.3)),
]


@pytest.mark.parametrize(
    ("name", "ours", "torch_fn"), REFERENCES, ids=[r[0] for r in REFERENCES]
)
def test_activations_match_torch(name, ours, torch_fn):
    expected = torch_fn(torch.from_numpy(X)).numpy()
    y = ours(X)
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, expected, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize(
    ("low", "high", "torch_fn"),
    [
        (0.0, 6.0, F.relu6),
        (-1.0, 1.0, F.hardtanh),
        (-2.0, None, lambda t: t.clamp(min=-2.0)),
        (None, 0.5, lambda t: t.clamp(max=0.5)),
    ],
)
def test_clamp_matches_torch(low, high, torch_fn):
    module = build_case([normal(4, 64)], lambda dt, x: rlx.ClampOp(x, low, high), f32)
    (y,) = run_function_on(module, X)
    np.testing.assert_array_equal(y, torch_fn(torch.from_numpy(X)).numpy())


def run_function_on(module, *inputs):
    return run_function(module, list(inputs))


# --- rlx verifiers ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: rlx.ClampOp(value([4]), 2.0, 1.0),
            "rlx.clamp: property 'min' (2.0) must not be greater than 'max' (1.0)",
        ),
        (
            lambda: rlx.HardswishOp(value([4], i32)),
            "rlx.hardswish: operand 'input' must have a float element type",
        ),
        (
            lambda: rlx.EluOp(value([4], i32), 1.0),
            "rlx.elu: operand 'input' must have a float element type",
        ),
    ],
)
def test_rlx_verifier_errors(build, message):
    with pytest.raises(VerifyException) as info:
        build()
    assert message in str(info.value)


# --- mil ops against coremltools --------------------------------------------------

MIL_CASES = [
    (
        "leaky_relu",
        lambda v: mil.LeakyReluOp(v, 0.2),
        lambda v, d: mb.leaky_relu(x=v, alpha=d(0.2)),
    ),
    ("elu", lambda v: mil.EluOp(v, 1.5), lambda v, d: mb.elu(x=v, alpha=d(1.5))),
    (
        "sigmoid_hard",
        lambda v: mil.SigmoidHardOp(v, 1 / 6, 0.5),
        lambda v, d: mb.sigmoid_hard(x=v, alpha=d(1 / 6), beta=d(0.5)),
    ),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize(
    ("name", "ours", "theirs"), MIL_CASES, ids=[c[0] for c in MIL_CASES]
)
def test_mil_activations_match_coremltools(name, ours, theirs, dtype):
    """Value inference on const inputs: the same numbers, and therefore the
    same shape and dtype as coremltools infers."""
    x = X.astype(dtype)
    check(run(ours, x), coreml(lambda v: theirs(v, dtype), x), dtype)


def test_mil_activations_reject_integer_input():
    with pytest.raises(
        VerifyException, match="mil.leaky_relu: operand 'x' has element type i32"
    ):
        mil.LeakyReluOp(value([4], i32), 0.1)


# --- lowering by numbers --------------------------------------------------------

LOWERINGS = [
    (
        "hardswish",
        lambda dt, x: rlx.HardswishOp(x),
        {"mil.sigmoid_hard": 1, "mil.mul": 1},
    ),
    ("hardsigmoid", lambda dt, x: rlx.HardsigmoidOp(x), {"mil.sigmoid_hard": 1}),
    ("leaky_relu", lambda dt, x: rlx.LeakyReluOp(x, 0.2), {"mil.leaky_relu": 1}),
    ("leaky_relu_default", lambda dt, x: rlx.LeakyReluOp(x), {"mil.leaky_relu": 1}),
    ("elu", lambda dt, x: rlx.EluOp(x), {"mil.elu": 1}),
    ("relu6", lambda dt, x: rlx.ClampOp(x, 0.0, 6.0), {"mil.clip": 1}),
    ("clamp_min", lambda dt, x: rlx.ClampOp(x, -1.0), {"mil.maximum": 1}),
    ("clamp_max", lambda dt, x: rlx.ClampOp(x, None, 1.0), {"mil.minimum": 1}),
    (
        "clamp_point",
        lambda dt, x: rlx.ClampOp(x, 1.0, 1.0),
        {"mil.maximum": 1, "mil.minimum": 1},
    ),
    ("clamp_relu", lambda dt, x: rlx.ClampOp(x, 0.0), {"mil.relu": 1}),
]


@pytest.mark.parametrize("element", [f32, f16], ids=["f32", "f16"])
@pytest.mark.parametrize(
    ("body", "emitted"), [c[1:] for c in LOWERINGS], ids=[c[0] for c in LOWERINGS]
)
def test_activation_lowering(body, emitted, element):
    args = [normal(2, 3, 8, sigma=4.0)]
    module = build_case(args, body, element)
    tol = {} if element == f32 else F16_TOL
    check_lowering(module, make_inputs(args, element, 0), **tol)
    counts = mil_op_counts(lower(module))
    for name, n in emitted.items():
        assert counts[name] == n, counts


# --- the ATen translations, one op each ----------------------------------------------


TORCH_CASES = {
    "hardswish": (F.hardswish, "rlx.hardswish"),
    "hardsigmoid": (F.hardsigmoid, "rlx.hardsigmoid"),
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.1), "rlx.leaky_relu"),
    "elu": (F.elu, "rlx.elu"),
    "selu": (F.selu, "rlx.elu"),
    "relu6": (F.relu6, "rlx.clamp"),
    "hardtanh": (lambda x: F.hardtanh(x, -2.0, 3.0), "rlx.clamp"),
    "clamp": (lambda x: x.clamp(-1.0, 2.0), "rlx.clamp"),
    "clamp_min": (lambda x: x.clamp(min=0.5), "rlx.clamp"),
    "clamp_max": (lambda x: torch.clamp_max(x, 0.1), "rlx.clamp"),
}


@pytest.mark.parametrize("name", sorted(TORCH_CASES))
def test_torch_op(name):
    f, expected = TORCH_CASES[name]
    x = torch.randn(1, 8, 2, 16) * 4
    checked = check_program(export(OneOp(f), (x,)), (x,))
    assert checked.ops(expected), name


def test_integer_clamp_stays_max_and_min():
    x = torch.arange(-5, 5, dtype=torch.int32).reshape(1, 10)
    imported = xdsl_ane.from_torch(export(OneOp(lambda t: t.clamp(-2, 3)), (x,)))
    names = {op.name for op in imported.module.walk()}
    assert "rlx.clamp" not in names and "rlx.max" in names
    (y,) = run_function(imported.module, imported.numpy_inputs(x), imported.weights)
    np.testing.assert_array_equal(y, x.clamp(-2, 3).numpy())

"""rlx.max_pool and rlx.avg_pool: the interpreter against torch's
F.max_pool1d/2d and F.avg_pool1d/2d (kernel, strides, padding, ceil_mode,
count_include_pad), the verifier's one-line errors, and the lowering to MIL
checked by numbers in f32 and f16."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from lowering_cases import F16_TOL, F32_TOL, build_module, check_lowering, lower
from xdsl.dialects.builtin import f16, f32
from xdsl.utils.exceptions import VerifyException

from xdsl_ane.dialects import rlx
from xdsl_ane.dialects.typing import tensor
from xdsl_ane.interpreter.core import run_function

# (input shape, kernel, strides, torch padding per axis, ceil_mode)
WINDOWS = [
    ((1, 3, 8, 8), (2, 2), (2, 2), (0, 0), False),
    ((2, 4, 7, 9), (3, 3), (2, 2), (1, 1), False),
    ((2, 4, 7, 9), (3, 3), (2, 2), (1, 1), True),
    ((1, 2, 6, 6), (3, 3), (2, 2), (0, 0), True),
    ((1, 2, 5, 7), (2, 3), (1, 2), (1, 1), True),
    ((1, 3, 112, 112), (3, 3), (2, 2), (1, 1), False),
    ((1, 2, 7, 7), (2, 2), (3, 3), (0, 0), True),  # stride > kernel
    ((2, 3, 11), (3,), (2,), (1,), False),
    ((2, 3, 11), (3,), (2,), (1,), True),
    ((1, 4, 10), (4,), (4,), (2,), True),
]


def window_id(w) -> str:
    shape, k, s, p, ceil = w
    return f"{len(shape) - 2}d-k{k}-s{s}-p{p}" + ("-ceil" if ceil else "")


def rlx_padding(p: tuple[int, ...]) -> list[int]:
    """torch's symmetric padding per axis as rlx's before/after pairs."""
    return [v for q in p for v in (q, q)]


def pool_module(kind: str, shape, k, s, p, ceil, include=True, element=f32):
    def body(x):
        if kind == "max":
            return rlx.MaxPoolOp(x, k, s, rlx_padding(p), ceil)
        return rlx.AvgPoolOp(x, k, s, rlx_padding(p), ceil, include)

    return build_module([tensor(shape, element)], body)


def torch_pool(kind: str, x: np.ndarray, k, s, p, ceil, include=True) -> np.ndarray:
    t = torch.from_numpy(x.astype(np.float64))
    if kind == "max":
        fn = F.max_pool1d if len(k) == 1 else F.max_pool2d
        out = fn(t, k, s, p, ceil_mode=ceil)
    else:
        fn = F.avg_pool1d if len(k) == 1 else F.avg_pool2d
        out = fn(t, k, s, p, ceil_mode=ceil, count_include_pad=include)
    return out.numpy()


KINDS = [("max", True), ("avg", True), ("avg", False)]


def kind_id(kind) -> str:
    name, include = kind
    return name if name == "max" else f"avg-{'include' if include else 'exclude'}"


@pytest.mark.parametrize("window", WINDOWS, ids=window_id)
@pytest.mark.parametrize("kind", KINDS, ids=kind_id)
def test_pool_matches_torch(window, kind):
    shape, k, s, p, ceil = window
    name, include = kind
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    expected = torch_pool(name, x, k, s, p, ceil, include)
    module = pool_module(name, shape, k, s, p, ceil, include)
    (out,) = run_function(module, [x])
    assert out.shape == expected.shape
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("window", WINDOWS, ids=window_id)
@pytest.mark.parametrize("kind", KINDS, ids=kind_id)
@pytest.mark.parametrize("element", [f32, f16], ids=["f32", "f16"])
def test_pool_lowering_by_numbers(window, kind, element):
    shape, k, s, p, ceil = window
    name, include = kind
    module = pool_module(name, shape, k, s, p, ceil, include, element)
    dtype = np.float32 if element == f32 else np.float16
    x = np.random.default_rng(1).standard_normal(shape).astype(dtype)
    tol = F32_TOL if element == f32 else F16_TOL
    check_lowering(module, [x], **tol)
    lowered = lower(module)
    names = {op.name for op in lowered.walk()}
    assert f"mil.{name}_pool" in names


def test_f16_pool_matches_torch_in_f16():
    x = np.random.default_rng(2).standard_normal((1, 2, 9, 9)).astype(np.float16)
    module = pool_module("avg", x.shape, (3, 3), (2, 2), (1, 1), True, False, f16)
    (out,) = run_function(module, [x])
    assert out.dtype == np.float16
    expected = torch_pool("avg", x, (3, 3), (2, 2), (1, 1), True, False)
    np.testing.assert_allclose(out, expected, rtol=1e-2, atol=1e-2)


def test_lowering_emits_one_pool_where_mil_says_the_same():
    """Without ceil-mode overhang an avg_pool is one MIL avg_pool, no
    correction of its divisors."""
    module = pool_module("avg", (1, 3, 8, 8), (3, 3), (1, 1), (1, 1), False, False)
    ops = [op.name for op in lower(module).walk() if op.name.startswith("mil.")]
    assert ops.count("mil.avg_pool") == 1
    assert "mil.mul" not in ops


@pytest.mark.parametrize(
    "props, message",
    [
        (
            {"kernel": [3], "strides": [1, 1]},
            "rlx.max_pool: property 'kernel' [3] must have 2 entries",
        ),
        (
            {"kernel": [3, 3], "strides": [0, 1]},
            "rlx.max_pool: property 'strides' [0, 1] must be >= 1",
        ),
        (
            {"kernel": [3, 3], "padding": [2, 2, 0, 0]},
            "rlx.max_pool: property 'padding' [2, 2, 0, 0] must lie in [0, kernel "
            "// 2] on each side",
        ),
        (
            {"kernel": [3, 3], "padding": [1, 1]},
            "rlx.max_pool: property 'padding' [1, 1] must have 4 entries "
            "(before/after per spatial axis)",
        ),
        (
            {"kernel": [9, 9]},
            "rlx.max_pool: kernel [9, 9] does not fit the padded operand 'input'",
        ),
    ],
)
def test_pool_verifier_errors(props, message):
    module = build_module([tensor((1, 2, 6, 6), f32)], lambda x: x)
    x = module.body.block.first_op.body.block.args[0]
    with pytest.raises(VerifyException, match=re.escape(message)):
        rlx.MaxPoolOp(x, **props)


def test_pool_input_rank_error():
    module = build_module([tensor((2, 6), f32)], lambda x: x)
    x = module.body.block.first_op.body.block.args[0]
    with pytest.raises(VerifyException, match=r"must be \[N, C, W\] or \[N, C, H, W\]"):
        rlx.AvgPoolOp(x, [2])

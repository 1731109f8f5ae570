"""rlx.batch_norm and rlx.group_norm: the interpreter against torch's
F.batch_norm (eval), F.group_norm and F.instance_norm, the verifier's
one-line errors, and the lowering to MIL checked by numbers in f32 and
f16."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from lowering_cases import F16_TOL, F32_TOL, build_module, check_lowering, lower
from xdsl.dialects.builtin import f16, f32
from xdsl.ir import SSAValue
from xdsl.utils.exceptions import VerifyException

from xdsl_ane.dialects import rlx
from xdsl_ane.dialects.dense import dense_from_numpy
from xdsl_ane.dialects.typing import tensor
from xdsl_ane.interpreter.core import run_function

SHAPES = [(2, 6, 5, 7), (1, 8, 9), (1, 32, 14, 14)]


def channel_params(c: int, seed: int = 3) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "mean": rng.standard_normal(c),
        "var": rng.uniform(0.5, 2.0, c),
        "gamma": rng.standard_normal(c),
        "beta": rng.standard_normal(c),
    }


def const(array: np.ndarray, element) -> SSAValue:
    return rlx.ConstantOp(dense_from_numpy(array, element)).result


def param(name: str, c: int, element) -> SSAValue:
    return rlx.ParamOp(name, tensor((c,), element)).result


def source(kind: str, name: str, array: np.ndarray, element) -> SSAValue:
    """A [C] operand as a constant or as a weight (rlx.param)."""
    if kind == "const":
        return const(array, element)
    return param(name, len(array), element)


AFFINE = ["both", "gamma", "beta", "none"]


def affine_of(which: str, params, make) -> tuple[SSAValue | None, SSAValue | None]:
    gamma = make("gamma") if which in ("both", "gamma") else None
    beta = make("beta") if which in ("both", "beta") else None
    return gamma, beta


def batch_norm_module(shape, which, element=f32, kind="param", eps=1e-5):
    c = shape[1]
    params = channel_params(c)

    def body(x):
        def make(n):
            return source(kind, n, params[n], element)

        gamma, beta = affine_of(which, params, make)
        return rlx.BatchNormOp(x, make("mean"), make("var"), gamma, beta, eps)

    module = build_module([tensor(shape, element)], body)
    return module, {k: v.astype(np.float32) for k, v in params.items()}


def torch_batch_norm(x, params, which, eps=1e-5):
    t = {k: torch.from_numpy(v.astype(np.float64)) for k, v in params.items()}
    return F.batch_norm(
        torch.from_numpy(x.astype(np.float64)),
        t["mean"],
        t["var"],
        t["gamma"] if which in ("both", "gamma") else None,
        t["beta"] if which in ("both", "beta") else None,
        training=False,
        eps=eps,
    ).numpy()


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("which", AFFINE)
def test_batch_norm_matches_torch(shape, which):
    module, params = batch_norm_module(shape, which, eps=1e-3)
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    (out,) = run_function(module, [x], params)
    expected = torch_batch_norm(x, params, which, eps=1e-3)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


def group_norm_module(shape, groups, which, element=f32, kind="param"):
    c = shape[1]
    params = channel_params(c)

    def body(x):
        def make(n):
            return source(kind, n, params[n], element)

        gamma, beta = affine_of(which, params, make)
        return rlx.GroupNormOp(x, groups, gamma, beta, 1e-5)

    module = build_module([tensor(shape, element)], body)
    return module, {k: v.astype(np.float32) for k, v in params.items()}


GROUPS = [((2, 6, 5, 7), 3), ((2, 6, 5, 7), 6), ((2, 6, 5, 7), 1), ((1, 8, 9), 2)]


@pytest.mark.parametrize("shape, groups", GROUPS, ids=str)
@pytest.mark.parametrize("which", AFFINE)
def test_group_norm_matches_torch(shape, groups, which):
    module, params = group_norm_module(shape, groups, which)
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32) * 3 + 1
    (out,) = run_function(module, [x], params)
    t = {k: torch.from_numpy(v.astype(np.float64)) for k, v in params.items()}
    gamma = t["gamma"] if which in ("both", "gamma") else None
    beta = t["beta"] if which in ("both", "beta") else None
    xt = torch.from_numpy(x.astype(np.float64))
    expected = F.group_norm(xt, groups, gamma, beta, 1e-5).numpy()
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
    if groups == shape[1]:
        instance = F.instance_norm(xt, weight=gamma, bias=beta, eps=1e-5).numpy()
        np.testing.assert_allclose(out, instance, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("element", [f32, f16], ids=["f32", "f16"])
@pytest.mark.parametrize("kind", ["param", "const"])
@pytest.mark.parametrize("which", AFFINE)
@pytest.mark.parametrize("shape", SHAPES[:2], ids=str)
def test_batch_norm_lowering_by_numbers(shape, which, kind, element):
    module, params = batch_norm_module(shape, which, element, kind)
    dtype = np.float32 if element == f32 else np.float16
    x = np.random.default_rng(1).standard_normal(shape).astype(dtype)
    weights = {k: v.astype(dtype) for k, v in params.items()}
    check_lowering(module, [x], weights, **(F32_TOL if element == f32 else F16_TOL))
    names = [op.name for op in lower(module).walk()]
    assert "mil.batch_norm" in names


@pytest.mark.parametrize("element", [f32, f16], ids=["f32", "f16"])
@pytest.mark.parametrize("which", AFFINE)
@pytest.mark.parametrize("shape, groups", GROUPS, ids=str)
def test_group_norm_lowering_by_numbers(shape, groups, which, element):
    module, params = group_norm_module(shape, groups, which, element)
    dtype = np.float32 if element == f32 else np.float16
    x = np.random.default_rng(1).standard_normal(shape).astype(dtype)
    weights = {k: v.astype(dtype) for k, v in params.items()}
    check_lowering(module, [x], weights, **(F32_TOL if element == f32 else F16_TOL))


def test_instance_norm_is_one_mil_op():
    module, _ = group_norm_module((1, 6, 5, 7), 6, "both")
    ops = [op.name for op in lower(module).walk() if op.name.startswith("mil.")]
    assert ops.count("mil.instance_norm") == 1
    assert not {"mil.reshape", "mil.mul", "mil.add"} & set(ops)


def test_group_norm_op_count():
    """reshape, layer_norm, reshape and a batch_norm applying γ and β: the
    statistics in one op, the parameters [C] without reshapes."""
    module, _ = group_norm_module((1, 6, 5, 7), 3, "both")
    ops = [
        op.name
        for op in lower(module).walk()
        if op.name.startswith("mil.") and op.name != "mil.const"
    ]
    expected = ["mil.reshape", "mil.layer_norm", "mil.reshape", "mil.batch_norm"]
    assert ops == expected


def first_arg(shape, element=f32):
    module = build_module([tensor(shape, element)], lambda x: x)
    return module, module.body.block.first_op.body.block.args[0]


def test_batch_norm_errors():
    module, x = first_arg((1, 4, 5, 5))
    with pytest.raises(
        VerifyException,
        match=re.escape(
            "rlx.batch_norm: operand 'var' [3] must be [4] (C of operand 'input' "
            "[1, 4, 5, 5])"
        ),
    ):
        rlx.BatchNormOp(x, param("m", 4, f32), param("v", 3, f32))
    with pytest.raises(VerifyException, match="must have the same element type"):
        rlx.BatchNormOp(x, param("m", 4, f32), param("v", 4, f16))
    _, y = first_arg((4, 5))
    with pytest.raises(VerifyException, match=re.escape("must be [N, C, W] or")):
        rlx.BatchNormOp(y, param("m", 5, f32), param("v", 5, f32))


def test_group_norm_errors():
    module, x = first_arg((1, 6, 5, 5))
    with pytest.raises(
        VerifyException,
        match=re.escape(
            "rlx.group_norm: property 'groups' 4 must be >= 1 and divide C = 6"
        ),
    ):
        rlx.GroupNormOp(x, 4)


@pytest.mark.parametrize("element", [f32, f16], ids=["f32", "f16"])
@pytest.mark.parametrize("groups", [1, 2, 6])
def test_runtime_parameters_lower_elementwise(groups, element):
    """Statistics and parameters that are function arguments (MIL wants its
    norms' parameters const): batch_norm as sub/rsqrt/mul/add, group_norm
    with γ and β applied after the norm."""
    shape = (1, 6, 4, 5)
    dtype = np.float32 if element == f32 else np.float16
    c = tensor((6,), element)

    def body(x, m, v, g, b):
        y = rlx.BatchNormOp(x, m, v, g, b, 1e-3).result
        return rlx.GroupNormOp(y, groups, g, b)

    module = build_module([tensor(shape, element), c, c, c, c], body)
    rng = np.random.default_rng(4)
    inputs = [
        rng.standard_normal(shape).astype(dtype),
        rng.standard_normal(6).astype(dtype),
        rng.uniform(0.5, 2.0, 6).astype(dtype),
        rng.standard_normal(6).astype(dtype),
        rng.standard_normal(6).astype(dtype),
    ]
    check_lowering(module, inputs, **(F32_TOL if element == f32 else F16_TOL))
    names = {op.name for op in lower(module).walk()}
    assert "mil.batch_norm" not in names

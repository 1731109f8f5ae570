"""xIELU (models/xielu.py) against transformers' XIELUActivation: the rlx
forward and derivative in the interpreter, the CPU gradients of its learned
parameters against torch's autograd, at values on both sides of 0 and ε."""

from __future__ import annotations

import numpy as np
import torch
from transformers.activations import XIELUActivation
from xdsl.dialects import builtin

from xdsl_ane.dialects.functions import build_function
from xdsl_ane.dialects.typing import tensor
from xdsl_ane.interpreter.core import run_function
from xdsl_ane.models.xielu import (
    effective,
    parameter_gradients,
    xielu,
    xielu_derivative,
)


def reference(seed: int = 0):
    """transformers' activation with perturbed parameters, an input that
    crosses 0 and ε, and an output gradient."""
    torch.manual_seed(seed)
    act = XIELUActivation(dtype=torch.float32)
    with torch.no_grad():
        act.alpha_p.add_(0.3)
        act.alpha_n.sub_(0.2)
    x = torch.cat([torch.randn(60) * 2, torch.tensor([0.0, -1e-6, -2e-6, 1e-7])])
    return act, x.reshape(8, 8), torch.randn(8, 8)


def interpreted(body, x: np.ndarray, act) -> np.ndarray:
    beta, eps = float(act.beta), float(act.eps)
    alpha_p, alpha_n = effective(float(act.alpha_p), float(act.alpha_n), beta)
    params = np.array([alpha_p, alpha_n, beta, eps], np.float32).reshape(4, 1)
    t = tensor(x.shape, builtin.f32)

    def emit(value, p):
        from xdsl_ane.dialects import rlx

        parts = [rlx.NarrowOp(p, 0, i, 1).result for i in range(4)]
        return [body(value, *(rlx.ReshapeOp(q, (1,)).result for q in parts))]

    function = build_function("f", [t, tensor((4, 1), builtin.f32)], emit)
    (out,) = run_function(builtin.ModuleOp([function]), [x, params], {}, "f")
    return out


def test_forward_and_derivative_match_torch():
    act, x, _ = reference()
    leaf = x.clone().requires_grad_(True)
    y = act._xielu_python(leaf)
    (dy,) = torch.autograd.grad(y.sum(), leaf)
    got = interpreted(xielu, x.numpy(), act)
    np.testing.assert_allclose(got, y.detach().numpy(), rtol=1e-5, atol=1e-7)
    got = interpreted(xielu_derivative, x.numpy(), act)
    np.testing.assert_allclose(got, dy.numpy(), rtol=1e-5, atol=1e-6)


def test_parameter_gradients_match_torch():
    act, x, g = reference(1)
    y = act._xielu_python(x)
    d_p, d_n = torch.autograd.grad((y * g).sum(), [act.alpha_p, act.alpha_n])
    got = parameter_gradients(
        x.numpy(), g.numpy(), float(act.alpha_p), float(act.alpha_n), float(act.eps)
    )
    np.testing.assert_allclose(got, [float(d_p), float(d_n)], rtol=1e-5)

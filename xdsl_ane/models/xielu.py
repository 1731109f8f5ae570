"""xIELU, Apertus's MLP activation (transformers' XIELUActivation), with
learned parameters in each layer: a_p and a_n (`mlp.act_fn.alpha_p`,
`alpha_n`), and the buffers β (`beta`) and ε (`eps`).

    α_p = softplus(a_p),  α_n = β + softplus(a_n)
    f(x) = α_p·x² + β·x                       where x > 0
           (expm1(min(x, ε)) − x)·α_n + β·x   elsewhere

One place for its forward (the decoder builder's and the training
kernels'), its derivative (the training kernels' backward) and, on the
CPU, the gradients of a_p and a_n (sums over the activation's input)."""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from xdsl_ane.dialects import rlx

XIELU = "xielu"
"""Its `hidden_act` name."""

XIELU_PARAMS = ("alpha_p", "alpha_n")
"""Its learned parameters, in each layer's `mlp.act_fn`."""


def number(value: float) -> SSAValue:
    """A constant [1] of `value`."""
    return rlx.ConstantOp.of(np.full(1, value, np.float32)).result


def softplus(v: SSAValue) -> SSAValue:
    """log(1 + exp(v))."""
    one = number(1.0)
    return rlx.LogOp(rlx.AddOp(rlx.ExpOp(v).result, one).result).result


def xielu(x: SSAValue, alpha_p, alpha_n, beta, eps) -> SSAValue:
    """f(x) of the effective α_p, α_n (after softplus) and β, ε (values
    broadcast against x)."""
    one, zero = number(1.0), number(0.0)
    linear = rlx.MulOp(x, beta).result
    square = rlx.MulOp(x, x).result
    positive = rlx.AddOp(rlx.MulOp(square, alpha_p).result, linear).result
    low = rlx.MinOp(x, eps).result
    expm1 = rlx.SubOp(rlx.ExpOp(low).result, one).result
    negative = rlx.MulOp(rlx.SubOp(expm1, x).result, alpha_n).result
    negative = rlx.AddOp(negative, linear).result
    above = rlx.CompareOp(x, zero, "gt").result
    return rlx.WhereOp(above, positive, negative).result


def xielu_derivative(x: SSAValue, alpha_p, alpha_n, beta, eps) -> SSAValue:
    """f'(x): 2·α_p·x + β where x > 0; (m·exp(x) − 1)·α_n + β elsewhere,
    m the share of min(x, ε)'s gradient x gets: 1 below ε, ½ at it (torch
    splits a tie evenly), 0 above."""
    one, zero = number(1.0), number(0.0)
    two, half = number(2.0), number(0.5)
    positive = rlx.MulOp(rlx.MulOp(x, alpha_p).result, two).result
    positive = rlx.AddOp(positive, beta).result
    e = rlx.ExpOp(x).result
    tie = rlx.CompareOp(x, eps, "eq").result
    at_eps = rlx.WhereOp(tie, rlx.MulOp(e, half).result, zero).result
    below = rlx.CompareOp(x, eps, "lt").result
    exp = rlx.WhereOp(below, e, at_eps).result
    negative = rlx.MulOp(rlx.SubOp(exp, one).result, alpha_n).result
    negative = rlx.AddOp(negative, beta).result
    above = rlx.CompareOp(x, zero, "gt").result
    return rlx.WhereOp(above, positive, negative).result


def effective(a_p: float, a_n: float, beta: float) -> np.ndarray:
    """[α_p, α_n] of the learned a_p, a_n: the training kernels' input."""
    return np.array([np.logaddexp(0.0, a_p), beta + np.logaddexp(0.0, a_n)], np.float32)


def parameter_gradients(
    x: np.ndarray, g: np.ndarray, a_p: float, a_n: float, eps: float
) -> tuple[float, float]:
    """The gradients of a_p and a_n from the activation's input `x` and the
    gradient `g` of its output: sigmoid(a_p)·Σ_{x>0} x²·g and
    sigmoid(a_n)·Σ_{x≤0} (expm1(min(x, ε)) − x)·g (float64 sums)."""
    x, g = x.astype(np.float64), g.astype(np.float64)
    above = x > 0
    d_p = np.sum(np.where(above, x * x * g, 0.0))
    d_n = np.sum(np.where(above, 0.0, (np.expm1(np.minimum(x, eps)) - x) * g))
    sigmoid = lambda v: 1.0 / (1.0 + np.exp(-v))  # noqa: E731
    return float(sigmoid(a_p) * d_p), float(sigmoid(a_n) * d_n)

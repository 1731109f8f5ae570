"""Batch norm folded into the convolution before it, at compile time.

With inference statistics a batch norm is an affine map per channel,
y = x · s + (β − mean · s) with s = γ / sqrt(var + eps), so after a
convolution whose weight and bias are known it is the convolution itself
with W' = W · s (over output channels) and b' = (b − mean) · s + β. The
values are the weights file's (`rlx.param`) or inline (`rlx.constant`);
folding needs them, so this is a rewrite given the weights
(`fold_batch_norms`), run by the torch import after translation, rather
than a canonicalization of the IR alone. The folded tensors are new
weights; the ones nothing reads any more are dropped.
"""

from __future__ import annotations

from collections.abc import MutableMapping

import numpy as np
from xdsl.dialects import builtin
from xdsl.ir import SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from xdsl_ane.dialects import rlx
from xdsl_ane.dialects.dense import dense_to_numpy
from xdsl_ane.dialects.typing import element_type_of, shape_of, tensor


def known_value(
    value: SSAValue | None, weights: MutableMapping[str, np.ndarray]
) -> np.ndarray | None:
    """The compile-time value of an rlx.param (from `weights`) or
    rlx.constant, else None."""
    if value is None:
        return None
    owner = value.owner
    if isinstance(owner, rlx.ParamOp):
        return weights.get(owner.param_name.data)
    if isinstance(owner, rlx.ConstantOp):
        return dense_to_numpy(owner.value)
    return None


class FoldBatchNormIntoConv(RewritePattern):
    """batch_norm(conv(x, W, b), mean, var, γ, β) -> conv(x, W', b') with
    s = γ / sqrt(var + eps), W' = W · s per output channel and
    b' = (b − mean) · s + β, when the conv's only use is the batch norm and
    every parameter is known."""

    def __init__(self, weights: MutableMapping[str, np.ndarray]):
        self.weights = weights
        self.folded = 0

    def new_weight(self, base: str, array: np.ndarray) -> str:
        name, n = f"{base}.bn_folded", 1
        while name in self.weights:
            name, n = f"{base}.bn_folded.{n}", n + 1
        self.weights[name] = array
        return name

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: rlx.BatchNormOp, rewriter: PatternRewriter) -> None:
        conv = op.input.owner
        if not isinstance(conv, rlx.ConvOp) or len(list(conv.result.uses)) != 1:
            return
        values = [
            known_value(v, self.weights)
            for v in (conv.weight, op.mean, op.var, op.gamma, op.beta)
        ]
        w, mean, var, gamma, beta = values
        if w is None or mean is None or var is None:
            return
        if (op.gamma is not None and gamma is None) or (
            op.beta is not None and beta is None
        ):
            return
        bias = known_value(conv.bias, self.weights)
        if conv.bias is not None and bias is None:
            return
        c_out = shape_of(conv.result)[1]
        f64 = np.float64
        scale = (np.ones(c_out) if gamma is None else gamma.astype(f64)) / np.sqrt(
            var.astype(f64) + op.eps()
        )
        shift = np.zeros(c_out) if beta is None else beta.astype(f64)
        b = np.zeros(c_out) if bias is None else bias.astype(f64)
        folded_w = w.astype(f64) * scale.reshape(-1, *([1] * (w.ndim - 1)))
        folded_b = (b - mean.astype(f64)) * scale + shift
        element = element_type_of(conv.weight)
        owner = conv.weight.owner
        base = "conv"
        if isinstance(owner, rlx.ParamOp):
            base = owner.param_name.data.removesuffix(".weight")
        new_w = rlx.ParamOp(
            self.new_weight(f"{base}.weight", folded_w.astype(w.dtype)),
            tensor(folded_w.shape, element),
        )
        new_b = rlx.ParamOp(
            self.new_weight(f"{base}.bias", folded_b.astype(w.dtype)),
            tensor((c_out,), element),
        )
        new_conv = rlx.ConvOp.create(
            operands=[conv.input, new_w.result, new_b.result],
            result_types=[op.result.type],
            properties=dict(conv.properties),
        )
        rewriter.replace(op, [new_w, new_b, new_conv])
        rewriter.erase(conv)
        self.folded += 1


def fold_batch_norms(
    module: builtin.ModuleOp, weights: MutableMapping[str, np.ndarray]
) -> int:
    """Folds every batch norm after a known convolution into it (see the
    module docstring); returns how many, and drops the weights no
    rlx.param reads any more."""
    pattern = FoldBatchNormIntoConv(weights)
    PatternRewriteWalker(pattern, apply_recursively=False).rewrite_module(module)
    if pattern.folded:
        for op in [o for o in module.walk() if isinstance(o, rlx.ParamOp)]:
            if not list(op.result.uses):
                op.detach()
                op.erase()
        used = {
            op.param_name.data for op in module.walk() if isinstance(op, rlx.ParamOp)
        }
        for name in [n for n in weights if n not in used]:
            del weights[name]
    return pattern.folded

"""Batch norm folded into the convolution before it at import
(`passes/fold_batch_norm.py`): conv + BatchNorm becomes one conv of
W' = W · γ/sqrt(var + eps) and b' = (b − mean) · γ/sqrt(var + eps) + β,
checked against torch (fp32 interpreter, fp16 ANE-form package,
coremltools' loader), and left alone where it does not apply."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from lowering_cases import build_module
from torch import nn
from torch_check import check_program, export
from xdsl.dialects.builtin import f32

import xdsl_ane
from xdsl_ane.dialects import rlx
from xdsl_ane.dialects.dense import dense_from_numpy
from xdsl_ane.dialects.typing import tensor
from xdsl_ane.interpreter.core import run_function
from xdsl_ane.passes.fold_batch_norm import fold_batch_norms


def randomized(module: nn.Module) -> nn.Module:
    torch.manual_seed(0)
    for m in module.modules():
        if isinstance(m, nn.BatchNorm1d | nn.BatchNorm2d):
            m.running_mean.normal_()
            m.running_var.uniform_(0.5, 2.0)
            m.weight.data.normal_()
            m.bias.data.normal_()
    return module.eval()


def names(imported) -> list[str]:
    return [op.name for op in imported.module.walk() if op.name.startswith("rlx.")]


@pytest.mark.slow
def test_conv_batch_norm_blocks_fold_and_match_torch():
    """A ResNet stem and a depthwise-separable block: no batch_norm left."""
    module = randomized(
        nn.Sequential(
            nn.Conv2d(3, 16, 3, stride=2, padding=1, bias=False),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.Conv2d(16, 16, 3, padding=1, groups=16),
            nn.BatchNorm2d(16, eps=1e-3),
            nn.ReLU(),
            nn.Conv2d(16, 8, 1),
            nn.BatchNorm2d(8),
        )
    )
    args = (torch.randn(1, 3, 16, 16),)
    checked = check_program(export(module, args), args)
    ops = names(checked.imported)
    assert "rlx.batch_norm" not in ops and ops.count("rlx.conv") == 3
    assert all(name.endswith("bn_folded") for name in checked.imported.weights)


def test_conv1d_batch_norm1d_folds():
    module = randomized(nn.Sequential(nn.Conv1d(4, 6, 3), nn.BatchNorm1d(6)))
    x = torch.randn(1, 4, 10)
    imported = xdsl_ane.from_torch(export(module, (x,)))
    assert "rlx.batch_norm" not in names(imported)
    (out,) = run_function(imported.module, imported.numpy_inputs(x), imported.weights)
    expected = module(x).detach().numpy()
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)


def test_a_batch_norm_without_a_conv_before_it_stays():
    module = randomized(nn.Sequential(nn.ReLU(), nn.BatchNorm2d(4)))
    imported = xdsl_ane.from_torch(export(module, (torch.randn(1, 4, 5, 5),)))
    assert "rlx.batch_norm" in names(imported)


def test_a_conv_read_elsewhere_too_is_not_folded():
    class TwoUses(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 1)
            self.norm = nn.BatchNorm2d(4)

        def forward(self, x):
            y = self.conv(x)
            return self.norm(y) + y

    module = randomized(TwoUses())
    x = torch.randn(1, 3, 5, 5)
    imported = xdsl_ane.from_torch(export(module, (x,)))
    assert "rlx.batch_norm" in names(imported)
    (out,) = run_function(imported.module, imported.numpy_inputs(x), imported.weights)
    np.testing.assert_allclose(out, module(x).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_fold_of_inline_constants_by_numbers():
    """The rewrite on rlx directly: constant W, b and statistics, one conv
    after it with two new weights, the same numbers as before."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((5, 3, 3, 3))
    stats = [rng.standard_normal(5), rng.uniform(0.5, 2, 5), rng.standard_normal(5)]

    def body(x):
        def const(a):
            return rlx.ConstantOp(dense_from_numpy(a, f32)).result

        y = rlx.ConvOp(x, const(w), const(rng.standard_normal(5))).result
        mean, var, beta = (const(a) for a in stats)
        return rlx.BatchNormOp(y, mean, var, None, beta, 1e-3)

    module = build_module([tensor((1, 3, 6, 6), f32)], body)
    x = rng.standard_normal((1, 3, 6, 6)).astype(np.float32)
    (before,) = run_function(module, [x])
    weights: dict[str, np.ndarray] = {}
    assert fold_batch_norms(module, weights) == 1
    module.verify()
    ops = [op.name for op in module.walk() if op.name.startswith("rlx.")]
    assert "rlx.batch_norm" not in ops and ops.count("rlx.conv") == 1
    assert sorted(weights) == ["conv.bias.bn_folded", "conv.weight.bn_folded"]
    (after,) = run_function(module, [x], weights)
    np.testing.assert_allclose(after, before, rtol=1e-5, atol=1e-5)

"""torch in for pooling and the spatial norms: one module per translated
ATen op (`_native_batch_norm_legit_no_training`, `native_group_norm`,
`max_pool2d_with_indices`, `avg_pool2d`, `_adaptive_avg_pool2d`, and
`mean.dim` over the spatial axes), checked as in torch_check.py (fp32
interpreter, the fp16 ANE-form package, coremltools' loader), and the
errors of what MIL cannot take."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch_check import check_program, export

import xdsl_ane
from xdsl_ane.errors import XdslAneError

pytestmark = pytest.mark.slow


def randomized(module: nn.Module) -> nn.Module:
    """`module` in eval mode with random parameters and statistics."""
    torch.manual_seed(0)
    for tensor in (*module.parameters(), *module.buffers()):
        if tensor.dtype.is_floating_point:
            tensor.data = torch.rand_like(tensor) + 0.5
    return module.eval()


class SpatialMean(nn.Module):
    def forward(self, x):
        return x.mean(dim=(2, 3), keepdim=True)


# (id, module, input shape, the rlx op it becomes)
MODULES = [
    ("batch_norm2d", nn.BatchNorm2d(8), (1, 8, 6, 6), "rlx.batch_norm"),
    ("batch_norm1d", nn.BatchNorm1d(8), (1, 8, 10), "rlx.batch_norm"),
    ("group_norm", nn.GroupNorm(4, 8), (1, 8, 6, 6), "rlx.group_norm"),
    ("group_norm_1d", nn.GroupNorm(2, 8, affine=False), (1, 8, 12), "rlx.group_norm"),
    ("max_pool2d", nn.MaxPool2d(3, 2, 1), (1, 4, 9, 9), "rlx.max_pool"),
    (
        "max_pool2d_ceil",
        nn.MaxPool2d(3, 2, ceil_mode=True),
        (1, 4, 8, 8),
        "rlx.max_pool",
    ),
    ("max_pool1d", nn.MaxPool1d(3, 2, 1), (1, 4, 11), "rlx.max_pool"),
    ("avg_pool2d", nn.AvgPool2d(2), (1, 4, 8, 8), "rlx.avg_pool"),
    (
        "avg_pool2d_exclude_ceil",
        nn.AvgPool2d(3, 2, 1, ceil_mode=True, count_include_pad=False),
        (1, 4, 8, 8),
        "rlx.avg_pool",
    ),
    (
        "avg_pool2d_include_ceil",
        nn.AvgPool2d(3, 2, 1, ceil_mode=True),
        (1, 4, 8, 8),
        "rlx.avg_pool",
    ),
    ("avg_pool1d", nn.AvgPool1d(3, 2, 1), (1, 4, 11), "rlx.avg_pool"),
    ("adaptive_avg_pool2d", nn.AdaptiveAvgPool2d((2, 3)), (1, 4, 8, 9), "rlx.avg_pool"),
    ("adaptive_avg_pool1d", nn.AdaptiveAvgPool1d(4), (1, 4, 12), "rlx.avg_pool"),
    ("global_avg_pool", nn.AdaptiveAvgPool2d(1), (1, 4, 7, 7), "rlx.reduce_mean"),
    ("spatial_mean", SpatialMean(), (1, 4, 7, 7), "rlx.reduce_mean"),
]


@pytest.mark.parametrize(
    "module, shape, op", [m[1:] for m in MODULES], ids=[m[0] for m in MODULES]
)
def test_module_against_torch(module, shape, op):
    args = (torch.randn(*shape),)
    checked = check_program(export(randomized(module), args), args)
    assert checked.ops(op), [o.name for o in checked.imported.module.walk()]


def test_instance_norm_is_group_norm_of_its_channels():
    """nn.InstanceNorm2d reaches rlx as `_native_batch_norm_legit.no_stats`
    of a [1, N·C, H, W] view: group_norm with a group per channel."""
    module = randomized(nn.InstanceNorm2d(6, affine=True))
    args = (torch.randn(1, 6, 5, 5),)
    checked = check_program(export(module, args), args)
    assert checked.ops("rlx.group_norm")


def test_used_indices_are_an_error_naming_the_op():
    class WithIndices(nn.Module):
        def __init__(self):
            super().__init__()
            self.pool = nn.MaxPool2d(2, return_indices=True)

        def forward(self, x):
            y, indices = self.pool(x)
            return y, indices

    with pytest.raises(
        XdslAneError,
        match="max_pool2d_with_indices.default: its output 'indices' is not supported",
    ):
        xdsl_ane.from_torch(export(WithIndices(), (torch.randn(1, 2, 4, 4),)))


def test_uneven_adaptive_pooling_matches_torch():
    """Windows of unequal sizes (7 into 3: 3, 3, 3 wide, overlapping; with
    4 into 2 on the other axis): a constant averaging matmul per axis."""
    x = torch.randn(1, 2, 4, 7)
    checked = check_program(export(nn.AdaptiveAvgPool2d((2, 3)), (x,)), (x,))
    assert len(checked.ops("rlx.matmul")) == 2
    assert not checked.ops("rlx.avg_pool")


def test_dilated_max_pool_is_an_error():
    with pytest.raises(XdslAneError, match="dilation .* is not supported"):
        xdsl_ane.from_torch(
            export(nn.MaxPool2d(2, dilation=2), (torch.randn(1, 2, 8, 8),))
        )


def test_signal_chain_stays_in_ane_form():
    """Conv1d, instance norm, max and avg pooling (ceil mode), batch norm and
    a 1x1 conv on a [1, C, W] signal: every op runs on [1, C, 1, W], no
    reshape or transpose in the package."""
    module = randomized(
        nn.Sequential(
            nn.Conv1d(3, 8, 3),
            nn.GroupNorm(8, 8),
            nn.MaxPool1d(2),
            nn.AvgPool1d(3, 2, 1, ceil_mode=True),
            nn.BatchNorm1d(8),
            nn.Conv1d(8, 8, 1),
        )
    )
    args = (torch.randn(1, 3, 20),)
    checked = check_program(export(module, args), args)
    counts = checked.compiled.op_counts()["main"]
    assert not {"reshape", "transpose"} & set(counts), counts

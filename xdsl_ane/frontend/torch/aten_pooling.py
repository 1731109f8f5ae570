"""ATen's pooling and spatial normalization ops to rlx: batch norm
(inference, and batch statistics at batch 1), group norm, max and average
pooling (adaptive too; uneven windows as averaging matmuls)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from xdsl.ir import SSAValue

from xdsl_ane.dialects import rlx
from xdsl_ane.dialects.typing import element_type_of, shape_of
from xdsl_ane.frontend.torch.aten import (
    aten,
    reshape,
    translates,
)
from xdsl_ane.frontend.torch.translate import (
    Const,
    TranslationError,
    Translator,
)

# --- pooling and spatial normalization ----------------------------------------------------


class UnusedOutputs(tuple):
    """The results of an op of which only the first is translated (batch
    norm's saved statistics, max pool's indices). torch.export drops the
    `getitem` of an output nothing reads, so reading one of the others is
    an error naming the op and the output."""

    op: str

    def __new__(cls, value: SSAValue, op: str, names: Sequence[str]):
        self = super().__new__(cls, (value, *names))
        self.op = op
        return self

    def __getitem__(self, index):
        if index == 0:
            return super().__getitem__(0)
        raise TranslationError(
            f"{self.op}: its output '{super().__getitem__(index)}' is not "
            "supported, only the first"
        )


def spatial_pairs(values: Any, spatial: int, default: Sequence[int] = ()) -> list[int]:
    """torch's per-axis ints (one for all axes, or one per axis; empty for
    `default`)."""
    values = [int(v) for v in (values if isinstance(values, Sequence) else [values])]
    if not values:
        values = [int(v) for v in default]
    return values * spatial if len(values) == 1 else values


def symmetric(padding: Sequence[int]) -> list[int] | None:
    """torch's padding per axis as rlx's before/after pairs (None: none)."""
    pads = [p for p in padding for p in (p, p)]
    return pads if any(pads) else None


@translates(aten._native_batch_norm_legit_no_training.default)
def batch_norm(tr: Translator, node, x, weight, bias, mean, var, momentum, eps):
    """rlx.batch_norm; BatchNorm1d on [N, C] (after a linear) as [N, C, 1]."""
    x = tr.value(x, None)
    shape = shape_of(x)
    if len(shape) == 2:
        x = reshape(x, (*shape, 1))
    element = element_type_of(x)
    gamma = None if weight is None else tr.value(weight, element)
    beta = None if bias is None else tr.value(bias, element)
    y = rlx.BatchNormOp(
        x, tr.value(mean, element), tr.value(var, element), gamma, beta, float(eps)
    ).result
    return UnusedOutputs(
        reshape(y, shape), node.target.__name__, ("save_mean", "save_rstd")
    )


@translates(aten.batch_norm.default)
def batch_norm_inference(
    tr: Translator,
    node,
    x,
    weight,
    bias,
    mean,
    var,
    training,
    momentum,
    eps,
    cudnn_enabled=True,
):
    """torch.export's batch_norm with inference statistics."""
    if training:
        raise TranslationError(
            "batch_norm in training mode (batch statistics): export the model in eval()"
        )
    return batch_norm(tr, node, x, weight, bias, mean, var, momentum, eps)[0]


@translates(aten.native_group_norm.default)
def group_norm(tr: Translator, node, x, weight, bias, n, c, hxw, groups, eps):
    x = tr.value(x, None)
    element = element_type_of(x)
    gamma = None if weight is None else tr.value(weight, element)
    beta = None if bias is None else tr.value(bias, element)
    y = rlx.GroupNormOp(x, int(groups), gamma, beta, float(eps)).result
    return UnusedOutputs(y, node.target.__name__, ("mean", "rstd"))


@translates(aten._native_batch_norm_legit.no_stats)
def batch_norm_batch_statistics(
    tr: Translator, node, x, weight, bias, training, momentum, eps
):
    """Normalization by the batch's own statistics, per channel over (N,
    *spatial): instance norm's decomposition views [N, C, ...] as
    [1, N·C, ...], where it is group_norm with a group per channel."""
    x = tr.value(x, None)
    shape = shape_of(x)
    if shape[0] != 1:
        raise TranslationError(
            f"{node.target.__name__}: batch statistics over a batch of {shape[0]} "
            "are not supported (only a batch of 1, as instance norm gives)"
        )
    element = element_type_of(x)
    gamma = None if weight is None else tr.value(weight, element)
    beta = None if bias is None else tr.value(bias, element)
    y = rlx.GroupNormOp(x, shape[1], gamma, beta, float(eps)).result
    return UnusedOutputs(y, node.target.__name__, ("save_mean", "save_rstd"))


@translates(aten.max_pool2d_with_indices.default)
def max_pool_with_indices(tr: Translator, node, *args, **kwargs):
    y = max_pool(tr, node, *args, **kwargs)
    return UnusedOutputs(y, node.target.__name__, ("indices",))


@translates(aten.max_pool2d.default)
def max_pool(
    tr: Translator, node, x, kernel, stride=(), padding=0, dilation=1, ceil_mode=False
):
    x = tr.value(x, None)
    spatial = len(shape_of(x)) - 2
    kernel = spatial_pairs(kernel, spatial)
    if any(d != 1 for d in spatial_pairs(dilation, spatial)):
        raise TranslationError(
            f"{node.target.__name__}: dilation {list(dilation)} is not supported "
            "(MIL's max_pool has none)"
        )
    y = rlx.MaxPoolOp(
        x,
        kernel,
        spatial_pairs(stride, spatial, kernel),
        symmetric(spatial_pairs(padding, spatial)),
        bool(ceil_mode) or None,
    ).result
    return y


@translates(aten.avg_pool2d.default)
def avg_pool(
    tr: Translator,
    node,
    x,
    kernel,
    stride=(),
    padding=0,
    ceil_mode=False,
    count_include_pad=True,
    divisor_override=None,
):
    if divisor_override is not None:
        raise TranslationError(
            f"{node.target.__name__}: divisor_override is not supported"
        )
    x = tr.value(x, tr.result_element(node))
    spatial = len(shape_of(x)) - 2
    kernel = spatial_pairs(kernel, spatial)
    return rlx.AvgPoolOp(
        x,
        kernel,
        spatial_pairs(stride, spatial, kernel),
        symmetric(spatial_pairs(padding, spatial)),
        bool(ceil_mode) or None,
        None if count_include_pad else False,
    ).result


@translates(aten._adaptive_avg_pool2d.default, aten.adaptive_avg_pool2d.default)
def adaptive_avg_pool(tr: Translator, node, x, output_size):
    """At a static size adaptive pooling is the avg_pool of kernel = stride
    = in / out per axis where out divides in (a global one the mean over
    the spatial axes); other sizes give windows of unequal sizes."""
    x = tr.value(x, tr.result_element(node))
    shape = shape_of(x)
    spatial = len(shape) - 2
    out = spatial_pairs(output_size, spatial)
    sizes = shape[2:]
    if tuple(out) == tuple(sizes):
        return x
    if all(o == 1 for o in out):
        axes = list(range(2, len(shape)))
        return rlx.ReduceMeanOp(x, axes, True).result
    if any(n % o for n, o in zip(sizes, out)):
        return uneven_average(tr, node, x, out)
    kernel = [n // o for n, o in zip(sizes, out)]
    return rlx.AvgPoolOp(x, kernel, kernel).result


def averaging_matrix(n: int, o: int) -> np.ndarray:
    """[o, n]: row i averages torch's adaptive window i, from ⌊i·n/o⌋ to
    ⌈(i+1)·n/o⌉."""
    matrix = np.zeros((o, n), np.float32)
    for i in range(o):
        start, end = (i * n) // o, -((-(i + 1) * n) // o)
        matrix[i, start:end] = 1.0 / (end - start)
    return matrix


def uneven_average(tr: Translator, node, x: SSAValue, out: Sequence[int]):
    """Adaptive pooling whose windows differ in size (7 from 10): separable,
    so a constant averaging matrix per axis, A_h · x · A_wᵀ."""
    shape = shape_of(x)
    element = element_type_of(x)
    if len(shape) == 4 and shape[2] != out[0]:
        rows = Const(
            torch.from_numpy(averaging_matrix(shape[2], out[0])), f"{node.name}.rows"
        )
        x = rlx.MatmulOp(tr.value(rows, element), x).result
    if shape[-1] != out[-1]:
        columns = averaging_matrix(shape[-1], out[-1])
        columns = Const(torch.from_numpy(columns), f"{node.name}.columns")
        x = rlx.MatmulOp(x, tr.value(columns, element), transpose_rhs=True).result
    return x

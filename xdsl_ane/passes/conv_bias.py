"""Canonicalizations of mil: a per-channel constant added to a conv's
result goes into the conv's `bias` input, one op less (a linear layer's bias
after the 1×1 conv it becomes in ANE form, a conv's bias that torch.export
kept apart); a matmul by a constant weight plus a constant bias is one
`linear` (a linear layer on windows or batches that did not become a conv:
Swin's window attention)."""

from __future__ import annotations

import numpy as np
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern
from xdsl.rewriter import InsertPoint

from xdsl_ane.dialects import mil
from xdsl_ane.dialects.dense import dense_to_numpy
from xdsl_ane.dialects.mil.builders import const_op
from xdsl_ane.dialects.typing import (
    bool_prop,
    element_type_of,
    ints_prop,
    shape_of,
    tensor,
)
from xdsl_ane.locations import copy_location


def channel_vector(const: mil.ConstOp, rank: int, channels: int) -> mil.ConstOp | None:
    """`const` as a bias [C] when it holds one value per channel of a
    [N, C, *spatial] tensor of `rank` ([C, 1, 1], [1, C, 1, 1], ...), else
    None: the reshaped inline value, or a view of the same weights-file
    tensor."""
    shape = shape_of(const.result)
    padded = (1,) * (rank - len(shape)) + tuple(shape)
    if (
        len(padded) != rank
        or padded[1] != channels
        or any(d != 1 for i, d in enumerate(padded) if i != 1)
    ):
        return None
    element = element_type_of(const.result)
    if const.val is not None:
        return const_op(dense_to_numpy(const.val).reshape(channels), element)
    assert const.weight is not None
    return mil.ConstOp.from_weight(
        const.weight.data,
        tensor((channels,), element),
        weight_shape=const.file_shape(),
        perm=ints_prop(const.properties, "perm"),
    )


class FoldBiasIntoConv(RewritePattern):
    """conv(x, W) + b = conv(x, W, bias = b) for a constant b [C_out] laid
    out along the channels, when the add is the conv's only use and adds
    nothing else (same result type); an inline bias already there is
    summed with b."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, mil.AddOp):
            return
        for conv_value, other in ((op.x, op.y), (op.y, op.x)):
            conv = conv_value.owner
            const = other.owner
            if (
                not isinstance(conv, mil.ConvOp | mil.ConvTransposeOp)
                or not isinstance(const, mil.ConstOp)
                or conv_value.type != op.result.type
                or len(list(conv_value.uses)) != 1
                or element_type_of(other) != element_type_of(conv.weight)
            ):
                continue
            shape = shape_of(conv_value)
            bias = channel_vector(const, len(shape), shape[1])
            if bias is None:
                continue
            new_ops: list[Operation] = [bias]
            if conv.bias is not None:
                summed = summed_bias(conv.bias, bias)
                if summed is None:
                    continue
                new_ops = [summed]
            new = type(conv).__new__(type(conv))
            new.init_inferred(  # type: ignore[attr-defined]
                [conv.operands[0], conv.weight, [new_ops[-1].results[0]]],
                dict(conv.properties),
            )
            copy_location(new, conv)
            rewriter.insert([*new_ops, new], InsertPoint.before(op))
            rewriter.replace(op, [], [new.results[0]])
            rewriter.erase(conv)
            return


def summed_bias(old: SSAValue, added: mil.ConstOp) -> mil.ConstOp | None:
    """old + added for two inline bias vectors; None otherwise."""
    owner = old.owner
    if not (
        isinstance(owner, mil.ConstOp)
        and owner.val is not None
        and added.val is not None
    ):
        return None
    total = dense_to_numpy(owner.val) + dense_to_numpy(added.val)
    return const_op(np.asarray(total), element_type_of(old))


def last_axis_vector(const: mil.ConstOp, rank: int, size: int) -> mil.ConstOp | None:
    """`const` as a vector [size] when it holds one value per position of the
    last axis of a tensor of `rank` ([size], [1, size], [1, 1, size], ...),
    else None: the reshaped inline value, or a view of the same weights-file
    tensor."""
    shape = tuple(shape_of(const.result))
    if len(shape) > rank or shape != (1,) * (len(shape) - 1) + (size,):
        return None
    element = element_type_of(const.result)
    if const.val is not None:
        return const_op(dense_to_numpy(const.val).reshape(size), element)
    assert const.weight is not None
    return mil.ConstOp.from_weight(
        const.weight.data,
        tensor((size,), element),
        weight_shape=const.file_shape(),
        perm=ints_prop(const.properties, "perm"),
    )


class FoldBiasIntoMatmul(RewritePattern):
    """matmul(x, W, transpose_y) + b = linear(x, W, b) = x·Wᵀ + b for a
    constant weight W [D_out, D_in] and a constant b [D_out] along the last
    axis, x of rank 1 to 3 (MIL's linear), when the add is the matmul's only
    use and adds nothing else (same result type)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, mil.AddOp):
            return
        for product_value, other in ((op.x, op.y), (op.y, op.x)):
            matmul = product_value.owner
            const = other.owner
            if (
                not isinstance(matmul, mil.MatmulOp)
                or not isinstance(const, mil.ConstOp)
                or not isinstance(matmul.y.owner, mil.ConstOp)
                or bool_prop(matmul.properties, "transpose_x")
                or not bool_prop(matmul.properties, "transpose_y")
                or len(shape_of(matmul.y)) != 2
                or not 1 <= len(shape_of(matmul.x)) <= 3
                or product_value.type != op.result.type
                or len(list(product_value.uses)) != 1
                or element_type_of(other) != element_type_of(matmul.y)
            ):
                continue
            shape = shape_of(product_value)
            bias = last_axis_vector(const, len(shape), shape[-1])
            if bias is None:
                continue
            linear = mil.LinearOp(matmul.x, matmul.y, bias.results[0])
            copy_location(linear, matmul)
            rewriter.insert([bias, linear], InsertPoint.before(op))
            rewriter.replace(op, [], [linear.results[0]])
            rewriter.erase(matmul)
            return

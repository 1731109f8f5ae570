"""Canonicalizations of mil that move transposes towards their uses through
the ops of a channels-last block, and fold chains of layout ops that keep the
element order, so that the layout changes of torch's channels-last code
cancel (ConvNeXt's `permute` → LayerNorm → Linear → GELU → Linear → scale →
`permute` back, DPT's tokens → image reassembly). Registered with the other
mil patterns by `canonicalization.py`.

| pattern | rewrite |
|---|---|
| `FoldOrderPreservingChain` | L_n(…L_1(x)) -> reshape(x), when the reshapes and transposes L_i keep x's row-major element order |
| `SinkTransposeThroughLayerNorm` | layer_norm(transpose(x, p), axes) -> transpose(layer_norm(x, p[axes]), p) |
| `ChannelsLastMatmulToConv` | matmul(transpose(x, p), W) with p moving axis 1 of a rank-4 x last -> transpose(conv(x, W as [Cout, Cin, 1, 1]), p) |
| `SinkTransposeThroughConstOperand` | f(transpose(a, p), c) -> transpose(f(a, c'), p), c a const re-laid out |
| `FoldTransposeIntoMatmul` | matmul(transpose(a), b) -> matmul(a, b, transpose_x), transpose(matmul(x, y)) -> matmul(y, x) with the flags negated (transposes of the last two axes) |

Each moves a transpose downwards (or removes layout ops) and fires only
where the transpose has one use, so no op is duplicated and the greedy driver
terminates; the transposes meet their inverses in `ComposeTransposes`, and
the biases that follow a conv fold into it (`FoldBiasIntoConv`); attention's
head transposes become matmul flags.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
from xdsl.ir import Operation, OpResult, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern

from xdsl_ane.dialects import mil
from xdsl_ane.dialects.dense import dense_to_numpy
from xdsl_ane.dialects.mil.builders import const_op
from xdsl_ane.dialects.mil.traits import Elementwise
from xdsl_ane.dialects.typing import (
    OpTypeError,
    bool_prop,
    element_type_of,
    float_prop,
    ints_prop,
    product,
    shape_of,
    tensor,
)
from xdsl_ane.locations import copy_location

MAX_CHAIN = 6
"""Most layout ops one chain folds."""

MAX_CHECKED_ELEMENTS = 1 << 22
"""Largest tensor whose chain is checked on an index array."""


def perm_of(op: mil.TransposeOp) -> tuple[int, ...]:
    perm = ints_prop(op.properties, "perm")
    assert perm is not None
    return tuple(a % len(perm) for a in perm)


def sole_transpose(value: SSAValue) -> mil.TransposeOp | None:
    """The transpose defining `value` when `value` has no other use."""
    op = value.owner if isinstance(value, OpResult) else None
    if isinstance(op, mil.TransposeOp) and value.has_one_use():
        return op
    return None


def relaid_const(
    const: mil.ConstOp, shape: Sequence[int], perm: Sequence[int]
) -> mil.ConstOp | None:
    """`const` padded to `shape`'s rank with leading ones and transposed by
    `perm`: the inline value transposed, or, where that only moves axes of
    size 1 (a per-channel vector), a view of the same weights-file tensor
    (a weight read by this op alone, so that its data is not stored twice);
    None otherwise."""
    value_shape = tuple(shape_of(const.result))
    if len(value_shape) > len(shape):
        return None
    padded = (1,) * (len(shape) - len(value_shape)) + value_shape
    target = tuple(padded[p] for p in perm)
    element = element_type_of(const.result)
    if const.val is not None:
        value = dense_to_numpy(const.val).reshape(padded)
        return const_op(np.ascontiguousarray(np.transpose(value, perm)), element)
    assert const.weight is not None
    moved = [p for p in perm if padded[p] != 1]
    if moved != sorted(moved) or not const.result.has_one_use():
        return None
    return mil.ConstOp.from_weight(
        const.weight.data,
        tensor(target, element),
        weight_shape=const.file_shape(),
        perm=ints_prop(const.properties, "perm"),
    )


def inverse(perm: Sequence[int]) -> tuple[int, ...]:
    return tuple(int(a) for a in np.argsort(perm))


# --- chains of layout ops --------------------------------------------------------


@functools.lru_cache(maxsize=4096)
def keeps_row_major_order(
    shape: tuple[int, ...], steps: tuple[tuple[str, tuple[int, ...]], ...]
) -> bool:
    """Whether reshapes and transposes (`steps`, first first: ("reshape",
    shape) or ("transpose", perm)) leave a tensor of `shape` in its own
    row-major element order, checked on an index array."""
    index = np.arange(product(shape), dtype=np.int64).reshape(shape)
    for kind, arg in steps:
        index = index.reshape(arg) if kind == "reshape" else np.transpose(index, arg)
    return bool(np.array_equal(index.ravel(), np.arange(index.size)))


class FoldOrderPreservingChain(RewritePattern):
    """L_n(…L_1(x)) = reshape(x) when the reshapes and transposes L_i
    together keep x's elements in row-major order: a sequence's ANE form
    [1, C, 1, H·W] read back as tokens [1, H·W, C], split into [1, H, W, C]
    and permuted to [1, C, H, W] is that form reshaped. Matched on L_n,
    through L_i each used by the next alone (they die with it)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not isinstance(op, mil.ReshapeOp | mil.TransposeOp):
            return
        result_shape = shape_of(op.results[0])
        if product(result_shape) > MAX_CHECKED_ELEMENTS:
            return
        steps: list[tuple[str, tuple[int, ...]]] = []
        current: Operation = op
        found: SSAValue | None = None
        while len(steps) < MAX_CHAIN:
            if isinstance(current, mil.ReshapeOp):
                steps.insert(0, ("reshape", tuple(shape_of(current.result))))
            else:
                assert isinstance(current, mil.TransposeOp)
                steps.insert(0, ("transpose", perm_of(current)))
            source = current.operands[0]
            if len(steps) >= 2 and keeps_row_major_order(
                tuple(shape_of(source)), tuple(steps)
            ):
                found = source
            owner = source.owner
            if not (
                isinstance(owner, mil.ReshapeOp | mil.TransposeOp)
                and source.has_one_use()
            ):
                break
            current = owner
        if found is None:
            return
        rewriter.replace(op, mil.ReshapeOp(found, result_shape))


# --- transposes through the ops of a channels-last block ---------------------------


class SinkTransposeThroughLayerNorm(RewritePattern):
    """layer_norm(transpose(x, p), axes) = transpose(layer_norm(x, p[axes]),
    p): the same statistics over the same elements, when the axes keep their
    order under p (gamma and beta unchanged). Matched on the transpose."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not isinstance(op, mil.TransposeOp) or not op.result.has_one_use():
            return
        norm = next(iter(op.result.uses)).operation
        if not isinstance(norm, mil.LayerNormOp) or norm.x is not op.result:
            return
        perm = perm_of(op)
        axes = ints_prop(norm.properties, "axes")
        if axes is None:
            return
        moved = [perm[a % len(perm)] for a in axes]
        if moved != sorted(moved) or len(set(moved)) != len(moved):
            return
        new = mil.LayerNormOp(
            op.x,
            norm.gamma,
            norm.beta,
            axes=moved,
            epsilon=float_prop(norm.properties, "epsilon"),
        )
        copy_location(new, norm)
        rewriter.replace(norm, [new, mil.TransposeOp(new.result, perm)])
        rewriter.erase(op)


class ChannelsLastMatmulToConv(RewritePattern):
    """matmul(transpose(x, p), W, transpose_y) for x [N, C, H, W] and a
    transpose that moves C last (p[0] = 0, p[3] = 1), W a constant
    [Cout, C]: each position's channels times Wᵀ is a 1×1 conv of x,
    transposed by the same p (the ANE's linear layer; ConvNeXt's pointwise
    MLP). Matched on the transpose; W a weight read here alone, or inline."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not isinstance(op, mil.TransposeOp) or not op.result.has_one_use():
            return
        matmul = next(iter(op.result.uses)).operation
        perm = perm_of(op)
        if (
            not isinstance(matmul, mil.MatmulOp)
            or matmul.x is not op.result
            or len(perm) != 4
            or perm[0] != 0
            or perm[3] != 1
            or bool_prop(matmul.properties, "transpose_x")
            or not bool_prop(matmul.properties, "transpose_y")
            or not isinstance(weight := matmul.y.owner, mil.ConstOp)
            or len(shape_of(matmul.y)) != 2
        ):
            return
        c_out, c_in = shape_of(matmul.y)
        # [Cout, C] padded to [1, 1, Cout, C], then [Cout, C, 1, 1]
        conv_weight = relaid_const(weight, (c_out, c_in, 1, 1), (2, 3, 0, 1))
        if conv_weight is None:
            return
        conv = mil.ConvOp(op.x, conv_weight.result)
        copy_location(conv, matmul)
        transposed = mil.TransposeOp(conv.results[0], perm)
        assert transposed.result.type == matmul.result.type
        rewriter.replace(matmul, [conv_weight, conv, transposed])
        rewriter.erase(op)


class SinkTransposeThroughConstOperand(RewritePattern):
    """f(transpose(a, p), c) = transpose(f(a, c'), p) for an `Elementwise` f
    of one transposed operand and constants c (c' = c padded to the rank and
    transposed by p's inverse; see `relaid_const`): a bias or a layer scale
    after a channels-last linear layer, moved with its transpose. The
    scalars `SinkLayoutThroughElementwise` moves alike."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not op.has_trait(Elementwise) or len(op.results) != 1:
            return
        transposes = [sole_transpose(v) for v in op.operands]
        if sum(t is not None for t in transposes) != 1:
            return
        transpose = next(t for t in transposes if t is not None)
        perm = perm_of(transpose)
        back = inverse(perm)
        result_shape = shape_of(op.results[0])
        inner_shape = tuple(result_shape[b] for b in back)
        new_ops: list[Operation] = []
        operands: list[SSAValue] = []
        for value, t in zip(op.operands, transposes):
            if t is not None:
                operands.append(t.x)
                continue
            if product(shape_of(value)) == 1:
                operands.append(value)
                continue
            const = value.owner
            if not isinstance(const, mil.ConstOp):
                return
            relaid = relaid_const(const, result_shape, back)
            if relaid is None:
                return
            new_ops.append(relaid)
            operands.append(relaid.result)
        try:
            inferred = type(op).infer_result_types(
                [v.type for v in operands], op.properties
            )
        except OpTypeError:
            return
        result_type = op.results[0].type
        inner_type = tensor(inner_shape, element_type_of(op.results[0]))
        if inferred != [inner_type]:
            return
        moved = type(op).create(
            operands=operands,
            result_types=[inner_type],
            properties=dict(op.properties),
            attributes=dict(op.attributes),
        )
        layout = mil.TransposeOp(moved.results[0], perm)
        assert layout.result.type == result_type
        rewriter.replace(op, [*new_ops, moved, layout])
        rewriter.erase(transpose)


def swaps_last_two(perm: Sequence[int]) -> bool:
    rank = len(perm)
    return rank >= 2 and tuple(perm) == (*range(rank - 2), rank - 1, rank - 2)


class FoldTransposeIntoMatmul(RewritePattern):
    """A transpose of the last two axes next to a matmul is its transpose
    flag: matmul(transpose(a), b, tx, ty) = matmul(a, b, ¬tx, ty) (and for
    b), and transpose(matmul(x, y, tx, ty)) = (x·y)ᵀ = matmul(y, x, ¬ty,
    ¬tx) (batch axes broadcast alike either way): attention's heads read
    from the ANE form [1, H, D, S] without being transposed to [1, H, S, D]
    and back. Matched on the transpose, used by the matmul alone or using a
    matmul used by it alone."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not isinstance(op, mil.TransposeOp) or not swaps_last_two(perm_of(op)):
            return
        producer = op.x.owner
        if isinstance(producer, mil.MatmulOp) and op.x.has_one_use():
            x, y = producer.x, producer.y
            if len(shape_of(x)) < 2 or len(shape_of(y)) < 2:
                return
            flags = self.flags(producer)
            new = mil.MatmulOp(y, x, not flags[1], not flags[0])
            copy_location(new, producer)
            rewriter.replace(op, new)
            rewriter.erase(producer)
            return
        if not op.result.has_one_use():
            return
        matmul = next(iter(op.result.uses)).operation
        if not isinstance(matmul, mil.MatmulOp) or matmul.x is matmul.y:
            return
        if len(shape_of(matmul.x)) < 2 or len(shape_of(matmul.y)) < 2:
            return
        tx, ty = self.flags(matmul)
        if matmul.x is op.result:
            new = mil.MatmulOp(op.x, matmul.y, not tx, ty)
        else:
            new = mil.MatmulOp(matmul.x, op.x, tx, not ty)
        copy_location(new, matmul)
        rewriter.replace(matmul, new)
        rewriter.erase(op)

    @staticmethod
    def flags(matmul: mil.MatmulOp) -> tuple[bool, bool]:
        return (
            bool(bool_prop(matmul.properties, "transpose_x")),
            bool(bool_prop(matmul.properties, "transpose_y")),
        )

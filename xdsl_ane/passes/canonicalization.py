"""Canonicalization patterns of the mil dialect, run by xDSL's stock
`canonicalize` pass. Each mil op family has a canonicalization trait in
`xdsl_ane.dialects.mil`; this module registers the trait's patterns when it
is imported (`xdsl_ane.passes` imports it), at the end below.

| pattern                        | rewrite                                              |
|--------------------------------|------------------------------------------------------|
| `ComposeTransposes`            | transpose(transpose(x, p), q) -> transpose(x, p∘q), or x |
| `RemoveIdentityTranspose`      | transpose(x, identity) -> x                          |
| `ComposeReshapes`              | reshape(reshape(x)) -> reshape(x)                    |
| `RemoveIdentityReshape`        | reshape(x) to x's own shape -> x                     |
| `UnitTransposeToReshape`       | transpose moving only axes of size 1, next to a reshape -> reshape |
| `MergeUnitReshapesIntoTranspose` | U(transpose(x)), U a reshape adding or dropping axes of size 1 -> one transpose |
| `SinkLayoutThroughSlice`       | slice(L(x)) -> L(slice(x)), L a transpose or a U     |
| `SinkLayoutThroughElementwise` | f(L(a), L(b), scalar) -> L(f(a, b, scalar)), L one transpose or reshape |
| `FoldReshapeOfWeight`          | reshape(weight const) -> weight const with that view |
| `FoldTransposeOfWeight`        | transpose(weight const viewed by a pure transpose) -> weight const |
| `ConcatInSourceView`           | concat(reshape(a), ...) appending flat data -> reshape(concat(a, ...)) in the sources' view |
| `DropEmptyConcatOperands`      | concat(a, empty, b) -> concat(a, b), concat(a, empty) -> a |
| `FoldBiasIntoConv` (conv_bias.py) | conv(x, W) + b, b a const per channel -> conv(x, W, bias=b) |
| `FoldBiasIntoMatmul` (conv_bias.py) | matmul(x, W const, transpose_y) + b const [D_out] -> linear(x, W, b), x of rank ≤ 3 |
| `RemoveMultiplyByOne`          | x · 1, 1 · x, x / 1 -> x (x of the result's type)    |
| `FoldOrderPreservingChain`, `SinkTransposeThroughLayerNorm`, `ChannelsLastMatmulToConv`, `SinkTransposeThroughConstOperand`, `FoldTransposeIntoMatmul` (layout_sinking.py) | layout chains that keep the element order -> one reshape; transposes moved down through layer_norm, a channels-last matmul by a weight (-> 1×1 conv) and elementwise ops with consts; transposes of a matmul's last two axes -> its flags |

Besides the patterns, `canonicalize` folds every mil op of inline consts
into inline consts through xDSL's folding (`fold_constants`, registered as
the dialect's `MilFolder`; the dialect materializes the consts).

Layout ops only ever move towards the uses (sinking) or merge (composing,
which removes ops), so the patterns cannot undo each other and the greedy
driver terminates.
Unused ops are erased by the pass itself: every mil op is `Pure`.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.interpreter import Interpreter
from xdsl.ir import Attribute, Operation, OpResult, SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.utils.exceptions import InterpretationError as XdslInterpretationError

from xdsl_ane.dialects import mil
from xdsl_ane.dialects.dense import dense_from_numpy, dense_to_numpy
from xdsl_ane.dialects.mil.base import (
    register_canonicalization,
    register_constant_folder,
)
from xdsl_ane.dialects.mil.elementwise import (
    ElementwiseCanonicalization,
    EpsilonCanonicalization,
)
from xdsl_ane.dialects.mil.shape import (
    ConcatCanonicalization,
    ReshapeCanonicalization,
    TransposeCanonicalization,
)
from xdsl_ane.dialects.mil.traits import CopiesElements, Elementwise
from xdsl_ane.dialects.typing import (
    OpTypeError,
    bool_prop,
    float_prop,
    int_prop,
    ints_prop,
    product,
    shape_of,
    tensor,
)
from xdsl_ane.interpreter.core import InterpretationError
from xdsl_ane.interpreter.mil import MilFunctions
from xdsl_ane.passes.conv_bias import FoldBiasIntoConv, FoldBiasIntoMatmul
from xdsl_ane.passes.layout_sinking import (
    ChannelsLastMatmulToConv,
    FoldOrderPreservingChain,
    FoldTransposeIntoMatmul,
    SinkTransposeThroughConstOperand,
    SinkTransposeThroughLayerNorm,
)

Shape = tuple[int, ...]

MAX_FOLDED_ELEMENTS = 1024
"""Largest result (in elements) a computing op is folded into."""

MAX_FOLDED_LAYOUT_ELEMENTS = 65536
"""Largest result an op that only copies elements (`CopiesElements`: a
layout op or a cast) of consts is folded into: re-laying out a mask or table
costs nothing at compile time and saves an op at run time."""


def normalized_perm(op: mil.TransposeOp) -> tuple[int, ...]:
    """The op's perm with negative axes mapped into [0, rank)."""
    perm = ints_prop(op.properties, "perm")
    assert perm is not None
    return tuple(a % len(perm) for a in perm)


def compose_perms(inner: Sequence[int], outer: Sequence[int]) -> tuple[int, ...]:
    """The single perm of transpose(transpose(x, inner), outer): result axis i
    is the inner result's axis outer[i], which is x's axis inner[outer[i]]."""
    return tuple(inner[a] for a in outer)


def is_identity(perm: Sequence[int]) -> bool:
    return tuple(perm) == tuple(range(len(perm)))


def defining_op(value: SSAValue) -> Operation | None:
    return value.op if isinstance(value, OpResult) else None


def inline_const(value: SSAValue) -> mil.ConstOp | None:
    """The `mil.const val` defining `value` (not a weight const: its data is
    not in the IR)."""
    op = defining_op(value)
    if isinstance(op, mil.ConstOp) and op.val is not None:
        return op
    return None


def sole_weight_const(value: SSAValue) -> mil.ConstOp | None:
    """The `mil.const weight` defining `value` when this is its only use:
    re-viewing a shared weight would store its data twice."""
    op = defining_op(value)
    if isinstance(op, mil.ConstOp) and op.weight is not None and value.has_one_use():
        return op
    return None


# --- transpose and reshape chains --------------------------------------------


class ComposeTransposes(RewritePattern):
    """transpose(transpose(x, p), q) = transpose(x, r), r[i] = p[q[i]];
    x itself when r is the identity."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: mil.TransposeOp, rewriter: PatternRewriter, /):
        inner = defining_op(op.x)
        if not isinstance(inner, mil.TransposeOp):
            return
        perm = compose_perms(normalized_perm(inner), normalized_perm(op))
        if is_identity(perm):
            rewriter.replace(op, (), (inner.x,))
        else:
            rewriter.replace(op, mil.TransposeOp(inner.x, perm))


class RemoveIdentityTranspose(RewritePattern):
    """transpose(x, [0, 1, ..., n-1]) = x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: mil.TransposeOp, rewriter: PatternRewriter, /):
        if is_identity(normalized_perm(op)):
            rewriter.replace(op, (), (op.x,))


class ComposeReshapes(RewritePattern):
    """reshape(reshape(x, s), t) = reshape(x, t): both keep the row-major
    element order. The new shape is the resolved result shape, since a 0 or
    -1 in `t` refers to the inner result's shape."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: mil.ReshapeOp, rewriter: PatternRewriter, /):
        inner = defining_op(op.x)
        if not isinstance(inner, mil.ReshapeOp):
            return
        if shape_of(inner.x) == shape_of(op.result):
            rewriter.replace(op, (), (inner.x,))
        else:
            rewriter.replace(op, mil.ReshapeOp(inner.x, shape_of(op.result)))


class RemoveIdentityReshape(RewritePattern):
    """reshape(x) = x when the result has x's shape."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: mil.ReshapeOp, rewriter: PatternRewriter, /):
        if op.x.type == op.result.type:
            rewriter.replace(op, (), (op.x,))


def non_unit(shape: Sequence[int]) -> list[int]:
    """The axes of `shape` of size other than 1."""
    return [i for i, d in enumerate(shape) if d != 1]


def differ_in_unit_axes(a: Sequence[int], b: Sequence[int]) -> bool:
    """Whether a reshape between `a` and `b` only adds or drops axes of size 1:
    the element order and the other axes are then the same (a pure view).
    Never for an empty tensor (a reshape's 0 keeps the input's size)."""
    if 0 in a or 0 in b:
        return False
    return [a[i] for i in non_unit(a)] == [b[i] for i in non_unit(b)]


def unit_moving_perm(
    transposed: Sequence[int],
    perm: Sequence[int],
    source: Sequence[int],
    out: Sequence[int],
) -> tuple[int, ...]:
    """The perm p with transpose(s, p) = reshape(transpose(t, perm), out), for
    a tensor t of shape `transposed`, s = reshape(t, source) and `out` that
    differ from t's and the transpose's shapes in axes of size 1 only (s of
    out's rank): the axes of size other than 1 keep their order through the
    reshapes, so out's k-th such axis is s's one that `perm` puts there; the
    axes of size 1 are taken in order."""
    index = {axis: k for k, axis in enumerate(non_unit(transposed))}
    order = [index[a] for a in perm if transposed[a] != 1]
    source_axes = non_unit(source)
    source_units = [i for i, d in enumerate(source) if d == 1]
    result = [0] * len(out)
    for position, k in zip(non_unit(out), order):
        result[position] = source_axes[k]
    for position, axis in zip([i for i, d in enumerate(out) if d == 1], source_units):
        result[position] = axis
    return tuple(result)


class UnitTransposeToReshape(RewritePattern):
    """A transpose that moves only axes of size 1 (the others keep their
    order) keeps the element order: x itself when the shape is unchanged;
    next to a reshape (reading one, or read only by one) a reshape, which
    composes with that one. Elsewhere it stays a transpose, to sink with
    the transposes of the same perm."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: mil.TransposeOp, rewriter: PatternRewriter, /):
        perm = normalized_perm(op)
        shape = shape_of(op.x)
        moved = [a for a in perm if shape[a] != 1]
        if is_identity(perm) or 0 in shape or moved != sorted(moved):
            return
        if op.x.type == op.result.type:
            rewriter.replace(op, (), (op.x,))
            return
        uses = list(op.result.uses)
        if isinstance(defining_op(op.x), mil.ReshapeOp) or (
            len(uses) == 1 and isinstance(uses[0].operation, mil.ReshapeOp)
        ):
            rewriter.replace(op, mil.ReshapeOp(op.x, shape_of(op.result)))


class MergeUnitReshapesIntoTranspose(RewritePattern):
    """reshape(transpose(y, q), out) for a reshape that only adds or drops
    axes of size 1, changing the rank (the layout changes `mil-ane-layout`
    puts around a rank-3 transpose: [1, C, 1, S] -> [1, C, S] -> [1, S, C]
    -> [1, S, 1, C]) after a reshape y = reshape(z), is one transpose in
    out's rank: of z when y differs from z in axes of size 1 only (two ops
    less), else of a reshape of z replacing y's reshape, which must then
    have no other use (one op less). The transpose must have no other use. A reshape that keeps the rank (one
    moving an axis of size 1) is left alone: programs already in ANE form
    keep the shapes they have."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: mil.ReshapeOp, rewriter: PatternRewriter, /):
        transpose = defining_op(op.x)
        out = shape_of(op.result)
        if (
            not isinstance(transpose, mil.TransposeOp)
            or not transpose.result.has_one_use()
            or len(shape_of(op.x)) == len(out)
            or not differ_in_unit_axes(shape_of(op.x), out)
        ):
            return
        y = transpose.x
        inner = defining_op(y)
        new_ops: list[Operation] = []
        if (
            isinstance(inner, mil.ReshapeOp)
            and len(shape_of(inner.x)) == len(out)
            and differ_in_unit_axes(shape_of(inner.x), shape_of(y))
        ):
            source = inner.x
        elif isinstance(inner, mil.ReshapeOp) and y.has_one_use():
            kept = [shape_of(y)[i] for i in non_unit(shape_of(y))]
            reshape = mil.ReshapeOp(inner.x, [1] * (len(out) - len(kept)) + kept)
            new_ops.append(reshape)
            source = reshape.result
        else:
            return
        perm = unit_moving_perm(
            shape_of(y), normalized_perm(transpose), shape_of(source), out
        )
        if is_identity(perm):
            assert shape_of(source) == out
            rewriter.replace(op, new_ops, (source,))
        else:
            rewriter.replace(op, [*new_ops, mil.TransposeOp(source, perm)])


class SinkLayoutThroughSlice(RewritePattern):
    """slice_by_size(transpose(y, q), b, s) = transpose(slice_by_size(y, b',
    s'), q) with b'[q[i]] = b[i] (and s' likewise), and slice_by_size(U(y))
    = U'(slice_by_size(y)) for a reshape U that only adds or drops axes of
    size 1 (the slice then keeps y's axes of size 1 whole). Either way the
    layout op moves towards the uses, where it may meet its inverse (the
    first token of a sequence taken in ANE form: a pooler's input). Only
    when the slice is the layout op's one use; matched on the layout op
    (a slice has no canonicalization of its own)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not isinstance(op, mil.TransposeOp | mil.ReshapeOp):
            return
        result = op.results[0]
        if not result.has_one_use():
            return
        user = next(iter(result.uses)).operation
        if not isinstance(user, mil.SliceBySizeOp):
            return
        begin = ints_prop(user.properties, "begin")
        size = ints_prop(user.properties, "size")
        assert begin is not None and size is not None
        source = op.operands[0]
        source_shape = shape_of(source)
        if 0 in source_shape:
            return
        if isinstance(op, mil.TransposeOp):
            perm = normalized_perm(op)
            new_begin, new_size = [0] * len(perm), [0] * len(perm)
            for i, axis in enumerate(perm):
                new_begin[axis], new_size[axis] = begin[i], size[i]
        else:
            if not differ_in_unit_axes(source_shape, shape_of(result)):
                return
            new_begin, new_size = [0] * len(source_shape), list(source_shape)
            for axis, position in zip(
                non_unit(source_shape), non_unit(shape_of(result))
            ):
                new_begin[axis], new_size[axis] = begin[position], size[position]
        sliced = mil.SliceBySizeOp(source, new_begin, new_size)
        if isinstance(op, mil.TransposeOp):
            moved: Operation = mil.TransposeOp(sliced.result, normalized_perm(op))
        else:
            moved = mil.ReshapeOp(sliced.result, shape_of(user.result))
        assert moved.results[0].type == user.result.type
        rewriter.replace(user, [sliced, moved])
        rewriter.erase(op)


# --- layout ops across elementwise ops -----------------------------------------


LayoutKey = tuple[object, ...]


def layout_key(value: SSAValue) -> LayoutKey | None:
    """What layout op defines `value`: ("transpose", perm) or ("reshape",
    source shape, target shape); two values with one key went through the
    same re-layout."""
    op = defining_op(value)
    if isinstance(op, mil.TransposeOp):
        return ("transpose", normalized_perm(op))
    if isinstance(op, mil.ReshapeOp):
        return ("reshape", shape_of(op.x), shape_of(op.result))
    return None


def before_layout(key: LayoutKey, shape: Shape) -> Shape | None:
    """The shape that the layout `key` maps to `shape`, if any."""
    if key[0] == "transpose":
        perm = key[1]
        assert isinstance(perm, tuple)
        if len(perm) != len(shape):
            return None
        source = [0] * len(shape)
        for i, p in enumerate(perm):
            source[p] = shape[i]
        return tuple(source)
    _, source, target = key
    assert isinstance(source, tuple)
    return source if shape == target else None


class SinkLayoutThroughElementwise(RewritePattern):
    """f(L(a), L(b), s) = L(f(a, b, s)) for an `Elementwise` f (unary,
    binary, comparison, select, cast), one layout op L (a transpose with one
    perm, or a reshape from one source shape to one target shape) and
    scalar-like operands s (one element, broadcasting the same before and
    after L).

    Moving L below f lets it meet, and cancel with, an inverse layout op
    further down (ComposeTransposes, ComposeReshapes). It fires only when f
    is the only user of each L, so no layout op is duplicated, and it only
    moves layout ops downwards, so it cannot loop.
    """

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not op.has_trait(Elementwise):
            return
        keys = [layout_key(v) for v in op.operands]
        # The layout of the first operand with more than one element decides;
        # if every operand has one element, the first layout op's.
        sized = [k for v, k in zip(op.operands, keys) if product(shape_of(v)) > 1]
        key = sized[0] if sized else next((k for k in keys if k is not None), None)
        if key is None:
            return
        operands: list[SSAValue] = []
        for value, k in zip(op.operands, keys):
            if k == key:
                layout = defining_op(value)
                assert layout is not None
                if any(use.operation is not op for use in value.uses):
                    return
                operands.append(layout.operands[0])
            elif product(shape_of(value)) == 1:
                operands.append(value)
            else:
                return
        result_type = op.results[0].type
        assert isinstance(result_type, TensorType)
        inner_shape = before_layout(key, result_type.get_shape())
        if inner_shape is None:
            return
        inner_type = tensor(inner_shape, result_type.element_type)
        # The moved op must type-check with the result L maps back: this is
        # where a scalar of too high a rank, or a select whose cond no longer
        # broadcasts, is rejected.
        try:
            inferred = type(op).infer_result_types(
                [v.type for v in operands], op.properties
            )
        except OpTypeError:
            return
        if inferred != [inner_type]:
            return
        moved = type(op).create(
            operands=operands,
            result_types=[inner_type],
            properties=dict(op.properties),
            attributes=dict(op.attributes),
        )
        if key[0] == "transpose":
            perm = key[1]
            assert isinstance(perm, tuple)
            layout: Operation = mil.TransposeOp(moved.results[0], perm)
        else:
            layout = mil.ReshapeOp(moved.results[0], result_type.get_shape())
        assert layout.results[0].type == result_type
        rewriter.replace(op, (moved, layout))


# --- concatenation of re-laid-out values ---------------------------------------


MAX_VIEW_RANK = 4
"""Rank of the views a concatenation is moved into (the ANE's rank)."""


def strip_leading_ones(shape: Shape) -> Shape:
    i = 0
    while i < len(shape) - 1 and shape[i] == 1:
        i += 1
    return shape[i:]


def appends_data(op: mil.ConcatOp) -> int | None:
    """The (normalized) axis of a concat that only appends its operands'
    row-major data (every result dimension before the axis is 1, no
    interleave), else None."""
    shape = shape_of(op.result)
    axis = int_prop(op.properties, "axis")
    if axis is None or not shape or bool_prop(op.properties, "interleave"):
        return None
    axis %= len(shape)
    return axis if all(d == 1 for d in shape[:axis]) else None


def reshape_to(value: SSAValue, shape: Shape, before: Operation) -> SSAValue | None:
    """`value` itself when it has `shape`, or an existing reshape of it to
    `shape` defined before `before`; None when a new one is needed."""
    if shape_of(value) == shape:
        return value
    for use in value.uses:
        user = use.operation
        if (
            isinstance(user, mil.ReshapeOp)
            and shape_of(user.result) == shape
            and user.is_before_in_block(before)
        ):
            return user.result
    return None


class ConcatInSourceView(RewritePattern):
    """concat(L1(a1), ..., Ln(an)) = reshape(concat(v1, ..., vn)) for a
    concat that only appends row-major data (all result dimensions before
    its axis are 1), where the Li are reshapes and each vi is a view
    [1, .., 1, ni, *T] of ai for one trailing shape T: ai itself, an
    existing reshape of it, or a new one. Such a concat is the
    concatenation of flat buffers, whatever view of each it is given, so
    the values are joined in the shape they were computed in — the heads
    [1, H, Dh, S] of an attention kernel's results rather than their
    [1, H·Dh, 1, S] forms — and one reshape gives the concat's own shape.
    It fires only when it removes more reshapes than it adds (so it cannot
    loop); T is taken from the sources' shapes, whichever saves most."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: mil.ConcatOp, rewriter: PatternRewriter, /):
        if appends_data(op) is None or len(op.values) < 2:
            return
        sources: list[SSAValue] = []
        removable: list[bool] = []
        for value in op.values:
            layout = defining_op(value)
            if isinstance(layout, mil.ReshapeOp):
                sources.append(layout.x)
                removable.append(all(use.operation is op for use in value.uses))
            else:
                sources.append(value)
                removable.append(False)
        best: tuple[int, int, list[Shape]] | None = None
        for tail in self.candidate_tails(sources):
            size = product(tail)
            if any(product(shape_of(v)) % size for v in sources):
                continue
            views = [
                (1,) * (MAX_VIEW_RANK - 1 - len(tail))
                + (product(shape_of(v)) // size, *tail)
                for v in sources
            ]
            reused = [reshape_to(v, t, op) for v, t in zip(sources, views)]
            added = sum(r is None for r in reused)
            # A reshape operand is removed unless it is itself the view kept.
            removed = sum(
                drop and r is not value
                for drop, r, value in zip(removable, reused, op.values)
            )
            saved = removed - added - 1
            if saved > 0 and (best is None or saved > best[0]):
                best = (saved, MAX_VIEW_RANK - 1 - len(tail), views)
        if best is None:
            return
        _, axis, chosen = best
        new_ops: list[Operation] = []
        operands: list[SSAValue] = []
        for value, view in zip(sources, chosen):
            existing = reshape_to(value, view, op)
            if existing is None:
                new_ops.append(reshape := mil.ReshapeOp(value, view))
                existing = reshape.result
            operands.append(existing)
        joined = mil.ConcatOp(operands, axis)
        new_ops += [joined, mil.ReshapeOp(joined.result, shape_of(op.result))]
        rewriter.replace(op, new_ops)

    @staticmethod
    def candidate_tails(sources: Sequence[SSAValue]) -> list[Shape]:
        """Trailing shapes T (rank < MAX_VIEW_RANK) of the sources."""
        tails: list[Shape] = []
        for value in sources:
            shape = strip_leading_ones(shape_of(value))
            for start in range(1, len(shape)):
                tail = tuple(shape[start:])
                if len(tail) < MAX_VIEW_RANK and tail not in tails:
                    tails.append(tail)
        return tails


class DropEmptyConcatOperands(RewritePattern):
    """concat(a, e, b) = concat(a, b) for an operand e of size 0 along the
    axis, and concat(a, e) = a. Core ML has no empty tensors (coremltools'
    torch frontend drops them from a concat for that reason); no mil op
    makes one from non-empty operands, but an rlx or mil program may hold an
    empty constant or weight, which this leaves unused. A concat whose
    result is itself empty stays (nothing can replace it)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: mil.ConcatOp, rewriter: PatternRewriter, /):
        shape = shape_of(op.result)
        if not shape or 0 in shape:
            return
        axis = int_prop(op.properties, "axis")
        assert axis is not None
        kept = [v for v in op.values if shape_of(v)[axis % len(shape)] != 0]
        if len(kept) == len(op.values):
            return
        if len(kept) == 1:
            rewriter.replace(op, (), (kept[0],))
            return
        # (not interleaving: an interleave's operands share one shape, so
        # one empty operand would have made the result empty)
        rewriter.replace(op, mil.ConcatOp(kept, axis))


# --- weight consts -------------------------------------------------------------


def weight_perm(const: mil.ConstOp) -> tuple[int, ...]:
    """The perm of a weight const's view (the identity when absent)."""
    perm = ints_prop(const.properties, "perm")
    return tuple(range(len(const.file_shape()))) if perm is None else perm


def reviewed_weight(
    const: mil.ConstOp, result_type: Attribute, perm: Sequence[int]
) -> mil.ConstOp:
    """`const`'s weight seen through `perm` and reshaped to `result_type`."""
    assert isinstance(result_type, TensorType) and const.weight is not None
    new = mil.ConstOp.from_weight(
        const.weight.data, result_type, weight_shape=const.file_shape(), perm=perm
    )
    new.attributes.update(const.attributes)
    return new


class FoldReshapeOfWeight(RewritePattern):
    """reshape(W, t) for a weight const W = reshape(transpose(file, perm), r)
    is reshape(transpose(file, perm), t): the same weight with result shape
    t. Only for a single-use W, so the weight is not stored twice."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: mil.ReshapeOp, rewriter: PatternRewriter, /):
        if (const := sole_weight_const(op.x)) is None:
            return
        rewriter.replace(op, reviewed_weight(const, op.result.type, weight_perm(const)))


class FoldTransposeOfWeight(RewritePattern):
    """transpose(W, q) for a weight const W = transpose(file, p) (a view
    without a reshape: W's shape is the file's shape permuted by p) is
    transpose(file, r), r[i] = p[q[i]]. A view that reshapes is left alone:
    a transpose does not commute with it. Only for a single-use W."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: mil.TransposeOp, rewriter: PatternRewriter, /):
        if (const := sole_weight_const(op.x)) is None:
            return
        perm = weight_perm(const)
        file_shape = const.file_shape()
        permuted = tuple(file_shape[p] for p in perm)
        view = shape_of(const.result)
        if view == permuted:
            composed = compose_perms(perm, normalized_perm(op))
        elif differ_in_unit_axes(permuted, view):
            composed = unit_view_perm(perm, file_shape, view, normalized_perm(op))
        else:
            return
        rewriter.replace(op, reviewed_weight(const, op.result.type, composed))


def unit_view_perm(
    perm: Sequence[int],
    file_shape: Sequence[int],
    view: Sequence[int],
    q: Sequence[int],
) -> tuple[int, ...]:
    """The perm of the file's tensor for transpose(W, q), W = reshape(
    transpose(file, perm), view) with a reshape that only adds or drops axes
    of size 1: the file's axes of size other than 1 in the order the
    transpose puts them, then its axes of size 1 (the identity when that
    order is the file's own)."""
    permuted = [file_shape[p] for p in perm]
    file_axes = [perm[i] for i in non_unit(permuted)]
    index = {axis: k for k, axis in enumerate(non_unit(view))}
    order = [file_axes[index[a]] for a in q if view[a] != 1]
    if order == sorted(order):
        return tuple(range(len(file_shape)))
    return (*order, *(a for a, d in enumerate(file_shape) if d == 1))


# --- constant folding --------------------------------------------------------------


@cache
def folding_interpreter() -> Interpreter:
    """The one interpreter that evaluates folded ops (the interpreter's
    implementations are the one definition of mil semantics)."""
    interpreter = Interpreter(ModuleOp([]))
    interpreter.register_implementations(MilFunctions())
    return interpreter


def evaluate(op: Operation, operands: Sequence[np.ndarray]) -> tuple[np.ndarray, ...]:
    """The op's results on the given operand values."""
    return tuple(folding_interpreter().run_op(op, tuple(operands)))


def fold_constants(op: Operation) -> list[Attribute] | None:
    """The values of op(c1, ..., cn) for inline consts ci (never weight
    consts: their data is not in the IR), evaluated at compile time, as the
    dense attributes `canonicalize` materializes as consts (the mil
    dialect's `MilFolder`); a const is its own value. Computing ops fold
    into results of at most MAX_FOLDED_ELEMENTS elements, ops that only copy
    elements (`CopiesElements`: reshape, transpose, expand_dims, squeeze,
    slice_by_size, cast, tile, concat, split) into results of at most
    MAX_FOLDED_LAYOUT_ELEMENTS.
    `constexpr_*` ops stay: they are already MIL consts, stored compressed.
    An op the interpreter rejects (an integer division by zero, an index
    out of range) is left for run time to report."""
    if isinstance(op, mil.ConstOp):
        return None if op.val is None else [op.val]
    if op.name.startswith("mil.constexpr_") or not op.operands:
        return None
    consts = [inline_const(v) for v in op.operands]
    if any(c is None for c in consts):
        return None
    limit = (
        MAX_FOLDED_LAYOUT_ELEMENTS
        if op.has_trait(CopiesElements)
        else MAX_FOLDED_ELEMENTS
    )
    if sum(product(shape_of(r)) for r in op.results) > limit:
        return None
    values = []
    for c in consts:
        assert c is not None and c.val is not None
        values.append(dense_to_numpy(c.val))
    try:
        results = evaluate(op, values)
    except (InterpretationError, XdslInterpretationError):
        return None
    folded: list[Attribute] = []
    for value, result in zip(results, op.results):
        t = result.type
        assert isinstance(t, TensorType)
        folded.append(dense_from_numpy(value, t.element_type))
    return folded


class RemoveMultiplyByOne(RewritePattern):
    """x · 1 = 1 · x = x / 1 = x for an inline const of ones, when x has the
    result's type (the one broadcasts nothing): exact in every dtype (an
    attention lowered with scale 1, its queries scaled before)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, mil.MulOp):
            pairs = ((op.x, op.y), (op.y, op.x))
        elif isinstance(op, mil.RealDivOp):
            pairs = ((op.x, op.y),)
        else:
            return
        for kept, other in pairs:
            const = inline_const(other)
            if const is None or kept.type != op.result.type:
                continue
            if bool(np.all(dense_to_numpy(const.val) == 1)):
                rewriter.replace(op, (), (kept,))
                return


class FoldAddIntoEpsilon(RewritePattern):
    """log / rsqrt / inverse of `x + c` for a one-element const c: MIL adds
    its epsilon to the operand, so f(x + c, ε) = f(x, c + ε) — one op less
    (an RMSNorm written as rsqrt(mean + eps) becomes one rsqrt)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, mil.UnaryWithEpsilonOp):
            return
        add = defining_op(op.x)
        if not isinstance(add, mil.AddOp) or len(list(add.result.uses)) != 1:
            return
        for x, c in ((add.x, add.y), (add.y, add.x)):
            const = inline_const(c)
            if const is None or x.type != op.x.type:
                continue
            value = dense_to_numpy(const.val)
            if value.size != 1:
                continue
            epsilon = float_prop(op.properties, "epsilon", op.input_default("epsilon"))
            new = type(op)(x, epsilon=float(value.reshape(())) + epsilon)
            rewriter.replace(op, new)
            return


def knowing_mil(ctx: Context) -> Context:
    """`ctx`, with the mil dialect loaded if it lacks it (xDSL's folding
    materializes folded values through the dialect the context holds) and
    its canonicalization patterns registered."""
    register()
    if ctx.get_optional_dialect(mil.MIL.name) is None:
        ctx.load_dialect(mil.MIL)
    return ctx


def register() -> None:
    """Registers the patterns of each mil canonicalization trait and the
    constant folder with the dialect (`dialects/mil/base.py`), which cannot
    import them itself: they fold with the interpreter, a layer above it.
    Called by whatever hands out a context for the mil ops — `knowing_mil`,
    `passes.driver.make_context`, the universe's `mil` entry — not as a
    side effect of an import; registering again changes nothing."""
    register_constant_folder(fold_constants)
    register_canonicalization(
        ElementwiseCanonicalization,
        RemoveMultiplyByOne(),
        SinkLayoutThroughElementwise(),
        FoldBiasIntoConv(),
        FoldBiasIntoMatmul(),
        SinkTransposeThroughConstOperand(),
    )
    register_canonicalization(
        EpsilonCanonicalization, SinkLayoutThroughElementwise(), FoldAddIntoEpsilon()
    )
    register_canonicalization(
        ReshapeCanonicalization,
        RemoveIdentityReshape(),
        ComposeReshapes(),
        FoldReshapeOfWeight(),
        MergeUnitReshapesIntoTranspose(),
        SinkLayoutThroughSlice(),
        FoldOrderPreservingChain(),
    )
    register_canonicalization(
        TransposeCanonicalization,
        RemoveIdentityTranspose(),
        UnitTransposeToReshape(),
        ComposeTransposes(),
        FoldTransposeOfWeight(),
        SinkLayoutThroughSlice(),
        FoldOrderPreservingChain(),
        SinkTransposeThroughLayerNorm(),
        ChannelsLastMatmulToConv(),
        FoldTransposeIntoMatmul(),
    )
    register_canonicalization(
        ConcatCanonicalization, DropEmptyConcatOperands(), ConcatInSourceView()
    )

"""ATen's writes at constant positions to rlx: `copy` into a view,
`slice_scatter`, `select_scatter`, `index_put` and `scatter` /
`scatter_add` with constant indices (what `y[:, 1:3] = v`, `y[mask] = 0`
and `y[..., idx] += v` become after torch.export).

Every write is reduced to `placed`: the slices of x along one axis at
constant positions replaced by (or, accumulating, increased by) the slices
of a source. Writes of whole slices along one axis are that axis; writes of
single elements are positions along x flattened. A source that is one
value everywhere is a `where` of a constant mask (one op); a few runs of
positions are narrows joined by a concat; many are a matmul by a constant
0/1 placement matrix and a `where` (no gather: MIL's gather leaves the
ANE).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from xdsl.dialects.builtin import f32, i1
from xdsl.ir import SSAValue

from xdsl_ane.dialects import rlx
from xdsl_ane.dialects.typing import element_type_of, is_float, shape_of
from xdsl_ane.frontend.torch.aten import axis_of, narrow, reshape, translates
from xdsl_ane.frontend.torch.translate import Const, TranslationError, Translator

aten = torch.ops.aten

MAX_PIECES = 5
"""A write whose kept and written runs number at most this many is narrows
joined by a concat; others a placement matmul and a where."""

MAX_PLACEMENT = 1 << 22
"""The most elements a constant placement matrix [size, written] may have."""


def uniform_value(src: Any) -> float | int | bool | None:
    """The one value a constant source holds everywhere, else None."""
    if isinstance(src, bool | int | float):
        return src
    if isinstance(src, Const) and src.value.numel() > 0:
        flat = src.value.reshape(-1)
        if bool((flat == flat[0]).all()):
            return flat[0].item()
    return None


def axis_view(shape: Sequence[int], axis: int, size: int | None = None) -> list[int]:
    """[1, ..., size, ..., 1]: a vector along `axis` broadcast over the rest."""
    view = [1] * len(shape)
    view[axis] = shape[axis] if size is None else size
    return view


def writers(size: int, positions: np.ndarray) -> np.ndarray:
    """For each of the `size` positions, the index of the last source slice
    written there (torch's sequential order), −1 where none is."""
    writer = np.full(size, -1, dtype=np.int64)
    writer[positions] = np.arange(len(positions))
    return writer


def pieces_of(writer: np.ndarray) -> list[tuple[str, int, int]]:
    """The runs of `writer`: ("x", start, length) kept from x and ("src",
    start, length) consecutive source slices."""
    runs: list[tuple[str, int, int]] = []
    for j, w in enumerate(writer):
        kind, start = ("x", j) if w < 0 else ("src", int(w))
        if runs and runs[-1][0] == kind and runs[-1][1] + runs[-1][2] == start:
            runs[-1] = (kind, runs[-1][1], runs[-1][2] + 1)
        else:
            runs.append((kind, start, 1))
    return runs


def spread(
    tr: Translator, node, src: SSAValue, axis: int, matrix: np.ndarray
) -> SSAValue:
    """matrix [size, k] applied along `axis` of src (k there): src viewed as
    [A, k, B], P · src, viewed back with size along `axis`. Non-float
    sources go through f32 (exact to 2^24)."""
    shape = shape_of(src)
    element = element_type_of(src)
    if not is_float(element):
        src = rlx.CastOp(src, f32).result
    before = int(np.prod(shape[:axis], dtype=np.int64))
    after = int(np.prod(shape[axis + 1 :], dtype=np.int64))
    view = reshape(src, (before, shape[axis], after))
    placement = Const(torch.from_numpy(matrix), f"{node.name}.placement")
    moved = rlx.MatmulOp(tr.value(placement, element_type_of(view)), view).result
    result_shape = (*shape[:axis], matrix.shape[0], *shape[axis + 1 :])
    moved = reshape(moved, result_shape)
    return moved if is_float(element) else rlx.CastOp(moved, element).result


def placed(
    tr: Translator,
    node,
    x: SSAValue,
    axis: int,
    positions: np.ndarray,
    src: Any,
    accumulate: bool = False,
) -> SSAValue:
    """x with its slices along `axis` at the constant `positions` replaced by
    src's slices in order (the last write to a position wins), or with src's
    slices added there (`accumulate`: repeated positions add up). src has
    x's shape with len(positions) along `axis`."""
    shape = shape_of(x)
    size, count = shape[axis], len(positions)
    positions = np.where(positions < 0, positions + size, positions).astype(np.int64)
    if ((positions < 0) | (positions >= size)).any():
        raise TranslationError(
            f"write position out of range for axis {axis} of size {size}"
        )
    element = element_type_of(x)
    uniform = uniform_value(src)
    writer = writers(size, positions)
    if uniform is not None and not accumulate:
        mask = Const(
            torch.from_numpy(writer >= 0).reshape(axis_view(shape, axis)),
            f"{node.name}.mask",
        )
        value = tr.value(Const(torch.tensor(uniform), f"{node.name}.value"), element)
        return rlx.WhereOp(tr.value(mask, i1), value, x).result
    src = tr.value(src, element)
    if size * count > MAX_PLACEMENT:
        raise TranslationError(
            f"a write of {count} slices into {size} along axis {axis} needs a "
            f"placement matrix of {size * count} elements (at most {MAX_PLACEMENT})"
        )
    if accumulate:
        matrix = np.zeros((size, count), np.float32)
        matrix[positions, np.arange(count)] = 1.0
        return rlx.AddOp(x, spread(tr, node, src, axis, matrix)).result
    runs = pieces_of(writer)
    if len(runs) <= MAX_PIECES:
        parts = [
            narrow(x if kind == "x" else src, axis, start, length)
            for kind, start, length in runs
        ]
        return parts[0] if len(parts) == 1 else rlx.ConcatOp(parts, axis).result
    matrix = np.zeros((size, count), np.float32)
    written = writer >= 0
    matrix[np.flatnonzero(written), writer[written]] = 1.0
    mask = Const(
        torch.from_numpy(written).reshape(axis_view(shape, axis)), f"{node.name}.mask"
    )
    moved = spread(tr, node, src, axis, matrix)
    return rlx.WhereOp(tr.value(mask, i1), moved, x).result


def broadcast_to(tr: Translator, value: Any, shape: Sequence[int], element) -> Any:
    """A source as `shape` (numpy broadcasting): a constant broadcast here,
    a runtime value reshaped to the rank and expanded."""
    shape = tuple(int(d) for d in shape)
    if isinstance(value, bool | int | float):
        return Const(torch.full(shape, value), "value")
    if isinstance(value, Const):
        return Const(value.value.broadcast_to(shape).contiguous(), value.origin)
    value = tr.value(value, element)
    have = shape_of(value)
    value = reshape(value, (1,) * (len(shape) - len(have)) + tuple(have))
    if shape_of(value) != shape:
        value = rlx.ExpandOp(value, shape).result
    return value


# --- the ATen ops -------------------------------------------------------------------


@translates(aten.copy.default)
def copy(tr: Translator, node, x, src, non_blocking=False):
    """src broadcast to x's shape in x's type (a copy into a view; the
    slice_scatter after it writes the view back)."""
    element = tr.result_element(node)
    shape = tr.result_shape(node)
    if isinstance(src, Const):
        value = src.value.to(node.meta["val"].dtype).broadcast_to(shape)
        return Const(value.contiguous(), node.name)
    return broadcast_to(tr, src, shape, element)


@translates(aten.slice_scatter.default)
def slice_scatter(tr: Translator, node, x, src, dim=0, start=None, end=None, step=1):
    """x[..., start:end:step, ...] = src along `dim`."""
    x = tr.value(x, tr.result_element(node))
    axis = axis_of(dim, len(shape_of(x)))
    positions = torch.arange(shape_of(x)[axis])[start:end:step].numpy()
    return placed(tr, node, x, axis, positions, src)


@translates(aten.select_scatter.default)
def select_scatter(tr: Translator, node, x, src, dim, index):
    """x[..., index, ...] = src along `dim` (src without that axis)."""
    x = tr.value(x, tr.result_element(node))
    shape = shape_of(x)
    axis = axis_of(dim, len(shape))
    if not isinstance(src, Const | bool | int | float):
        rest = (*shape[:axis], *shape[axis + 1 :])
        src = broadcast_to(tr, src, rest, element_type_of(x))
        src = reshape(src, (*shape[:axis], 1, *shape[axis + 1 :]))
    elif isinstance(src, Const):
        src = Const(src.value.unsqueeze(axis), src.origin)
    return placed(tr, node, x, axis, np.asarray([index]), src)


def integer_indices(indices: Sequence[Any], shape: Sequence[int]) -> list[Any]:
    """index_put's index list with each boolean mask as the integer index
    tensors of its nonzero positions (one per axis it covers); None where
    an axis is not indexed. Runtime indices are refused."""
    result: list[Any] = []
    for i in indices:
        if i is None:
            result.append(None)
        elif not isinstance(i, Const):
            raise TranslationError(
                "index_put at positions computed at runtime is not supported (MIL's "
                "scatter is not an ANE op); only constant indices"
            )
        elif i.value.dtype == torch.bool:
            result.extend(i.value.nonzero(as_tuple=True))
        else:
            result.append(i.value.to(torch.int64))
    return result + [None] * (len(shape) - len(result))


@translates(aten.index_put.default)
def index_put(tr: Translator, node, x, indices, values, accumulate=False):
    """x[indices] = values (or += with `accumulate`) at constant indices:
    one index tensor writes whole slices along its axis; several write
    elements, at positions of x flattened (the elements they name, found by
    indexing an arange of x's size with them)."""
    element = tr.result_element(node)
    x = tr.value(x, element)
    shape = shape_of(x)
    indices = integer_indices(indices, shape)
    ids = torch.arange(int(np.prod(shape))).reshape(shape)
    targets = ids[tuple(slice(None) if i is None else i for i in indices)]
    present = [axis for axis, i in enumerate(indices) if i is not None]
    values = broadcast_to(tr, values, targets.shape, element)
    if len(present) == 1 and indices[present[0]].dim() == 1:
        axis = present[0]
        return placed(tr, node, x, axis, indices[axis].numpy(), values, accumulate)
    flat = reshape(x, (int(np.prod(shape)),))
    if not isinstance(values, Const | bool | int | float):
        values = reshape(values, (int(targets.numel()),))
    elif isinstance(values, Const):
        values = Const(values.value.reshape(-1), values.origin)
    y = placed(tr, node, flat, 0, targets.reshape(-1).numpy(), values, accumulate)
    return reshape(y, shape)


@translates(aten.scatter.src, aten.scatter.value, aten.scatter_add.default)
def scatter(tr: Translator, node, x, dim, index, src):
    """torch.scatter (scatter_add: accumulating) at a constant index: x[...,
    index[i], ...] = src[i] along `dim` for every i of index's shape. An
    index that is the same across the other axes, covering them whole,
    writes slices along `dim`; any other writes elements."""
    element = tr.result_element(node)
    x = tr.value(x, element)
    shape = shape_of(x)
    axis = axis_of(dim, len(shape))
    if not isinstance(index, Const):
        raise TranslationError(
            "scatter at positions computed at runtime is not supported (MIL's "
            "scatter_along_axis is not an ANE op); only a constant index"
        )
    accumulate = node.target is aten.scatter_add.default
    index = index.value.to(torch.int64)
    part = tuple(index.shape)
    if not isinstance(src, bool | int | float):
        src = narrowed_to(tr, src, part, element)
    picker: list[Any] = [0] * len(part)
    picker[axis] = slice(None)
    row = index[tuple(picker)]
    covers = all(p == s for d, (p, s) in enumerate(zip(part, shape)) if d != axis)
    if covers and torch.equal(row.reshape(axis_view(part, axis)).expand(part), index):
        return placed(tr, node, x, axis, row.numpy(), src, accumulate)
    size = shape[axis]
    positions = np.indices(part)
    positions[axis] = np.where(index.numpy() < 0, index.numpy() + size, index.numpy())
    if ((positions[axis] < 0) | (positions[axis] >= size)).any():
        raise TranslationError(
            f"scatter index out of range for axis {axis} of size {size}"
        )
    targets = np.ravel_multi_index(tuple(positions), shape).reshape(-1)
    if isinstance(src, Const):
        src = Const(src.value.reshape(-1), src.origin)
    elif not isinstance(src, bool | int | float):
        src = reshape(src, (len(targets),))
    flat = reshape(x, (int(np.prod(shape)),))
    return reshape(placed(tr, node, flat, 0, targets, src, accumulate), shape)


def narrowed_to(tr: Translator, src: Any, shape: Sequence[int], element) -> Any:
    """src's leading block of `shape` (scatter reads src only where index is)."""
    if isinstance(src, Const):
        block = src.value[tuple(slice(0, n) for n in shape)]
        return Const(block.contiguous(), src.origin)
    src = tr.value(src, element)
    for axis, n in enumerate(shape):
        src = narrow(src, axis, 0, n)
    return src

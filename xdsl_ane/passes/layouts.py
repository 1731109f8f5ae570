"""The ANE's `[1, C, 1, S]` tensor form and how logical tensors map to it.

A kernel's arguments and results are rank-4 `[1, C, 1, S]` on the ANE
(channels at axis 1, sequence at axis 3). `mil-ane-layout` maps each logical
shape by its rank:

| layout     | logical        | ANE form          | element                          |
|------------|----------------|-------------------|----------------------------------|
| `scalar`   | `[]`           | `[1, 1, 1, 1]`    | the value                        |
| `c`        | `[C]`          | `[1, C, 1, 1]`    | x[c] at [0, c, 0, 0]             |
| `sc`       | `[S, C]`       | `[1, C, 1, S]`    | x[s, c] at [0, c, 0, s]          |
| `bsc`      | `[1, S, C]`    | `[1, C, 1, S]`    | x[0, s, c] at [0, c, 0, s]       |
| `bhsd`     | `[1, H, S, D]` | `[1, H·D, 1, S]`  | x[0, h, s, d] at [0, h·D + d, 0, s] |
| `ane`      | `[1, C, 1, S]` | `[1, C, 1, S]`    | unchanged (rank 4 with axis 2 of size 1) |
| `nchw`     | `[1, C, H, W]` | `[1, C, H, W]`    | unchanged (an image: conv and pooling keep H, W) |
| `ncw`      | `[1, C, W]`    | `[1, C, 1, W]`    | x[0, c, w] at [0, c, 0, w] (a 1-D signal) |

The shape alone picks the first six; `nchw` and `ncw` are for the values
`mil-ane-layout` finds to be images or signals (`spatial_layout`): the
inputs and outputs of convolutions and the elementwise ops between them.
Each layout is a reshape, an axis permutation and a reshape, so the same
three steps (as mil ops or on numpy arrays) convert both ways. `to_ane` and
`to_logical` here are what a runtime uses to lay out its buffers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from xdsl_ane.dialects.ane import LayoutAttr


class LayoutError(ValueError):
    """A logical shape with no `[1, C, 1, S]` mapping."""


@dataclass(frozen=True)
class Layout:
    """How a logical tensor of `logical` shape is held as `[1, C, 1, S]`.

    Logical -> ANE: reshape to `split`, transpose by `perm`, reshape to `ane`.
    ANE -> logical: the same steps in reverse."""

    name: str
    logical: tuple[int, ...]
    ane: tuple[int, ...]
    split: tuple[int, ...]
    perm: tuple[int, ...]

    @property
    def inverse_perm(self) -> tuple[int, ...]:
        return tuple(int(i) for i in np.argsort(self.perm))

    @property
    def permuted(self) -> tuple[int, ...]:
        """The shape after the transpose (before the final reshape)."""
        return tuple(self.split[p] for p in self.perm)

    def to_ane(self, x: np.ndarray) -> np.ndarray:
        """A logical array in ANE form."""
        assert tuple(x.shape) == self.logical, (x.shape, self.logical)
        y = np.transpose(x.reshape(self.split), self.perm)
        return np.ascontiguousarray(y).reshape(self.ane)

    def to_logical(self, x: np.ndarray) -> np.ndarray:
        """An ANE-form array in logical form."""
        assert tuple(x.shape) == self.ane, (x.shape, self.ane)
        y = np.transpose(x.reshape(self.permuted), self.inverse_perm)
        return np.ascontiguousarray(y).reshape(self.logical)

    def record(self) -> LayoutAttr:
        """The `#ane.layout` record of a boundary tensor in this layout."""
        return LayoutAttr(self.name, self.logical, self.ane)


def layout_of(shape: Sequence[int]) -> Layout:
    """The layout of a logical shape (see the module table). Each conversion
    is at most a transpose and a reshape either way."""
    shape = tuple(shape)
    rank = len(shape)
    if rank == 0:
        return Layout("scalar", shape, (1, 1, 1, 1), shape, ())
    if rank == 1:
        (c,) = shape
        return Layout("c", shape, (1, c, 1, 1), shape, (0,))
    if rank == 2:
        s, c = shape
        return Layout("sc", shape, (1, c, 1, s), shape, (1, 0))
    if rank == 3 and shape[0] == 1:
        _, s, c = shape
        return Layout("bsc", shape, (1, c, 1, s), shape, (0, 2, 1))
    if rank == 4 and shape[0] == 1 and shape[2] == 1:
        return Layout("ane", shape, shape, shape, (0, 1, 2, 3))
    if rank == 4 and shape[0] == 1:
        _, h, s, d = shape
        return Layout("bhsd", shape, (1, h * d, 1, s), shape, (0, 1, 3, 2))
    raise LayoutError(
        f"no [1, C, 1, S] layout for shape [{', '.join(map(str, shape))}] "
        "(supported: [], [C], [S, C], [1, S, C], [1, H, S, D], [1, C, 1, S])"
    )


SPATIAL_KINDS = ("nchw", "ncw")
"""The layouts of images and 1-D signals (`spatial_layout`)."""


def spatial_layout(shape: Sequence[int]) -> Layout:
    """The layout of an image `[1, C, H, W]` (held unchanged) or a 1-D
    signal `[1, C, W]` (as `[1, C, 1, W]`)."""
    shape = tuple(shape)
    if len(shape) == 4 and shape[0] == 1:
        return Layout("nchw", shape, shape, shape, (0, 1, 2, 3))
    if len(shape) == 3 and shape[0] == 1:
        _, c, w = shape
        return Layout("ncw", shape, (1, c, 1, w), shape, (0, 1, 2))
    raise LayoutError(
        f"no spatial layout for shape [{', '.join(map(str, shape))}] "
        "(supported: [1, C, H, W], [1, C, W])"
    )


def layout_of_kind(kind: str, logical: Sequence[int]) -> Layout:
    """The layout of `kind` for a logical shape: a state's (held in its own
    shape), a spatial kind's, or the one the shape picks."""
    if kind == "state":
        shape = tuple(logical)
        return Layout("state", shape, shape, shape, tuple(range(len(shape))))
    return spatial_layout(logical) if kind in SPATIAL_KINDS else layout_of(logical)


def recorded_layout(record: LayoutAttr) -> Layout:
    """The layout an `#ane.layout` record describes."""
    layout = layout_of_kind(record.kind.data, record.logical_shape)
    if (layout.name, layout.ane) != (record.kind.data, record.ane_shape):
        raise LayoutError(
            f"{record}: the layout of logical shape {list(layout.logical)} is "
            f"{layout.name}, ane = {list(layout.ane)}"
        )
    return layout


def ane_form_problems(function: object, fp16: bool = False) -> list[str]:
    """Why a func.func is not in ANE form (empty when it is): every argument
    and result must be a rank-4 `[1, C, 1, S]` tensor (or `[1, C, H, W]`
    where its recorded layout is `nchw`), with no fp32 if
    `fp16` (int32 token ids and positions stay int32); a state argument
    keeps its own shape (fp16 if `fp16`)."""
    from xdsl.dialects import func
    from xdsl.dialects.builtin import Float16Type, Float32Type, TensorType

    from xdsl_ane.dialects.state_type import StateTypeBase

    assert isinstance(function, func.FuncOp)
    problems = []
    name = function.sym_name.data
    signature = function.function_type
    images: dict[str, set[int]] = {"argument": set(), "result": set()}
    for what, key in (
        ("argument", "ane.arg_layouts"),
        ("result", "ane.result_layouts"),
    ):
        records = function.attributes.get(key)
        for i, record in enumerate(getattr(records, "data", ())):
            if isinstance(record, LayoutAttr) and record.kind.data == "nchw":
                images[what].add(i)
    for what, types in (("argument", signature.inputs), ("result", signature.outputs)):
        for i, t in enumerate(types.data):
            if what == "argument" and isinstance(t, StateTypeBase):
                if fp16 and not isinstance(t.wrapped.element_type, Float16Type):
                    problems.append(f"@{name}: state argument {i} is not fp16: {t}")
                continue
            if not isinstance(t, TensorType):
                problems.append(f"@{name}: {what} {i} is not a tensor: {t}")
                continue
            shape = t.get_shape()
            if i in images[what]:
                pass  # [1, C, H, W], an image the ANE convolves as it is
            elif len(shape) != 4 or shape[0] != 1 or shape[2] != 1:
                problems.append(
                    f"@{name}: {what} {i} has shape {list(shape)}, not [1, C, 1, S]"
                )
            if fp16 and isinstance(t.element_type, Float32Type):
                problems.append(
                    f"@{name}: {what} {i} has element type {t.element_type}, not f16"
                )
    return problems

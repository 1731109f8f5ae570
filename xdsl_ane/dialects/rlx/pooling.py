"""rlx pooling: max_pool and avg_pool over the spatial axes of a 1-D
`[N, C, W]` or 2-D `[N, C, H, W]` input, with torch's semantics.

Per spatial axis of size `in`, kernel k, stride s and padding (before b,
after a):

    out = floor((in + b + a − k) / s) + 1            (ceil_mode false)
    out = ceil((in + b + a − k) / s) + 1, less 1 when the last window would
          start at or past in + b                    (ceil_mode true)

which is torch's rule (`pooling_output_shape`). A window may overhang the
padded input under ceil_mode; max_pool ignores padding and overhang (they
hold −inf), avg_pool divides by the window's size within the padded input
(`count_include_pad`, the default) or within the input.
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import BoolAttr, TensorType
from xdsl.ir import Attribute
from xdsl.irdl import operand_def, opt_prop_def, prop_def, result_def

from xdsl_ane.dialects.rlx.base import FUNCTIONAL, RlxOp, Value, rlx_op_definition
from xdsl_ane.dialects.typing import (
    I64Array,
    OpTypeError,
    bool_attr,
    bool_prop,
    fmt_shape,
    ints_attr,
    ints_prop,
    require_float,
    tensor,
    tensor_of,
)


@dataclass(frozen=True)
class PoolWindows:
    """The checked window parameters of a pooling op, one entry per spatial
    axis (`padding` as (before, after) pairs)."""

    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    padding: tuple[tuple[int, int], ...]
    ceil_mode: bool

    def output_sizes(self, sizes: Sequence[int]) -> tuple[int, ...]:
        return tuple(
            pooled_size(n, k, s, b, a, self.ceil_mode)
            for n, k, s, (b, a) in zip(sizes, self.kernel, self.strides, self.padding)
        )

    def overhang(self, sizes: Sequence[int]) -> tuple[int, ...]:
        """How far the last window reaches past the padded input, per axis
        (non-zero only under ceil_mode)."""
        out = self.output_sizes(sizes)
        return tuple(
            max(0, (o - 1) * s + k - (n + b + a))
            for n, o, k, s, (b, a) in zip(
                sizes, out, self.kernel, self.strides, self.padding
            )
        )


def pooled_size(size: int, k: int, s: int, before: int, after: int, ceil: bool) -> int:
    """torch's pooled size of one axis (see the module docstring)."""
    span = size + before + after - k
    out = (-(-span // s) if ceil else span // s) + 1
    if ceil and (out - 1) * s >= size + before:
        out -= 1
    return out


def pool_windows(
    op_name: str, properties: Mapping[str, Attribute], shape: Sequence[int]
) -> PoolWindows:
    """`kernel`, `strides` (default 1), `padding` (default 0) and
    `ceil_mode` of a pooling op on an input of `shape`, checked."""
    spatial = len(shape) - 2
    kernel = ints_prop(properties, "kernel")
    assert kernel is not None
    strides = ints_prop(properties, "strides", (1,) * spatial)
    padding = ints_prop(properties, "padding", (0,) * (2 * spatial))
    assert strides is not None and padding is not None
    for prop, values, length in (
        ("kernel", kernel, spatial),
        ("strides", strides, spatial),
        ("padding", padding, 2 * spatial),
    ):
        if len(values) != length:
            what = "before/after per spatial axis" if prop == "padding" else "per axis"
            raise OpTypeError(
                op_name,
                f"property '{prop}' {list(values)} must have {length} entries "
                f"({what}) for operand 'input' {fmt_shape(shape)}",
            )
    for prop, values, low in (("kernel", kernel, 1), ("strides", strides, 1)):
        if any(v < low for v in values):
            raise OpTypeError(op_name, f"property '{prop}' {list(values)} must be >= 1")
    pairs = tuple((padding[2 * i], padding[2 * i + 1]) for i in range(spatial))
    for (before, after), k in zip(pairs, kernel):
        if before < 0 or after < 0 or before > k // 2 or after > k // 2:
            raise OpTypeError(
                op_name,
                f"property 'padding' {list(padding)} must lie in [0, kernel // 2] on "
                f"each side (kernel {list(kernel)}), or a window could hold only "
                "padding",
            )
    windows = PoolWindows(
        tuple(kernel), tuple(strides), pairs, bool_prop(properties, "ceil_mode")
    )
    for o in windows.output_sizes(shape[2:]):
        if o < 1:
            raise OpTypeError(
                op_name,
                f"kernel {list(kernel)} does not fit the padded operand 'input' "
                f"{fmt_shape(shape)} (padding {list(padding)})",
            )
    return windows


class PoolOp(RlxOp, ABC):
    """A pooling op: one input `[N, C, (H,) W]`, the result `[N, C, (H',) W']`."""

    input = operand_def(TensorType)
    result = result_def(TensorType)
    kernel = prop_def(I64Array)
    strides = opt_prop_def(I64Array)
    padding = opt_prop_def(I64Array)
    ceil_mode = opt_prop_def(BoolAttr)
    assembly_format = FUNCTIONAL

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        t = tensor_of(cls.name, "input", operand_types[0])
        require_float(cls.name, "input", t)
        shape = t.get_shape()
        if len(shape) not in (3, 4):
            raise OpTypeError(
                cls.name,
                f"operand 'input' must be [N, C, W] or [N, C, H, W], got "
                f"{fmt_shape(shape)}",
            )
        windows = pool_windows(cls.name, properties, shape)
        out = windows.output_sizes(shape[2:])
        return [tensor((*shape[:2], *out), t.element_type)]

    def windows(self) -> PoolWindows:
        return pool_windows(self.name, self.properties, self.input.type.get_shape())


def _pool_properties(
    kernel: Sequence[int],
    strides: Sequence[int] | None,
    padding: Sequence[int] | None,
    ceil_mode: bool | None,
) -> dict[str, Attribute | None]:
    return {
        "kernel": ints_attr(kernel),
        "strides": ints_attr(strides),
        "padding": ints_attr(padding),
        "ceil_mode": bool_attr(ceil_mode),
    }


@rlx_op_definition
class MaxPoolOp(PoolOp):
    """y[n, c, i] = max over the window at i·s − b (size k) of x, per spatial
    axis; padding and a ceil_mode overhang never win (−inf). `strides`
    defaults to 1, `padding` (before/after per spatial axis, each at most
    kernel // 2) to 0, `ceil_mode` to false."""

    name = "rlx.max_pool"

    def __init__(
        self,
        input: Value,
        kernel: Sequence[int],
        strides: Sequence[int] | None = None,
        padding: Sequence[int] | None = None,
        ceil_mode: bool | None = None,
    ):
        self.init_inferred(
            [input], _pool_properties(kernel, strides, padding, ceil_mode)
        )


@rlx_op_definition
class AvgPoolOp(PoolOp):
    """y[n, c, i] = Σ window(x) / count, the window at i·s − b of size k per
    spatial axis over x padded with zeros; count is the window's size within
    the padded input [−b, in + a) (`count_include_pad`, default true) or
    within the input [0, in) (false). `strides` defaults to 1, `padding`
    (before/after per spatial axis, each at most kernel // 2) to 0,
    `ceil_mode` to false."""

    name = "rlx.avg_pool"
    count_include_pad = opt_prop_def(BoolAttr)

    def __init__(
        self,
        input: Value,
        kernel: Sequence[int],
        strides: Sequence[int] | None = None,
        padding: Sequence[int] | None = None,
        ceil_mode: bool | None = None,
        count_include_pad: bool | None = None,
    ):
        props = _pool_properties(kernel, strides, padding, ceil_mode)
        props["count_include_pad"] = bool_attr(count_include_pad)
        self.init_inferred([input], props)

    def includes_padding(self) -> bool:
        return bool_prop(self.properties, "count_include_pad", True)


OPS = (
    MaxPoolOp,
    AvgPoolOp,
)
"""The ops of this family, as the rlx dialect lists them."""

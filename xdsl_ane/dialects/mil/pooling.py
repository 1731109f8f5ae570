"""MIL's pooling: `max_pool` and `avg_pool` over 1 to 3 spatial axes.

Type rules from coremltools 9.0 iOS15 pool.py (`Pooling.type_inference`)
and `spatial_dimensions_out_shape`: per spatial axis with the total
padding P of `pad_type` (as conv's),

    out = floor((in + P − k) / s) + 1                   (ceil_mode false)
    out = floor((in + P − k + s − 1) / s) + 1, less 1 when P > 0 and
          (out − 1) · s ≥ in + P / 2                    (ceil_mode true)

ceil_mode takes 1 or 2 spatial axes, symmetric padding and a pad_type other
than "same".
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from xdsl.dialects.builtin import BoolAttr, StringAttr, TensorType
from xdsl.ir import Attribute
from xdsl.irdl import operand_def, opt_prop_def, prop_def, result_def, traits_def

from xdsl_ane.ane.cost import pooling_flops
from xdsl_ane.ane.rules import POOL
from xdsl_ane.dialects.mil.base import (
    FLOAT,
    FUNCTIONAL,
    MilOp,
    Value,
    mil_op_definition,
    require_element_type,
)
from xdsl_ane.dialects.mil.inputs import MilInput, PerSpatialAxis
from xdsl_ane.dialects.mil.linear import (
    CONV_PAD_TYPES,
    check_pad,
    check_window_lengths,
    conv_padding,
)
from xdsl_ane.dialects.mil.traits import ImageOp
from xdsl_ane.dialects.typing import (
    I64Array,
    OpTypeError,
    bool_attr,
    bool_prop,
    choice,
    fmt_shape,
    ints_attr,
    ints_prop,
    str_attr,
    str_prop,
    tensor,
)


@dataclass(frozen=True)
class MilPoolWindows:
    """A MIL pooling op's windows per spatial axis, padding resolved to
    (before, after) pairs."""

    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    padding: tuple[tuple[int, int], ...]
    ceil_mode: bool


class PoolingOp(MilOp, ABC):
    """MIL's `Pooling`: x `[n, C, *D_in]`, const kernel_sizes, strides,
    pad_type, pad and ceil_mode."""

    x = operand_def(TensorType)
    kernel_sizes = prop_def(I64Array)
    strides = opt_prop_def(I64Array)
    pad_type = prop_def(StringAttr)
    pad = opt_prop_def(I64Array)
    ceil_mode = opt_prop_def(BoolAttr)
    result = result_def(TensorType)
    assembly_format = FUNCTIONAL
    POOLING_INPUTS: ClassVar = (
        MilInput("x"),
        MilInput("kernel_sizes"),
        MilInput("strides", PerSpatialAxis(1)),
        # required by MIL (no default in coremltools), so required here too
        MilInput("pad_type"),
        MilInput("pad", PerSpatialAxis(0, per_axis=2)),
        MilInput("ceil_mode", False),
    )

    traits = traits_def(ImageOp())
    ANE_RULES: ClassVar = (POOL,)

    def flops(self) -> int:
        return pooling_flops(self)

    @classmethod
    def windows(
        cls, shape: Sequence[int], properties: Mapping[str, Attribute]
    ) -> MilPoolWindows:
        """The checked windows of a pooling of an x of `shape`."""
        spatial = len(shape) - 2
        kernel = ints_prop(properties, "kernel_sizes")
        assert kernel is not None
        strides, pad = (
            ints_prop(properties, name, cls.spatial_input_default(name, spatial))
            for name in ("strides", "pad")
        )
        assert strides is not None and pad is not None
        given = str_prop(properties, "pad_type")
        if given is None:
            raise OpTypeError(cls.name, "property 'pad_type' is required")
        pad_type = choice(cls.name, "pad_type", given, CONV_PAD_TYPES)
        check_window_lengths(
            cls.name, spatial, (("kernel_sizes", kernel), ("strides", strides)), pad
        )
        if any(v < 1 for v in (*kernel, *strides)):
            raise OpTypeError(cls.name, "kernel_sizes and strides must be >= 1")
        check_pad(cls.name, pad_type, pad)
        ceil = bool_prop(properties, "ceil_mode")
        if ceil:
            if spatial > 2:
                raise OpTypeError(
                    cls.name, "property 'ceil_mode' takes 1 or 2 spatial axes only"
                )
            if pad_type == "same":
                raise OpTypeError(
                    cls.name,
                    "property 'ceil_mode' must be false with pad_type \"same\"",
                )
            if any(pad[2 * i] != pad[2 * i + 1] for i in range(spatial)):
                raise OpTypeError(
                    cls.name,
                    f"property 'ceil_mode' needs symmetric padding, got pad {list(pad)}",
                )
        ones = (1,) * spatial
        padding = conv_padding(pad_type, shape[2:], kernel, strides, ones, pad)
        return MilPoolWindows(
            tuple(kernel), tuple(strides), tuple(tuple(p) for p in padding), ceil
        )

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        x = cls.tensor_operands(operand_types, properties)["x"]
        assert x is not None
        require_element_type(cls.name, "x", x, FLOAT)
        shape = x.get_shape()
        if not 3 <= len(shape) <= 5:
            raise OpTypeError(
                cls.name,
                f"operand 'x' must be [n, C, *D_in] with 1 to 3 spatial axes, got "
                f"{fmt_shape(shape)}",
            )
        w = cls.windows(shape, properties)
        out = []
        for n, k, s, (before, after) in zip(shape[2:], w.kernel, w.strides, w.padding):
            total = before + after
            if w.ceil_mode:
                size = (n + total - k + s - 1) // s + 1
                if total > 0 and (size - 1) * s >= n + total / 2:
                    size -= 1
            else:
                size = (n + total - k) // s + 1
            if size <= 0:
                raise OpTypeError(
                    cls.name,
                    f"kernel_sizes {list(w.kernel)} do not fit the padded operand 'x' "
                    f"{fmt_shape(shape)}",
                )
            out.append(size)
        return [tensor((*shape[:2], *out), x.element_type)]


def _pool_properties(
    kernel_sizes: Sequence[int],
    strides: Sequence[int] | None,
    pad_type: str,
    pad: Sequence[int] | None,
    ceil_mode: bool | None,
) -> dict[str, Attribute | None]:
    return {
        "kernel_sizes": ints_attr(kernel_sizes),
        "strides": ints_attr(strides),
        "pad_type": str_attr(pad_type),
        "pad": ints_attr(pad),
        "ceil_mode": bool_attr(ceil_mode),
    }


@mil_op_definition
class MaxPoolOp(PoolingOp):
    """The maximum of each window of x (kernel_sizes, strides; pad_type
    "valid", "same", "same_lower" or "custom" with `pad` before/after per
    spatial axis); padding never wins. Absent properties take MIL's
    defaults: strides 1, pad 0, ceil_mode false; pad_type, which MIL
    requires, is "valid" unless the builder is given another."""

    name = "mil.max_pool"
    MIL_INPUTS: ClassVar = PoolingOp.POOLING_INPUTS

    def __init__(
        self,
        x: Value,
        kernel_sizes: Sequence[int],
        strides: Sequence[int] | None = None,
        pad_type: str = "valid",
        pad: Sequence[int] | None = None,
        ceil_mode: bool | None = None,
    ):
        self.init_mil(
            {"x": x}, _pool_properties(kernel_sizes, strides, pad_type, pad, ceil_mode)
        )


@mil_op_definition
class AvgPoolOp(PoolingOp):
    """The mean of each window of x, windows as in max_pool over x padded
    with zeros; the divisor counts the padding (the window's size within the
    padded input) unless `exclude_padding_from_average` (default false),
    which counts the elements of x only."""

    name = "mil.avg_pool"
    exclude_padding_from_average = opt_prop_def(BoolAttr)
    MIL_INPUTS: ClassVar = (
        MilInput("exclude_padding_from_average", False),
        *PoolingOp.POOLING_INPUTS,
    )

    def __init__(
        self,
        x: Value,
        kernel_sizes: Sequence[int],
        strides: Sequence[int] | None = None,
        pad_type: str = "valid",
        pad: Sequence[int] | None = None,
        ceil_mode: bool | None = None,
        exclude_padding_from_average: bool | None = None,
    ):
        props = _pool_properties(kernel_sizes, strides, pad_type, pad, ceil_mode)
        props["exclude_padding_from_average"] = bool_attr(exclude_padding_from_average)
        self.init_mil({"x": x}, props)


OPS = (
    MaxPoolOp,
    AvgPoolOp,
)
"""The ops of this family, as the mil dialect lists them."""

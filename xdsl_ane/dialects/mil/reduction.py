"""MIL's ops that reduce over axes: `reduce_*`, `softmax`, `layer_norm`,
`cumsum` (the running sum along one axis), `topk` (the k largest or
smallest values along one axis and their indices) and `argsort` (the
indices that sort one axis).

Type rules from coremltools iOS15 reduction.py (ReductionAxes), activation
softmax, iOS17 normalization.layer_norm, iOS15 tensor_operation.cumsum,
iOS17 tensor_operation.topk and iOS15 tensor_operation.argsort.
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Mapping, Sequence
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    BoolAttr,
    StringAttr,
    TensorType,
    i32,
)
from xdsl.ir import Attribute
from xdsl.irdl import (
    AttrSizedOperandSegments,
    BaseAttr,
    ParsePropInAttrDict,
    VarConstraint,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    result_def,
    traits_def,
)

from xdsl_ane.ane.cost import input_elements, sort_flops
from xdsl_ane.ane.rules import not_an_ane_op
from xdsl_ane.dialects.mil.base import (
    FLOAT,
    FLOAT_INT32,
    FUNCTIONAL,
    MilOp,
    TaggedOptionalOperandsOp,
    Value,
    mil_op_definition,
    operand_axes,
    operand_axis,
    require_element_type,
)
from xdsl_ane.dialects.mil.inputs import (
    MilInput,
    ParamValue,
    all_axes,
    dtype_of_first_given,
    element_dtype,
)
from xdsl_ane.dialects.mil.traits import EpsilonGuarded
from xdsl_ane.dialects.typing import (
    F32Attr,
    I64Array,
    I64Attr,
    OpTypeError,
    bool_attr,
    bool_prop,
    choice,
    f32_attr,
    fmt_shape,
    i64_attr,
    int_prop,
    ints_attr,
    ints_prop,
    reduced_shape,
    require_same_element_type,
    shape_of,
    str_prop,
    tensor,
)


def reduction_axes(
    op_name: str, shape: Sequence[int], properties: Mapping[str, Attribute]
) -> tuple[int, ...]:
    """The normalized `axes` of a reduction or layer_norm; absent means all
    axes. An empty list is rejected: absence already means "all"."""
    axes = ints_prop(properties, "axes")
    if axes is None:
        return tuple(range(len(shape)))
    if not axes:
        raise OpTypeError(
            op_name, "property 'axes' must not be empty (omit it for all)"
        )
    return operand_axes(op_name, "axes", axes, ("x", shape))


class ReductionOp(MilOp, ABC):
    """Reduces x over `axes` (absent: all axes), keeping them as size 1 when
    `keep_dims` (default false); reducing everything gives a rank-0 tensor.
    x is fp16, fp32 or int32; the result has x's dtype."""

    x = operand_def(TensorType)
    axes = opt_prop_def(I64Array)
    keep_dims = opt_prop_def(BoolAttr)
    result = result_def(TensorType)
    assembly_format = FUNCTIONAL
    MIL_INPUTS: ClassVar = (
        MilInput("x"),
        MilInput("axes"),
        MilInput("keep_dims", False),
    )

    def flops(self) -> int:
        return input_elements(self)

    def __init__(
        self,
        x: Value,
        axes: Sequence[int] | None = None,
        keep_dims: bool | None = None,
    ):
        self.init_mil(
            {"x": x}, {"axes": ints_attr(axes), "keep_dims": bool_attr(keep_dims)}
        )

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        x = cls.tensor_operands(operand_types, properties)["x"]
        assert x is not None
        require_element_type(cls.name, "x", x, FLOAT_INT32)
        shape = x.get_shape()
        axes = reduction_axes(cls.name, shape, properties)
        keep_dims = bool_prop(properties, "keep_dims")
        return [tensor(reduced_shape(shape, axes, keep_dims), x.element_type)]


@mil_op_definition
class ReduceSumOp(ReductionOp):
    """Σ x over the axes."""

    name = "mil.reduce_sum"


@mil_op_definition
class ReduceMeanOp(ReductionOp):
    """The mean of x over the axes (int32: rounded toward zero)."""

    name = "mil.reduce_mean"


@mil_op_definition
class ReduceMaxOp(ReductionOp):
    """The maximum of x over the axes."""

    name = "mil.reduce_max"


@mil_op_definition
class ReduceMinOp(ReductionOp):
    """The minimum of x over the axes."""

    name = "mil.reduce_min"


@mil_op_definition
class ReduceProdOp(ReductionOp):
    """The product of x over the axes."""

    name = "mil.reduce_prod"
    ANE_RULES: ClassVar = (
        not_an_ane_op("reduce_prod", "reduce_sum of logs, or the product on the CPU"),
    )


@mil_op_definition
class ReduceLogSumExpOp(ReductionOp):
    """log(Σ exp(x)) over the axes."""

    name = "mil.reduce_log_sum_exp"


@mil_op_definition
class SoftmaxOp(MilOp):
    """exp(x) / Σ exp(x) along `axis` (default -1)."""

    name = "mil.softmax"
    T: ClassVar = VarConstraint("T", BaseAttr(TensorType))
    x = operand_def(T)
    axis = opt_prop_def(I64Attr)
    result = result_def(T)
    assembly_format = "$x attr-dict `:` type($x)"
    MIL_INPUTS: ClassVar = (MilInput("x"), MilInput("axis", -1))

    FLOPS_PER_ELEMENT: ClassVar = 5  # max, sub, exp, sum, div

    def __init__(self, x: Value, axis: int | None = None):
        self.init_mil({"x": x}, {"axis": i64_attr(axis)})

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        x = cls.tensor_operands(operand_types, properties)["x"]
        assert x is not None
        require_element_type(cls.name, "x", x, FLOAT)
        operand_axis(
            cls.name,
            "axis",
            int_prop(properties, "axis", cls.input_default("axis")),
            ("x", x.get_shape()),
        )
        return [x]


def gamma_beside_beta(op: LayerNormOp) -> ParamValue | None:
    """layer_norm's absent gamma is written as ones (its default, 1, over the
    normalized shape in beta's dtype) when beta is given: coremltools'
    layer_norm type inference checks beta against `self.gamma.shape`
    (iOS15 normalization.py) and fails on an absent gamma. Without beta it
    is not written, as in coremltools."""
    if op.gamma is not None or op.beta is None:
        return None
    return np.ones(shape_of(op.beta), element_dtype(op.beta))


@mil_op_definition
class LayerNormOp(TaggedOptionalOperandsOp):
    """(x − mean) / sqrt(var + epsilon) · gamma + beta, mean and (biased)
    variance over `axes` (absent: all axes); gamma and beta have the shape of
    x on those axes (in axis order) and default to 1 and 0; epsilon defaults
    to 1e-5. gamma and beta are const and may be fp16 or fp32 whatever x is
    (iOS17)."""

    name = "mil.layer_norm"
    x = operand_def(TensorType)
    gamma = opt_operand_def(TensorType)
    beta = opt_operand_def(TensorType)
    axes = opt_prop_def(I64Array)
    epsilon = opt_prop_def(F32Attr)
    result = result_def(TensorType)
    irdl_options = (ParsePropInAttrDict(), AttrSizedOperandSegments(as_property=True))
    MIL_INPUTS: ClassVar = (
        MilInput("x"),
        MilInput("axes", all_axes),
        MilInput("gamma", gamma_beside_beta),
        MilInput("beta"),
        # MIL types gamma, beta and epsilon alike; fp32 without them (the
        # default 1e-5 is a Python float to coremltools).
        MilInput("epsilon", 1e-5, dtype_of_first_given("gamma", "beta")),
    )
    CONST_OPERANDS: ClassVar = ("gamma", "beta")

    FLOPS_PER_ELEMENT: ClassVar = 8
    traits = traits_def(EpsilonGuarded())

    def __init__(
        self,
        x: Value,
        gamma: Value | None = None,
        beta: Value | None = None,
        axes: Sequence[int] | None = None,
        epsilon: float | None = None,
    ):
        self.init_mil(
            {"x": x, "gamma": gamma, "beta": beta},
            {"axes": ints_attr(axes), "epsilon": f32_attr(epsilon)},
        )

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        ops = cls.tensor_operands(operand_types, properties)
        x = ops["x"]
        assert x is not None
        require_element_type(cls.name, "x", x, FLOAT)
        shape = x.get_shape()
        axes = reduction_axes(cls.name, shape, properties)
        normalized = tuple(d for i, d in enumerate(shape) if i in axes)
        params = [(n, t) for n in ("gamma", "beta") if (t := ops[n]) is not None]
        for name, t in params:
            require_element_type(cls.name, name, t, FLOAT)
            if t.get_shape() != normalized:
                raise OpTypeError(
                    cls.name,
                    f"operand '{name}' {fmt_shape(t.get_shape())} must have shape "
                    f"{fmt_shape(normalized)} (operand 'x' {fmt_shape(shape)} on axes "
                    f"{list(sorted(axes))})",
                )
        if len(params) == 2:
            require_same_element_type(cls.name, params)
        return [x]


@mil_op_definition
class CumsumOp(MilOp):
    """The running sum of x along `axis` (default 0): out[i] = Σ_{j ≤ i} x[j];
    `exclusive` (default false) leaves out x[i] (a zero first), `reverse`
    (default false) sums from the end. x is fp16, fp32 or int32 of rank ≥ 1;
    the result has its type. `axis` lies in [−1, rank − 1]: coremltools'
    type inference refuses every other negative axis."""

    name = "mil.cumsum"
    T: ClassVar = VarConstraint("T", BaseAttr(TensorType))
    x = operand_def(T)
    axis = opt_prop_def(I64Attr)
    exclusive = opt_prop_def(BoolAttr)
    reverse = opt_prop_def(BoolAttr)
    result = result_def(T)
    assembly_format = "$x attr-dict `:` type($x)"
    MIL_INPUTS: ClassVar = (
        MilInput("x"),
        MilInput("axis", 0),
        MilInput("exclusive", False),
        MilInput("reverse", False),
    )

    ANE_RULES: ClassVar = (
        not_an_ane_op(
            "cumsum",
            "compute it before the model and pass it in (position ids), or "
            "matmul by a constant triangular matrix of ones",
        ),
    )

    def flops(self) -> int:
        return input_elements(self)  # a running sum

    def __init__(
        self,
        x: Value,
        axis: int | None = None,
        exclusive: bool | None = None,
        reverse: bool | None = None,
    ):
        self.init_mil(
            {"x": x},
            {
                "axis": i64_attr(axis),
                "exclusive": bool_attr(exclusive),
                "reverse": bool_attr(reverse),
            },
        )

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        x = cls.tensor_operands(operand_types, properties)["x"]
        assert x is not None
        require_element_type(cls.name, "x", x, FLOAT_INT32)
        shape = x.get_shape()
        if not shape:
            raise OpTypeError(cls.name, "operand 'x' must have rank ≥ 1")
        axis = int_prop(properties, "axis", cls.input_default("axis"))
        if not -1 <= axis < len(shape):
            raise OpTypeError(
                cls.name,
                f"property 'axis' value {axis} is out of range [-1, {len(shape) - 1}] "
                f"for operand 'x' {fmt_shape(shape)} (MIL takes no negative axis "
                "but -1)",
            )
        return [x]


@mil_op_definition
class TopkOp(MilOp):
    """The `k` (default 1) largest values of x along `axis` (default −1) and
    their int32 indices along it; `ascending` (default false) takes the k
    smallest instead. `sort` (default true) orders them (descending, or
    ascending when `ascending`); unsorted, MIL leaves the order open. x is
    fp16, fp32 or int32 of rank ≥ 1; both results have x's shape with the
    axis of size k, 1 ≤ k ≤ its size (coremltools refuses a larger k; k = −1
    is not supported). `return_indices` (default true) and
    `output_indices_dtype` (default "int32") are MIL's: the values alone
    and uint16 indices are not supported."""

    name = "mil.topk"
    x = operand_def(TensorType)
    k = opt_prop_def(I64Attr)
    axis = opt_prop_def(I64Attr)
    ascending = opt_prop_def(BoolAttr)
    sort = opt_prop_def(BoolAttr)
    return_indices = opt_prop_def(BoolAttr)
    output_indices_dtype = opt_prop_def(StringAttr)
    values = result_def(TensorType)
    indices = result_def(TensorType)
    assembly_format = FUNCTIONAL
    MIL_INPUTS: ClassVar = (
        MilInput("x"),
        MilInput("k", 1),
        MilInput("axis", -1),
        MilInput("ascending", False),
        MilInput("sort", True),
        MilInput("return_indices", True),
        MilInput("output_indices_dtype", "int32"),
    )

    ANE_RULES: ClassVar = (
        not_an_ane_op(
            "topk",
            "take the top k on the CPU from the model's output, or use argmax "
            "(reduce_argmax runs on the ANE) where k = 1",
        ),
    )

    def flops(self) -> int:
        return sort_flops(self)

    def __init__(
        self,
        x: Value,
        k: int | None = None,
        axis: int | None = None,
        ascending: bool | None = None,
    ):
        self.init_mil(
            {"x": x},
            {
                "k": i64_attr(k),
                "axis": i64_attr(axis),
                "ascending": bool_attr(ascending),
            },
        )

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        x = cls.tensor_operands(operand_types, properties)["x"]
        assert x is not None
        require_element_type(cls.name, "x", x, FLOAT_INT32)
        shape = list(x.get_shape())
        if not shape:
            raise OpTypeError(cls.name, "operand 'x' must have rank ≥ 1")
        axis = operand_axis(
            cls.name,
            "axis",
            int_prop(properties, "axis", cls.input_default("axis")),
            ("x", shape),
        )
        k = int_prop(properties, "k", cls.input_default("k"))
        if not 1 <= k <= shape[axis]:
            raise OpTypeError(
                cls.name,
                f"property 'k' value {k} is out of range [1, {shape[axis]}] for axis "
                f"{axis} of operand 'x' {fmt_shape(shape)}",
            )
        if not bool_prop(properties, "return_indices", True):
            raise OpTypeError(
                cls.name, "property 'return_indices' false is not supported"
            )
        choice(
            cls.name,
            "output_indices_dtype",
            str_prop(
                properties,
                "output_indices_dtype",
                cls.input_default("output_indices_dtype"),
            ),
            ("int32",),
        )
        shape[axis] = k
        return [tensor(shape, x.element_type), tensor(shape, i32)]


@mil_op_definition
class ArgsortOp(MilOp):
    """The int32 indices that sort x along `axis` (default −1): descending
    (MIL's default) or, with `ascending` (default false), ascending. x is
    fp16, fp32 or int32 of rank ≥ 1; the result has its shape. MIL leaves
    the order of equal values open."""

    name = "mil.argsort"
    x = operand_def(TensorType)
    axis = opt_prop_def(I64Attr)
    ascending = opt_prop_def(BoolAttr)
    result = result_def(TensorType)
    assembly_format = FUNCTIONAL
    MIL_INPUTS: ClassVar = (
        MilInput("x"),
        MilInput("axis", -1),
        MilInput("ascending", False),
    )
    ANE_RULES: ClassVar = (
        not_an_ane_op(
            "argsort",
            "sort on the CPU from the model's output, or use argmax "
            "(reduce_argmax runs on the ANE) for the first index",
        ),
    )

    def __init__(
        self, x: Value, axis: int | None = None, ascending: bool | None = None
    ):
        self.init_mil(
            {"x": x}, {"axis": i64_attr(axis), "ascending": bool_attr(ascending)}
        )

    def flops(self) -> int:
        return sort_flops(self)

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        x = cls.tensor_operands(operand_types, properties)["x"]
        assert x is not None
        require_element_type(cls.name, "x", x, FLOAT_INT32)
        shape = x.get_shape()
        if not shape:
            raise OpTypeError(cls.name, "operand 'x' must have rank ≥ 1")
        operand_axis(
            cls.name,
            "axis",
            int_prop(properties, "axis", cls.input_default("axis")),
            ("x", shape),
        )
        return [tensor(shape, i32)]


OPS = (
    ReduceSumOp,
    ReduceMeanOp,
    ReduceMaxOp,
    ReduceMinOp,
    ReduceProdOp,
    ReduceLogSumExpOp,
    SoftmaxOp,
    CumsumOp,
    TopkOp,
    ArgsortOp,
    LayerNormOp,
)
"""The ops of this family, as the mil dialect lists them."""

"""The MIL inputs of each mil op, as coremltools 9.0 writes them.

A mil op carries MIL's tensor inputs as operands and its compile-time
parameters as properties, both under MIL's names, and leaves an optional
input absent to mean MIL's default. coremltools' builder writes every
optional input that has a default explicitly (`Builder._add_op` fills in
`default_inputs()`), each compile-time value as a const op just before the op.
`mil_inputs(op)` lists the same inputs in the op's `input_spec` order: an SSA
value (a list for `concat`'s values) or a compile-time value, a numpy array
of its MIL dtype (0-d for a scalar) or a `str`.

Dtypes follow coremltools' typing of each input:

- integer properties and lists are int32 (scalar or vector), flags bool,
  choices strings;
- `epsilon` of log, rsqrt and inverse takes x's dtype (MIL allows any float,
  but its defaults are `x.dtype(1e-45)` etc.), and so do clip's alpha and
  beta (MIL requires it);
- layer_norm's `epsilon` takes gamma's (or beta's) dtype, since MIL types
  gamma, beta and epsilon alike, and is fp32 without them (the default 1e-5
  is a Python float);
- one_hot's on/off values keep their own type; an absent one is 1 or 0 of
  the other's type (the mil dialect's rule; MIL's int32 default would clash
  with a float on_value), or int32 when both are absent;
- linear's absent bias is zeros [D_out] of weight's dtype, layer_norm's
  absent axes all axes, conv's absent strides/pad/dilations/groups 1, 0, 1, 1
  per spatial axis;
- layer_norm with beta but no gamma gets gamma = ones written out, since
  coremltools' type inference fails on that combination.

Inputs absent with no default (conv's bias, squeeze's and the reductions'
axes, split's num_splits or split_sizes, quantize's zero_point and axis) are
not written, as in coremltools.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from xdsl.dialects.builtin import (
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
    i1,
)
from xdsl.ir import Attribute, SSAValue

from xdsl_ane.dialects import mil
from xdsl_ane.dialects.dense import numpy_dtype_of
from xdsl_ane.errors import XdslAneError

ParamValue = np.ndarray | str
"""A compile-time input: a numpy array of its MIL dtype, or a string."""
MilInput = SSAValue | list[SSAValue] | ParamValue
Default = Callable[[mil.MilOp], ParamValue | None]
"""The value written for an absent input (None: not written)."""

INT32 = np.dtype(np.int32)
FP32 = np.dtype(np.float32)


def _dtype_of(value: SSAValue | None) -> np.dtype:
    assert value is not None
    t = value.type
    assert isinstance(t, TensorType)
    return numpy_dtype_of(t.element_type)


def _rank(value: SSAValue) -> int:
    t = value.type
    assert isinstance(t, TensorType)
    return len(t.get_shape())


def _x_scalar(value: float) -> Default:
    return lambda op: np.array(value, _dtype_of(op.operands[0]))


def _scalar(value: object, dtype: np.dtype | type) -> Default:
    return lambda op: np.array(value, dtype)


def _spatial(value: int, per_axis: int = 1) -> Default:
    """A conv parameter: `value` per spatial axis (`per_axis` entries each)."""
    return lambda op: np.full(per_axis * (_rank(op.operands[0]) - 2), value, INT32)


def _linear_bias(op: mil.MilOp) -> ParamValue:
    assert isinstance(op, mil.LinearOp)
    t = op.weight.type
    assert isinstance(t, TensorType)
    return np.zeros(t.get_shape()[0], _dtype_of(op.weight))


def _layer_norm_parameter_dtype(op: mil.MilOp) -> np.dtype:
    assert isinstance(op, mil.LayerNormOp)
    for value in (op.gamma, op.beta):
        if value is not None:
            return _dtype_of(value)
    return FP32


def _layer_norm_gamma(op: mil.MilOp) -> ParamValue | None:
    """Ones when beta is given without gamma: coremltools' layer_norm type
    inference checks beta against `self.gamma.shape` (iOS15
    normalization.py) and fails on an absent gamma, so gamma is written
    explicitly (its default, 1, over the normalized shape in beta's dtype)."""
    assert isinstance(op, mil.LayerNormOp)
    if op.gamma is not None or op.beta is None:
        return None
    t = op.beta.type
    assert isinstance(t, TensorType)
    return np.ones(t.get_shape(), _dtype_of(op.beta))


def _one_hot_value(value: int, other: str) -> Default:
    """MIL's on/off default, of the other value's type when that is given."""

    def default(op: mil.MilOp) -> ParamValue:
        given = op.properties.get(other)
        if given is None:
            return np.array(value, INT32)
        return np.array(value, _attribute_dtype(given))

    return default


X = (("x", None),)
UNARY = X
BINARY = (("x", None), ("y", None))
REDUCTION = (("x", None), ("axes", None), ("keep_dims", _scalar(False, np.bool_)))

SIGNATURES: dict[str, tuple[tuple[str, Default | None], ...]] = {
    **{
        name: UNARY
        for name in (
            "relu sigmoid tanh exp sqrt abs sin cos silu round square floor ceil erf"
        ).split()
    },
    "log": (("x", None), ("epsilon", _x_scalar(1e-45))),
    "rsqrt": (("x", None), ("epsilon", _x_scalar(1e-12))),
    "inverse": (("x", None), ("epsilon", _x_scalar(1e-4))),
    "gelu": (("x", None), ("mode", lambda op: "EXACT")),
    "clip": (("x", None), ("alpha", None), ("beta", None)),
    **{
        name: BINARY
        for name in (
            "add sub mul real_div maximum minimum pow equal not_equal less "
            "less_equal greater greater_equal"
        ).split()
    },
    "select": (("cond", None), ("a", None), ("b", None)),
    "cast": (("x", None), ("dtype", None)),
    "matmul": (
        ("x", None),
        ("y", None),
        ("transpose_x", _scalar(False, np.bool_)),
        ("transpose_y", _scalar(False, np.bool_)),
    ),
    "linear": (("x", None), ("weight", None), ("bias", _linear_bias)),
    "conv": (
        ("x", None),
        ("weight", None),
        ("bias", None),
        ("strides", _spatial(1)),
        ("pad_type", lambda op: "valid"),
        ("pad", _spatial(0, per_axis=2)),
        ("dilations", _spatial(1)),
        ("groups", _scalar(1, INT32)),
    ),
    "reshape": (("x", None), ("shape", None)),
    "transpose": (("x", None), ("perm", None)),
    "slice_by_size": (("x", None), ("begin", None), ("size", None)),
    "concat": (
        ("values", None),
        ("axis", None),
        ("interleave", _scalar(False, np.bool_)),
    ),
    "tile": (("x", None), ("reps", None)),
    "expand_dims": (("x", None), ("axes", None)),
    "squeeze": (("x", None), ("axes", None)),
    "split": (("x", None), ("num_splits", None), ("split_sizes", None), ("axis", None)),
    "gather": (
        ("x", None),
        ("indices", None),
        ("axis", _scalar(0, INT32)),
        ("batch_dims", _scalar(0, INT32)),
        ("validate_indices", _scalar(False, np.bool_)),
    ),
    "one_hot": (
        ("indices", None),
        ("one_hot_vector_size", None),
        ("axis", _scalar(-1, INT32)),
        ("on_value", _one_hot_value(1, "off_value")),
        ("off_value", _one_hot_value(0, "on_value")),
    ),
    "band_part": (
        ("x", None),
        ("lower", _scalar(-1, INT32)),
        ("upper", _scalar(-1, INT32)),
    ),
    **{
        name: REDUCTION
        for name in (
            "reduce_sum reduce_mean reduce_max reduce_min reduce_prod "
            "reduce_log_sum_exp"
        ).split()
    },
    "softmax": (("x", None), ("axis", _scalar(-1, INT32))),
    "reduce_argmax": (
        ("x", None),
        ("axis", _scalar(-1, INT32)),
        ("keep_dims", _scalar(False, np.bool_)),
        ("output_dtype", lambda op: "int32"),
    ),
    "read_state": (("input", None),),
    "coreml_update_state": (("state", None), ("value", None)),
    "slice_update": (
        ("x", None),
        ("update", None),
        ("begin", None),
        ("end", None),
        ("stride", None),
        ("begin_mask", None),
        ("end_mask", None),
        ("squeeze_mask", None),
    ),
    "layer_norm": (
        ("x", None),
        ("axes", lambda op: np.arange(_rank(op.operands[0]), dtype=INT32)),
        ("gamma", _layer_norm_gamma),
        ("beta", None),
        ("epsilon", lambda op: np.array(1e-5, _layer_norm_parameter_dtype(op))),
    ),
    "quantize": (
        ("input", None),
        ("zero_point", None),
        ("scale", None),
        ("axis", None),
        ("output_dtype", None),
    ),
    "dequantize": (
        ("input", None),
        ("zero_point", None),
        ("scale", None),
        ("axis", None),
    ),
    "constexpr_affine_dequantize": (
        ("quantized_data", None),
        ("zero_point", None),
        ("scale", None),
        ("axis", None),
    ),
    "constexpr_blockwise_shift_scale": (
        ("data", None),
        ("scale", None),
        ("offset", None),
    ),
    "constexpr_lut_to_dense": (
        ("indices", None),
        ("lut", None),
        ("vector_axis", None),
    ),
}
"""Each MIL op's inputs in coremltools' `input_spec` order, with the default
coremltools writes for an absent one (None: required, or not written)."""

FLOAT_INPUT_DTYPES: dict[tuple[str, str], Callable[[mil.MilOp], np.dtype]] = {
    ("log", "epsilon"): lambda op: _dtype_of(op.operands[0]),
    ("rsqrt", "epsilon"): lambda op: _dtype_of(op.operands[0]),
    ("inverse", "epsilon"): lambda op: _dtype_of(op.operands[0]),
    ("clip", "alpha"): lambda op: _dtype_of(op.operands[0]),
    ("clip", "beta"): lambda op: _dtype_of(op.operands[0]),
    ("layer_norm", "epsilon"): _layer_norm_parameter_dtype,
}
"""Float properties whose MIL dtype is not their attribute's own type."""

OPSET_INTRODUCED: dict[str, str] = {
    "read_state": "iOS18",
    "coreml_update_state": "iOS18",
    "slice_update": "iOS18",
    "quantize": "iOS17",
    "dequantize": "iOS17",
    "constexpr_affine_dequantize": "iOS16",
    "constexpr_blockwise_shift_scale": "iOS18",
    "constexpr_lut_to_dense": "iOS18",
}
"""The deployment target that introduced an op, where later than iOS15."""


def mil_type(op: mil.MilOp) -> str:
    """MIL's op type: the op name without `mil.`."""
    return op.name.removeprefix("mil.")


def mil_inputs(op: mil.MilOp) -> list[tuple[str, MilInput]]:
    """The op's MIL inputs in order: SSA values for operands, compile-time
    values for properties and for absent inputs that have a default."""
    op_type = mil_type(op)
    signature = SIGNATURES.get(op_type)
    if signature is None:
        raise XdslAneError(f"{op.name}: no MIL signature (not a printable MIL op)")
    definition = op.get_irdl_definition()
    operand_names = {name for name, _ in definition.operands}
    known = operand_names | {n for n, _ in signature} | {"operandSegmentSizes"}
    unknown = [name for name in op.properties if name not in known]
    if unknown:
        raise XdslAneError(f"{op.name}: property '{unknown[0]}' is not a MIL input")
    inputs: list[tuple[str, MilInput]] = []
    for name, default in signature:
        value: MilInput | None = None
        if name in operand_names:
            operand = getattr(op, name)
            if isinstance(operand, SSAValue):
                value = operand
            elif operand is not None and len(operand):
                value = list(operand)
        elif name in op.properties:
            value = property_value(op, name, op.properties[name])
        if value is None and default is not None:
            value = default(op)
        if value is not None:
            inputs.append((name, value))
    return inputs


def property_value(op: mil.MilOp, name: str, attr: Attribute) -> ParamValue:
    """A property as the MIL value coremltools would write for it."""
    if isinstance(attr, StringAttr):
        return attr.data
    if isinstance(attr, DenseArrayBase):
        return _int32(op, name, [int(v) for v in attr.get_values()])
    if isinstance(attr, IntegerAttr):
        if attr.type == i1:
            return np.array(bool(attr.value.data))
        return _int32(op, name, attr.value.data)
    if isinstance(attr, FloatAttr):
        rule = FLOAT_INPUT_DTYPES.get((mil_type(op), name))
        dtype = rule(op) if rule is not None else _attribute_dtype(attr)
        return np.array(attr.value.data, dtype)
    raise XdslAneError(f"{op.name}: property '{name}' ({attr}) has no MIL value")


def _attribute_dtype(attr: Attribute) -> np.dtype:
    """The MIL dtype of a typed scalar attribute: its own element type, with
    the 64-bit integers of generic properties narrowed to int32."""
    assert isinstance(attr, IntegerAttr | FloatAttr)
    try:
        return numpy_dtype_of(attr.type)
    except ValueError:
        return INT32


def _int32(op: mil.MilOp, name: str, value: int | Sequence[int]) -> np.ndarray:
    array = np.array(value, dtype=np.int64)
    info = np.iinfo(np.int32)
    if array.size and (array.min() < info.min or array.max() > info.max):
        raise XdslAneError(f"{op.name}: property '{name}' does not fit in int32")
    return array.astype(INT32)

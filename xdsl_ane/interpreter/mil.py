"""Numpy semantics of every mil op (MIL's op documentation in coremltools 9.0
is the specification; the op docstrings in `xdsl_ane.dialects.mil` summarise
it).

Each op returns an array of exactly its result type's shape and dtype, and
f16 ops compute in float16, except that every reduction (reduce_sum,
reduce_mean, reduce_prod, reduce_log_sum_exp, softmax, cumsum, layer_norm,
matmul, linear, conv) accumulates in float32 and rounds its result to f16 once,
along any axis. Parameters of another float dtype than the data
(iOS17's linear/conv/layer_norm weights, epsilons) are converted to the
data's dtype first. Cases MIL leaves open:

- `mil.cast`: float to integer rounds toward zero and saturates, NaN becomes
  0; to bool is `x != 0`. `mil.real_div` and `mil.reduce_mean` on int32 round
  toward zero; integer division by zero is an `InterpretationError`.
- `mil.gather` indices must lie in [0, n) (iOS17: negative indices are out
  of bounds); `mil.one_hot` gives an all-`off_value` vector for an index
  outside [0, one_hot_vector_size).
- `mil.quantize` rounds half to even and maps NaN to the zero point.

Floating-point exceptions follow IEEE (inf, NaN) without numpy warnings.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
from xdsl.dialects.builtin import FloatAttr, IntegerAttr
from xdsl.interpreter import (
    InterpreterFunctions,
    register_impls,
)
from xdsl.ir import Operation

from xdsl_ane.dialects import mil
from xdsl_ane.dialects.mil.reduction import reduction_axes
from xdsl_ane.dialects.typing import (
    bool_prop,
    float_prop,
    int_prop,
    ints_prop,
    str_prop,
)
from xdsl_ane.interpreter import convolution, resampling
from xdsl_ane.interpreter.numerics import (
    INV_SQRT_2,
    Array,
    Compute,
    cast,
    checked_impl,
    cos,
    cumulative_sum,
    divide,
    erf,
    exp,
    gelu_tanh,
    layer_norm,
    log,
    log_sum_exp,
    matmul,
    mean,
    product,
    result_dtype,
    result_shape,
    sigmoid,
    sin,
    softmax,
    tanh,
    top_k,
    total,
)
from xdsl_ane.interpreter.numerics import family_impls as shared_family_impls
from xdsl_ane.interpreter.spatial import (
    avg_pool,
    batch_norm,
    group_norm,
    max_pool,
)
from xdsl_ane.interpreter.values import (
    InterpretationError,
    dense_to_numpy,
)
from xdsl_ane.weights.store import WeightStore


def mil_impl(op_type: type[Operation]) -> Callable[[Compute], Any]:
    """`checked_impl` converting each result to its result type's dtype."""
    return checked_impl(op_type, convert=True)


def family_impls(
    op_types: Iterable[type[Operation]], compute: Compute
) -> dict[str, Any]:
    return shared_family_impls(op_types, compute, convert=True)


def operand_values(op: Operation, args: tuple[Array, ...]) -> dict[str, Array | None]:
    """The runtime values of `op`'s single and optional operands by MIL name."""
    by_value = dict(zip(op.operands, args))
    out: dict[str, Array | None] = {}
    for name, _ in op.get_irdl_definition().operands:
        value = getattr(op, name)
        out[name] = None if value is None else by_value[value]
    return out


def data_epsilon(op: Operation, x: Array) -> float:
    """An op's epsilon (MIL's default when absent) in the data's dtype."""
    epsilon = float_prop(op.properties, "epsilon", op.input_default("epsilon"))
    return float(x.dtype.type(epsilon))


# --- elementwise -------------------------------------------------------------


GELU_FUNCTIONS: dict[str, Callable[[Array], Array]] = {
    "EXACT": lambda x: 0.5 * x * (1 + erf(x * INV_SQRT_2)),
    "TANH_APPROXIMATION": gelu_tanh,
    "SIGMOID_APPROXIMATION": lambda x: x * sigmoid(1.702 * x),
}

UNARY_FUNCTIONS: dict[type[Operation], Callable[[Array], Array]] = {
    mil.ReluOp: lambda x: np.maximum(x, 0),
    mil.SigmoidOp: sigmoid,
    mil.TanhOp: tanh,
    mil.ExpOp: exp,
    mil.SqrtOp: np.sqrt,
    mil.SinOp: sin,
    mil.CosOp: cos,
    mil.SiluOp: lambda x: x * sigmoid(x),
    mil.RoundOp: np.round,
    mil.FloorOp: np.floor,
    mil.CeilOp: np.ceil,
    mil.ErfOp: erf,
    mil.AbsOp: np.abs,
    mil.SquareOp: np.square,
}

EPSILON_FUNCTIONS: dict[type[Operation], Callable[[Array], Array]] = {
    mil.LogOp: log,
    mil.RsqrtOp: lambda x: 1 / np.sqrt(x),
    mil.InverseOp: lambda x: 1 / x,
}


def power(x: Array, y: Array) -> Array:
    if x.dtype.kind == "f":
        return np.power(x, y)
    if np.any(y < 0):
        raise ZeroDivisionError("integer pow with a negative exponent")
    return np.power(x.astype(np.int64), y.astype(np.int64))


BINARY_FUNCTIONS: dict[type[Operation], Callable[[Array, Array], Array]] = {
    mil.AddOp: np.add,
    mil.SubOp: np.subtract,
    mil.MulOp: np.multiply,
    mil.RealDivOp: divide,
    mil.MaximumOp: np.maximum,
    mil.MinimumOp: np.minimum,
    mil.PowOp: power,
    mil.EqualOp: np.equal,
    mil.NotEqualOp: np.not_equal,
    mil.LessOp: np.less,
    mil.LessEqualOp: np.less_equal,
    mil.GreaterOp: np.greater,
    mil.GreaterEqualOp: np.greater_equal,
}


# --- shape and indexing ------------------------------------------------------


def gather(x: Array, indices: Array, axis: int, batch_dims: int) -> Array:
    """numpy.take along `axis`, with the first `batch_dims` axes of x and
    indices taken pairwise."""
    if batch_dims == 0:
        return np.take(x, indices, axis=axis)
    batch = x.shape[:batch_dims]
    flat_x = x.reshape(-1, *x.shape[batch_dims:])
    flat_indices = indices.reshape(-1, *indices.shape[batch_dims:])
    parts = [
        np.take(xs, ids, axis=axis - batch_dims)
        for xs, ids in zip(flat_x, flat_indices)
    ]
    return np.stack(parts).reshape(*batch, *parts[0].shape)


def param_along_axis(param: Array, rank: int, axis: int | None) -> Array:
    """A scalar, or a vector along `axis`, shaped to broadcast against a
    rank-`rank` tensor (quantization scales and zero points)."""
    if param.ndim == 0 or axis is None:
        return param
    shape = [1] * rank
    shape[axis % rank] = param.shape[0]
    return param.reshape(shape)


# --- reductions ----------------------------------------------------------------


def integer_safe(reduce: Callable[..., Array]) -> Callable[..., Array]:
    """Runs a float reduction on int32 in float64, rounding toward zero."""

    def run(x: Array, axis: tuple[int, ...], keepdims: bool) -> Array:
        if x.dtype.kind == "f":
            return reduce(x, axis, keepdims)
        return np.trunc(reduce(x.astype(np.float64), axis, keepdims))

    return run


REDUCE_FUNCTIONS: dict[
    type[Operation], Callable[[Array, tuple[int, ...], bool], Array]
] = {
    mil.ReduceSumOp: total,
    mil.ReduceMeanOp: mean,
    mil.ReduceMaxOp: lambda x, axis, keepdims: np.max(x, axis=axis, keepdims=keepdims),
    mil.ReduceMinOp: lambda x, axis, keepdims: np.min(x, axis=axis, keepdims=keepdims),
    mil.ReduceProdOp: product,
    mil.ReduceLogSumExpOp: integer_safe(log_sum_exp),
}


def scalar_value(attr: Any, default: float | int | bool) -> float | int | bool:
    if attr is None:
        return default
    assert isinstance(attr, FloatAttr | IntegerAttr)
    return attr.value.data


# --- the interpreter functions -----------------------------------------------


@register_impls
class MilFunctions(InterpreterFunctions):
    """numpy implementations of the mil ops; `mil.const weight=` reads
    `weights`."""

    def __init__(self, weights: WeightStore | None = None, keep_constants=False):
        self.weights = weights if weights is not None else WeightStore()
        self.constants: dict[Operation, Array] | None = {} if keep_constants else None
        """With `keep_constants`, each constexpr op's weight once expanded."""

    def constant(self, op: Operation, expand: Callable[[], Array]) -> Array:
        """A constexpr op's weight: `expand()`, or the one kept from before."""
        if self.constants is None:
            return expand()
        if op not in self.constants:
            self.constants[op] = expand()
        return self.constants[op]

    @mil_impl(mil.ConstOp)
    def run_const(self, op: mil.ConstOp) -> Array:
        if op.val is not None:
            return dense_to_numpy(op.val)
        assert op.weight is not None
        return self.weights.get(
            op.weight.data,
            op.result.type,
            op.name,
            file_shape=op.file_shape(),
            perm=ints_prop(op.properties, "perm"),
        )

    # --- elementwise ---

    def unary(self, op: Operation, x: Array) -> Array:
        return UNARY_FUNCTIONS[type(op)](x)

    def unary_with_epsilon(self, op: Operation, x: Array) -> Array:
        assert isinstance(op, mil.UnaryWithEpsilonOp)
        epsilon = float_prop(op.properties, "epsilon", op.input_default("epsilon"))
        return EPSILON_FUNCTIONS[type(op)](x + x.dtype.type(epsilon))

    def binary(self, op: Operation, x: Array, y: Array) -> Array:
        try:
            return BINARY_FUNCTIONS[type(op)](x, y)
        except ZeroDivisionError as e:
            raise InterpretationError(f"{op.name}: {e}") from e

    locals().update(family_impls(UNARY_FUNCTIONS, unary))
    locals().update(family_impls(EPSILON_FUNCTIONS, unary_with_epsilon))
    locals().update(family_impls(BINARY_FUNCTIONS, binary))

    @mil_impl(mil.GeluOp)
    def run_gelu(self, op: mil.GeluOp, x: Array) -> Array:
        mode = str_prop(op.properties, "mode", op.input_default("mode"))
        assert mode is not None
        return GELU_FUNCTIONS[mode](x)

    @mil_impl(mil.ClipOp)
    def run_clip(self, op: mil.ClipOp, x: Array) -> Array:
        alpha, beta = (
            x.dtype.type(op.alpha.value.data),
            x.dtype.type(op.beta.value.data),
        )
        return np.minimum(np.maximum(x, alpha), beta)

    @mil_impl(mil.LeakyReluOp)
    def run_leaky_relu(self, op: mil.LeakyReluOp, x: Array) -> Array:
        return resampling.leaky_relu(x, op.alpha.value.data)

    @mil_impl(mil.EluOp)
    def run_elu(self, op: mil.EluOp, x: Array) -> Array:
        return resampling.elu(x, op.alpha.value.data)

    @mil_impl(mil.SigmoidHardOp)
    def run_sigmoid_hard(self, op: mil.SigmoidHardOp, x: Array) -> Array:
        return resampling.sigmoid_hard(x, op.alpha.value.data, op.beta.value.data)

    # --- resampling ---

    @mil_impl(mil.UpsampleNearestNeighborOp)
    def run_upsample_nearest_neighbor(
        self, op: mil.UpsampleNearestNeighborOp, x: Array
    ) -> Array:
        return resampling.mil_upsample_nearest(x, op.scale_factors(op.properties))

    @mil_impl(mil.UpsampleBilinearOp)
    def run_upsample_bilinear(self, op: mil.UpsampleBilinearOp, x: Array) -> Array:
        align_corners, half_pixel = op.grid(op.properties)
        scales = op.scale_factors(op.properties)
        return resampling.mil_upsample_bilinear(x, scales, align_corners, half_pixel)

    @mil_impl(mil.PadOp)
    def run_pad(self, op: mil.PadOp, x: Array) -> Array:
        pairs = op.pairs(op.properties, op.x.type)
        mode = str_prop(op.properties, "mode", op.input_default("mode"))
        value = float_prop(op.properties, "constant_val", 0.0)
        return resampling.pad(x, pairs, mode, value)

    @mil_impl(mil.SelectOp)
    def run_select(self, op: mil.SelectOp, cond: Array, a: Array, b: Array) -> Array:
        return np.where(cond, a, b)

    @mil_impl(mil.CastOp)
    def run_cast(self, op: mil.CastOp, x: Array) -> Array:
        return cast(x, result_dtype(op.result.type))

    # --- linear algebra ---

    @mil_impl(mil.MatmulOp)
    def run_matmul(self, op: mil.MatmulOp, x: Array, y: Array) -> Array:
        if bool_prop(op.properties, "transpose_x"):
            x = np.swapaxes(x, -1, -2)
        if bool_prop(op.properties, "transpose_y"):
            y = np.swapaxes(y, -1, -2)
        return matmul(x, y)

    @mil_impl(mil.LinearOp)
    def run_linear(self, op: mil.LinearOp, *args: Array) -> Array:
        """x · weightᵀ + bias, rounded once."""
        values = operand_values(op, args)
        x, weight, bias = values["x"], values["weight"], values["bias"]
        assert x is not None and weight is not None
        bias = None if bias is None else bias.astype(x.dtype, copy=False)
        return matmul(x, weight.astype(x.dtype, copy=False).T, bias)

    @mil_impl(mil.ConvOp)
    def run_conv(self, op: mil.ConvOp, *args: Array) -> Array:
        values = operand_values(op, args)
        x, weight, bias = values["x"], values["weight"], values["bias"]
        assert x is not None and weight is not None
        pad_type, strides, dilations, pad, groups = op.spatial_parameters(
            x.ndim, op.properties
        )
        padding = mil.conv_padding(
            pad_type, x.shape[2:], weight.shape[2:], strides, dilations, pad
        )
        # copy=False: an f16 weight is not copied per call
        bias = None if bias is None else bias.astype(x.dtype, copy=False)
        return convolution.conv(
            x,
            weight.astype(x.dtype, copy=False),
            bias,
            strides,
            padding,
            dilations,
            groups,
        )

    @mil_impl(mil.ConvTransposeOp)
    def run_conv_transpose(self, op: mil.ConvTransposeOp, *args: Array) -> Array:
        values = operand_values(op, args)
        x, weight, bias = values["x"], values["weight"], values["bias"]
        assert x is not None and weight is not None
        pad_type, strides, dilations, pad, groups = op.spatial_parameters(
            x.ndim, op.properties
        )
        crop = mil.conv_transpose_crop(
            pad_type, x.shape[2:], weight.shape[2:], strides, dilations, pad
        )
        bias = None if bias is None else bias.astype(x.dtype)
        no_extra = [0] * (x.ndim - 2)
        return convolution.conv_transpose(
            x, weight.astype(x.dtype), bias, strides, crop, no_extra, dilations, groups
        )

    # --- shape ---

    def reshape_to_result(self, op: Operation, x: Array) -> Array:
        return x.reshape(result_shape(op))

    locals().update(
        family_impls(
            [mil.ReshapeOp, mil.ExpandDimsOp, mil.SqueezeOp], reshape_to_result
        )
    )

    @mil_impl(mil.TransposeOp)
    def run_transpose(self, op: mil.TransposeOp, x: Array) -> Array:
        return np.transpose(x, ints_prop(op.properties, "perm"))

    @mil_impl(mil.PixelShuffleOp)
    def run_pixel_shuffle(self, op: mil.PixelShuffleOp, x: Array) -> Array:
        return resampling.pixel_shuffle(x, int_prop(op.properties, "upscale_factor"))

    @mil_impl(mil.PixelUnshuffleOp)
    def run_pixel_unshuffle(self, op: mil.PixelUnshuffleOp, x: Array) -> Array:
        return resampling.pixel_unshuffle(
            x, int_prop(op.properties, "downscale_factor")
        )

    @mil_impl(mil.SliceBySizeOp)
    def run_slice_by_size(self, op: mil.SliceBySizeOp, x: Array) -> Array:
        begin = ints_prop(op.properties, "begin")
        assert begin is not None
        return x[tuple(slice(b, b + n) for b, n in zip(begin, result_shape(op)))]

    @mil_impl(mil.ConcatOp)
    def run_concat(self, op: mil.ConcatOp, *values: Array) -> Array:
        """Interleaving stacks the inputs behind the axis and merges the two
        axes: out[i·n + k] = values[k][i]."""
        if values[0].ndim == 0:
            return np.stack(values)
        axis = int_prop(op.properties, "axis") % values[0].ndim
        if bool_prop(op.properties, "interleave"):
            return np.stack(values, axis=axis + 1).reshape(result_shape(op))
        return np.concatenate(values, axis=axis)

    @mil_impl(mil.TileOp)
    def run_tile(self, op: mil.TileOp, x: Array) -> Array:
        return np.tile(x, ints_prop(op.properties, "reps"))

    @mil_impl(mil.SplitOp)
    def run_split(self, op: mil.SplitOp, x: Array) -> tuple[Array, ...]:
        axis = int_prop(op.properties, "axis") % x.ndim
        sizes = [r.type.get_shape()[axis] for r in op.results]  # type: ignore[union-attr]
        return tuple(np.split(x, np.cumsum(sizes)[:-1], axis=axis))

    # --- indexing ---

    @mil_impl(mil.GatherOp)
    def run_gather(self, op: mil.GatherOp, x: Array, indices: Array) -> Array:
        axis = int_prop(op.properties, "axis", op.input_default("axis")) % x.ndim
        n = x.shape[axis]
        out_of_range = (indices < 0) | (indices >= n)
        if np.any(out_of_range):
            raise InterpretationError(
                f"{op.name}: index {indices[out_of_range][0]} is outside [0, {n}) "
                f"on axis {axis} of operand 'x'"
            )
        batch_dims = int_prop(
            op.properties, "batch_dims", op.input_default("batch_dims")
        )
        return gather(x, indices, axis, batch_dims)

    @mil_impl(mil.OneHotOp)
    def run_one_hot(self, op: mil.OneHotOp, indices: Array) -> Array:
        size = int_prop(op.properties, "one_hot_vector_size")
        axis = int_prop(op.properties, "axis", op.input_default("axis"))
        axis %= indices.ndim + 1
        dtype = result_dtype(op.result.type)
        on = np.asarray(
            scalar_value(op.on_value, op.input_default("on_value")), dtype=dtype
        )
        off = np.asarray(
            scalar_value(op.off_value, op.input_default("off_value")), dtype=dtype
        )
        hot = indices[..., None] == np.arange(size)
        return np.where(np.moveaxis(hot, -1, axis), on, off)

    @mil_impl(mil.BandPartOp)
    def run_band_part(self, op: mil.BandPartOp, x: Array) -> Array:
        lower = int_prop(op.properties, "lower", op.input_default("lower"))
        upper = int_prop(op.properties, "upper", op.input_default("upper"))
        m = np.arange(x.shape[-2])[:, None]
        n = np.arange(x.shape[-1])[None, :]
        band = ((lower < 0) | (m - n <= lower)) & ((upper < 0) | (n - m <= upper))
        return np.where(band, x, np.zeros((), x.dtype))

    # --- reductions and normalization ---

    def reduce(self, op: Operation, x: Array) -> Array:
        axes = reduction_axes(op.name, x.shape, op.properties)
        keep_dims = bool_prop(op.properties, "keep_dims")
        return REDUCE_FUNCTIONS[type(op)](x, axes, keep_dims)

    locals().update(family_impls(REDUCE_FUNCTIONS, reduce))

    @mil_impl(mil.SoftmaxOp)
    def run_softmax(self, op: mil.SoftmaxOp, x: Array) -> Array:
        return softmax(x, int_prop(op.properties, "axis", op.input_default("axis")))

    @mil_impl(mil.CumsumOp)
    def run_cumsum(self, op: mil.CumsumOp, x: Array) -> Array:
        return cumulative_sum(
            x,
            int_prop(op.properties, "axis", op.input_default("axis")),
            bool_prop(op.properties, "exclusive", op.input_default("exclusive")),
            bool_prop(op.properties, "reverse", op.input_default("reverse")),
        )

    @mil_impl(mil.TopkOp)
    def run_topk(self, op: mil.TopkOp, x: Array) -> tuple[Array, Array]:
        """The k largest values (smallest when `ascending`), sorted; MIL
        leaves the order of an unsorted topk open, and sorted is one."""
        return top_k(
            x,
            int_prop(op.properties, "k", op.input_default("k")),
            int_prop(op.properties, "axis", op.input_default("axis")),
            not bool_prop(op.properties, "ascending", op.input_default("ascending")),
        )

    @mil_impl(mil.ArgsortOp)
    def run_argsort(self, op: mil.ArgsortOp, x: Array) -> Array:
        """The indices of a stable sort along the axis, descending unless
        `ascending`; MIL leaves the order of ties open, and stable is one."""
        axis = int_prop(op.properties, "axis", op.input_default("axis"))
        ascending = bool_prop(op.properties, "ascending", op.input_default("ascending"))
        return top_k(x, x.shape[axis], axis, not ascending)[1]

    @mil_impl(mil.LayerNormOp)
    def run_layer_norm(self, op: mil.LayerNormOp, *args: Array) -> Array:
        """(x − mean) / sqrt(var + epsilon) · gamma + beta over the axes."""
        values = operand_values(op, args)
        x = values["x"]
        assert x is not None
        axes = reduction_axes(op.name, x.shape, op.properties)
        # epsilon is a parameter of the data's dtype
        default = op.input_default("epsilon")
        epsilon = float(x.dtype.type(float_prop(op.properties, "epsilon", default)))
        kept = [d if i in axes else 1 for i, d in enumerate(x.shape)]
        gamma, beta = (
            None if p is None else p.astype(x.dtype).reshape(kept)
            for p in (values["gamma"], values["beta"])
        )
        return layer_norm(x, axes, epsilon, gamma, beta)

    @mil_impl(mil.BatchNormOp)
    def run_batch_norm(self, op: mil.BatchNormOp, *args: Array) -> Array:
        """(x − mean) / sqrt(variance + epsilon) · gamma + beta per channel."""
        values = operand_values(op, args)
        x = values["x"]
        assert x is not None
        mean, variance, gamma, beta = (
            None if (p := values[n]) is None else p.astype(x.dtype)
            for n in ("mean", "variance", "gamma", "beta")
        )
        epsilon = data_epsilon(op, x)
        return batch_norm(x, mean, variance, gamma, beta, epsilon)

    @mil_impl(mil.InstanceNormOp)
    def run_instance_norm(self, op: mil.InstanceNormOp, *args: Array) -> Array:
        """Each sample's channel normalized over its spatial axes."""
        values = operand_values(op, args)
        x = values["x"]
        assert x is not None
        gamma, beta = (
            None if (p := values[n]) is None else p.astype(x.dtype)
            for n in ("gamma", "beta")
        )
        return group_norm(x, x.shape[1], gamma, beta, data_epsilon(op, x))

    # --- pooling ---

    @mil_impl(mil.MaxPoolOp)
    def run_max_pool(self, op: mil.MaxPoolOp, x: Array) -> Array:
        w = op.windows(x.shape, op.properties)
        return max_pool(x, w.kernel, w.strides, w.padding, result_shape(op)[2:])

    @mil_impl(mil.AvgPoolOp)
    def run_avg_pool(self, op: mil.AvgPoolOp, x: Array) -> Array:
        """The divisor counts padding (within the padded input) unless
        exclude_padding_from_average; a ceil_mode overhang never counts."""
        w = op.windows(x.shape, op.properties)
        exclude = bool_prop(op.properties, "exclude_padding_from_average")
        out = result_shape(op)[2:]
        return avg_pool(x, w.kernel, w.strides, w.padding, out, not exclude)

    # --- quantization ---

    @mil_impl(mil.QuantizeOp)
    def run_quantize(self, op: mil.QuantizeOp, *args: Array) -> Array:
        """clip(round_half_even(input / scale) + zero_point) to int8."""
        values = operand_values(op, args)
        x, scale, zero_point = values["input"], values["scale"], values["zero_point"]
        assert x is not None and scale is not None
        axis = int_prop(op.properties, "axis") if op.axis is not None else None
        q = np.rint(x / param_along_axis(scale, x.ndim, axis))
        zp = 0 if zero_point is None else param_along_axis(zero_point, x.ndim, axis)
        q = np.clip(q + np.asarray(zp, x.dtype), -128, 127)
        return np.where(np.isnan(q), np.asarray(zp, q.dtype), q)

    def dequantize(
        self, op: Operation, data: Array, scale: Array, zero_point: Array | None
    ) -> Array:
        """scale · (data − zero_point); the difference is exact in int32 (or in
        float32 for a float zero point)."""
        axis = int_prop(op.properties, "axis") if "axis" in op.properties else None
        if zero_point is None:
            centered = data.astype(np.int32)
        elif zero_point.dtype.kind == "f":
            centered = data.astype(np.float32) - param_along_axis(
                zero_point, data.ndim, axis
            )
        else:
            centered = data.astype(np.int32) - param_along_axis(
                zero_point.astype(np.int32), data.ndim, axis
            )
        return centered.astype(scale.dtype) * param_along_axis(scale, data.ndim, axis)

    @mil_impl(mil.DequantizeOp)
    def run_dequantize(self, op: mil.DequantizeOp, *args: Array) -> Array:
        values = operand_values(op, args)
        data, scale = values["input"], values["scale"]
        assert data is not None and scale is not None
        return self.dequantize(op, data, scale, values["zero_point"])

    @mil_impl(mil.ConstexprAffineDequantizeOp)
    def run_constexpr_affine_dequantize(
        self,
        op: mil.ConstexprAffineDequantizeOp,
        data: Array,
        zero_point: Array,
        scale: Array,
    ) -> Array:
        return self.constant(op, lambda: self.dequantize(op, data, scale, zero_point))

    @mil_impl(mil.ConstexprBlockwiseShiftScaleOp)
    def run_constexpr_blockwise_shift_scale(
        self, op: mil.ConstexprBlockwiseShiftScaleOp, *args: Array
    ) -> Array:
        values = operand_values(op, args)
        data, scale, offset = values["data"], values["scale"], values["offset"]
        assert data is not None and scale is not None

        def expand() -> Array:
            check_storage_range(op, "data", data)
            if offset is not None:
                check_storage_range(op, "offset", offset)
            return blockwise_shift_scale(data, scale, offset)

        return self.constant(op, expand)

    @mil_impl(mil.ConstexprLutToDenseOp)
    def run_constexpr_lut_to_dense(
        self, op: mil.ConstexprLutToDenseOp, indices: Array, lut: Array
    ) -> Array:
        def expand() -> Array:
            check_storage_range(op, "indices", indices)
            axis = (
                int_prop(op.properties, "vector_axis")
                if "vector_axis" in op.properties
                else None
            )
            return lut_to_dense(indices, lut, axis)

        return self.constant(op, expand)


def check_storage_range(op: Operation, name: str, value: Array) -> None:
    """Data of a sub-byte type (int4, uint1..uint6) lies in its range."""
    t = getattr(op, name).type
    width = getattr(t.element_type, "width", None)
    if width is None or width.data >= 8:
        return
    bits = width.data
    low, high = (
        (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
        if value.dtype.kind == "i"
        else (0, 2**bits - 1)
    )
    if value.size and (value.min() < low or value.max() > high):
        raise InterpretationError(
            f"{op.name}: operand '{name}' holds values outside [{low}, {high}] "
            f"({t.element_type})"
        )


def blockwise_shift_scale(data: Array, scale: Array, offset: Array | None) -> Array:
    """scale · (data − offset) in scale's dtype, scale and offset repeated
    over blocks of data.shape[i] / scale.shape[i] along each axis: data
    seen as [s0, d0/s0, s1, d1/s1, ...], the parameters broadcast over
    the blocks' axes."""
    blocks = [n for d, s in zip(data.shape, scale.shape) for n in (s, d // s)]
    params = [n for s in scale.shape for n in (s, 1)]
    centered = data.reshape(blocks).astype(scale.dtype)
    if offset is not None:
        centered = centered - offset.reshape(params).astype(scale.dtype)
    return (scale.reshape(params) * centered).reshape(data.shape)


def lut_to_dense(indices: Array, lut: Array, vector_axis: int | None) -> Array:
    """Element x of the result is lut[x0 // b0, ..., x_{k-1} // b_{k-1},
    indices[x]] with blocks b_i = indices.shape[i] / lut.shape[i]; with a
    vector size V > 1, each index gives V consecutive elements along
    `vector_axis`."""
    k = indices.ndim
    blocks = [n // g for n, g in zip(indices.shape, lut.shape[:k])]
    palette = np.ix_(*[np.arange(n) // b for n, b in zip(indices.shape, blocks)])
    values = lut[(*palette, indices.astype(np.intp))]  # indices.shape + [V]
    if vector_axis is None:
        return values[..., 0]
    axis = vector_axis % k
    shape = list(indices.shape)
    shape[axis] *= lut.shape[-1]
    return np.moveaxis(values, -1, axis + 1).reshape(shape)

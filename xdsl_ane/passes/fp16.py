"""`mil-fp16`: fp16 compute and I/O for mil programs (the ANE computes fp16).

Runs after `convert-rlx-to-mil` (and `mil-ane-layout`) in two walks.

Types (one forward walk, so every op sees converted operands):

- Every f32 tensor becomes f16: function arguments (states too) and results, inline consts
  (data rounded to fp16; ±∞ stand-ins (INFINITY_STANDIN) and additive masks
  saturate at ±65504, any other value beyond it is refused), weight
  consts (only the declared type changes: the weights file keeps fp32 data,
  converted where it is read or written), `cast` to "fp32" (now "fp16"; a cast
  from fp16 to fp16 is dropped), `one_hot`'s typed on/off values and, through
  their consts, quantize/dequantize scales. Every other mil op is rebuilt with
  its result types inferred anew from the converted operands. int32, int8
  and bool values stay as they are, so no cast is added: one_hot indices and
  labels stay int32. The one f32 MIL still needs, constexpr_affine_dequantize's
  fp32 `zero_point`, is left alone.

fp16 safety (a second walk):

- Epsilons. In fp16 an epsilon below 2⁻²⁵ ≈ 3e-8 rounds to 0 (log(0) = −inf,
  rsqrt(0) = inf) and one below 1e-7 is a one- or two-ulp subnormal. `log`,
  `rsqrt`, `inverse` and `layer_norm` epsilons below MIN_EPSILON = 1e-7 (the
  ANE rule "keep epsilons ≥ 1e-7"), MIL's defaults included (log 1e-45,
  rsqrt 1e-12), are raised to 1e-7. That covers the lowering's "no epsilon"
  log and rsqrt (1e-45); real epsilons such as RMSNorm's 1e-6 or layer_norm's
  1e-5 stay. Adding 1e-7 leaves every normal fp16 value (≥ 6.1e-5) unchanged;
  what changes is log(0) ≈ −16 and rsqrt(0) ≈ 3e3 instead of ∓inf.
- Masks. An inline const that reaches a `mil.add` (or a `mil.select` branch)
  through ops that rearrange it unchanged (`RearrangesElements`) is an
  additive mask; its entries ≤ −65504/2, which stand for −∞ (−1e9, float32's
  minimum, −inf, −65504), become MASKED = −1e4, the value the attention
  lowering uses. Two such masks plus a score then stay
  finite, and exp(−1e4 − max) is still 0 in fp16.
- Logsumexp. log(reduce_sum(exp(z))) over N > 1 reduced elements becomes
  log(reduce_mean(exp(z))) + log N: exact math, and where z = x − max(x) (as
  in the cross-entropy lowering) the mean lies in [1/N, 1] and cannot
  overflow, while the sum of 151936 classes can exceed fp16's 65504.

Known limits: fp16 holds integers exactly only up to 2048, so class labels or
indices passed as floats must be int32 inputs instead. For N > 16384 the mean
of a peaked distribution (≈ 1/N) is an fp16 subnormal, and log(mean + ε)
exceeds log(mean) by up to about ε·N (0.02 at N = 151936).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import FunctionType, TensorType, f16, f32
from xdsl.ir import Attribute, Operation, SSAValue, Use
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.utils.exceptions import PassFailedException

from xdsl_ane.ane.limits import MASKED
from xdsl_ane.dialects import mil
from xdsl_ane.dialects.dense import dense_from_numpy, dense_to_numpy
from xdsl_ane.dialects.mil.builders import const_op
from xdsl_ane.dialects.mil.reduction import reduction_axes
from xdsl_ane.dialects.mil.traits import EpsilonGuarded, RearrangesElements
from xdsl_ane.dialects.typing import (
    OpTypeError,
    bool_prop,
    element_type_of,
    f32_attr,
    float_prop,
    ints_prop,
    product,
    shape_of,
    tensor,
)
from xdsl_ane.dialects.uses import uses_through
from xdsl_ane.locations import copy_location, location_keeper, where

FP16_MAX = float(np.finfo(np.float16).max)
"""65504, the largest finite fp16 value."""

MIN_EPSILON = 1e-7
"""The smallest epsilon kept in fp16 (see the module docstring)."""

INFINITY_STANDIN = 1e9
"""A const entry of at least this magnitude (−1e9, float32's extremes,
±inf) stands for ±∞ and saturates at ±65504; a finite one between 65504
and this is a real value fp16 cannot hold, and is refused."""

MASK_THRESHOLD = -FP16_MAX / 2
"""Additive-mask entries at or below this stand for −∞ and become MASKED:
two of them would already overflow fp16 when added."""


def fp16_type(t: Attribute) -> Attribute:
    """`t` with an f32 element type replaced by f16 (a state's too: Core ML
    states are fp16); other types unchanged."""
    if isinstance(t, TensorType) and t.element_type == f32:
        return tensor(t.get_shape(), f16)
    if isinstance(t, mil.StateType) and t.wrapped.element_type == f32:
        return mil.StateType(tensor(t.wrapped.get_shape(), f16))
    return t


def inferred_types(op: mil.MilOp, properties: dict[str, Attribute]) -> list[Attribute]:
    """The result types MIL's rules give `op` over its current operands."""
    try:
        return type(op).infer_result_types([o.type for o in op.operands], properties)
    except OpTypeError as e:
        raise PassFailedException(
            f"{where(op)}mil-fp16: cannot convert {op.name}: {e}"
        ) from e


def rebuilt(op: mil.MilOp, properties: dict[str, Attribute] | None = None) -> mil.MilOp:
    """A copy of `op` over its current operands, with `properties` (default:
    its own) and its result types inferred anew from both."""
    props = dict(op.properties if properties is None else properties)
    new = type(op).create(
        operands=list(op.operands),
        result_types=inferred_types(op, props),
        properties=props,
        attributes=dict(op.attributes),
    )
    copy_location(new, op)
    return new


# --- types ---------------------------------------------------------------------


class ConvertFunctionSignature(RewritePattern):
    """f32 arguments and results of a func.func become f16 (block arguments
    too; the body's ops are converted after it)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.FuncOp, rewriter: PatternRewriter) -> None:
        old = op.function_type
        inputs = [fp16_type(t) for t in old.inputs.data]
        outputs = [fp16_type(t) for t in old.outputs.data]
        if inputs == list(old.inputs.data) and outputs == list(old.outputs.data):
            return
        if op.body.blocks:
            for arg in op.body.blocks[0].args:
                if fp16_type(arg.type) != arg.type:
                    rewriter.replace_value_with_new_type(arg, fp16_type(arg.type))
        op.function_type = FunctionType.from_lists(inputs, outputs)
        rewriter.notify_op_modified(op)


def needs_fp32(use: Use) -> bool:
    """Whether MIL types this operand fp32 only: constexpr_affine_dequantize's
    zero_point is int8 or fp32, never fp16."""
    user = use.operation
    return (
        isinstance(user, mil.ConstexprAffineDequantizeOp)
        and user.operands[use.index] is user.zero_point
    )


class ConvertConst(RewritePattern):
    """f32 consts become f16. Inline data is rounded to fp16 saturating at
    ±65504 (an f16 const holding ±inf is saturated too); a weight const
    changes only its declared type. Uses that MIL types fp32 only keep the
    f32 const."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: mil.ConstOp, rewriter: PatternRewriter) -> None:
        t = op.result.type
        assert isinstance(t, TensorType)
        fp32_uses = [use for use in op.result.uses if needs_fp32(use)]
        if fp32_uses and len(fp32_uses) == op.result.uses.get_length():
            return
        if op.weight is not None:
            if t.element_type != f32:
                return
            new = mil.ConstOp.from_weight(
                op.weight.data,
                tensor(t.get_shape(), f16),
                ints_prop(op.properties, "weight_shape"),
                ints_prop(op.properties, "perm"),
            )
        else:
            assert op.val is not None
            if t.element_type not in (f32, f16):
                return
            values = dense_to_numpy(op.val)
            if t.element_type == f16 and np.all(np.isfinite(values) | np.isnan(values)):
                return
            check_const_range(op, values)
            new = const_op(np.clip(values, -FP16_MAX, FP16_MAX), f16)
        new.attributes.update(op.attributes)
        if not fp32_uses:
            rewriter.replace(op, new)
            return
        rewriter.insert(new)
        rewriter.replace_uses_with_if(
            op.result, new.result, lambda use: not needs_fp32(use)
        )


def check_const_range(op: mil.ConstOp, values: np.ndarray) -> None:
    """Refuses an inline const holding a value fp16 cannot (65504 < |v| <
    INFINITY_STANDIN), unless it is an additive mask (whose large negative
    entries stand for −∞): saturating it would change the program's result
    (`(x + 70000) - 70000` would be 0)."""
    magnitude = np.abs(values)
    outside = (magnitude > FP16_MAX) & (magnitude < INFINITY_STANDIN)
    if not outside.any():
        return
    if np.all(values[outside] < 0) and reaches_additive_use(op.result):
        return
    value = values[outside].flat[0]
    raise PassFailedException(
        f"{where(op)}mil-fp16: const {value:g} is outside fp16's range (±65504); "
        "scale the program's values into range, or keep it in f32 "
        "(pipeline option fp16=false)"
    )


class ConvertCast(RewritePattern):
    """cast(x, "fp32") becomes cast(x, "fp16"); a cast to fp16 of a value
    that is now fp16 is dropped."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: mil.CastOp, rewriter: PatternRewriter) -> None:
        dtype = "fp16" if op.dtype.data == "fp32" else op.dtype.data
        if dtype == "fp16" and element_type_of(op.x) == f16:
            rewriter.replace(op, [], [op.x])
        elif dtype != op.dtype.data:
            properties = {**op.properties, "dtype": builtin.StringAttr(dtype)}
            rewriter.replace(op, rebuilt(op, properties))


class ConvertOneHot(RewritePattern):
    """one_hot's f32 on/off values become f16 values, so its result is f16."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: mil.OneHotOp, rewriter: PatternRewriter) -> None:
        properties = dict(op.properties)
        for key in ("on_value", "off_value"):
            value = properties.get(key)
            if isinstance(value, builtin.FloatAttr) and value.type == f32:
                properties[key] = builtin.FloatAttr(value.value.data, f16)
        if properties != op.properties:
            rewriter.replace(op, rebuilt(op, properties))


class ReinferResultTypes(RewritePattern):
    """Any other mil op whose operands changed type gets the result types
    inferred from them (its results retyped in place: the op, its operands
    and properties stay)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, mil.MilOp) or isinstance(op, mil.ConstOp):
            return
        types = inferred_types(op, dict(op.properties))
        for result, new_type in zip(op.results, types, strict=True):
            if result.type != new_type:
                rewriter.replace_value_with_new_type(result, new_type)


# --- fp16 safety ---------------------------------------------------------------


class RaiseTinyEpsilons(RewritePattern):
    """An op whose epsilon guards a log, a reciprocal or a normalization
    (`EpsilonGuarded`: log, rsqrt, inverse, layer_norm, batch_norm,
    instance_norm) on fp16 gets an epsilon of at least MIN_EPSILON (an
    absent one counts as MIL's default)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, mil.MilOp) or not op.has_trait(EpsilonGuarded):
            return
        epsilon = float_prop(op.properties, "epsilon", op.input_default("epsilon"))
        assert epsilon is not None
        if element_type_of(op.operands[0]) != f16 or epsilon >= MIN_EPSILON:
            return
        op.properties["epsilon"] = f32_attr(MIN_EPSILON)
        rewriter.notify_op_modified(op)


def reaches_additive_use(value: SSAValue) -> bool:
    """Whether `value`, passed through ops that rearrange it unchanged
    (`RearrangesElements`: a mask stays a mask through them), is added
    (mil.add) or selected as a fill value (a mil.select branch)."""
    for use in uses_through(
        value, lambda use: use.operation.has_trait(RearrangesElements)
    ):
        user = use.operation
        if isinstance(user, mil.AddOp):
            return True
        if isinstance(user, mil.SelectOp) and use.index > 0:
            return True
    return False


class MakeMasksFp16Safe(RewritePattern):
    """Entries ≤ −65504/2 of an additive mask (an inline fp16 const reaching
    an add or a select branch) become MASKED = −1e4."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: mil.ConstOp, rewriter: PatternRewriter) -> None:
        if op.val is None or element_type_of(op.result) != f16:
            return
        values = dense_to_numpy(op.val)
        masked = values <= MASK_THRESHOLD
        if not masked.any() or not reaches_additive_use(op.result):
            return
        new = mil.ConstOp(dense_from_numpy(np.where(masked, MASKED, values), f16))
        new.attributes.update(op.attributes)
        rewriter.replace(op, new)


class LogSumExpAsMean(RewritePattern):
    """log(Σ exp(z)) = log(mean(exp(z))) + log N, N the number of reduced
    elements (N > 1): the mean of values ≤ 1 cannot overflow fp16."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: mil.LogOp, rewriter: PatternRewriter) -> None:
        total = op.x.owner
        if not isinstance(total, mil.ReduceSumOp) or not isinstance(
            total.x.owner, mil.ExpOp
        ):
            return
        shape = shape_of(total.x)
        axes = reduction_axes(total.name, shape, total.properties)
        n = product([shape[a] for a in axes])
        if n <= 1:
            return
        props = total.properties
        keep_dims = bool_prop(props, "keep_dims") if "keep_dims" in props else None
        mean = mil.ReduceMeanOp(total.x, ints_prop(props, "axes"), keep_dims)
        log_mean = mil.LogOp(mean, float_prop(op.properties, "epsilon"))
        log_n = const_op(math.log(n), element_type_of(op.result))
        rewriter.replace(op, [mean, log_mean, log_n, mil.AddOp(log_mean, log_n)])
        if not total.result.uses:
            rewriter.erase(total)


# --- the pass ------------------------------------------------------------------


def check_converted(module: builtin.ModuleOp) -> None:
    """Every f32 value left must be one MIL types fp32 only."""
    for op in module.walk():
        for result in op.results:
            if result.type == fp16_type(result.type):
                continue
            if isinstance(op, mil.ConstOp) and all(
                needs_fp32(use) for use in result.uses
            ):
                continue
            raise PassFailedException(
                f"{where(op)}mil-fp16: cannot convert {op.name} to fp16: only mil programs "
                f"are converted (result type {result.type})"
            )


@dataclass(frozen=True)
class MilFp16Pass(ModulePass):
    """Makes mil programs compute in fp16 with fp16 inputs and outputs: f32
    types, consts, casts and one-hot values become fp16, epsilons below 1e-7
    are raised to 1e-7, additive masks use −1e4 for −∞, and log-sum-exp is
    taken over a mean so that it cannot overflow (module docstring)."""

    name = "mil-fp16"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier(
                [
                    ConvertFunctionSignature(),
                    ConvertConst(),
                    ConvertCast(),
                    ConvertOneHot(),
                    ReinferResultTypes(),
                ]
            ),
            apply_recursively=False,
            listener=location_keeper(),
        ).rewrite_module(op)
        check_converted(op)
        PatternRewriteWalker(
            GreedyRewritePatternApplier(
                [LogSumExpAsMean(), RaiseTinyEpsilons(), MakeMasksFp16Safe()]
            ),
            listener=location_keeper(),
        ).rewrite_module(op)

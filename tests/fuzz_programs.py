"""Random well-typed rlx programs for the differential pipeline fuzzer.

A hypothesis strategy draws a program family and its shapes, then emits rlx
ops with the dialect's builders (they infer every result type), so each
drawn program verifies by construction. Arguments and results have the
shapes the ANE form supports (`[S, C]`, `[1, S, C]`, `[C]`, `[1, H, S, D]`,
scalars); what lies between is free. Values are kept in the ranges where a
program means the same in fp16 and f32: domains are made safe (log of
|x| + 0.5, exp of tanh x, divisors away from zero), weights are scaled by
1/sqrt(fan-in), and comparisons read unrounded arguments against zero.

Families:
- `activation`: a chain of elementwise, broadcasting, reduction, norm,
  softmax, matmul-against-weight and shape ops on an `[S, C]` or
  `[1, S, C]` activation (optionally from an embedding gather);
- `attention`: grouped-query attention (forward or a backward), random
  head groupings, causal / bias / no mask, optional RoPE and head merge;
- `cross_entropy`: softmax cross-entropy forward or backward on logits that
  are an argument or a projection, labels as i32 or f32.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st
from xdsl.dialects import builtin
from xdsl.dialects.builtin import TensorType, f16, f32, i32
from xdsl.ir import Attribute, SSAValue

from xdsl_ane.dialects import rlx
from xdsl_ane.dialects.dense import dense_from_numpy
from xdsl_ane.dialects.functions import build_function
from xdsl_ane.dialects.typing import tensor
from xdsl_ane.interpreter.core import numpy_dtype
from xdsl_ane.passes.layouts import LayoutError, layout_of

UNARY = {
    "relu": rlx.ReluOp,
    "gelu": rlx.GeluOp,
    "gelu_tanh": rlx.GeluTanhOp,
    "silu": rlx.SiluOp,
    "sigmoid": rlx.SigmoidOp,
    "tanh": rlx.TanhOp,
    "neg": rlx.NegOp,
    "abs": rlx.AbsOp,
    "sin": rlx.SinOp,
    "cos": rlx.CosOp,
}
POSITIVE_UNARY = {
    "log": rlx.LogOp,
    "sqrt": rlx.SqrtOp,
    "rsqrt": rlx.RsqrtOp,
    "reciprocal": rlx.ReciprocalOp,
}
BINARY = {
    "add": rlx.AddOp,
    "sub": rlx.SubOp,
    "mul": rlx.MulOp,
    "max": rlx.MaxOp,
    "min": rlx.MinOp,
}
REDUCTIONS = {
    "reduce_sum": rlx.ReduceSumOp,
    "reduce_mean": rlx.ReduceMeanOp,
    "reduce_max": rlx.ReduceMaxOp,
    "reduce_min": rlx.ReduceMinOp,
}
PREDICATES = ("eq", "ne", "lt", "le", "gt", "ge")
ACTIVATION_STEPS = (
    "unary", "positive_unary", "exp", "binary", "div", "pow", "where",
    "reduce", "softmax", "rms_norm", "layer_norm", "linear", "transpose",
    "reshape", "narrow", "concat", "expand", "round_trip_cast",
    "activation_backward", "rms_norm_backward", "heads", "matmul",
    "shared_linear", "quantize", "reduce_all",
)  # fmt: skip


@dataclass(frozen=True)
class Argument:
    """One function argument: shape, element type and how its data is drawn
    (`normal`, or `index` in [0, bound) for gather indices and labels)."""

    shape: tuple[int, ...]
    element: Attribute = f32
    kind: str = "normal"
    bound: int = 0


@dataclass
class FuzzProgram:
    """A drawn program: the module, its weights and logical inputs, and the
    names of the steps it was built from (for reading a failure)."""

    module: builtin.ModuleOp
    weights: dict[str, np.ndarray]
    inputs: list[np.ndarray]
    steps: list[str]

    def __repr__(self) -> str:
        return f"FuzzProgram(steps={self.steps})\n{self.module}"

    def _repr_pretty_(self, printer, cycle) -> None:  # hypothesis' reports
        printer.text(repr(self))


@dataclass
class Emitter:
    """Emits rlx ops into the current block, naming weights and drawing their
    data from one generator."""

    draw: Callable
    rng: np.random.Generator
    exact: bool
    """Both sides compute in f32: rounding steps (quantize) may be drawn."""
    float_type: Attribute = f32
    weights: dict[str, np.ndarray] = field(default_factory=dict)
    steps: list[str] = field(default_factory=list)

    def param(self, shape: tuple[int, ...], scale: float = 1.0, offset=0.0):
        name = f"w{len(self.weights)}"
        data = offset + scale * self.rng.standard_normal(shape)
        self.weights[name] = data.astype(np.float32)
        return rlx.ParamOp(name, tensor(shape, self.float_type)).result

    def constant(self, value: np.ndarray | float, element: Attribute | None = None):
        element = element or self.float_type
        return rlx.ConstantOp(dense_from_numpy(np.asarray(value), element)).result

    def positive(self, x: SSAValue) -> SSAValue:
        """|x| + 0.5: a value in the domain of log, sqrt and division."""
        return rlx.AddOp(rlx.AbsOp(x).result, self.constant(0.5)).result

    def choose(self, name: str, options):
        return self.draw(st.sampled_from(options), label=name)


def shape_of(value: SSAValue) -> tuple[int, ...]:
    t = value.type
    assert isinstance(t, TensorType)
    return tuple(t.get_shape())


def broadcasts(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    try:
        np.broadcast_shapes(a, b)
    except ValueError:
        return False
    return True


def has_layout(shape: tuple[int, ...]) -> bool:
    """Whether a result of this shape has an ANE form."""
    try:
        layout_of(shape)
    except LayoutError:
        return False
    return True


# --- the activation family -------------------------------------------------------


def activation_step(
    e: Emitter, x: SSAValue, pool: list[SSAValue], args: list[SSAValue]
) -> SSAValue:
    """One drawn step on the current value `x`; returns the new value."""
    step = e.choose("step", ACTIVATION_STEPS)
    e.steps.append(step)
    shape = shape_of(x)
    c = shape[-1] if shape else 1
    if step == "unary":
        return UNARY[e.choose("unary", sorted(UNARY))](x).result
    if step == "positive_unary":
        op = POSITIVE_UNARY[e.choose("positive_unary", sorted(POSITIVE_UNARY))]
        return op(e.positive(x)).result
    if step == "exp":
        return rlx.ExpOp(rlx.TanhOp(x).result).result
    if step in ("binary", "div", "pow"):
        partners = [v for v in pool if broadcasts(shape_of(v), shape)]
        source = e.choose("partner", ["pool", "param", "constant"])
        if source == "pool" and partners:
            other = e.draw(st.sampled_from(partners), label="value")
        elif source == "param" and shape:
            pshape = e.choose("param_shape", [(c,), (1, c), shape])
            other = e.param(
                pshape[-len(shape) :] if len(pshape) > len(shape) else pshape
            )
        else:
            other = e.constant(e.draw(st.sampled_from([-1.5, 0.5, 2.0]), label="c"))
        if step == "div":
            return rlx.DivOp(x, e.positive(other)).result
        if step == "pow":
            exponent = e.choose("exponent", ["tensor", 2.0, 0.5, -1.0])
            if exponent == "tensor":
                return rlx.PowOp(e.positive(x), rlx.TanhOp(other).result).result
            return rlx.PowOp(e.positive(x), e.constant(exponent)).result
        return BINARY[e.choose("binary", sorted(BINARY))](x, other).result
    if step == "where":
        # The condition reads an argument against zero, whose sign fp16
        # rounding keeps, so both precisions take the same branches. It may
        # be wider than both branches.
        candidates = [a for a in args if broadcasts(shape_of(a), shape)]
        if not candidates:
            return rlx.ReluOp(x).result
        cond_source = e.draw(st.sampled_from(candidates), label="cond")
        predicate = e.choose("predicate", ["lt", "le", "gt", "ge", "ne"])
        cond = rlx.CompareOp(cond_source, e.constant(0.0), predicate).result
        other = e.choose("other", ["neg", "constant"])
        y = rlx.NegOp(x).result if other == "neg" else e.constant(0.25)
        return rlx.WhereOp(cond, x, y).result
    if step == "reduce":
        if not shape:
            return x
        op = REDUCTIONS[e.choose("reduce", sorted(REDUCTIONS))]
        keep = e.draw(st.booleans(), label="keep_dims")
        axis = e.draw(st.integers(-len(shape), len(shape) - 1), label="axis")
        dropped = shape[: axis % len(shape)] + shape[axis % len(shape) + 1 :]
        if not keep and (len(shape) == 1 or not has_layout(dropped)):
            keep = True
        reduced = op(x, [axis], keep_dims=keep).result
        if keep and e.draw(st.booleans(), label="recombine"):
            return rlx.SubOp(x, reduced).result  # x - max(x): softmax-like
        return reduced
    if step == "softmax":
        if not shape:
            return x
        axis = e.draw(st.integers(-len(shape), len(shape) - 1), label="axis")
        return rlx.SoftmaxOp(x, axis if axis != -1 else None).result
    # A norm scales its input up by 1/rms: on a value that is near zero by
    # cancellation (x·(1 − x²/(x² + eps)) for C = 1) it amplifies rounding,
    # so only arguments get a small eps.
    conditioned = e.exact and x in args
    if step == "rms_norm" and shape:
        eps = e.choose("eps", [1e-6, 1e-5]) if conditioned else 0.1
        return rlx.RmsNormOp(x, e.param((c,), 0.1, 1.0), eps).result
    if step == "layer_norm" and shape:
        if c == 1:
            return x
        gamma, beta = e.param((c,), 0.1, 1.0), e.param((c,), 0.1)
        eps = 1e-5 if conditioned else 0.1
        return rlx.LayerNormOp(x, gamma, beta, eps).result
    if step == "linear" and len(shape) >= 2:
        cout = e.choose("cout", [1, 3, 4, 8, 16])
        stored = e.choose("stored", ["out_in", "in_out"])
        scale = 1.0 / np.sqrt(c)
        if stored == "out_in":
            w = e.param((cout, c), scale)
            return rlx.MatmulOp(x, w, transpose_rhs=True).result
        return rlx.MatmulOp(x, e.param((c, cout), scale)).result
    if step == "transpose" and len(shape) >= 2:
        perm = list(range(len(shape)))
        perm[-1], perm[-2] = perm[-2], perm[-1]
        return rlx.TransposeOp(x, perm).result
    if step == "reshape" and (len(shape) == 2 or (len(shape) == 3 and shape[0] == 1)):
        if len(shape) == 3:
            return rlx.ReshapeOp(x, shape[1:]).result
        return rlx.ReshapeOp(x, (1, *shape)).result
    if step == "narrow" and shape and shape[-1] > 1:
        length = e.draw(st.integers(1, shape[-1] - 1), label="length")
        start = e.draw(st.integers(0, shape[-1] - length), label="start")
        return rlx.NarrowOp(x, len(shape) - 1, start, length).result
    if step == "concat" and shape:
        same = [
            v
            for v in pool
            if len(shape_of(v)) == len(shape) and shape_of(v)[:-1] == shape[:-1]
        ]
        if not same:
            return x
        other = e.draw(st.sampled_from(same), label="other")
        axis = e.choose("concat_axis", [-1, len(shape) - 1])
        return rlx.ConcatOp([x, other], axis).result
    if step == "expand" and len(shape) >= 2:
        row = rlx.ReduceMeanOp(x, [len(shape) - 2], keep_dims=True).result
        return rlx.AddOp(x, rlx.ExpandOp(row, shape).result).result
    if step == "round_trip_cast":
        other = f32 if e.float_type == f16 else f16
        return rlx.CastOp(rlx.CastOp(x, other).result, e.float_type).result
    if step == "activation_backward":
        same = [v for v in pool if shape_of(v) == shape]
        d_out = e.draw(st.sampled_from(same), label="d_out") if same else x
        kind = e.choose("kind", list(rlx.ACTIVATION_KINDS))
        return rlx.ActivationBackwardOp(x, d_out, kind).result
    if step == "rms_norm_backward" and shape:
        # With few channels the input gradient r·g·(1 − x²r²) cancels, beyond
        # fp16's precision.
        if not e.exact and c < 4:
            return x
        # d_out is a fresh tensor: along x itself the input gradient cancels
        # to nearly zero (x·(1 − ms/(ms + eps))), which later norms amplify.
        d_out = e.param(shape)
        if e.draw(st.booleans(), label="wrt_gamma") and len(shape) >= 2:
            return rlx.RmsNormBackwardGammaOp(x, d_out, 1e-5).result
        gamma = e.param((c,), 0.1, 1.0)
        return rlx.RmsNormBackwardInputOp(x, gamma, d_out, 1e-5).result
    if step == "heads" and len(shape) == 3 and c % 2 == 0:
        # [1, S, H*D] -> [1, H, S, D] -> op -> back: the head split and merge
        # of attention, cancelled in ANE form.
        s = shape[1]
        h = e.choose("heads", [h for h in (1, 2, 4) if c % h == 0])
        split = rlx.ReshapeOp(x, (1, s, h, c // h)).result
        heads = rlx.TransposeOp(split, (0, 2, 1, 3)).result
        heads = rlx.SiluOp(heads).result
        if e.draw(st.booleans(), label="return_heads"):
            return heads
        merged = rlx.TransposeOp(heads, (0, 2, 1, 3)).result
        return rlx.ReshapeOp(merged, shape).result
    if step == "matmul" and len(shape) >= 2:
        # Two activations: x · yᵀ (scores-like), not a weight product.
        same = [v for v in pool if shape_of(v) == shape]
        other = e.draw(st.sampled_from(same), label="other") if same else x
        scaled = rlx.MulOp(x, e.constant(1.0 / np.sqrt(c))).result
        return rlx.MatmulOp(scaled, other, transpose_rhs=True).result
    if step == "shared_linear" and len(shape) >= 2:
        # One weight read by two products (one const, or one weight argument).
        w = e.param((c, c), 1.0 / np.sqrt(c))
        name = w.owner.param_name.data
        first = rlx.MatmulOp(x, w, transpose_rhs=True).result
        again = rlx.ParamOp(name, tensor((c, c), e.float_type)).result
        return rlx.AddOp(first, rlx.MatmulOp(x, again, transpose_rhs=True)).result
    if step == "quantize" and e.exact:
        # Rounding steps are only drawn where both sides compute in f32.
        scale = e.choose("quant_scale", [0.05, 0.1])
        zero = e.choose("zero_point", [0, 3])
        q = rlx.QuantizeOp(x, scale, zero).result
        return rlx.DequantizeOp(q, scale, zero, e.float_type).result
    if step == "reduce_all" and shape:
        op = REDUCTIONS[e.choose("reduce", sorted(REDUCTIONS))]
        return op(x, list(range(len(shape)))).result
    e.steps[-1] += "(skipped)"
    return x


def activation_program(draw, e: Emitter) -> tuple[list[Argument], Callable]:
    s = draw(st.integers(1, 6), label="S")
    c = draw(st.sampled_from([1, 2, 3, 4, 8, 16]), label="C")
    form = draw(st.sampled_from(["sc", "bsc", "c"]), label="form")
    x_shape = {"sc": (s, c), "bsc": (1, s, c), "c": (c,)}[form]
    start = draw(st.sampled_from(["argument", "gather"]), label="start")
    if start == "gather":
        arguments = [Argument(x_shape[:-1], i32, "index", 7)]
    else:
        arguments = [Argument(x_shape, e.float_type)]
    second = draw(st.sampled_from(["none", "same", "channels"]), label="second")
    if second == "same":
        arguments.append(Argument(x_shape, e.float_type))
    elif second == "channels":
        arguments.append(Argument((c,), e.float_type))
    n_steps = draw(st.integers(1, 6), label="steps")
    extra_result = draw(
        st.sampled_from(["none", "earlier", "argument", "param", "twice"]),
        label="extra_result",
    )

    def body(*args: SSAValue) -> list[SSAValue]:
        if start == "gather":
            table = e.param((7, c))
            x = rlx.GatherOp(table, args[0]).result
            if shape_of(x) != x_shape:
                x = rlx.ReshapeOp(x, x_shape).result
            float_args = list(args[1:])
        else:
            x = args[0]
            float_args = list(args)
        pool = [x, *float_args]
        for _ in range(n_steps):
            x = activation_step(e, x, pool, float_args)
            pool.append(x)
        results = [x]
        earlier = [v for v in pool[:-1] if v is not x and v not in args]
        if extra_result == "earlier" and earlier:
            results.append(draw(st.sampled_from(earlier), label="second_result"))
        elif extra_result == "argument" and float_args:
            results.append(float_args[-1])  # an argument returned as it is
        elif extra_result == "param":
            results.append(e.param((c,)))  # a result that reads no input
        elif extra_result == "twice":
            results.append(x)
        return results

    return arguments, body


# --- the attention family --------------------------------------------------------


def attention_program(draw, e: Emitter) -> tuple[list[Argument], Callable]:
    h = draw(st.sampled_from([1, 2, 4]), label="H")
    hkv = draw(st.sampled_from([d for d in (1, 2, 4) if h % d == 0]), label="Hkv")
    s = draw(st.integers(1, 6), label="S")
    d = draw(st.sampled_from([2, 4, 8]), label="D")
    mask = draw(st.sampled_from(["none", "causal", "bias"]), label="mask")
    scale = draw(st.sampled_from([None, 0.25]), label="scale")
    wrt = draw(st.sampled_from([None, None, "query", "key", "value"]), label="wrt")
    rope = draw(st.sampled_from([None, "half", "interleaved"]), label="rope")
    # q, k and v projected from one activation [1, S, C] by weights (the
    # layer's form), or given as head-shaped arguments.
    projected = wrt is None and draw(st.booleans(), label="projected")
    skv = s if projected else s + draw(st.integers(0, 3), label="extra_kv")
    merge = wrt is None and draw(st.booleans(), label="merge_heads")
    e.steps.append(
        f"attention H={h} Hkv={hkv} S={s} Skv={skv} D={d} mask={mask} wrt={wrt} "
        f"rope={rope} projected={projected} merge={merge}"
    )
    hidden = 8
    if projected:
        arguments = [Argument((1, s, hidden))]
    else:
        arguments = [
            Argument((1, h, s, d)),
            Argument((1, hkv, skv, d)),
            Argument((1, hkv, skv, d)),
        ]
    if wrt is not None:
        arguments.append(Argument((1, h, s, d)))
    if mask == "bias":
        bias_shape = draw(
            st.sampled_from([(1, h, s, skv), (1, 1, s, skv), (s, skv)]), label="bias"
        )
        arguments.append(Argument(bias_shape))

    def heads(x: SSAValue, n: int) -> SSAValue:
        """x·Wᵀ split into n heads: [1, S, C] -> [1, n, S, D]."""
        w = e.param((n * d, hidden), 1.0 / np.sqrt(hidden))
        y = rlx.MatmulOp(x, w, transpose_rhs=True).result
        split = rlx.ReshapeOp(y, (1, s, n, d)).result
        return rlx.TransposeOp(split, (0, 2, 1, 3)).result

    def body(*args: SSAValue) -> list[SSAValue]:
        if projected:
            q, k, v = heads(args[0], h), heads(args[0], hkv), heads(args[0], hkv)
        else:
            q, k, v = args[:3]
        d_out = args[3] if wrt is not None else None
        bias = args[-1] if mask == "bias" else None
        if rope is not None:
            q = rlx.RopeOp(q, e.param((s, d // 2)), e.param((s, d // 2)), rope).result
            k = rlx.RopeOp(
                k, e.param((skv, d // 2)), e.param((skv, d // 2)), rope
            ).result
        if wrt is None:
            out = rlx.AttentionOp(q, k, v, bias, mask=mask, scale=scale).result
        else:
            assert d_out is not None
            out = rlx.AttentionBackwardOp(
                q, k, v, d_out, wrt, bias, mask=mask, scale=scale
            ).result
        if merge:
            merged = rlx.TransposeOp(out, (0, 2, 1, 3)).result
            out = rlx.ReshapeOp(merged, (1, s, h * d)).result
        return [out]

    return arguments, body


# --- the cross-entropy family ----------------------------------------------------


def cross_entropy_program(draw, e: Emitter) -> tuple[list[Argument], Callable]:
    n = draw(st.integers(1, 6), label="N")
    c = draw(st.sampled_from([2, 3, 5, 8, 16]), label="C")
    labels_type = draw(st.sampled_from([i32, f32]), label="labels")
    projected = draw(st.booleans(), label="projected")
    backward = draw(st.booleans(), label="backward")
    mean = not backward and draw(st.booleans(), label="mean")
    cin = 4
    e.steps.append(
        f"cross_entropy N={n} C={c} {labels_type} projected={projected} "
        f"backward={backward} mean={mean}"
    )
    arguments = [
        Argument((n, cin) if projected else (n, c)),
        Argument((n,), labels_type, "index", c),
    ]
    if backward:
        arguments.append(Argument((n,)))

    def body(*args: SSAValue) -> list[SSAValue]:
        logits, labels = args[0], args[1]
        if projected:
            w = e.param((c, cin), 1.0 / np.sqrt(cin))
            logits = rlx.MatmulOp(logits, w, transpose_rhs=True).result
        if backward:
            return [rlx.SoftmaxCrossEntropyBackwardOp(logits, labels, args[2]).result]
        loss = rlx.SoftmaxCrossEntropyOp(logits, labels).result
        if mean:
            loss = rlx.ReduceMeanOp(loss, [0]).result
        return [loss]

    return arguments, body


FAMILIES = {
    "activation": activation_program,
    "attention": attention_program,
    "cross_entropy": cross_entropy_program,
}


def make_input(rng: np.random.Generator, argument: Argument) -> np.ndarray:
    dtype = numpy_dtype(argument.element)
    if argument.kind == "index":
        return rng.integers(0, argument.bound, argument.shape).astype(dtype)
    return rng.standard_normal(argument.shape).astype(dtype)


@st.composite
def programs(draw, family: str, exact: bool = False) -> FuzzProgram:
    """A random well-typed rlx program of `family` with weights and inputs;
    `exact` when it is compiled without fp16 (rounding steps may be drawn)."""
    seed = draw(st.integers(0, 2**32 - 1), label="seed")
    float_type = f32
    if family == "activation":
        float_type = draw(st.sampled_from([f32, f32, f16]), label="float_type")
    e = Emitter(draw, np.random.default_rng(seed), exact and float_type == f32)
    e.float_type = float_type
    arguments, body = FAMILIES[family](draw, e)
    types = [tensor(a.shape, a.element) for a in arguments]
    function = build_function("fuzz", types, body)
    module = builtin.ModuleOp([function])
    module.verify()
    rng = np.random.default_rng(seed + 1)
    inputs = [make_input(rng, a) for a in arguments]
    return FuzzProgram(module, e.weights, inputs, e.steps)

"""`mil-ane-layout`: puts each function into the ANE's `[1, C, 1, S]` form.

Arguments and results become rank-4 `[1, C, 1, S]` tensors mapped from their
logical shapes as `xdsl_ane/passes/layouts.py` describes; the mapping of each
is recorded on the function as `ane.arg_layouts` / `ane.result_layouts`
(`#ane.layout` records, `xdsl_ane.dialects.ane`), and the results' names as
`ane.result_names` where the function has none yet (the returned values'
name hints, which the rewrite does not keep).

Inside, every logical value may get an ANE-form *twin*. Walking the body in
order, an op whose operands have twins is rebuilt on the twins where that is
natural, and its result gets a twin:

- elementwise ops (unary, binary, compare, select, cast) — operands without
  a twin are laid out to broadcast against the result's form;
- reductions with kept dims and softmax over the channel axis, layer_norm
  over the channels, cumsum along any axis of `[C]`, `[S, C]` or
  `[1, S, C]` (its axis moved where the layout puts it);
- a matmul of an activation by a weight `[Cout, Cin]` (x·Wᵀ) or `[Cin, Cout]`
  becomes a 1×1 `conv` with weight `[Cout, Cin, 1, 1]` (`weights=static`;
  the const views the weights file's tensor, transposed where needed), or,
  with `weights=dynamic`, the weight becomes a function argument
  `[1, Cin, 1, Cout]` and the product is reshapes and one matmul with
  `transpose_x`, computed transposed (recorded in `ane.weight_args` as
  `#ane.weight_arg`s);
- reshapes and transposes that leave the ANE-form element order unchanged
  (a head split `[1, S, H·D] -> [1, H, S, D]` or merge) cost nothing;
- a concat of `[C]`, `[S, C]` or `[1, S, C]` values along either axis
  (a class token before a ViT's patches) joins their ANE forms;
- images and 1-D signals: the input and result of a convolution or
  another image op (the trait `ImageOp`: pools, batch and instance norms,
  upsampling, pixel_shuffle / pixel_unshuffle), and the values the
  elementwise ops and channel concats around them connect, are laid out
  `nchw` (`[1, C, H, W]`, unchanged) or `ncw` (`[1, C, W]` as
  `[1, C, 1, W]`) instead of by shape alone; a 1-D conv or conv_transpose
  becomes the 2-D one with a kernel of height 1.

An op without such a rule runs on logical values; where it reads a value
that only exists as a twin, the twin is converted back (reshape, transpose,
reshape) — the layout changes that attention's head split needs. Results
are returned as twins, converted when needed. Layout ops inserted here are
left for `canonicalize` to fold and cancel; the logical ops that lost their
uses are erased.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, cast, get_args

import numpy as np
from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import ArrayAttr, TensorType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import is_side_effect_free
from xdsl.utils.exceptions import PassFailedException, VerifyException

from xdsl_ane.dialects import ane, mil
from xdsl_ane.dialects.dense import dense_to_numpy
from xdsl_ane.dialects.mil.builders import const_op
from xdsl_ane.dialects.mil.traits import Elementwise, ImageLink, ImageOp
from xdsl_ane.dialects.typing import (
    bool_prop,
    element_type_of,
    i64_attr,
    int_prop,
    ints_attr,
    ints_prop,
    shape_of,
    tensor,
)
from xdsl_ane.locations import copy_location, where
from xdsl_ane.passes.layouts import (
    SPATIAL_KINDS,
    Layout,
    LayoutError,
    layout_of,
    spatial_layout,
)

CUMSUM_AXES = {"c": (1,), "sc": (3, 1), "bsc": (0, 3, 1)}
"""Where each logical axis of a `c`, `sc` or `bsc` value lies in its ANE form
(`[1, C, 1, S]`): a cumsum, or a concat, along it runs there."""

CHANNEL_LAYOUTS = ("c", "sc", "bsc", "scalar", "ane")
"""Layouts whose ANE form is an axis permutation of the logical one (no
merged axes): broadcasting and channel-axis rules carry over."""


def spatial_values(block: Block) -> set[SSAValue]:
    """The images `[1, C, H, W]` and signals `[1, C, W]` of `block`: the x
    and result of each `ImageOp` op, and every value joined to one through
    an elementwise op of the same shape, a concat along the channels (a
    residual add, a U-Net skip) or an `ImageLink` op, either way."""

    def is_spatial_shape(value: SSAValue) -> bool:
        t = value.type
        return (
            isinstance(t, TensorType)
            and t.get_num_dims() in (3, 4)
            and t.get_shape()[0] == 1
        )

    links: dict[SSAValue, list[SSAValue]] = {}
    found: list[SSAValue] = []
    for op in block.ops:
        if op.has_trait(ImageOp, value_if_unregistered=False) and op.operands:
            found += [v for v in (op.operands[0], op.results[0]) if is_spatial_shape(v)]
            continue
        joined: list[SSAValue] = []
        if op.has_trait(Elementwise) and op.results:
            result = op.results[0]
            joined = [
                o
                for o in op.operands
                if o.type == result.type
                or (isinstance(o.type, TensorType) and shape_of(o) == shape_of(result))
            ]
        elif op.has_trait(ImageLink, value_if_unregistered=False) and op.operands:
            joined = [op.operands[0]]
        elif isinstance(op, mil.ConcatOp):
            rank = len(shape_of(op.results[0]))
            if int_prop(op.properties, "axis") % rank == 1:
                joined = list(op.operands)
        if joined and is_spatial_shape(op.results[0]):
            for o in joined:
                links.setdefault(o, []).append(op.results[0])
                links.setdefault(op.results[0], []).append(o)
    spatial: set[SSAValue] = set()
    while found:
        value = found.pop()
        if value in spatial:
            continue
        spatial.add(value)
        found += links.get(value, [])
    return spatial


def to_ane_ops(value: SSAValue, layout: Layout) -> list[Operation]:
    """mil ops taking `value` (logical) to `layout`'s ANE form."""
    return convert_ops(value, [layout.split, None, layout.ane], layout.perm)


def to_logical_ops(value: SSAValue, layout: Layout) -> list[Operation]:
    """mil ops taking `value` (ANE form) back to `layout`'s logical shape."""
    return convert_ops(
        value, [layout.permuted, None, layout.logical], layout.inverse_perm
    )


def convert_ops(
    value: SSAValue, shapes: list[tuple[int, ...] | None], perm: Sequence[int]
) -> list[Operation]:
    """reshape(shapes[0]), transpose(perm), reshape(shapes[2]), skipping
    steps that change nothing; a single reshape when the transpose only
    moves axes of size 1 (the element order is then unchanged)."""
    split = shapes[0]
    assert split is not None
    moved = [split[p] for p in perm if split[p] != 1]
    kept = [d for i, d in enumerate(split) if d != 1 and i in perm]
    order = [p for p in perm if split[p] != 1]
    if moved == kept and order == sorted(order):
        final = shapes[2]
        assert final is not None
        return [] if shape_of(value) == final else [mil.ReshapeOp(value, final)]
    ops: list[Operation] = []
    current = value
    for step, shape in enumerate(shapes):
        if step == 1:
            if list(perm) != sorted(perm):
                ops.append(mil.TransposeOp(current, perm))
        elif shape_of(current) != shape:
            assert shape is not None
            ops.append(mil.ReshapeOp(current, shape))
        if ops:
            current = ops[-1].results[0]
    return ops


def broadcast_layout(shape: Sequence[int], result: Layout) -> Layout | None:
    """The layout that puts an operand of logical `shape`, which broadcasts to
    `result.logical`, in a form that broadcasts to `result.ane` the same way;
    None when there is none."""
    rank = len(result.logical)
    padded = (1,) * (rank - len(shape)) + tuple(shape)
    if len(padded) != rank:
        return None
    if result.name in SPATIAL_KINDS:
        # a bias [C, 1, 1] of an image, [1, 1, W] of a signal: padded to the
        # result's rank, laid out the same way.
        return spatial_layout(padded) if padded[0] == 1 else None
    if result.name == "bhsd":
        _, h, s, d = padded
        if h * d not in (1, result.ane[1]) or padded[0] != 1:
            return None
    try:
        layout = layout_of(padded)
    except LayoutError:
        return None
    if layout.name == "ane" and result.name != "ane":
        # A rank-4 operand [1, C, 1, S] of a bhsd result is bhsd-mapped.
        if result.name != "bhsd":
            return None
        _, h, s, d = padded
        layout = Layout("bhsd", padded, (1, h * d, 1, s), padded, (0, 1, 3, 2))
    return layout


@dataclass
class Twin:
    """The ANE form of a logical value."""

    value: SSAValue
    layout: Layout


WeightMode = Literal["static", "dynamic", "lora"]
"""How matmuls against weights are laid out: `static` as 1×1 convs against
weights-file consts, `dynamic` against weight arguments of the function,
`lora` static but for LoRA's adapters (weights named `….lora_A`,
`….lora_B`), which are arguments (the frozen base weights are constants
of the kernels, the adapters trained)."""

ADAPTERS = ("lora_A", "lora_B")


def is_adapter(weight: mil.ConstOp) -> bool:
    """A LoRA adapter's weight (`layers.0.self_attn.q_proj.lora_A`)."""
    return weight.weight is not None and weight.weight.data.endswith(ADAPTERS)


WEIGHT_MODES: tuple[WeightMode, ...] = get_args(WeightMode)


def weight_mode(value: str, owner: str) -> WeightMode:
    """`value` as a `WeightMode`, or pass `owner`'s one-line error.

    The passes' `weights` options stay `str` and are checked here: xDSL's
    option parser answers a value outside a `Literal` field with a
    traceback, not a diagnostic."""
    if value not in WEIGHT_MODES:
        raise PassFailedException(
            f"{owner}: weights={value}, expected {' or '.join(WEIGHT_MODES)}"
        )
    return cast(WeightMode, value)


@dataclass
class FunctionLayout:
    """Rewrites one function into ANE form (see the module docstring)."""

    function: func.FuncOp
    weights: WeightMode
    twins: dict[SSAValue, Twin] = field(default_factory=dict)
    logical_copies: dict[SSAValue, SSAValue] = field(default_factory=dict)
    weight_args: dict[tuple[str | mil.ConstOp, bool], SSAValue] = field(
        default_factory=dict
    )
    """Weight arguments by (weight name, stored as [Cout, Cin] for this use):
    a weight used both as x·Wᵀ and as dy·W needs two arguments."""
    weight_records: list[ane.WeightArgAttr] = field(default_factory=list)
    spatial: set[SSAValue] = field(default_factory=set)
    """The images and signals (`spatial_values`)."""

    @property
    def block(self) -> Block:
        return self.function.body.blocks.first  # type: ignore[return-value]

    def run(self) -> None:
        # The returned values are replaced by their ANE forms: their names
        # are recorded first.
        try:
            ane.keep_result_names(self.function)
        except VerifyException as e:
            raise PassFailedException(f"mil-ane-layout: {e}") from None
        self.spatial = spatial_values(self.block)
        arg_records = self.convert_arguments()
        for op in list(self.block.ops):
            if isinstance(op, func.ReturnOp):
                result_records = self.convert_return(op)
            else:
                self.convert_op(op)
        self.erase_dead_ops()
        inputs = [a.type for a in self.block.args]
        outputs = [o.type for o in self.block.last_op.operands]  # type: ignore[union-attr]
        self.function.function_type = builtin.FunctionType.from_lists(inputs, outputs)
        attrs = self.function.attributes
        attrs[ane.ARG_LAYOUTS] = ArrayAttr(arg_records)
        attrs[ane.RESULT_LAYOUTS] = ArrayAttr(result_records)
        if self.weight_records:
            attrs[ane.WEIGHT_ARGS] = ArrayAttr(self.weight_records)

    # --- boundaries --------------------------------------------------------

    def convert_arguments(self) -> list[ane.LayoutAttr]:
        records = []
        for arg in list(self.block.args):
            if isinstance(arg.type, mil.StateType):
                # A state keeps its own shape: it never crosses the ANE's
                # I/O as an activation, and a KV cache [L, Hkv, ctx, D] is
                # written and read in that layout by the program itself.
                records.append(state_record(arg.type))
                continue
            layout = self.layout(arg, "argument")
            records.append(layout.record())
            if layout.name in ("ane", "nchw"):
                self.twins[arg] = Twin(arg, layout)
                continue
            element = element_type_of(arg)
            new_arg = Rewriter.replace_value_with_new_type(
                arg, tensor(layout.ane, element)
            )
            new_arg.name_hint = arg.name_hint
            ops = to_logical_ops(new_arg, layout)
            self.insert_at_start(ops)
            logical = ops[-1].results[0]
            if arg in self.spatial:
                self.spatial.add(logical)
            for use in list(new_arg.uses):
                if use.operation not in ops:
                    use.operation.operands[use.index] = logical
            self.twins[logical] = Twin(new_arg, layout)
        return records

    def convert_return(self, op: func.ReturnOp) -> list[ane.LayoutAttr]:
        records = []
        for i, value in enumerate(op.operands):
            layout = self.layout(value, "result")
            records.append(layout.record())
            op.operands[i] = self.ane_value(value, layout, op)
        return records

    def layout(self, value: SSAValue, what: str) -> Layout:
        if not isinstance(value.type, TensorType):
            raise PassFailedException(
                f"{where(self.function)}mil-ane-layout: @{self.function.sym_name.data}: "
                f"{what} of type {value.type} is not a tensor"
            )
        try:
            return self.value_layout(value)
        except LayoutError as e:
            raise PassFailedException(
                f"{where(self.function)}mil-ane-layout: @{self.function.sym_name.data}: "
                f"{what} of type {value.type}: {e}"
            ) from None

    def value_layout(self, value: SSAValue) -> Layout:
        """The layout of a logical value: an image's or signal's, else the
        one its shape picks (raises LayoutError)."""
        if value in self.spatial:
            return spatial_layout(shape_of(value))
        return layout_of(shape_of(value))

    # --- twins ---------------------------------------------------------------

    def ane_value(self, value: SSAValue, layout: Layout, before: Operation) -> SSAValue:
        """`value` in `layout`'s ANE form: its twin, or converted before `before`."""
        twin = self.twins.get(value)
        if twin is not None and shape_of(twin.value) == layout.ane:
            return twin.value
        value, layout = self.order_preserving_source(value, layout)
        ops = to_ane_ops(self.logical_value(value, before), layout)
        if not ops:
            return value
        Rewriter.insert_op(ops, InsertPoint.before(before))
        return ops[-1].results[0]

    def order_preserving_source(
        self, value: SSAValue, layout: Layout
    ) -> tuple[SSAValue, Layout]:
        """Looks through the reshapes and transposes that produced `value`
        for a source whose own ANE form is `value`'s (an attention head merge
        [1, H, S, D] -> [1, S, H·D] is one): converting the source skips
        the chain."""
        chain: list[Operation] = []
        source = value
        best = (value, layout)
        while isinstance(owner := source.owner, mil.ReshapeOp | mil.TransposeOp):
            if len(chain) >= 4:
                break
            chain.append(owner)
            source = owner.operands[0]
            try:
                source_layout = self.value_layout(source)
            except LayoutError:
                continue
            if source_layout.ane == layout.ane and keeps_ane_order(
                source_layout, chain, layout
            ):
                best = (source, source_layout)
        return best

    def logical_value(self, value: SSAValue, before: Operation) -> SSAValue:
        """`value` computed from its twin when it has one (so the logical
        chain that produced it can die), else itself."""
        twin = self.twins.get(value)
        if twin is None or twin.value is value:
            return value
        if value in self.logical_copies:
            return self.logical_copies[value]
        ops = to_logical_ops(twin.value, twin.layout)
        if not ops:
            return twin.value
        owner = twin.value.owner
        if isinstance(owner, Operation):
            Rewriter.insert_op(ops, InsertPoint.after(owner))
        else:
            self.insert_at_start(ops)
        copy = ops[-1].results[0]
        self.logical_copies[value] = copy
        self.twins[copy] = twin
        return copy

    def insert_at_start(self, ops: list[Operation]) -> None:
        first = self.block.first_op
        if first is None:
            self.block.add_ops(ops)
        else:
            Rewriter.insert_op(ops, InsertPoint.before(first))

    # --- ops -----------------------------------------------------------------

    def convert_op(self, op: Operation) -> None:
        rule = self.rule_for(op)
        twin = rule(op) if rule is not None else None
        if twin is not None:
            self.twins[op.results[0]] = twin
            if twin.layout.name == "nchw":
                # an image is its own logical value, which later ops read
                self.twins[twin.value] = twin
            return
        # No ANE form: read logical operands, rebuilt from twins where needed.
        for i, operand in enumerate(op.operands):
            op.operands[i] = self.logical_value(operand, op)

    def rule_for(self, op: Operation) -> Callable[[Operation], Twin | None] | None:
        if op.has_trait(Elementwise):
            return self.elementwise
        if isinstance(
            op, mil.ReduceSumOp | mil.ReduceMeanOp | mil.ReduceMaxOp | mil.ReduceMinOp
        ):
            return self.channel_reduction
        if isinstance(op, mil.SoftmaxOp):
            return self.softmax
        if isinstance(op, mil.CumsumOp):
            return self.cumsum
        if isinstance(op, mil.LayerNormOp):
            return self.layer_norm
        if isinstance(op, mil.MatmulOp):
            return self.matmul
        if isinstance(op, mil.ReshapeOp | mil.TransposeOp):
            return self.layout_op
        if isinstance(op, mil.ConvOp | mil.ConvTransposeOp):
            return self.convolution
        if isinstance(op, mil.PadOp):
            return self.signal_pad
        if isinstance(op, mil.ConcatOp):
            return self.concat
        return None

    def result_layout(self, op: Operation) -> Layout | None:
        try:
            return self.value_layout(op.results[0])
        except LayoutError:
            return None

    def has_twin_operand(self, op: Operation) -> bool:
        return any(o in self.twins for o in op.operands)

    def rebuild(self, op: Operation, operands: Sequence[SSAValue]) -> Operation:
        """`op` on other operands with its properties, types inferred again."""
        new = type(op).__new__(type(op))
        new.init_inferred(list(operands), dict(op.properties))  # type: ignore[attr-defined]
        Rewriter.insert_op(new, InsertPoint.after(op))
        copy_location(new, op)
        return new

    def elementwise(self, op: Operation) -> Twin | None:
        result = self.result_layout(op)
        if result is None or result.name not in (*CHANNEL_LAYOUTS, *SPATIAL_KINDS):
            # Attention-shaped values ([1, H, S, D]) feed ops that read them
            # in logical form; computing them in ANE form would only add
            # conversions.
            return None
        if not self.has_twin_operand(op):
            return None
        operands = []
        for operand in op.operands:
            shape = shape_of(operand)
            if not shape:
                operands.append(operand)
                continue
            layout = broadcast_layout(shape, result)
            if layout is None:
                return None
            operands.append((operand, layout))
        ane_operands = [
            o if isinstance(o, SSAValue) else self.ane_value(o[0], o[1], op)
            for o in operands
        ]
        new = self.rebuild(op, ane_operands)
        if shape_of(new.results[0]) != result.ane:
            new.detach()
            new.erase()
            return None
        return Twin(new.results[0], result)

    def channel_axis_twin(
        self, op: Operation, axes: Sequence[int]
    ) -> tuple[Twin, Layout] | None:
        """The operand's twin when `axes` are exactly its last (channel) axis
        in a channel layout."""
        x = op.operands[0]
        twin = self.twins.get(x)
        rank = len(shape_of(x))
        if twin is None or twin.layout.name not in ("c", "sc", "bsc"):
            return None
        if [a % rank for a in axes] != [rank - 1]:
            return None
        result = self.result_layout(op)
        if result is None:
            return None
        return twin, result

    def channel_reduction(self, op: Operation) -> Twin | None:
        if not bool_prop(op.properties, "keep_dims"):
            return None
        axes = ints_prop(op.properties, "axes")
        found = self.channel_axis_twin(op, axes or ())
        if found is None:
            return None
        twin, result = found
        new = type(op)(twin.value, [1], keep_dims=True)  # type: ignore[call-arg]
        Rewriter.insert_op(new, InsertPoint.after(op))
        copy_location(new, op)
        return Twin(new.results[0], result)

    def softmax(self, op: Operation) -> Twin | None:
        assert isinstance(op, mil.SoftmaxOp)
        found = self.channel_axis_twin(
            op, [int_prop(op.properties, "axis", op.input_default("axis"))]
        )
        if found is None:
            return None
        twin, result = found
        new = mil.SoftmaxOp(twin.value, 1)
        Rewriter.insert_op(new, InsertPoint.after(op))
        copy_location(new, op)
        return Twin(new.results[0], result)

    def cumsum(self, op: Operation) -> Twin | None:
        """A cumsum of a `c`, `sc` or `bsc` value runs on its twin along the
        axis its axis becomes there (the channels 1, the sequence 3)."""
        assert isinstance(op, mil.CumsumOp)
        twin = self.twins.get(op.x)
        if twin is None or twin.layout.name not in CUMSUM_AXES:
            return None
        result = self.result_layout(op)
        if result is None or result != twin.layout:
            return None
        rank = len(shape_of(op.x))
        axis = int_prop(op.properties, "axis", op.input_default("axis")) % rank
        properties = {
            "axis": i64_attr(CUMSUM_AXES[twin.layout.name][axis]),
            **{k: v for k, v in op.properties.items() if k != "axis"},
        }
        new = mil.CumsumOp.__new__(mil.CumsumOp)
        new.init_inferred([twin.value], properties)
        Rewriter.insert_op(new, InsertPoint.after(op))
        copy_location(new, op)
        return Twin(new.results[0], result)

    def layer_norm(self, op: Operation) -> Twin | None:
        assert isinstance(op, mil.LayerNormOp)
        rank = len(shape_of(op.x))
        axes = ints_prop(op.properties, "axes") or tuple(range(rank))
        found = self.channel_axis_twin(op, axes)
        if found is None:
            return None
        twin, result = found
        epsilon = op.epsilon.value.data if op.epsilon else None
        new = mil.LayerNormOp(twin.value, op.gamma, op.beta, axes=[1], epsilon=epsilon)
        Rewriter.insert_op(new, InsertPoint.after(op))
        copy_location(new, op)
        return Twin(new.results[0], result)

    def layout_op(self, op: Operation) -> Twin | None:
        """A reshape/transpose chain from a twin that keeps the ANE element
        order: the result's twin is the source's twin, at no cost (or, from
        an image or signal, its reshape to the result's ANE shape)."""
        result = self.result_layout(op)
        if result is None:
            return None
        chain: list[Operation] = [op]
        source = op.operands[0]
        while source not in self.twins:
            owner = source.owner
            if not isinstance(owner, mil.ReshapeOp | mil.TransposeOp) or len(chain) > 4:
                return None
            chain.append(owner)
            source = owner.operands[0]
        twin = self.twins[source]
        if not keeps_ane_order(twin.layout, chain, result):
            return None
        if twin.layout.ane == result.ane:
            return Twin(twin.value, result)
        if twin.layout.name not in SPATIAL_KINDS:
            return None
        # An image flattened into a sequence (a ViT's patches [1, C, H, W] ->
        # [1, H·W, C]) holds its elements in the sequence's ANE order: one
        # reshape of the image instead of a transpose each way.
        new = mil.ReshapeOp(twin.value, result.ane)
        Rewriter.insert_op(new, InsertPoint.after(op))
        copy_location(new, op)
        return Twin(new.results[0], result)

    def convolution(self, op: Operation) -> Twin | None:
        """An image's conv or conv_transpose runs as it is (on the twin of
        its input); a signal's [1, C, W] becomes the 2-D op on [1, C, 1, W]
        with a kernel [.., .., 1, K] and the height's stride, dilation and
        padding 1, 1 and 0."""
        assert isinstance(op, mil.ConvOp | mil.ConvTransposeOp)
        result = self.result_layout(op)
        x = op.operands[0]
        if result is None or result.name not in SPATIAL_KINDS or x not in self.spatial:
            return None
        x_twin = self.ane_value(x, self.value_layout(x), op)
        weight: SSAValue | None = op.weight
        bias = [] if op.bias is None else [op.bias]
        properties = dict(op.properties)
        if result.name == "ncw":
            weight = self.kernel_of_height_one(op.weight, op)
            if weight is None:
                return None
            for name, height in (("strides", 1), ("dilations", 1)):
                if name in properties:
                    values = ints_prop(properties, name)
                    assert values is not None
                    properties[name] = ints_attr([height, *values])
            if "pad" in properties:
                pad = ints_prop(properties, "pad")
                assert pad is not None
                properties["pad"] = ints_attr([0, 0, *pad])
        new = type(op).__new__(type(op))
        new.init_inferred([x_twin, weight, bias], properties)  # type: ignore[attr-defined]
        Rewriter.insert_op(new, InsertPoint.after(op))
        copy_location(new, op)
        if shape_of(new.results[0]) != result.ane:
            new.detach()
            new.erase()
            return None
        return Twin(new.results[0], result)

    def signal_pad(self, op: Operation) -> Twin | None:
        """A pad of a signal's W only (a conv's padded input) runs on its
        [1, C, 1, W] twin: MIL pads the last len(pad)/2 axes."""
        assert isinstance(op, mil.PadOp)
        result = self.result_layout(op)
        twin = self.twins.get(op.x)
        pad = ints_prop(op.properties, "pad")
        if (
            result is None
            or result.name != "ncw"
            or twin is None
            or twin.layout.name != "ncw"
            or pad is None
            or any(pad[:-2])
        ):
            return None
        properties = dict(op.properties)
        properties["pad"] = ints_attr(pad[-2:])
        new = mil.PadOp.__new__(mil.PadOp)
        new.init_inferred([twin.value], properties)
        Rewriter.insert_op(new, InsertPoint.after(op))
        copy_location(new, op)
        return Twin(new.results[0], result)

    def concat(self, op: Operation) -> Twin | None:
        """A concat of `c`, `sc` or `bsc` values runs on their twins along
        the axis its axis becomes there (`CUMSUM_AXES`): a ViT's class
        token joined to its patches stays in ANE form. Operands without a
        twin are laid out (a const's layout change folds into it)."""
        assert isinstance(op, mil.ConcatOp)
        result = self.result_layout(op)
        if (
            result is None
            or result.name not in CUMSUM_AXES
            or bool_prop(op.properties, "interleave")
            or not self.has_twin_operand(op)
            or any(0 in shape_of(v) for v in op.operands)
        ):
            return None
        layouts = []
        for operand in op.operands:
            try:
                layout = self.value_layout(operand)
            except LayoutError:
                return None
            if layout.name != result.name:
                return None
            layouts.append(layout)
        rank = len(shape_of(op.results[0]))
        axis = int_prop(op.properties, "axis") % rank
        values = [
            self.ane_value(value, layout, op)
            for value, layout in zip(op.operands, layouts)
        ]
        new = mil.ConcatOp(values, CUMSUM_AXES[result.name][axis])
        Rewriter.insert_op(new, InsertPoint.after(op))
        copy_location(new, op)
        return Twin(new.results[0], result)

    def kernel_of_height_one(
        self, weight: SSAValue, before: Operation
    ) -> SSAValue | None:
        """A 1-D conv's weight [A, B, K] as [A, B, 1, K]: a view of the same
        weights-file tensor or the reshaped inline value (a computed weight
        is reshaped, unless it must stay a constant for a dilated kernel)."""
        a, b, k = shape_of(weight)
        shape = (a, b, 1, k)
        element = element_type_of(weight)
        owner = weight.owner
        if isinstance(owner, mil.ConstOp) and owner.weight is not None:
            if ints_prop(owner.properties, "perm") is not None:
                return None
            new: Operation = mil.ConstOp.from_weight(
                owner.weight.data,
                tensor(shape, element),
                weight_shape=owner.file_shape(),
            )
        elif isinstance(owner, mil.ConstOp) and owner.val is not None:
            new = const_op(dense_to_numpy(owner.val).reshape(shape), element)
        else:
            dilations = ints_prop(before.properties, "dilations")
            if dilations is not None and any(d != 1 for d in dilations):
                return None
            new = mil.ReshapeOp(weight, shape)
        Rewriter.insert_op(new, InsertPoint.before(before))
        return new.results[0]

    def matmul(self, op: Operation) -> Twin | None:
        assert isinstance(op, mil.MatmulOp)
        weight = op.y.owner
        result = self.result_layout(op)
        if (
            result is None
            or result.name not in ("sc", "bsc")
            or bool_prop(op.properties, "transpose_x")
            or not isinstance(weight, mil.ConstOp)
            or len(shape_of(op.y)) != 2
        ):
            return None
        # An activation without a twin is laid out for the conv: worth its
        # (at most two) layout ops, which usually cancel or fold.
        x_layout = layout_of(shape_of(op.x))
        twin = Twin(self.ane_value(op.x, x_layout, op), x_layout)
        transposed = bool_prop(op.properties, "transpose_y")
        rows, cols = shape_of(op.y)
        c_out, c_in = (rows, cols) if transposed else (cols, rows)
        if self.weights == "static" or (
            self.weights == "lora" and not is_adapter(weight)
        ):
            conv_weight = self.conv_weight(weight, transposed, c_out, c_in, op)
            new = mil.ConvOp(twin.value, conv_weight)
            Rewriter.insert_op(new, InsertPoint.after(op))
            copy_location(new, op)
            return Twin(new.results[0], result)
        return Twin(
            self.dynamic_matmul(twin.value, weight, transposed, c_out, c_in, op), result
        )

    def conv_weight(
        self,
        weight: mil.ConstOp,
        transposed: bool,
        c_out: int,
        c_in: int,
        before: Operation,
    ) -> SSAValue:
        """The weight as `[Cout, Cin, 1, 1]`: a view of the same weights-file
        tensor, or the transformed inline value."""
        element = element_type_of(weight.result)
        shape = (c_out, c_in, 1, 1)
        if weight.weight is not None:
            base_perm = ints_prop(weight.properties, "perm")
            if (
                base_perm is not None or weight.weight_shape is not None
            ) and not transposed:
                raise PassFailedException(
                    f"mil-ane-layout: weight '{weight.weight.data}' already has a view"
                )
            new = mil.ConstOp.from_weight(
                weight.weight.data,
                tensor(shape, element),
                weight_shape=weight.file_shape(),
                perm=ints_prop(weight.properties, "perm") if transposed else (1, 0),
            )
        else:
            assert weight.val is not None
            value = dense_to_numpy(weight.val)
            new = const_op((value if transposed else value.T).reshape(shape), element)
        Rewriter.insert_op(new, InsertPoint.before(before))
        return new.results[0]

    def dynamic_matmul(
        self,
        x: SSAValue,
        weight: mil.ConstOp,
        transposed: bool,
        c_out: int,
        c_in: int,
        before: Operation,
    ) -> SSAValue:
        """x [1, Cin, 1, S] times the weight argument W [1, Cin, 1, Cout]
        (W[0, i, 0, o] = weight[o, i]), computed transposed: xᵀ [1, 1, Cin, S]
        and Wᵀ [1, 1, Cin, Cout] are reshapes of the two, yᵀ = W·xᵀ
        [1, 1, Cout, S] is one matmul with `transpose_x`, and its reshape is
        y's ANE form — no transposes."""
        w = self.weight_argument(weight, c_out, c_in, transposed)
        s = shape_of(x)[3]
        ops: list[Operation] = [
            xs := mil.ReshapeOp(x, (1, 1, c_in, s)),
            ws := mil.ReshapeOp(w, (1, 1, c_in, c_out)),
            mm := mil.MatmulOp(ws.results[0], xs.results[0], True, False),
            mil.ReshapeOp(mm.results[0], (1, c_out, 1, s)),
        ]
        Rewriter.insert_op(ops, InsertPoint.after(before))
        return ops[-1].results[0]

    def weight_argument(
        self, weight: mil.ConstOp, c_out: int, c_in: int, transposed: bool
    ) -> SSAValue:
        """The function argument [1, Cin, 1, Cout] holding the weight
        (`transposed`: the weights file stores it [Cout, Cin], as x·Wᵀ)."""
        # a named weight by its name; an inline const by the op itself (held
        # by the key, so never confused with a later op at the same address)
        key: str | mil.ConstOp = (
            weight.weight.data if weight.weight is not None else weight
        )
        if (key, transposed) in self.weight_args:
            return self.weight_args[key, transposed]
        name = key if isinstance(key, str) else f"const_{len(self.weight_records)}"
        element = element_type_of(weight.result)
        arg = self.block.insert_arg(
            tensor((1, c_in, 1, c_out), element), len(self.block.args)
        )
        arg.name_hint = sanitize(name)
        self.weight_args[key, transposed] = arg
        self.weight_records.append(
            ane.WeightArgAttr(name, arg.index, (1, c_in, 1, c_out), transposed)
        )
        return arg

    def erase_dead_ops(self) -> None:
        changed = True
        while changed:
            changed = False
            for op in reversed(list(self.block.ops)):
                if isinstance(op, func.ReturnOp) or not op.name.startswith("mil."):
                    continue
                if all(not r.uses for r in op.results) and is_side_effect_free(op):
                    op.detach()
                    op.erase()
                    changed = True


def keeps_ane_order(source: Layout, chain: Sequence[Operation], result: Layout) -> bool:
    """Whether the reshapes/transposes `chain` (last op first) map `source`'s
    logical tensor to `result`'s with the same ANE-form element order,
    checked on an index array (once per distinct chain: the layers of a
    model repeat the same few)."""
    steps = []
    for step in reversed(chain):
        if isinstance(step, mil.ReshapeOp):
            steps.append(("reshape", tuple(shape_of(step.results[0]))))
        else:
            perm = ints_prop(step.properties, "perm")
            steps.append(("transpose", None if perm is None else tuple(perm)))
    return steps_keep_ane_order(source, tuple(steps), result)


@functools.lru_cache(maxsize=4096)
def steps_keep_ane_order(
    source: Layout,
    steps: tuple[tuple[str, tuple[int, ...] | None], ...],
    result: Layout,
) -> bool:
    """`keeps_ane_order` of the chain described by `steps`, first step
    first: ("reshape", result shape) or ("transpose", perm)."""
    index = np.arange(int(np.prod(source.ane)), dtype=np.int64).reshape(source.ane)
    logical = source.to_logical(index)
    for kind, arg in steps:
        if kind == "reshape":
            logical = logical.reshape(arg)
        else:
            logical = np.transpose(logical, arg)
    if logical.shape != result.logical:
        # `result` is a broadcast operand's padded layout ([1, C] read as
        # [1, 1, C]): no shortcut, the value is converted as it is.
        return False
    # Compared flat: the callers check the ANE shapes themselves (an image
    # reshaped to a sequence's form keeps the order in another shape).
    return bool(np.array_equal(result.to_ane(logical).ravel(), index.ravel()))


def sanitize(name: str) -> str:
    return "".join(c if c.isalnum() or c == "_" else "_" for c in name)


def state_record(t: mil.StateType) -> ane.LayoutAttr:
    """The layout record of a state argument: held as declared."""
    shape = t.wrapped.get_shape()
    return ane.LayoutAttr("state", shape, shape)


@dataclass(frozen=True)
class MilAneLayoutPass(ModulePass):
    """Puts every function into `[1, C, 1, S]` form: arguments and results
    rank 4, activations computed in that form where natural, matmuls against
    weights as 1×1 convs (`weights=static`) or against weight arguments
    (`weights=dynamic`)."""

    name = "mil-ane-layout"

    weights: str = "static"
    """A `WeightMode` (`str` for xDSL's option parser; see `weight_mode`)."""

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        weights = weight_mode(self.weights, self.name)
        for function in list(op.walk()):
            if isinstance(function, func.FuncOp) and function.body.blocks:
                if any(o.name.startswith("rlx.") for o in function.walk()):
                    raise PassFailedException(
                        f"mil-ane-layout: @{function.sym_name.data} still has rlx ops; "
                        "run convert-rlx-to-mil first"
                    )
                FunctionLayout(function, weights).run()

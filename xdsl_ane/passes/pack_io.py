"""`mil-pack-io`: one input and one output per kernel.

Driving the ANE directly, a request with several inputs fails, and weights
that change every step must arrive as input data. So the arguments of an
ANE-form function (`[1, C, 1, S]`) that share a channel count C are packed
side by side along the spatial axis into one argument `[1, C, 1, ΣS]`, which
the kernel slices apart (`slice_by_size`); results that share a spatial
size S are concatenated along the channels into one result `[1, ΣC, 1, S]`.
With one channel count among the inputs and one spatial size among the
outputs, that is the single-input, single-output form.

A tensor of another size is packed through a row-major view when its
element count allows: an input [1, C', 1, S'] becomes [1, C, 1, C'·S'/C]
(sliced, then reshaped back in the kernel), an output [1, C', 1, S']
becomes [1, C'·S'/S, 1, S] before the concat. So the kernels of a training
step, whose tensors have different channel counts, still take one input and
give one output. A tensor that divides neither way forms its own group.

The layout is recorded on the function as `ane.packing`, an
`#ane.packing` attribute (`xdsl_ane.dialects.ane`), and, by the tools, as
its manifest next to the compiled kernel. A packed tensor keeps its name
(the argument's hint, the result's `ane.result_names`); the packed inputs
are `input`, `input1`, ..., the packed outputs `output`, `output1`, ... For every packed tensor: its
original shape, the axis it is packed along (3 for inputs, 1 for outputs),
its offset and length there, and, when it is packed through a view, the
view's shape:

    #ane.packing<"f",
      inputs = [#ane.buffer<shape = [1, C, 1, S0 + L1], tensors = [
        #ane.packed<"x", arg = 0, shape = [1, C, 1, S0], axis = 3, offset = 0,
                    length = S0>,
        #ane.packed<"w", arg = 1, shape = [1, C1, 1, S1], axis = 3, offset = S0,
                    length = L1, view = [1, C, 1, L1]>]>],
      outputs = [#ane.buffer<shape = [1, C0 + C1, 1, S], tensors = [
        #ane.packed<"y", result = 0, shape = [...], axis = 1, offset = 0,
                    length = C0>, ...]>]>
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import PassFailedException

from xdsl_ane.dialects import mil
from xdsl_ane.dialects.ane import (
    PACKING,
    PackedBufferAttr,
    PackedTensorAttr,
    PackingAttr,
    record_result_names,
    result_names,
)
from xdsl_ane.dialects.typing import shape_of, tensor


def group_by(items: list[Any], key: Callable[[Any], Any]) -> list[list[Any]]:
    """Groups in order of first appearance."""
    groups: dict[Any, list[Any]] = {}
    for item in items:
        groups.setdefault(key(item), []).append(item)
    return list(groups.values())


def argument_name(value: SSAValue, index: int) -> str:
    return value.name_hint or f"arg{index}"


def pack_function(function: func.FuncOp) -> PackingAttr:
    """Packs `function`'s arguments and results in place; returns the record."""
    name = function.sym_name.data
    block = function.body.blocks.first
    assert block is not None
    for what, types in (
        ("argument", function.function_type.inputs.data),
        ("result", function.function_type.outputs.data),
    ):
        for i, t in enumerate(types):
            shape = t.get_shape() if isinstance(t, TensorType) else ()
            if len(shape) == 4 and shape[0] == 1 and shape[2] != 1:
                raise PassFailedException(
                    f"mil-pack-io: @{name}: {what} {i} of type {t} is an image "
                    "[1, C, H, W]; only [1, C, 1, S] tensors pack along S "
                    "(compile it without packing)"
                )
            if len(shape) != 4 or shape[0] != 1 or shape[2] != 1:
                raise PassFailedException(
                    f"mil-pack-io: @{name}: {what} {i} of type {t} is not in "
                    "[1, C, 1, S] form; run mil-ane-layout first"
                )
    names = result_names(function)  # before the returned values are replaced
    inputs = pack_arguments(block)
    outputs = pack_results(block, names)
    record = PackingAttr(name, inputs, outputs)
    function.function_type = builtin.FunctionType.from_lists(
        [a.type for a in block.args],
        [o.type for o in block.last_op.operands],  # type: ignore[union-attr]
    )
    function.attributes[PACKING] = record
    # The packed results are named as the packed arguments are; the
    # results' own names are in the record.
    record_result_names(
        function, [f"output{i}" if i else "output" for i in range(len(outputs))]
    )
    return record


def packing_key(
    shape: tuple[int, ...], base: int, axis: int
) -> tuple[int, tuple[int, int]]:
    """(the common size on `axis`, the tensor's [channels, spatial] view).

    A tensor whose size on `axis` is `base` packs as it is; another one is
    viewed row-major as [base, C·S / base] (inputs) or [C·S / base, base]
    (outputs) when that divides, so kernels with several tensor sizes still
    get one input and one output; otherwise it forms its own group."""
    c, s = shape[1], shape[3]
    if (c if axis == 1 else s) == base:
        return base, (c, s)
    if (c * s) % base == 0:
        return base, ((base, c * s // base) if axis == 1 else (c * s // base, base))
    return (c if axis == 1 else s), (c, s)


def pack_arguments(block: Block) -> list[PackedBufferAttr]:
    originals = list(block.args)
    records: list[PackedBufferAttr] = []
    if not originals:
        return records
    insert_at = block.first_op
    base = shape_of(originals[0])[1]
    keyed = [(arg, *packing_key(shape_of(arg), base, 1)) for arg in originals]
    for group in group_by(keyed, lambda k: (k[1], k[0].type.element_type)):
        channels = group[0][1]
        element = group[0][0].type.element_type
        total = sum(view[1] for _, _, view in group)
        packed = block.insert_arg(
            tensor((1, channels, 1, total), element), len(block.args)
        )
        packed.name_hint = "input" if not records else f"input{len(records)}"
        tensors = []
        offset = 0
        for arg, _, (_, length) in group:
            shape = shape_of(arg)
            ops: list[Operation] = [
                mil.SliceBySizeOp(packed, [0, 0, 0, offset], [1, channels, 1, length])
            ]
            if (channels, length) != (shape[1], shape[3]):
                ops.append(mil.ReshapeOp(ops[-1].results[0], shape))
            if insert_at is None:
                block.add_ops(ops)
            else:
                Rewriter.insert_op(ops, InsertPoint.before(insert_at))
            arg.replace_all_uses_with(ops[-1].results[0])
            tensors.append(
                PackedTensorAttr(
                    argument_name(arg, arg.index),
                    "arg",
                    arg.index,
                    shape,
                    axis=3,
                    offset=offset,
                    length=length,
                    view=(1, channels, 1, length) if len(ops) > 1 else None,
                )
            )
            offset += length
        records.append(PackedBufferAttr((1, channels, 1, total), tensors))
    for arg in reversed(originals):
        block.erase_arg(arg)
    return records


def pack_results(block: Block, names: list[str]) -> list[PackedBufferAttr]:
    """Packs the returned values, recorded by their `names`."""
    ret = block.last_op
    assert isinstance(ret, func.ReturnOp)
    records: list[PackedBufferAttr] = []
    if not ret.operands:
        return records
    base = shape_of(ret.operands[0])[3]
    keyed = [
        (index, value, *packing_key(shape_of(value), base, 3))
        for index, value in enumerate(ret.operands)
    ]
    new_results: list[SSAValue] = []
    for group in group_by(keyed, lambda k: (k[2], k[1].type.element_type)):
        spatial = group[0][2]
        pieces = []
        tensors = []
        offset = 0
        for index, value, _, (length, _) in group:
            shape = shape_of(value)
            view = None
            if (length, spatial) != (shape[1], shape[3]):
                view = (1, length, 1, spatial)
                reshape = mil.ReshapeOp(value, view)
                Rewriter.insert_op(reshape, InsertPoint.before(ret))
                value = reshape.results[0]
            pieces.append(value)
            tensors.append(
                PackedTensorAttr(
                    names[index],
                    "result",
                    index,
                    shape,
                    axis=1,
                    offset=offset,
                    length=length,
                    view=view,
                )
            )
            offset += length
        if len(pieces) == 1:
            packed = pieces[0]
        else:
            concat = mil.ConcatOp(pieces, 1, interleave=False)
            Rewriter.insert_op(concat, InsertPoint.before(ret))
            packed = concat.results[0]
        records.append(PackedBufferAttr(shape_of(packed), tensors))
        new_results.append(packed)
    Rewriter.replace_op(ret, func.ReturnOp(*new_results))
    return records


@dataclass(frozen=True)
class MilPackIoPass(ModulePass):
    """Packs each ANE-form function's inputs that share a channel count into
    one input along the spatial axis and its outputs into one output along
    the channels, recording the offsets (`ane.packing`)."""

    name = "mil-pack-io"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        for function in list(op.walk()):
            if isinstance(function, func.FuncOp) and function.body.blocks:
                pack_function(function)

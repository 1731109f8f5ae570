"""`mil-pack-io`: one input and one output per kernel.

Driving the ANE directly, a request with several inputs fails, and weights
that change every step must arrive as input data. So the arguments of an
ANE-form function (`[1, C, 1, S]`) that share a channel count C are packed
side by side along the spatial axis into one argument `[1, C, 1, ΣS]`, which
the kernel slices apart (`slice_by_size`); results that share a spatial
size S are concatenated along the channels into one result `[1, ΣC, 1, S]`.
With one channel count among the inputs and one spatial size among the
outputs, that is the single-input, single-output form.

The layout is recorded on the function as `ane.packing` (a JSON string)
and, by the tools, as a manifest next to the compiled kernel:

    {"function": "f",
     "inputs":  [{"shape": [1, C, 1, S0 + S1],
                  "tensors": [{"name": "x", "arg": 0, "channels": C,
                               "axis": 3, "offset": 0, "length": S0}, ...]}],
     "outputs": [{"shape": [1, C0 + C1, 1, S],
                  "tensors": [{"name": "out0", "result": 0, "length": C0,
                               "axis": 1, "offset": 0, "spatial": S}, ...]}]}
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import StringAttr, TensorType
from xdsl.ir import Block, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import PassFailedException

from xdsl_ane.dialects import mil
from xdsl_ane.dialects.typing import tensor
from xdsl_ane.passes.rlx_to_mil.emit import shape_of

PACKING_ATTRIBUTE = "ane.packing"


def group_by(items: list[Any], key: Callable[[Any], Any]) -> list[list[Any]]:
    """Groups in order of first appearance."""
    groups: dict[Any, list[Any]] = {}
    for item in items:
        groups.setdefault(key(item), []).append(item)
    return list(groups.values())


def argument_name(value: SSAValue, index: int) -> str:
    return value.name_hint or f"arg{index}"


def pack_function(function: func.FuncOp) -> dict[str, Any]:
    """Packs `function`'s arguments and results in place; returns the manifest."""
    name = function.sym_name.data
    block = function.body.blocks.first
    assert block is not None
    for what, types in (
        ("argument", function.function_type.inputs.data),
        ("result", function.function_type.outputs.data),
    ):
        for i, t in enumerate(types):
            shape = t.get_shape() if isinstance(t, TensorType) else ()
            if len(shape) != 4 or shape[0] != 1 or shape[2] != 1:
                raise PassFailedException(
                    f"mil-pack-io: @{name}: {what} {i} of type {t} is not in "
                    "[1, C, 1, S] form; run mil-ane-layout first"
                )
    inputs = pack_arguments(block)
    outputs = pack_results(block)
    manifest = {"function": name, "inputs": inputs, "outputs": outputs}
    function.function_type = builtin.FunctionType.from_lists(
        [a.type for a in block.args],
        [o.type for o in block.last_op.operands],  # type: ignore[union-attr]
    )
    function.attributes[PACKING_ATTRIBUTE] = StringAttr(json.dumps(manifest))
    return manifest


def pack_arguments(block: Block) -> list[dict[str, Any]]:
    originals = list(block.args)
    records = []
    insert_at = block.first_op
    for group in group_by(originals, lambda a: (shape_of(a)[1], a.type.element_type)):
        channels = shape_of(group[0])[1]
        element = group[0].type.element_type
        total = sum(shape_of(a)[3] for a in group)
        packed = block.insert_arg(
            tensor((1, channels, 1, total), element), len(block.args)
        )
        packed.name_hint = "input" if len(records) == 0 else f"input{len(records)}"
        tensors = []
        offset = 0
        for arg in group:
            length = shape_of(arg)[3]
            piece = mil.SliceBySizeOp(
                packed, [0, 0, 0, offset], [1, channels, 1, length]
            )
            if insert_at is None:
                block.add_op(piece)
            else:
                Rewriter.insert_op(piece, InsertPoint.before(insert_at))
            arg.replace_all_uses_with(piece.results[0])
            tensors.append(
                {
                    "name": argument_name(arg, arg.index),
                    "arg": arg.index,
                    "channels": channels,
                    "axis": 3,
                    "offset": offset,
                    "length": length,
                }
            )
            offset += length
        records.append({"shape": [1, channels, 1, total], "tensors": tensors})
    for arg in reversed(originals):
        block.erase_arg(arg)
    return records


def pack_results(block: Block) -> list[dict[str, Any]]:
    ret = block.last_op
    assert isinstance(ret, func.ReturnOp)
    results = list(enumerate(ret.operands))
    records = []
    new_results: list[SSAValue] = []
    for group in group_by(
        results, lambda r: (shape_of(r[1])[3], r[1].type.element_type)
    ):
        spatial = shape_of(group[0][1])[3]
        values = [v for _, v in group]
        if len(values) == 1:
            packed = values[0]
        else:
            concat = mil.ConcatOp(values, 1, interleave=False)
            Rewriter.insert_op(concat, InsertPoint.before(ret))
            packed = concat.results[0]
        tensors = []
        offset = 0
        for index, value in group:
            length = shape_of(value)[1]
            tensors.append(
                {
                    "name": f"out{index}",
                    "result": index,
                    "length": length,
                    "axis": 1,
                    "offset": offset,
                    "spatial": spatial,
                }
            )
            offset += length
        records.append({"shape": list(shape_of(packed)), "tensors": tensors})
        new_results.append(packed)
    new_return = func.ReturnOp(*new_results)
    Rewriter.replace_op(ret, new_return)
    return records


def packing_of(function: func.FuncOp) -> dict[str, Any] | None:
    """The manifest recorded by `mil-pack-io` on `function`, if any."""
    attr = function.attributes.get(PACKING_ATTRIBUTE)
    return json.loads(attr.data) if isinstance(attr, StringAttr) else None


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

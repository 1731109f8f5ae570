"""`mil-io-types`: inputs and outputs of types a Core ML model can declare.

Core ML describes a model's inputs and outputs as multiarrays of fp16, fp32
or int32; a function argument or result of another element type (bool,
int8) is declared fp32 (int32 for integers) and cast to its own type right
after the inputs, or from it right before the return, as coremltools'
`adjust_io_to_supported_types` does; a bool of a function that computes in
fp16 is declared fp16 (what the ANE takes). Done on the IR, so that the MIL text
and the protobuf of a compiled model declare the same types (the protobuf
printer casts only what is left, in a program that did not run this pass),
and so that the interpreter runs the function the package holds.

Which arguments were bool is recorded on the function as `ane.bool_args`
(argument indices): the logical type a runtime feeds there (0/1), which the
declared fp32 no longer says (`xdsl_ane.interface`)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import DenseArrayBase, TensorType, f32, i1, i32, i64
from xdsl.ir import Attribute
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from xdsl_ane.dialects import ane, mil
from xdsl_ane.dialects.mil.base import mil_dtype_name
from xdsl_ane.dialects.typing import tensor

DECLARABLE = (builtin.f16, f32, i32)
"""The element types of Core ML's multiarrays."""


def declared(t: Attribute, floating: Attribute) -> Attribute | None:
    """The type a model declares for a tensor of type `t` when Core ML has
    no multiarray of its element type (int32 for integers, `floating` for
    bool), else None."""
    if not isinstance(t, TensorType) or t.element_type in DECLARABLE:
        return None
    integer = isinstance(t.element_type, builtin.IntegerType) and t.element_type != i1
    return tensor(t.get_shape(), i32 if integer else floating)


def float_io(function: func.FuncOp) -> Attribute:
    """fp16 for a function whose float inputs and outputs are all fp16 (one
    that ran mil-fp16: a bool then comes in as fp16, which the ANE takes
    as it is), else fp32, as coremltools declares bool."""
    t = function.function_type
    elements = {getattr(x, "element_type", None) for x in (*t.inputs, *t.outputs)}
    return builtin.f16 if builtin.f16 in elements and f32 not in elements else f32


def adjust_function(function: func.FuncOp) -> None:
    block = function.body.blocks.first
    if block is None or not isinstance(block.last_op, func.ReturnOp):
        return
    bools = []
    floating = float_io(function)
    for arg in list(block.args):
        new_type = declared(arg.type, floating)
        if new_type is None:
            continue
        if arg.type.element_type == i1:  # type: ignore[attr-defined]
            bools.append(arg.index)
        index = arg.index
        new_arg = block.insert_arg(new_type, index)
        new_arg.name_hint = arg.name_hint
        cast = mil.CastOp(new_arg, mil_dtype_name(arg.type.element_type))  # type: ignore[attr-defined]
        Rewriter.insert_op(cast, InsertPoint.at_start(block))
        arg.replace_all_uses_with(cast.results[0])
        block.erase_arg(arg)
    returned = block.last_op
    for i, value in enumerate(returned.operands):
        new_type = declared(value.type, floating)
        if new_type is None:
            continue
        dtype = mil_dtype_name(new_type.element_type)  # type: ignore[attr-defined]
        cast = mil.CastOp(value, dtype)
        Rewriter.insert_op(cast, InsertPoint.before(returned))
        returned.operands[i] = cast.results[0]
    if bools:
        function.attributes[ane.BOOL_ARGS] = DenseArrayBase.from_list(i64, bools)
    function.update_function_type()


@dataclass(frozen=True)
class MilIoTypesPass(ModulePass):
    """Declares every function's inputs and outputs as Core ML multiarray
    types (fp16, fp32, int32), casting the others inside (module
    docstring)."""

    name = "mil-io-types"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        for function in op.walk():
            if isinstance(function, func.FuncOp):
                adjust_function(function)

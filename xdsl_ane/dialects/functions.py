"""`build_function`: a func.func from a body that emits ops, the way every
program of the project is built in Python."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.builder import ImplicitBuilder
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType
from xdsl.ir import Attribute, Block, Region, SSAValue


def build_function(
    name: str,
    input_types: list[Attribute],
    body: Callable[..., list[SSAValue]],
    arg_names: list[str] | None = None,
) -> func.FuncOp:
    """A func.func whose body `body(*args)` emits ops and returns the results."""
    block = Block(arg_types=input_types)
    for arg, hint in zip(block.args, arg_names or []):
        arg.name_hint = hint
    with ImplicitBuilder(block) as args:
        results = body(*args)
        func.ReturnOp(*results)
    function_type = FunctionType.from_lists(input_types, [r.type for r in results])
    return func.FuncOp(name, function_type, Region(block))

"""The ane dialect: what the ANE passes record on a `func.func` about its
boundary, as typed attributes printed and parsed with the module.

- `ane.arg_layouts`, `ane.result_layouts` (`mil-ane-layout`): one
  `#ane.layout` per argument and per result;
- `ane.weight_args` (`mil-ane-layout{weights=dynamic}`): one
  `#ane.weight_arg` per weight fed as an argument;
- `ane.packing` (`mil-pack-io`): one `#ane.packing`, its `#ane.buffer`s
  (the packed inputs and outputs) holding `#ane.packed` tensors;
- `ane.result_names` (the torch frontend, the model builders, else
  `mil-ane-layout` from the returned values' name hints): one string per
  result, the output names the printers give the MIL function and the
  manifest lists. A name hint cannot carry them: xDSL drops a `_N` suffix
  from hints (`logits_0`), and the passes replace the returned values.

    #ane.layout<bsc, logical = [1, 4, 8], ane = [1, 8, 1, 4]>
    #ane.weight_arg<"w", arg = 1, shape = [1, 8, 1, 6], stored = [Cout, Cin]>
    #ane.packing<"f", inputs = [#ane.buffer<shape = [1, 8, 1, 10], tensors = [
        #ane.packed<"x", arg = 0, shape = [1, 8, 1, 4], axis = 3, offset = 0, length = 4>,
        #ane.packed<"y", arg = 1, shape = [1, 4, 1, 12], axis = 3, offset = 4, length = 6,
                    view = [1, 8, 1, 6]>]>],
      outputs = [...]>

Each attribute has a typed Python view (properties) and `manifest()`, the
plain JSON value the API writes beside a compiled model. A layout's kinds
and what each maps are tabled here (`LAYOUT_MAPS`); how a logical tensor is
laid out is `xdsl_ane.passes.layouts`.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod
from typing import Any, TypeVar

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    IntAttr,
    NoneAttr,
    StringAttr,
    i64,
)
from xdsl.ir import Attribute, Dialect, OpResult, ParametrizedAttribute, SSAValue
from xdsl.irdl import irdl_attr_definition, param_def
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from xdsl_ane.dialects.typing import I64Array, fmt_shape

ARG_LAYOUTS = "ane.arg_layouts"
RESULT_LAYOUTS = "ane.result_layouts"
WEIGHT_ARGS = "ane.weight_args"
PACKING = "ane.packing"
RESULT_NAMES = "ane.result_names"
BOOL_ARGS = "ane.bool_args"

LAYOUT_MAPS = {
    "scalar": "[] -> [1, 1, 1, 1]",
    "c": "[C] -> [1, C, 1, 1]",
    "sc": "[S, C] -> [1, C, 1, S]",
    "bsc": "[1, S, C] -> [1, C, 1, S]",
    "bhsd": "[1, H, S, D] -> [1, H*D, 1, S]",
    "ane": "[1, C, 1, S] unchanged",
    "nchw": "[1, C, H, W] unchanged (an image)",
    "ncw": "[1, C, W] -> [1, C, 1, W] (a 1-D signal)",
    "state": "state, held in its own shape",
}
"""What each kind of layout maps: a logical shape to `[1, C, 1, S]`, or a
state argument, which keeps its own shape."""

STORED_ORDERS = {True: "[Cout, Cin]", False: "[Cin, Cout]"}
"""How the weights file stores a dynamic weight, by `stored_out_in`."""

WEIGHT_ARG_LAYOUT = "W[o, i] at [0, i, 0, o]"
"""Where a dynamic weight argument holds each element of W [Cout, Cin]."""

PORTS = ("arg", "result")
"""What a packed tensor was: a function argument or a result."""


# --- parameters: conversion, printing, parsing ------------------------------------


def i64_array(values: Sequence[int] | DenseArrayBase) -> DenseArrayBase:
    if isinstance(values, DenseArrayBase):
        return values
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


def optional_i64_array(
    values: Sequence[int] | DenseArrayBase | NoneAttr | None,
) -> DenseArrayBase | NoneAttr:
    if values is None or isinstance(values, NoneAttr):
        return NoneAttr()
    return i64_array(values)


def ints(attr: DenseArrayBase) -> tuple[int, ...]:
    return tuple(int(v) for v in attr.get_values())


def print_ints(printer: Printer, values: Sequence[int]) -> None:
    printer.print_string(fmt_shape(values))


def parse_count(parser: AttrParser) -> int:
    """A non-negative integer (an index, a dimension, an offset)."""
    return parser.parse_integer(allow_boolean=False, allow_negative=False)


def parse_ints(parser: AttrParser) -> list[int]:
    """`[d0, d1, ...]`, non-negative."""
    return parser.parse_comma_separated_list(
        parser.Delimiter.SQUARE, lambda: parse_count(parser)
    )


def parse_field(parser: AttrParser, keyword: str) -> None:
    """`, keyword =` before a field's value."""
    parser.parse_punctuation(",")
    parser.parse_keyword(keyword)
    parser.parse_punctuation("=")


AttrT = TypeVar("AttrT", bound=Attribute)


def verified(
    parser: AttrParser,
    cls: type[ParametrizedAttribute],
    start: int,
    params: Sequence[Attribute],
) -> Sequence[Attribute]:
    """The parsed `params` of a `cls`, verified while the parser can still
    point at them: an invalid record is an error at its position."""
    try:
        cls.new(params)
    except VerifyException as e:
        parser.raise_error(str(e), start, parser.pos)
    return params


def parse_records(parser: AttrParser, kind: type[AttrT]) -> list[AttrT]:
    """`[#ane.kind<...>, ...]`."""

    def parse_one() -> AttrT:
        at = parser.pos
        attr = parser.parse_attribute()
        if not isinstance(attr, kind):
            parser.raise_error(f"expected a #{kind.name}<...>", at, parser.pos)
        return attr

    return parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parse_one)


def print_records(printer: Printer, records: Sequence[Attribute]) -> None:
    with printer.in_square_brackets():
        printer.print_list(records, printer.print_attribute)


def is_ane_form(shape: Sequence[int]) -> bool:
    return len(shape) == 4 and shape[0] == 1 and shape[2] == 1


# --- layouts -----------------------------------------------------------------------


@irdl_attr_definition
class LayoutAttr(ParametrizedAttribute):
    """How a function argument or result of `logical` shape is held at the
    ANE's boundary (`ane`), and by which kind of mapping (`LAYOUT_MAPS`).

        #ane.layout<bsc, logical = [1, 4, 8], ane = [1, 8, 1, 4]>
    """

    name = "ane.layout"

    kind: StringAttr = param_def(converter=StringAttr.get)
    logical: I64Array = param_def(converter=i64_array)
    ane: I64Array = param_def(converter=i64_array)

    @property
    def logical_shape(self) -> tuple[int, ...]:
        return ints(self.logical)

    @property
    def ane_shape(self) -> tuple[int, ...]:
        return ints(self.ane)

    @property
    def map(self) -> str:
        """What the layout maps, in words (`LAYOUT_MAPS`)."""
        return LAYOUT_MAPS[self.kind.data]

    def verify(self) -> None:
        kind, logical, ane = self.kind.data, self.logical_shape, self.ane_shape
        if kind not in LAYOUT_MAPS:
            raise VerifyException(
                f"#ane.layout: unknown kind '{kind}' "
                f"(expected one of {', '.join(LAYOUT_MAPS)})"
            )
        if kind == "state":
            if ane != logical:
                raise VerifyException(
                    f"#ane.layout: a state keeps its shape {fmt_shape(logical)}, "
                    f"not {fmt_shape(ane)}"
                )
            return
        if kind == "nchw":
            # An image keeps its spatial axes: the ANE convolves [1, C, H, W].
            if ane != logical or len(ane) != 4 or ane[0] != 1:
                raise VerifyException(
                    f"#ane.layout: an nchw image is [1, C, H, W], held unchanged, "
                    f"not {fmt_shape(logical)} -> {fmt_shape(ane)}"
                )
            return
        if not is_ane_form(ane):
            raise VerifyException(
                f"#ane.layout: ane {fmt_shape(ane)} is not [1, C, 1, S]"
            )
        if prod(logical) != prod(ane):
            raise VerifyException(
                f"#ane.layout: logical {fmt_shape(logical)} and ane {fmt_shape(ane)} differ "
                "in element count"
            )

    def manifest(self) -> dict[str, Any]:
        return {
            "layout": self.kind.data,
            "logical": list(self.logical_shape),
            "ane": list(self.ane_shape),
            "map": self.map,
        }

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        start = parser.pos
        with parser.in_angle_brackets():
            kind = parser.parse_identifier()
            parse_field(parser, "logical")
            logical = parse_ints(parser)
            parse_field(parser, "ane")
            ane = parse_ints(parser)
        params = (StringAttr(kind), i64_array(logical), i64_array(ane))
        return verified(parser, cls, start, params)

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string(f"{self.kind.data}, logical = ")
            print_ints(printer, self.logical_shape)
            printer.print_string(", ane = ")
            print_ints(printer, self.ane_shape)


# --- dynamic weights ---------------------------------------------------------------


@irdl_attr_definition
class WeightArgAttr(ParametrizedAttribute):
    """A weight fed as function argument `arg` of shape [1, Cin, 1, Cout]
    (`mil-ane-layout{weights=dynamic}`): the weights file's tensor `weight`,
    stored [Cout, Cin] (used as x·Wᵀ) or [Cin, Cout]; the argument holds
    W[o, i] at [0, i, 0, o] either way.

        #ane.weight_arg<"w", arg = 1, shape = [1, 8, 1, 6], stored = [Cout, Cin]>
    """

    name = "ane.weight_arg"

    weight: StringAttr = param_def(converter=StringAttr.get)
    arg: IntAttr = param_def(converter=IntAttr.get)
    shape: I64Array = param_def(converter=i64_array)
    stored: StringAttr = param_def(converter=StringAttr.get)

    def __init__(
        self, weight: str, arg: int, shape: Sequence[int], stored_out_in: bool
    ):
        super().__init__(weight, arg, shape, STORED_ORDERS[stored_out_in])

    @property
    def arg_shape(self) -> tuple[int, ...]:
        return ints(self.shape)

    @property
    def stored_out_in(self) -> bool:
        """Whether the weights file stores the weight [Cout, Cin]."""
        return self.stored.data == STORED_ORDERS[True]

    def verify(self) -> None:
        if self.stored.data not in STORED_ORDERS.values():
            raise VerifyException(
                f"#ane.weight_arg: stored {self.stored.data}, expected "
                f"{' or '.join(STORED_ORDERS.values())}"
            )
        if self.arg.data < 0:
            raise VerifyException(f"#ane.weight_arg: arg {self.arg.data} is negative")
        if not is_ane_form(self.arg_shape):
            raise VerifyException(
                f"#ane.weight_arg: shape {fmt_shape(self.arg_shape)} is not [1, Cin, 1, Cout]"
            )

    def manifest(self) -> dict[str, Any]:
        return {
            "weight": self.weight.data,
            "arg": self.arg.data,
            "shape": list(self.arg_shape),
            "stored": self.stored.data,
            "layout": WEIGHT_ARG_LAYOUT,
        }

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        start = parser.pos
        with parser.in_angle_brackets():
            weight = parser.parse_str_literal()
            parse_field(parser, "arg")
            arg = parse_count(parser)
            parse_field(parser, "shape")
            shape = parse_ints(parser)
            parse_field(parser, "stored")
            at = parser.pos
            axes = parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE, parser.parse_identifier
            )
            stored = f"[{', '.join(axes)}]"
            if stored not in STORED_ORDERS.values():
                parser.raise_error(
                    f"expected stored = {' or '.join(STORED_ORDERS.values())}",
                    at,
                    parser.pos,
                )
        params = (
            StringAttr(weight),
            IntAttr(arg),
            i64_array(shape),
            StringAttr(stored),
        )
        return verified(parser, cls, start, params)

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string_literal(self.weight.data)
            printer.print_string(f", arg = {self.arg.data}, shape = ")
            print_ints(printer, self.arg_shape)
            printer.print_string(f", stored = {self.stored.data}")


# --- I/O packing -------------------------------------------------------------------


@irdl_attr_definition
class PackedTensorAttr(ParametrizedAttribute):
    """One original argument (`port` "arg") or result ("result") number
    `index`, of `shape`, inside a packed buffer: elements `offset` to
    `offset + length` on `axis` (3 for inputs, 1 for outputs), through the
    row-major `view` where its own shape does not fit the buffer.

        #ane.packed<"x", arg = 0, shape = [1, 8, 1, 4], axis = 3, offset = 0, length = 4>
        #ane.packed<"y", arg = 1, shape = [1, 4, 1, 12], axis = 3, offset = 4,
                    length = 6, view = [1, 8, 1, 6]>
    """

    name = "ane.packed"

    tensor_name: StringAttr = param_def(converter=StringAttr.get)
    port: StringAttr = param_def(converter=StringAttr.get)
    index: IntAttr = param_def(converter=IntAttr.get)
    shape: I64Array = param_def(converter=i64_array)
    axis: IntAttr = param_def(converter=IntAttr.get)
    offset: IntAttr = param_def(converter=IntAttr.get)
    length: IntAttr = param_def(converter=IntAttr.get)
    view: I64Array | NoneAttr = param_def(converter=optional_i64_array)

    def __init__(
        self,
        tensor_name: str,
        port: str,
        index: int,
        shape: Sequence[int],
        *,
        axis: int,
        offset: int,
        length: int,
        view: Sequence[int] | None = None,
    ):
        super().__init__(tensor_name, port, index, shape, axis, offset, length, view)

    @property
    def is_result(self) -> bool:
        return self.port.data == "result"

    @property
    def tensor_shape(self) -> tuple[int, ...]:
        """The original argument's or result's shape."""
        return ints(self.shape)

    @property
    def view_shape(self) -> tuple[int, ...] | None:
        return None if isinstance(self.view, NoneAttr) else ints(self.view)

    @property
    def packed_shape(self) -> tuple[int, ...]:
        """The shape the tensor has in the buffer: its view, or its own."""
        view = self.view_shape
        return self.tensor_shape if view is None else view

    @property
    def span(self) -> slice:
        """Where the tensor lies on the buffer's `axis`."""
        return slice(self.offset.data, self.offset.data + self.length.data)

    def verify(self) -> None:
        what = f'#ane.packed "{self.tensor_name.data}"'
        if self.port.data not in PORTS:
            raise VerifyException(f"{what}: expected arg or result, got {self.port}")
        for shape in (self.tensor_shape, self.view_shape):
            if shape is not None and not is_ane_form(shape):
                raise VerifyException(
                    f"{what}: shape {fmt_shape(shape)} is not [1, C, 1, S]"
                )
        view = self.view_shape
        if view is not None and prod(view) != prod(self.tensor_shape):
            raise VerifyException(
                f"{what}: view {fmt_shape(view)} has another element count than "
                f"{fmt_shape(self.tensor_shape)}"
            )
        if self.axis.data not in (1, 3):
            raise VerifyException(f"{what}: axis {self.axis.data}, expected 1 or 3")
        if (
            self.offset.data < 0
            or self.length.data != self.packed_shape[self.axis.data]
        ):
            raise VerifyException(
                f"{what}: offset {self.offset.data} and length {self.length.data} "
                f"do not place {fmt_shape(self.packed_shape)} on axis {self.axis.data}"
            )

    def manifest(self) -> dict[str, Any]:
        record: dict[str, Any] = {
            "name": self.tensor_name.data,
            self.port.data: self.index.data,
            "shape": list(self.tensor_shape),
            "axis": self.axis.data,
            "offset": self.offset.data,
            "length": self.length.data,
        }
        if self.view_shape is not None:
            record["view"] = list(self.view_shape)
        return record

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        start = parser.pos
        with parser.in_angle_brackets():
            tensor_name = parser.parse_str_literal()
            parser.parse_punctuation(",")
            at = parser.pos
            port = parser.parse_identifier()
            if port not in PORTS:
                parser.raise_error("expected arg or result", at, parser.pos)
            parser.parse_punctuation("=")
            index = parse_count(parser)
            parse_field(parser, "shape")
            shape = parse_ints(parser)
            values = []
            for keyword in ("axis", "offset", "length"):
                parse_field(parser, keyword)
                values.append(parse_count(parser))
            view = None
            if parser.parse_optional_punctuation(",") is not None:
                parser.parse_keyword("view")
                parser.parse_punctuation("=")
                view = parse_ints(parser)
        axis, offset, length = values
        params = (
            StringAttr(tensor_name),
            StringAttr(port),
            IntAttr(index),
            i64_array(shape),
            IntAttr(axis),
            IntAttr(offset),
            IntAttr(length),
            optional_i64_array(view),
        )
        return verified(parser, cls, start, params)

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string_literal(self.tensor_name.data)
            printer.print_string(f", {self.port.data} = {self.index.data}, shape = ")
            print_ints(printer, self.tensor_shape)
            printer.print_string(
                f", axis = {self.axis.data}, offset = {self.offset.data}, "
                f"length = {self.length.data}"
            )
            if self.view_shape is not None:
                printer.print_string(", view = ")
                print_ints(printer, self.view_shape)


@irdl_attr_definition
class PackedBufferAttr(ParametrizedAttribute):
    """One packed input or output of `shape`: the `tensors` side by side on
    their axis, in order, filling it.

        #ane.buffer<shape = [1, 8, 1, 10], tensors = [#ane.packed<...>, ...]>
    """

    name = "ane.buffer"

    shape: I64Array = param_def(converter=i64_array)
    tensors: ArrayAttr[PackedTensorAttr] = param_def(converter=ArrayAttr)

    @property
    def buffer_shape(self) -> tuple[int, ...]:
        return ints(self.shape)

    def verify(self) -> None:
        shape = self.buffer_shape
        if not is_ane_form(shape):
            raise VerifyException(
                f"#ane.buffer: shape {fmt_shape(shape)} is not [1, C, 1, S]"
            )
        if not self.tensors.data:
            raise VerifyException("#ane.buffer: no tensors")
        axis = self.tensors.data[0].axis.data
        offset = 0
        for t in self.tensors.data:
            if t.axis.data != axis or t.offset.data != offset:
                raise VerifyException(
                    f'#ane.buffer: "{t.tensor_name.data}" is not next on axis {axis} '
                    f"(offset {offset})"
                )
            offset += t.length.data
            across = [d for i, d in enumerate(t.packed_shape) if i != axis]
            if across != [d for i, d in enumerate(shape) if i != axis]:
                raise VerifyException(
                    f'#ane.buffer: "{t.tensor_name.data}" {fmt_shape(t.packed_shape)} does '
                    f"not fit {fmt_shape(shape)} across axis {axis}"
                )
        if offset != shape[axis]:
            raise VerifyException(
                f"#ane.buffer: the tensors fill {offset} of {shape[axis]} on axis {axis}"
            )

    def manifest(self) -> dict[str, Any]:
        return {
            "shape": list(self.buffer_shape),
            "tensors": [t.manifest() for t in self.tensors.data],
        }

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        start = parser.pos
        with parser.in_angle_brackets():
            parser.parse_keyword("shape")
            parser.parse_punctuation("=")
            shape = parse_ints(parser)
            parse_field(parser, "tensors")
            tensors = parse_records(parser, PackedTensorAttr)
        return verified(parser, cls, start, (i64_array(shape), ArrayAttr(tensors)))

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string("shape = ")
            print_ints(printer, self.buffer_shape)
            printer.print_string(", tensors = ")
            print_records(printer, self.tensors.data)


@irdl_attr_definition
class PackingAttr(ParametrizedAttribute):
    """How `mil-pack-io` packed function `function`'s arguments into its
    `inputs` and its results into its `outputs`, one buffer each.

        #ane.packing<"f", inputs = [#ane.buffer<...>], outputs = [#ane.buffer<...>]>
    """

    name = "ane.packing"

    function: StringAttr = param_def(converter=StringAttr.get)
    inputs: ArrayAttr[PackedBufferAttr] = param_def(converter=ArrayAttr)
    outputs: ArrayAttr[PackedBufferAttr] = param_def(converter=ArrayAttr)

    def verify(self) -> None:
        for what, buffers, port, holds in (
            ("inputs", self.inputs, "arg", "arguments"),
            ("outputs", self.outputs, "result", "results"),
        ):
            for buffer in buffers.data:
                for t in buffer.tensors.data:
                    if t.port.data != port:
                        raise VerifyException(
                            f'#ane.packing: "{t.tensor_name.data}" in {what} is '
                            f"packed as {t.port.data} {t.index.data}; {what} hold {holds}"
                        )

    def manifest(self) -> dict[str, Any]:
        return {
            "function": self.function.data,
            "inputs": [b.manifest() for b in self.inputs.data],
            "outputs": [b.manifest() for b in self.outputs.data],
        }

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        start = parser.pos
        with parser.in_angle_brackets():
            function = parser.parse_str_literal()
            parse_field(parser, "inputs")
            inputs = parse_records(parser, PackedBufferAttr)
            parse_field(parser, "outputs")
            outputs = parse_records(parser, PackedBufferAttr)
        params = (StringAttr(function), ArrayAttr(inputs), ArrayAttr(outputs))
        return verified(parser, cls, start, params)

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string_literal(self.function.data)
            printer.print_string(", inputs = ")
            print_records(printer, self.inputs.data)
            printer.print_string(", outputs = ")
            print_records(printer, self.outputs.data)


# --- the records of a function -----------------------------------------------------

RECORD_KINDS: dict[str, type[Attribute]] = {
    ARG_LAYOUTS: LayoutAttr,
    RESULT_LAYOUTS: LayoutAttr,
    WEIGHT_ARGS: WeightArgAttr,
}
"""The function attributes that hold an array of records, and their kind."""


def records(function: func.FuncOp, key: str) -> list[Any]:
    """The records of `function` under `key` (`RECORD_KINDS`; none if
    absent)."""
    attr = function.attributes.get(key)
    if attr is None:
        return []
    kind = RECORD_KINDS[key]
    if not isinstance(attr, ArrayAttr) or not all(
        isinstance(a, kind) for a in attr.data
    ):
        raise VerifyException(
            f"@{function.sym_name.data}: {key} must be an array of #{kind.name}<...>"
        )
    return list(attr.data)


def arg_layouts(function: func.FuncOp) -> list[LayoutAttr]:
    return records(function, ARG_LAYOUTS)


def result_layouts(function: func.FuncOp) -> list[LayoutAttr]:
    return records(function, RESULT_LAYOUTS)


def weight_args(function: func.FuncOp) -> list[WeightArgAttr]:
    return records(function, WEIGHT_ARGS)


def packing(function: func.FuncOp) -> PackingAttr | None:
    """The `ane.packing` record of `function`, if any."""
    attr = function.attributes.get(PACKING)
    if attr is None or isinstance(attr, PackingAttr):
        return attr
    raise VerifyException(
        f"@{function.sym_name.data}: {PACKING} must be a #{PackingAttr.name}<...>"
    )


def returned_values(function: func.FuncOp) -> list[SSAValue]:
    """The operands of the function's `func.return` (none for a declaration)."""
    block = function.body.blocks.first
    last = block.last_op if block is not None else None
    return list(last.operands) if isinstance(last, func.ReturnOp) else []


def hint_of(value: SSAValue) -> str | None:
    """The name a value's hint gives it: `NAME_i` for result i of an op
    with several."""
    hint = value.name_hint
    if hint and isinstance(value, OpResult) and len(value.op.results) > 1:
        return f"{hint}_{value.index}"
    return hint


def result_names(function: func.FuncOp) -> list[str]:
    """One name per result of `function`: `ane.result_names` where it is
    recorded, else each returned value's name hint (`NAME_i` for result i
    of a multi-result op, as the printers name it), else `output`
    (`output_0`, `output_1`, ... among several), as the torch frontend
    names an unnamed output."""
    count = len(function.function_type.outputs.data)
    attr = function.attributes.get(RESULT_NAMES)
    if attr is None:
        values = returned_values(function)
        hints = [hint_of(v) for v in values] if len(values) == count else []
        if not hints:
            hints = [None] * count
        unnamed = ["output"] if count == 1 else [f"output_{i}" for i in range(count)]
        return [h or u for h, u in zip(hints, unnamed)]
    if (
        not isinstance(attr, ArrayAttr)
        or not all(isinstance(a, StringAttr) and a.data for a in attr.data)
        or len(attr.data) != count
    ):
        raise VerifyException(
            f"@{function.sym_name.data}: {RESULT_NAMES} must hold one non-empty "
            f"string per result ({count}), got {attr}"
        )
    return [a.data for a in attr.data]  # type: ignore[union-attr]


def record_result_names(function: func.FuncOp, names: Sequence[str]) -> None:
    """Records `names` as the function's `ane.result_names`."""
    function.attributes[RESULT_NAMES] = ArrayAttr([StringAttr(n) for n in names])
    result_names(function)  # one per result


def keep_result_names(function: func.FuncOp) -> None:
    """Records the function's result names (`result_names`) unless they are
    (then checks them), before a pass replaces the returned values and
    their name hints."""
    names = result_names(function)
    if RESULT_NAMES not in function.attributes:
        record_result_names(function, names)


ANE = Dialect(
    "ane",
    [],
    [LayoutAttr, WeightArgAttr, PackedTensorAttr, PackedBufferAttr, PackingAttr],
)

"""`mil.const`: a compile-time tensor, inline or named in the weights file."""

from __future__ import annotations

from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, StringAttr, TensorType
from xdsl.irdl import irdl_op_definition, opt_prop_def, result_def
from xdsl.parser import Parser
from xdsl.printer import Printer

from xdsl_ane.dialects.mil.base import MilOp
from xdsl_ane.dialects.typing import OpTypeError, tensor_of


@irdl_op_definition
class ConstOp(MilOp):
    """A MIL const: either an inline value `val` (a dense elements attribute,
    whose type is the result type) or `weight`, the name of a tensor in the
    weights file, whose type is the declared result type. Exactly one is set.

    Short syntax: `%c = mil.const dense<[1.0, 2.0]> : tensor<2xf32>` and
    `%w = mil.const weight "layer0.wq" : tensor<64x64xf16>`.
    """

    name = "mil.const"
    val = opt_prop_def(DenseIntOrFPElementsAttr)
    weight = opt_prop_def(StringAttr)
    result = result_def(TensorType)

    def __init__(self, val: DenseIntOrFPElementsAttr):
        self.init_mil({}, {"val": val})

    @classmethod
    def from_weight(cls, weight: str, result_type: TensorType) -> ConstOp:
        """A const whose data is the tensor `weight` of the weights file."""
        return cls.create(
            result_types=[result_type], properties={"weight": StringAttr(weight)}
        )

    @classmethod
    def infer_result_types(cls, operand_types, properties):
        val = properties.get("val")
        weight = properties.get("weight")
        if (val is None) == (weight is None):
            raise OpTypeError(
                cls.name, "exactly one of the properties 'val' and 'weight' is required"
            )
        if val is None:
            raise OpTypeError(
                cls.name, "a weight const's type is declared, not inferred"
            )
        assert isinstance(val, DenseIntOrFPElementsAttr)
        return [tensor_of(cls.name, "val", val.type)]

    def verify_(self) -> None:
        if self.weight is None or self.val is not None:
            super().verify_()
            return
        if not self.weight.data:
            raise OpTypeError(self.name, "property 'weight' must not be empty")
        tensor_of(self.name, "result", self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> ConstOp:
        if parser.parse_optional_keyword("weight"):
            weight = parser.parse_str_literal()
            attrs = parser.parse_optional_attr_dict()
            parser.parse_punctuation(":")
            start = parser.pos
            result_type = parser.parse_type()
            if not isinstance(result_type, TensorType):
                parser.raise_error(
                    f"{cls.name} weight expects a tensor type", start, parser.pos
                )
            op = cls.from_weight(weight, result_type)
        else:
            start = parser.pos
            val = parser.parse_attribute()
            if not isinstance(val, DenseIntOrFPElementsAttr):
                parser.raise_error(
                    f'{cls.name} expects a dense elements value or `weight "name"`',
                    start,
                    parser.pos,
                )
            attrs = parser.parse_optional_attr_dict()
            op = cls.create(result_types=[val.type], properties={"val": val})
        op.attributes.update(attrs)
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        if self.val is not None:
            printer.print_attribute(self.val)
            printer.print_op_attributes(self.attributes)
        else:
            assert self.weight is not None
            printer.print_string("weight ")
            printer.print_string_literal(self.weight.data)
            printer.print_op_attributes(self.attributes)
            printer.print_string(" : ")
            printer.print_attribute(self.result.type)

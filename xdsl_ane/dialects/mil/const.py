"""`mil.const`: a compile-time tensor, inline or named in the weights file."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, StringAttr, TensorType
from xdsl.ir import Attribute
from xdsl.irdl import opt_prop_def, result_def, traits_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import ConstantLike, Pure

from xdsl_ane.dialects.mil.base import MilFolder, MilOp, mil_op_definition
from xdsl_ane.dialects.typing import (
    I64Array,
    KnownAttributesOnly,
    OpTypeError,
    fmt_shape,
    ints_attr,
    ints_prop,
    product,
    tensor_of,
)


@mil_op_definition
class ConstOp(MilOp):
    """A MIL const: either an inline value `val` (a dense elements attribute,
    whose type is the result type) or `weight`, the name of a tensor in the
    weights file, whose type is the declared result type. Exactly one is set.

    A weight const may view the file's tensor differently: `weight_shape`
    states the shape the tensor has in the file and `perm` permutes its axes;
    the const's value is `transpose(file[weight], perm)` reshaped row-major
    to the result shape (so a [Cout, Cin] linear weight serves as a
    [Cout, Cin, 1, 1] conv weight). Without `weight_shape` the file's tensor
    has the result shape.

    Short syntax: `%c = mil.const dense<[1.0, 2.0]> : tensor<2xf32>` and
    `%w = mil.const weight "layer0.wq" : tensor<64x64xf16>`.
    """

    name = "mil.const"
    traits = traits_def(Pure(), KnownAttributesOnly(), ConstantLike(), MilFolder())
    val = opt_prop_def(DenseIntOrFPElementsAttr)
    weight = opt_prop_def(StringAttr)
    weight_shape = opt_prop_def(I64Array)
    perm = opt_prop_def(I64Array)
    result = result_def(TensorType)

    def __init__(self, val: DenseIntOrFPElementsAttr):
        self.init_mil({}, {"val": val})

    @classmethod
    def from_weight(
        cls,
        weight: str,
        result_type: TensorType,
        weight_shape: Sequence[int] | None = None,
        perm: Sequence[int] | None = None,
    ) -> ConstOp:
        """A const whose data is the tensor `weight` of the weights file,
        optionally viewed through `perm` and a reshape from `weight_shape`."""
        properties: dict[str, Attribute] = {"weight": StringAttr(weight)}
        if weight_shape is not None and tuple(weight_shape) != result_type.get_shape():
            properties["weight_shape"] = ints_attr(weight_shape)
        if perm is not None and list(perm) != sorted(perm):
            properties["perm"] = ints_attr(perm)
        return cls.create(result_types=[result_type], properties=properties)

    def file_shape(self) -> tuple[int, ...]:
        """The shape the weights file's tensor must have."""
        shape = ints_prop(self.properties, "weight_shape")
        if shape is not None:
            return shape
        t = self.result.type
        assert isinstance(t, TensorType)
        return t.get_shape()

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
        return [tensor_of(cls.name, "val", val.type, storage=True)]

    def verify_(self) -> None:
        if self.weight is None or self.val is not None:
            if self.weight_shape is not None or self.perm is not None:
                raise OpTypeError(
                    self.name, "weight_shape and perm apply only to a weight const"
                )
            super().verify_()
            return
        if not self.weight.data:
            raise OpTypeError(self.name, "property 'weight' must not be empty")
        result = tensor_of(
            self.name, "result", self.result.type, what="result", storage=True
        )
        source = self.file_shape()
        if product(source) != product(result.get_shape()):
            raise OpTypeError(
                self.name,
                f"weight_shape {fmt_shape(source)} has another element count than "
                f"the result type {fmt_shape(result.get_shape())}",
            )
        perm = ints_prop(self.properties, "perm")
        if perm is not None and sorted(perm) != list(range(len(source))):
            raise OpTypeError(
                self.name,
                f"perm {list(perm)} is not a permutation of the axes of the weight "
                f"{fmt_shape(source)}",
            )

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
            op = cls.create(
                result_types=[result_type], properties={"weight": StringAttr(weight)}
            )
            for key in ("weight_shape", "perm"):
                if key in attrs:
                    op.properties[key] = attrs.pop(key)
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
            view = {
                k: self.properties[k]
                for k in ("weight_shape", "perm")
                if k in self.properties
            }
            printer.print_op_attributes({**view, **self.attributes})
            printer.print_string(" : ")
            printer.print_attribute(self.result.type)


OPS = (ConstOp,)
"""The ops of this family, as the mil dialect lists them."""

"""Float dense literals that print and parse back bit-exactly (a patch of
xDSL 0.75's builtin printer and parser, installed on import).

Why: xDSL prints a non-finite element of a float `dense<...>` as its bit
pattern (`dense<0xff800000> : tensor<f32>` for -inf, as MLIR does) but its
parser reads that hex literal as the integer 4286578688 converted to float,
so -inf, inf and nan change value through IR text (a causal mask's -inf
becomes 4.3e9 and its softmax rows come out uniform), as do the finite f32
and f64 values xDSL prints in hex (123456792.0 as 0x4CEB79A3). MLIR's rule, which
xDSL already follows for a scalar `0x7f800000 : f32`, is that a hex literal
of a float element is its bit pattern. The printer also goes through Python
floats, which lose f16 NaN payloads, quiet signaling NaNs and, by comparing
`0.0 == -0.0`, print `[0.0, -0.0]` as the splat `dense<0.0>`.

The patch: the parser reads a hex element of a float tensor literal as its
bits (MLIR's errors for a leading minus or too many bits); the printer takes
each float element's bits from the buffer, printing a non-finite one in
hex and a finite one as xDSL does, and calls a literal splat only when every
element has the same bits. Upstream xDSL (main at 6d9bdde, 2026-08) reads a
scalar's hex as bits (its PR 3378, whose errors we use) but still converts a
dense element's; `tests/test_float_text.py::test_xdsl_still_needs_the_patch`
fails once an xDSL upgrade parses the hex form itself, and this module can go.
"""

from __future__ import annotations

import math

from xdsl.dialects.builtin import (
    AnyFloat,
    BytesAttr,
    DenseIntOrFPElementsAttr,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.mlir_lexer import MLIRTokenKind

XDSL_PARSE_DENSE = AttrParser.parse_dense_int_or_fp_elements_attr
XDSL_PRINT_DENSE = DenseIntOrFPElementsAttr.print_without_type


def is_hex(element: AttrParser._TensorLiteralElement) -> bool:
    """Whether a tensor literal element was written as a hex integer."""
    return element.span.text.lstrip("-")[:2] in ("0x", "0X")


def element_bits(
    parser: AttrParser, element: AttrParser._TensorLiteralElement, type: AnyFloat
) -> bytes:
    """The little-endian bytes of one float element: a hex literal's bits as
    written (MLIR's rule), any other number rounded to `type`."""
    if not is_hex(element):
        return type.pack((element.to_float(parser),))
    if element.is_negative:
        parser.raise_error(
            "hexadecimal float literal should not have a leading minus",
            at_position=element.span,
        )
    assert isinstance(element.value, int)
    if element.value.bit_length() > type.bitwidth:
        parser.raise_error(
            "Hexadecimal float constant out of range for type",
            at_position=element.span,
        )
    return element.value.to_bytes(type.compile_time_size, "little")


def parse_hex_float_literal(
    parser: AttrParser, type: AnyFloat | None
) -> DenseIntOrFPElementsAttr | None:
    """The float tensor literal at the parser's position when one of its
    elements is in hex; None for anything else, which xDSL's own parser reads
    (the caller rewinds)."""
    parser.parse_punctuation("<", " in dense attribute")
    if parser._current_token.kind in (MLIRTokenKind.STRING_LIT, MLIRTokenKind.GREATER):
        return None
    elements, shape = parser._parse_tensor_literal()
    parser.parse_punctuation(">", " in dense attribute")
    if type is None:
        parser.parse_punctuation(":", " in dense attribute")
        type = parser._parse_dense_literal_type()
    element_type = type.element_type
    if not isinstance(element_type, AnyFloat) or not any(map(is_hex, elements)):
        return None
    raw = b"".join(element_bits(parser, e, element_type) for e in elements)
    type_shape = list(type.get_shape())
    if not shape:
        raw *= math.prod(type_shape)
    elif shape != type_shape:
        parser.raise_error(
            f"Shape mismatch in dense literal. Expected {type_shape} "
            f"shape from the type, but got {shape} shape."
        )
    return DenseIntOrFPElementsAttr(type, BytesAttr(raw))


def parse_dense(self: AttrParser, type=None) -> DenseIntOrFPElementsAttr:
    """xDSL's dense parser, with hex float elements read as bit patterns."""
    start = self._current_token.span.start
    attr = parse_hex_float_literal(self, type)
    if attr is not None:
        return attr
    self._resume_from(start)
    return XDSL_PARSE_DENSE(self, type)


def print_dense(self: DenseIntOrFPElementsAttr, printer: Printer) -> None:
    """xDSL's dense printer, with float elements printed from their bits."""
    element_type = self.get_element_type()
    count = len(self)
    if not isinstance(element_type, AnyFloat) or count == 0:
        return XDSL_PRINT_DENSE(self, printer)
    raw = self.data.data
    size = element_type.compile_time_size
    printer.print_string("dense")
    with printer.in_angle_brackets():
        if raw == raw[:size] * count:
            print_element(raw[:size], element_type, printer)
        elif count > 100:
            printer.print_string(f'"0x{raw.hex().upper()}"')
        else:
            shape = self.get_shape() if self.shape_is_complete else (count,)
            chunks = [raw[i : i + size] for i in range(0, len(raw), size)]
            print_nested(chunks, list(shape), element_type, printer)


def print_nested(
    chunks: list[bytes], shape: list[int], type: AnyFloat, printer: Printer
) -> None:
    """`[[a, b], [c, d]]` for elements given as bytes, outermost axis first."""
    printer.print_string("[")
    if len(shape) > 1:
        k = len(chunks) // shape[0]
        printer.print_list(
            (chunks[i : i + k] for i in range(0, len(chunks), k)),
            lambda sub: print_nested(sub, shape[1:], type, printer),
        )
    else:
        printer.print_list(chunks, lambda c: print_element(c, type, printer))
    printer.print_string("]")


def print_element(raw: bytes, type: AnyFloat, printer: Printer) -> None:
    """One float element: non-finite as its bits (MLIR's form), else xDSL's
    decimal (exact for every finite value of f16, bf16, f32 and f64)."""
    (value,) = type.unpack(raw, 1)
    if math.isfinite(value):
        printer.print_float(value, type)
    else:
        printer.print_string(f"0x{raw[::-1].hex()}")


AttrParser.parse_dense_int_or_fp_elements_attr = parse_dense
DenseIntOrFPElementsAttr.print_without_type = print_dense

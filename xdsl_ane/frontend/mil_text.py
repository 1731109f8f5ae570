"""MIL text -> mil dialect: reads the `program(1.3)` form that
`xdsl_ane.backend.mil_text` prints and that hand-written ANE kernels use.

Accepted, beyond what the printer writes: named consts shared between ops
and inline literals in their place (`keep_dims = bool(true)`), compact
spacing (`mul(x=a,y=b)`), decimal or hex floats, `tensor<int32, []>` for a
scalar, a one-value tensor literal as a splat, nested element lists,
parenthesised result lists `(tensor<..> a, tensor<..> b) = split(...)`,
inputs of any op written as attributes (`constexpr_affine_dequantize()[axis =
int32(0), quantized_data = ..., scale = ..., zero_point = ...]`), `//`
comments and any buildInfo (ignored). `@model_path` in a BLOBFILE path is the
directory of the .mil file (or `weights_dir`).

Every op is built with the mil dialect's builders, so MIL's typing rules run
on it, and its declared result types must equal the inferred ones. Inputs
that the dialect holds as properties (perm, axes, epsilon, ...) must be
compile-time constants: named consts or literals; a uint32 value is read
only as such an input (pixel_unshuffle's downscale_factor), never as a
tensor. Consts that only served as such inputs disappear; the others
become `mil.const` ops, BLOBFILE ones as `mil.const weight "<its MIL
name>"` with the data in the returned weights.
Errors are `MilTextError`s of one line, `file:line:col: message`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, ClassVar, NoReturn

import numpy as np
from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.ir import Operation
from xdsl.rewriter import Rewriter
from xdsl.utils.frontend import Frontend

from xdsl_ane.backend.mil_text import MilTextError
from xdsl_ane.backend.weights import BLOB_NUMPY_DTYPES
from xdsl_ane.dialects import mil
from xdsl_ane.dialects.dense import dense_from_numpy
from xdsl_ane.frontend.mil_builder import (
    DTYPES,
    INT_RANGES,
    NUMPY_DTYPES,
    PARAMETER_DTYPES,
    UNSUPPORTED_DTYPES,
    Arg,
    FunctionScope,
    Literal,
    MilBuilder,
    MilType,
    Ref,
    TupleArg,
    unquote,
)
from xdsl_ane.frontend.mil_lexer import Token, tokenize
from xdsl_ane.locations import SourceText, record


class MilTextParser(MilBuilder):
    """MIL text to the mil dialect (see the module docstring)."""

    def __init__(self, text: str, path: str | None, weights_dir: Path | None):
        if weights_dir is None:
            weights_dir = Path(path).parent if path else Path.cwd()
        super().__init__(path or "<input>", weights_dir)
        self.text = text
        self.source = SourceText(self.file, text)  # where each op was read
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.tokens = tokenize(text, self.fail)
        self.pos = 0

    def remember(self, op: Operation, offset: int) -> None:
        record(op, self.source, offset)

    # --- diagnostics and token helpers ---

    def fail(self, offset: int, message: str) -> NoReturn:
        line = 0
        lo, hi = 0, len(self.line_starts) - 1
        while lo <= hi:
            mid = (lo + hi) // 2
            if self.line_starts[mid] <= offset:
                line, lo = mid, mid + 1
            else:
                hi = mid - 1
        col = offset - self.line_starts[line] + 1
        raise MilTextError(f"{self.file}:{line + 1}:{col}: {message}")

    def peek(self, ahead: int = 0) -> Token:
        return self.tokens[min(self.pos + ahead, len(self.tokens) - 1)]

    def next(self) -> Token:
        token = self.peek()
        self.pos = min(self.pos + 1, len(self.tokens) - 1)
        return token

    def at(self, text: str) -> bool:
        token = self.peek()
        return token.kind in ("punct", "ident") and token.text == text

    def accept(self, text: str) -> bool:
        if self.at(text):
            self.next()
            return True
        return False

    def expect(self, text: str) -> Token:
        token = self.peek()
        if not self.at(text):
            self.fail(token.offset, f"expected '{text}', got {token.describe()}")
        return self.next()

    def expect_kind(self, kind: str, what: str) -> Token:
        token = self.peek()
        if token.kind != kind:
            self.fail(token.offset, f"expected {what}, got {token.describe()}")
        return self.next()

    # --- program and functions ---

    def parse_program(self) -> tuple[builtin.ModuleOp, dict[str, np.ndarray]]:
        self.expect("program")
        self.expect("(")
        self.expect_kind("number", "a program version")
        self.expect(")")
        if self.at("["):
            self.skip_attributes()
        self.expect("{")
        functions: list[func.FuncOp] = []
        names: set[str] = set()
        while not self.at("}"):
            token = self.peek()
            if token.kind == "eof":
                self.fail(token.offset, "unexpected end of input, expected '}'")
            function = self.parse_function()
            if function.sym_name.data in names:
                self.fail(
                    token.offset,
                    f"function '{function.sym_name.data}' is defined twice",
                )
            names.add(function.sym_name.data)
            functions.append(function)
        self.expect("}")
        token = self.peek()
        if token.kind != "eof":
            self.fail(token.offset, f"unexpected {token.describe()} after the program")
        return self.finish_module(functions)

    def skip_attributes(self) -> None:
        """`[buildInfo = dict<string, string>({...}), ...]`: skipped."""
        opening = self.expect("[")
        closing = {"(": ")", "[": "]", "{": "}", "<": ">"}
        stack = ["]"]
        while stack:
            token = self.next()
            if token.kind == "eof":
                self.fail(opening.offset, "unterminated '[' (program attributes)")
            if token.kind != "punct":
                continue
            if token.text in closing:
                stack.append(closing[token.text])
            elif token.text in closing.values() and stack.pop() != token.text:
                self.fail(token.offset, f"unbalanced '{token.text}'")

    def parse_function(self) -> func.FuncOp:
        self.expect("func")
        name = self.expect_kind("ident", "a function name")
        if self.accept("<"):
            self.expect_kind("ident", "an opset name (ios18)")
            self.expect(">")
        self.expect("(")
        params: list[tuple[MilType, Token]] = []
        if not self.at(")"):
            while True:
                t = self.parse_tensor_type("function inputs")
                params.append((t, self.expect_kind("ident", "a parameter name")))
                if not self.accept(","):
                    break
        self.expect(")")
        self.expect("{")
        scope = self.new_scope(params)
        while not self.at("}"):
            self.parse_statement(scope)
        self.expect("}")
        self.expect("->")
        self.expect("(")
        outputs: list[Token] = []
        if not self.at(")"):
            while True:
                outputs.append(self.expect_kind("ident", "an output name"))
                if not self.accept(","):
                    break
        self.expect(")")
        self.expect(";")
        return self.finish_function(scope, name, outputs)

    # --- types and literals ---

    def parse_type(self) -> MilType:
        token = self.expect_kind("ident", "a type")
        if token.text == "tensor":
            self.expect("<")
            dtype = self.parse_dtype()
            self.expect(",")
            self.expect("[")
            shape: list[int] = []
            while not self.at("]"):
                dim = self.peek()
                if dim.kind != "number" or not dim.text.isdigit():
                    if dim.text == "?" or dim.kind == "ident":
                        self.fail(dim.offset, "dynamic shapes are not supported")
                    self.fail(dim.offset, f"expected a dimension, got {dim.describe()}")
                shape.append(int(self.next().text))
                if not self.accept(","):
                    break
            self.expect("]")
            self.expect(">")
            return MilType(dtype, tuple(shape))
        if token.text == "state":
            self.expect("<")
            inner = self.peek()
            state = self.state_of(self.parse_type(), inner.offset)
            self.expect(">")
            return state
        if token.text == "string":
            return MilType("string")
        self.pos -= 1
        return MilType(self.parse_dtype())

    def parse_tensor_type(self, what: str) -> MilType:
        start = self.peek()
        dtype = self.peek(2) if start.text == "tensor" else start
        return self.input_type(self.parse_type(), what, start.offset, dtype.offset)

    def parse_dtype(self) -> str:
        token = self.expect_kind("ident", "a dtype")
        if token.text in DTYPES or token.text in PARAMETER_DTYPES:
            return token.text
        if token.text in UNSUPPORTED_DTYPES:
            self.fail(
                token.offset,
                f"dtype '{token.text}' is not supported (supported: "
                f"{', '.join(DTYPES)})",
            )
        self.fail(token.offset, f"unknown type '{token.text}'")

    def at_literal(self) -> bool:
        token, after = self.peek(), self.peek(1)
        return token.kind == "ident" and (
            (token.text == "tensor" and after.text == "<")
            or (after.text == "(" and after.kind == "punct")
        )

    def parse_literal(self) -> Literal:
        start = self.peek().offset
        t = self.parse_type()
        self.expect("(")
        if t.dtype == "string":
            token = self.expect_kind("string", "a string")
            literal = Literal(t, unquote(token.text), start)
        elif self.at("BLOBFILE"):
            literal = self.parse_blobfile(t, start)
        elif t.shape and self.at("["):
            elements: list[Token] = []
            self.parse_elements(elements)
            literal = Literal(t, self.element_array(t, elements, start), start)
        else:
            element = self.parse_element()
            count = int(np.prod(t.shape))
            literal = Literal(t, self.element_array(t, [element] * count, start), start)
        self.expect(")")
        return literal

    def parse_elements(self, out: list[Token]) -> None:
        self.expect("[")
        while not self.at("]"):
            if self.at("["):
                self.parse_elements(out)
            else:
                out.append(self.parse_element())
            if not self.accept(","):
                break
        self.expect("]")

    def parse_element(self) -> Token:
        token = self.peek()
        if (
            token.kind == "punct"
            and token.text in "-+"
            and self.peek(1).kind == "ident"
        ):
            self.next()
            word = self.next()
            return Token("ident", token.text + word.text, token.offset)
        if token.kind in ("number", "ident"):
            return self.next()
        self.fail(token.offset, f"expected a value, got {token.describe()}")

    def element_array(
        self, t: MilType, elements: Sequence[Token], start: int
    ) -> np.ndarray:
        count = int(np.prod(t.shape))
        if len(elements) != count:
            self.fail(
                start, f"{t} literal has {len(elements)} values, expected {count}"
            )
        values = [self.element_value(t.dtype, token) for token in elements]
        return np.array(values, dtype=NUMPY_DTYPES[t.dtype]).reshape(t.shape)

    def element_value(self, dtype: str, token: Token) -> float | int | bool:
        text = token.text
        if dtype == "bool":
            if text not in ("true", "false"):
                self.fail(
                    token.offset, f"expected true or false, got {token.describe()}"
                )
            return text == "true"
        if dtype in INT_RANGES:
            if token.kind != "number" or not re.fullmatch(r"[-+]?\d+", text):
                self.fail(
                    token.offset, f"expected an {dtype} value, got {token.describe()}"
                )
            value = int(text)
            lo, hi = INT_RANGES[dtype]
            if not lo <= value <= hi:
                self.fail(token.offset, f"{value} is out of range for {dtype}")
            return value
        word = text.lstrip("+-").lower()
        if token.kind == "ident" and word not in ("inf", "nan", "infinity"):
            self.fail(
                token.offset, f"expected an {dtype} value, got {token.describe()}"
            )
        try:
            value = float.fromhex(text) if "x" in text.lower() else float(text)
        except OverflowError:  # a hex float beyond float64
            self.fail(token.offset, f"{text} is out of range for {dtype}")
        literal_infinity = token.kind == "ident"
        if (math.isinf(value) and not literal_infinity) or (
            math.isfinite(value)
            and abs(value) > float(np.finfo(NUMPY_DTYPES[dtype]).max)
        ):
            self.fail(token.offset, f"{text} is out of range for {dtype}")
        return value

    def parse_blobfile(self, t: MilType, start: int) -> Literal:
        self.expect("BLOBFILE")
        self.expect("(")
        fields: dict[str, Literal] = {}
        while True:
            key = self.expect_kind("ident", "'path' or 'offset'")
            if key.text not in ("path", "offset") or key.text in fields:
                self.fail(key.offset, f"unexpected BLOBFILE field '{key.text}'")
            self.expect("=")
            if key.text == "offset":
                self.expect("uint64")
                self.expect("(")
                number = self.expect_kind("number", "an offset")
                if not number.text.isdigit():
                    self.fail(number.offset, f"bad offset {number.text}")
                self.expect(")")
                fields["offset"] = Literal(MilType("int32"), number.text, number.offset)
            else:
                fields["path"] = self.parse_literal()
                if fields["path"].type.dtype != "string":
                    self.fail(fields["path"].offset, "BLOBFILE path must be a string")
            if not self.accept(","):
                break
        self.expect(")")
        for required in ("path", "offset"):
            if required not in fields:
                self.fail(start, f"BLOBFILE is missing '{required}'")
        if t.dtype not in BLOB_NUMPY_DTYPES:
            self.fail(start, f"{t} cannot be stored in a weight blob")
        path = self.resolve_blob_path(fields["path"])
        offset_literal = fields["offset"]
        assert isinstance(offset_literal.value, str)
        offset = int(offset_literal.value)
        data = self.read_blob(path, offset, t, offset_literal.offset)
        return Literal(t, data, start, blob=(path, offset))

    # --- statements ---

    def parse_statement(self, scope: FunctionScope) -> None:
        start = self.peek()
        if start.kind == "eof":
            self.fail(
                start.offset, "unexpected end of input, expected a statement or '}'"
            )
        results: list[tuple[MilType, Token]] = []
        parenthesised = self.accept("(")
        if not parenthesised and start.kind == "ident" and self.peek(1).text == "(":
            # an op without results: `write_state(data = v, input = s)[...]`
            self.parse_op_call(scope, results)
            return
        while True:
            t = self.parse_type()
            results.append((t, self.expect_kind("ident", "a result name")))
            if not self.accept(","):
                break
        if parenthesised:
            self.expect(")")
        self.expect("=")
        self.parse_op_call(scope, results)

    def parse_op_call(
        self, scope: FunctionScope, results: list[tuple[MilType, Token]]
    ) -> None:
        """`op(inputs)[attributes];` after the results (if any)."""
        op_token = self.expect_kind("ident", "an op name")
        self.expect("(")
        args: dict[str, tuple[Token, Arg]] = {}
        while not self.at(")"):
            key = self.expect_kind("ident", "an input name")
            if key.text in args:
                self.fail(key.offset, f"input '{key.text}' is given twice")
            self.expect("=")
            args[key.text] = (key, self.parse_arg())
            if not self.accept(","):
                break
        self.expect(")")
        attributes: dict[str, tuple[Token, Literal]] = {}
        if self.accept("["):
            while not self.at("]"):
                key = self.expect_kind("ident", "an attribute name")
                if key.text in attributes:
                    self.fail(key.offset, f"attribute '{key.text}' is given twice")
                self.expect("=")
                attributes[key.text] = (key, self.parse_literal())
                if not self.accept(","):
                    break
            self.expect("]")
        self.expect(";")
        if op_token.text == "const":
            literals = {key: literal for key, (_, literal) in attributes.items()}
            self.build_const(scope, results, op_token, args, literals)
        else:
            self.build_op(
                scope, results, op_token, self.with_attributes(args, attributes)
            )

    def parse_arg(self) -> Arg:
        token = self.peek()
        if self.accept("("):
            items: list[Ref | Literal] = []
            while not self.at(")"):
                item = self.parse_arg()
                if isinstance(item, TupleArg):
                    self.fail(item.offset, "nested tuples are not supported")
                items.append(item)
                if not self.accept(","):
                    break
            self.expect(")")
            return TupleArg(items, token.offset)
        if self.at_literal():
            return self.parse_literal()
        if token.kind == "ident":
            self.next()
            return Ref(token.text, token.offset)
        self.fail(
            token.offset,
            f"expected a value name, a literal or a tuple, got {token.describe()}",
        )


def parse_mil_text(
    text: str, path: str | Path | None = None, weights_dir: str | Path | None = None
) -> tuple[builtin.ModuleOp, dict[str, np.ndarray]]:
    """The mil-dialect module of a MIL program and the weights its BLOBFILE
    consts refer to (keyed by the consts' MIL names). `@model_path` stands
    for `weights_dir`, by default the directory of `path` (the .mil file)."""
    parser = MilTextParser(
        text,
        None if path is None else str(path),
        None if weights_dir is None else Path(weights_dir),
    )
    return parser.parse_program()


def read_mil_file(path: str | Path) -> tuple[builtin.ModuleOp, dict[str, np.ndarray]]:
    """`parse_mil_text` of a .mil file, `@model_path` being its directory."""
    path = Path(path)
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise MilTextError(
            f"{path}: cannot read: {getattr(e, 'strerror', None) or e}"
        ) from None
    return parse_mil_text(text, path)


def inline_weights(module: builtin.ModuleOp, weights: dict[str, np.ndarray]) -> None:
    """Replaces each `mil.const weight` by a const holding its data."""
    for op in list(module.walk()):
        if isinstance(op, mil.ConstOp) and op.weight is not None:
            t = op.result.type
            inline = mil.ConstOp(
                dense_from_numpy(weights[op.weight.data], t.element_type)
            )
            inline.result.name_hint = op.result.name_hint
            Rewriter.replace_op(op, inline)


@dataclass(frozen=True)
class MilTextFrontend(Frontend):
    """`xdsl-opt model.mil`: MIL text into the mil dialect. BLOBFILE consts
    become `mil.const weight` ops (their data is not in the IR) unless
    `-f 'mil{inline_weights=true}'` puts the data inline."""

    name: ClassVar[str] = "mil"

    inline_weights: bool = False

    def parse(
        self, ctx: Context, input: IO[bytes], input_name: str = "stdin"
    ) -> builtin.ModuleOp:
        path = None if input_name in ("stdin", "-") else input_name
        try:
            text = input.read().decode()
        except UnicodeDecodeError:
            raise MilTextError(f"{path or '<stdin>'}: not a text file") from None
        module, weights = parse_mil_text(text, path)
        if self.inline_weights:
            inline_weights(module, weights)
        return module

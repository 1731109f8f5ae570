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
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, ClassVar, NoReturn

import numpy as np
from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import (
    BoolAttr,
    DenseArrayBase,
    FloatAttr,
    FunctionType,
    IntegerAttr,
    StringAttr,
    f16,
    f32,
    i1,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.irdl import OptionalDef, VariadicDef, VarResultDef
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import DiagnosticException
from xdsl.utils.frontend import Frontend

from xdsl_ane.backend.mil_text import MilTextError
from xdsl_ane.backend.proto_values import NUMPY_TO_MIL
from xdsl_ane.backend.weights import BLOB_NUMPY_DTYPES, BlobFile
from xdsl_ane.dialects import ane, mil
from xdsl_ane.dialects.dense import dense_from_numpy
from xdsl_ane.dialects.mil.inputs import property_kind
from xdsl_ane.dialects.typing import tensor
from xdsl_ane.errors import XdslAneError, first_line
from xdsl_ane.frontend.mil_lexer import Token, tokenize
from xdsl_ane.locations import SourceText, record

MIL_OPS: dict[str, type[mil.MilOp]] = {
    op.name.removeprefix("mil."): op for op in mil.MIL_OPS if op is not mil.ConstOp
}
DTYPES = {**mil.MIL_DTYPES, **mil.MIL_STORAGE_DTYPES}
"""MIL's dtypes we read: those ops compute on and those of compressed data."""
PARAMETER_DTYPES = {"uint32"}
"""MIL dtypes read only as compile-time parameters (pixel_unshuffle's
downscale_factor): scalars that become properties, never tensor values."""
UNSUPPORTED_DTYPES = {"fp64", "bf16", "int16", "int64", "uint16"}
NUMPY_DTYPES = {**BLOB_NUMPY_DTYPES, "bool": np.dtype(np.bool_)}
INT_RANGES = {
    "int32": (-(2**31), 2**31 - 1),
    "int8": (-128, 127),
    "uint32": (0, 2**32 - 1),
    "int4": (-8, 7),
    **{f"uint{w}": (0, 2**w - 1) for w in (1, 2, 3, 4, 6, 8)},
}

# --- parsed pieces ---------------------------------------------------------------


@dataclass(frozen=True)
class MilType:
    """A MIL type: dtype and shape; `()` for a scalar; strings have no shape."""

    dtype: str
    shape: tuple[int, ...] = ()
    state: bool = False
    """`state<tensor<...>>`: a state input holding this tensor type."""

    def xdsl(self) -> Attribute:
        if self.state:
            return mil.StateType(MilType(self.dtype, self.shape).xdsl())
        return tensor(self.shape, DTYPES[self.dtype])

    def __str__(self) -> str:
        if self.state:
            return f"state<{MilType(self.dtype, self.shape)}>"
        if self.dtype == "string" or not self.shape:
            return self.dtype
        return f"tensor<{self.dtype}, [{', '.join(str(d) for d in self.shape)}]>"


@dataclass
class Literal:
    type: MilType
    value: np.ndarray | str
    offset: int
    blob: tuple[Path, int] | None = None


@dataclass(frozen=True)
class Ref:
    name: str
    offset: int


@dataclass(frozen=True)
class TupleArg:
    items: list[Ref | Literal]
    offset: int


Arg = Ref | Literal | TupleArg


@dataclass
class Symbol:
    """What a MIL name stands for in a function."""

    type: MilType
    offset: int
    value: SSAValue | None = None  # None for a string const
    const: np.ndarray | str | None = None  # the value of a const
    const_op: mil.ConstOp | None = None
    weight: str | None = None
    used_as_parameter: bool = False


@dataclass
class FunctionScope:
    block: Block
    symbols: dict[str, Symbol] = field(default_factory=dict)


# --- the parser ------------------------------------------------------------------


class MilBuilder:
    """What the MIL text parser and the protobuf reader share: the mil ops
    built from MIL's op calls, checked by the dialect's typing rules; the
    consts, their blobs and the weights; the functions. A location
    (`offset`, a token's offset) is the reader's own: a character offset
    of MIL text, or the index of a protobuf op's description; `fail`
    turns it into the one-line error."""

    def __init__(self, file: str, model_path: Path):
        self.file = file
        self.model_path = model_path
        """What `@model_path` in a BLOBFILE path stands for."""
        self.weights: dict[str, np.ndarray] = {}
        self.weight_by_blob: dict[tuple[Path, int, MilType], str] = {}
        self.weight_users: dict[str, list[mil.ConstOp]] = {}
        self.blob_files: dict[Path, BlobFile] = {}

    def fail(self, offset: int, message: str) -> NoReturn:
        raise NotImplementedError

    def remember(self, op: Operation, offset: int) -> None:
        """Records where `op` was read (MIL text records `file:line:col`)."""

    # --- functions ---

    def new_scope(self, params: Sequence[tuple[MilType, Token]]) -> FunctionScope:
        """The scope of a function taking `params` (type and name)."""
        scope = FunctionScope(Block(arg_types=[t.xdsl() for t, _ in params]))
        for (t, token), arg in zip(params, scope.block.args):
            self.define(scope, token, Symbol(t, token.offset, arg))
        return scope

    def finish_function(
        self, scope: FunctionScope, name: Token, outputs: Sequence[Token]
    ) -> func.FuncOp:
        """The function `name` of `scope`'s ops, returning `outputs`."""
        values = [self.tensor_value(scope, Ref(t.text, t.offset)) for t in outputs]
        scope.block.add_op(func.ReturnOp(*values))
        self.drop_parameter_consts(scope)
        function_type = FunctionType.from_lists(
            [a.type for a in scope.block.args], [v.type for v in values]
        )
        function = func.FuncOp(name.text, function_type, Region(scope.block))
        # the output names, which name hints cannot keep (`logits_0`)
        ane.record_result_names(function, [t.text for t in outputs])
        self.remember(function, name.offset)
        return function

    def finish_module(
        self, functions: Sequence[func.FuncOp]
    ) -> tuple[builtin.ModuleOp, dict[str, np.ndarray]]:
        """The module of `functions`, verified, and the weights."""
        module = builtin.ModuleOp(list(functions))
        try:  # each mil op was verified as it was built
            module.verify(verify_nested_ops=False)
            for function in module.ops:
                function.verify(verify_nested_ops=False)
                function.regions[0].block.last_op.verify()
        except DiagnosticException as e:
            raise MilTextError(f"{self.file}: {first_line(e)}") from None
        return module, self.weights

    # --- types ---

    def state_of(self, wrapped: MilType, at: int) -> MilType:
        """`state<wrapped>`: a state holds a tensor."""
        if wrapped.state or wrapped.dtype == "string" or not wrapped.shape:
            self.fail(at, "a state holds a tensor<...>")
        return MilType(wrapped.dtype, wrapped.shape, state=True)

    def input_type(self, t: MilType, what: str, at: int, dtype_at: int) -> MilType:
        """`t` as the type of a function input: a tensor or scalar of a
        dtype ops compute on (compressed data is for consts only)."""
        if t.dtype == "string":
            self.fail(at, f"{what} must be tensors or scalars, not strings")
        if t.dtype in mil.MIL_STORAGE_DTYPES or t.dtype in PARAMETER_DTYPES:
            self.fail(
                dtype_at,
                f"dtype '{t.dtype}' is not supported for {what} (supported: "
                f"{', '.join(mil.MIL_DTYPES)})",
            )
        return t

    # --- names, consts and blobs ---

    def define(self, scope: FunctionScope, token: Token, symbol: Symbol) -> None:
        if token.text in scope.symbols:
            self.fail(token.offset, f"value '{token.text}' is already defined")
        scope.symbols[token.text] = symbol
        if symbol.value is not None:
            symbol.value.name_hint = token.text

    def drop_parameter_consts(self, scope: FunctionScope) -> None:
        """Consts that only fed properties are properties now."""
        for symbol in scope.symbols.values():
            op = symbol.const_op
            if op is None or not symbol.used_as_parameter or op.result.uses:
                continue
            op.detach()
            op.erase()
            if symbol.weight is not None:
                users = self.weight_users[symbol.weight]
                users.remove(op)
                if not users:
                    del self.weights[symbol.weight]
                    self.weight_by_blob = {
                        k: v
                        for k, v in self.weight_by_blob.items()
                        if v != symbol.weight
                    }

    def resolve_blob_path(self, literal: Literal) -> Path:
        assert isinstance(literal.value, str)
        text = literal.value
        if text.startswith("@model_path/"):
            path = self.model_path / text.removeprefix("@model_path/")
        else:
            path = Path(text) if Path(text).is_absolute() else self.model_path / text
        if path not in self.blob_files:
            if not path.is_file():
                self.fail(
                    literal.offset, f"blob file '{text}' not found (looked for {path})"
                )
            self.blob_files[path] = BlobFile(path)
        return path

    def read_blob(self, path: Path, offset: int, t: MilType, at: int) -> np.ndarray:
        """The tensor whose metadata record is at `offset`, read by
        coremltools' MILBlob reader and checked against `t`."""
        try:
            return self.blob_files[path].read_checked(offset, t.dtype, t.shape, str(t))
        except XdslAneError as e:
            self.fail(at, str(e))

    # --- ops ---

    def with_attributes(
        self,
        args: dict[str, tuple[Token, Arg]],
        attributes: dict[str, tuple[Token, Literal]],
    ) -> dict[str, tuple[Token, Arg]]:
        """An op's inputs with its compile-time parameters written as
        attributes (`constexpr_affine_dequantize()[axis = int32(0),
        quantized_data = tensor<int8, [4, 2]>([...]), ...]`, as hand-written
        kernels do) taken as inputs of the same name; `name` is the op's
        MIL name, not an input."""
        merged = dict(args)
        for key, (key_token, literal) in attributes.items():
            if key == "name":
                continue
            if key in merged:
                self.fail(
                    key_token.offset,
                    f"input '{key}' is given both as an input and as an attribute",
                )
            merged[key] = (key_token, literal)
        return merged

    def build_const(self, scope, results, op_token, args, attributes) -> None:
        if len(results) != 1:
            self.fail(op_token.offset, "const has one result")
        if args:
            self.fail(
                op_token.offset,
                "const takes no inputs; its value is the attribute 'val'",
            )
        if "val" not in attributes:
            self.fail(op_token.offset, "const needs an attribute 'val'")
        (declared, name), literal = results[0], attributes["val"]
        if literal.type != declared:
            self.fail(
                literal.offset,
                f"const '{name.text}' is declared {declared}, its val is {literal.type}",
            )
        symbol = Symbol(declared, name.offset, const=literal.value)
        if isinstance(literal.value, np.ndarray) and declared.dtype in DTYPES:
            op = self.const_op(literal, name.text)
            scope.block.add_op(op)
            self.remember(op, name.offset)
            symbol.value, symbol.const_op = op.result, op
            if op.weight is not None:
                symbol.weight = op.weight.data
        self.define(scope, name, symbol)

    def const_op(self, literal: Literal, name: str) -> mil.ConstOp:
        assert isinstance(literal.value, np.ndarray)
        t = literal.type
        if t.dtype in PARAMETER_DTYPES:
            self.fail(
                literal.offset,
                f"a {t.dtype} value can only be a compile-time input, not a tensor",
            )
        if literal.blob is None:
            return mil.ConstOp(dense_from_numpy(literal.value, DTYPES[t.dtype]))
        key = (*literal.blob, t)
        weight = self.weight_by_blob.get(key)
        if weight is None:
            weight, n = name, 0
            while weight in self.weights:
                n += 1
                weight = f"{name}_{n}"
            self.weights[weight] = literal.value
            self.weight_by_blob[key] = weight
            self.weight_users[weight] = []
        op = mil.ConstOp.from_weight(weight, t.xdsl())
        self.weight_users[weight].append(op)
        return op

    def build_op(
        self,
        scope: FunctionScope,
        results: list[tuple[MilType, Token]],
        op_token: Token,
        args: dict[str, tuple[Token, Arg]],
    ) -> None:
        if op_token.text == "identity":
            self.build_identity(scope, results, op_token, args)
            return
        if op_token.text == "write_state":
            self.build_write_state(scope, results, op_token, args)
            return
        op_type = MIL_OPS.get(op_token.text)
        if op_type is None:
            self.fail(op_token.offset, f"unknown MIL op '{op_token.text}'")
        definition = op_type.get_irdl_definition()
        operand_defs = dict(definition.operands)
        properties = [p for p in definition.properties if p != "operandSegmentSizes"]
        result_name = results[0][1].text
        operands: dict[str, SSAValue | list[SSAValue] | None] = {}
        props: dict[str, Attribute] = {}
        for key, (key_token, arg) in args.items():
            if key in operand_defs:
                variadic = isinstance(
                    operand_defs[key], VariadicDef
                ) and not isinstance(operand_defs[key], OptionalDef)
                if isinstance(arg, TupleArg):
                    if not variadic:
                        self.fail(
                            arg.offset,
                            f"input '{key}' of {op_token.text} takes one value, not a tuple",
                        )
                    operands[key] = [
                        self.operand(scope, item, f"{result_name}_{key}")
                        for item in arg.items
                    ]
                else:
                    value = self.operand(scope, arg, f"{result_name}_{key}")
                    operands[key] = [value] if variadic else value
            elif key in properties:
                props[key] = self.property(scope, op_type, key, arg)
            else:
                inputs = ", ".join(sorted([*operand_defs, *properties]))
                self.fail(
                    key_token.offset,
                    f"{op_token.text} has no input '{key}' (its inputs are {inputs})",
                )
        for key, d in operand_defs.items():
            if key not in operands and not isinstance(d, VariadicDef):
                self.fail(
                    op_token.offset, f"{op_token.text} is missing its input '{key}'"
                )
        props = {p: props[p] for p in properties if p in props}  # IRDL order
        try:
            op = build_mil_op(op_type, operands, props)
        except Exception as e:  # the builders' type errors
            self.fail(op_token.offset, first_line(e))
        if len(op.results) != len(results):
            self.fail(
                op_token.offset,
                f"{op_token.text} has {len(op.results)} results here, {len(results)} declared",
            )
        for (declared, name), result in zip(results, op.results):
            if declared.dtype not in DTYPES or declared.xdsl() != result.type:
                inferred = MilType(
                    mil.mil_dtype_name(result.type.element_type),
                    result.type.get_shape(),
                )
                self.fail(
                    name.offset,
                    f"'{name.text}' is declared {declared}, but {op_token.text} gives {inferred}",
                )
        scope.block.add_op(op)
        self.remember(op, results[0][1].offset)
        try:
            op.verify()
        except DiagnosticException as e:
            self.fail(op_token.offset, first_line(e))
        for (declared, name), result in zip(results, op.results):
            self.define(scope, name, Symbol(declared, name.offset, result))

    def build_write_state(self, scope, results, op_token, args) -> None:
        """`write_state(input = s, data = v)` (no result) is the store of
        a `coreml_update_state` whose result is unused; a `read_state`
        after it reads the value back, as coremltools' loader merges them."""
        if results or set(args) != {"input", "data"}:
            self.fail(
                op_token.offset,
                "write_state takes inputs 'input' (a state) and 'data' and has "
                "no result",
            )
        state, data = (args[k][1] for k in ("input", "data"))
        for arg in (state, data):
            if not isinstance(arg, Ref):
                self.fail(arg.offset, "the inputs of write_state are value names")
        try:
            op = mil.CoremlUpdateStateOp(
                self.tensor_value(scope, state), self.tensor_value(scope, data)
            )
        except DiagnosticException as e:
            self.fail(op_token.offset, first_line(e))
        scope.block.add_op(op)

    def build_identity(self, scope, results, op_token, args) -> None:
        """`identity(x = v)` names the value of `v` again (the printers write
        it for a returned input or a value returned twice)."""
        if len(results) != 1 or set(args) != {"x"}:
            self.fail(
                op_token.offset, "identity takes one input 'x' and has one result"
            )
        arg = args["x"][1]
        if not isinstance(arg, Ref):
            self.fail(arg.offset, "input 'x' of identity must be a value name")
        value = self.tensor_value(scope, arg)
        (declared, name) = results[0]
        if declared.dtype not in DTYPES or declared.xdsl() != value.type:
            self.fail(
                name.offset,
                f"identity '{name.text}' is declared {declared}, its input is "
                f"{value.type}",
            )
        if name.text in scope.symbols:
            self.fail(name.offset, f"value '{name.text}' is already defined")
        scope.symbols[name.text] = Symbol(declared, name.offset, value)

    def operand(self, scope: FunctionScope, arg: Ref | Literal, hint: str) -> SSAValue:
        if isinstance(arg, Ref):
            return self.tensor_value(scope, arg)
        if not isinstance(arg.value, np.ndarray):
            self.fail(arg.offset, "a string is no tensor input")
        op = self.const_op(arg, hint)
        op.result.name_hint = hint
        scope.block.add_op(op)
        return op.result

    def symbol(self, scope: FunctionScope, ref: Ref) -> Symbol:
        """What `ref` names in `scope` (an error if nothing)."""
        symbol = scope.symbols.get(ref.name)
        if symbol is None:
            self.fail(ref.offset, f"unknown value '{ref.name}'")
        return symbol

    def tensor_value(self, scope: FunctionScope, ref: Ref) -> SSAValue:
        symbol = self.symbol(scope, ref)
        if symbol.value is None:
            self.fail(
                ref.offset,
                f"'{ref.name}' is a {symbol.type} const; it can only be a "
                "compile-time input",
            )
        assert symbol.value is not None
        return symbol.value

    def property(
        self, scope: FunctionScope, op_type: type[mil.MilOp], key: str, arg: Arg
    ) -> Attribute:
        """A compile-time input: a literal, or the value of a named const."""
        if isinstance(arg, TupleArg):
            self.fail(arg.offset, f"input '{key}' takes a constant, not a tuple")
        if isinstance(arg, Ref):
            symbol = self.symbol(scope, arg)
            if symbol.const is None:
                self.fail(
                    arg.offset,
                    f"input '{key}' of {op_type.name.removeprefix('mil.')} must be a const, '{arg.name}' is computed",
                )
            symbol.used_as_parameter = True
            t, value = symbol.type, symbol.const
        else:
            t, value = arg.type, arg.value
        kind = property_kind(op_type, key)
        if kind is None:
            self.fail(
                arg.offset,
                f"input '{key}' of {op_type.name.removeprefix('mil.')} has no MIL value",
            )
        assert kind is not None
        declared = op_type.mil_input(key).dtype
        int_dtype = "int32"
        if kind == "int" and isinstance(declared, np.dtype):
            int_dtype = NUMPY_TO_MIL[declared]  # pixel_unshuffle's uint32
        attr = property_attribute(kind, t, value, int_dtype)
        if attr is None:
            spelling = KIND_SPELLING[kind]
            if int_dtype != "int32":
                spelling = f"a {int_dtype} scalar"
            self.fail(
                arg.offset,
                f"input '{key}' of {op_type.name.removeprefix('mil.')} must be {spelling}, got {t}",
            )
        assert attr is not None
        return attr


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


KIND_SPELLING = {
    "ints": "tensor<int32, [N]>",
    "int": "an int32 scalar",
    "bool": "a bool scalar",
    "float": "an fp16 or fp32 scalar",
    "string": "a string",
    "scalar": "an fp16, fp32, int32 or bool scalar",
}


def property_attribute(
    kind: str, t: MilType, value: np.ndarray | str, int_dtype: str = "int32"
) -> Attribute | None:
    """The property attribute of a compile-time MIL value, None if the
    value does not have the kind's MIL type (`int_dtype` for an "int": the
    input's declared integer dtype)."""
    if kind == "string":
        return StringAttr(value) if isinstance(value, str) else None
    if isinstance(value, str):
        return None
    if kind == "ints":
        if t.dtype != "int32" or len(t.shape) != 1:
            return None
        return DenseArrayBase.from_list(i64, [int(v) for v in value.tolist()])
    if t.shape:
        return None
    item = value.item()
    if kind == "int":
        return IntegerAttr(int(item), i64) if t.dtype == int_dtype else None
    if kind == "bool":
        return BoolAttr(bool(item), i1) if t.dtype == "bool" else None
    if kind == "float":
        return FloatAttr(float(item), f32) if t.dtype in ("fp16", "fp32") else None
    if t.dtype in ("fp16", "fp32"):
        return FloatAttr(float(item), f16 if t.dtype == "fp16" else f32)
    if t.dtype in ("int32", "bool"):
        return IntegerAttr(int(item), i32 if t.dtype == "int32" else i1)
    return None


def build_mil_op(
    op_type: type[mil.MilOp],
    operands: dict[str, SSAValue | list[SSAValue] | None],
    properties: dict[str, Attribute],
) -> mil.MilOp:
    """Builds a mil op from MIL inputs by name with the dialect's builder
    (`init_mil`), which infers the result types; ops with a variable number
    of results (split) are created from their inferred types."""
    definition = op_type.get_irdl_definition()
    if any(isinstance(d, VarResultDef) for _, d in definition.results):
        flat: list[SSAValue] = []
        for name, _ in definition.operands:
            group = operands.get(name)
            flat.extend(
                group if isinstance(group, list) else [] if group is None else [group]
            )
        types = op_type.infer_result_types([v.type for v in flat], properties)
        return op_type.create(operands=flat, result_types=types, properties=properties)
    op = op_type.__new__(op_type)
    op.init_mil(operands, properties)
    return op


def unquote(text: str) -> str:
    body = text[1:-1]
    return re.sub(
        r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), body
    )


# --- entry points ----------------------------------------------------------------


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

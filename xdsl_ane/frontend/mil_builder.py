"""The mil dialect's builder of MIL programs read from text or protobuf:
MIL's ops and dtypes by name, the parsed pieces (types, literals,
references, symbols, scopes) and `MilBuilder`, which types and builds each
op with the dialect's builders; the MIL text parser (`mil_text.py`) and
the protobuf reader (`milproto.py`) feed it."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

import numpy as np
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
from xdsl.utils.exceptions import DiagnosticException

from xdsl_ane.backend.mil_text import MilTextError
from xdsl_ane.backend.proto_values import NUMPY_TO_MIL
from xdsl_ane.backend.weights import BLOB_NUMPY_DTYPES, BlobFile
from xdsl_ane.dialects import ane, mil
from xdsl_ane.dialects.dense import dense_from_numpy
from xdsl_ane.dialects.mil.inputs import property_kind
from xdsl_ane.dialects.typing import tensor
from xdsl_ane.errors import XdslAneError, first_line
from xdsl_ane.frontend.mil_lexer import Token

MIL_OPS: dict[str, type[mil.MilOp]] = {
    op.name.removeprefix("mil."): op for op in mil.MIL_OPS if op is not mil.ConstOp
}


DTYPES = {**mil.MIL_DTYPES, **mil.MIL_STORAGE_DTYPES}


"""MIL's dtypes we read: those ops compute on and those of compressed data."""


PARAMETER_DTYPES = {"uint32"}


"""MIL dtypes read only as compile-time parameters (pixel_unshuffle's
downscale_factor): scalars that become properties, never tensor values."""


UNSUPPORTED_DTYPES = {"fp64", "bf16", "int64"}


NUMPY_DTYPES = {**BLOB_NUMPY_DTYPES, "bool": np.dtype(np.bool_)}


INT_RANGES = {
    "int32": (-(2**31), 2**31 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int8": (-128, 127),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
    "int4": (-8, 7),
    **{f"uint{w}": (0, 2**w - 1) for w in (1, 2, 3, 4, 6, 8)},
}


KIND_SPELLING = {
    "ints": "tensor<int32, [N]>",
    "int": "an int32 scalar",
    "bool": "a bool scalar",
    "float": "an fp16 or fp32 scalar",
    "string": "a string",
    "scalar": "an fp16, fp32, int32 or bool scalar",
}


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

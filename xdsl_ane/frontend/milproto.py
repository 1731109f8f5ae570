"""Core ML ML Programs (protobuf) to the mil dialect.

A MIL protobuf and MIL text say the same thing: each op's type, its inputs
bound to value names or to immediate values, its typed outputs, and consts
whose values are immediate or blob references. So the protobuf reader is
the MIL text importer's builder (`mil_builder.MilBuilder`) fed from the
protobuf's messages instead of tokens: every op is checked by the mil
dialect's typing rules, compile-time inputs become properties, and blob
references keep their `@model_path/...` paths, resolved against the
model's directory. Errors are one line, naming the file, function and op.

`read_compiled` reads what `xdsl-ane compile` writes — an `.mlpackage`, a
`--emit proto` or `--emit mil-text` directory, or a `.mil` file — with its
weights and its manifest."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
from xdsl.dialects import builtin, func

from xdsl_ane.backend.proto_values import BYTES_DTYPES, MIL_DATA_TYPES
from xdsl_ane.backend.weights import BLOB_NUMPY_DTYPES, quiet_coremltools
from xdsl_ane.dialects.dtypes import BY_MIL
from xdsl_ane.errors import XdslAneError
from xdsl_ane.frontend.compiled import PACKAGE_MODEL
from xdsl_ane.frontend.mil_builder import (
    DTYPES,
    INT_RANGES,
    NUMPY_DTYPES,
    PARAMETER_DTYPES,
    Arg,
    FunctionScope,
    Literal,
    MilBuilder,
    MilType,
    Ref,
    TupleArg,
)
from xdsl_ane.frontend.mil_lexer import Token
from xdsl_ane.frontend.mil_text import read_mil_file

with quiet_coremltools():
    from coremltools.proto import MIL_pb2, Model_pb2

DTYPE_NAMES = {number: name for name, number in MIL_DATA_TYPES.items()}
BYTES_NUMPY = {name: BY_MIL[name].numpy for name in BYTES_DTYPES}
"""Immediate values stored as raw little-endian bytes."""


class ProtoImportError(XdslAneError):
    """A protobuf that has no mil dialect form (a dynamic shape, a list
    type, an op the dialect lacks)."""


class ProtoReader(MilBuilder):
    """The mil module of a model spec's ML program (see the module
    docstring). A location is an index into `labels`, the description of
    each function, op and input read."""

    def __init__(self, where: str, model_dir: Path):
        super().__init__(where, model_dir)
        self.labels: list[str] = []

    def fail(self, offset: int, message: str) -> NoReturn:
        raise ProtoImportError(f"{self.labels[offset]}: {message}")

    def at(self, label: str) -> int:
        """A location for `label`."""
        self.labels.append(label)
        return len(self.labels) - 1

    def token(self, text: str, label: str) -> Token:
        return Token("ident", text, self.at(label))

    # --- types and values ---

    def value_type(self, t: MIL_pb2.ValueType, at: int) -> MilType:
        """The type of a tensor value (or of a state of one)."""
        if t.WhichOneof("type") == "stateType":
            return self.state_of(self.value_type(t.stateType.wrappedType, at), at)
        if t.WhichOneof("type") != "tensorType":
            self.fail(at, "only tensor values are supported")
        tensor = t.tensorType
        dtype = DTYPE_NAMES.get(tensor.dataType)
        if dtype is None or (
            dtype not in DTYPES and dtype not in PARAMETER_DTYPES and dtype != "string"
        ):
            name = dtype or MIL_pb2.DataType.Name(tensor.dataType)
            self.fail(
                at, f"dtype '{name}' is not supported (supported: {', '.join(DTYPES)})"
            )
        shape = []
        for d in tensor.dimensions:
            if d.WhichOneof("dimension") != "constant":
                self.fail(at, f"dimension {len(shape)} is not static")
            shape.append(d.constant.size)
        return MilType(dtype, tuple(shape))

    def literal(self, value: MIL_pb2.Value, at: int) -> Literal:
        """A compile-time value: immediate, or a blob reference."""
        t = self.value_type(value.type, at)
        kind = value.WhichOneof("value")
        if kind == "blobFileValue":
            blob = value.blobFileValue
            if t.dtype not in BLOB_NUMPY_DTYPES:
                self.fail(at, f"{t} cannot be stored in a weight blob")
            path = self.resolve_blob_path(Literal(MilType("string"), blob.fileName, at))
            data = self.read_blob(path, blob.offset, t, at)
            return Literal(t, data, at, blob=(path, blob.offset))
        if (
            kind != "immediateValue"
            or value.immediateValue.WhichOneof("value") != "tensor"
        ):
            self.fail(at, "only tensor values are supported")
        tensor = value.immediateValue.tensor
        field_name = tensor.WhichOneof("value")
        if t.dtype == "string":
            if t.shape or field_name != "strings" or len(tensor.strings.values) != 1:
                self.fail(at, "string tensors are not supported")
            return Literal(t, tensor.strings.values[0], at)
        if field_name == "bytes" and t.dtype in BYTES_NUMPY:
            data = np.frombuffer(tensor.bytes.values, BYTES_NUMPY[t.dtype])
        elif field_name == "floats":
            data = np.array(tensor.floats.values, np.float32)
        elif field_name == "ints":
            data = np.array(tensor.ints.values, np.int64)
            lo, hi = INT_RANGES.get(t.dtype, (None, None))
            if lo is not None and data.size and (data.min() < lo or data.max() > hi):
                self.fail(at, f"values out of range for {t.dtype}")
        elif field_name == "bools":
            data = np.array(tensor.bools.values, np.bool_)
        else:
            self.fail(at, f"values of kind {field_name} are not supported for {t}")
        count = int(np.prod(t.shape)) if t.shape else 1
        if data.size != count:
            self.fail(at, f"{data.size} values for a value of shape {list(t.shape)}")
        return Literal(t, data.astype(NUMPY_DTYPES[t.dtype]).reshape(t.shape), at)

    # --- ops and functions ---

    def operation(
        self, scope: FunctionScope, op: MIL_pb2.Operation, where: str
    ) -> None:
        name = op.attributes["name"].immediateValue.tensor.strings.values[0]
        label = f"{where}: {op.type} '{name}'"
        op_token = self.token(op.type, label)
        results = [
            (self.value_type(o.type, op_token.offset), self.token(o.name, label))
            for o in op.outputs
        ]
        attributes: dict[str, tuple[Token, Literal]] = {}
        for key in sorted(op.attributes):
            if key == "name" or (op.type == "const" and key != "val"):
                continue
            at = self.at(f"{label}: attribute '{key}'")
            attributes[key] = (
                Token("ident", key, at),
                self.literal(op.attributes[key], at),
            )
        if op.type == "const":
            if op.inputs:
                self.fail(
                    op_token.offset,
                    "const takes no inputs; its value is the attribute 'val'",
                )
            literals = {key: literal for key, (_, literal) in attributes.items()}
            self.build_const(scope, results, op_token, {}, literals)
            return
        args: dict[str, tuple[Token, Arg]] = {}
        for key in sorted(op.inputs):
            at = f"{label}: input '{key}'"
            items: list[Ref | Literal] = []
            for binding in op.inputs[key].arguments:
                if binding.WhichOneof("binding") == "name":
                    items.append(Ref(binding.name, self.at(at)))
                else:
                    items.append(self.literal(binding.value, self.at(at)))
            variadic = op.type == "concat" and key == "values"
            arg: Arg = (
                TupleArg(items, self.at(at))
                if variadic or len(items) != 1
                else items[0]
            )
            args[key] = (self.token(key, at), arg)
        self.build_op(scope, results, op_token, self.with_attributes(args, attributes))

    def function(self, name: str, function: MIL_pb2.Function) -> func.FuncOp:
        where = f"{self.file}: @{name}"
        block = function.block_specializations.get(function.opset)
        if block is None:
            raise ProtoImportError(
                f"{where}: function has no block for its opset {function.opset}"
            )
        params = []
        for v in function.inputs:
            at = self.at(f"{where}: input '{v.name}'")
            t = self.input_type(self.value_type(v.type, at), "function inputs", at, at)
            params.append((t, Token("ident", v.name, at)))
        scope = self.new_scope(params)
        for op in block.operations:
            self.operation(scope, op, where)
        outputs = [self.token(o, f"{where}: output '{o}'") for o in block.outputs]
        return self.finish_function(scope, self.token(name, where), outputs)

    def program(
        self, spec: Model_pb2.Model, order: Sequence[str] = ()
    ) -> tuple[builtin.ModuleOp, dict[str, np.ndarray]]:
        if spec.WhichOneof("Type") != "mlProgram":
            raise ProtoImportError(f"{self.file}: not an ML program")
        table = spec.mlProgram.functions
        names = function_order(table, spec.description.defaultFunctionName, order)
        functions = [self.function(name, table[name]) for name in names]
        return self.finish_module(functions)


def function_order(
    names: Iterable[str], default: str, order: Sequence[str] = ()
) -> list[str]:
    """A program's functions in a fixed order: the default function (the
    source's first, which `run` and the runtimes take by default) first,
    then as `order` lists them (the manifest's, the source's order), then
    by name. A protobuf map's own order changes from process to process."""
    rank = {name: i for i, name in enumerate(order)}
    return sorted(names, key=lambda n: (n != default, rank.get(n, len(rank)), n))


def read_proto(
    spec: Model_pb2.Model, model_dir: Path, where: str, order: Sequence[str] = ()
) -> tuple[builtin.ModuleOp, dict[str, np.ndarray]]:
    """The mil module of a model spec and the weights of its blob
    (`@model_path` is `model_dir`), its functions in `function_order`."""
    return ProtoReader(where, model_dir).program(spec, order)


# --- what `xdsl-ane compile` writes ------------------------------------------------


@dataclass
class CompiledProgram:
    """A compiled model read back: its mil module, weights and manifest."""

    module: builtin.ModuleOp
    weights: dict[str, np.ndarray]
    manifest: dict[str, Any] = field(default_factory=dict)
    manifest_path: Path | None = None

    def function_record(self, mil_name: str, index: int) -> dict[str, Any] | None:
        """The manifest record of a function: by its name, or the only one
        (a single-function model's function is `main` in the package)."""
        functions = self.manifest.get("functions", {})
        if mil_name in functions:
            return functions[mil_name]
        if len(functions) == 1 and index == 0:
            return next(iter(functions.values()))
        return None


def read_compiled(path: str | Path) -> CompiledProgram:
    """Reads an `.mlpackage`, a `--emit proto` / `--emit mil-text`
    directory or a `.mil` file, with the manifest written next to it."""
    path = Path(path)
    if path.suffix == ".mil" and path.is_file():
        module, weights = read_mil_file(path)
        return with_manifest(module, weights, path.parent / "manifest.json")
    if (path / "model.mil").is_file():
        module, weights = read_mil_file(path / "model.mil")
        return with_manifest(module, weights, path / "manifest.json")
    if (path / PACKAGE_MODEL).is_file():
        model_file, manifest = (
            path / PACKAGE_MODEL,
            path.with_name(path.stem + ".manifest.json"),
        )
    elif (path / "model.mlmodel").is_file():
        model_file, manifest = path / "model.mlmodel", path / "manifest.json"
    else:
        raise XdslAneError(
            f"{path}: not a compiled model (no {PACKAGE_MODEL}, model.mlmodel or "
            "model.mil in it)"
        )
    spec = Model_pb2.Model()
    try:
        spec.ParseFromString(model_file.read_bytes())
    except Exception as e:  # a truncated or foreign file
        raise XdslAneError(f"{model_file}: not a Core ML model ({e})") from None
    record = read_manifest(manifest)
    order = list(record.get("functions", {})) if isinstance(record, dict) else []
    module, weights = read_proto(spec, model_file.parent, str(path), order)
    return with_manifest(module, weights, manifest, record)


def read_manifest(path: Path) -> Any:
    """The manifest at `path` ({} where there is none)."""
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise XdslAneError(f"{path}: cannot read the manifest: {e}") from None


def with_manifest(
    module: builtin.ModuleOp,
    weights: dict[str, np.ndarray],
    path: Path,
    record: Any = None,
) -> CompiledProgram:
    if not path.is_file():
        return CompiledProgram(module, weights)
    manifest = read_manifest(path) if record is None else record
    return CompiledProgram(module, weights, manifest, path)

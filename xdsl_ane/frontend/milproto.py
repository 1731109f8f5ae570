"""Core ML ML Programs (protobuf) to the mil dialect.

A MIL protobuf and MIL text say the same thing: each op's type, its inputs
bound to value names or to immediate values, its typed outputs, and consts
whose values are immediate or blob references. So a program is read by
writing it as MIL text (`program_text`) and importing that with the MIL text
importer, which checks every op by the mil dialect's typing rules; blob
references keep their `@model_path/...` paths, resolved against the model's
directory.

`read_compiled` reads what `xdsl-ane compile` writes — an `.mlpackage`, a
`--emit proto` or `--emit mil-text` directory, or a `.mil` file — with its
weights and its manifest."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.dialects import builtin

from xdsl_ane.backend.mil_text import mil_literal, mil_string, type_text
from xdsl_ane.backend.proto_values import BYTES_DTYPES, MIL_DATA_TYPES
from xdsl_ane.backend.weights import quiet_coremltools
from xdsl_ane.dialects.dtypes import BY_MIL
from xdsl_ane.errors import XdslAneError
from xdsl_ane.frontend.compiled import PACKAGE_MODEL
from xdsl_ane.frontend.mil_text import parse_mil_text, read_mil_file

with quiet_coremltools():
    from coremltools.proto import MIL_pb2, Model_pb2

DTYPE_NAMES = {number: name for name, number in MIL_DATA_TYPES.items()}
BYTES_NUMPY = {name: BY_MIL[name].numpy for name in BYTES_DTYPES}
"""Immediate values stored as raw little-endian bytes."""


class ProtoImportError(XdslAneError):
    """A protobuf that has no MIL text form (a dynamic shape, a list type)."""


def value_type_text(t: MIL_pb2.ValueType, where: str) -> tuple[str, tuple[int, ...]]:
    """The MIL text type of a tensor value type (or of a state of one:
    `state<tensor<...>>`), and its shape."""
    if t.WhichOneof("type") == "stateType":
        wrapped, shape = value_type_text(t.stateType.wrappedType, where)
        return f"state<{wrapped}>", shape
    if t.WhichOneof("type") != "tensorType":
        raise ProtoImportError(f"{where}: only tensor values are supported")
    tensor = t.tensorType
    dtype = DTYPE_NAMES.get(tensor.dataType)
    if dtype is None:
        name = MIL_pb2.DataType.Name(tensor.dataType)
        raise ProtoImportError(f"{where}: dtype {name} is not supported")
    shape = []
    for d in tensor.dimensions:
        if d.WhichOneof("dimension") != "constant":
            raise ProtoImportError(f"{where}: dimension {len(shape)} is not static")
        shape.append(d.constant.size)
    return type_text(dtype, tuple(shape)), tuple(shape)


def value_text(value: MIL_pb2.Value, where: str) -> str:
    """A compile-time value as a MIL text literal or BLOBFILE reference."""
    t, shape = value_type_text(value.type, where)
    dtype = DTYPE_NAMES[value.type.tensorType.dataType]
    kind = value.WhichOneof("value")
    if kind == "blobFileValue":
        blob = value.blobFileValue
        return (
            f"{t}(BLOBFILE(path = {mil_string(blob.fileName)}, "
            f"offset = uint64({blob.offset})))"
        )
    if kind != "immediateValue" or value.immediateValue.WhichOneof("value") != "tensor":
        raise ProtoImportError(f"{where}: only tensor values are supported")
    tensor = value.immediateValue.tensor
    field_name = tensor.WhichOneof("value")
    if dtype == "string":
        if shape:
            raise ProtoImportError(f"{where}: string tensors are not supported")
        return mil_string(tensor.strings.values[0])
    if field_name == "bytes":
        data = np.frombuffer(tensor.bytes.values, BYTES_NUMPY[dtype])
    elif field_name == "floats":
        data = np.array(tensor.floats.values, np.float32)
    elif field_name == "ints":
        data = np.array(tensor.ints.values, np.int64)
    elif field_name == "bools":
        data = np.array(tensor.bools.values, np.bool_)
    else:
        raise ProtoImportError(
            f"{where}: values of kind {field_name} are not supported"
        )
    count = int(np.prod(shape)) if shape else 1
    if data.size != count:
        raise ProtoImportError(
            f"{where}: {data.size} values for a value of shape {list(shape)}"
        )
    return mil_literal(data.reshape(shape), dtype)


def operation_text(op: MIL_pb2.Operation, where: str) -> str:
    name = op.attributes["name"].immediateValue.tensor.strings.values[0]
    at = f"{where}: {op.type} '{name}'"
    results = [f"{value_type_text(o.type, at)[0]} {o.name}" for o in op.outputs]
    lhs = results[0] if len(results) == 1 else f"({', '.join(results)})"
    assign = f"{lhs} = " if results else ""  # write_state has no result
    attributes = [f"name = {mil_string(name)}"]
    if op.type == "const":
        attributes.append(f"val = {value_text(op.attributes['val'], at)}")
        return f"        {lhs} = const()[{', '.join(attributes)}];"
    for key in sorted(op.attributes):
        if key != "name":  # compile-time parameters written as attributes
            attributes.append(f"{key} = {value_text(op.attributes[key], at)}")
    inputs = []
    for key in sorted(op.inputs):
        bindings = []
        for binding in op.inputs[key].arguments:
            if binding.WhichOneof("binding") == "name":
                bindings.append(binding.name)
            else:
                bindings.append(value_text(binding.value, f"{at}: input '{key}'"))
        variadic = op.type == "concat" and key == "values"
        inputs.append(
            f"{key} = ({', '.join(bindings)})"
            if variadic or len(bindings) != 1
            else f"{key} = {bindings[0]}"
        )
    return f"        {assign}{op.type}({', '.join(inputs)})[{', '.join(attributes)}];"


def program_text(spec: Model_pb2.Model, where: str) -> str:
    """The ML program of `spec` as MIL text (`program(1.3)`)."""
    if spec.WhichOneof("Type") != "mlProgram":
        raise ProtoImportError(f"{where}: not an ML program")
    lines = ["program(1.3)", "{"]
    for name, function in spec.mlProgram.functions.items():
        block = function.block_specializations.get(function.opset)
        if block is None:
            raise ProtoImportError(
                f"{where}: function '{name}' has no block for its opset {function.opset}"
            )
        opset = f"ios{int(function.opset.removeprefix('CoreML')) + 10}"
        params = ", ".join(
            f"{value_type_text(v.type, f'{where}: @{name}')[0]} {v.name}"
            for v in function.inputs
        )
        lines.append(f"    func {name}<{opset}>({params}) {{")
        lines += [operation_text(op, f"{where}: @{name}") for op in block.operations]
        lines.append(f"    }} -> ({', '.join(block.outputs)});")
    lines.append("}")
    return "\n".join(lines) + "\n"


def read_proto(
    spec: Model_pb2.Model, model_dir: Path, where: str
) -> tuple[builtin.ModuleOp, dict[str, np.ndarray]]:
    """The mil module of a model spec and the weights of its blob
    (`@model_path` is `model_dir`)."""
    text = program_text(spec, where)
    return parse_mil_text(text, where, model_dir)


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
    module, weights = read_proto(spec, model_file.parent, str(path))
    return with_manifest(module, weights, manifest)


def with_manifest(
    module: builtin.ModuleOp, weights: dict[str, np.ndarray], path: Path
) -> CompiledProgram:
    if not path.is_file():
        return CompiledProgram(module, weights)
    try:
        manifest = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise XdslAneError(f"{path}: cannot read the manifest: {e}") from None
    return CompiledProgram(module, weights, manifest, path)

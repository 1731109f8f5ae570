"""Checking an emitted ML Program on Linux, with coremltools as the judge.

`validate(spec, weights_dir)` runs, in order:

1. Structure, which coremltools' loader does not check: the spec version
   against each function's opset and block specialization, `Program.version`
   1, every op named, no value name defined twice in a function, each const's
   declared type equal to its value's type, the model description against
   each function's signature (names, order, multiarray dtypes and shapes;
   the default function of a multifunction model), and the blob file being
   there when BlobFileValues refer to it.
2. Load: `coremltools.converters.mil.frontend.milproto.load.load` rebuilds
   the program by calling each op's builder, so MIL's type inference and
   input checks run on every op; it raises on a declared type that differs
   from the inferred one, unknown ops or inputs, undefined values, bad blob
   offsets or dtypes. The finding names the op it failed on.
3. What type inference lets through: a softmax axis out of range.
4. Re-export: the loaded program through coremltools' own exporter
   (`mil_convert(..., convert_from="milinternal", pass_pipeline=EMPTY)`)
   must give the same `mlProgram` (its `buildInfo` aside) and description
   (its `metadata` aside). Blob values are compared by type and content, not
   offset, so blob records that we share and coremltools writes twice are no
   difference. Any input we leave out that MIL has a default for, or a value
   written in another dtype or form, shows up here.

Each problem is a `Finding`; `ValidationReport.ok` is true without any.
"""

from __future__ import annotations

import contextlib
import io
import re
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from google.protobuf.message import Message

from xdsl_ane.backend.mlpackage import discard_temporary_package
from xdsl_ane.backend.proto_values import ARRAY_DATA_TYPES, MIL_DATA_TYPES
from xdsl_ane.backend.state_proto import number_state_updates
from xdsl_ane.backend.weights import (
    BLOB_NUMPY_DTYPES,
    WEIGHT_FILE,
    BlobFile,
    quiet_coremltools,
)
from xdsl_ane.errors import XdslAneError, first_line

with quiet_coremltools():
    from coremltools.proto import FeatureTypes_pb2, MIL_pb2, Model_pb2

OPSETS = {7: "CoreML6", 8: "CoreML7", 9: "CoreML8", 10: "CoreML9"}
ARRAY_TYPE_OF_MIL = {MIL_DATA_TYPES[m]: a for m, a in ARRAY_DATA_TYPES.items()}
BLOB_DTYPE_OF_MIL = {MIL_DATA_TYPES[name]: name for name in BLOB_NUMPY_DTYPES}
MAX_DIFFERENCES = 20


@dataclass(frozen=True)
class Finding:
    """One problem: which check found it, where, and what."""

    check: str
    where: str
    message: str

    def __str__(self) -> str:
        return f"[{self.check}] {self.where}: {self.message}"


@dataclass
class ValidationReport:
    findings: list[Finding] = field(default_factory=list)
    program: Any = None
    """The program coremltools' loader rebuilt (None if it failed)."""

    @property
    def ok(self) -> bool:
        return not self.findings

    def add(self, check: str, where: str, message: str) -> None:
        self.findings.append(Finding(check, short_path(where), message))

    def __str__(self) -> str:
        if self.ok:
            return "valid: no findings"
        return "\n".join(str(f) for f in self.findings)

    def raise_if_failed(self) -> None:
        if not self.ok:
            raise XdslAneError(f"invalid ML program: {self.findings[0]}")


def validate(
    spec: Model_pb2.Model, weights_dir: str | Path | None, *, reexport: bool = True
) -> ValidationReport:
    """Checks `spec` (an ML Program) whose BlobFileValues refer to
    `weights_dir/weight.bin`; see the module docstring for the checks."""
    report = ValidationReport()
    weights_dir = Path(weights_dir) if weights_dir is not None else None
    if spec.WhichOneof("Type") != "mlProgram":
        report.add("structure", "model", "not an ML program")
        return report
    check_structure(spec, weights_dir, report)
    program = load_program(spec, weights_dir, report)
    if program is None:
        return report
    report.program = program
    check_semantics(program, report)
    if reexport:
        compare_reexport(spec, program, weights_dir, report)
    return report


def short_path(path: str) -> str:
    """`program.functions['f'].block_specializations['CoreML8'].operations[3]`
    as `@f ops[3]`."""
    path = re.sub(
        r"program\.functions\['([^']*)'\]\.block_specializations\['[^']*'\]\.operations",
        r"@\1 ops",
        path,
    )
    return re.sub(r"program\.functions\['([^']*)'\]", r"@\1", path)


# --- 1. structure ----------------------------------------------------------------


def op_name(op: MIL_pb2.Operation) -> str | None:
    value = op.attributes.get("name")
    if value is None or not value.immediateValue.tensor.strings.values:
        return None
    return value.immediateValue.tensor.strings.values[0]


def describe_op(op: MIL_pb2.Operation) -> str:
    return f"{op.type} '{op_name(op)}'"


def check_structure(
    spec: Model_pb2.Model, weights_dir: Path | None, report: ValidationReport
) -> None:
    program = spec.mlProgram
    if program.version != 1:
        report.add("structure", "program", f"version {program.version}, expected 1")
    opset = OPSETS.get(spec.specificationVersion)
    uses_blob = False
    for fname, function in program.functions.items():
        where = f"@{fname}"
        if opset is not None and function.opset != opset:
            report.add(
                "structure",
                where,
                f"opset '{function.opset}' does not go with specification version "
                f"{spec.specificationVersion} ('{opset}')",
            )
        if list(function.block_specializations) != [function.opset]:
            report.add(
                "structure",
                where,
                f"block specializations {list(function.block_specializations)}, "
                f"expected exactly ['{function.opset}']",
            )
        block = function.block_specializations.get(function.opset)
        if block is None:
            continue
        defined = [v.name for v in function.inputs]
        for v in function.inputs:
            if v.type.WhichOneof("type") == "tensorType" and not v.type.tensorType.rank:
                report.add(
                    "structure",
                    f"{where} input '{v.name}'",
                    "has rank 0; coremltools' loader takes tensor inputs of rank >= 1",
                )
        for op in block.operations:
            name = op_name(op)
            if name is None:
                report.add("structure", where, f"{op.type} op without a name attribute")
            defined.extend(o.name for o in op.outputs)
            if op.type == "const":
                val = op.attributes.get("val")
                if val is not None and op.outputs and val.type != op.outputs[0].type:
                    report.add(
                        "structure",
                        f"{where} {describe_op(op)}",
                        "declared type differs from its value's type",
                    )
            uses_blob |= any(
                v.WhichOneof("value") == "blobFileValue" for v in op.attributes.values()
            )
        for name, count in Counter(defined).items():
            if count > 1:
                report.add(
                    "names", where, f"value name '{name}' is defined {count} times"
                )
    if uses_blob and (weights_dir is None or not (weights_dir / WEIGHT_FILE).is_file()):
        report.add(
            "structure",
            "weights",
            f"BlobFileValues refer to {WEIGHT_FILE}, which is not in {weights_dir}",
        )
    check_description(spec, report)


def check_description(spec: Model_pb2.Model, report: ValidationReport) -> None:
    description = spec.description
    functions = spec.mlProgram.functions
    if description.functions:
        described = {d.name: d for d in description.functions}
        if set(described) != set(functions):
            report.add(
                "description",
                "model",
                f"describes functions {sorted(described)}, the program has "
                f"{sorted(functions)}",
            )
        if description.defaultFunctionName not in functions:
            report.add(
                "description",
                "model",
                f"default function '{description.defaultFunctionName}' is not in the "
                "program",
            )
        pairs = [
            (n, d.input, d.output, d.state)
            for n, d in described.items()
            if n in functions
        ]
    else:
        if "main" not in functions:
            report.add("description", "model", "single-function model without 'main'")
            return
        pairs = [("main", description.input, description.output, description.state)]
    for name, inputs, outputs, states in pairs:
        check_function_description(
            name, functions[name], inputs, outputs, report, states
        )


def check_function_description(
    name: str,
    function: MIL_pb2.Function,
    inputs: Any,
    outputs: Any,
    report: ValidationReport,
    states: Any = (),
) -> None:
    """The description's inputs, states (the state-typed inputs, described
    apart) and outputs against the function's signature."""
    block = function.block_specializations.get(function.opset)
    types = {v.name: v.type for v in function.inputs}
    if block is not None:
        for op in block.operations:
            types.update((o.name, o.type) for o in op.outputs)
    expected_inputs = [
        (v.name, v.type)
        for v in function.inputs
        if v.type.WhichOneof("type") != "stateType"
    ]
    expected_states = [
        (v.name, v.type)
        for v in function.inputs
        if v.type.WhichOneof("type") == "stateType"
    ]
    expected_outputs = [(n, types.get(n)) for n in (block.outputs if block else [])]
    # Core ML's feature names are unique: no output is named like an input
    # or like another output.
    seen = {n for n, _ in expected_inputs + expected_states}
    for value_name, _ in expected_outputs:
        if value_name in seen:
            report.add(
                "description",
                f"@{name} outputs",
                f"'{value_name}' is returned twice or is also an input (feature "
                "names must be unique)",
            )
        seen.add(value_name)
    for kind, features, expected in (
        ("input", inputs, expected_inputs),
        ("state", states, expected_states),
        ("output", outputs, expected_outputs),
    ):
        where = f"@{name} {kind}s"
        names = [f.name for f in features]
        if names != [n for n, _ in expected]:
            report.add(
                "description",
                where,
                f"described as {names}, the function has {[n for n, _ in expected]}",
            )
            continue
        for feature, (value_name, t) in zip(features, expected):
            problem = feature_mismatch(feature, t, kind)
            if problem:
                report.add("description", f"{where} '{value_name}'", problem)


def feature_mismatch(
    feature: Model_pb2.FeatureDescription, t: MIL_pb2.ValueType | None, kind: str
) -> str | None:
    if kind == "state":
        if t is None or t.WhichOneof("type") != "stateType":
            return "the function's input is not a state"
        if feature.type.WhichOneof("Type") != "stateType":
            return f"described as {feature.type.WhichOneof('Type')}, not a state"
        t, array = t.stateType.wrappedType, feature.type.stateType.arrayType
    elif feature.type.WhichOneof("Type") != "multiArrayType":
        return f"described as {feature.type.WhichOneof('Type')}, not a multiarray"
    else:
        array = feature.type.multiArrayType
    if t is None or t.WhichOneof("type") != "tensorType":
        return "the function's value is not a tensor"
    tensor = t.tensorType
    expected_type = ARRAY_TYPE_OF_MIL.get(tensor.dataType)
    if array.dataType != expected_type:
        return (
            f"described as {FeatureTypes_pb2.ArrayFeatureType.ArrayDataType.Name(array.dataType)}, "
            f"the function's type is {MIL_pb2.DataType.Name(tensor.dataType)}"
        )
    shape = [d.constant.size for d in tensor.dimensions]
    if not shape:
        shape = [1] if kind == "input" else []
    if list(array.shape) != shape:
        return f"described with shape {list(array.shape)}, the function's is {shape}"
    return None


# --- 2. load ---------------------------------------------------------------------


def load_program(
    spec: Model_pb2.Model, weights_dir: Path | None, report: ValidationReport
) -> Any:
    """coremltools' pymil program of `spec`, or None (with a finding)."""
    with quiet_coremltools():
        from coremltools.converters.mil import Builder
        from coremltools.converters.mil.frontend.milproto.load import load

        # The loader names the ops it creates (a write_state pair becomes
        # `coreml_update_state_{n}`) from the builder's process-wide counters;
        # start them afresh, as coremltools' own conversions end, so that the
        # names do not depend on what was built before in this process.
        Builder.name_count.clear()
        try:
            return load(
                spec,
                specification_version=spec.specificationVersion,
                file_weights_dir=str(weights_dir or ""),
            )
        except Exception as e:
            report.add("load", failing_op(e), first_line(e, typed=True))
            return None


def failing_op(e: BaseException) -> str:
    """The op (and function) coremltools' loader was reading when it raised,
    from its frames."""
    function = op = None
    for frame, _ in traceback.walk_tb(e.__traceback__):
        name = frame.f_code.co_name
        if name == "load_mil_proto" and "func_name" in frame.f_locals:
            function = frame.f_locals["func_name"]
        elif name == "_load_operation" and "op_spec" in frame.f_locals:
            op = frame.f_locals["op_spec"]
    where = f"@{function}" if function else "program"
    if isinstance(op, MIL_pb2.Operation):
        where += f" {describe_op(op)}"
    return where


# --- 3. semantics ----------------------------------------------------------------


def check_semantics(program: Any, report: ValidationReport) -> None:
    for fname, function in program.functions.items():
        for op in function.operations:
            if op.op_type == "softmax":
                rank = op.x.rank
                axis = int(op.axis.val)
                if not -rank <= axis < rank:
                    report.add(
                        "semantics",
                        f"@{fname} softmax '{op.name}'",
                        f"axis {axis} is out of range for rank {rank}",
                    )


# --- 4. re-export ----------------------------------------------------------------


def reexport(spec: Model_pb2.Model, program: Any) -> Any:
    """The loaded program exported again by coremltools (an MLModel whose
    package holds the spec and weights)."""
    with quiet_coremltools():
        import coremltools as ct
        from coremltools.converters.mil.converter import mil_convert

        if spec.description.functions:
            program.default_function_name = spec.description.defaultFunctionName
            program.export_as_multifunction = True
        # coremltools reports its pass pipelines with progress bars on stderr
        with contextlib.redirect_stderr(io.StringIO()):
            return mil_convert(
                program,
                convert_from="milinternal",
                convert_to="mlprogram",
                compute_units=ct.ComputeUnit.ALL,
                pass_pipeline=ct.PassPipeline.EMPTY,
                skip_model_load=True,
                specification_version=spec.specificationVersion,
            )


def compare_reexport(
    spec: Model_pb2.Model,
    program: Any,
    weights_dir: Path | None,
    report: ValidationReport,
) -> None:
    try:
        model = reexport(spec, program)
    except Exception as e:
        report.add("reexport", "program", first_line(e, typed=True))
        return
    try:
        compare_models(spec, model, weights_dir, report)
    finally:
        discard_temporary_package(model)


def compare_models(
    spec: Model_pb2.Model,
    model: Any,
    weights_dir: Path | None,
    report: ValidationReport,
) -> None:
    """Our spec against coremltools' re-exported model."""
    theirs = model.get_spec()
    ours_blob = _blob_file(weights_dir)
    theirs_blob = _blob_file(Path(model.weights_dir) if model.weights_dir else None)
    differences = ProtoDiff(ours_blob, theirs_blob)
    # The loader names each state update `coreml_update_state_{n}`, n
    # counting through the functions in the order it iterates the function
    # map, which protobuf does not fix (a copied or re-read spec may iterate
    # differently): both sides are numbered again, functions by name.
    ours_program, theirs_program = MIL_pb2.Program(), MIL_pb2.Program()
    ours_program.CopyFrom(spec.mlProgram)
    theirs_program.CopyFrom(theirs.mlProgram)
    for program in (ours_program, theirs_program):
        number_state_updates(program, sorted(program.functions))
    differences.compare(ours_program, theirs_program, "program")
    ours_description = Model_pb2.ModelDescription()
    ours_description.CopyFrom(spec.description)
    theirs_description = Model_pb2.ModelDescription()
    theirs_description.CopyFrom(theirs.description)
    for description in (ours_description, theirs_description):
        description.ClearField("metadata")
        # the loader reads the program's function map in protobuf's order,
        # not ours, so compare function descriptions by name
        functions = sorted(description.functions, key=lambda d: d.name)
        description.ClearField("functions")
        description.functions.extend(functions)
    differences.compare(ours_description, theirs_description, "description")
    for where, message in differences.found[:MAX_DIFFERENCES]:
        report.add("reexport", where, message)
    if len(differences.found) > MAX_DIFFERENCES:
        report.add(
            "reexport",
            "program",
            f"... and {len(differences.found) - MAX_DIFFERENCES} more differences",
        )


def _blob_file(weights_dir: Path | None) -> BlobFile | None:
    if weights_dir is None or not (weights_dir / WEIGHT_FILE).is_file():
        return None
    return BlobFile(weights_dir / WEIGHT_FILE)


class ProtoDiff:
    """Differences between two protobuf messages, ours first, by path.
    MIL values in the blob compare by type and content."""

    def __init__(self, ours_blob: BlobFile | None, theirs_blob: BlobFile | None):
        self.blobs = (ours_blob, theirs_blob)
        self.found: list[tuple[str, str]] = []

    def compare(self, ours: Message, theirs: Message, path: str) -> None:
        if isinstance(ours, MIL_pb2.Value) and (
            ours.WhichOneof("value") == "blobFileValue"
            or theirs.WhichOneof("value") == "blobFileValue"
        ):
            self.compare_blob_values(ours, theirs, path)
            return
        for field_descriptor in ours.DESCRIPTOR.fields:
            name = field_descriptor.name
            a, b = getattr(ours, name), getattr(theirs, name)
            if _is_map(field_descriptor):
                self.compare_maps(field_descriptor, a, b, f"{path}.{name}")
            elif field_descriptor.is_repeated:
                self.compare_lists(field_descriptor, a, b, f"{path}.{name}")
            elif field_descriptor.message_type is not None:
                has_a, has_b = ours.HasField(name), theirs.HasField(name)
                if has_a != has_b:
                    self.differ(
                        f"{path}.{name}",
                        "set" if has_a else "unset",
                        "set" if has_b else "unset",
                    )
                elif has_a:
                    self.compare(a, b, f"{path}.{name}")
            elif a != b:
                self.differ(f"{path}.{name}", a, b)

    def compare_maps(self, descriptor: Any, a: Any, b: Any, path: str) -> None:
        if path.endswith("program.attributes"):
            a = {k: v for k, v in a.items() if k != "buildInfo"}
            b = {k: v for k, v in b.items() if k != "buildInfo"}
        for key in sorted(set(a) | set(b)):
            where = f"{path}[{key!r}]"
            if key not in b:
                self.found.append((where, "only in ours"))
            elif key not in a:
                self.found.append((where, "only in coremltools' re-export"))
            elif (
                descriptor.message_type.fields_by_name["value"].message_type is not None
            ):
                self.compare(a[key], b[key], where)
            elif a[key] != b[key]:
                self.differ(where, a[key], b[key])

    def compare_lists(self, descriptor: Any, a: Any, b: Any, path: str) -> None:
        if descriptor.message_type is None:
            if list(a) != list(b):
                self.differ(path, list(a)[:8], list(b)[:8])
            return
        if len(a) != len(b):
            self.differ(f"{path} length", len(a), len(b))
        for i, (x, y) in enumerate(zip(a, b)):
            label = f"{path}[{i}]"
            if isinstance(x, MIL_pb2.Operation):
                label = f"{path}[{i}] {describe_op(x)}"
                if x.type != y.type or op_name(x) != op_name(y):
                    self.found.append(
                        (label, f"coremltools' re-export has {describe_op(y)} here")
                    )
                    return  # the rest would only repeat the shift
            self.compare(x, y, label)

    def compare_blob_values(
        self, ours: MIL_pb2.Value, theirs: MIL_pb2.Value, path: str
    ) -> None:
        if ours.type != theirs.type:
            self.found.append((f"{path}.type", "types differ"))
            return
        kinds = (ours.WhichOneof("value"), theirs.WhichOneof("value"))
        if kinds[0] != kinds[1]:
            self.differ(path, kinds[0], kinds[1])
            return
        a, b = self.blob_data(ours, 0), self.blob_data(theirs, 1)
        if a is None or b is None:
            self.found.append((path, "blob data cannot be read"))
        elif a.dtype != b.dtype or a.shape != b.shape or a.tobytes() != b.tobytes():
            self.found.append((path, "blob data differs"))

    def blob_data(self, value: MIL_pb2.Value, side: int) -> np.ndarray | None:
        blob = self.blobs[side]
        dtype = BLOB_DTYPE_OF_MIL.get(value.type.tensorType.dataType)
        if blob is None or dtype is None:
            return None
        shape = [d.constant.size for d in value.type.tensorType.dimensions]
        try:
            return blob.read(value.blobFileValue.offset, dtype, shape)
        except Exception:
            return None

    def differ(self, path: str, ours: object, theirs: object) -> None:
        self.found.append((path, f"ours {ours!r}, coremltools' re-export {theirs!r}"))


def _is_map(descriptor: Any) -> bool:
    return (
        descriptor.is_repeated
        and descriptor.message_type is not None
        and descriptor.message_type.GetOptions().map_entry
    )

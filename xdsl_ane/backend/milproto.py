"""MIL protobuf: mil functions as a Core ML ML Program, built with
coremltools' own generated classes (`Model_pb2`, `MIL_pb2`), plus its weight
blob.

The aim is the protobuf coremltools itself writes for the same program
(`coremltools/converters/mil/backend/mil/load.py`), so that its milproto
loader reads it back and re-exports it unchanged (`validate.py` checks this):

- `Model.specificationVersion` and the function opset go together: iOS18 is
  9 / "CoreML8" (the default), iOS17 8 / "CoreML7"; `Program.version` is 1.
  One function gives a model whose function is `main`; several give a
  multifunction model (iOS18 on) whose default function is the first.
- Every op has `attributes["name"]`, its result's name (a multi-result op
  is named once and its results `NAME_0`, `NAME_1`, ...). Names come from
  xDSL name hints (a weight const without one is named after its weight),
  else `{op type}_{n}` as coremltools' builder names ops; they are made
  MIL identifiers by coremltools' sanitizer rules, and unique (`x`, `x_1`).
  Function inputs without a hint are `arg0`, `arg1`, ... Outputs are named
  after the function's results (`ane.result_names`; `names.py`): the value
  returned takes the output's name, as coremltools renames an output's var.
- Inputs are `Argument`s of name `Binding`s. Compile-time parameters, and
  every optional input MIL has a default for, are const ops named
  `{op}_{input}_0` just before the op, in MIL's input order
  (`mil_inputs.py` writes them as each op class declares them).
- A const of at least 10 elements of a blob dtype (fp16, fp32, int8; int32
  too from iOS18) is a `BlobFileValue` (`@model_path/weights/weight.bin`,
  offset of its metadata record); a smaller one is inline: fp16 and int8 as
  little-endian `bytes`, fp32 as `floats`, int32 as `ints`, bool as `bools`,
  strings as `strings`. `constexpr_affine_dequantize` carries its inputs as
  attributes (an iOS16 op), the iOS18 `constexpr_blockwise_shift_scale` and
  `constexpr_lut_to_dense` as input bindings holding the values (sub-byte
  data packed: in the blob with coremltools' int4/uint4/uint6 writers, inline
  as bytes); consts feeding only constexpr ops are not written, as
  coremltools does.
- Model inputs and outputs whose dtype has no Core ML multiarray type (bool,
  int8) are declared fp32 (int32 for integers) and cast, as coremltools'
  `adjust_io_to_supported_types` does for `main`: `cast` ops to the real
  dtype before the first op, and from it at the end, the output keeping its
  name and the value before the cast becoming `NAME__pre__output__fp32__cast`.
  (coremltools does this for `main` only; here every function of a
  multifunction model gets it, as each is described by multiarrays.)
- An unused function input gets an `identity` op `{input}_tmp`, as
  coremltools' `handle_unused_inputs` pass adds.
- The model description lists each function's inputs and outputs as
  multiarrays (FLOAT16, FLOAT32 or INT32) of the signature's shapes.

Without weights (the `mil-proto-text` target, as `xdsl-opt` has none) weight
consts are `BlobFileValue`s with the offsets the blob will give them; a weight
const too small for the blob is then a typed value without data whose
`docString` names the weight.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, ClassVar

import numpy as np
from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.utils.exceptions import DiagnosticException
from xdsl.utils.target import Target

from xdsl_ane.backend.mil_inputs import ParamValue, mil_inputs, mil_type
from xdsl_ane.backend.names import NameTable
from xdsl_ane.backend.proto_values import (
    argument,
    blob_file_value,
    const_operation,
    feature,
    immediate_value,
    mil_dtype,
    model_io_dtype,
    name_attribute,
    tensor_dtype,
    tensor_value_type,
    value_type,
)
from xdsl_ane.backend.state_proto import (
    number_state_updates,
    state_input,
    update_state_operations,
)
from xdsl_ane.backend.targets import (
    MULTIFUNCTION_VERSION,
    Deployment,
    deployment_target,
)
from xdsl_ane.backend.weights import (
    Fp16Prefetch,
    WeightBlob,
    const_value,
    goes_to_blob,
    quiet_coremltools,
    value_key,
    weight_key,
    weight_store,
)
from xdsl_ane.dialects import mil
from xdsl_ane.errors import XdslAneError
from xdsl_ane.weights.store import WeightStore

with quiet_coremltools():
    from coremltools.proto import MIL_pb2, Model_pb2

if TYPE_CHECKING:
    from xdsl_ane.backend.validate import ValidationReport


# --- the program -----------------------------------------------------------------


@dataclass
class FunctionProto:
    """One function's MIL and the description of its inputs and outputs."""

    function: MIL_pb2.Function
    inputs: list[Model_pb2.FeatureDescription]
    outputs: list[Model_pb2.FeatureDescription]
    states: list[Model_pb2.FeatureDescription] = field(default_factory=list)
    """State inputs (`state_proto.py`), described apart from the inputs."""


class FunctionWriter:
    """Writes one func.func of mil ops as a MIL function."""

    def __init__(
        self,
        function: func.FuncOp,
        deployment: Deployment,
        store: WeightStore | None,
        blob: WeightBlob,
        prefetch: Fp16Prefetch | None = None,
    ):
        self.function = function
        self.symbol = f"@{function.sym_name.data}"
        self.deployment = deployment
        self.store = store
        self.blob = blob
        self.prefetch = prefetch
        self.names = NameTable()
        self.value_names: dict[SSAValue, str] = {}
        self.const_values: dict[mil.ConstOp, MIL_pb2.Value] = {}
        self.operations: list[MIL_pb2.Operation] = []
        self.output_casts: dict[SSAValue, str] = {}
        """Results of a dtype Core ML outputs cannot have -> the dtype they
        are cast to."""
        self.public_names: dict[SSAValue, str] = {}
        """Such results -> the output name their cast takes."""
        self.input_names: dict[SSAValue, str] = {}
        """Arguments -> their declared input names."""

    def write(self) -> FunctionProto:
        if len(self.function.body.blocks) != 1:
            raise XdslAneError(
                f"{self.symbol}: a MIL function has exactly one block (declarations "
                "and multi-block functions cannot be printed)"
            )
        block = self.function.body.block
        inputs = []
        input_features = []
        input_casts: list[tuple[SSAValue, str]] = []
        state_features = []
        input_names, output_names = self.names.claim_boundary(self.function)
        for arg, name in zip(block.args, input_names):
            self.value_names[arg] = name
            self.input_names[arg] = name
            if isinstance(arg.type, mil.StateType):
                state, state_feature = state_input(name, arg.type, self.symbol)
                inputs.append(state)
                state_features.append(state_feature)
                continue
            dtype = tensor_dtype(arg.type)
            assert isinstance(arg.type, TensorType)
            shape = arg.type.get_shape()
            io_dtype = model_io_dtype(dtype)
            if io_dtype != dtype:
                input_casts.append((arg, dtype))
            inputs.append(
                MIL_pb2.NamedValueType(name=name, type=value_type(shape, io_dtype))
            )
            input_features.append(feature(name, shape or (1,), io_dtype))
        self.write_input_casts(input_casts)
        returned = block.last_op
        if not isinstance(returned, func.ReturnOp):
            raise XdslAneError(
                f"{self.symbol}: the function does not end in func.return"
            )
        results = list(returned.arguments)
        for value in results:
            tensor_dtype(value.type)
        self.output_casts = {
            v: model_io_dtype(tensor_dtype(v.type))
            for v in results
            if model_io_dtype(tensor_dtype(v.type)) != tensor_dtype(v.type)
        }
        for op in block.ops:
            if isinstance(op, func.ReturnOp):
                continue
            if isinstance(op, mil.ConstOp):
                self.write_const(op)
            elif isinstance(op, mil.MilOp):
                self.deployment.check_available(op, self.symbol)
                if isinstance(op, mil.CoremlUpdateStateOp):
                    self.write_update_state(op)
                elif isinstance(op, mil.ReadStateOp) and self.reads_last_store(op):
                    pass
                elif mil_type(op).startswith("constexpr_"):
                    self.write_constexpr(op)
                else:
                    self.write_op(op)
            else:
                raise XdslAneError(
                    f"{self.symbol}: {op.name} is not a mil op and has no MIL "
                    "protobuf (lower it to the mil dialect first)"
                )
        output_features = []
        first: dict[SSAValue, str] = {}
        for value, name in zip(results, output_names):
            assert isinstance(value.type, TensorType)
            dtype = self.output_casts.get(value, tensor_dtype(value.type))
            t = value_type(value.type.get_shape(), dtype)
            if value in first:  # returned again: a copy of the first output
                self.write_copy(first[value], t, name)
            elif value in self.output_casts:
                self.write_output_cast(value, name)
            elif self.value_names[value] != name:  # an argument, a folded read
                self.write_copy(self.value_names[value], t, name)
            first.setdefault(value, name)
            output_features.append(feature(name, value.type.get_shape() or None, dtype))
        for arg in block.args:
            if not arg.uses and not isinstance(arg.type, mil.StateType):
                self.write_identity(arg)
        mil_block = MIL_pb2.Block(outputs=output_names, operations=self.operations)
        proto = MIL_pb2.Function(inputs=inputs, opset=self.deployment.opset)
        proto.block_specializations[self.deployment.opset].CopyFrom(mil_block)
        return FunctionProto(proto, input_features, output_features, state_features)

    def public_names_of_values(self) -> dict[SSAValue, str]:
        """Each SSA value's MIL name (an output cast's name for a cast
        output, the declared input for a cast input)."""
        names = dict(self.value_names)
        names.update(self.public_names)
        for arg in self.function.body.block.args:
            names[arg] = self.input_names[arg]
        return names

    # -- model inputs and outputs of types Core ML has no multiarray for

    def write_input_casts(self, casts: Sequence[tuple[SSAValue, str]]) -> None:
        """coremltools' `adjust_io_to_supported_types`: an input of another
        dtype is declared fp32 (int32 for integers) and cast back to its
        dtype before the first op; each cast goes in front of the previous
        one, so they end up in reverse order."""
        written: list[list[MIL_pb2.Operation]] = []
        for arg, dtype in casts:
            assert isinstance(arg.type, TensorType)
            source = self.value_names[arg]
            ops, name = self.cast_operations(source, arg.type.get_shape(), dtype)
            self.value_names[arg] = name
            written.append(ops)
        for ops in reversed(written):
            self.operations.extend(ops)

    def write_output_cast(self, value: SSAValue, name: str) -> None:
        """An output of another dtype is cast to fp32 (int32 for integers)
        at the end; the cast's result is the output `name` and the value
        before it `{name}__pre__output__{dtype}__cast`."""
        assert isinstance(value.type, TensorType)
        ops, _ = self.cast_operations(
            self.value_names[value],
            value.type.get_shape(),
            self.output_casts[value],
            name,
        )
        self.operations.extend(ops)

    def cast_operations(
        self,
        source: str,
        shape: Sequence[int],
        dtype: str,
        result: str | None = None,
    ) -> tuple[list[MIL_pb2.Operation], str]:
        """`cast(x=source, dtype=...)` named `cast_N` and its dtype const;
        returns the ops and the name of the cast's result."""
        name = self.names.fresh("cast")
        const_name = self.names.fresh(f"{name}_dtype")
        value = immediate_value(dtype)
        cast = MIL_pb2.Operation(type="cast")
        cast.inputs["x"].CopyFrom(argument([source]))
        cast.inputs["dtype"].CopyFrom(argument([const_name]))
        cast.outputs.add(name=result or name, type=value_type(shape, dtype))
        cast.attributes["name"].CopyFrom(name_attribute(name))
        return [const_operation(const_name, value, value.type), cast], result or name

    # -- ops

    def name_results(self, op: Operation) -> str:
        """Names the op's results; returns the op's name."""
        hint = op.results[0].name_hint if op.results else None
        if hint is None and isinstance(op, mil.ConstOp) and op.weight is not None:
            hint = op.weight.data
        op_type = op.name.removeprefix("mil.")
        if len(op.results) == 1 and op.results[0] in self.names.outputs:
            name = self.names.outputs[op.results[0]]  # claimed with the inputs
        elif hint:
            name = self.names.claim(hint)
        else:
            name = self.names.fresh(op_type)
        if len(op.results) == 1:
            result = op.results[0]
            self.value_names[result] = name
            if result in self.output_casts:
                cast = self.output_casts[result]
                self.public_names[result] = name
                self.value_names[result] = self.names.claim(
                    f"{name}__pre__output__{cast}__cast"
                )
        else:
            for i, result in enumerate(op.results):
                self.value_names[result] = self.names.outputs.get(
                    result
                ) or self.names.claim(f"{name}_{i}")
                if result in self.output_casts:
                    self.public_names[result] = self.value_names[result]
                    self.value_names[result] = self.names.claim(
                        f"{self.value_names[result]}__pre__output__"
                        f"{self.output_casts[result]}__cast"
                    )
        return name

    def outputs(self, op: Operation) -> list[MIL_pb2.NamedValueType]:
        return [
            MIL_pb2.NamedValueType(
                name=self.value_names[r], type=tensor_value_type(r.type)
            )
            for r in op.results
        ]

    def write_const(self, op: mil.ConstOp) -> None:
        users = [use.operation for use in op.result.uses]
        if users and all(
            isinstance(u, mil.MilOp) and mil_type(u).startswith("constexpr_")
            for u in users
        ):
            return  # its value goes into the constexpr ops, as coremltools does
        name = self.name_results(op)
        value = self.const_value(op)
        self.operations.append(
            const_operation(name, value, tensor_value_type(op.result.type))
        )

    def const_value(self, op: mil.ConstOp) -> MIL_pb2.Value:
        """The `val` of a const: an immediate value or a blob reference."""
        if op in self.const_values:
            return self.const_values[op]
        t = op.result.type
        assert isinstance(t, TensorType)
        dtype, shape = tensor_dtype(t), t.get_shape()
        # consts written into constexpr ops are not named: use their hint
        label = self.value_names.get(op.result) or op.result.name_hint
        where = f"{self.symbol}: mil.const" + (f" '{label}'" if label else "")
        source = op.weight.data if op.weight is not None else label or "const"
        size = int(np.prod(shape)) if shape else 1
        to_blob = goes_to_blob(dtype, size, self.deployment.specification_version)
        # A weight for the blob is converted only as the blob is written.
        data = const_value(
            op, self.store, where, deferred=to_blob, prefetch=self.prefetch
        )
        if to_blob:
            if op.weight is not None:
                key = weight_key(op)
            else:
                assert data is not None
                key = value_key(data)
            value = blob_file_value(
                self.blob.add(key, dtype, shape, source, data), shape
            )
        elif data is not None:
            value = immediate_value(data, dtype)
        else:
            value = MIL_pb2.Value(
                type=value_type(shape, dtype),
                docString=f"data of weight {source} (printed without weights)",
            )
        self.const_values[op] = value
        return value

    def param_value(self, value: ParamValue, name: str) -> MIL_pb2.Value:
        if isinstance(value, str):
            return immediate_value(value)
        dtype = mil_dtype(value)
        if goes_to_blob(dtype, value.size, self.deployment.specification_version):
            return blob_file_value(
                self.blob.add(value_key(value), dtype, value.shape, name, value)
            )
        return immediate_value(value)

    def write_op(self, op: mil.MilOp) -> None:
        name = self.name_results(op)
        proto = MIL_pb2.Operation(type=mil_type(op))
        for input_name, value in mil_inputs(op):
            if isinstance(value, SSAValue):
                names = [self.value_names[value]]
            elif isinstance(value, list):
                names = [self.value_names[v] for v in value]
            else:
                const_name = self.names.fresh(f"{name}_{input_name}")
                val = self.param_value(value, const_name)
                self.operations.append(const_operation(const_name, val, val.type))
                names = [const_name]
            proto.inputs[input_name].CopyFrom(argument(names))
        proto.outputs.extend(self.outputs(op))
        proto.attributes["name"].CopyFrom(name_attribute(name))
        self.operations.append(proto)

    def write_constexpr(self, op: mil.MilOp) -> None:
        """A constexpr op carries its const inputs' values in the op
        (coremltools' `translate_constexpr`): as attributes in the iOS16
        opset, as input bindings holding the value in iOS18's."""
        name = self.name_results(op)
        proto = MIL_pb2.Operation(type=mil_type(op))
        proto.attributes["name"].CopyFrom(name_attribute(name))
        as_inputs = op.OPSET == "iOS18"
        for input_name, value in mil_inputs(op):
            if isinstance(value, SSAValue):
                source = value.owner
                if not isinstance(source, mil.ConstOp):
                    raise XdslAneError(
                        f"{self.symbol}: {op.name} '{name}': input '{input_name}' must "
                        "come from a mil.const"
                    )
                val = self.const_value(source)
            else:
                assert not isinstance(value, list)
                val = self.param_value(value, f"{name}_{input_name}")
            if as_inputs:
                binding = MIL_pb2.Argument.Binding(value=val)
                proto.inputs[input_name].CopyFrom(MIL_pb2.Argument(arguments=[binding]))
            else:
                proto.attributes[input_name].CopyFrom(val)
        proto.outputs.extend(self.outputs(op))
        self.operations.append(proto)

    def write_update_state(self, op: mil.CoremlUpdateStateOp) -> None:
        """coreml_update_state as write_state (+ read_state for a used
        result), as coremltools writes it."""
        name = self.name_results(op)
        used = op.result if op.result.uses else None
        self.operations.extend(
            update_state_operations(
                name,  # renamed by number_state_updates
                self.value_names[op.state],
                self.value_names[op.value],
                used and self.value_names[op.result],
                used,
            )
        )

    def reads_last_store(self, op: mil.ReadStateOp) -> bool:
        """A read of the state just read back after a store is that value:
        coremltools' loader folds a read_state right after such a pair into
        it, so it is not written (its value is the pair's)."""
        last = self.operations[-1] if self.operations else None
        if (
            last is None
            or last.type != "read_state"
            or len(self.operations) < 2
            or self.operations[-2].type != "write_state"
            or last.inputs["input"].arguments[0].name != self.value_names[op.input]
        ):
            return False
        self.value_names[op.result] = last.outputs[0].name
        return True

    def write_identity(self, arg: SSAValue) -> None:
        """coremltools' `handle_unused_inputs`: `identity(x=arg)` named
        `{arg}_tmp`, so that every input is consumed."""
        source = self.value_names[arg]
        name = self.names.claim(f"{source}_tmp")
        self.write_copy(source, tensor_value_type(arg.type), name)

    def write_copy(self, source: str, t: MIL_pb2.ValueType, name: str) -> None:
        """`identity(x=source)` named `name`."""
        proto = MIL_pb2.Operation(type="identity")
        proto.inputs["x"].CopyFrom(argument([source]))
        proto.outputs.add(name=name, type=t)
        proto.attributes["name"].CopyFrom(name_attribute(name))
        self.operations.append(proto)


# --- models ----------------------------------------------------------------------


@dataclass
class ProtoResult:
    """A Core ML model spec and the weight blob its BlobFileValues refer to."""

    spec: Model_pb2.Model
    blob: WeightBlob
    deployment: Deployment
    function_names: dict[str, str]
    """Each printed func.func's symbol -> its MIL function name."""
    value_names: dict[SSAValue, str] = field(default_factory=dict)
    """The MIL name of each printed SSA value (function arguments and op
    results, across functions)."""

    @property
    def has_weight_data(self) -> bool:
        """False when printed without weights and the blob needs them."""
        return self.blob.has_data

    def text(self) -> str:
        """The spec in protobuf text format (repeated numbers on one line,
        `shape: [1, 64, 1, 256]`; `text_format.Parse` reads it back)."""
        from google.protobuf import text_format

        return text_format.MessageToString(
            self.spec, use_short_repeated_primitives=True
        )

    def write_weights(self, weights_dir: str | Path) -> Path:
        """Writes `weights_dir/weight.bin` with coremltools' blob writer."""
        return self.blob.write_weights_dir(weights_dir)

    def weight_bytes(self) -> bytes:
        """The content of weight.bin."""
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            return self.write_weights(tmp).read_bytes()

    def save(self, path: str | Path, *, force: bool = False) -> Path:
        """Writes the `.mlpackage` at `path` (see `mlpackage.save_mlpackage`)."""
        from xdsl_ane.backend.mlpackage import save_mlpackage

        return save_mlpackage(self, path, force=force)

    def write_proto(self, directory: str | Path, *, force: bool = False) -> Path:
        """Writes `directory/model.mlmodel` (the bare protobuf) and
        `directory/weights/weight.bin` (see `mlpackage.write_proto_dir`)."""
        from xdsl_ane.backend.mlpackage import write_proto_dir

        return write_proto_dir(self, directory, force=force)

    def validate(self, *, reexport: bool = True) -> ValidationReport:
        """Writes the blob to a temporary directory and validates the spec
        against it (see `validate.validate`)."""
        import tempfile

        from xdsl_ane.backend.validate import validate

        with tempfile.TemporaryDirectory() as tmp:
            weights_dir = Path(tmp) / "weights"
            if self.blob.has_data:
                self.write_weights(weights_dir)
            return validate(self.spec, weights_dir, reexport=reexport)


def module_functions(
    module: builtin.ModuleOp, function: str | Sequence[str] | None = None
) -> list[func.FuncOp]:
    """The functions to print: all (module order), one by name, or several."""
    functions = [op for op in module.walk() if isinstance(op, func.FuncOp)]
    if not functions:
        raise XdslAneError("the module has no func.func to print")
    if function is None:
        return functions
    by_name = {f.sym_name.data: f for f in functions}
    wanted = [function] if isinstance(function, str) else list(function)
    for name in wanted:
        if name not in by_name:
            raise XdslAneError(
                f"no function named '{name}' (the module has {', '.join(by_name)})"
            )
    if not wanted:
        raise XdslAneError("no function selected to print")
    return [by_name[name] for name in wanted]


def module_to_proto(
    module: builtin.ModuleOp,
    weights: Mapping[str, np.ndarray] | None = None,
    *,
    target: str = "iOS18",
    function: str | Sequence[str] | None = None,
    blob: WeightBlob | None = None,
    prefetch: Fp16Prefetch | None = None,
) -> ProtoResult:
    """The module's functions (all, or those named by `function`, a name or
    a list) as one Core ML model for deployment `target` ("iOS18" or
    "iOS17"): a single function becomes `main`, several a multifunction
    model whose default function is the first. `weights` maps weight names
    to arrays; without it, weight consts refer to the blob without data.
    The blob is planned into `blob` (a `BlobStream`'s, to write it while
    printing), a new one by default; fp16 weights are written from
    `prefetch`'s copies where it has made them.
    Errors (a weight missing or of the wrong shape or dtype, an op that is
    not a mil op or not in the target's opset) are `XdslAneError`s."""
    deployment = deployment_target(target)
    functions = module_functions(module, function)
    store = weight_store(weights)
    blob = WeightBlob() if blob is None else blob
    if len(functions) == 1:
        mil_names = ["main"]
    else:
        if deployment.specification_version < MULTIFUNCTION_VERSION:
            raise XdslAneError(
                f"a multifunction model ({len(functions)} functions) needs deployment "
                f"target iOS18, not {deployment.name}"
            )
        function_names = NameTable()
        mil_names = [function_names.claim(f.sym_name.data) for f in functions]
    program = MIL_pb2.Program(version=1)
    parts: list[FunctionProto] = []
    value_names: dict[SSAValue, str] = {}
    for f, mil_name in zip(functions, mil_names):
        writer = FunctionWriter(f, deployment, store, blob, prefetch)
        part = writer.write()
        program.functions[mil_name].CopyFrom(part.function)
        parts.append(part)
        value_names.update(writer.public_names_of_values())
    number_state_updates(program)
    if len(functions) == 1:
        description = Model_pb2.ModelDescription(
            input=parts[0].inputs, output=parts[0].outputs, state=parts[0].states
        )
    else:
        description = Model_pb2.ModelDescription(
            functions=[
                Model_pb2.FunctionDescription(
                    name=n, input=p.inputs, output=p.outputs, state=p.states
                )
                for n, p in zip(mil_names, parts)
            ],
            defaultFunctionName=mil_names[0],
        )
    spec = Model_pb2.Model(
        specificationVersion=deployment.specification_version,
        description=description,
        mlProgram=program,
    )
    return ProtoResult(
        spec,
        blob,
        deployment,
        {f.sym_name.data: n for f, n in zip(functions, mil_names)},
        value_names,
    )


def module_to_protos(
    module: builtin.ModuleOp,
    weights: Mapping[str, np.ndarray] | None = None,
    *,
    target: str = "iOS18",
) -> dict[str, ProtoResult]:
    """One single-function model per function of the module, by symbol."""
    return {
        f.sym_name.data: module_to_proto(
            module, weights, target=target, function=f.sym_name.data
        )
        for f in module_functions(module)
    }


@dataclass(frozen=True)
class MilProtoTextTarget(Target):
    """`xdsl-opt -t mil-proto-text[{target=iOS17}]`: the module as a Core ML
    model spec in protobuf text format. `xdsl-opt` has no weights, so weight
    consts are BlobFileValues with the offsets the blob will give them (and
    a weight const too small for the blob a typed value whose docString
    names the weight)."""

    name: ClassVar[str] = "mil-proto-text"

    target: str = "iOS18"

    def emit(self, ctx: Context, module: builtin.ModuleOp, output: IO[str]) -> None:
        try:
            result = module_to_proto(module, None, target=self.target)
        except XdslAneError as e:
            raise DiagnosticException(str(e)) from None
        output.write(result.text())

"""MIL text: the `program(1.3)` form that Apple's compiler reads.

    program(1.3)
    [buildInfo = dict<string, string>({{"coremlc-component-MIL", "3510.2.1"}, ...})]
    {
        func main<ios18>(tensor<fp16, [1, 64, 1, 256]> x) {
            tensor<int32, [4]> y_perm = const()[name = string("y_perm"), val = tensor<int32, [4]>([0, 1, 3, 2])];
            tensor<fp16, [1, 64, 256, 1]> y = transpose(perm = y_perm, x = x)[name = string("y")];
        } -> (y);
    }

Format decisions, following the MIL text that Apple's compiler writes into a
compiled model (and that hand-written ANE kernels copy):

- Each function is `func NAME<ios18>(...)`, statements indented by 8 spaces.
  A statement declares its result types, calls the op with its inputs sorted
  by name and carries `[name = string("...")]`, its (first) result's name.
- An op's inputs are those coremltools writes (`mil_inputs`, shared with the
  protobuf printer): every optional input with a default is explicit, and
  each compile-time value is a const named `RESULT_INPUT` just before the op,
  in MIL's input order (consts standing for absent tensor inputs, such as
  linear's zero bias, first).
- Scalars (rank-0 tensors) are `fp16(...)`, `int32(...)`, `bool(...)`,
  `string("...")` (and `uint32(...)`, pixel_unshuffle's downscale_factor);
  floats are C99 hex floats (`0x1.4p+3`), so fp16 and fp32 values
  round-trip exactly.
- Weight consts live in the weight blob, whatever their size (their data may
  not be at hand when printing); other consts of at least 10 elements of a
  blob dtype do too (coremltools' rule for iOS18). They are written as
  `BLOBFILE(path = string(...), offset = uint64(N))`, the offset pointing at
  the blob's 64-byte metadata record; equal tensors share one record
  (`xdsl_ane.backend.weights` plans and writes the blob).
- Value names come from xDSL name hints (the op type or the weight name when
  there is none), spelled and made unique as the protobuf's are
  (`xdsl_ane.backend.names`): `name`, `name_1`, ... The `_N` suffix is the
  one xDSL strips from name hints, so printing an imported program gives the
  same names again. Outputs are named after the function's results
  (`ane.result_names`), as in the protobuf (`names.claim_boundary`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, ClassVar

import numpy as np
from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import (
    TensorType,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.utils.exceptions import DiagnosticException
from xdsl.utils.target import Target

from xdsl_ane.backend.mil_inputs import ParamValue, mil_inputs
from xdsl_ane.backend.names import NameTable
from xdsl_ane.backend.targets import deployment_target
from xdsl_ane.backend.weights import (
    BLOB_PATH,
    WEIGHTS_DIR,
    BlobEntry,
    WeightBlob,
    const_value,
    goes_to_blob,
    value_key,
    weight_key,
    weight_store,
)
from xdsl_ane.dialects import mil
from xdsl_ane.dialects.dtypes import DTYPES
from xdsl_ane.errors import XdslAneError
from xdsl_ane.outputs import atomic_output


class MilTextError(XdslAneError, DiagnosticException):
    """MIL text that cannot be written or read: one line naming the function
    and op, or `file:line:col: message` for malformed input. (Also a
    DiagnosticException, so `xdsl-opt --verify-diagnostics` prints it.)"""


BUILD_INFO: tuple[tuple[str, str], ...] = (
    ("coremlc-component-MIL", "3510.2.1"),
    ("coremlc-version", "3505.4.1"),
    ("coremltools-component-milinternal", ""),
    ("coremltools-version", "9.0"),
)
"""The buildInfo of the MIL text that coremltools 9.0 and coremlc write."""

INDENT = " " * 8
MODEL_FILE = "model.mil"

NUMPY_TO_MIL: dict[np.dtype, str] = {
    **{d.numpy: d.mil for d in DTYPES if d.computes},
    np.dtype(np.uint32): "uint32",
}
"""The MIL dtype of each numpy dtype of the project's element types, and of
uint32 parameters (pixel_unshuffle's downscale_factor)."""

# --- MIL spellings ---------------------------------------------------------------


def hex_float(value: float) -> str:
    """C99 `%a` spelling: 0x1p+0, 0x1.4p+3, -0x1.ffcp+15, 0x0p+0, inf, nan."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    mantissa, exponent = float(value).hex().split("p")
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}p{exponent}"


def mil_dtype(t: Attribute) -> str:
    if not isinstance(t, TensorType) or (
        t.element_type not in mil.MIL_DTYPES.values()
        and t.element_type not in mil.MIL_STORAGE_DTYPES.values()
    ):
        raise MilTextError(f"MIL text has no type for {t}")
    return mil.mil_dtype_name(t.element_type)


def type_text(dtype: str, shape: tuple[int, ...]) -> str:
    """`tensor<fp16, [1, 64, 1, 256]>`, or `fp16` for a scalar."""
    if not shape:
        return dtype
    return f"tensor<{dtype}, [{', '.join(str(d) for d in shape)}]>"


def mil_type(t: Attribute) -> str:
    """The MIL type of a builtin tensor type (a scalar for rank 0)."""
    dtype = mil_dtype(t)  # (a MilTextError for anything else)
    assert isinstance(t, TensorType)
    return type_text(dtype, t.get_shape())


def mil_element(value: object, dtype: str) -> str:
    if dtype in ("fp16", "fp32"):
        return hex_float(float(value))  # type: ignore[arg-type]
    if dtype == "bool":
        return "true" if value else "false"
    return str(int(value))  # type: ignore[call-overload]


def mil_literal(value: np.ndarray, dtype: str) -> str:
    """`fp16(0x1p-3)` for a rank-0 value, else `tensor<int32, [2]>([1, 2])`
    with the elements in row-major order."""
    if value.ndim == 0:
        return f"{dtype}({mil_element(value.item(), dtype)})"
    elements = ", ".join(mil_element(v, dtype) for v in value.reshape(-1).tolist())
    return f"{type_text(dtype, value.shape)}([{elements}])"


def mil_string(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'string("{escaped}")'


def blobfile(entry: BlobEntry, path: str, shape: Sequence[int] | None = None) -> str:
    """A BLOBFILE reference typed as `shape` (the const's) or the record's."""
    shape = entry.shape if shape is None else shape
    return (
        f"{type_text(entry.dtype, shape)}(BLOBFILE(path = {mil_string(path)}, "
        f"offset = uint64({entry.offset})))"
    )


# --- the printer -----------------------------------------------------------------


class MilTextPrinter:
    """Prints the functions of a module as one MIL program and plans its
    weight blob. With `weights`, blob entries carry their data; without,
    only their offsets."""

    def __init__(
        self,
        weights: Mapping[str, np.ndarray] | None = None,
        blob_path: str = BLOB_PATH,
        target: str = "iOS18",
    ):
        self.deployment = deployment_target(target)
        self.store = weight_store(weights)
        self.blob_path = blob_path
        self.blob = WeightBlob()

    def print_module(self, module: builtin.ModuleOp) -> str:
        functions = []
        for op in module.ops:
            if not isinstance(op, func.FuncOp):
                raise MilTextError(
                    f"MIL text: only func.func ops can be printed at module level, "
                    f"got {op.name}"
                )
            functions.append(op)
        build_info = ", ".join(f'{{"{key}", "{value}"}}' for key, value in BUILD_INFO)
        lines = [
            "program(1.3)",
            f"[buildInfo = dict<string, string>({{{build_info}}})]",
            "{",
        ]
        function_names = NameTable(strip_suffix=True)
        for i, function in enumerate(functions):
            if i:
                lines.append("")
            name = function_names.claim(function.sym_name.data, keep_suffix=True)
            try:
                lines.extend(self.print_function(function, name))
            except MilTextError:
                raise
            except XdslAneError as e:
                raise MilTextError(f"@{function.sym_name.data}: {e}") from None
        lines.append("}")
        return "\n".join(lines) + "\n"

    def print_function(self, function: func.FuncOp, name: str) -> Iterator[str]:
        symbol = f"@{function.sym_name.data}"
        if len(function.body.blocks) != 1:
            raise MilTextError(f"{symbol}: a MIL function has one block of ops")
        block = function.body.block
        names = NameTable(strip_suffix=True)
        params = []
        input_names, outputs = names.claim_boundary(function)
        for arg, arg_name in zip(block.args, input_names):
            if isinstance(arg.type, mil.StateType):  # `state<tensor<...>> name`
                t = f"state<{mil_type(arg.type.wrapped)}>"
            else:
                t = mil_type(arg.type)
            params.append(f"{t} {arg_name}")
        opset = self.deployment.text_opset
        yield f"    func {name}<{opset}>({', '.join(params)}) {{"
        for op in block.ops:
            if isinstance(op, func.ReturnOp):
                first: dict[SSAValue, str] = {}
                for value, output in zip(op.operands, outputs):
                    # A returned argument, or a value returned again, is a copy.
                    source = first.setdefault(value, names[value])
                    if source != output:
                        yield (
                            f"{INDENT}{mil_type(value.type)} {output} = identity("
                            f"x = {source})[name = {mil_string(output)}];"
                        )
                break
            if not isinstance(op, mil.MilOp):
                raise MilTextError(
                    f"{symbol}: {op.name} is not a mil op and has no MIL text "
                    "(lower it to the mil dialect first)"
                )
            try:
                self.deployment.check_available(op, symbol)
            except XdslAneError as e:
                raise MilTextError(str(e)) from None
            if isinstance(op, mil.ConstOp):
                yield self.const_statement(op, names, symbol)
            else:
                yield from self.op_statements(op, names)
        yield f"    }} -> ({', '.join(outputs)});"

    def const_statement(self, op: mil.ConstOp, names: NameTable, symbol: str) -> str:
        t = op.result.type
        assert isinstance(t, TensorType)
        dtype, shape = mil_dtype(t), t.get_shape()
        default = op.weight.data if op.weight is not None else "c"
        name = names.define(op.result, default)
        data = const_value(op, self.store, f"{symbol}: mil.const '{name}'")
        if op.weight is not None and dtype != "bool":
            entry = self.blob.add(weight_key(op), dtype, shape, op.weight.data, data)
            val = blobfile(entry, self.blob_path, shape)
        elif data is None:
            raise MilTextError(
                f"{symbol}: mil.const '{name}': a bool weight is written inline, "
                f"which needs the data of weight '{op.weight.data}'"  # type: ignore[union-attr]
            )
        else:
            val = self.value_text(data, name, dtype)
        return (
            f"{INDENT}{mil_type(t)} {name} = const()"
            f"[name = {mil_string(name)}, val = {val}];"
        )

    def value_text(self, value: ParamValue, name: str, dtype: str | None = None) -> str:
        """A compile-time value: a literal, or a blob reference for a large
        one (coremltools' rule). `dtype` is the MIL dtype where the array's
        is only its holder (uint4 data in uint8)."""
        if isinstance(value, str):
            return mil_string(value)
        dtype = dtype or NUMPY_TO_MIL[value.dtype]
        if goes_to_blob(dtype, value.size, self.deployment.specification_version):
            entry = self.blob.add(value_key(value), dtype, value.shape, name, value)
            return blobfile(entry, self.blob_path)
        return mil_literal(value, dtype)

    def op_statements(self, op: mil.MilOp, names: NameTable) -> Iterator[str]:
        if isinstance(op, mil.CoremlUpdateStateOp):
            yield from self.update_state_statements(op, names)
            return
        op_type = op.name.removeprefix("mil.")
        results = [f"{mil_type(r.type)} {names.define(r, op_type)}" for r in op.results]
        name = names[op.results[0]]
        operands = {n for n, _ in op.get_irdl_definition().operands}
        args: dict[str, str] = {}
        consts: list[tuple[str, ParamValue]] = []
        for input_name, value in mil_inputs(op):
            if isinstance(value, SSAValue):
                args[input_name] = names[value]
            elif isinstance(value, list):
                args[input_name] = f"({', '.join(names[v] for v in value)})"
            else:
                consts.append((input_name, value))
        # absent tensor inputs first: imported, they become ops before the
        # compile-time consts that the printer writes again
        consts.sort(key=lambda item: item[0] not in operands)
        for input_name, value in consts:
            const = names.claim(f"{name}_{input_name}")
            if isinstance(value, str):
                declared = "string"
            else:
                declared = type_text(NUMPY_TO_MIL[value.dtype], value.shape)
            yield (
                f"{INDENT}{declared} {const} = const()"
                f"[name = {mil_string(const)}, val = {self.value_text(value, const)}];"
            )
            args[input_name] = const
        call = ", ".join(f"{k} = {args[k]}" for k in sorted(args))
        yield (
            f"{INDENT}{', '.join(results)} = {op_type}({call})"
            f"[name = {mil_string(name)}];"
        )

    def update_state_statements(
        self, op: mil.CoremlUpdateStateOp, names: NameTable
    ) -> Iterator[str]:
        """As in the protobuf (`state_proto.py`): write_state, then a
        read_state defining the result when it is used."""
        name = names.define(op.result, "coreml_update_state")
        state, value = names[op.state], names[op.value]
        # named after what it stores, which a re-import keeps
        write = mil_string(names.claim(f"{value}_write_state"))
        yield f"{INDENT}write_state(data = {value}, input = {state})[name = {write}];"
        if op.result.uses:
            yield (
                f"{INDENT}{mil_type(op.result.type)} {name} = read_state(input = "
                f"{state})[name = {mil_string(name)}];"
            )


# --- entry points ----------------------------------------------------------------


def print_program(
    module: builtin.ModuleOp,
    weights: Mapping[str, np.ndarray] | None = None,
    blob_path: str = BLOB_PATH,
    target: str = "iOS18",
) -> tuple[str, WeightBlob]:
    """The MIL text of `module` for deployment `target` and the planned
    weight blob."""
    printer = MilTextPrinter(weights, blob_path, target)
    return printer.print_module(module), printer.blob


def module_to_mil_text(
    module: builtin.ModuleOp,
    weights: Mapping[str, np.ndarray] | None = None,
    blob_path: str = BLOB_PATH,
    target: str = "iOS18",
) -> tuple[str, list[BlobEntry]]:
    """The MIL text of `module` and the weight blob it refers to, entry by
    entry in offset order. Without `weights`, weight consts are printed with
    the offsets they would get and their entries carry no data."""
    text, blob = print_program(module, weights, blob_path, target)
    return text, blob.entries


def write_mil_text_dir(
    module: builtin.ModuleOp,
    weights: Mapping[str, np.ndarray] | None,
    directory: str | Path,
    target: str = "iOS18",
) -> Path:
    """Writes `DIR/model.mil` and `DIR/weights/weight.bin` (the layout of a
    compiled model), replacing DIR as a whole only once both are written."""
    text, blob = print_program(module, weights or {}, BLOB_PATH, target)
    directory = Path(directory)
    with atomic_output(directory) as tmp:
        write_printed(text, blob, tmp)
    return directory


def write_printed(text: str, blob: WeightBlob, directory: Path) -> None:
    """Writes a printed program (`print_program`) as the new directory
    `directory`: `model.mil` and `weights/weight.bin`."""
    directory.mkdir()
    blob.write_weights_dir(directory / WEIGHTS_DIR)
    (directory / MODEL_FILE).write_text(text)


@dataclass(frozen=True)
class MilTextTarget(Target):
    """`xdsl-opt -t mil-text`: the module as MIL text; weight consts are
    BLOBFILE references with the offsets `write_mil_text_dir` gives them."""

    name: ClassVar[str] = "mil-text"

    blob_path: str = BLOB_PATH
    target: str = "iOS18"

    def emit(self, ctx: Context, module: builtin.ModuleOp, output: IO[str]) -> None:
        try:
            text, _ = print_program(module, None, self.blob_path, self.target)
        except MilTextError:
            raise
        except XdslAneError as e:
            raise DiagnosticException(str(e)) from None
        output.write(text)

"""`xdsl-ane run`: interpret a program, or a model `xdsl-ane compile` wrote.

A source program (`.mlir`) runs on its own arguments. A compiled model (an
`.mlpackage`, a `--emit proto` or `--emit mil-text` directory, a `.mil`
file) runs with the weights of its blob, and by default (`--layout
logical`) on the *logical* tensors of the program it was compiled from:
the manifest next to it says how each argument and result is laid out as
`[1, C, 1, S]`, which arguments are dynamic weights (taken from `--weights`
by name) and how inputs and outputs are packed. `--random SEED` draws the
same logical tensors for a program and for its compiled model, so their
outputs compare directly. `--layout ane` feeds the compiled function's own
arguments as they are."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.dialects import builtin, func
from xdsl.ir import Attribute

from xdsl_ane.diagnostics import did_you_mean
from xdsl_ane.dialects.dense import numpy_dtype_of
from xdsl_ane.dialects.state_type import is_state
from xdsl_ane.errors import XdslAneError
from xdsl_ane.interpreter.core import find_function, random_array, run_function
from xdsl_ane.passes.layouts import Layout, layout_of_kind


def dtype_of(t: Any) -> np.dtype:
    return numpy_dtype_of(t.element_type)


def note(message: str) -> None:
    print(f"xdsl-ane: note: {message}", file=sys.stderr)


def coerce(value: np.ndarray, dtype: np.dtype, what: str) -> np.ndarray:
    """`value` as `dtype` when the conversion is a change of precision
    (f64 -> f32, f32 -> f16, i64 -> i32 with the values in range), with a
    note; any other mismatch is an error."""
    if value.dtype == dtype:
        return value
    if value.dtype.kind == "f" and dtype.kind == "f":
        note(f"{what}: {value.dtype} cast to {dtype}")
        return value.astype(dtype)
    if value.dtype.kind in "iu" and dtype.kind in "iu":
        info = np.iinfo(dtype)
        if value.size == 0 or (value.min() >= info.min and value.max() <= info.max):
            note(f"{what}: {value.dtype} cast to {dtype}")
            return value.astype(dtype)
        raise XdslAneError(f"{what}: values of {value.dtype} do not fit {dtype}")
    raise XdslAneError(f"{what} has dtype {value.dtype}, expected {dtype}")


@dataclass
class LogicalIO:
    """How a compiled function's arguments and results hold the logical
    tensors of its source program (from its manifest record)."""

    function: func.FuncOp
    arg_layouts: list[Layout]
    result_layouts: list[Layout]
    weight_args: list[dict[str, Any]]
    packing: dict[str, Any] | None

    @classmethod
    def of(cls, function: func.FuncOp, record: Mapping[str, Any]) -> LogicalIO:
        return cls(
            function,
            [
                layout_of_kind(r["layout"], r["logical"])
                for r in record.get("arg_layouts", [])
            ],
            [
                layout_of_kind(r["layout"], r["logical"])
                for r in record.get("result_layouts", [])
            ],
            list(record.get("weight_args", [])),
            record.get("packing"),
        )

    def arg_elements(self) -> list[Attribute]:
        """The element type each logical argument is held in."""
        types = [t.element_type for t in self.function.function_type.inputs.data]
        if self.packing is None:
            return types[: len(self.arg_layouts)]
        holder = {
            entry["arg"]: types[i]
            for i, group in enumerate(self.packing["inputs"])
            for entry in group["tensors"]
        }
        return [holder[i] for i in range(len(self.arg_layouts))]

    def random(self, seed: int) -> list[np.ndarray]:
        """What `random_inputs` draws for the source program's arguments,
        in the compiled element types."""
        rng = np.random.default_rng(seed)
        return [
            random_array(rng, builtin.TensorType(element, layout.logical))
            for layout, element in zip(self.arg_layouts, self.arg_elements())
        ]

    def inputs(
        self, logical: Sequence[np.ndarray], weights: Mapping[str, np.ndarray]
    ) -> list[np.ndarray]:
        """The function's arguments from the logical tensors and weights."""
        dtypes = [numpy_dtype_of(e) for e in self.arg_elements()]
        args: dict[int, np.ndarray] = {}
        for i, (value, layout, dtype) in enumerate(
            zip(logical, self.arg_layouts, dtypes)
        ):
            if tuple(value.shape) != layout.logical:
                raise XdslAneError(
                    f"arg{i} has shape {list(value.shape)}, the program takes "
                    f"{list(layout.logical)}"
                )
            args[i] = layout.to_ane(coerce(value, dtype, f"arg{i}"))
        for record in self.weight_args:
            name = record["weight"]
            if name not in weights:
                raise XdslAneError(
                    f"dynamic weight '{name}' (argument {record['arg']}) is not in "
                    f"the weights file{did_you_mean(name, weights)}; give it with "
                    "--weights"
                )
            w = np.asarray(weights[name])
            w = w.T if record["stored"] == "[Cout, Cin]" else w
            args[record["arg"]] = np.ascontiguousarray(w).reshape(record["shape"])
        types = self.function.function_type.inputs.data
        if self.packing is None:
            return [
                coerce(args[i], dtype_of(t), f"argument {i}") if i in args else None
                for i, t in enumerate(types)
            ]  # type: ignore[misc]
        packed = []
        for group, t in zip(self.packing["inputs"], types):
            buffer = np.zeros(group["shape"], dtype_of(t))
            for entry in group["tensors"]:
                start, stop = entry["offset"], entry["offset"] + entry["length"]
                view = entry.get("view", entry["shape"])
                buffer[..., start:stop] = args[entry["arg"]].reshape(view)
            packed.append(buffer)
        return packed

    def outputs(self, results: Sequence[np.ndarray]) -> list[np.ndarray]:
        """The logical results from the function's results."""
        by_index: dict[int, np.ndarray] = dict(enumerate(results))
        if self.packing is not None:
            by_index = {}
            for group, value in zip(self.packing["outputs"], results):
                for entry in group["tensors"]:
                    start, stop = entry["offset"], entry["offset"] + entry["length"]
                    by_index[entry["result"]] = value[:, start:stop].reshape(
                        entry["shape"]
                    )
        return [
            layout.to_logical(by_index[i])
            for i, layout in enumerate(self.result_layouts)
        ]


def compiled_function(
    module: builtin.ModuleOp, name: str | None, manifest: Mapping[str, Any]
) -> tuple[func.FuncOp, dict[str, Any] | None]:
    """The function to run and its manifest record; `name` may be the
    function's MIL name (`main`) or the source program's (in the manifest)."""
    functions = [op for op in module.ops if isinstance(op, func.FuncOp)]
    records = manifest.get("functions", {})
    if name is not None and name in records and len(functions) == 1:
        return functions[0], records[name]
    function = find_function(module, name)
    index = functions.index(function)
    record = records.get(function.sym_name.data)
    if record is None and len(records) == 1 and index == 0:
        record = next(iter(records.values()))
    return function, record


def run_compiled(
    path: Path,
    function_name: str | None,
    layout: str,
    arrays: Mapping[str, np.ndarray] | None,
    seed: int | None,
    weights: Mapping[str, np.ndarray],
    source: str = "inputs",
) -> tuple[str, list[np.ndarray]]:
    """Runs a compiled model (see the module docstring) on `arrays` (keyed
    arg0, arg1, ...) or on random inputs from `seed`."""
    from xdsl_ane.frontend.milproto import read_compiled

    program = read_compiled(path)
    function, record = compiled_function(
        program.module, function_name, program.manifest
    )
    name = function.sym_name.data
    check_stateless(path, function, program.manifest)
    all_weights = {**program.weights, **weights}
    if layout == "logical" and record is None:
        where = program.manifest_path or "no manifest next to it"
        raise XdslAneError(
            f"{path}: @{name} has no layout record ({where}); run it with --layout ane"
        )
    count = (
        len(function.function_type.inputs.data)
        if layout == "ane"
        else len((record or {}).get("arg_layouts", []))
    )
    inputs = None if arrays is None else keyed_inputs(arrays, count, name, source)
    if layout == "ane":
        args = function.function_type.inputs.data
        if inputs is None:
            rng = np.random.default_rng(seed)
            feed = [random_array(rng, t) for t in args]
        else:
            feed = [
                coerce(v, dtype_of(t), f"arg{i}")
                for i, (v, t) in enumerate(zip(inputs, args))
            ]
        return name, run_function(program.module, feed, all_weights, name)
    assert record is not None
    io = LogicalIO.of(function, record)
    logical = io.random(seed) if inputs is None else list(inputs)
    results = run_function(
        program.module, io.inputs(logical, weights), all_weights, name
    )
    return name, io.outputs(results)


def check_stateless(
    path: Path, function: func.FuncOp, manifest: Mapping[str, Any]
) -> None:
    """Fails on a function with state arguments: its results depend on the
    calls before it, which one `run` does not make."""
    states = [
        arg.name_hint or f"arg{i}"
        for i, arg in enumerate(function.body.block.args)
        if is_state(arg.type)
    ]
    if not states:
        return
    name = function.sym_name.data
    if "llm" in manifest or "llm_part" in manifest:
        raise XdslAneError(
            f"{path}: stateful package (@{name} keeps {', '.join(states)} across "
            "calls): use xdsl-ane generate"
        )
    raise XdslAneError(
        f"{path}: @{name} is stateful ({', '.join(states)} kept across calls); "
        "run makes one call and does not run it"
    )


def keyed_inputs(
    arrays: Mapping[str, np.ndarray], count: int, name: str, source: str
) -> list[np.ndarray]:
    """arg0 .. arg{count-1} of an inputs file."""
    missing = [f"arg{i}" for i in range(count) if f"arg{i}" not in arrays]
    if missing:
        raise XdslAneError(
            f"{source}: no array {', '.join(missing)} for @{name} (it takes "
            f"{count} arguments, keyed arg0..arg{count - 1})"
        )
    return [arrays[f"arg{i}"] for i in range(count)]

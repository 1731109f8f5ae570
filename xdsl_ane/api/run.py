"""Interpret a program, or a model `xdsl-ane compile` wrote (`xdsl-ane run`).

A source program (`.mlir`, or a `.pt2` imported first) runs on its own
arguments after the given passes. A compiled model (an `.mlpackage`, a
`--emit proto` or `--emit mil-text` directory, a `.mil` file) runs with the
weights of its blob, and by default (`layout="logical"`) on the *logical*
tensors of the program it was compiled from: its manifest's interface
(`xdsl_ane.interface`) says how each argument and result is laid out as
`[1, C, 1, S]`, which arguments are dynamic weights (taken from `weights` by
name) and how inputs and outputs are packed. A seed draws the same logical
tensors for a program and for its compiled model, so their outputs compare
directly. `layout="ane"` feeds the compiled function's own arguments as
they are."""

from __future__ import annotations

import sys
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.dialects import builtin, func

from xdsl_ane.diagnostics import counted, did_you_mean
from xdsl_ane.dialects.dense import numpy_dtype_of
from xdsl_ane.dialects.state_type import is_state
from xdsl_ane.errors import XdslAneError, first_line, internal_error, option
from xdsl_ane.interface import FunctionInterface

Arrays = Mapping[str, np.ndarray]


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


def keyed_inputs(
    arrays: Arrays, names: Sequence[str | None], function: str, source: str
) -> list[np.ndarray]:
    """The arguments from an inputs file, each keyed `argI` or by its name
    (`names`, the program's argument names); a key that is neither is
    named in a note (it is not read)."""
    picked, missing, used = [], [], set()
    for i, name in enumerate(names):
        key = f"arg{i}" if f"arg{i}" in arrays or name not in arrays else name
        if key not in arrays:
            missing.append(f"arg{i}" + (f" ({name})" if name else ""))
            continue
        picked.append(arrays[key])
        used.add(key)
    count = len(names)
    if missing:
        raise XdslAneError(
            f"{source}: no array {', '.join(missing)} for @{function} (it takes "
            f"{counted(count, 'argument')}, keyed arg0..arg{count - 1} or by name)"
        )
    unknown = sorted(set(arrays) - used)
    if unknown:
        known = ", ".join(n for n in names if n)
        note(
            f"{source}: {', '.join(unknown)} is no argument of @{function}, not read "
            f"(keys: arg0..arg{count - 1}" + (f" or {known})" if known else ")")
        )
    return picked


def argument_names(function: func.FuncOp, count: int) -> list[str | None]:
    """The names of a function's first `count` arguments (None: unnamed)."""
    return [arg.name_hint for arg in function.body.block.args[:count]]


# --- one entry point ---------------------------------------------------------------


def run(
    path: str | Path,
    function: str | None = None,
    *,
    arrays: Arrays | None = None,
    seed: int | None = None,
    weights: Arrays | None = None,
    layout: str | None = None,
    pipeline: str | None = None,
    source: str = "inputs",
) -> tuple[str, list[np.ndarray]]:
    """Runs `function` (the only or first one by default) of the program or
    compiled model at `path` on `arrays` (keyed arg0, arg1, ...) or on
    random inputs from `seed`; returns its name and its results. `source`
    names the arrays in errors. Every failure is an `XdslAneError` naming
    the file (and the op, where the interpreter failed in one)."""
    from xdsl_ane.frontend.compiled import is_compiled
    from xdsl_ane.interpreter.core import InterpretationError
    from xdsl_ane.locations import location

    label, path = str(path), Path(path)
    compiled = is_compiled(path) or path.is_dir()
    if compiled and pipeline:
        raise XdslAneError(
            f"{option('pipeline', pipeline, flag='-p')}: does not apply to a "
            f"compiled model ({path} is compiled already; run its source to "
            "apply passes)"
        )
    if not compiled and layout is not None:
        raise XdslAneError(
            f"{option('layout', layout)}: applies only to a compiled model, not to "
            f"the source program {path}"
        )
    weights = weights or {}
    try:
        if compiled:
            return run_compiled(path, function, layout, arrays, seed, weights, source)
        return run_source(label, function, pipeline, arrays, seed, weights, source)
    except InterpretationError as e:
        op = interpreted_op(e)
        at = (location(op) if op is not None else None) or label
        raise XdslAneError(f"{at}: {first_line(e)}") from None
    except XdslAneError as e:
        if label in str(e):
            raise
        raise XdslAneError(f"{label}: {e}") from None
    except MemoryError:
        raise
    except Exception as e:
        op = interpreted_op(e)
        where = f"{label}: interpreting {op.name if op else 'the program'}"
        raise internal_error(where, e) from e


def interpreted_op(e: BaseException):
    """The op xDSL's interpreter was running when `e` was raised."""
    from xdsl.ir import Operation

    found = None
    for frame, _ in traceback.walk_tb(e.__traceback__):
        op = frame.f_locals.get("op")
        if isinstance(op, Operation):
            found = op
    return found


# --- a source program --------------------------------------------------------------


def run_source(
    path: str,
    function_name: str | None,
    pipeline: str | None,
    arrays: Arrays | None,
    seed: int | None,
    weights: Arrays,
    source: str,
) -> tuple[str, list[np.ndarray]]:
    """Interprets a function of an `.mlir` program (or of a `.pt2`,
    imported) after `pipeline`'s passes."""
    from xdsl_ane.frontend.mlir import parse_module
    from xdsl_ane.interpreter.core import find_function, random_inputs, run_function
    from xdsl_ane.passes.driver import apply_pipeline, make_context
    from xdsl_ane.weights.check import check_weights

    ctx = make_context()
    if Path(path).suffix == ".pt2":  # torch.export.save: imported first
        from xdsl_ane.frontend.torch import from_torch

        imported = from_torch(path)
        module, weights = imported.module, {**imported.weights, **weights}
    else:
        module = parse_module(path, ctx)
    apply_pipeline(module, pipeline, ctx, path)
    check_weights(module, dict(weights), path)
    function = find_function(module, function_name)
    name = function.sym_name.data
    types = function.function_type.inputs.data
    if arrays is None:
        inputs = random_inputs(function, seed)
    else:
        inputs = [
            coerce(np.asarray(v), dtype_of(t), f"{source}: arg{i}")
            for i, (v, t) in enumerate(
                zip(
                    keyed_inputs(
                        arrays, argument_names(function, len(types)), name, source
                    ),
                    types,
                )
            )
        ]
    return name, run_function(module, inputs, weights, name)


# --- a compiled model --------------------------------------------------------------


def compiled_function(
    module: builtin.ModuleOp, name: str | None, manifest: Mapping[str, Any]
) -> tuple[func.FuncOp, Mapping[str, Any] | None]:
    """The function to run and its manifest record; `name` may be the
    function's MIL name (`main`) or the source program's (in the manifest)."""
    from xdsl_ane.interpreter.core import find_function

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
    layout: str | None,
    arrays: Arrays | None,
    seed: int | None,
    weights: Arrays,
    source: str = "inputs",
) -> tuple[str, list[np.ndarray]]:
    """Runs a compiled model (see the module docstring) on `arrays` or on
    random inputs from `seed`."""
    from xdsl_ane.frontend.milproto import read_compiled
    from xdsl_ane.interpreter.core import random_inputs, run_function

    program = read_compiled(path)
    function, record = compiled_function(
        program.module, function_name, program.manifest
    )
    name = function.sym_name.data
    check_stateless(path, function, program.manifest)
    all_weights = {**program.weights, **weights}
    interface = (
        None
        if record is None
        else FunctionInterface.from_manifest(record, str(program.manifest_path or path))
    )
    recorded = interface is not None and interface.arg_layouts is not None
    if layout is None:  # the logical tensors where the manifest says how
        layout = "logical" if recorded else "ane"
        if not recorded:
            note(f"@{name} has no layout record: run on its own arguments")
    if layout == "logical" and not recorded:
        where = program.manifest_path or "no manifest next to it"
        raise XdslAneError(
            f"{path}: @{name} has no layout record ({where}); run it with "
            f"{option('layout', 'ane')}"
        )
    types = function.function_type.inputs.data
    if layout == "ane":
        if arrays is None:
            feed = random_inputs(function, seed)
        else:
            feed = [
                coerce(v, dtype_of(t), f"arg{i}")
                for i, (v, t) in enumerate(
                    zip(
                        keyed_inputs(
                            arrays, argument_names(function, len(types)), name, source
                        ),
                        types,
                    )
                )
            ]
        return name, run_function(program.module, feed, all_weights, name)
    assert interface is not None
    elements = interface.arg_elements(types)
    if arrays is None:
        logical = random_logical(interface, elements, seed, function)
    else:
        count = len(interface.args)
        logical = [
            checked_input(v, layout.logical, numpy_dtype_of(element), i)
            for i, (v, layout, element) in enumerate(
                zip(
                    keyed_inputs(
                        arrays,
                        argument_names(function, count)
                        if interface.packing is None
                        else [None] * count,
                        name,
                        source,
                    ),
                    interface.args,
                    elements,
                )
            )
        ]
    for w in interface.weight_args or ():
        if w.name not in weights:
            raise XdslAneError(
                f"dynamic weight '{w.name}' (argument {w.arg}) is not in the "
                f"weights file{did_you_mean(w.name, weights)}; give it with "
                f"{option('weights')}"
            )
    feed = interface.arguments(logical, weights, types)
    results = run_function(program.module, feed, all_weights, name)
    return name, interface.logical_results(results)


def random_logical(
    interface: FunctionInterface,
    elements: Sequence[Any],
    seed: int | None,
    function: func.FuncOp,
) -> list[np.ndarray]:
    """What `random_inputs` draws for the source program's arguments, in
    the compiled element types (integers below the size the compiled
    function's argument indexes, as in the source)."""
    from xdsl_ane.interpreter.values import index_bound, random_array

    rng = np.random.default_rng(seed)
    args = function.body.block.args
    return [
        random_array(
            rng,
            builtin.TensorType(element, layout.logical),
            index_bound(args[i]) if interface.packing is None else None,
        )
        for i, (layout, element) in enumerate(zip(interface.args, elements))
    ]


def checked_input(
    value: np.ndarray, shape: tuple[int, ...], dtype: np.dtype, index: int
) -> np.ndarray:
    if tuple(value.shape) != shape:
        raise XdslAneError(
            f"arg{index} has shape {list(value.shape)}, the program takes {list(shape)}"
        )
    return coerce(value, dtype, f"arg{index}")


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

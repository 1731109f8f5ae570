"""`compile(compress="w8a8", calibration=...)`: int8 weights (per output
channel) and int8 activations into the ops that read them
(`passes/quantize_activations.py`), their scales from calibration
samples: `calibration` maps each program input (by its argument name, or
in order) to its samples stacked along a new first axis, in the
program's logical shapes, or names an .npz of them, or is a
`Calibration` that makes the samples for the compiled module (compile-llm:
its prompts' prefill and decode calls, `api/llm_calibration.py`); without
it, eight reproducible random samples per function (`random_inputs`,
seeds 0–7, its states zeros)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from xdsl.dialects import builtin, func

from xdsl_ane.errors import XdslAneError, option

if TYPE_CHECKING:
    from xdsl_ane.passes.quantize_activations import Sample

W8A8 = "w8a8"
WEIGHT_MODE = "int8:per-channel"
"""The weights' compression under w8a8."""
RANDOM_SAMPLES = 8


@dataclass(frozen=True)
class Calibration:
    """Calibration samples made for the compiled module: `make(module)`
    gives them as its functions' arguments (compile-llm's prompts, whose
    calls share the KV cache); `unit` names a sample in the summary."""

    make: Callable[[builtin.ModuleOp], list[Sample]]
    unit: str = "calibration samples"


def is_w8a8(compress: str | None) -> bool:
    return compress == W8A8


def weight_mode(compress: str | None) -> str | None:
    """The `mil-compress-weights` mode of `compress` (w8a8's int8)."""
    return WEIGHT_MODE if is_w8a8(compress) else compress


AUTO = "auto:"
"""`--compress auto:BITS`: a mode per weight, measured (api/auto_bits.py)."""


def is_auto(compress: str | None) -> bool:
    return compress is not None and compress.startswith(AUTO)


def is_calibrated(compress: str | None) -> bool:
    """Whether `compress` measures on calibration samples: w8a8, auto:BITS."""
    return is_w8a8(compress) or is_auto(compress)


def check_calibration(compress: str | None, calibration: Any) -> None:
    if calibration is not None and not is_calibrated(compress):
        raise XdslAneError(
            f"{option('calibration')}: applies only with {option('compress', W8A8)} "
            "or auto:BITS"
        )


def samples(
    module: builtin.ModuleOp,
    calibration: Mapping[str, np.ndarray] | str | Path | Calibration | None,
) -> list[Sample]:
    """The calibration samples, each its calls of the module's functions
    (their arguments in the ANE's layout where the compile recorded one)."""
    from xdsl_ane.interpreter.core import random_inputs
    from xdsl_ane.interpreter.state import StateBuffer

    if isinstance(calibration, Calibration):
        return calibration.make(module)
    functions = [f for f in module.walk() if isinstance(f, func.FuncOp)]
    if calibration is None:  # the states: zeros, as the calls' own
        return [
            [(f.sym_name.data, [a for a in inputs if not isinstance(a, StateBuffer)])]
            for f in functions
            for inputs in (random_inputs(f, seed) for seed in range(RANDOM_SAMPLES))
        ]
    if len(functions) != 1:
        raise XdslAneError(
            f"{option('calibration')}: the program has {len(functions)} functions; "
            "calibration arrays feed a program of one"
        )
    (f,) = functions
    name = f.sym_name.data
    return [[(name, args)] for args in feeds(f, load_calibration(calibration))]


def load_calibration(calibration: Mapping[str, np.ndarray] | str | Path):
    if isinstance(calibration, str | Path):
        from xdsl_ane.weights.arrays import load_arrays

        return load_arrays(calibration, "calibration")
    return {k: np.asarray(v) for k, v in calibration.items()}


def feeds(f: func.FuncOp, arrays: Mapping[str, np.ndarray]) -> list[list[np.ndarray]]:
    """The samples of `arrays` (by argument name, else in order) as the
    function's arguments."""
    from xdsl_ane.dialects.dtypes import numpy_dtype_of
    from xdsl_ane.interface import FunctionInterface

    types = list(f.function_type.inputs.data)
    names = [arg.name_hint or f"arg{i}" for i, arg in enumerate(f.args)]
    ordered = (
        [arrays[n] for n in names]
        if all(n in arrays for n in names)
        else list(arrays.values())
    )
    counts = {a.shape[0] if a.ndim else 0 for a in ordered}
    if len(ordered) != len(types) or len(counts) != 1 or 0 in counts:
        raise XdslAneError(
            f"{option('calibration')}: expected {len(types)} arrays ({', '.join(names)}) "
            "of samples stacked along a first axis of one length, got "
            + ", ".join(f"{list(a.shape)}" for a in ordered)
        )
    interface = FunctionInterface.of_function(f)
    shapes = (
        [tuple(t.get_shape()) for t in types]  # type: ignore[attr-defined]
        if interface.arg_layouts is None
        else [layout.logical for layout in interface.args]
    )
    for name, a, shape in zip(names, ordered, shapes):
        if a.shape[1:] != tuple(shape):
            raise XdslAneError(
                f"{option('calibration')}: sample 0 of {name} is {list(a.shape[1:])}, "
                f"the program takes {list(shape)}"
            )
    out = []
    for i in range(counts.pop()):
        logical = [a[i] for a in ordered]
        if interface.arg_layouts is None:
            dtypes = [numpy_dtype_of(t.element_type) for t in types]  # type: ignore[attr-defined]
            out.append([a.astype(d) for a, d in zip(logical, dtypes)])
        else:
            out.append(interface.arguments(logical, {}, types))
    return out


def quantize(
    module: builtin.ModuleOp,
    weights: Mapping[str, np.ndarray],
    calibration: Mapping[str, np.ndarray] | str | Path | Calibration | None,
):
    """The activations of `module`'s int8 ops made int8 (in place); the
    `ActivationReport`."""
    from xdsl_ane.passes.quantize_activations import quantize_activations

    unit = (
        calibration.unit
        if isinstance(calibration, Calibration)
        else "calibration samples"
    )
    return quantize_activations(module, weights, samples(module, calibration), unit)

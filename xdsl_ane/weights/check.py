"""Checking a program's weights before it is compiled or run: every weight
it names is present, of the declared shape and kind, and finite; a missing
one gets a hint (a prefix the file's names carry or lack, or a close
name)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from xdsl.dialects import builtin
from xdsl.dialects.builtin import TensorType

from xdsl_ane.diagnostics import did_you_mean, prefix_difference
from xdsl_ane.dialects import mil, rlx
from xdsl_ane.errors import XdslAneError
from xdsl_ane.locations import location
from xdsl_ane.weights.lazy import LazyWeight


def used_weight_names(module: builtin.ModuleOp) -> set[str]:
    names = set()
    for op in module.walk():
        if isinstance(op, rlx.ParamOp):
            names.add(op.param_name.data)
        elif isinstance(op, mil.ConstOp) and op.weight is not None:
            names.add(op.weight.data)
    return names


def check_weights(
    module: builtin.ModuleOp, weights: Mapping[str, np.ndarray], source: str
) -> list[str]:
    """Fails on a weight the program names that is missing or mis-shaped
    (naming the op); returns the names of weights the program does not use."""
    for op in module.walk():
        if isinstance(op, rlx.ParamOp):
            name, shape = op.param_name.data, op.result.type
        elif isinstance(op, mil.ConstOp) and op.weight is not None:
            name, shape = op.weight.data, op.result.type
        else:
            continue
        assert isinstance(shape, TensorType)
        expected = op.file_shape() if isinstance(op, mil.ConstOp) else shape.get_shape()
        at = location(op) or source
        if name not in weights:
            raise XdslAneError(
                f"{at}: {op.name} '{name}': weight not in the weights file"
                f"{missing_weight_hint(name, weights)}"
            )
        value = weights[name]
        array = isinstance(value, np.ndarray | LazyWeight)
        if not array or tuple(value.shape) != tuple(expected):
            got = list(getattr(value, "shape", ()))
            raise XdslAneError(
                f"{at}: {op.name} '{name}': weight has shape {got}, the program "
                f"declares {list(expected)}"
            )
        float_program = "f" in str(shape.element_type)
        if float_program != (value.dtype.kind == "f"):
            raise XdslAneError(
                f"{at}: {op.name} '{name}': weight has dtype {value.dtype}, the "
                f"program declares {shape.element_type}"
            )
        if isinstance(value, np.ndarray) and value.dtype.kind == "f":
            bad = value[~np.isfinite(value)]
            if bad.size:
                raise XdslAneError(
                    f"{at}: {op.name} '{name}': weight holds {bad.size} non-finite "
                    f"value(s) ({bad.flat[0]}); a program's weights must be finite"
                )
    return sorted(set(weights) - used_weight_names(module))


def missing_weight_hint(name: str, weights: Mapping[str, np.ndarray]) -> str:
    """Why a weight may be missing: the file names it with another prefix
    (Hugging Face's `model.layers.0...` for `layers.0...`), or a close name."""
    found = prefix_difference(name, weights)
    if found is not None:
        other, prefix = found
        added = prefix[0] == "+"
        return (
            f"; the file has '{other}': its names {'carry' if added else 'lack'} the "
            f"prefix '{prefix[1:]}' (strip or add it when writing the weights)"
        )
    return did_you_mean(name, weights)

"""Which mil ops coremltools' pymil builder takes as our writer writes them,
and which it types differently: the companion of `export.py`, over more ops
than the Qwen3 stack has.

    python -m bench.pymil.coverage [--json] [--output FILE.json]

Programs:

- every valid `.mlir` of `tests/filecheck/dialects/mil/` and
  `tests/filecheck/targets/*/` (files named `*invalid*` left out), weight
  consts given random data of their file shape;
- compiled ones: the training kernels (`compile_training_kernels(QWEN3_0_6B,
  fp16=True)`: dynamic weights, packed I/O) and a small decoder layer
  compiled with each weight compression mode (constexpr ops, sub-byte data).

Each function is first built whole (`export.ProgramBuilder`, one op after
the other through `mb.<op>`, MIL's inputs from `mil_inputs`) and exported
with coremltools' backend (`backend.mil.load.load`, no pass). Where the
whole function fails, each op is then built alone, in a function of its own
whose placeholders stand for its non-const operands, so that every op that
fails is found, not only the first. For every op type: how many ops were
built, the builder's errors, and results whose pymil dtype or shape differs
from the op's result type in our IR.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import TensorType

from bench.common import ROOT
from bench.pymil import export as E
from xdsl_ane.backend.mil_inputs import mil_inputs, mil_type
from xdsl_ane.backend.milproto import module_to_proto
from xdsl_ane.dialects import mil
from xdsl_ane.dialects.dtypes import dtype_of_element
from xdsl_ane.errors import first_line
from xdsl_ane.frontend.mlir import parse_module

with E.quiet_coremltools():
    from coremltools.converters.mil.mil.passes.pass_registry import PASS_REGISTRY

BACKEND_PASSES = (
    "mil_backend::adjust_io_to_supported_types",
    "nn_backend::handle_unused_inputs",
)

COMPRESSION_MODES = (
    "int8",
    "int4",
    "lut4",
    "lut6",
    "lut8",
    "lut4:per-tensor",
    "int4:per-channel",
)


def synthetic_weights(module: builtin.ModuleOp) -> dict[str, np.ndarray]:
    """Random data for each weight const, of its file shape and dtype kind."""
    rng = np.random.default_rng(0)
    weights: dict[str, np.ndarray] = {}
    for op in module.walk():
        if isinstance(op, mil.ConstOp) and op.weight is not None:
            t = op.result.type
            assert isinstance(t, TensorType)
            dtype = dtype_of_element(t.element_type)
            shape = tuple(op.file_shape())
            if dtype.numpy.kind == "f":
                value = rng.standard_normal(shape).astype(np.float32)
            elif dtype.numpy.kind == "b":
                value = rng.random(shape) < 0.5
            else:
                value = rng.integers(0, 2, shape).astype(dtype.numpy)
            weights[op.weight.data] = value
    return weights


class Tally:
    """Per op type: built ops, builder errors, type differences."""

    def __init__(self) -> None:
        self.built: Counter[str] = Counter()
        self.errors: dict[str, Counter[str]] = defaultdict(Counter)
        self.mismatches: dict[str, Counter[str]] = defaultdict(Counter)
        self.where: dict[str, set[str]] = defaultdict(set)
        self.functions: dict[str, str] = {}
        self.same_proto: dict[str, bool] = {}

    def record_types(self, builder: E.ProgramBuilder, where: str) -> None:
        for key, n in builder.type_mismatches.items():
            op_type = key.split(":", 1)[0]
            self.mismatches[op_type][key.split(": ", 1)[1]] += n
            self.where[op_type].add(where)


def build_alone(
    op: mil.MilOp,
    weights: dict[str, np.ndarray],
    tally: Tally,
    where: str,
    python_scalars: bool,
) -> None:
    """The op in a function of its own: its non-const operands placeholders,
    its const operands consts."""
    builder = E.ProgramBuilder(weights, python_scalars=python_scalars)
    placeholders: dict[str, Any] = {}
    operands = []
    for _, value in mil_inputs(op):
        values = value if isinstance(value, list) else [value]
        for v in values:
            if hasattr(v, "type") and v not in operands:
                operands.append(v)
    consts = [v for v in operands if isinstance(v.owner, mil.ConstOp)]
    free = [v for v in operands if not isinstance(v.owner, mil.ConstOp)]
    for i, v in enumerate(free):
        placeholders[f"in{i}"] = builder.placeholder(v.type)
    op_type = mil_type(op)
    try:
        with E.Function(placeholders, opset_version=E.ct.target.iOS18) as f:
            for v, var in zip(free, f.inputs.values()):
                builder.vars[v] = var
            for v in consts:
                builder.add_const(v.owner)
            results = builder.add_op(op)
            f.set_outputs(
                [r for r in results if not E.types.is_state(r.sym_type)]
                or [f.inputs[next(iter(f.inputs))]]
            )
    except Exception as e:
        tally.errors[op_type][first_line(e, typed=True)[:200]] += 1
        tally.where[op_type].add(where)
        return
    tally.built[op_type] += 1
    tally.record_types(builder, where)


def check_function(
    function: func.FuncOp,
    weights: dict[str, np.ndarray],
    tally: Tally,
    where: str,
    python_scalars: bool,
) -> None:
    """The function built whole and exported (after the two backend passes
    that our writer does the work of: bool/int8 model inputs and outputs
    cast, unused inputs consumed); op by op where that fails."""
    E.mb.name_count.clear()
    builder = E.ProgramBuilder(weights, python_scalars=python_scalars)
    ops = [
        op
        for op in function.walk()
        if isinstance(op, mil.MilOp) and not isinstance(op, mil.ConstOp)
    ]
    try:
        program = E.Program()
        program.add_function("main", builder.build_function(function))
        for name in BACKEND_PASSES:
            PASS_REGISTRY[name](program)
        with tempfile.TemporaryDirectory() as tmp:
            spec = E.backend_load(
                program, tmp, specification_version=E.SPECIFICATION_VERSION
            )
    except Exception as e:
        tally.functions[where] = (
            f"whole function failed ({first_line(e, typed=True)[:200]}); op by op"
        )
        for op in ops:
            build_alone(op, weights, tally, where, python_scalars)
        return
    differing = differing_ops(function, weights, spec)
    tally.functions[where] = f"built and exported ({len(ops)} ops); " + (
        "protobuf ops as ours"
        if not differing
        else f"protobuf ops differing from ours: {differing}"
    )
    tally.same_proto[where] = not differing
    tally.built.update(mil_type(op) for op in ops)
    tally.record_types(builder, where)


def differing_ops(
    function: func.FuncOp, weights: dict[str, np.ndarray], spec: Any
) -> str:
    """Where coremltools' protobuf of the function differs from our
    writer's (`module_to_proto`), op by op ("" when it does not)."""
    module = function.parent_op()
    assert isinstance(module, builtin.ModuleOp)
    ours = module_to_proto(module, weights, function=function.sym_name.data).spec
    ops_a = ops_of(ours)
    ops_b = ops_of(spec)
    notes = []
    if len(ops_a) != len(ops_b):
        notes.append(f"{len(ops_a)} ops, coremltools {len(ops_b)}")
    for x, y in zip(ops_a, ops_b):
        if x.SerializeToString(deterministic=True) != y.SerializeToString(
            deterministic=True
        ):
            notes.append(f"{op_label(x)} vs {op_label(y)}")
    return "; ".join(notes[:4]) + (f" (+{len(notes) - 4})" if len(notes) > 4 else "")


def ops_of(spec: Any) -> list[Any]:
    f = spec.mlProgram.functions["main"]
    (opset,) = f.block_specializations
    return list(f.block_specializations[opset].operations)


def op_label(op: Any) -> str:
    name = op.attributes["name"].immediateValue.tensor.strings.values
    return f"{op.type} '{name[0] if name else '?'}'"


def filecheck_modules() -> list[Path]:
    files = sorted((ROOT / "tests/filecheck/dialects/mil").glob("*.mlir"))
    files += sorted((ROOT / "tests/filecheck/targets").glob("*/*.mlir"))
    return [f for f in files if "invalid" not in f.name]


def small_config() -> Any:
    return dataclasses.replace(
        E.QWEN3_0_6B,
        hidden_size=128,
        num_heads=4,
        num_kv_heads=2,
        head_dim=32,
        ffn_size=256,
        seq_len=8,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--output", type=Path, help="write the JSON object here")
    parser.add_argument("--workdir", type=Path, help="unused")
    parser.add_argument(
        "--numpy-scalars",
        action="store_true",
        help="give the builder integer/bool scalars as 0-d numpy "
        "arrays, as mil_inputs returns them",
    )
    args = parser.parse_args(argv)
    scalars = not args.numpy_scalars
    tally = Tally()

    for path in filecheck_modules():
        module = parse_module(path)
        weights = synthetic_weights(module)
        for f in module.walk():
            if isinstance(f, func.FuncOp) and f.body.blocks:
                where = f"{path.relative_to(ROOT)}@{f.sym_name.data}"
                check_function(f, weights, tally, where, scalars)

    from xdsl_ane.models.kernels import compile_training_kernels
    from xdsl_ane.models.transformer import build_decoder_layer, make_weights

    for name, kernel in compile_training_kernels(E.QWEN3_0_6B, fp16=True).items():
        (f,) = (op for op in kernel.module.ops if isinstance(op, func.FuncOp))
        check_function(
            f, synthetic_weights(kernel.module), tally, f"training:{name}", scalars
        )

    config = small_config()
    layer = build_decoder_layer(config)
    layer_weights = make_weights(layer, config, 0)
    for mode in COMPRESSION_MODES:
        model = E.xdsl_ane.compile(layer, weights=layer_weights, compress=mode)
        (f,) = (op for op in model.module.ops if isinstance(op, func.FuncOp))
        check_function(f, model.weights, tally, f"compressed:{mode}", scalars)

    op_types = sorted(set(tally.built) | set(tally.errors) | set(tally.mismatches))
    all_ops = sorted(
        op.name.removeprefix("mil.") for op in mil.MIL_OPS if op is not mil.ConstOp
    )
    report = {
        "op_types_seen": len(op_types),
        "mil_op_types": len(all_ops),
        "not_in_any_program": [t for t in all_ops if t not in op_types],
        "built": dict(sorted(tally.built.items())),
        "errors": {k: dict(v) for k, v in sorted(tally.errors.items())},
        "type_mismatches": {k: dict(v) for k, v in sorted(tally.mismatches.items())},
        "where": {k: sorted(v) for k, v in sorted(tally.where.items())},
        "functions": tally.functions,
        "functions_exported": len(tally.same_proto),
        "functions_with_our_protobuf": sum(tally.same_proto.values()),
    }
    if args.output:
        args.output.write_text(json.dumps(report, indent=2) + "\n")
    if args.json:
        print(json.dumps(report))
        return 0
    print(
        f"{len(op_types)} of {len(all_ops)} mil op types seen; not seen: "
        f"{', '.join(report['not_in_any_program']) or 'none'}"
    )
    for t in op_types:
        line = f"  {t}: {tally.built[t]} built"
        if t in tally.errors:
            line += "; rejected: " + "; ".join(
                f"{m} (x{n})" for m, n in tally.errors[t].items()
            )
        if t in tally.mismatches:
            line += "; typed differently: " + "; ".join(
                f"{m} (x{n})" for m, n in tally.mismatches[t].items()
            )
        print(line)
    print(
        f"functions: {len(tally.functions)}, exported {len(tally.same_proto)}, "
        f"with the same protobuf ops as ours {sum(tally.same_proto.values())}"
    )
    for where, status in tally.functions.items():
        print(f"  {where}: {status}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

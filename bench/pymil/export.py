"""Our MIL protobuf writer against coremltools' own serialisation of a pymil
`Program` built from the same mil module, on the Qwen3-0.6B-shaped decoder
stack (random weights, `make_weights` seed 0):

    python -m bench.pymil.export --layers 8 [--reps 5] [--routes backend,convert_save]
        [--workdir DIR] [--output FILE.json]

What is measured, for each repetition, in one process:

- `compile`: `xdsl_ane.compile(stack, weights=...)` (the rlx module through
  `ane-pipeline` to the mil module; its fp16 weight prefetch starts here).
  Each side gets a compile of its own, so that both start from the same
  state (prefetched fp16 copies made, nothing printed yet).
- `ours.save`: `CompiledModel.save(path)`: our protobuf printer
  (`backend/milproto.py`) with the blob written while it prints, into the
  `.mlpackage`.
- `<route>.build`: a `coremltools.converters.mil.mil.Program` built op by
  op from the compiled mil module with the builder (`mb.<op>`), each op
  given MIL's inputs as `backend/mil_inputs.mil_inputs` lists them (SSA
  values as the builder's `Var`s, compile-time values as numpy arrays,
  integer and bool scalars as Python `int`/`bool`: see
  `ProgramBuilder.python_scalars`) and named as our writer names it, each
  `mil.const` with its real data: a weight const its fp16 array (the
  prefetched copy where the compile made one, else the weight viewed and
  converted now), an inline const its value. The builder's own type
  inference runs on every op; a result whose dtype or shape differs from
  ours is reported (`type_mismatches`).
- `<route>.serialise`: one of the routes from a built Program to a saved
  `.mlpackage` without coremltools' optimisation passes:
  - `convert_save`: `ct.convert(prog, convert_to="mlprogram",
    pass_pipeline=ct.PassPipeline.EMPTY, minimum_deployment_target=iOS18,
    compute_precision=FLOAT16, skip_model_load=True)` then `.save(path)`
    (the public route: the 6 backend passes EMPTY leaves run, then
    `gc.collect()`; the blob goes to a temporary weights directory, is
    copied into a temporary package, and `save` copies that package to
    `path`);
  - `package_dir`: the same `ct.convert` with `package_dir=path` (the
    package is made at `path`: no `save` copy);
  - `backend`: coremltools' backend exporter alone,
    `coremltools.converters.mil.backend.mil.load.load(prog, weights_dir,
    specification_version=9)` (no pass at all; its exporter writes the
    blob), then `coremltools.models.utils._create_mlpackage(spec,
    weights_dir, path)` (manifest, root model, and the weights directory
    copied in as the weights item): the least coremltools itself does;
  - `backend_in_place`: the same exporter, its blob then moved (not
    copied) into the package's weights item, as our writer does
    (`backend/mlpackage.py`): the floor of a writer built on pymil.
  A Program is built afresh for every route (the passes change it). The
  parts of each route are timed too (`<route>.serialise.<part>`), and
  `<route>.save` is `build + serialise`. Build and serialise run with the
  cyclic garbage collector paused where our compile and save do
  (`xdsl_ane.api.collection_paused`).

Every timed region starts after `os.sync()` and with the peak RSS reset
(`/proc/self/clear_refs`); it records its peak RSS (`_peak_mb`) and the
peak above the RSS it started from (`_above_start_mb`). The order of the
sides alternates between repetitions. Printed: the fastest run of each
timing (`best_s`, how every side of the bench is reported) and the ratio of
coremltools' fastest save to ours (`ratio_save_best`); medians too, the
ratio of the medians, and the median of the per-repetition ratios
(`ratio_save_paired_median`, the steadier one on a busy machine).

The check (on the first repetition's packages): each package is loaded with
coremltools' milproto loader (`coremltools.converters.mil.frontend.
milproto.load.load`) and must have our op count and op types (consts
included and excluded); beyond that the model description, each op's
protobuf of `main`, the program attributes (coremltools' `buildInfo` left
out) and `weight.bin` byte for byte are compared with ours. The exit status
is 1 if the op types differ.

The last line of stdout is one JSON object with every timing (also written
to `--output`).
"""

from __future__ import annotations

import argparse
import filecmp
import gc
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue

from bench.common import proc_status_mb
from xdsl_ane.backend.mlpackage import write_package
from xdsl_ane.backend.weights import (
    WEIGHT_FILE,
    DeferredWeight,
    const_value,
    quiet_coremltools,
    weight_store,
)

with quiet_coremltools():
    import coremltools as ct
    from coremltools.converters.mil.backend.mil.load import load as backend_load
    from coremltools.converters.mil.frontend.milproto.load import load as proto_load
    from coremltools.converters.mil.mil import Builder as mb
    from coremltools.converters.mil.mil import Function, Program, types
    from coremltools.models.utils import _create_mlpackage

import xdsl_ane  # noqa: E402
from xdsl_ane.api import collection_paused  # noqa: E402
from xdsl_ane.backend.mil_inputs import mil_inputs, mil_type  # noqa: E402
from xdsl_ane.backend.names import NameTable  # noqa: E402
from xdsl_ane.dialects import mil  # noqa: E402
from xdsl_ane.dialects.dtypes import dtype_of_element  # noqa: E402
from xdsl_ane.models.transformer import (  # noqa: E402
    QWEN3_0_6B,
    build_decoder_stack,
    make_weights,
)

SEED = 0
SPECIFICATION_VERSION = 9  # iOS18
ROUTES = ("convert_save", "package_dir", "backend", "backend_in_place")


# --- clocks and memory -------------------------------------------------------------


@contextmanager
def region(record: dict[str, float], name: str) -> Iterator[None]:
    """Times the block into `record[name]` (s), its peak RSS into
    `record[name + '_peak_mb']` and the peak above the RSS it started from
    into `record[name + '_above_start_mb']`."""
    os.sync()
    Path("/proc/self/clear_refs").write_text("5")
    before = proc_status_mb("VmRSS")
    start = time.perf_counter()
    yield
    record[name] = time.perf_counter() - start
    record[name + "_peak_mb"] = proc_status_mb("VmHWM")
    record[name + "_above_start_mb"] = record[name + "_peak_mb"] - before


# --- the mil module as a pymil Program -----------------------------------------------


def mil_name(t: object) -> str:
    """MIL's dtype name of a tensor type's elements ("fp16", "int4")."""
    assert isinstance(t, TensorType)
    return dtype_of_element(t.element_type).mil


def pymil_dtype(t: object) -> Any:
    """The pymil builtin type of a tensor type's elements."""
    return types.string_to_builtin(mil_name(t))


def pymil_type_name(var: Any) -> str:
    """A pymil Var's type as `dtype[shape]` (a state: `state<...>`)."""
    if types.is_state(var.sym_type):
        return "state<" + pymil_type_name_of(var.sym_type.wrapped_type()) + ">"
    return pymil_type_name_of(var.sym_type)


def pymil_type_name_of(t: Any) -> str:
    if types.is_tensor(t):
        return f"{types.builtin_to_string(t.get_primitive())}{list(t.get_shape())}"
    return f"{types.builtin_to_string(t)}[]"


def our_type_name(t: object) -> str:
    if isinstance(t, mil.StateType):
        return "state<" + our_type_name(t.wrapped) + ">"
    assert isinstance(t, TensorType)
    return f"{mil_name(t)}{list(t.get_shape())}"


def const_data(op: mil.ConstOp, store: Any, prefetch: Any) -> np.ndarray:
    """A const's data as a numpy array of its type and shape: an inline
    value, or its weight viewed and converted (from the compile's prefetched
    fp16 copy where there is one and the view needs no transpose). A
    sub-byte dtype (compressed weight data) gets coremltools' numpy dtype
    for it (int8/uint8 carrying the sub-byte type as metadata)."""
    data = const_value(op, store, "mil.const", deferred=True, prefetch=prefetch)
    if isinstance(data, DeferredWeight):
        copy = data.prefetch.copy_of(data.array) if data.prefetch else None
        if copy is not None and data.perm is None:
            data = copy.reshape(data.shape)
        else:
            data = np.asarray(data)
    assert data is not None
    dtype = dtype_of_element(op.result.type.element_type)
    if dtype.sub_byte:
        data = data.astype(
            types.nptype_from_builtin(types.string_to_builtin(dtype.mil))
        )
    return data


class ProgramBuilder:
    """A func.func of mil ops as a pymil Function, op by op through `mb`
    (each op's inputs as `mil_inputs` lists them, named as our writer names
    them). Records each result whose pymil type differs from ours."""

    def __init__(
        self,
        weights: dict[str, np.ndarray] | None,
        prefetch: Any = None,
        python_scalars: bool = True,
    ):
        self.store = weight_store(weights if weights is not None else {})
        self.prefetch = prefetch
        self.python_scalars = python_scalars
        """Integer and bool scalars (0-d arrays in `mil_inputs`) are given to
        the builder as Python `int`/`bool` (int32 and bool consts, as the
        arrays would be): pymil's type inference mistakes 0-d numpy values
        in three places (split's `num_splits`: wrong result shapes;
        one_hot's `one_hot_vector_size`: TypeError; concat's `axis`:
        normalised in place, -1 written as rank-1). False keeps the arrays
        (`coverage.py --numpy-scalars` shows those failures)."""
        self.vars: dict[SSAValue, Any] = {}
        self.names = NameTable()
        self.type_mismatches: Counter[str] = Counter()

    def placeholder(self, t: object) -> Any:
        if isinstance(t, mil.StateType):
            return mb.state_tensor_placeholder(
                shape=tuple(t.wrapped.get_shape()), dtype=pymil_dtype(t.wrapped)
            )
        assert isinstance(t, TensorType)
        # A rank-0 input is refused unless allowed (our writer declares it).
        return mb.placeholder(
            shape=tuple(t.get_shape()), dtype=pymil_dtype(t), allow_rank0_input=True
        )

    def build_function(self, function: func.FuncOp) -> Function:
        block = function.body.block
        placeholders = {}
        for i, arg in enumerate(block.args):
            placeholders[self.names.claim(arg.name_hint or f"arg{i}")] = (
                self.placeholder(arg.type)
            )
        if self.prefetch is not None:
            self.prefetch.stop()  # as our printer does when it starts
        with Function(placeholders, opset_version=ct.target.iOS18) as f:
            for arg, var in zip(block.args, f.inputs.values()):
                self.vars[arg] = var
            outputs = None
            for op in block.ops:
                if isinstance(op, func.ReturnOp):
                    outputs = [self.vars[v] for v in op.arguments]
                elif isinstance(op, mil.ConstOp):
                    self.add_const(op)
                else:
                    self.add_op(op)
            assert outputs is not None
            f.set_outputs(outputs)
        return f

    def add_const(self, op: mil.ConstOp) -> Any:
        var = mb.const(
            val=const_data(op, self.store, self.prefetch), name=self.op_name(op)
        )
        self.vars[op.result] = var
        self.check_types(op, [var])
        return var

    def op_name(self, op: mil.MilOp) -> str:
        """The op's name as our writer gives it (`FunctionWriter.name_results`):
        its result's name hint, a weight const's weight, else `{type}_{n}`."""
        hint = op.results[0].name_hint if op.results else None
        if hint is None and isinstance(op, mil.ConstOp) and op.weight is not None:
            hint = op.weight.data
        return self.names.claim(hint) if hint else self.names.fresh(mil_type(op))

    def add_op(self, op: mil.MilOp) -> list[Any]:
        """Adds the op; raises what the builder raises (no `mb.<op>`: an
        AttributeError)."""
        op_type = mil_type(op)
        kwargs: dict[str, Any] = {"name": self.op_name(op)}
        for name, value in mil_inputs(op):
            if isinstance(value, SSAValue):
                kwargs[name] = self.vars[value]
            elif isinstance(value, list):
                kwargs[name] = tuple(self.vars[v] for v in value)
            elif (
                self.python_scalars
                and isinstance(value, np.ndarray)
                and value.ndim == 0
                and value.dtype.kind in "biu"
            ):
                kwargs[name] = value.item()
            else:
                kwargs[name] = value  # a numpy array or a str: the builder's const
        results = getattr(mb, op_type)(**kwargs)
        if not isinstance(results, (list, tuple)):
            results = [results]
        self.vars.update(zip(op.results, results, strict=True))
        self.check_types(op, results)
        return list(results)

    def check_types(self, op: mil.MilOp, results: list[Any]) -> None:
        for result, var in zip(op.results, results, strict=True):
            ours, theirs = our_type_name(result.type), pymil_type_name(var)
            if ours != theirs:
                self.type_mismatches[
                    f"{mil_type(op)}: ours {ours}, pymil {theirs}"
                ] += 1


def build_program(model: xdsl_ane.CompiledModel) -> tuple[Program, ProgramBuilder]:
    """The compiled model's one function as the `main` of a pymil Program."""
    mb.name_count.clear()  # op names independent of what was built before
    (function,) = (op for op in model.module.ops if isinstance(op, func.FuncOp))
    builder = ProgramBuilder(model.weights, model.prefetch)
    program = Program()
    program.add_function("main", builder.build_function(function))
    return program, builder


# --- coremltools' routes from a Program to an .mlpackage ----------------------------


@contextmanager
def stage(record: dict[str, float], name: str) -> Iterator[None]:
    """A part of a timed region (no sync, no memory reset)."""
    start = time.perf_counter()
    yield
    record[name] = time.perf_counter() - start


LEFT_BEHIND: list[Path] = []
"""Temporary files a route leaves for later (removed untimed)."""


def route_convert_save(program: Program, path: Path, record: dict[str, float]) -> None:
    with stage(record, "convert"):
        model = ct.convert(
            program,
            convert_to="mlprogram",
            pass_pipeline=ct.PassPipeline.EMPTY,
            minimum_deployment_target=ct.target.iOS18,
            compute_precision=ct.precision.FLOAT16,
            skip_model_load=True,
        )
    with stage(record, "mlmodel_save"):
        model.save(str(path))
    # Its temporary package, which coremltools removes at exit: removed
    # after the timed region.
    LEFT_BEHIND.append(Path(model.package_path))


def route_package_dir(program: Program, path: Path, record: dict[str, float]) -> None:
    with stage(record, "convert"):
        ct.convert(
            program,
            convert_to="mlprogram",
            pass_pipeline=ct.PassPipeline.EMPTY,
            minimum_deployment_target=ct.target.iOS18,
            compute_precision=ct.precision.FLOAT16,
            skip_model_load=True,
            package_dir=str(path),
        )


def route_backend(program: Program, path: Path, record: dict[str, float]) -> None:
    with tempfile.TemporaryDirectory(dir=path.parent) as weights_dir:
        with stage(record, "export"):
            spec = backend_load(
                program, weights_dir, specification_version=SPECIFICATION_VERSION
            )
        with stage(record, "package"):
            _create_mlpackage(spec, weights_dir, str(path))


def route_backend_in_place(
    program: Program, path: Path, record: dict[str, float]
) -> None:
    """coremltools' exporter, its blob moved (not copied) into the package's
    weights item, as our writer does (`backend/mlpackage.py`)."""
    staging = Path(tempfile.mkdtemp(prefix=".staging.", dir=path.parent))
    try:
        weights_dir = staging / "exported"
        weights_dir.mkdir()
        with stage(record, "export"):
            spec = backend_load(
                program, str(weights_dir), specification_version=SPECIFICATION_VERSION
            )
        with stage(record, "package"):
            # Our writer's packaging, the exported blob moved into the item.
            write_package(
                SimpleNamespace(spec=spec),
                path,
                staging,
                path,
                lambda item: os.replace(
                    weights_dir / WEIGHT_FILE, Path(item) / WEIGHT_FILE
                ),
            )
    finally:
        shutil.rmtree(staging, ignore_errors=True)


ROUTE_FUNCTIONS: dict[str, Callable[[Program, Path, dict[str, float]], None]] = {
    "convert_save": route_convert_save,
    "package_dir": route_package_dir,
    "backend": route_backend,
    "backend_in_place": route_backend_in_place,
}


# --- the check ------------------------------------------------------------------------


def package_op_types(path: Path) -> Counter[str]:
    """Op types (consts included) of a package's main function, as
    coremltools' milproto loader rebuilds it."""
    with quiet_coremltools():
        model = ct.models.MLModel(str(path), skip_model_load=True)
        spec = model.get_spec()
        mb.name_count.clear()
        program = proto_load(
            spec,
            specification_version=spec.specificationVersion,
            file_weights_dir=str(blob_path(path).parent),
        )
    return Counter(op.op_type for op in program.functions["main"].operations)


def package_spec(path: Path) -> Any:
    with quiet_coremltools():
        return ct.models.MLModel(str(path), skip_model_load=True).get_spec()


def blob_path(path: Path) -> Path:
    return path / "Data" / "com.apple.CoreML" / "weights" / "weight.bin"


def compare_packages(ours: Path, theirs: Path) -> dict[str, Any]:
    """How coremltools' package differs from ours beyond op types: the
    model description (coremltools' conversion metadata left out), the
    protobuf of each op of `main` (in order), the function's other fields
    and program attributes (coremltools' `buildInfo` left out), and the
    weight blob, byte for byte."""
    a, b = package_spec(ours), package_spec(theirs)
    b.description.ClearField("metadata")
    pa, pb = a.mlProgram, b.mlProgram
    fa, fb = pa.functions["main"], pb.functions["main"]
    (opset,) = fa.block_specializations
    ops_a = fa.block_specializations[opset].operations
    ops_b = fb.block_specializations[opset].operations
    differing = [
        x.attributes["name"].immediateValue.tensor.strings.values[0]
        for x, y in zip(ops_a, ops_b)
        if x.SerializeToString(deterministic=True)
        != y.SerializeToString(deterministic=True)
    ]
    attributes_b = {k: v for k, v in pb.attributes.items() if k != "buildInfo"}
    return {
        "same_description": a.description == b.description,
        "same_function_inputs_outputs": list(fa.inputs) == list(fb.inputs)
        and list(fa.block_specializations[opset].outputs)
        == list(fb.block_specializations[opset].outputs),
        "same_op_count": len(ops_a) == len(ops_b),
        "differing_ops": len(differing),
        "differing_op_names": differing[:6],
        "same_program_attributes": dict(pa.attributes) == attributes_b,
        "same_blob": filecmp.cmp(blob_path(ours), blob_path(theirs), shallow=False),
    }


def without_consts(counts: Counter[str]) -> Counter[str]:
    return Counter({k: v for k, v in counts.items() if k != "const"})


# --- the measurement ---------------------------------------------------------------------


def compile_stack(
    module: builtin.ModuleOp, weights: dict[str, np.ndarray], record: dict[str, float]
) -> xdsl_ane.CompiledModel:
    with region(record, "compile"):
        return xdsl_ane.compile(module, weights=weights)


def median(values: list[float]) -> float:
    return round(statistics.median(values), 4)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument(
        "--routes",
        default=",".join(ROUTES),
        help=f"comma-separated, of {', '.join(ROUTES)}",
    )
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--output", type=Path, help="write the JSON object here")
    args = parser.parse_args(argv)
    routes = [r for r in args.routes.split(",") if r]
    for r in routes:
        if r not in ROUTE_FUNCTIONS:
            parser.error(f"unknown route {r}")
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="pymil_export_"))
    workdir.mkdir(parents=True, exist_ok=True)

    module = build_decoder_stack(QWEN3_0_6B, args.layers)
    weights = make_weights(module, QWEN3_0_6B, SEED)
    # Warm-up: imports and first-call costs of both sides, untimed.
    warm = compile_stack(module, weights, {})
    warm.save(workdir / "warm_ours.mlpackage")
    program, _ = build_program(warm)
    route_backend(program, workdir / "warm_theirs.mlpackage", {})
    del warm, program
    gc.collect()

    samples: dict[str, list[float]] = {}
    peaks: dict[str, list[float]] = {}
    findings: dict[str, Any] = {}
    sides = ["ours", *routes]

    def keep(record: dict[str, float], prefix: str) -> None:
        for k, v in record.items():
            target = peaks if k.endswith("_mb") else samples
            target.setdefault(f"{prefix}.{k}", []).append(v)

    for rep in range(args.reps):
        order = sides if rep % 2 == 0 else list(reversed(sides))
        for side in order:
            path = workdir / f"{side}.{rep}.mlpackage"
            record: dict[str, float] = {}
            model = compile_stack(module, weights, record)
            if side == "ours":
                with region(record, "save"):
                    model.save(path)
            else:
                # Under the collector policy of our compile and save.
                with region(record, "build"), collection_paused():
                    program, builder = build_program(model)
                parts: dict[str, float] = {}
                with region(record, "serialise"), collection_paused():
                    ROUTE_FUNCTIONS[side](program, path, parts)
                record.update({f"serialise.{k}": v for k, v in parts.items()})
                while LEFT_BEHIND:
                    shutil.rmtree(LEFT_BEHIND.pop(), ignore_errors=True)
                record["save"] = record["build"] + record["serialise"]
                findings["type_mismatches"] = dict(builder.type_mismatches)
                del program, builder
            keep(record, side)
            model.release_prefetch()
            del model
            gc.collect()
            if rep > 0:
                shutil.rmtree(path)  # the first repetition's are checked

    ours_types = package_op_types(workdir / "ours.0.mlpackage")
    checks = {}
    for r in routes:
        theirs_types = package_op_types(workdir / f"{r}.0.mlpackage")
        checks[r] = {
            "same_ops_with_consts": theirs_types == ours_types,
            "same_ops_without_consts": without_consts(theirs_types)
            == without_consts(ours_types),
            "ops": sum(theirs_types.values()),
            "non_const_ops": sum(without_consts(theirs_types).values()),
            **compare_packages(
                workdir / "ours.0.mlpackage", workdir / f"{r}.0.mlpackage"
            ),
        }
        if theirs_types != ours_types:
            checks[r]["difference"] = {
                k: [ours_types.get(k, 0), theirs_types.get(k, 0)]
                for k in sorted(set(ours_types) | set(theirs_types))
                if ours_types.get(k, 0) != theirs_types.get(k, 0)
            }

    result: dict[str, Any] = {
        "layers": args.layers,
        "xdsl_ane": str(Path(xdsl_ane.__file__).parent),
        "reps": args.reps,
        "ours_ops": sum(ours_types.values()),
        "ours_non_const_ops": sum(without_consts(ours_types).values()),
        "best_s": {k: round(min(v), 4) for k, v in sorted(samples.items())},
        "median_s": {k: median(v) for k, v in sorted(samples.items())},
        "memory_mb_max": {k: round(max(v)) for k, v in sorted(peaks.items())},
        "ratio_save_best": {
            r: round(min(samples[f"{r}.save"]) / min(samples["ours.save"]), 2)
            for r in routes
        },
        "ratio_save_theirs_over_ours": {
            r: round(
                statistics.median(samples[f"{r}.save"])
                / statistics.median(samples["ours.save"]),
                2,
            )
            for r in routes
        },
        "ratio_compile_plus_save_theirs_over_ours": {
            r: round(
                (
                    statistics.median(samples[f"{r}.save"])
                    + statistics.median(samples[f"{r}.compile"])
                )
                / (
                    statistics.median(samples["ours.save"])
                    + statistics.median(samples["ours.compile"])
                ),
                2,
            )
            for r in routes
        },
        "ratio_save_paired_median": {
            r: round(
                statistics.median(
                    t / o for t, o in zip(samples[f"{r}.save"], samples["ours.save"])
                ),
                2,
            )
            for r in routes
        },
        "checks": checks,
        **findings,
        "samples_s": {k: [round(x, 4) for x in v] for k, v in sorted(samples.items())},
    }
    print(json.dumps(result))
    if args.output:
        args.output.write_text(json.dumps(result, indent=2) + "\n")
    if args.workdir is None:
        shutil.rmtree(workdir)
    return 0 if all(c["same_ops_with_consts"] for c in checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())

"""One measurement of the bench, run by `bench.run` in a process of its own
(so that peak memory is that measurement's and memory is returned after it):

    python -m bench.measure TASK [--layers N] --workdir DIR --output RESULT.json

Tasks:

- `kernels`: op counts of the training kernels (`compile_training_kernels`)
  and the compile time of the kernel set, stage by stage.
- `sce`: softmax cross-entropy forward/backward lowered for several class
  counts; the op counts must not depend on C.
- `ours`: the Qwen3-0.6B-shaped decoder stack (static weights) through
  `ane-pipeline` pass by pass, the MIL protobuf, the `.mlpackage`.
- `api`: the same through `xdsl_ane.compile(module, weights=...)` + `save`.
- `theirs`: the PyTorch twin (`torch_qwen3.py`) traced and converted with
  coremltools' `ct.convert`, then saved.
- `write_limit`: the stack's weights converted to fp16 and written to a
  file of the weight blob's size: the time no compiler of the model can
  beat by much.
- `numerics`: one input through our interpreter (the rlx program in fp32 and
  the compiled fp16 program) and through PyTorch in fp32.

Every timed region starts after `os.sync()` (so that dirty pages left by the
preparation are not flushed on its clock) and with the process' peak RSS
reset (`/proc/self/clear_refs`), so a region's peak is its own: the inputs it
holds (weights, the module) plus what it allocates. Any failure raises: the
process exits non-zero and `bench.run` stops.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.passes import ModulePass

from bench.common import (
    Region,
    maxrss_mb,
    memory_fields,
    op_counts,
    proto_op_counts,
    region,
)

SEED = 0
"""make_weights' seed, for both compilers."""

INPUT_SEED = 1
"""The input of the numeric comparison."""

SCE_ROWS = 256
SCE_CLASSES = (1000, 32000, 151936)


def pass_stage_names(passes: list[ModulePass]) -> list[str]:
    """Pass names, a repeated pass numbered (`canonicalize`, `canonicalize.2`)."""
    seen: Counter[str] = Counter()
    names = []
    for p in passes:
        seen[p.name] += 1
        names.append(p.name if seen[p.name] == 1 else f"{p.name}.{seen[p.name]}")
    return names


def rounded(stages: dict[str, float]) -> dict[str, float]:
    return {k: round(v, 4) for k, v in stages.items()}


def the_function(module: builtin.ModuleOp) -> func.FuncOp:
    (f,) = (op for op in module.ops if isinstance(op, func.FuncOp))
    return f


# --- training kernels ----------------------------------------------------------------


def measure_kernels(workdir: Path) -> dict[str, Any]:
    """Op counts (consts excluded) of every kernel from
    `compile_training_kernels(QWEN3_0_6B, fp16=True)`, next to the
    hand-written reference's; then the kernel set compiled stage by stage
    (the passes of `ane-pipeline{weights=dynamic, pack-io}`, the protobuf,
    the `.mlpackage`; times summed over the kernels) and through the API."""
    import xdsl_ane
    from xdsl_ane.backend.milproto import module_to_proto
    from xdsl_ane.models import kernels, training
    from xdsl_ane.models.transformer import QWEN3_0_6B, make_weights
    from xdsl_ane.passes.pipeline import pipeline_passes

    preload()
    config = QWEN3_0_6B
    compiled = kernels.compile_training_kernels(config, fp16=True)
    reference = kernels.REFERENCE_OP_COUNTS
    missing = sorted(set(reference) - set(compiled))
    if missing:
        raise RuntimeError(f"compile_training_kernels has no {', '.join(missing)}")

    packages = workdir / "kernels"
    packages.mkdir()
    with region() as r:
        with r.stage("build_rlx"):
            modules = training.build_training_kernels(config, layer=0)
    build = r.stages["build_rlx"]
    # Data for the params the pipeline bakes (RoPE tables, consts); the
    # matmul weights become kernel inputs.
    weights = {
        name: make_weights(module, config, SEED) for name, module in modules.items()
    }
    staged: dict[str, Counter[str]] = {}
    protos = {}
    with region() as r:
        r.stages["build_rlx"] = build
        for name, module in modules.items():
            passes = pipeline_passes("dynamic", fp16=True, pack_io=True, lint=True)
            ctx = Context()
            with r.stage("verify_rlx"):
                module.verify()
            for stage, p in zip(pass_stage_names(passes), passes):
                with r.stage(stage):
                    p.apply(ctx, module)
            with r.stage("verify_mil"):
                module.verify()
            with r.stage("print_proto"):
                proto = module_to_proto(module, weights[name])
            with r.stage("save_mlpackage"):
                proto.save(packages / f"{name}.mlpackage")
            staged[name] = op_counts(module)
            protos[name] = proto
    stages = dict(r.stages)
    memory = memory_fields(r)
    with region() as r:
        for name, proto in protos.items():
            with r.stage("write_weights"):
                proto.write_weights(workdir / "weights" / name)
    write_weights = r.stages["write_weights"]

    sources = training.build_training_kernels(config, layer=0)
    api_dir = workdir / "kernels_api"
    api_dir.mkdir()
    pipeline = "ane-pipeline{weights=dynamic pack-io=true lint=false}"
    with region() as r:
        for name, module in sources.items():
            with r.stage("compile"):
                model = xdsl_ane.compile(
                    module, weights=weights[name], pipeline=pipeline
                )
            with r.stage("save"):
                model.save(api_dir / f"{name}.mlpackage")

    kernels = {}
    for name, kernel in compiled.items():
        counts = kernel.op_counts()
        if counts != staged[name]:
            raise RuntimeError(
                f"{name}: the staged pipeline gives {dict(staged[name])}, "
                f"compile_training_kernels {dict(counts)}"
            )
        kernels[name] = {
            "ops": kernel.op_count(),
            "reference": reference.get(name),
            "proto_ops": sum(proto_op_counts(protos[name].spec).values()),
            "by_type": dict(sorted(counts.items())),
        }
    matched = [kernels[n] for n in reference]
    compile_total = sum(stages.values()) - build
    return {
        "available": True,
        "kernels": kernels,
        "reference_kernels_total": {
            "ops": sum(k["ops"] for k in matched),
            "reference": sum(k["reference"] for k in matched),
        },
        "all_kernels_total_ops": sum(k["ops"] for k in kernels.values()),
        "compile": {
            "kernel_count": len(modules),
            "stages_s": rounded(stages),
            "write_weights_s": round(write_weights, 4),
            "rlx_to_mlpackage_s": round(compile_total, 4),
            "api_compile_s": round(r.stages["compile"], 4),
            "api_save_s": round(r.stages["save"], 4),
            "api_total_s": round(r.total("compile", "save"), 4),
            **memory,
        },
    }


# --- softmax cross-entropy -------------------------------------------------------------


def sce_module(rows: int, classes: int, part: str) -> builtin.ModuleOp:
    """(logits [N, C] f32, labels [N] i32, d_loss [N] f32) -> the loss
    (`forward`), d_logits (`backward`) or both."""
    from xdsl.dialects.builtin import f32, i32

    from xdsl_ane.dialects import rlx
    from xdsl_ane.dialects.functions import build_function
    from xdsl_ane.dialects.typing import tensor

    def body(logits, labels, d_loss):
        results = []
        if part in ("forward", "both"):
            results.append(rlx.SoftmaxCrossEntropyOp(logits, labels).result)
        if part in ("backward", "both"):
            results.append(
                rlx.SoftmaxCrossEntropyBackwardOp(logits, labels, d_loss).result
            )
        return results

    types = [tensor((rows, classes), f32), tensor((rows,), i32), tensor((rows,), f32)]
    return builtin.ModuleOp([build_function("sce", types, body)])


def measure_sce(workdir: Path) -> dict[str, Any]:
    """Ops (consts excluded) after `convert-rlx-to-mil` of the forward, the
    backward and both, for N = 256 and each C; fails unless they are equal
    for every C."""
    from xdsl_ane.passes.rlx_to_mil import ConvertRlxToMilPass

    by_classes: dict[str, Any] = {}
    for classes in SCE_CLASSES:
        entry: dict[str, Any] = {}
        for part in ("forward", "backward", "both"):
            module = sce_module(SCE_ROWS, classes, part)
            start = time.perf_counter()
            ConvertRlxToMilPass().apply(Context(), module)
            seconds = time.perf_counter() - start
            module.verify()
            if any(op.name.startswith("rlx.") for op in module.walk()):
                raise RuntimeError(f"C={classes} {part}: rlx ops left after lowering")
            counts = op_counts(module)
            entry[part] = {
                "ops": sum(counts.values()),
                "by_type": dict(sorted(counts.items())),
                "lowering_s": round(seconds, 4),
            }
        by_classes[str(classes)] = entry
    for part in ("forward", "backward", "both"):
        first = by_classes[str(SCE_CLASSES[0])][part]["by_type"]
        for classes in SCE_CLASSES[1:]:
            other = by_classes[str(classes)][part]["by_type"]
            assert other == first, (
                f"softmax cross-entropy {part}: C={SCE_CLASSES[0]} gives {first}, "
                f"C={classes} gives {other}"
            )
    return {"rows": SCE_ROWS, "classes": by_classes, "equal_across_classes": True}


# --- the Qwen3 decoder stack -----------------------------------------------------------


def qwen3_stack(layers: int) -> tuple[builtin.ModuleOp, dict[str, np.ndarray], float]:
    """The rlx stack, its weights (seed `SEED`) and the seconds the build took."""
    from xdsl_ane.models.transformer import (
        QWEN3_0_6B,
        build_decoder_stack,
        make_weights,
    )

    start = time.perf_counter()
    module = build_decoder_stack(QWEN3_0_6B, layers)
    build = time.perf_counter() - start
    return module, make_weights(module, QWEN3_0_6B, SEED), build


def measure_ours(layers: int, workdir: Path) -> dict[str, Any]:
    """`ane-pipeline` (static weights, fp16, lint) pass by pass on the stack,
    then the MIL protobuf and the `.mlpackage`."""
    from xdsl_ane.backend.milproto import module_to_proto
    from xdsl_ane.passes.pipeline import pipeline_passes

    preload()
    module, weights, build = qwen3_stack(layers)
    passes = pipeline_passes("static", fp16=True, pack_io=False, lint=True)
    ctx = Context()
    with region() as r:
        r.stages["build_rlx"] = build
        with r.stage("verify_rlx"):
            module.verify()
        for stage, p in zip(pass_stage_names(passes), passes):
            with r.stage(stage):
                p.apply(ctx, module)
        with r.stage("verify_mil"):
            module.verify()
        with r.stage("print_proto"):
            proto = module_to_proto(module, weights)
        with r.stage("save_mlpackage"):
            proto.save(workdir / "ours.mlpackage")
    stages = dict(r.stages)
    memory = memory_fields(r)
    with region() as r, r.stage("write_weights"):
        proto.write_weights(workdir / "weights")
    counts = proto_op_counts(proto.spec)
    return {
        "layers": layers,
        "stages_s": rounded(stages),
        "write_weights_s": round(r.stages["write_weights"], 4),
        "rlx_to_mlpackage_s": round(sum(stages.values()) - build, 4),
        "ops": sum(counts.values()),
        "by_type": dict(sorted(counts.items())),
        "module_ops": sum(op_counts(module).values()),
        "weight_bytes": sum(e.nbytes for e in proto.blob.entries),
        **memory,
        "process_maxrss_mb": round(maxrss_mb()),
    }


def measure_api(layers: int, workdir: Path) -> dict[str, Any]:
    """`xdsl_ane.compile(module, weights=...)` then `.save(path)`: from the
    rlx module in memory to the `.mlpackage` on disk."""
    import xdsl_ane

    preload()
    module, weights, _ = qwen3_stack(layers)
    with region() as r:
        with r.stage("compile"):
            model = xdsl_ane.compile(module, weights=weights)
        with r.stage("save"):
            model.save(workdir / "api.mlpackage")
    counts = proto_op_counts(model.spec)
    return {
        "layers": layers,
        "compile_s": round(r.stages["compile"], 4),
        "save_s": round(r.stages["save"], 4),
        "total_s": round(r.total("compile", "save"), 4),
        "ops": sum(counts.values()),
        **memory_fields(r),
        "process_maxrss_mb": round(maxrss_mb()),
    }


def measure_theirs(layers: int, workdir: Path) -> dict[str, Any]:
    """The PyTorch twin with the same weights: `torch.jit.trace`, then
    `ct.convert` (mlprogram, fp16, iOS18, skip_model_load), then `save`."""
    import coremltools as ct
    import torch

    from bench.torch_qwen3 import decoder_stack
    from xdsl_ane.models.transformer import QWEN3_0_6B

    torch.backends.mha.set_fastpath_enabled(False)
    preload()
    _, weights, _ = qwen3_stack(layers)
    model = decoder_stack(QWEN3_0_6B, layers, weights)
    example = torch.zeros(1, QWEN3_0_6B.seq_len, QWEN3_0_6B.hidden_size)
    with region() as trace:
        with trace.stage("trace"), torch.no_grad():
            traced = torch.jit.trace(model, example)
    with region() as r:
        with r.stage("convert"):
            mlmodel = ct.convert(
                traced,
                inputs=[ct.TensorType(shape=tuple(example.shape))],
                convert_to="mlprogram",
                compute_precision=ct.precision.FLOAT16,
                minimum_deployment_target=ct.target.iOS18,
                skip_model_load=True,
            )
        with r.stage("save"):
            mlmodel.save(str(workdir / "theirs.mlpackage"))
    counts = proto_op_counts(mlmodel.get_spec())
    return {
        "layers": layers,
        "trace_s": round(trace.stages["trace"], 4),
        "convert_s": round(r.stages["convert"], 4),
        "save_s": round(r.stages["save"], 4),
        "total_s": round(r.total("convert", "save"), 4),
        "total_with_trace_s": round(
            r.total("convert", "save") + trace.stages["trace"], 4
        ),
        "ops": sum(counts.values()),
        "by_type": dict(sorted(counts.items())),
        "trace_peak_rss_mb": round(trace.peak_rss_mb),
        **memory_fields(r),
        "process_maxrss_mb": round(maxrss_mb()),
    }


def measure_write_limit(layers: int, workdir: Path) -> dict[str, Any]:
    """The limit of writing the weights: the stack's weights (`make_weights`,
    fp32) converted to fp16 and written to one file of the size of our
    weight blob, in the workdir (the disk the packages go to), by one
    thread in one pass — each array cast into a reused fp16 buffer and
    written from it, then zeros up to the blob's size. Also the conversion
    alone."""
    import xdsl_ane

    preload()
    module, weights, _ = qwen3_stack(layers)
    model = xdsl_ane.compile(module, weights=weights)
    blob_bytes = model.proto.blob.next_offset
    del model, module
    arrays = list(weights.values())
    if any(a.dtype != np.float32 for a in arrays):
        raise RuntimeError("make_weights gave a weight that is not float32")
    buffer = np.empty(max(a.size for a in arrays), np.float16)

    def convert(a: np.ndarray) -> np.ndarray:
        out = buffer[: a.size]
        np.copyto(out.reshape(a.shape), a, casting="same_kind")
        return out

    path = workdir / "weights.bin"
    with region() as r, r.stage("limit"):
        with path.open("wb") as f:
            for a in arrays:
                f.write(convert(a))
            f.write(bytes(blob_bytes - f.tell()))
    if path.stat().st_size != blob_bytes:
        raise RuntimeError(f"{path}: {path.stat().st_size} bytes, not {blob_bytes}")
    path.unlink()
    with region() as c, c.stage("convert"):
        for a in arrays:
            convert(a)
    return {
        "layers": layers,
        "limit_s": round(r.stages["limit"], 4),
        "convert_s": round(c.stages["convert"], 4),
        "bytes": blob_bytes,
        "weights": len(arrays),
        **memory_fields(r),
    }


def preload() -> None:
    """Imports what the timed regions would otherwise import on first use
    (coremltools, which imports torch when it is installed, and our
    backend): module import time is left out on both sides."""
    import coremltools.models  # noqa: F401

    import xdsl_ane.backend.mil_text  # noqa: F401
    import xdsl_ane.backend.milproto  # noqa: F401
    import xdsl_ane.backend.mlpackage  # noqa: F401
    import xdsl_ane.passes.ane_lint  # noqa: F401


def relative_error(got: np.ndarray, want: np.ndarray) -> float:
    """‖got − want‖ / ‖want‖ (Frobenius, in float64)."""
    got, want = got.astype(np.float64), want.astype(np.float64)
    return float(np.linalg.norm(got - want) / np.linalg.norm(want))


def measure_numerics(layers: int, workdir: Path) -> dict[str, Any]:
    """One N(0, 1) input through PyTorch (fp32), our interpreter on the rlx
    program (fp32) and our interpreter on the compiled fp16 `[1, C, 1, S]`
    program."""
    import torch

    import xdsl_ane
    from bench.torch_qwen3 import decoder_stack
    from xdsl_ane.interpreter.core import run_function
    from xdsl_ane.models.transformer import QWEN3_0_6B
    from xdsl_ane.passes.layouts import layout_of

    module, weights, _ = qwen3_stack(layers)
    shape = (1, QWEN3_0_6B.seq_len, QWEN3_0_6B.hidden_size)
    x = np.random.default_rng(INPUT_SEED).standard_normal(shape).astype(np.float32)
    model = decoder_stack(QWEN3_0_6B, layers, weights)
    times = Region()
    with times.stage("torch_fp32"), torch.no_grad():
        want = model(torch.from_numpy(x)).numpy()
    del model
    with times.stage("interpret_rlx_fp32"):
        (rlx_out,) = run_function(module, [x], weights)
    compiled = xdsl_ane.compile(module, weights=weights)
    layout = layout_of(shape)
    with times.stage("interpret_compiled_fp16"):
        (ane_out,) = run_function(
            compiled.module,
            [layout.to_ane(x).astype(np.float16)],
            weights,
            the_function(compiled.module).sym_name.data,
        )
    fp16_out = layout.to_logical(ane_out)
    for name, value in (("rlx", rlx_out), ("compiled", fp16_out)):
        if not np.all(np.isfinite(value)):
            raise RuntimeError(f"{name} output is not finite")
    return {
        "layers": layers,
        "input": f"N(0, 1) {list(shape)}, seed {INPUT_SEED}",
        "rlx_fp32_vs_torch_fp32": relative_error(rlx_out, want),
        "rlx_fp32_vs_torch_fp32_max_abs": float(np.max(np.abs(rlx_out - want))),
        "compiled_fp16_vs_torch_fp32": relative_error(fp16_out, want),
        "compiled_fp16_vs_torch_fp32_max_abs": float(
            np.max(np.abs(fp16_out.astype(np.float32) - want))
        ),
        "output_rms": float(np.sqrt(np.mean(want.astype(np.float64) ** 2))),
        "times_s": rounded(times.stages),
    }


TASKS = {
    "kernels": lambda args: measure_kernels(args.workdir),
    "sce": lambda args: measure_sce(args.workdir),
    "ours": lambda args: measure_ours(args.layers, args.workdir),
    "api": lambda args: measure_api(args.layers, args.workdir),
    "theirs": lambda args: measure_theirs(args.layers, args.workdir),
    "write_limit": lambda args: measure_write_limit(args.layers, args.workdir),
    "numerics": lambda args: measure_numerics(args.layers, args.workdir),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", choices=sorted(TASKS))
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--output", type=Path, required=True)
    args = parser.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    result = TASKS[args.task](args)
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""W8A8 of ResNet-50 and MobileNetV2 (issue 46): xdsl-ane's `--compress
w8a8` beside coremltools' `linear_quantize_activations` +
`linear_quantize_weights` on the same `torch.export` program and the same
calibration images: the time of each, each package's error against
torch fp32 (both run by the interpreter), and our estimated latency on
A16 (no faster int8) and A17 Pro (int8 at twice fp16) beside fp16's.

coremltools calibrates by running predictions of its package, which need
macOS; here `coremltools_w8a8` makes those predictions with the
interpreter (its own range rule kept), and the time they take is
reported apart (`theirs_calibration_s`) and left out of its time.

    python -m bench.w8a8 [--models resnet50,mobilenet_v2] [--samples 4]
                         [--output FILE.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import warnings
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.interpreter import Interpreter

from bench import report
from bench.common import run_child

MODELS = ("resnet50", "mobilenet_v2")


class Recorded(Interpreter.Listener):
    """Every named op result of an interpreted program."""

    def __init__(self) -> None:
        self.values: dict[str, np.ndarray] = {}

    def did_interpret_op(self, op, results) -> None:
        for r, v in zip(op.results, results):
            if r.name_hint:
                self.values[r.name_hint] = np.asarray(v)


def coremltools_w8a8(fp_model, fp_path: Path, samples: list[dict], out: Path):
    """coremltools' W8A8 of the saved fp16 package `fp_path` (`fp_model` its
    MLModel) on `samples` (input name -> array), saved at `out`: the
    seconds its calibration's predictions took (made by the interpreter)."""
    import coremltools.optimize as cto
    import coremltools.optimize.coreml._post_training_quantization as ptq
    from coremltools.optimize.coreml.experimental import (
        _post_training_quantization as experimental,
    )

    from xdsl_ane.frontend.milproto import read_compiled
    from xdsl_ane.interpreter.core import run_function

    program = read_compiled(fp_path)
    spent = [0.0]

    def stats(fpmodel, sample_data, calibration_op_group_size=-1):
        start = time.perf_counter()
        ranges: dict = defaultdict(dict)
        outputs = [o.name for o in fpmodel.get_spec().description.output]
        for data in sample_data:
            recorded = Recorded()
            inputs = as_arguments(program.module, list(data.values()))
            results = run_function(
                program.module, inputs, program.weights, listeners=(recorded,)
            )
            # predict returns the model's outputs by name beside the rest
            named = {**data, **recorded.values, **dict(zip(outputs, results))}
            for name, value in named.items():
                experimental._update_tensor_range(name, value, ranges)
        spent[0] += time.perf_counter() - start
        return ranges

    saved = ptq._get_activation_calibration_stats
    ptq._get_activation_calibration_stats = stats
    try:
        activations = cto.coreml.OptimizationConfig(
            global_config=cto.coreml.experimental.OpActivationLinearQuantizerConfig(
                mode="linear_symmetric"
            ),
            op_name_configs=dict.fromkeys(integer_adds(fp_model)),
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            a8 = cto.coreml.experimental.linear_quantize_activations(
                fp_model, activations, samples
            )
            weights = cto.coreml.OptimizationConfig(
                global_config=cto.coreml.OpLinearQuantizerConfig(
                    mode="linear_symmetric"
                )
            )
            cto.coreml.linear_quantize_weights(a8, weights).save(str(out))
    finally:
        ptq._get_activation_calibration_stats = saved
    return spent[0]


def integer_adds(model) -> list[str]:
    """The names of the model's `add` ops of integers (BERT's position ids
    from its input ids): coremltools' activation pass would put a
    quantize before them, which takes floats only, and fail; left out
    (`op_name_configs` None), as our W8A8 leaves them."""
    from coremltools.proto import MIL_pb2

    floats = (MIL_pb2.DataType.FLOAT16, MIL_pb2.DataType.FLOAT32)
    names = []
    for function in model.get_spec().mlProgram.functions.values():
        for op in function.block_specializations[function.opset].operations:
            dtype = op.outputs[0].type.tensorType.dataType
            if op.type == "add" and dtype not in floats:
                names.append(
                    op.attributes["name"].immediateValue.tensor.strings.values[0]
                )
    return names


def as_arguments(module, arrays: list[np.ndarray]) -> list[np.ndarray]:
    """`arrays` in the element types of the module's function's arguments."""
    from xdsl.dialects import func

    from xdsl_ane.dialects.dtypes import numpy_dtype_of

    (f,) = [op for op in module.walk() if isinstance(op, func.FuncOp)]
    types = f.function_type.inputs.data
    return [a.astype(numpy_dtype_of(t.element_type)) for a, t in zip(arrays, types)]


def run_coremltools(path: Path, arrays: list[np.ndarray]) -> list[np.ndarray]:
    """A coremltools package's outputs on `arrays`, by the interpreter."""
    from xdsl_ane.frontend.milproto import read_compiled
    from xdsl_ane.interpreter.core import run_function

    program = read_compiled(path)
    inputs = as_arguments(program.module, arrays)
    return run_function(program.module, inputs, program.weights)


def relative_error(outputs: list[np.ndarray], reference: list[np.ndarray]) -> float:
    got = np.concatenate([np.ravel(o).astype(np.float64) for o in outputs])
    ref = np.concatenate([np.ravel(r).astype(np.float64) for r in reference])
    return float(np.linalg.norm(got - ref) / np.linalg.norm(ref))


def pooled(model):
    """`model` with its pooled features as its one output: coremltools'
    activation quantization fails where an output is also read by another
    op (ResNet-50's last hidden state, which its pooler reads: "cannot
    delete op ... that's block's output"), so both compilers take this."""
    import torch

    class Pooled(torch.nn.Module):
        def __init__(self, model) -> None:
            super().__init__()
            self.model = model

        def forward(self, x):
            return self.model(x).pooler_output

    return Pooled(model).eval()


def measure_case(args: argparse.Namespace) -> dict[str, Any]:
    import coremltools as ct
    import torch

    import xdsl_ane
    from bench.torch_frontend import patch_coremltools
    from bench.torch_models import build
    from xdsl_ane.api.run import run
    from xdsl_ane.estimator import estimate

    model, (x,) = build(args.case)
    model = pooled(model)
    with torch.no_grad():
        program = torch.export.export(model, (x,))
        outputs = torch.utils._pytree.tree_leaves(program.module()(x))
        reference = [t.numpy() for t in outputs]
    rng = np.random.default_rng(2)
    samples = rng.standard_normal((args.samples, *x.shape)).astype(np.float32)
    work = Path(args.workdir)

    start = time.perf_counter()
    ours = xdsl_ane.compile(program, compress="w8a8", calibration={"x": samples})
    ours.save(work / "ours.mlpackage")
    ours_s = time.perf_counter() - start
    ours_outputs = run(work / "ours.mlpackage", arrays={"arg0": x.numpy()})[1]
    fp16 = xdsl_ane.compile(program)

    patch_coremltools()
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fp = ct.convert(
            program.run_decompositions({}),
            convert_to="mlprogram",
            compute_precision=ct.precision.FLOAT16,
            minimum_deployment_target=ct.target.iOS18,
            skip_model_load=True,
        )
    fp.save(str(work / "theirs_fp16.mlpackage"))
    names = [i.name for i in fp.get_spec().description.input]
    feeds = [{names[0]: s} for s in samples]
    calibration_s = coremltools_w8a8(
        fp, work / "theirs_fp16.mlpackage", feeds, work / "theirs.mlpackage"
    )
    theirs_s = time.perf_counter() - start - calibration_s
    theirs_outputs = run_coremltools(work / "theirs.mlpackage", [x.numpy()])
    result = {
        "samples": args.samples,
        "ours_s": round(ours_s, 2),
        "theirs_s": round(theirs_s, 2),
        "theirs_calibration_s": round(calibration_s, 2),
        "ours_over_theirs": round(ours_s / theirs_s, 3),
        "ours_error": round(relative_error(ours_outputs, reference), 5),
        "theirs_error": round(relative_error(theirs_outputs, reference), 5),
        "int8_activations": ours.activations.activations,
    }
    for chip in ("a16", "a17"):
        result[f"ours_ms_{chip}"] = round(estimate(ours, chip).total_ms, 3)
        result[f"fp16_ms_{chip}"] = round(estimate(fp16, chip).total_ms, 3)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--samples", type=int, default=4)
    parser.add_argument("--output", type=Path, help="instead of results.json")
    parser.add_argument("--case", choices=MODELS)
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args(argv)
    if args.case:
        args.output.write_text(json.dumps(measure_case(args), indent=2) + "\n")
        return 0
    section: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="xdsl-ane-w8a8-") as scratch:
        for name in args.models.split(","):
            arguments = ["--case", name, "--samples", str(args.samples)]
            section[name] = run_child("w8a8", arguments, Path(scratch), name)
            print(name, json.dumps(section[name]), flush=True)
    report.output_section("w8a8", section, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The training step's kernels compiled for the ANE, with what a runtime
needs to drive each (`xdsl_ane.models.runtime`): the names and layouts of its
arguments and results, its dynamic weights and its packing manifest; and
their op counts against the hand-written reference."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import builtin, func

from xdsl_ane.dialects import ane
from xdsl_ane.models.configs import LlmConfig
from xdsl_ane.models.training import build_training_kernels, function_of
from xdsl_ane.passes.layouts import Layout, recorded_layout
from xdsl_ane.passes.pipeline import AnePipelinePass

REFERENCE_OP_COUNTS = {
    "attention_forward": 56,
    "output_projection": 8,
    "ffn_forward": 28,
    "ffn_backward_w2": 8,
    "ffn_backward_w13": 15,
    "output_projection_backward": 8,
    "attention_backward_1": 23,
    "attention_backward_2": 22,
    "q_projection_backward": 8,
    "kv_projection_backward": 15,
}
"""Ops (consts excluded) of the hand-written Qwen3-0.6B kernels (ANE_FACTS.md)."""


@dataclass(frozen=True)
class WeightArgument:
    """A dynamic weight input: the weights file's `name` [Cout, Cin] or
    [Cin, Cout] (`stored`) fed as argument `arg` of shape [1, Cin, 1, Cout]."""

    name: str
    arg: int
    shape: tuple[int, ...]
    stored_out_in: bool

    @classmethod
    def of(cls, record: ane.WeightArgAttr) -> WeightArgument:
        return cls(
            record.weight.data, record.arg.data, record.arg_shape, record.stored_out_in
        )

    def ane_value(self, weight: np.ndarray) -> np.ndarray:
        """The argument for `weight` as stored: W[o, i] at [0, i, 0, o]."""
        w = weight.T if self.stored_out_in else weight
        return np.ascontiguousarray(w).reshape(self.shape)


@dataclass
class CompiledKernel:
    """One kernel after `ane-pipeline{weights=dynamic, pack-io}` with what a
    runtime needs to drive it: the names and layouts of its original
    arguments and results, its dynamic weights and how its inputs and
    outputs are packed."""

    name: str
    module: builtin.ModuleOp
    arg_names: list[str]
    arg_layouts: list[Layout]
    result_names: list[str]
    result_layouts: list[Layout]
    weight_args: list[WeightArgument]
    packing: ane.PackingAttr

    @property
    def function(self) -> func.FuncOp:
        return function_of(self.module)

    def op_counts(self) -> Counter[str]:
        """Ops by type, consts excluded."""
        return Counter(
            op.name.removeprefix("mil.")
            for op in self.function.walk()
            if op.name.startswith("mil.") and op.name != "mil.const"
        )

    def op_count(self) -> int:
        return sum(self.op_counts().values())


def result_names(packing: ane.PackingAttr) -> list[str]:
    """The names of the kernel's results before packing, in order (the
    packed tensors keep them)."""
    tensors = [t for buffer in packing.outputs.data for t in buffer.tensors.data]
    return [t.tensor_name.data for t in sorted(tensors, key=lambda t: t.index.data)]


def compile_kernel(
    module: builtin.ModuleOp, fp16: bool = True, lint: bool = True
) -> CompiledKernel:
    """Runs `ane-pipeline{weights=dynamic, pack-io}` (lint non-strict) on a
    clone of a kernel module and collects its records."""
    compiled = module.clone()
    source = function_of(module)
    arg_names = [a.name_hint or f"arg{i}" for i, a in enumerate(source.args)]
    AnePipelinePass(weights="dynamic", fp16=fp16, pack_io=True, lint=lint).apply(
        Context(), compiled
    )
    function = function_of(compiled)
    packing = ane.packing(function)
    assert packing is not None
    return CompiledKernel(
        name=function.sym_name.data,
        module=compiled,
        arg_names=arg_names,
        arg_layouts=[recorded_layout(r) for r in ane.arg_layouts(function)],
        result_names=result_names(packing),
        result_layouts=[recorded_layout(r) for r in ane.result_layouts(function)],
        weight_args=[WeightArgument.of(r) for r in ane.weight_args(function)],
        packing=packing,
    )


def compile_training_kernels(
    config: LlmConfig,
    fp16: bool = True,
    vocab_chunk: int | None = None,
    lint: bool = True,
) -> dict[str, CompiledKernel]:
    """`build_training_kernels` compiled for the ANE: dynamic weights, packed
    I/O, fp16 unless `fp16=False`."""
    return {
        name: compile_kernel(module, fp16, lint)
        for name, module in build_training_kernels(config, 0, vocab_chunk).items()
    }


def op_count_table(kernels: dict[str, CompiledKernel]) -> str:
    """A markdown table of each kernel's ops (consts excluded), next to the
    hand-written reference's count where there is one."""
    lines = ["| kernel | ops | reference |", "|---|---|---|"]
    for name, kernel in kernels.items():
        reference = REFERENCE_OP_COUNTS.get(name)
        lines.append(f"| `{name}` | {kernel.op_count()} | {reference or '–'} |")
    return "\n".join(lines)

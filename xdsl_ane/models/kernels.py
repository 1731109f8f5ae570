"""The training step's kernels compiled for the ANE, with what a runtime
needs to drive each (`xdsl_ane.models.runtime`): the names and layouts of its
arguments and results, its dynamic weights and its packing manifest; and
their op counts against the hand-written reference."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.utils.exceptions import PassFailedException

from xdsl_ane.dialects import mil
from xdsl_ane.errors import XdslAneError
from xdsl_ane.interface import FunctionInterface
from xdsl_ane.models.configs import LlmConfig
from xdsl_ane.models.lora_kernels import (
    LoraShape,
    build_lora_kernels,
    chunk_weight_name,
)
from xdsl_ane.models.train_weights import trainer_config
from xdsl_ane.models.training import build_training_kernels, function_of
from xdsl_ane.models.vocabulary import vocab_chunks
from xdsl_ane.passes.compress_weights import CompressionPlan
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


@dataclass
class CompiledKernel:
    """One kernel after `ane-pipeline{weights=dynamic, pack-io}` with what a
    runtime needs to drive it: the names of its original arguments and
    results, and its interface (their layouts, its dynamic weights and how
    its inputs and outputs are packed)."""

    name: str
    module: builtin.ModuleOp
    arg_names: list[str]
    result_names: list[str]
    interface: FunctionInterface
    weights: dict[str, np.ndarray] = field(default_factory=dict)
    """The kernel's own const data (a package read back: its blob)."""

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


def result_names(interface: FunctionInterface) -> list[str]:
    """The names of the kernel's results before packing, in order (the
    packed tensors keep them)."""
    assert interface.packing is not None
    tensors = [t for buffer in interface.packing.outputs for t in buffer.tensors]
    return [t.name for t in sorted(tensors, key=lambda t: t.index)]


def compile_kernel(
    module: builtin.ModuleOp,
    fp16: bool = True,
    lint: bool = True,
    weights: str = "dynamic",
) -> CompiledKernel:
    """Runs `ane-pipeline{weights=dynamic, pack-io}` (lint non-strict; the
    `weights` mode given) on a clone of a kernel module and collects its
    records."""
    compiled = module.clone()
    source = function_of(module)
    arg_names = [a.name_hint or f"arg{i}" for i, a in enumerate(source.args)]
    AnePipelinePass(weights=weights, fp16=fp16, pack_io=True, lint=lint).apply(
        Context(), compiled
    )
    function = function_of(compiled)
    interface = FunctionInterface.of_function(function)
    return CompiledKernel(
        name=function.sym_name.data,
        module=compiled,
        arg_names=arg_names,
        result_names=result_names(interface),
        interface=interface,
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


def compile_lora_kernels(
    config: LlmConfig,
    lora: LoraShape,
    base: Mapping[str, np.ndarray],
    fp16: bool = True,
    vocab_chunk: int | None = None,
    lint: bool = True,
    compress: CompressionPlan | None = None,
) -> dict[str, CompiledKernel]:
    """`build_lora_kernels` compiled for the ANE (`weights=lora`, packed
    I/O), each holding its constants: the base weights (`base`, by the
    runtime's names) it reads, compressed by `compress` where given."""
    from xdsl_ane.passes.compress_weights import compress_module

    classifier = base.get("lm_head.weight", base["embed_tokens.weight"])
    chunks = vocab_chunks(trainer_config(config), vocab_chunk)
    constants = dict(base) | {
        chunk_weight_name(index): classifier[start : start + size]
        for index, (start, size) in enumerate(chunks)
    }
    kernels = {}
    for name, module in build_lora_kernels(config, lora, vocab_chunk).items():
        kernel = compile_kernel(module, fp16, lint, weights="lora")
        used = {
            op.weight.data
            for op in kernel.module.walk()
            if isinstance(op, mil.ConstOp) and op.weight is not None
        }
        kernel.weights = {n: np.asarray(constants[n], np.float32) for n in sorted(used)}
        if compress is not None:
            try:
                compress_module(kernel.module, compress, kernel.weights)
            except PassFailedException as e:
                message = str(e).splitlines()[0].removeprefix("mil-compress-weights: ")
                raise XdslAneError(f"--compress: {message}") from None
        kernels[name] = kernel
    return kernels


def op_count_table(kernels: dict[str, CompiledKernel]) -> str:
    """A markdown table of each kernel's ops (consts excluded), next to the
    hand-written reference's count where there is one."""
    lines = ["| kernel | ops | reference |", "|---|---|---|"]
    for name, kernel in kernels.items():
        reference = REFERENCE_OP_COUNTS.get(name)
        lines.append(f"| `{name}` | {kernel.op_count()} | {reference or '–'} |")
    return "\n".join(lines)

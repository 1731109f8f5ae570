"""The pipeline of `xdsl_ane.compile`, as an xDSL `PassPipeline` of
registered passes (`driver.apply_passes`): `ane-pipeline` expanded into its
passes (whose errors name `ane-pipeline`), each `ane-lint` a
`CompileLintPass` that keeps its report on the pass instead of printing it,
and `mil-compress-weights` a `CompressWeightsWithData` holding the weights'
data; `PipelineRun` gathers what the passes recorded.

The weights stay beside the module, in the one pass that reads their data:
the passes before it read no weight data (a layer's compile does not depend
on its weights; `api/llm.py` stamps packages on that), and the IR never
holds weight data (rlx.param and mil.const name it)."""

from __future__ import annotations

import dataclasses
from collections.abc import MutableMapping, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.passes import ModulePass

from xdsl_ane.errors import XdslAneError, option
from xdsl_ane.passes.ane_lint import AneLintPass, LintReport
from xdsl_ane.passes.compress_weights import (
    CompressionReport,
    CompressWeightsWithData,
    MilCompressWeightsPass,
)
from xdsl_ane.passes.driver import apply_passes, make_context, parse_pipeline, verify
from xdsl_ane.passes.pipeline import AnePipelinePass
from xdsl_ane.progress import NO_PROGRESS, Progress


@dataclass(frozen=True)
class CompileLintPass(AneLintPass):
    """`ane-lint` as `xdsl_ane.compile` runs it: the report kept on the pass
    (`reports`) rather than printed, and a failure the compile's error,
    naming how to compile anyway, unless `allow_errors`."""

    source: str = "<module>"
    allow_errors: bool = False

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        report = self.lint(op)
        failure = report.failure(self.strict)
        if failure is None or self.allow_errors:
            return
        at = "" if failure.source else f"{self.source}: "
        counts = report.summary().removeprefix("ane-lint: ")
        raise XdslAneError(
            f"{at}{failure.format()} ({counts}; nothing written: "
            f"{option('allow_lint_errors', True)}, or lint=false in the "
            "pipeline, compiles it anyway)"
        )


@dataclass
class PipelineRun:
    """What a compile's pipeline found besides the module it rewrote: the
    report of its last `ane-lint` (None without one) and, where it
    compressed weights, the compression's report and the module as it was
    before the first compression."""

    lint: LintReport | None = None
    compression: CompressionReport | None = None
    uncompressed: builtin.ModuleOp | None = None

    @staticmethod
    def of(passes: Sequence[ModulePass]) -> PipelineRun:
        """What `passes` (those of `compile_passes`, run) recorded."""
        run = PipelineRun()
        for p in passes:
            if isinstance(p, AneLintPass) and p.reports:
                run.lint = p.reports[-1]
            if not isinstance(p, CompressWeightsWithData):
                continue
            if run.uncompressed is None and p.uncompressed:
                run.uncompressed = p.uncompressed[0]
            for report in p.reports:
                if run.compression is None:
                    run.compression = CompressionReport(list(report.weights))
                else:
                    run.compression.weights += report.weights
        return run


def compile_passes(
    spec: str,
    source: str,
    allow_lint_errors: bool,
    weights: MutableMapping[str, np.ndarray] | None,
) -> list[tuple[str, ModulePass]]:
    """The passes of `spec` as a compile runs them, each with the name its
    errors carry: `ane-pipeline` as its passes, each `ane-lint` a
    `CompileLintPass`, and with `weights`, each `mil-compress-weights` a
    `CompressWeightsWithData` of them."""

    def as_compiled(p: ModulePass, first_compression: bool) -> ModulePass:
        if isinstance(p, AneLintPass):
            return CompileLintPass(
                strict=p.strict,
                chip=p.chip,
                source=source,
                allow_errors=allow_lint_errors,
            )
        if isinstance(p, MilCompressWeightsPass) and weights is not None:
            options = {
                f.name: getattr(p, f.name) for f in dataclasses.fields(p) if f.init
            }
            return CompressWeightsWithData(
                **options, weights=weights, keep_uncompressed=first_compression
            )
        return p

    passes: list[tuple[str, ModulePass]] = []
    for p in parse_pipeline(spec).passes:
        expanded = p.passes() if isinstance(p, AnePipelinePass) else [p]
        for q in expanded:
            first = not any(isinstance(r, MilCompressWeightsPass) for _, r in passes)
            passes.append((p.name, as_compiled(q, first)))
    return passes


def run_pipeline(
    module: builtin.ModuleOp,
    spec: str,
    source: str,
    allow_lint_errors: bool,
    progress: Progress = NO_PROGRESS,
    weights: MutableMapping[str, np.ndarray] | None = None,
) -> PipelineRun:
    """Applies the pipeline `spec` to `module` as `xdsl_ane.compile` does
    (`compile_passes`): each `ane-lint` keeps its report, not printed, and
    fails the compile unless `allow_lint_errors`; `mil-compress-weights`
    compresses `weights`. Returns what the passes recorded."""
    passes = compile_passes(spec, source, allow_lint_errors, weights)
    progress.expect(len(passes))
    apply_passes(module, passes, make_context(), source, progress)
    verify(module, f"{source}: after '{spec}'")
    return PipelineRun.of([p for _, p in passes])

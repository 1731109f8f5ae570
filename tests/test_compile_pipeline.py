"""The pipeline of `xdsl_ane.compile` (`passes/compile_pipeline.py`): an
xDSL `PassPipeline` of the registered passes, `ane-pipeline` expanded into
its own, each `ane-lint` keeping its report on the pass rather than
printing it, and `mil-compress-weights` holding the compile's weights."""

from __future__ import annotations

import numpy as np
import pytest
from tiny_decoder import TINY_DECODER
from xdsl.passes import PassPipeline

import xdsl_ane
from xdsl_ane.errors import XdslAneError
from xdsl_ane.frontend.mlir import parse_module_text
from xdsl_ane.models.transformer import build_decoder_layer, make_weights
from xdsl_ane.passes.ane_lint import AneLintPass
from xdsl_ane.passes.compile_pipeline import (
    CompileLintPass,
    compile_passes,
    run_pipeline,
)
from xdsl_ane.passes.compress_weights import CompressWeightsWithData
from xdsl_ane.passes.driver import make_context
from xdsl_ane.passes.pipeline import AnePipelinePass

FP32_RELU = """
func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = rlx.relu %x : tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}
"""


def test_lint_pass_prints_and_keeps_each_report(capsys):
    """Under a plain PassPipeline (xdsl-opt's), the lint prints its report
    and keeps it on the pass, where it is no option of the pass."""
    layer = build_decoder_layer(TINY_DECODER)
    weights = make_weights(layer, TINY_DECODER, 0)
    module = xdsl_ane.compile(layer, weights=weights).module
    lint = AneLintPass()
    PassPipeline((lint, lint)).apply(make_context(), module)
    assert len(lint.reports) == 2
    (report, _) = lint.reports
    assert report.functions == 1 and report.errors == 0
    assert report.summary() in capsys.readouterr().err
    assert "reports" not in str(lint.spec(include_default=True))


def test_ane_pipeline_runs_as_its_passes_named_by_it():
    passes = compile_passes("ane-pipeline", "m.mlir", False, None)
    assert {name for name, _ in passes} == {"ane-pipeline"}
    ours = [type(p) for _, p in passes]
    theirs = [type(p) for p in AnePipelinePass().passes()]
    assert ours[:-1] == theirs[:-1]
    assert ours[-1] is CompileLintPass and theirs[-1] is AneLintPass


def test_compression_holds_the_weights_and_the_first_keeps_its_input():
    weights = {"w": np.zeros((4, 4), np.float32)}
    spec = "ane-pipeline,mil-compress-weights{mode=int8},mil-compress-weights"
    passes = [p for _, p in compile_passes(spec, "m.mlir", False, weights)]
    first, second = passes[-2:]
    assert isinstance(first, CompressWeightsWithData) and first.mode == "int8"
    assert first.weights is weights and first.keep_uncompressed
    assert isinstance(second, CompressWeightsWithData) and second.mode == "lut4"
    assert second.weights is weights and not second.keep_uncompressed


def test_the_lint_report_is_the_compiles_and_fails_it_unless_allowed():
    program = parse_module_text(FP32_RELU, "m.mlir")
    strict = "ane-pipeline{fp16=false strict=true}"
    with pytest.raises(XdslAneError, match="ane-lint: warning: .*allow_lint_errors"):
        run_pipeline(program.clone(), strict, "m.mlir", False)
    run = run_pipeline(program.clone(), strict, "m.mlir", True)
    assert run.lint is not None and run.lint.warnings > 0
    assert run.compression is None and run.uncompressed is None


def test_the_pipeline_folds_by_the_mil_patterns_in_a_fresh_process():
    """ane-pipeline's passes, run one by one in a bare xDSL Context in a
    process that registered nothing before (as the bench times them),
    canonicalize with the mil dialect's patterns: the Qwen3 attention
    block ends with as many ops as with patterns registered up front."""
    import subprocess
    import sys

    script = """
from xdsl.context import Context
from xdsl_ane.dialects.mil.base import CANONICALIZATION_PATTERNS
from xdsl_ane.models.configs import QWEN3_0_6B
from xdsl_ane.models.transformer import build_attention_block
from xdsl_ane.passes.pipeline import pipeline_passes
assert not CANONICALIZATION_PATTERNS
module = build_attention_block(QWEN3_0_6B.with_(seq_len=64))
ctx = Context()
for p in pipeline_passes(lint=False):
    p.apply(ctx, module)
print(sum(1 for op in module.walk() if op.name != "mil.const"))
"""
    fresh = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    from xdsl.context import Context

    from xdsl_ane.models.configs import QWEN3_0_6B
    from xdsl_ane.models.transformer import build_attention_block
    from xdsl_ane.passes.canonicalization import register

    register()
    module = build_attention_block(QWEN3_0_6B.with_(seq_len=64))
    AnePipelinePass(lint=False).apply(Context(), module)
    here = sum(1 for op in module.walk() if op.name != "mil.const")
    assert int(fresh.stdout.strip().splitlines()[-1]) == here

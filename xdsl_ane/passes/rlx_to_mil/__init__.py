"""`convert-rlx-to-mil`: lowers every rlx op to ops of the mil dialect
(iOS18 opset).

One pattern per rlx op, in a module named after the op's family in
xdsl_ane.dialects.rlx: elementwise.py (sources, elementwise, compare,
where, cast), shape.py (matmul, shape ops), reduction.py (reductions,
softmax, argmax, running sums and sorts), normalization.py (RMSNorm, LayerNorm), spatial_norm.py
(batch_norm, group_norm), pooling.py (max_pool, avg_pool), convolution.py
(conv, conv_transpose), attention.py
(RoPE, attention and their backward ops), loss.py (softmax cross-entropy),
training.py (RMSNorm and activation backward), resampling.py (upsample,
pad, pixel_shuffle, pixel_unshuffle), activations.py (hardswish,
hardsigmoid, leaky_relu, elu, clamp), quantization.py and
state.py (states, slice_update); each family's lit test is
tests/filecheck/passes/convert-rlx-to-mil/<family>.mlir. Grouped-query
attention is first tiled to H key/value heads with the `rlx-gqa-tile`
patterns. An rlx op left over afterwards is reported as a diagnostic
naming it."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import GreedyRewritePatternApplier, PatternRewriteWalker
from xdsl.utils.exceptions import PassFailedException

from xdsl_ane.locations import location_keeper, where
from xdsl_ane.passes.gqa_tile import RlxGqaTilePass
from xdsl_ane.passes.rlx_to_mil import (
    activations,
    attention,
    convolution,
    elementwise,
    loss,
    normalization,
    pooling,
    quantization,
    reduction,
    resampling,
    shape,
    spatial_norm,
    state,
    training,
)

PATTERNS = (
    *elementwise.PATTERNS,
    *shape.PATTERNS,
    *reduction.PATTERNS,
    *normalization.PATTERNS,
    *spatial_norm.PATTERNS,
    *pooling.PATTERNS,
    *convolution.PATTERNS,
    *attention.PATTERNS,
    *loss.PATTERNS,
    *training.PATTERNS,
    *resampling.PATTERNS,
    *activations.PATTERNS,
    *quantization.PATTERNS,
    *state.PATTERNS,
)


@dataclass(frozen=True)
class ConvertRlxToMilPass(ModulePass):
    """Lowers every rlx op to mil ops; the result contains no rlx op."""

    name = "convert-rlx-to-mil"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        RlxGqaTilePass().apply(ctx, op)
        PatternRewriteWalker(
            GreedyRewritePatternApplier(list(PATTERNS)),
            apply_recursively=False,
            listener=location_keeper(),
        ).rewrite_module(op)
        for inner in op.walk():
            if inner.name.startswith("rlx."):
                raise PassFailedException(
                    f"{where(inner)}convert-rlx-to-mil: cannot lower {inner.name} "
                    f"(no pattern matched its operands and properties)"
                )

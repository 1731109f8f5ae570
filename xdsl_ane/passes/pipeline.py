"""`ane-pipeline`: rlx in, ANE-ready MIL out.

    convert-rlx-to-mil, mil-ane-layout{weights}, canonicalize, cse,
    [mil-fp16, canonicalize, cse], [mil-pack-io, canonicalize], mil-io-types,
    ane-lint

`convert-rlx-to-mil` tiles grouped-query attention (`rlx-gqa-tile`) itself,
as its attention patterns need it, so the pipeline does not run it again.
`cse` (xDSL's) merges the identical layout ops that several consumers of
one value get (the q, k and v projections of one activation)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.passes import ModulePass, PassPipeline
from xdsl.transforms.canonicalize import CanonicalizePass
from xdsl.transforms.common_subexpression_elimination import (
    CommonSubexpressionElimination,
)

from xdsl_ane.passes.ane_layout import MilAneLayoutPass, WeightMode, weight_mode
from xdsl_ane.passes.canonicalization import knowing_mil
from xdsl_ane.passes.io_types import MilIoTypesPass
from xdsl_ane.passes.pack_io import MilPackIoPass
from xdsl_ane.passes.rlx_to_mil import ConvertRlxToMilPass


def pipeline_passes(
    weights: WeightMode = "static",
    fp16: bool = True,
    pack_io: bool = False,
    lint: bool = True,
    strict: bool = False,
) -> list[ModulePass]:
    """The passes of `ane-pipeline` with these options, in order. Its
    canonicalize passes fold mil ops by the dialect's patterns, which are
    registered here (whatever context the passes then run in)."""
    from xdsl_ane.passes.ane_lint import AneLintPass
    from xdsl_ane.passes.canonicalization import register
    from xdsl_ane.passes.fp16 import MilFp16Pass

    register()

    passes: list[ModulePass] = [
        ConvertRlxToMilPass(),
        MilAneLayoutPass(weights=weights),
        CanonicalizePass(),
        CommonSubexpressionElimination(),
    ]
    if fp16:
        passes += [MilFp16Pass(), CanonicalizePass(), CommonSubexpressionElimination()]
    if pack_io:
        # Canonicalize again: the packing's slices and view reshapes merge
        # with the kernel's own reshapes.
        passes += [MilPackIoPass(), CanonicalizePass()]
    passes.append(MilIoTypesPass())
    if lint:
        passes.append(AneLintPass(strict=strict))
    return passes


@dataclass(frozen=True)
class AnePipelinePass(ModulePass):
    """The whole compilation from rlx to ANE-form MIL: lowering (GQA tiling
    first), `[1, C, 1, S]` layout with static (1×1 conv) or dynamic
    (weights as inputs) weights, canonicalization, fp16 and the ANE lint."""

    name = "ane-pipeline"

    weights: str = "static"
    """A `WeightMode` (`str` for xDSL's option parser; see `weight_mode`)."""
    fp16: bool = True
    pack_io: bool = False
    lint: bool = True
    strict: bool = False

    def passes(self) -> list[ModulePass]:
        """The passes this one runs, in order."""
        weights = weight_mode(self.weights, self.name)
        return pipeline_passes(weights, self.fp16, self.pack_io, self.lint, self.strict)

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        ctx = knowing_mil(ctx)  # canonicalize folds through the mil dialect
        PassPipeline(tuple(self.passes())).apply(ctx, op)

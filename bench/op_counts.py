"""Op counts, by op type, of the Qwen3-0.6B attention block and decoder layer
after each stage of the pipeline (consts excluded).

    python -m bench.op_counts            # prints the README's markdown table
"""

from __future__ import annotations

from collections import Counter

from xdsl.context import Context
from xdsl.transforms.canonicalize import CanonicalizePass
from xdsl.transforms.common_subexpression_elimination import (
    CommonSubexpressionElimination,
)

from bench.common import op_counts
from xdsl_ane.models.transformer import (
    QWEN3_0_6B,
    build_attention_block,
    build_decoder_layer,
)
from xdsl_ane.passes.ane_layout import MilAneLayoutPass
from xdsl_ane.passes.canonicalization import knowing_mil
from xdsl_ane.passes.rlx_to_mil import ConvertRlxToMilPass

STAGES = ("lowered", "layout", "canonicalized")


def stage_counts(build, weights: str = "static") -> dict[str, Counter[str]]:
    """Counts after convert-rlx-to-mil, after mil-ane-layout and after
    canonicalize + cse."""
    module = build(QWEN3_0_6B)
    ctx = knowing_mil(Context())  # the mil patterns canonicalize folds by
    ConvertRlxToMilPass().apply(ctx, module)
    counts = {"lowered": op_counts(module)}
    MilAneLayoutPass(weights=weights).apply(ctx, module)
    counts["layout"] = op_counts(module)
    CanonicalizePass().apply(ctx, module)
    CommonSubexpressionElimination().apply(ctx, module)
    counts["canonicalized"] = op_counts(module)
    return counts


def table(name: str, counts: dict[str, Counter[str]]) -> str:
    ops = sorted(set().union(*counts.values()))
    lines = [
        f"| {name} | " + " | ".join(STAGES) + " |",
        "|---|" + "---|" * len(STAGES),
    ]
    for op in ops:
        lines.append(
            f"| `{op}` | " + " | ".join(str(counts[s][op]) for s in STAGES) + " |"
        )
    lines.append(
        "| **total** | "
        + " | ".join(str(sum(counts[s].values())) for s in STAGES)
        + " |"
    )
    return "\n".join(lines)


def tables() -> str:
    parts = []
    for title, build in (
        ("attention block", build_attention_block),
        ("decoder layer", build_decoder_layer),
    ):
        for weights in ("static", "dynamic"):
            parts.append(
                table(f"{title}, {weights} weights", stage_counts(build, weights))
            )
    return "\n\n".join(parts)


if __name__ == "__main__":
    print(tables())

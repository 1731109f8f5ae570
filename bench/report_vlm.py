"""The vision-language section of the bench's generated figures
(`bench.vlm`): a SmolVLM-shaped vision package beside coremltools'."""

from __future__ import annotations

from typing import Any


def vlm_table(section: dict[str, Any]) -> str:
    """Our vision package beside `ct.convert` of the same program: time,
    peak RSS, ops, and our estimate on M4 and M2."""
    ours, theirs = section["ours"], section["theirs"]
    return "\n".join(
        [
            f"{section['model']}: the vision tower and connector as compile-llm "
            "builds its vision package (transformers' modules, the patch "
            "embedding as patches and a linear layer), exported once and "
            "compiled, fp16, by each, each in a process of its own.",
            "",
            "| compiler | compile+save s | peak RSS MB | ops | est. ms (m4) "
            "| est. ms (m2) |",
            "|---|---|---|---|---|---|",
            f"| xdsl-ane | {ours['total_s']:.1f} | {ours['peak_rss_mb']:.0f} | "
            f"{ours['ops']} | {ours['est_ms_m4']:.2f} | {ours['est_ms_m2']:.2f} |",
            theirs_row(theirs),
            "",
            versus(section),
        ]
    )


def theirs_row(theirs: dict[str, Any]) -> str:
    if "failed" in theirs:
        return (
            f"| coremltools `ct.convert` | fails after {theirs['total_s']:.1f} s: "
            f"{theirs['failed']} | – | – | – | – |"
        )
    return (
        f"| coremltools `ct.convert` | {theirs['total_s']:.1f} | "
        f"{theirs['peak_rss_mb']:.0f} | {theirs['ops']} | – | – |"
    )


def versus(section: dict[str, Any]) -> str:
    if "ours_over_theirs" not in section:
        return "coremltools does not convert this program."
    return f"Ours over coremltools': {section['ours_over_theirs']:.2f} of its time."

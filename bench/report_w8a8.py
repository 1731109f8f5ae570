"""The W8A8 section of the bench's generated figures (`bench.w8a8`): one
row per model."""

from __future__ import annotations

from typing import Any

ORDER = (("resnet50", "ResNet-50"), ("mobilenet_v2", "MobileNetV2"))


def w8a8_table(section: dict[str, Any]) -> str:
    """Our `--compress w8a8` beside coremltools' W8A8 of the same program
    and calibration images: time, errors against torch fp32, and our
    estimated latency on A16 and A17 Pro beside fp16's."""
    samples = next(iter(section.values()), {}).get("samples", "?")
    lines = [
        "The same `torch.export` program (224×224, random weights) and "
        f"{samples} calibration images through `compile --compress w8a8` "
        "(calibration included in its time) and through coremltools' "
        "`ct.convert` + `linear_quantize_activations` + "
        "`linear_quantize_weights` (linear_symmetric); coremltools calibrates "
        "by predictions, which need macOS: here the interpreter makes them, "
        "and their seconds are left out of its time. Errors: both packages "
        "run by the interpreter against torch fp32 (relative L2). Estimates: "
        "our W8A8 package beside our fp16 one (A16 computes int8 at its fp16 "
        "rate; A17 Pro at twice).",
        "",
        "| model | ours s | coremltools s (its calibration s) | ours / theirs "
        "| our error | their error | int8 activations | A16 ms W8A8 / fp16 "
        "| A17 Pro ms W8A8 / fp16 |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, label in ORDER:
        row = section.get(name)
        if row is None:
            continue
        lines.append(
            f"| {label} | {row['ours_s']:.1f} | {row['theirs_s']:.1f} "
            f"({row['theirs_calibration_s']:.1f}) | {row['ours_over_theirs']:.2f} | "
            f"{row['ours_error']:.4f} | {row['theirs_error']:.4f} | "
            f"{row['int8_activations']} | {row['ours_ms_a16']:.3f} / "
            f"{row['fp16_ms_a16']:.3f} | {row['ours_ms_a17']:.3f} / "
            f"{row['fp16_ms_a17']:.3f} |"
        )
    return "\n".join(lines)

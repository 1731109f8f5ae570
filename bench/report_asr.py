"""Whisper's section of the bench's generated figures (`bench.asr`): one
row per model shape, and the numpy front end's time."""

from __future__ import annotations

from typing import Any

ORDER = ("base", "small")


def asr_table(section: dict[str, Any]) -> str:
    """compile-asr's defaults on each shape beside coremltools converting
    its encoder; the estimates on the M2."""
    front = section.get("front_end", {})
    lines = [
        "Random bf16 checkpoints in transformers' names and shapes (vocabulary "
        "51865, 80 mel bins), compiled by compile-asr's defaults (context 448) "
        "in a process of their own: both packages; coremltools: its encoder "
        "alone (torch.jit.trace, `ct.convert` to an fp16 ML program, after "
        "transformers loads the checkpoint). Estimates on the M2: the encoder "
        "per 30-second window, the decoder's prefill (the cross-attention "
        "states filled) and decode per token.",
        "",
        "| model | compile-asr s | peak RSS MB | written MB | coremltools "
        "encoder s | its peak RSS MB | est. encode ms | est. prefill ms | "
        "est. decode ms/token |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name in ORDER:
        row = section.get(name)
        if row is None:
            continue
        ours, theirs = row["ours"], row["theirs"]
        lines.append(
            f"| {row['model']} | {ours['compile_and_write_s']:.1f} | "
            f"{ours['peak_rss_mb']:.0f} | {ours['written_mb']:.0f} | "
            f"{theirs['encoder_convert_s']:.1f} | {theirs['peak_rss_mb']:.0f} | "
            f"{ours['encode_ms_m2']:.1f} | {ours['prefill_ms_m2']:.1f} | "
            f"{ours['decode_ms_m2']:.1f} |"
        )
    if "log_mel_ms" in front:
        lines += [
            "",
            f"The log-mel front end in numpy (the runtime's): {front['log_mel_ms']:.1f} "
            "ms per 30-second window of 80 bins on this machine's CPU.",
        ]
    return "\n".join(lines)

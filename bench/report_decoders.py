"""The new decoders' section of the bench's generated figures
(`bench.decoders`): one row per model."""

from __future__ import annotations

from typing import Any

ORDER = ("olmoe", "lfm2", "qwen3_5", "llama_3b")


def decoders_table(section: dict[str, Any]) -> str:
    """compile-llm's defaults on each model (routed experts for the MoE):
    time, peak RSS, bytes written against the fp16 weights, the largest
    blob, and the estimated decode tokens/s on the M4."""
    lines = [
        "Random bf16 checkpoints in transformers' names and shapes, compiled "
        "with compile-llm's defaults (context 512, prefill 64; split at 1 GB "
        "packages; the mixture of experts with `--experts routed`, its "
        "experts in OUT.experts.bin) in a process of their own. Decode: the "
        "estimate of the decode functions on the M4, one token per call "
        "(routed: the k picked experts' weights only); the bytes its ops "
        "move (weights, activations, the KV cache) over the fp16 bytes of the "
        "parameters a token uses. Load: the machine's one-minute load average "
        "after the row (other processes share its 2 cores; the compile time "
        "grows with it).",
        "",
        "| model | compile+save s | peak RSS MB | written MB | over the fp16 "
        "weights | largest blob MB | est. decode ms (m4) | est. tokens/s (m4) "
        "| decode bytes / active fp16 | load |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in ORDER:
        row = section.get(name)
        if row is None:
            continue
        lines.append(
            f"| {row['model']} | {row['compile_and_write_s']:.1f} | "
            f"{row['peak_rss_mb']:.0f} | {row['written_mb']:.0f} | "
            f"{row['written_over_fp16_weights']:.3f} | {row['largest_blob_mb']:.0f} | "
            f"{row['decode_ms_m4']:.1f} | {row['decode_tokens_per_s_m4']:.1f} | "
            f"{row.get('decode_bytes_over_active', float('nan')):.2f} | "
            f"{load_text(row)} |"
        )
    return "\n".join(lines)


def load_text(row: dict[str, Any]) -> str:
    """The row's load average, or "–" where it was not recorded."""
    load = row.get("load_average")
    return "–" if load is None else f"{load:.1f}"

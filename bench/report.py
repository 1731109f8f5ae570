"""The markdown tables of bench/README.md's generated section, from the
results `run.py` writes to bench/results.json:

    python bench/report.py [bench/results.json]     # prints the tables
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

NONE = "–"


def table(header: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def seconds(value: float | None) -> str:
    if value is None:
        return NONE
    return f"{value:.3f}" if value < 10 else f"{value:.2f}"


def runs(values: list[float]) -> str:
    return ", ".join(f"{v:.2f}" for v in values)


def machine_line(r: dict[str, Any]) -> str:
    m = r["machine"]
    packages = ", ".join(f"{name} {version}" for name, version in m["packages"].items())
    dirty = ", with uncommitted changes" if m["git_dirty"] else ""
    return (
        f"Measured {r['date']} on {m['cpu']}, {m['cores']} cores, "
        f"{m['memory_gib']} GiB, {m['os']}; Python {m['python']}; {packages}; "
        f"commit {m['git_commit']}{dirty}. Times are the fastest of "
        f"{r['settings']['repeats']} runs; the bench took {r['bench_wall_s']:.0f} s."
    )


def summary(r: dict[str, Any]) -> str:
    c = r["comparison"]
    w = r["write_limit"]
    ratio = r["compile_time_ratio_vs_coremltools"]
    over = r["compile_time_over_write_limit"]
    verdict = "below" if c["below_target"] else "not below"
    within = "within" if w["within_target"] else "not within"
    rows = [
        [
            f"compile to a saved .mlpackage, {c['layers']} layers (s)",
            seconds(c["ours_s"]),
            seconds(c["coremltools_s"]),
            f"**{ratio}**",
        ],
        [
            "the same, theirs with `torch.jit.trace` (s)",
            seconds(c["ours_s"]),
            seconds(c["coremltools_with_trace_s"]),
            r["compile_time_ratio_vs_coremltools_with_trace"],
        ],
        [
            "non-const ops",
            c["ours_ops"],
            c["coremltools_ops"],
            f"{c['ours_ops'] / c['coremltools_ops']:.3f}",
        ],
        [
            "peak RSS while compiling (MiB)",
            c["ours_peak_rss_mb"],
            c["coremltools_peak_rss_mb"],
            f"{c['ours_peak_rss_mb'] / c['coremltools_peak_rss_mb']:.3f}",
        ],
        [
            f"over the write limit ({seconds(w['limit_s'])} s: "
            f"{w['bytes'] / 1e6:.0f} MB of weights to fp16 and to disk)",
            f"**{over}**",
            w["coremltools_over_write_limit"],
            NONE,
        ],
    ]
    return (
        table(
            ["Qwen3-0.6B-shaped stack, seq 256", "xdsl-ane", "coremltools", "ratio"],
            rows,
        )
        + f"\n\n`compile_time_ratio_vs_coremltools` = {ratio}: {verdict} the "
        f"target of {c['target']}. `compile_time_over_write_limit` = {over}: "
        f"{within} the target of {w['target']}."
    )


def kernel_tables(r: dict[str, Any]) -> str:
    k = r["kernel_ops"]
    if not k["available"]:
        return f"**Not available**: {k['reason']}."
    reference = {n: e for n, e in k["kernels"].items() if e["reference"] is not None}
    extra = {n: e for n, e in k["kernels"].items() if e["reference"] is None}
    rows = [
        [f"`{n}`", e["ops"], e["reference"], f"{e['ops'] - e['reference']:+d}"]
        for n, e in reference.items()
    ]
    total = k["reference_kernels_total"]
    rows.append(
        [
            "**total**",
            total["ops"],
            total["reference"],
            f"{total['ops'] - total['reference']:+d}",
        ]
    )
    extra_rows = [[f"`{n}`", e["ops"]] for n, e in extra.items()]
    extra_rows.append(["**all kernels**", k["all_kernels_total_ops"]])
    return (
        table(["kernel", "xdsl-ane", "hand-written", "difference"], rows)
        + "\n\nKernels the hand-written pipeline ran on the CPU:\n\n"
        + table(["kernel", "xdsl-ane"], extra_rows)
    )


def sce_table(r: dict[str, Any]) -> str:
    s = r["sce_ops"]
    rows = [
        [f"{int(c):,}", e["forward"]["ops"], e["backward"]["ops"], e["both"]["ops"]]
        for c, e in s["classes"].items()
    ]
    return (
        table(["C", "forward", "backward", "forward + backward"], rows)
        + f"\n\nN = {s['rows']}; equal for every C (asserted by the bench)."
    )


def stage_table(r: dict[str, Any]) -> str:
    ct = r["compile_time"]
    columns: list[tuple[str, dict[str, Any] | None]] = []
    kernels = ct["training_kernels"]
    if kernels.get("available", True):
        columns.append(
            (f"training kernels ({kernels['kernel_count']}, summed)", kernels)
        )
    for key, model in ct.items():
        if key.startswith("qwen3_"):
            columns.append((f"Qwen3 {model['ours']['layers']} layers", model))
    stages: list[str] = []
    for _, entry in columns:
        ours = entry if "stages_s" in entry else entry["ours"]
        stages += [s for s in ours["stages_s"] if s not in stages]

    def ours_of(entry: dict[str, Any]) -> dict[str, Any]:
        return entry if "stages_s" in entry else entry["ours"]

    def api_of(entry: dict[str, Any]) -> dict[str, Any]:
        if "stages_s" in entry:
            return {
                "compile_s": entry["api_compile_s"],
                "save_s": entry["api_save_s"],
                "total_s": entry["api_total_s"],
            }
        return entry["api"]

    rows = [
        [f"`{s}`"] + [seconds(ours_of(e)["stages_s"].get(s)) for _, e in columns]
        for s in stages
    ]
    rows.append(
        ["**rlx → .mlpackage**"]
        + [f"**{seconds(ours_of(e)['rlx_to_mlpackage_s'])}**" for _, e in columns]
    )
    rows.append(
        ["`write_weights` (alone; `save_mlpackage` does it too)"]
        + [seconds(ours_of(e)["write_weights_s"]) for _, e in columns]
    )
    rows.append(
        ["API `xdsl_ane.compile`"]
        + [seconds(api_of(e)["compile_s"]) for _, e in columns]
    )
    rows.append(
        ["API `save` (prints the protobuf, then saves)"]
        + [seconds(api_of(e)["save_s"]) for _, e in columns]
    )
    rows.append(
        ["**API total**"] + [f"**{seconds(api_of(e)['total_s'])}**" for _, e in columns]
    )
    rows.append(
        ["RSS before → peak, staged (MiB)"]
        + [
            f"{ours_of(e)['rss_before_mb']} → {ours_of(e)['peak_rss_mb']}"
            for _, e in columns
        ]
    )
    return table(["stage (s)"] + [name for name, _ in columns], rows)


def side_by_side(r: dict[str, Any]) -> str:
    models = [m for k, m in r["compile_time"].items() if k.startswith("qwen3_")]
    header = ["Qwen3 stack, seq 256"]
    for m in models:
        layers = m["ours"]["layers"]
        header += [
            f"xdsl-ane, {layers} layers",
            f"coremltools, {layers} layers",
            f"ratio, {layers} layers",
        ]

    def row(name: str, ours: Any, theirs: Any, vs: str | None = None) -> list[Any]:
        cells: list[Any] = [name]
        for m in models:
            cells += [ours(m["api"]), theirs(m["theirs"])]
            cells.append(NONE if vs is None else f"{m['vs_coremltools'][vs]:.3f}")
        return cells

    rows = [
        row("`torch.jit.trace` (s)", lambda a: NONE, lambda t: seconds(t["trace_s"])),
        row(
            "compile: `xdsl_ane.compile` / `ct.convert` (s)",
            lambda a: seconds(a["compile_s"]),
            lambda t: seconds(t["convert_s"]),
            "compile_s",
        ),
        row(
            "`save` (s)",
            lambda a: seconds(a["save_s"]),
            lambda t: seconds(t["save_s"]),
            "save_s",
        ),
        row(
            "**total, without tracing (s)**",
            lambda a: f"**{seconds(a['total_s'])}**",
            lambda t: f"**{seconds(t['total_s'])}**",
            "total_s",
        ),
        row(
            "total with tracing (s)",
            lambda a: seconds(a["total_s"]),
            lambda t: seconds(t["total_with_trace_s"]),
            "total_with_trace_s",
        ),
        row(
            "every run's total (s)",
            lambda a: runs(a["runs_s"]),
            lambda t: runs(t["runs_s"]),
        ),
        row("non-const ops", lambda a: a["ops"], lambda t: t["ops"], "ops"),
        row(
            "RSS before → peak (MiB)",
            lambda a: f"{a['rss_before_mb']} → {a['peak_rss_mb']}",
            lambda t: f"{t['rss_before_mb']} → {t['peak_rss_mb']}",
            "peak_rss_mb",
        ),
        row(
            "process peak RSS (MiB)",
            lambda a: a["process_maxrss_mb"],
            lambda t: t["process_maxrss_mb"],
            "process_maxrss_mb",
        ),
    ]
    return table(header, rows)


def write_limit_table(r: dict[str, Any]) -> str:
    models = [m for k, m in r["compile_time"].items() if k.startswith("qwen3_")]
    header = ["Qwen3 stack, seq 256"] + [
        f"{m['ours']['layers']} layers" for m in models
    ]

    def row(name: str, cell: Any) -> list[Any]:
        return [name] + [cell(m) for m in models]

    rows = [
        row("weights (MB)", lambda m: f"{m['write_limit']['bytes'] / 1e6:.0f}"),
        row(
            "**write limit**: convert to fp16 and write (s)",
            lambda m: f"**{seconds(m['write_limit']['limit_s'])}**",
        ),
        row(
            "of which converting (s)", lambda m: seconds(m["write_limit"]["convert_s"])
        ),
        row(
            "every run's write limit (s)",
            lambda m: runs(m["write_limit"]["runs_s"]),
        ),
        row(
            "xdsl-ane, API total / limit",
            lambda m: f"**{m['over_write_limit']['api_total']:.3f}**",
        ),
        row(
            "xdsl-ane, staged pipeline / limit",
            lambda m: f"{m['over_write_limit']['staged_total']:.3f}",
        ),
        row(
            "xdsl-ane, `write_weights` alone / limit",
            lambda m: f"{m['over_write_limit']['write_weights']:.3f}",
        ),
        row(
            "coremltools, convert + save / limit",
            lambda m: f"{m['over_write_limit']['coremltools_total']:.3f}",
        ),
    ]
    return table(header, rows)


def numerics_table(r: dict[str, Any]) -> str:
    n = r["numerics"]
    rows = [
        [
            "our interpreter, rlx program (fp32)",
            f"{n['rlx_fp32_vs_torch_fp32']:.2e}",
            f"{n['rlx_fp32_vs_torch_fp32_max_abs']:.2e}",
        ],
        [
            "our interpreter, compiled `[1, C, 1, S]` program (fp16)",
            f"{n['compiled_fp16_vs_torch_fp32']:.2e}",
            f"{n['compiled_fp16_vs_torch_fp32_max_abs']:.2e}",
        ],
    ]
    return (
        table(["vs PyTorch fp32", "relative error", "max abs error"], rows)
        + f"\n\n{n['layers']} layers, input {n['input']}, output RMS "
        f"{n['output_rms']:.3f}."
    )


def torch_frontend_table(t: dict[str, Any]) -> str:
    """Compile-and-save time and non-const ops of each case, ours and
    coremltools' (with the patches it needed)."""
    rows = []
    for case in t["cases"]:
        ours, theirs = case["ours"], case["theirs"]
        rows.append(
            [
                f"{case['part']}, {case['layers']} layers",
                seconds(ours["total_s"]),
                seconds(theirs["total_s"]),
                f"{case['time_ratio']:.2f}",
                f"{ours['ops']} / {theirs['ops']}",
            ]
        )
    patches = "; ".join(t.get("coremltools_patches", []))
    header = [
        "Qwen3 at 0.6B sizes",
        "xdsl-ane s",
        "ct.convert s",
        "ratio",
        "ops (ours / theirs)",
    ]
    return table(header, rows) + (
        f"\n\ncoremltools needed: {patches}." if patches else ""
    )


def markdown(r: dict[str, Any]) -> str:
    sections = [
        machine_line(r),
        "### Summary\n\n" + summary(r),
        "### Training kernels: ops (consts excluded) vs the hand-written kernels\n\n"
        + kernel_tables(r),
        "### Softmax cross-entropy: ops after `convert-rlx-to-mil` (consts excluded)\n\n"
        + sce_table(r),
        "### Compile time by stage\n\n" + stage_table(r),
        "### Side by side with coremltools 9.0 `ct.convert`\n\n" + side_by_side(r),
        "### Against the write limit\n\n" + write_limit_table(r),
        "### Same model, same numbers\n\n" + numerics_table(r),
    ]
    if "torch_frontend" in r:
        sections.append(
            "### The same ExportedProgram through `ct.convert` and xdsl-ane\n\n"
            + torch_frontend_table(r["torch_frontend"])
        )
    if "compression" in r:
        from compression import markdown_table

        sections.append(
            "### Weight compression vs coremltools' `palettize_weights` / "
            "`linear_quantize_weights`\n\n" + markdown_table(r["compression"])
        )
    if "llm" in r:
        from llm import markdown_table as llm_table

        sections.append(
            "### LLM inference package vs coremltools' stateful path\n\n"
            + llm_table(r["llm"])
        )
    return "\n\n".join(sections) + "\n"


if __name__ == "__main__":
    path = (
        Path(sys.argv[1])
        if len(sys.argv) > 1
        else Path(__file__).parent / "results.json"
    )
    print(markdown(json.loads(path.read_text())), end="")

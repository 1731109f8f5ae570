"""How an estimate reads: a table per op or per layer, a summary line, a
bar chart (matplotlib, the `plot` extra, imported only here)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from xdsl_ane.ane.rules import Unit
from xdsl_ane.errors import XdslAneError, from_command_line, option
from xdsl_ane.estimator.model import UNITS, Estimate, OpEstimate
from xdsl_ane.outputs import atomic_output, check_output

PER_OP_LIMIT = 120
"""Programs with more ops are shown per layer unless asked otherwise."""


def si(n: float) -> str:
    """1234567 -> `1.23M`."""
    for limit, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= limit:
            return f"{n / limit:.3g}{suffix}"
    return f"{n:.3g}" if isinstance(n, float) else str(n)


def count(n: int, noun: str, plural: str = "") -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {plural or noun + 's'}"


def percent(x: float) -> str:
    return f"{100 * x:.1f}%" if 0 < x < 0.9995 else f"{100 * x:.0f}%"


@dataclass
class LayerEstimate:
    """The ops of one source layer of one function, added up."""

    function: str
    layer: str
    ops: list[OpEstimate] = field(default_factory=list)

    @property
    def us(self) -> float:
        return sum(o.us for o in self.ops)

    def unit_us(self, unit: Unit) -> float:
        return sum(o.us for o in self.ops if o.unit == unit)

    @property
    def units(self) -> str:
        return "+".join(u for u in UNITS if any(o.unit == u for o in self.ops))

    @property
    def reasons(self) -> str:
        found: dict[str, list[str]] = {}
        for o in self.ops:
            if o.unit != "ane":
                ops = found.setdefault(o.reason, [])
                if o.op not in ops:
                    ops.append(o.op)
        return "; ".join(f"{', '.join(ops)}: {r}" for r, ops in found.items())


def layers(estimate: Estimate) -> list[LayerEstimate]:
    """Ops grouped by (function, layer), in order of first appearance."""
    groups: dict[tuple[str, str], LayerEstimate] = {}
    for o in estimate.ops:
        key = (o.function, o.layer)
        if key not in groups:
            groups[key] = LayerEstimate(o.function, o.layer)
        groups[key].ops.append(o)
    return list(groups.values())


def summary(estimate: Estimate) -> str:
    """One line: chip, total, share on the ANE, segments and the parts."""
    chip = estimate.chip
    ane_segments = sum(s.unit == "ane" for s in estimate.segments)
    functions = estimate.function_ms()
    each = (
        " (" + ", ".join(f"@{f} {ms:.3f} ms" for f, ms in functions.items()) + ")"
        if 1 < len(functions) <= 4
        else f" ({len(functions)} functions)"
        if len(functions) > 4
        else ""
    )
    return (
        f"estimate on {chip.title} ({chip.tops_fp16:g} TOPS fp16, "
        f"{chip.bandwidth / 1e9:.0f} GB/s): {estimate.total_ms:.3f} ms{each}, "
        f"ANE {percent(estimate.ane_fraction)} of FLOPs and "
        f"{percent(estimate.ane_op_fraction)} of {len(estimate.ops)} ops, "
        f"{count(len(estimate.segments), 'segment')} "
        f"({count(estimate.switches, 'switch', 'switches')}); "
        f"ops {estimate.op_us / 1000:.3f} ms + "
        f"{count(ane_segments, 'dispatch', 'dispatches')} "
        f"{estimate.dispatch_us / 1000:.3f} ms + transfers "
        f"{estimate.transfer_us / 1000:.3f} ms"
    )


def rows_by(
    estimate: Estimate, by: Literal["auto", "op", "layer"]
) -> Literal["op", "layer"]:
    """What a row (of the table, or a bar of the chart) is: `"auto"` is per
    layer above PER_OP_LIMIT ops, else per op."""
    if by == "auto":
        return "layer" if len(estimate.ops) > PER_OP_LIMIT else "op"
    return by


def table(estimate: Estimate, by: Literal["auto", "op", "layer"] = "auto") -> str:
    """The per-op (`by="op"`) or per-layer (`"layer"`) table; `"auto"`
    picks per layer above PER_OP_LIMIT ops."""
    by = rows_by(estimate, by)
    functions = len({o.function for o in estimate.ops}) > 1
    if by == "op":
        header = ["op", "unit", "FLOPs", "bytes", "µs", "why"]
        rows = [
            [
                (f"@{o.function} " if functions else "") + f"{o.name} {o.op}",
                o.unit,
                si(o.flops),
                si(o.bytes),
                f"{o.us:.2f}",
                o.reason,
            ]
            for o in estimate.ops
        ]
    else:
        header = ["layer", "ops", "unit", "FLOPs", "bytes", "µs", "why"]
        rows = [
            [
                g.layer
                if not functions
                else f"@{g.function}"
                if g.layer == g.function
                else f"@{g.function} {g.layer}",
                str(len(g.ops)),
                g.units,
                si(sum(o.flops for o in g.ops)),
                si(sum(o.bytes for o in g.ops)),
                f"{g.us:.2f}",
                g.reasons,
            ]
            for g in layers(estimate)
        ]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    numeric = {header.index(h) for h in ("FLOPs", "bytes", "µs", "ops") if h in header}

    def line(cells: list[str]) -> str:
        out = [
            c.rjust(w) if i in numeric else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths))
        ]
        return "  ".join(out).rstrip()

    return "\n".join([line(header), *(line(r) for r in rows)])


def check_plot(path: str | Path, force: bool = True) -> Path:
    """The chart's path, checked before any work: a .png or .svg in an
    existing, writable directory, not there yet unless `force`, and
    matplotlib installed (the `plot` extra)."""
    path = Path(path)
    given = option("path", path, flag="--plot")
    if path.suffix.lower() not in (".png", ".svg"):
        raise XdslAneError(f"{given}: the chart is a .png or .svg file")
    if not path.parent.is_dir():
        raise XdslAneError(f"{given}: no directory {path.parent}")
    try:
        check_output(path, force)
    except XdslAneError as e:
        if not from_command_line():
            raise
        raise XdslAneError(f"--plot {e}") from None
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise XdslAneError(
            f"{option('plot', flag='--plot')} needs matplotlib, in the plot extra: "
            "pip install 'xdsl-ane[plot]'"
        ) from None
    return path


def plot(
    estimate: Estimate,
    path: str | Path,
    by: Literal["auto", "op", "layer"] = "auto",
    force: bool = True,
) -> Path:
    """A bar chart of time per layer or per op (`by`, as the table's rows),
    stacked by unit, as PNG or SVG (by the suffix), written whole or not at
    all; an existing file is replaced only with `force`. Needs matplotlib
    (the `plot` extra)."""
    path = check_plot(path, force)
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    if rows_by(estimate, by) == "layer":
        groups = layers(estimate)
    else:
        groups = [
            LayerEstimate(o.function, f"{o.name} {o.op}", [o]) for o in estimate.ops
        ]
    labels = [g.layer for g in groups]
    colours = {"ane": "#2a9d8f", "gpu": "#e9c46a", "cpu": "#e76f51"}
    figure, axes = plt.subplots(
        figsize=(min(24.0, max(6.0, 0.16 * len(groups) + 2)), 4.5)
    )
    bottom = [0.0] * len(groups)
    for unit in UNITS:
        values = [g.unit_us(unit) for g in groups]
        if any(values):
            axes.bar(labels, values, bottom=bottom, color=colours[unit], label=unit)
            bottom = [b + v for b, v in zip(bottom, values)]
    axes.set_ylabel("estimated µs")
    axes.set_title(
        f"{Path(estimate.source).name} on {estimate.chip.title}: "
        f"{estimate.total_ms:.3f} ms, ANE {percent(estimate.ane_fraction)} of FLOPs",
        fontsize=10,
    )
    axes.set_xlim(-0.6, len(groups) - 0.4)
    axes.legend()
    axes.tick_params(axis="x", labelrotation=90, labelsize=6)
    figure.tight_layout()
    try:
        with atomic_output(path, force) as tmp:
            figure.savefig(tmp, format=path.suffix.lower().lstrip("."))
    except OSError as e:
        raise XdslAneError(
            f"{option('path', path, flag='--plot')}: cannot write it ({e.strerror})"
        ) from None
    finally:
        plt.close(figure)
    return path

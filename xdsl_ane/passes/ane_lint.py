"""`ane-lint`: reports what would not run well, or at all, on the ANE.

The lint reads every `func.func` of a module (mil programs; rlx or other ops
are reported too) and changes nothing. Each finding names the function, the
op with its printed result names (`mil.gather (%12)`), or the argument or
result, the reason and, where one exists, a fix. The sources are ANE_FACTS.md
("What keeps a program off the ANE"): Core ML does not refuse such programs;
it runs the offending parts on the CPU or GPU, which is the point of a
warning. Errors are what Core ML rejects or what cannot be compiled at all.

| rule | severity | threshold |
|---|---|---|
| rlx op left in the program | error | any (run convert-rlx-to-mil) |
| op of another dialect (not mil, not func) | error | any |
| mil op unknown to the mil dialect (a custom op) | warning | any |
| dynamic shape (`?` dimension, unranked tensor) | error | any value |
| op whose result shape depends on data | error | non_zero, non_maximum_suppression |
| fp32 function argument / result | warning | each one |
| fp32 compute | warning | one per function, on its first fp32 op, with the count |
| rank | warning / error | rank > 4 / rank > 5 |
| dimension size | warning / error | > 16384 (M1/M2) / > 65536 (newer chips too) |
| gather table on the lookup axis | warning | > 32768 |
| ops that usually fall back | warning | gather*, scatter*, fill*, band_part, cond, while_loop, RNNs, conv dilations > 1, pooling kernel > 13 or stride > 2, upsampling > 2× |
| ops per function | warning | > 18000, consts, constexpr ops and func.return not counted |
| weights per function | warning / error | > 1 GiB (iOS) / > 2 GiB (macOS) |

Weights are the consts' declared tensor sizes at MIL's storage width
(sub-byte data packed, as the blob holds it; inline `val` and `weight`
consts alike; `rlx.constant` / `rlx.param` in unlowered programs); a
`constexpr_*` op's storage is its const operands, so int8 weights count as
int8. fp32
compute is reported once per function because it is all-or-nothing and one
pass (`mil-fp16`) fixes it. The rules by op kind are the op's own (each mil
op's `ANE_RULES`); those of MIL ops the dialect does not define, parsed with
`--allow-unregistered-dialect` ("mil.scatter", "mil.while_loop"), are in
`OP_RULES`, keyed by name (add an entry to extend it). The rules are facts
of the hardware (`xdsl_ane/ane/rules.py`, the limits in `ane/limits.py`,
the dimension limits from the chip table), shared with the placement of
`xdsl-ane estimate` (which applies one chip's limits where this lint is
chip-neutral).

With `chip` (`ane-lint{chip=m1}`, `lint_module(module, "m1")`) the lint
also warns of each op that chip's placement (`placement.placement_rule`,
what `xdsl-ane estimate` applies) moves off the ANE by a rule the table
above does not cover: sin/cos before A15, conv kernels wider than 13,
argmax over > 2048, ops that are not among the ANE's (reduce_prod, cumsum,
sorts: `ane/rules.py`'s `not_an_ane_op`), int32 or bf16 compute, state
shapes.

`lint_module` is the Python API; the pass prints each finding and a summary
to stderr and fails on errors, or on warnings too with `strict=true`, and
keeps each report on itself (`AneLintPass.reports`), where `xdsl-ane
compile`'s pipeline (`passes/compile_pipeline.py`) reads it.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    TensorType,
    UnrankedTensorType,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.traits import IsolatedFromAbove
from xdsl.utils.exceptions import PassFailedException

from xdsl_ane.ane.chips import Chip, get_chip
from xdsl_ane.ane.limits import (
    MAX_DIMENSION,
    MAX_DIMENSION_NEWER,
    MAX_GATHER_TABLE,
    MAX_OPS,
    MAX_RANK,
    PREFERRED_RANK,
    WEIGHTS_ERROR_BYTES,
    WEIGHTS_WARNING_BYTES,
)
from xdsl_ane.ane.rules import (
    Severity,
    dimensions_over,
    numbers,
    op_name,
    rank_problem,
)
from xdsl_ane.dialects.dtypes import BY_ELEMENT
from xdsl_ane.dialects.mil.base import MilOp
from xdsl_ane.errors import XdslAneError
from xdsl_ane.locations import location
from xdsl_ane.passes.placement import (
    function_state_shapes,
    is_const,
    is_fp32,
    op_rule_details,
    placement_rule,
    rules_of,
)

FP16_SUGGESTION = "run mil-fp16 for fp16 compute and I/O"


@dataclass(frozen=True)
class Finding:
    """One diagnostic. `op_name` is empty for a finding about the whole
    function, "argument" or "result" for its signature (`value_name` then
    `%x` or `#0`); otherwise `value_name` holds the op's printed result names."""

    severity: Severity
    function: str
    op_name: str
    value_name: str
    message: str
    suggestion: str = ""
    source: str = ""
    """`file:line:col` of the op in the file it was read from (or of the op
    it was lowered from), when known."""

    @property
    def location(self) -> str:
        if not self.op_name or not self.value_name:
            return self.op_name
        if self.op_name in ("argument", "result"):
            return f"{self.op_name} {self.value_name}"
        return f"{self.op_name} ({self.value_name})"

    def format(self) -> str:
        where = f"@{self.function}: " + (f"{self.location}: " if self.location else "")
        fix = f"; {self.suggestion}" if self.suggestion else ""
        at = f"{self.source}: " if self.source else ""
        return f"{at}ane-lint: {self.severity}: {where}{self.message}{fix}"


@dataclass
class LintReport:
    """The findings of one module, function by function, and what was counted:
    `ops` excludes consts, constexpr ops and func.return."""

    findings: list[Finding] = field(default_factory=list)
    functions: int = 0
    ops: int = 0

    @property
    def errors(self) -> int:
        return sum(f.severity is Severity.ERROR for f in self.findings)

    @property
    def warnings(self) -> int:
        return sum(f.severity is Severity.WARNING for f in self.findings)

    def summary(self) -> str:
        return (
            f"ane-lint: {_count(self.functions, 'function')}, "
            f"{_count(self.ops, 'op')}, {_count(self.errors, 'error')}, "
            f"{_count(self.warnings, 'warning')}"
        )

    def format(self) -> str:
        """Every finding on its own line, then the summary."""
        return "\n".join([*(f.format() for f in self.findings), self.summary()])

    def failure(self, strict: bool = False) -> Finding | None:
        """The finding that fails a lint: the first error, or with `strict`
        the first warning when there is no error."""
        errors = [f for f in self.findings if f.severity is Severity.ERROR]
        if errors:
            return errors[0]
        return self.findings[0] if strict and self.findings else None


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


# --- the lint ---------------------------------------------------------------


def lint_module(module: builtin.ModuleOp, chip: str = "") -> LintReport:
    """Lints every func.func of `module` (nested ones too); changes nothing.
    With `chip`, also warns of each op that chip's placement moves off the
    ANE by a rule the chip-neutral lint does not report."""
    report = LintReport()
    target = get_chip(chip) if chip else None
    for op in module.walk():
        if isinstance(op, func.FuncOp):
            linter = _FunctionLint(op, target)
            linter.run()
            report.findings.extend(linter.findings)
            report.functions += 1
            report.ops += linter.ops
    return report


def feeds_constexpr_only(value: SSAValue) -> bool:
    """Whether every user of `value` is a constexpr op (it is data that
    Core ML decompresses at load time)."""
    users = [use.operation for use in value.uses]
    return bool(users) and all(u.name.startswith("mil.constexpr_") for u in users)


def element_bits(element_type: Attribute) -> int:
    """Bits of one element as MIL stores it (`dialects/dtypes.py`: int4 and
    uint1..uint6 packed, bool a byte), else the type's own width."""
    found = BY_ELEMENT.get(element_type)
    if found is not None:
        return found.bits
    return max(8, getattr(element_type, "bitwidth", 32))


def printed_names(function: func.FuncOp) -> dict[SSAValue, str]:
    """The names xDSL's printer gives the function's values (`%x`, `%x_1`,
    `%12`): name hints deduplicated with a suffix, others numbered, in print
    order within the function's scope."""
    names: dict[SSAValue, str] = {}
    counts: dict[str, int] = {}
    number = 0

    def name(value: SSAValue) -> None:
        nonlocal number
        if value.name_hint:
            i = counts.get(value.name_hint, 0)
            counts[value.name_hint] = i + 1
            names[value] = value.name_hint + (f"_{i}" if i else "")
        else:
            names[value] = str(number)
            number += 1

    def block(b: Block) -> None:
        for arg in b.args:
            name(arg)
        for op in b.ops:
            for result in op.results:
                name(result)
            if not op.has_trait(IsolatedFromAbove):
                for region in op.regions:
                    for inner in region.blocks:
                        block(inner)

    for b in function.body.blocks:
        block(b)
    return names


class _FunctionLint:
    def __init__(self, function: func.FuncOp, chip: Chip | None = None):
        self.function = function
        self.chip = chip
        self.states = function_state_shapes(function) if chip else set()
        self.findings: list[Finding] = []
        self.ops = 0
        self._names: dict[SSAValue, str] | None = None

    def value_name(self, value: SSAValue) -> str:
        if self._names is None:
            self._names = printed_names(self.function)
        return "%" + self._names.get(value, "?")

    def report(
        self,
        severity: Severity,
        op: Operation | None,
        message: str,
        suggestion: str = "",
    ) -> None:
        names = "" if op is None else ", ".join(self.value_name(r) for r in op.results)
        self.findings.append(
            Finding(
                severity,
                self.function.sym_name.data,
                "" if op is None else op_name(op),
                names,
                message,
                suggestion,
                "" if op is None else location(op) or "",
            )
        )

    def report_value(
        self, severity: Severity, kind: str, name: str, message: str, fix: str = ""
    ) -> None:
        self.findings.append(
            Finding(
                severity,
                self.function.sym_name.data,
                kind,
                name,
                message,
                fix,
                location(self.function) or "",
            )
        )

    def ops_in_body(self) -> Iterator[Operation]:
        for op in self.function.body.walk():
            if not isinstance(op, func.ReturnOp):
                yield op

    def run(self) -> None:
        self.signature()
        fp32_ops: list[Operation] = []
        fp32_consts: list[Operation] = []
        weight_bytes = 0
        consts = 0
        for op in self.ops_in_body():
            name = op_name(op)
            const = is_const(name)
            if const and not name.startswith("mil.constexpr_"):
                # a constexpr op's storage is its const operands, counted here
                consts += 1
                weight_bytes += sum(tensor_bytes(r.type) for r in op.results)
            elif not const:
                self.ops += 1
            found = len(self.findings)
            self.op_kind(op, name)
            if self.chip is not None and not const:
                self.chip_placement(op, found)
            for r in op.results:
                if const and feeds_constexpr_only(r):
                    # compressed data (a LUT's rank is its weight's + 2),
                    # not a tensor the ANE computes on
                    continue
                for severity, message, fix in type_problems(r.type):
                    self.report(severity, op, message, fix)
            if any(is_fp32(r.type) for r in op.results):
                if const:
                    fp32_consts.append(op)
                else:
                    fp32_ops.append(op)
        self.fp32_compute(fp32_ops, fp32_consts)
        self.program_size(weight_bytes, consts)

    def signature(self) -> None:
        ft = self.function.function_type
        blocks = self.function.body.blocks
        for i, t in enumerate(ft.inputs.data):
            name = self.value_name(blocks[0].args[i]) if blocks else f"#{i}"
            self.value_checks("argument", name, t, "input")
        for i, t in enumerate(ft.outputs.data):
            self.value_checks("result", f"#{i}", t, "output", checked=bool(blocks))

    def value_checks(
        self, kind: str, name: str, t: Attribute, io: str, checked: bool = False
    ) -> None:
        """fp32 I/O, and the type checks unless the op defining the value
        is checked (a result of a function with a body)."""
        if is_fp32(t):
            self.report_value(
                Severity.WARNING,
                kind,
                name,
                f"fp32 {io} {t}; the ANE computes in fp16, so Core ML casts it "
                "or runs the program elsewhere",
                FP16_SUGGESTION,
            )
        if not checked:
            for severity, message, fix in type_problems(t):
                self.report_value(severity, kind, name, message, fix)

    def op_kind(self, op: Operation, name: str) -> None:
        for found, reason in op_rule_details(op, lint=True):
            self.report(found.severity, op, reason, found.suggestion)
        if name == "mil.gather":
            self.gather_table(op)
        if name.startswith("rlx."):
            self.report(
                Severity.ERROR,
                op,
                "rlx op not lowered to mil",
                "run convert-rlx-to-mil first",
            )
        elif not name.startswith("mil."):
            self.report(
                Severity.ERROR,
                op,
                "not a MIL op; Core ML cannot run it",
                "lower it to mil ops",
            )
        elif not isinstance(op, MilOp) and not rules_of(op):
            self.report(
                Severity.WARNING,
                op,
                "not an op of the mil dialect; Core ML runs custom ops on the CPU",
            )

    def chip_placement(self, op: Operation, found: int) -> None:
        """The chip's placement of `op`, when it moves the op off the ANE by
        a rule no other finding reports (fp32 is the function's one fp32
        finding)."""
        placement = placement_rule(op, self.chip, self.states)
        if placement.unit == "ane" or len(self.findings) > found:
            return
        if placement.rule in ("dtype", "fp32-const") and "fp32" in placement.reason:
            return
        if op_rule_details(op, lint=True):
            return
        rules = op_rule_details(op)  # a rule of the placement's only
        fix = rules[0][0].suggestion if rules else ""
        self.report(
            Severity.WARNING,
            op,
            f"{placement.reason}: on {self.chip.title} it runs on the "
            f"{placement.unit.upper()}",
            fix,
        )

    def gather_table(self, op: Operation) -> None:
        if not op.operands or not isinstance(op.operands[0].type, TensorType):
            return
        shape = op.operands[0].type.get_shape()
        axes = numbers(op, "axis") or [0]
        axis = int(axes[0])
        if not -len(shape) <= axis < len(shape):
            return
        rows = shape[axis]
        if rows > MAX_GATHER_TABLE:
            self.report(
                Severity.WARNING,
                op,
                f"the gathered table has {rows} entries on the lookup axis "
                f"{axis % len(shape)}, above the ANE's {MAX_GATHER_TABLE}",
                f"split the table into {math.ceil(rows / MAX_GATHER_TABLE)} chunks "
                f"of ≤ {MAX_GATHER_TABLE}",
            )

    def fp32_compute(self, ops: list[Operation], consts: list[Operation]) -> None:
        if not ops and not consts:
            return
        of_consts = f" and {_count(len(consts), 'const')}" if consts else ""
        self.report(
            Severity.WARNING,
            (ops or consts)[0],
            f"fp32 compute: {len(ops)} of {_count(self.ops, 'op')}{of_consts} "
            "produce fp32 tensors (this is the first); the ANE computes in fp16, "
            "so Core ML casts or runs fp32 work on the CPU/GPU",
            FP16_SUGGESTION,
        )

    def program_size(self, weight_bytes: int, consts: int) -> None:
        split = "split the function into several programs"
        if self.ops > MAX_OPS:
            self.report(
                Severity.WARNING,
                None,
                f"{self.ops} ops (consts excluded), above the about {MAX_OPS} "
                "the ANE runs in one program",
                split,
            )
        if weight_bytes > WEIGHTS_WARNING_BYTES:
            too_big = weight_bytes > WEIGHTS_ERROR_BYTES
            self.report(
                Severity.ERROR if too_big else Severity.WARNING,
                None,
                f"{weight_bytes / (1 << 30):.2f} GiB of weights in "
                f"{_count(consts, 'const')}, above "
                + (
                    "2 GiB, the limit per program on macOS"
                    if too_big
                    else "1 GiB, the limit per program on iOS (2 GiB on macOS)"
                ),
                split + " or quantize the weights",
            )


def type_problems(t: Attribute) -> list[tuple[Severity, str, str]]:
    """(severity, message, suggestion) for a value's type: a dynamic shape,
    the rank and the dimension sizes."""
    if isinstance(t, UnrankedTensorType) or (
        isinstance(t, TensorType) and DYNAMIC_INDEX in t.get_shape()
    ):
        return [
            (
                Severity.ERROR,
                f"dynamic shape {t}; the ANE runs static shapes only",
                "fix the shape at compile time (one model per shape)",
            )
        ]
    if not isinstance(t, TensorType):
        return []
    problems: list[tuple[Severity, str, str]] = []
    shape = t.get_shape()
    to_rank_4 = "reshape to rank 4 ([1, C, 1, S])"
    rank = rank_problem(shape, PREFERRED_RANK)
    if rank is not None and rank[0] is Severity.ERROR:
        message = f"rank {len(shape)} {t}; Core ML supports rank ≤ {MAX_RANK}"
        problems.append((Severity.ERROR, message, to_rank_4))
    elif rank is not None:
        message = f"rank {len(shape)} {t}; the ANE prefers rank ≤ {PREFERRED_RANK}"
        problems.append((Severity.WARNING, message, to_rank_4))
    # chip-neutral: above the smallest chip's limit on any axis
    big = [(a, d) for a, d, _ in dimensions_over(shape, lambda a, r: MAX_DIMENSION)]
    if big:
        largest = max(d for _, d in big)
        axes = ", ".join(f"axis {a} has size {d}" for a, d in big)
        if largest > MAX_DIMENSION_NEWER:
            severity, limit = (
                Severity.ERROR,
                f"{MAX_DIMENSION_NEWER}, the limit even of newer ANEs",
            )
        else:
            severity = Severity.WARNING
            limit = f"{MAX_DIMENSION}, the limit of M1/M2-class ANEs ({MAX_DIMENSION_NEWER} on newer ones)"
        if len(big) == 1:
            split = f"split axis {big[0][0]} into {math.ceil(largest / MAX_DIMENSION)} chunks"
        else:
            split = f"split axes {', '.join(str(a) for a, _ in big)} into chunks"
        problems.append(
            (severity, f"{t}: {axes}, above {limit}", f"{split} of ≤ {MAX_DIMENSION}")
        )
    return problems


def tensor_bytes(t: Attribute) -> int:
    if not isinstance(t, TensorType) or any(d < 0 for d in t.get_shape()):
        return 0
    return math.ceil(math.prod(t.get_shape()) * element_bits(t.element_type) / 8)


@dataclass(frozen=True)
class AneLintPass(ModulePass):
    """Prints what would keep the module's functions off the ANE, one finding
    per line and a summary, to stderr; changes nothing. Fails with the first
    error (with `strict`, the first warning too) and the counts. The report
    of each run is kept on the pass (`reports`)."""

    name = "ane-lint"

    strict: bool = False
    chip: str = ""
    """With a chip (`ane-lint{chip=m1}`), also that chip's placement rules."""
    reports: list[LintReport] = field(
        default_factory=list, init=False, compare=False, repr=False
    )
    """The report of each run, in order (not an option of the pass)."""

    def lint(self, op: builtin.ModuleOp) -> LintReport:
        """The report of `op`, kept in `reports`."""
        try:
            report = lint_module(op, self.chip)
        except XdslAneError as e:  # an unknown chip, in one line
            raise PassFailedException(f"ane-lint: {e}") from None
        self.reports.append(report)
        return report

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        report = self.lint(op)
        print(report.format(), file=sys.stderr)
        first = report.failure(self.strict)
        if first is not None:
            raise PassFailedException(f"{first.format()}\n{report.summary()}")

"""`ane-lint` through its Python API (`lint_module`, `LintReport`, `Finding`):
one test per rule, the program-size rules on generated modules, the
printed-name resolution against xDSL's printer, the pass's failure modes,
that the lint changes nothing, and real workloads: Qwen3-0.6B's decoder
layer and a training head over its 151936-token vocabulary, both lowered by
convert-rlx-to-mil."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.dialects.arith import Arith
from xdsl.dialects.builtin import Builtin, f16, i32
from xdsl.dialects.func import Func
from xdsl.ir import Block, Region, SSAValue
from xdsl.parser import Parser
from xdsl.utils.exceptions import PassFailedException

from xdsl_ane.ane import rules
from xdsl_ane.ane.limits import MAX_OPS
from xdsl_ane.ane.rules import OpRule, Severity
from xdsl_ane.dialects import mil, rlx
from xdsl_ane.dialects.dense import dense_from_numpy
from xdsl_ane.dialects.functions import build_function
from xdsl_ane.dialects.mil import MIL
from xdsl_ane.dialects.rlx import RLX
from xdsl_ane.dialects.typing import tensor
from xdsl_ane.models.transformer import (
    QWEN3_0_6B,
    build_decoder_layer,
    stateless_builder,
)
from xdsl_ane.passes.ane_lint import (
    AneLintPass,
    Finding,
    LintReport,
    lint_module,
    printed_names,
)
from xdsl_ane.passes.rlx_to_mil import ConvertRlxToMilPass

ERROR, WARNING = Severity.ERROR, Severity.WARNING
ACT = "tensor<1x64x1x256xf16>"
"""An activation in the ANE's [1, C, 1, S] form."""


def parse(text: str) -> builtin.ModuleOp:
    ctx = Context(allow_unregistered=True)
    for dialect in (Builtin, Func, Arith, MIL, RLX):
        ctx.load_dialect(dialect)
    module = Parser(ctx, text).parse_module()
    module.verify()
    return module


def lint(text: str) -> LintReport:
    return lint_module(parse(text))


def kinds(report: LintReport) -> list[tuple[Severity, str, str]]:
    """(severity, location, start of message) of each finding."""
    return [(f.severity, f.location, f.message.split(";")[0]) for f in report.findings]


def single(report: LintReport) -> Finding:
    assert len(report.findings) == 1, report.format()
    return report.findings[0]


# --- a clean program ---------------------------------------------------------------


CLEAN = f"""
func.func @ffn(%x: {ACT}) -> tensor<1x128x1x256xf16> {{
  %w = mil.const weight "ffn.weight" : tensor<128x64x1x1xf16>
  %h = mil.conv %x, %w : ({ACT}, tensor<128x64x1x1xf16>) -> tensor<1x128x1x256xf16>
  %r = mil.relu %h : tensor<1x128x1x256xf16>
  %s = mil.softmax %r {{axis = 1 : i64}} : tensor<1x128x1x256xf16>
  func.return %s : tensor<1x128x1x256xf16>
}}
"""


def test_clean_fp16_program_has_no_findings() -> None:
    report = lint(CLEAN)
    assert report.findings == []
    assert (report.functions, report.ops, report.errors, report.warnings) == (
        1,
        3,
        0,
        0,
    )
    assert report.format() == "ane-lint: 1 function, 3 ops, 0 errors, 0 warnings"


# --- one rule at a time ------------------------------------------------------------


def test_fp32_io_and_compute_are_warnings() -> None:
    report = lint(
        """
func.func @f(%x: tensor<1x8x1x4xf32>, %ids: tensor<4xi32>) -> tensor<1x8x1x4xf32> {
  %c = mil.const dense<2.0> : tensor<1xf32>
  %m = mil.mul %x, %c : (tensor<1x8x1x4xf32>, tensor<1xf32>) -> tensor<1x8x1x4xf32>
  %e = mil.exp %m : tensor<1x8x1x4xf32>
  func.return %e : tensor<1x8x1x4xf32>
}
"""
    )
    assert kinds(report) == [
        (WARNING, "argument %x", "fp32 input tensor<1x8x1x4xf32>"),
        (WARNING, "result #0", "fp32 output tensor<1x8x1x4xf32>"),
        (
            WARNING,
            "mil.mul (%m)",
            "fp32 compute: 2 of 2 ops and 1 const produce fp32 tensors (this is the first)",
        ),
    ]
    assert all(f.suggestion.startswith("run mil-fp16") for f in report.findings)
    assert report.errors == 0


def test_rank_5_warns_and_rank_6_is_an_error() -> None:
    report = lint(
        """
func.func @f(%x: tensor<1x2x3x4x5xf16>) -> tensor<1x2x3x4x5x1xf16> {
  %y = mil.reshape %x {shape = array<i64: 1, 2, 3, 4, 5, 1>} : (tensor<1x2x3x4x5xf16>) -> tensor<1x2x3x4x5x1xf16>
  func.return %y : tensor<1x2x3x4x5x1xf16>
}
"""
    )
    assert kinds(report) == [
        (WARNING, "argument %x", "rank 5 tensor<1x2x3x4x5xf16>"),
        (ERROR, "mil.reshape (%y)", "rank 6 tensor<1x2x3x4x5x1xf16>"),
    ]


@pytest.mark.parametrize(
    ("size", "severity", "chunks"),
    [(16384, None, 0), (16385, WARNING, 2), (65536, WARNING, 4), (65537, ERROR, 5)],
)
def test_dimension_limits(size: int, severity: Severity | None, chunks: int) -> None:
    t = f"tensor<1x{size}x1x2xf16>"
    report = lint(
        f"""
func.func @f(%x: {t}) -> {t} {{
  %y = mil.relu %x : {t}
  func.return %y : {t}
}}
"""
    )
    if severity is None:
        assert report.findings == []
        return
    assert [(f.severity, f.location) for f in report.findings] == [
        (severity, "argument %x"),
        (severity, "mil.relu (%y)"),
    ]
    finding = report.findings[1]
    assert f"axis 1 has size {size}" in finding.message
    assert finding.suggestion == f"split axis 1 into {chunks} chunks of ≤ 16384"


def test_several_large_axes_in_one_finding() -> None:
    """One finding per value; the largest axis sets the severity."""
    finding = single(lint("func.func private @f(tensor<20000x70000xf16>)"))
    assert finding.severity is ERROR and finding.location == "argument #0"
    assert "axis 0 has size 20000, axis 1 has size 70000" in finding.message
    assert finding.suggestion == "split axes 0, 1 into chunks of ≤ 16384"


def test_gather_falls_back_and_its_table_is_limited() -> None:
    def gather(rows: int) -> LintReport:
        return lint(
            f"""
func.func @f(%ids: tensor<1x8xi32>) -> tensor<1x8x64xf16> {{
  %t = mil.const weight "embed" : tensor<{rows}x64xf16>
  %e = mil.gather %t, %ids : (tensor<{rows}x64xf16>, tensor<1x8xi32>) -> tensor<1x8x64xf16>
  func.return %e : tensor<1x8x64xf16>
}}
"""
        )

    small = single(gather(1000))
    assert (small.severity, small.location) == (WARNING, "mil.gather (%e)")
    assert small.message.startswith("gather usually runs on the CPU/GPU")
    at_limit = [f.message for f in gather(32768).findings]
    assert not any("lookup axis" in m for m in at_limit)
    over = [f for f in gather(32769).findings if "lookup axis" in f.message]
    assert len(over) == 1
    assert over[0].message.startswith("the gathered table has 32769 entries")
    assert over[0].suggestion == "split the table into 2 chunks of ≤ 32768"


FALLBACK_CASES = [
    # (op text, location or None when the op is fine)
    (
        f'%y = "mil.scatter"(%x, %i, %x) {{axis = 0 : i64}} : ({ACT}, tensor<2xi32>, {ACT}) -> {ACT}',
        "mil.scatter (%y)",
    ),
    (
        f'%y = "mil.scatter_nd"(%x, %i, %x) : ({ACT}, tensor<2xi32>, {ACT}) -> {ACT}',
        "mil.scatter_nd (%y)",
    ),
    (f'%y = "mil.fill"() : () -> {ACT}', "mil.fill (%y)"),
    (f'%y = "mil.cond"(%x) : ({ACT}) -> {ACT}', "mil.cond (%y)"),
    (f'%y = "mil.while_loop"(%x) : ({ACT}) -> {ACT}', "mil.while_loop (%y)"),
    (f'%y = "mil.lstm"(%x) : ({ACT}) -> {ACT}', "mil.lstm (%y)"),
    (
        f"%y = mil.band_part %x {{lower = -1 : i64, upper = 0 : i64}} : ({ACT}) -> {ACT}",
        "mil.band_part (%y)",
    ),
    # registered pooling and upsampling ops: the rules read their properties
    (
        f'%y = mil.max_pool %x {{kernel_sizes = array<i64: 1, 14>, strides = array<i64: 1, 1>, pad_type = "valid"}} : ({ACT}) -> tensor<1x64x1x243xf16>',
        "mil.max_pool (%y)",
    ),
    (
        f'%y = mil.avg_pool %x {{kernel_sizes = array<i64: 1, 3>, strides = array<i64: 1, 3>, pad_type = "valid"}} : ({ACT}) -> tensor<1x64x1x85xf16>',
        "mil.avg_pool (%y)",
    ),
    (
        f'%y = mil.max_pool %x {{kernel_sizes = array<i64: 1, 13>, strides = array<i64: 1, 2>, pad_type = "valid"}} : ({ACT}) -> tensor<1x64x1x122xf16>',
        None,
    ),
    (
        f"%y = mil.upsample_bilinear %x {{scale_factor_height = 1 : i64, scale_factor_width = 3 : i64}} : ({ACT}) -> tensor<1x64x1x768xf16>",
        "mil.upsample_bilinear (%y)",
    ),
    (
        f"%y = mil.upsample_bilinear %x {{scale_factor_height = 2 : i64, scale_factor_width = 2 : i64}} : ({ACT}) -> tensor<1x64x2x512xf16>",
        None,
    ),
    (f'%y = "mil.my_custom_layer"(%x) : ({ACT}) -> {ACT}', "mil.my_custom_layer (%y)"),
]


@pytest.mark.parametrize(("op", "location"), FALLBACK_CASES)
def test_ops_that_fall_back_are_warnings(op: str, location: str | None) -> None:
    report = lint(
        f"""
func.func @f(%x: {ACT}, %i: tensor<2xi32>) {{
  {op}
  func.return
}}
"""
    )
    if location is None:
        assert report.findings == []
    else:
        finding = single(report)
        assert (finding.severity, finding.location) == (WARNING, location)


def test_dilated_conv_is_a_warning() -> None:
    def conv(dilations: str) -> LintReport:
        return lint(
            f"""
func.func @f(%x: tensor<1x4x9x9xf16>) -> tensor<1x4x5x5xf16> {{
  %w = mil.const weight "w" : tensor<4x4x3x3xf16>
  %y = mil.conv %x, %w {{dilations = array<i64: {dilations}>}} : (tensor<1x4x9x9xf16>, tensor<4x4x3x3xf16>) -> tensor<1x4x5x5xf16>
  func.return %y : tensor<1x4x5x5xf16>
}}
"""
        )

    finding = single(conv("2, 2"))
    assert finding.location == "mil.conv (%y)"
    assert "(dilations [2, 2] > 1)" in finding.message


def test_op_rules_extend_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """A new entry in OP_RULES applies to ops of that name, registered or not."""
    text = f"""
func.func @f(%x: {ACT}) -> {ACT} {{
  %y = mil.relu %x : {ACT}
  %z = "mil.erfinv"(%y) : ({ACT}) -> {ACT}
  func.return %z : {ACT}
}}
"""
    monkeypatch.setitem(rules.OP_RULES, "mil.relu", OpRule(ERROR, "no relu today"))
    monkeypatch.setitem(
        rules.OP_RULES, "mil.erfinv", OpRule(WARNING, "erfinv is slow", "avoid it")
    )
    assert [f.format() for f in lint(text).findings] == [
        "ane-lint: error: @f: mil.relu (%y): no relu today",
        "ane-lint: warning: @f: mil.erfinv (%z): erfinv is slow; avoid it",
    ]


def test_an_op_states_its_rules_flops_and_unit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The lint, the placement and the estimate ask the op's class (its
    `ANE_RULES`, `flops`): a rule or a cost given to an op is everywhere,
    with no table of op names to extend."""
    from xdsl_ane.ane.chips import get_chip
    from xdsl_ane.dialects import mil
    from xdsl_ane.estimator.cost import flops
    from xdsl_ane.passes.placement import placement_rule

    text = f"""
func.func @f(%x: {ACT}) -> {ACT} {{
  %y = mil.relu %x : {ACT}
  func.return %y : {ACT}
}}
"""
    rule = OpRule(WARNING, "relu is slow today", "avoid it", unit="gpu")
    monkeypatch.setattr(mil.ReluOp, "ANE_RULES", (rule,))
    monkeypatch.setattr(mil.ReluOp, "FLOPS_PER_ELEMENT", 3)
    module = parse(text)
    assert [f.format() for f in lint_module(module).findings] == [
        "ane-lint: warning: @f: mil.relu (%y): relu is slow today; avoid it"
    ]
    relu = next(op for op in module.walk() if isinstance(op, mil.ReluOp))
    placement = placement_rule(relu, get_chip("m4"))
    assert (placement.unit, placement.rule) == ("gpu", "relu")
    assert flops(relu) == 3 * 64 * 256


def test_unlowered_rlx_and_foreign_ops_are_errors() -> None:
    report = lint(
        f"""
func.func @f(%x: {ACT}) -> {ACT} {{
  %r = rlx.relu %x : {ACT}
  %s = arith.addf %r, %r : {ACT}
  %t = "other.op"(%s) : ({ACT}) -> {ACT}
  func.return %t : {ACT}
}}
"""
    )
    assert [(f.severity, f.location, f.suggestion) for f in report.findings] == [
        (ERROR, "rlx.relu (%r)", "run convert-rlx-to-mil first"),
        (ERROR, "arith.addf (%s)", "lower it to mil ops"),
        (ERROR, "other.op (%t)", "lower it to mil ops"),
    ]


def test_dynamic_and_data_dependent_shapes_are_errors() -> None:
    report = lint(
        """
func.func @f(%x: tensor<1x8x1x?xf16>, %y: tensor<*xf16>) -> tensor<?x4xi32> {
  %nz = "mil.non_zero"(%x) : (tensor<1x8x1x?xf16>) -> tensor<?x4xi32>
  func.return %nz : tensor<?x4xi32>
}
"""
    )
    assert kinds(report) == [
        (ERROR, "argument %x", "dynamic shape tensor<1x8x1x?xf16>"),
        (ERROR, "argument %y", "dynamic shape tensor<*xf16>"),
        (ERROR, "mil.non_zero (%nz)", "the result shape depends on the input data"),
        (ERROR, "mil.non_zero (%nz)", "dynamic shape tensor<?x4xi32>"),
    ]


# --- program size: generated modules -----------------------------------------------


def chain_of_relus(ops: int, consts: int = 0) -> builtin.ModuleOp:
    """`@big(x) -> x` through `ops` relus (built without type inference, for
    speed) and `consts` unused weight consts."""
    t = tensor((1, 8, 1, 8), f16)
    block = Block(arg_types=[t])
    value: SSAValue = block.args[0]
    for _ in range(ops):
        relu = mil.ReluOp.create(operands=[value], result_types=[t])
        block.add_op(relu)
        value = relu.results[0]
    for _ in range(consts):
        block.add_op(mil.ConstOp.from_weight("w", tensor((1,), f16)))
    block.add_op(func.ReturnOp(value))
    return builtin.ModuleOp(
        [func.FuncOp("big", func.FunctionType.from_lists([t], [t]), Region(block))]
    )


def test_op_count_limit_excludes_consts() -> None:
    start = time.perf_counter()
    module = chain_of_relus(MAX_OPS, consts=50)
    report = lint_module(module)
    assert report.findings == [] and report.ops == MAX_OPS

    # one more op crosses the limit
    function = module.body.block.first_op
    assert isinstance(function, func.FuncOp)
    ret = function.body.block.last_op
    assert ret is not None
    extra = mil.ReluOp.create(
        operands=[ret.operands[0]], result_types=[ret.operands[0].type]
    )
    function.body.block.insert_op_before(extra, ret)
    ret.operands = [extra.results[0]]
    finding = single(lint_module(module))
    assert (finding.severity, finding.function, finding.location) == (
        WARNING,
        "big",
        "",
    )
    assert finding.message.startswith(f"{MAX_OPS + 1} ops (consts excluded)")
    assert finding.format().startswith("ane-lint: warning: @big: 18001 ops")
    assert time.perf_counter() - start < 10


def weights_module(*consts: mil.ConstOp) -> builtin.ModuleOp:
    """`@weights()` holding just the given consts."""
    block = Block([*consts, func.ReturnOp()])
    return builtin.ModuleOp(
        [func.FuncOp("weights", func.FunctionType.from_lists([], []), Region(block))]
    )


GIB = 1 << 30


@pytest.mark.parametrize(
    ("shapes", "severity"),
    [
        ([(16384, 16384, 2)], None),  # exactly 1 GiB of fp16
        ([(16384, 16384, 2), (1,)], WARNING),  # 1 GiB and one fp16 element
        ([(16384, 16384, 3)], WARNING),  # 1.5 GiB
        ([(16384, 16384, 4)], WARNING),  # exactly 2 GiB: over iOS's limit only
        ([(16384, 16384, 4), (1,)], ERROR),  # over macOS's limit too
    ],
)
def test_weight_size_counts_declared_types(
    shapes: list[tuple[int, ...]], severity: Severity | None
) -> None:
    """Weight consts with large declared types (no data needed)."""
    consts = [
        mil.ConstOp.from_weight(f"w{i}", tensor(s, f16)) for i, s in enumerate(shapes)
    ]
    report = lint_module(weights_module(*consts))
    if severity is None:
        assert report.findings == []
        return
    total = sum(2 * math.prod(s) for s in shapes)
    finding = single(report)
    assert (finding.severity, finding.location) == (severity, "")
    assert finding.message.startswith(
        f"{total / GIB:.2f} GiB of weights in {len(shapes)} const"
    )


def test_inline_consts_count_as_weights() -> None:
    """An inline `val` const counts by its type like a weight const."""
    big = mil.ConstOp.from_weight("w", tensor((16384, 16384, 2), f16))
    module = parse(
        """
func.func @weights() {
  %c = mil.const dense<1.0> : tensor<2xf16>
  func.return
}
"""
    )
    function = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    function.body.block.insert_op_before(big, function.body.block.first_op)
    finding = single(lint_module(module))
    assert finding.severity is WARNING and "in 2 consts" in finding.message


def test_quantized_weights_count_by_storage() -> None:
    """int8 weights behind constexpr_affine_dequantize count as stored (1.5
    GiB of int8), not as the 3 GiB of fp16 they expand to; the constexpr op
    counts as a const, not as an op."""
    w = "tensor<16384x16384x6xi8>"
    report = lint(
        f"""
func.func @q() -> tensor<16384x16384x6xf16> {{
  %data = mil.const weight "w.int8" : {w}
  %zp = mil.const dense<0> : tensor<i8>
  %scale = mil.const dense<0.01> : tensor<f16>
  %w = mil.constexpr_affine_dequantize %data, %zp, %scale {{axis = 0 : i64}} : ({w}, tensor<i8>, tensor<f16>) -> tensor<16384x16384x6xf16>
  func.return %w : tensor<16384x16384x6xf16>
}}
"""
    )
    finding = single(report)
    assert finding.severity is WARNING
    assert finding.message.startswith("1.50 GiB of weights in 3 consts")
    assert report.ops == 0


# --- names, the pass, no changes ---------------------------------------------------


def test_printed_names_match_the_printer() -> None:
    """Name hints deduplicated with suffixes, the rest numbered, as printed."""
    t = tensor((1, 4, 1, 4), f16)

    def body(x: SSAValue) -> list[SSAValue]:
        values = [x]
        for i in range(6):
            op = mil.ReluOp(values[-1])
            op.result.name_hint = "x" if i % 2 else None
            values.append(op.result)
        return values[-1:]

    module = builtin.ModuleOp([build_function("f", [t], body, ["x"])])
    function = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    names = printed_names(function)
    text = str(module)
    for op in function.body.block.ops:
        for r in op.results:
            assert f"%{names[r]} = mil.relu" in text
    assert sorted(names.values()) == ["0", "1", "2", "x", "x_1", "x_2", "x_3"]


def test_pass_prints_findings_and_fails_on_errors(
    capsys: pytest.CaptureFixture[str],
) -> None:
    module = parse(
        """
func.func @f(%x: tensor<1x8x1x4xf32>) -> tensor<1x8x1x4xf32> {
  %r = rlx.relu %x : tensor<1x8x1x4xf32>
  func.return %r : tensor<1x8x1x4xf32>
}
"""
    )
    with pytest.raises(PassFailedException) as info:
        AneLintPass().apply(Context(), module)
    message = str(info.value)
    first_error = "ane-lint: error: @f: rlx.relu (%r): rlx op not lowered to mil"
    assert message.startswith(first_error)
    assert message.endswith("ane-lint: 1 function, 1 op, 1 error, 3 warnings")
    err = capsys.readouterr().err.splitlines()
    assert (
        len(err) == 5 and err[-1] == "ane-lint: 1 function, 1 op, 1 error, 3 warnings"
    )


def test_strict_fails_on_warnings_only(capsys: pytest.CaptureFixture[str]) -> None:
    module = parse(
        """
func.func @f(%x: tensor<1x8x1x4xf32>) -> tensor<1x8x1x4xf32> {
  func.return %x : tensor<1x8x1x4xf32>
}
"""
    )
    AneLintPass().apply(Context(), module)
    assert capsys.readouterr().err.endswith("0 errors, 2 warnings\n")
    with pytest.raises(
        PassFailedException, match=r"^ane-lint: warning: @f: argument %x"
    ):
        AneLintPass(strict=True).apply(Context(), module)
    AneLintPass(strict=True).apply(Context(), parse(CLEAN))


def test_lint_changes_nothing() -> None:
    text = CLEAN + "\n".join(
        f"""
func.func @case{i}(%x: {ACT}, %i: tensor<2xi32>) {{
  {op}
  func.return
}}"""
        for i, (op, _) in enumerate(FALLBACK_CASES)
    )
    module = parse(text)
    before = str(module)
    with pytest.raises(PassFailedException):
        AneLintPass(strict=True).apply(Context(), module)
    lint_module(module)
    assert str(module) == before


# --- real workloads ----------------------------------------------------------------


def lowered(module: builtin.ModuleOp) -> builtin.ModuleOp:
    ConvertRlxToMilPass().apply(Context(), module)
    return module


def test_qwen3_decoder_layer() -> None:
    """The lowered fp32 layer: fp32 I/O and compute and nothing else — no
    errors, no fallback ops, and no axis above 16384 (the grouped-query head
    repeat stays at [B·Hkv, R, S, D])."""
    module = lowered(build_decoder_layer(QWEN3_0_6B))
    before = str(module)
    report = lint_module(module)
    assert str(module) == before
    assert report.errors == 0
    locations = [f.location for f in report.findings]
    assert locations[:2] == ["argument %x", "result #0"]
    fp32 = [f for f in report.findings if "fp32" in f.message]
    assert len(fp32) == 3
    assert [f for f in report.findings if f not in fp32] == []
    assert report.functions == 1 and 50 < report.ops < 100


def test_training_head_over_qwen3_vocabulary_needs_splitting() -> None:
    """logits = h·Wᵀ over 151936 classes, cross-entropy forward and backward:
    the vocabulary axis exceeds 65536, so the lint fails with the split
    suggestion on the weight and every logits-sized tensor."""
    config = QWEN3_0_6B.with_(hidden_size=64)
    n, vocab = 8, config.vocab_size

    def body(h: SSAValue, labels: SSAValue) -> list[SSAValue]:
        b = stateless_builder(config, dtype=f16)
        w = b.param("lm_head.weight", (vocab, config.hidden_size))
        logits = rlx.MatmulOp(h, w, transpose_rhs=True).result
        loss = rlx.SoftmaxCrossEntropyOp(logits, labels).result
        d_loss = rlx.ConstantOp(dense_from_numpy(np.full(n, 1.0 / n), f16)).result
        d_logits = rlx.SoftmaxCrossEntropyBackwardOp(logits, labels, d_loss).result
        return [loss, rlx.MatmulOp(d_logits, w).result]

    types = [tensor((n, config.hidden_size), f16), tensor((n,), i32)]
    module = lowered(
        builtin.ModuleOp(
            [build_function("training_head", types, body, ["h", "labels"])]
        )
    )
    report = lint_module(module)
    assert report.errors > 0
    errors = [f for f in report.findings if f.severity is ERROR]
    assert all("has size 151936, above 65536" in f.message for f in errors)
    assert all(
        f.suggestion == f"split axis {0 if f.op_name == 'mil.const' else 1} into 10 "
        "chunks of ≤ 16384"
        for f in errors
    )
    assert errors[0].op_name == "mil.const"  # the lm_head weight, declared first
    assert {f.op_name for f in errors} >= {"mil.const", "mil.matmul", "mil.one_hot"}
    with pytest.raises(PassFailedException, match="split axis 0 into 10 chunks"):
        AneLintPass().apply(Context(), module)

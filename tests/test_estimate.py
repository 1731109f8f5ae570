"""`xdsl-ane estimate` and `xdsl_ane.estimate`: the chip table, each
placement rule moving an op off the ANE and keeping one on, the roofline
latency of single ops by hand, totals as sums of their parts, segments and
transfers, the JSON schema, the chart, and the command on the Qwen3
decoder layer, its compiled package and bad input."""

from __future__ import annotations

import json
import math
import sys

import pytest
from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.dialects.arith import Arith
from xdsl.dialects.builtin import Builtin, StringAttr, UnregisteredOp
from xdsl.dialects.func import Func
from xdsl.parser import Parser

from xdsl_ane.ane.chips import CHIPS, get_chip
from xdsl_ane.dialects.mil import MIL
from xdsl_ane.dialects.typing import tensor
from xdsl_ane.errors import XdslAneError
from xdsl_ane.estimator import estimate_module
from xdsl_ane.estimator.report import plot, summary, table
from xdsl_ane.passes.placement import placement_rule
from xdsl_ane.tools.cli import main

ACT = "tensor<1x64x1x256xf16>"
DECODER = "examples/qwen3_0.6b_decoder_layer.mlir"


def parse(text: str) -> builtin.ModuleOp:
    ctx = Context(allow_unregistered=True)
    for dialect in (Builtin, Func, Arith, MIL):
        ctx.load_dialect(dialect)
    return Parser(ctx, text).parse_module()


def program(args: str, body: str) -> builtin.ModuleOp:
    module = parse(f"func.func @f({args}) {{\n{body}\n  func.return\n}}")
    module.verify()
    return module


def only(module: builtin.ModuleOp, chip: str = "m4"):
    """The estimate of the module's single non-const op."""
    result = estimate_module(module, chip)
    assert len(result.ops) == 1, table(result)
    return result.ops[0]


# --- the chip table -----------------------------------------------------------


def test_every_chip_of_the_contract_is_known() -> None:
    assert list(CHIPS) == "a14 a15 a16 a17 a18 m1 m2 m3 m4".split()
    m1, m4 = get_chip("m1"), get_chip("M4")
    assert (m1.tops_fp16, m4.tops_fp16) == (11.0, 18.6)
    assert m1.bandwidth == pytest.approx(11e12 / 141)
    assert (m1.max_spatial, get_chip("a16").max_spatial) == (16384, 65536)
    assert not m1.sin_cos and get_chip("a15").sin_cos


def test_unknown_chip_lists_the_known_ones(capsys) -> None:
    with pytest.raises(XdslAneError) as e:
        get_chip("m9")
    assert str(e.value) == (
        "unknown chip 'm9' (known: a14, a15, a16, a17, a18, m1, m2, m3, m4)"
    )
    assert main(["estimate", DECODER, "--chip", "m9"]) == 1
    err = capsys.readouterr().err
    assert err == f"xdsl-ane: error: {e.value}\n"


# --- placement: each rule moves an op off the ANE, and keeps one on ---------------

RULES = [
    # (rule, chip, arguments, op moved off, op kept on)
    (
        "dimension",
        "m1",
        "%x: tensor<1x8x1x20000xf16>, %y: tensor<1x8x1x16384xf16>",
        "%r = mil.relu %x : tensor<1x8x1x20000xf16>",
        "%r = mil.relu %y : tensor<1x8x1x16384xf16>",
    ),
    (
        "rank",
        "m4",
        "%x: tensor<1x2x2x2x2x2xf16>, %y: tensor<1x2x2x2x2xf16>",
        "%r = mil.relu %x : tensor<1x2x2x2x2x2xf16>",
        "%r = mil.relu %y : tensor<1x2x2x2x2xf16>",
    ),
    (
        "dtype",
        "m4",
        f"%x: tensor<1x64x1x256xf32>, %y: {ACT}",
        "%r = mil.relu %x : tensor<1x64x1x256xf32>",
        f"%r = mil.relu %y : {ACT}",
    ),
    (
        "dtype",
        "m4",
        f"%x: tensor<4xi32>, %y: {ACT}",
        "%r = mil.add %x, %x : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>",
        f"%r = mil.add %y, %y : ({ACT}, {ACT}) -> {ACT}",
    ),
    (
        "gather",
        "m4",
        f"%ids: tensor<1x8xi32>, %y: {ACT}",
        '%t = mil.const weight "embed" : tensor<100x64xf16>\n'
        "%r = mil.gather %t, %ids : (tensor<100x64xf16>, tensor<1x8xi32>) -> "
        "tensor<1x8x64xf16>",
        f"%r = mil.sigmoid %y : {ACT}",
    ),
    (
        "reduce_prod",
        "m4",
        f"%x: {ACT}",
        f"%r = mil.reduce_prod %x {{axes = array<i64: 1>, keep_dims = true}} : "
        f"({ACT}) -> tensor<1x1x1x256xf16>",
        f"%r = mil.reduce_sum %x {{axes = array<i64: 1>, keep_dims = true}} : "
        f"({ACT}) -> tensor<1x1x1x256xf16>",
    ),
    (
        "conv",
        "m4",
        "%x: tensor<1x4x1x64xf16>",
        '%w = mil.const weight "w" : tensor<4x4x1x15xf16>\n'
        "%r = mil.conv %x, %w : (tensor<1x4x1x64xf16>, tensor<4x4x1x15xf16>) -> "
        "tensor<1x4x1x50xf16>",
        '%w = mil.const weight "w" : tensor<4x4x1x13xf16>\n'
        "%r = mil.conv %x, %w : (tensor<1x4x1x64xf16>, tensor<4x4x1x13xf16>) -> "
        "tensor<1x4x1x52xf16>",
    ),
    (
        "conv",
        "m4",
        "%x: tensor<1x4x9x9xf16>",
        '%w = mil.const weight "w" : tensor<4x4x3x3xf16>\n'
        "%r = mil.conv %x, %w {dilations = array<i64: 2, 2>} : "
        "(tensor<1x4x9x9xf16>, tensor<4x4x3x3xf16>) -> tensor<1x4x5x5xf16>",
        '%w = mil.const weight "w" : tensor<4x4x3x3xf16>\n'
        "%r = mil.conv %x, %w {dilations = array<i64: 1, 1>} : "
        "(tensor<1x4x9x9xf16>, tensor<4x4x3x3xf16>) -> tensor<1x4x7x7xf16>",
    ),
    (
        "fp32-const",
        "m4",
        "",
        "%c = mil.const dense<1.0> : tensor<4xf32>\n"
        '%r = mil.cast %c {dtype = "fp16"} : (tensor<4xf32>) -> tensor<4xf16>',
        "%c = mil.const dense<1.0> : tensor<4xf16>\n"
        '%r = mil.cast %c {dtype = "fp16"} : (tensor<4xf16>) -> tensor<4xf16>',
    ),
    (
        "state-shape",
        "m4",
        "%s: !mil.state<tensor<1x2x32x16xf16>>, %t: !mil.state<tensor<1x2x32x64xf16>>",
        "%r = mil.read_state %s : (!mil.state<tensor<1x2x32x16xf16>>) -> "
        "tensor<1x2x32x16xf16>",
        "%r = mil.read_state %t : (!mil.state<tensor<1x2x32x64xf16>>) -> "
        "tensor<1x2x32x64xf16>",
    ),
    (
        "reduce_argmax",
        "m4",
        "%x: tensor<1x4096xf16>, %y: tensor<1x2048xf16>",
        "%r = mil.reduce_argmax %x {axis = 1 : i64} : (tensor<1x4096xf16>) -> "
        "tensor<1xi32>",
        "%r = mil.reduce_argmax %y {axis = 1 : i64} : (tensor<1x2048xf16>) -> "
        "tensor<1xi32>",
    ),
    (
        "sin-cos",
        "m1",
        f"%x: {ACT}",
        f"%r = mil.sin %x : {ACT}",
        f"%r = mil.exp %x : {ACT}",
    ),
    (
        "custom",
        "m4",
        f"%x: {ACT}",
        f'%r = "mil.my_custom_layer"(%x) : ({ACT}) -> {ACT}',
        f"%r = mil.tanh %x : {ACT}",
    ),
    (
        "band_part",
        "m4",
        f"%x: {ACT}",
        f"%r = mil.band_part %x {{lower = -1 : i64, upper = 0 : i64}} : ({ACT}) -> {ACT}",
        f"%r = mil.relu %x : {ACT}",
    ),
]


@pytest.mark.parametrize(
    ("rule", "chip", "args", "off", "on"),
    RULES,
    ids=[f"{r[0]}-{i}" for i, r in enumerate(RULES)],
)
def test_placement_rule(rule: str, chip: str, args: str, off: str, on: str) -> None:
    moved = only(program(args, off), chip)
    assert (moved.unit != "ane", moved.rule) == (True, rule), moved
    assert moved.reason
    kept = only(program(args, on), chip)
    assert (kept.unit, kept.rule, kept.reason) == ("ane", "", ""), kept


def test_sin_runs_on_the_ane_from_a15() -> None:
    module = program(f"%x: {ACT}", f"%r = mil.sin %x : {ACT}")
    units = {c: only(module, c).unit for c in CHIPS}
    assert units == {c: "gpu" if c in ("a14", "m1") else "ane" for c in CHIPS}


def test_dimension_limit_is_the_chips() -> None:
    """W/H above 16384 leave the ANE on M1/M2-class chips only; channels
    up to 65536 stay on every chip."""
    wide = program(
        "%x: tensor<1x8x1x20000xf16>", "%r = mil.relu %x : tensor<1x8x1x20000xf16>"
    )
    assert {c: only(wide, c).unit for c in ("a14", "a15", "m1", "m2")} == dict.fromkeys(
        ("a14", "a15", "m1", "m2"), "gpu"
    )
    assert {only(wide, c).unit for c in ("a16", "a17", "a18", "m3", "m4")} == {"ane"}
    channels = program(
        "%x: tensor<1x20000x1x8xf16>", "%r = mil.relu %x : tensor<1x20000x1x8xf16>"
    )
    assert only(channels, "m1").unit == "ane"


def test_states_of_different_shapes_leave_the_ane_on_m1() -> None:
    module = program(
        "%s: !mil.state<tensor<1x2x32x64xf16>>, %t: !mil.state<tensor<1x2x64x64xf16>>",
        "%a = mil.read_state %s : (!mil.state<tensor<1x2x32x64xf16>>) -> "
        "tensor<1x2x32x64xf16>\n"
        "%b = mil.read_state %t : (!mil.state<tensor<1x2x64x64xf16>>) -> "
        "tensor<1x2x64x64xf16>",
    )
    assert {o.rule for o in estimate_module(module, "m1").ops} == {"state-shapes"}
    assert {o.unit for o in estimate_module(module, "m2").ops} == {"ane"}


def unregistered(name: str, operand_type, result_type, **attributes):
    """An op of `name` as the vision ops are parsed today (unregistered) or
    will be: the rules are keyed on the name."""
    from xdsl.ir import Block

    block = Block(arg_types=[operand_type])
    op = UnregisteredOp.with_name(name).create(
        operands=[block.args[0]],
        result_types=[result_type],
        attributes={"op_name__": StringAttr(name), **attributes},
    )
    block.add_op(op)
    return op


@pytest.mark.parametrize(
    ("name", "attributes", "moved"),
    [
        ("mil.max_pool", {"kernel_sizes": [14, 14], "strides": [1, 1]}, True),
        ("mil.max_pool", {"kernel_sizes": [13, 13], "strides": [2, 2]}, False),
        ("mil.avg_pool", {"kernel_sizes": [3, 3], "strides": [3, 3]}, True),
        ("mil.avg_pool", {"kernel_sizes": [3, 3], "strides": [1, 1]}, False),
        ("mil.upsample_nearest_neighbor", {"scale_factor_height": 4}, True),
        ("mil.upsample_bilinear", {"scale_factor_width": 2}, False),
    ],
)
def test_pooling_and_upsampling_limits(name, attributes, moved) -> None:
    from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, i64

    attrs = {
        k: DenseArrayBase.from_list(i64, v)
        if isinstance(v, list)
        else IntegerAttr(v, i64)
        for k, v in attributes.items()
    }
    t = tensor((1, 4, 8, 8), builtin.f16)
    op = unregistered(name, t, t, **attrs)
    placement = placement_rule(op, get_chip("m4"))
    assert (placement.unit != "ane") is moved, placement
    if moved:
        assert placement.rule == name.removeprefix("mil.")


# --- latency: the roofline by hand ------------------------------------------------


def roofline_us(flops: float, bytes_: float, chip: str = "m4") -> float:
    c = get_chip(chip)
    return max(flops / c.peak_flops, bytes_ / c.bandwidth) * 1e6


def test_matmul_latency_is_the_roofline() -> None:
    x, y, out = (1, 1, 256, 512), (1, 1, 512, 1024), (1, 1, 256, 1024)
    module = program(
        f"%x: {tensor(x, builtin.f16)}, %y: {tensor(y, builtin.f16)}",
        f"%r = mil.matmul %x, %y : ({tensor(x, builtin.f16)}, "
        f"{tensor(y, builtin.f16)}) -> {tensor(out, builtin.f16)}",
    )
    op = only(module)
    flops = 2 * 256 * 1024 * 512
    bytes_ = 2 * (256 * 512 + 512 * 1024 + 256 * 1024)
    assert (op.flops, op.bytes) == (flops, bytes_)
    assert op.us == pytest.approx(roofline_us(flops, bytes_))
    assert flops / bytes_ > 141  # compute-bound: FLOPs / peak
    assert op.us == pytest.approx(flops / 18.6e12 * 1e6)


def test_conv_latency_counts_its_weights() -> None:
    module = program(
        f"%x: {ACT}",
        '%w = mil.const weight "w" : tensor<128x64x1x1xf16>\n'
        f"%r = mil.conv %x, %w : ({ACT}, tensor<128x64x1x1xf16>) -> "
        "tensor<1x128x1x256xf16>",
    )
    op = only(module)
    flops = 2 * (128 * 256) * 64
    bytes_ = 2 * (64 * 256 + 128 * 256 + 128 * 64)
    assert (op.flops, op.bytes, op.weight_bytes) == (flops, bytes_, 2 * 128 * 64)
    assert op.us == pytest.approx(roofline_us(flops, bytes_))


def test_elementwise_latency_is_bandwidth_bound() -> None:
    op = only(program(f"%x: {ACT}", f"%r = mil.relu %x : {ACT}"), "m1")
    n = 64 * 256
    assert (op.flops, op.bytes) == (n, 2 * n * 2)
    assert op.us == pytest.approx(4 * n / (11e12 / 141) * 1e6)


def test_working_set_above_sram_pays_a_spill() -> None:
    """A conv with 64 MiB of weights on M4 (32 MiB SRAM): the excess is
    written out and read back once more."""
    x = "tensor<1x4096x1x1xf16>"
    module = program(
        f"%x: {x}",
        '%w = mil.const weight "w" : tensor<8192x4096x1x1xf16>\n'
        f"%r = mil.conv %x, %w : ({x}, tensor<8192x4096x1x1xf16>) -> "
        "tensor<1x8192x1x1xf16>",
    )
    op = only(module)
    m4 = get_chip("m4")
    assert op.spill_bytes == 2 * (op.bytes - m4.sram_bytes)
    assert op.us == pytest.approx((op.bytes + op.spill_bytes) / m4.bandwidth * 1e6)


def test_gpu_op_runs_at_its_stated_share() -> None:
    from xdsl_ane.estimator.model import OTHER_UNIT_SHARE

    op = only(
        program(
            "%x: tensor<1x64x1x256xf32>",
            "%r = mil.softmax %x {axis = 1 : i64} : tensor<1x64x1x256xf32>",
        )
    )
    m4 = get_chip("m4")
    n = 64 * 256
    expected = max(
        5 * n / (m4.peak_flops * OTHER_UNIT_SHARE["gpu"]), 8 * n / m4.bandwidth
    )
    assert (op.unit, op.flops) == ("gpu", 5 * n)
    assert op.us == pytest.approx(expected * 1e6)


SWITCHING = f"""
func.func @f(%x: {ACT}, %ids: tensor<1x8xi32>) -> tensor<1x8x64xf16> {{
  %a = mil.relu %x : {ACT}
  %t = mil.const weight "embed" : tensor<100x64xf16>
  %g = mil.gather %t, %ids : (tensor<100x64xf16>, tensor<1x8xi32>) -> tensor<1x8x64xf16>
  %s = mil.sigmoid %g : tensor<1x8x64xf16>
  %b = mil.tanh %a : {ACT}
  func.return %s : tensor<1x8x64xf16>
}}
"""


def test_segments_switches_and_transfers() -> None:
    """relu and tanh share one ANE segment (tanh does not wait for the
    gather); the gather is a CPU segment; the sigmoid of its result is a
    second ANE segment, entered by one transfer of the gathered tensor."""
    result = estimate_module(parse(SWITCHING), "m4")
    units = [(s.unit, [result.ops[i].op for i in s.indices]) for s in result.segments]
    assert units == [
        ("ane", ["relu", "tanh"]),
        ("cpu", ["gather"]),
        ("ane", ["sigmoid"]),
    ]
    assert result.switches == 2
    crossing = 8 * 64 * 2
    assert [s.transfer_bytes for s in result.segments] == [0, 0, crossing]
    m4 = get_chip("m4")
    assert result.segments[2].transfer_us == pytest.approx(
        2 * crossing / m4.bandwidth * 1e6
    )
    assert [s.dispatch_us for s in result.segments] == [150.0, 0.0, 150.0]


def test_totals_are_sums_of_parts() -> None:
    result = estimate_module(parse(SWITCHING), "m4")
    parts = (
        sum(o.us for o in result.ops)
        + sum(s.dispatch_us for s in result.segments)
        + sum(s.transfer_us for s in result.segments)
    )
    assert result.total_us == pytest.approx(parts)
    assert result.total_ms == pytest.approx(parts / 1000)
    assert result.total_us == pytest.approx(sum(s.us for s in result.segments))
    flops = [o.flops for o in result.ops]
    ane = [o.flops for o in result.ops if o.unit == "ane"]
    assert result.ane_fraction == pytest.approx(sum(ane) / sum(flops))
    assert result.ane_op_fraction == pytest.approx(3 / 4)
    data = result.to_json()
    assert data["total_ms"] == pytest.approx(
        sum(r["us"] for r in data["ops"]) / 1000
        + sum(s["dispatch_us"] + s["transfer_us"] for s in data["segments"]) / 1000
    )


# --- output -------------------------------------------------------------------


@pytest.fixture(scope="module")
def decoder_json() -> dict:
    from contextlib import redirect_stdout
    from io import StringIO

    out = StringIO()
    with redirect_stdout(out):
        assert main(["estimate", DECODER, "--json"]) == 0
    return json.loads(out.getvalue())


def test_json_schema(decoder_json: dict) -> None:
    data = decoder_json
    assert {
        "chip",
        "total_ms",
        "ane_fraction",
        "ane_op_fraction",
        "segments",
        "ops",
    } <= (set(data))
    assert data["chip"] == "m4"
    assert isinstance(data["total_ms"], float) and data["total_ms"] > 0
    assert 0 <= data["ane_fraction"] <= 1 and 0 <= data["ane_op_fraction"] <= 1
    assert 50 < len(data["ops"]) < 100  # the compiled layer's ops, consts aside
    for row in data["ops"]:
        assert {"name", "op", "unit", "reason", "flops", "bytes", "us"} <= set(row)
        assert row["unit"] in ("ane", "cpu", "gpu")
        assert isinstance(row["flops"], int) and isinstance(row["bytes"], int)
    assert sum(s["ops"] for s in data["segments"]) == len(data["ops"])


def test_decoder_layer_runs_on_the_ane(decoder_json: dict) -> None:
    """The fp16 [1, C, 1, S] layer: every op on the ANE, one dispatch; its
    FLOPs are its seven projections and two attention matmuls and a little
    more: 2·S·(1024·(2048+1024+1024) + 2048·1024 + 3·1024·3072) + 2·2·16·S²·128."""
    data = decoder_json
    assert (data["ane_fraction"], data["ane_op_fraction"]) == (1.0, 1.0)
    assert len(data["segments"]) == 1
    s = 256
    projections = 2 * s * (1024 * 4096 + 2048 * 1024 + 3 * 1024 * 3072)
    attention = 2 * 2 * 16 * s * s * 128
    matmuls = sum(r["flops"] for r in data["ops"] if r["op"] in ("conv", "matmul"))
    assert matmuls == projections + attention
    # roofline floor: the FLOPs at peak plus one dispatch
    assert data["total_ms"] > (matmuls / 18.6e12 + 0.15e-3) * 1e3


def test_table_and_summary() -> None:
    result = estimate_module(parse(SWITCHING), "m1")
    text = table(result)
    lines = text.splitlines()
    assert lines[0].split() == ["op", "unit", "FLOPs", "bytes", "µs", "why"]
    assert "gather usually runs on the CPU/GPU" in text
    assert len(lines) == 1 + len(result.ops)
    assert table(result, "layer").splitlines()[0].split()[:2] == ["layer", "ops"]
    line = summary(result)
    assert line.startswith("estimate on M1 (11 TOPS fp16, 78 GB/s): ")
    assert "3 segments (2 switches)" in line and "\n" not in line


def test_plot_writes_png_and_svg(tmp_path) -> None:
    result = estimate_module(parse(SWITCHING), "m4")
    png = plot(result, tmp_path / "e.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    svg = plot(result, tmp_path / "e.svg")
    assert b"<svg" in svg.read_bytes()[:500]
    with pytest.raises(XdslAneError, match="a .png or .svg file"):
        plot(result, tmp_path / "e.jpg")


def test_plot_without_matplotlib_names_the_extra(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    code = main(["estimate", DECODER, "--plot", str(tmp_path / "e.png")])
    assert code == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "xdsl-ane[plot]" in err
    assert not (tmp_path / "e.png").exists()


# --- the command ------------------------------------------------------------------


def test_cli_on_the_decoder_layer(capsys, tmp_path) -> None:
    chart = tmp_path / "layer.png"
    assert main(["estimate", DECODER, "--chip", "m1", "--plot", str(chart)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{DECODER}:\nop ")
    assert "estimate on M1" in out and f"wrote {chart}" in out
    assert chart.read_bytes()[:4] == b"\x89PNG"


def test_cli_on_a_compiled_package(tmp_path, capsys) -> None:
    """The package read back gives the same estimate as its source."""
    import xdsl_ane
    from xdsl_ane.api import load_module
    from xdsl_ane.models.transformer import QWEN3_0_6B, make_weights

    module, _, _ = load_module(DECODER)
    compiled = xdsl_ane.compile(DECODER, weights=make_weights(module, QWEN3_0_6B))
    package = tmp_path / "layer.mlpackage"
    compiled.save(package)
    direct = xdsl_ane.estimate(compiled, chip="m2")
    assert main(["estimate", str(package), "--chip", "m2", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["total_ms"] == pytest.approx(direct.total_ms)
    assert [r["op"] for r in data["ops"]] == [o.op for o in direct.ops]
    assert data["total_ms"] == pytest.approx(xdsl_ane.estimate(DECODER, "m2").total_ms)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nothere.mlir"], "nothere.mlir: no such file or directory"),
        (["README.md"], "README.md:1:1: "),
        (
            [DECODER, "--plot", "chart.jpg"],
            "--plot chart.jpg: the chart is a .png or .svg file",
        ),
        (
            [DECODER, "--plot", "no/such/dir/c.png"],
            "--plot no/such/dir/c.png: no directory",
        ),
    ],
)
def test_bad_input_is_one_line(args, message, capsys) -> None:
    assert main(["estimate", *args]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"xdsl-ane: error: {message}")
    assert err.count("\n") == 1 and "Traceback" not in err


def test_a_directory_that_is_not_a_model(tmp_path, capsys) -> None:
    assert main(["estimate", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a compiled model" in err


def test_estimate_is_exported() -> None:
    import xdsl_ane

    assert math.isclose(
        xdsl_ane.estimate(parse(SWITCHING), "m4").total_ms,
        estimate_module(parse(SWITCHING), "m4").total_ms,
    )


# --- the summaries of compile and compile-llm ------------------------------------------


def test_compile_summary_has_the_estimate(tmp_path, capsys) -> None:
    from xdsl_ane.api import compile

    source = tmp_path / "f.mlir"
    source.write_text(SWITCHING)
    model = compile(source, weights={"embed": [[0.0] * 64] * 100})
    line = next(s for s in model.summary().splitlines() if "estimate on" in s)
    assert line.startswith("  estimate on M4 ")
    assert model.summary(chip=None).count("estimate on") == 0
    args = ["compile", str(source), "-o", str(tmp_path / "f.mlpackage")]
    assert main([*args, "--weights", str(_npz(tmp_path)), "--chip", "a14"]) == 0
    assert "  estimate on A14 (11 TOPS fp16" in capsys.readouterr().out
    assert main([*args, "--chip", "x1", "--force"]) == 1
    assert capsys.readouterr().err.startswith("xdsl-ane: error: unknown chip 'x1'")


def _npz(tmp_path):
    import numpy as np

    path = tmp_path / "w.npz"
    np.savez(path, embed=np.zeros((100, 64), np.float32))
    return path


@pytest.mark.slow
def test_llm_packages(tiny_llm, capsys) -> None:
    """compile-llm's summaries carry the estimate; estimate reads the whole
    package (both functions) and the split one (each package's), and the
    int32 position arithmetic and the 16-wide states of the tiny model run
    on the CPU."""
    _, whole, split, printed = tiny_llm
    assert "  estimate on M1 (11 TOPS fp16" in printed
    assert "  estimate on M4 (18.6 TOPS fp16" in printed  # the split one
    assert main(["estimate", str(whole), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data["functions"]) == {"prefill", "decode"}
    moved = {r["reason"] for r in data["ops"] if r["unit"] != "ane"}
    assert any("int32" in r for r in moved)
    assert any("not a multiple of 32" in r for r in moved)
    assert main(["estimate", str(split), "--json"]) == 0
    parts = json.loads(capsys.readouterr().out)["functions"]
    assert {f.split("/")[0] for f in parts} == {
        "embed",
        "layers_0-0",
        "layers_1-1",
        "head",
    }


def test_a_kernel_directory(tmp_path, capsys) -> None:
    """What compile-model --training writes: the kernels of kernels.json,
    each package's functions in turn."""
    from xdsl_ane.api import compile

    source = tmp_path / "f.mlir"
    source.write_text(SWITCHING)
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    model = compile(source, weights={"embed": [[0.0] * 64] * 100})
    listing = []
    for name in ("first", "second"):
        model.save(kernels / f"{name}.mlpackage")
        listing.append({"name": name, "mlpackage": f"{name}.mlpackage"})
    (kernels / "kernels.json").write_text(json.dumps({"kernels": listing}))
    assert main(["estimate", str(kernels), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert list(data["functions"]) == ["first/main", "second/main"]
    one = xdsl_ane_estimate(kernels / "first.mlpackage")
    assert data["total_ms"] == pytest.approx(2 * one.total_ms)
    (kernels / "kernels.json").write_text("{}")
    assert main(["estimate", str(kernels)]) == 1
    err = capsys.readouterr().err
    assert "kernels.json: not a kernel listing" in err and err.count("\n") == 1


def xdsl_ane_estimate(*args, **kwargs):
    import xdsl_ane

    return xdsl_ane.estimate(*args, **kwargs)


@pytest.mark.slow
def test_a_torch_cnn() -> None:
    """A CNN through torch.export: the dilated conv and the 15-wide kernel
    leave the ANE for the GPU, the rest stays: a switch at each."""
    import torch

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = torch.nn.Conv2d(3, 16, 3, padding=1)
            self.c2 = torch.nn.Conv2d(16, 32, 3, stride=2, padding=2, dilation=2)
            self.c3 = torch.nn.Conv2d(32, 32, (1, 15), padding=(0, 7))

        def forward(self, x):
            return self.c3(torch.relu(self.c2(torch.relu(self.c1(x)))))

    program = torch.export.export(Net().eval(), (torch.randn(1, 3, 32, 32),))
    result = xdsl_ane_estimate(program, "m4")
    convs = [(o.unit, o.rule) for o in result.ops if o.op == "conv"]
    assert convs == [("ane", ""), ("gpu", "conv"), ("gpu", "conv")]
    moved = [o.reason for o in result.ops if o.unit != "ane"]
    assert "(dilations [2, 2] > 1)" in moved[0] and "kernel width 15 > 13" in moved[1]
    # (the layout's reshapes after the last conv may add one more ANE segment)
    assert [s.unit for s in result.segments][:4] == ["ane", "gpu", "ane", "gpu"]


def test_ane_lint_with_a_chip_warns_of_its_placement() -> None:
    """ane-lint{chip=...} adds, as warnings, the placement's rules that the
    chip-neutral lint does not report; without a chip it is unchanged."""
    from xdsl_ane.passes.ane_lint import lint_module

    module = program(
        f"%x: {ACT}, %v: tensor<1x4x1x64xf16>",
        f"%s = mil.sin %x : {ACT}\n"
        '%g = mil.const weight "w" : tensor<4x4x1x15xf16>\n'
        "%c = mil.conv %v, %g : (tensor<1x4x1x64xf16>, tensor<4x4x1x15xf16>) -> "
        "tensor<1x4x1x50xf16>",
    )
    assert lint_module(module).findings == []
    m1 = [f.format() for f in lint_module(module, "m1").findings]
    assert m1 == [
        "ane-lint: warning: @f: mil.sin (%s): sin runs on the ANE from A15: on M1 "
        "it runs on the GPU",
        "ane-lint: warning: @f: mil.conv (%c): convolution kernel wider than 13 "
        "usually runs on the CPU/GPU, not the ANE (kernel width 15 > 13): on M1 it "
        "runs on the GPU; split the kernel into several narrower convolutions",
    ]
    assert [f.op_name for f in lint_module(module, "m4").findings] == ["mil.conv"]
    with pytest.raises(XdslAneError, match="unknown chip 'x'"):
        lint_module(module, "x")


# --- int8 compute (W8A8) ----------------------------------------------------


def w8a8_conv(cin: int, cout: int, s: int, int8: bool) -> builtin.ModuleOp:
    """A conv of [1, cin, 1, s] by [cout, cin] weights: fp16, or with
    its activation quantized and dequantized (int8) and int8 weights."""
    x, y = f"tensor<1x{cin}x1x{s}xf16>", f"tensor<1x{cout}x1x{s}xf16>"
    w = f"tensor<{cout}x{cin}x1x1xf16>"
    if not int8:
        return program(
            f"%x: {x}",
            f'%w = mil.const weight "w" : {w}\n'
            f"%r = mil.conv %x, %w : ({x}, {w}) -> {y}",
        )
    q = f"tensor<1x{cin}x1x{s}xi8>"
    return program(
        f"%x: {x}",
        "%s = mil.const dense<0.01> : tensor<f16>\n"
        f'%data = mil.const weight "w" : tensor<{cout}x{cin}x1x1xi8>\n'
        "%zp = mil.const dense<0> : tensor<i8>\n"
        "%w = mil.constexpr_affine_dequantize %data, %zp, %s {axis = 0 : i64} : "
        f"(tensor<{cout}x{cin}x1x1xi8>, tensor<i8>, tensor<f16>) -> {w}\n"
        f'%q = mil.quantize %x, %s {{output_dtype = "int8"}} : ({x}, tensor<f16>) '
        f"-> {q}\n"
        f"%d = mil.dequantize %q, %s : ({q}, tensor<f16>) -> {x}\n"
        f"%r = mil.conv %d, %w : ({x}, {w}) -> {y}",
    )


def test_w8a8_conv_computes_in_int8_where_the_chip_has_it() -> None:
    """The conv of int8 activations (a dequantize of a quantize, fused
    into it) and int8 weights: its precision is int8, it reads its input
    and weights at one byte an element, and a compute-bound one runs at
    the int8 peak on M4 (35.1 TOPS, 1.89x fp16) but at the fp16 peak on
    A16, which has no faster int8."""
    cin, cout, s = 512, 512, 4096
    for chip, speedup in [("m4", 35.1 / 18.6), ("a17", 2.0), ("a16", 1.0)]:
        fp16 = estimate_module(w8a8_conv(cin, cout, s, False), chip)
        int8 = estimate_module(w8a8_conv(cin, cout, s, True), chip)
        (plain,) = fp16.ops
        quantize, dequantize, conv = int8.ops
        assert (plain.precision, conv.precision) == ("fp16", "int8")
        assert quantize.bytes == dequantize.bytes == 0
        # int8 input and weights (with their 3 bytes of scale and zero
        # point), fp16 output
        assert conv.bytes == cin * s + cout * cin + 3 + 2 * cout * s
        assert plain.bytes == 2 * (cin * s + cout * cin + cout * s)
        assert conv.flops == plain.flops and conv.flops / conv.bytes > 300
        assert plain.us / conv.us == pytest.approx(speedup)
        assert conv.row()["precision"] == "int8"


def test_int8_weights_alone_compute_in_fp16() -> None:
    """W8A16 (int8 weights, fp16 activations) computes in fp16."""
    module = w8a8_conv(64, 64, 256, True)
    dequantized = [op for op in module.walk() if op.name == "mil.conv"][0]
    dequantized.operands[0] = (
        dequantized.operands[0].owner.operands[0].owner.operands[0]
    )
    (*_, conv) = estimate_module(module, "m4").ops
    assert conv.precision == "fp16"


def test_an_op_that_only_quantize_reads_writes_int8() -> None:
    """A relu whose one reader is quantize writes its result at int8 (the
    quantize fused into it): half the traffic of an fp16 result."""
    x, q = "tensor<1x64x1x256xf16>", "tensor<1x64x1x256xi8>"
    module = program(
        f"%x: {x}",
        "%s = mil.const dense<0.01> : tensor<f16>\n"
        f"%a = mil.relu %x : {x}\n"
        f'%q = mil.quantize %a, %s {{output_dtype = "int8"}} : ({x}, tensor<f16>) '
        f"-> {q}\n"
        f"%d = mil.dequantize %q, %s : ({q}, tensor<f16>) -> {x}\n"
        f"%r = mil.relu %d : {x}",
    )
    first, _, _, second = estimate_module(module, "m4").ops
    n = 64 * 256
    assert (first.bytes, second.bytes) == (2 * n + n, n + 2 * n)


def test_long_attention_softmax_reads_its_scores_three_times() -> None:
    """Scores beyond the SRAM (16 heads of 2048 x 2048, 128 MiB on M4's 32)
    are read three times (maximum, sum, normalization) and written once;
    scores that fit are read once."""
    m4 = get_chip("m4")
    for s, reads in [(2048, 3), (256, 1)]:
        t = f"tensor<1x16x{s}x{s}xf16>"
        op = only(program(f"%x: {t}", f"%r = mil.softmax %x {{axis = -1 : i64}} : {t}"))
        scores = 2 * 16 * s * s
        assert op.bytes + op.spill_bytes == (reads + 1) * scores
        assert op.us == pytest.approx((reads + 1) * scores / m4.bandwidth * 1e6)

"""The estimate of compressed weights: one projection compiled fp16, int8,
int4 and lut4 reads each weight at its stored width (4-bit data packed,
with its scales or palettes) and expands it at one FLOP per element, so a
decode step (bandwidth-bound) runs in the order of the bytes and a long
prefill (compute-bound) pays the expansion; `estimate --json` says what
each op reads."""

from __future__ import annotations

import json

import numpy as np
import pytest

import xdsl_ane
from tests.cli_helpers import cli
from xdsl_ane.ane.chips import get_chip
from xdsl_ane.estimator import estimate
from xdsl_ane.frontend.mlir import parse_module_text

CIN = COUT = 512
N = CIN * COUT
WEIGHTS = {"w": np.random.default_rng(0).standard_normal((COUT, CIN), np.float32)}
STORED = {
    None: ("fp16", 2 * N),
    "int8": ("int8", N + 2 * COUT),  # fp16 scale per output channel
    "int4": ("int4", N // 2 + 2 * COUT * CIN // 32),  # a scale per block of 32
    "lut4": ("lut4", N // 2 + COUT // 16 * 16 * 2),  # 16 fp16 entries per 16 rows
}
"""Each mode's storage and bytes of the [512, 512] weight (the defaults:
int8 per channel, int4 per block 32, lut4 per grouped channel 16)."""


def projection(s: int) -> str:
    x, y, w = (
        f"tensor<1x{s}x{CIN}xf32>",
        f"tensor<1x{s}x{COUT}xf32>",
        f"tensor<{COUT}x{CIN}xf32>",
    )
    return f"""builtin.module {{
  func.func @f(%x: {x}) -> {y} {{
    %w = rlx.param "w" : {w}
    %y = rlx.matmul %x, %w {{transpose_rhs = true}} : ({x}, {w}) -> {y}
    func.return %y : {y}
  }}
}}"""


def the_conv(s: int, mode: str | None):
    compiled = xdsl_ane.compile(
        parse_module_text(projection(s), "p.mlir"), WEIGHTS, compress=mode
    )
    (conv,) = estimate(compiled, "m4").ops
    assert conv.op == "conv"
    return conv


@pytest.mark.parametrize("mode", list(STORED))
def test_weights_are_read_at_their_stored_width(mode) -> None:
    storage, stored = STORED[mode]
    conv = the_conv(1, mode)
    (weight,) = conv.weights
    assert (weight.storage, weight.bytes, weight.elements) == (storage, stored, N)
    assert conv.weight_bytes == stored
    assert conv.bytes == stored + 2 * (CIN + COUT)  # fp16 activations
    assert weight.expand_flops == (0 if mode is None else N)


def test_decode_runs_in_the_order_of_the_bytes() -> None:
    """One token: far below the knee, so each time is its bytes over the
    bandwidth, lut4 < int4 < int8 < fp16, the expansion hidden."""
    m4 = get_chip("m4")
    times = {}
    for mode in STORED:
        conv = the_conv(1, mode)
        assert (conv.flops + conv.expand_flops) / conv.bytes < m4.knee
        assert conv.us == pytest.approx(conv.bytes / m4.bandwidth * 1e6)
        times[mode] = conv.us
    assert times["lut4"] < times["int4"] < times["int8"] < times[None]
    assert times[None] / times["int8"] == pytest.approx(
        (2 * N + 2048) / (N + 2 * COUT + 2048)
    )


def test_long_prefill_pays_the_expansion() -> None:
    """4096 tokens: compute-bound; a compressed weight adds its expansion
    (N FLOPs) to the projection's 2·S·N, so it is slower than fp16 by
    1/(2·S), whatever its width."""
    s, m4 = 4096, get_chip("m4")
    fp16 = the_conv(s, None)
    assert fp16.us == pytest.approx(2 * s * N / m4.peak_flops * 1e6)
    for mode in ("int8", "lut4"):
        conv = the_conv(s, mode)
        assert conv.flops == fp16.flops and conv.expand_flops == N
        assert conv.us == pytest.approx((2 * s * N + N) / m4.peak_flops * 1e6)
        assert conv.us > fp16.us


def test_estimate_json_says_what_each_op_reads(tmp_path) -> None:
    """`xdsl-ane estimate --json` of a lut4 package written as protobuf and
    read back: the conv's row lists its weight as stored."""
    source, weights = tmp_path / "p.mlir", tmp_path / "w.npz"
    source.write_text(projection(1))
    np.savez(weights, **WEIGHTS)
    out = tmp_path / "lut4"
    compiled = cli(
        "compile", str(source), "--weights", str(weights), "--compress", "lut4",
        "--emit", "proto", "-o", str(out),
    )  # fmt: skip
    assert compiled.returncode == 0, compiled.stderr
    result = cli("estimate", str(out), "--json")
    assert result.returncode == 0, result.stderr
    (row,) = [r for r in json.loads(result.stdout)["ops"] if r["op"] == "conv"]
    assert row["weight_bytes"] == STORED["lut4"][1] == row["weights"][0]["bytes"]
    assert row["weights"][0]["storage"] == "lut4"
    assert row["expand_flops"] == N == row["weights"][0]["elements"]

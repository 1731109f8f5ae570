"""Float constants through IR text, bit for bit: inf, -inf, NaNs (with sign
and payload), -0.0 and finite values that print in hex, for f32, f16, bf16
and f64, splat and not, in the custom and generic forms, through xdsl-ane's
parser and plain `xdsl-opt`; and by numbers, a causal mask's -inf through
`xdsl-ane import` and `run` against torch (`xdsl_ane.dialects.float_text`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import cli as xdsl_ane
from cli_helpers import error_line
from xdsl.context import Context
from xdsl.dialects import arith, builtin
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    TensorType,
    bf16,
    f16,
    f32,
    f64,
)
from xdsl.ir import Attribute
from xdsl.parser import Parser
from xdsl.printer import Printer

from xdsl_ane.dialects import float_text, mil, rlx
from xdsl_ane.errors import XdslAneError
from xdsl_ane.frontend.mlir import parse_module_text

XDSL_OPT = str(Path(sys.executable).parent / "xdsl-opt")

BITS = {
    f32: {
        "inf": 0x7F800000,
        "-inf": 0xFF800000,
        "nan": 0x7FC00000,
        "-nan": 0xFFC00000,
        "nan-payload": 0x7FC00001,
        "signaling-nan": 0x7F800001,
        "-0": 0x80000000,
        "1.5": 0x3FC00000,
        "123456792": 0x4CEB79A3,  # xDSL prints it in hex (no 9-digit decimal)
    },
    f16: {
        "inf": 0x7C00,
        "-inf": 0xFC00,
        "nan": 0x7E00,
        "-nan": 0xFE00,
        "nan-payload": 0x7E01,
        "signaling-nan": 0x7C01,
        "-0": 0x8000,
        "1.5": 0x3E00,
        "max": 0x7BFF,
    },
    bf16: {
        "inf": 0x7F80,
        "-inf": 0xFF80,
        "nan": 0x7FC0,
        "-nan": 0xFFC0,
        "nan-payload": 0x7FC1,
        "signaling-nan": 0x7F81,
        "-0": 0x8000,
        "1.5": 0x3FC0,
    },
    f64: {
        "inf": 0x7FF0000000000000,
        "-inf": 0xFFF0000000000000,
        "nan": 0x7FF8000000000000,
        "-nan": 0xFFF8000000000000,
        "nan-payload": 0x7FF8000000000001,
        "signaling-nan": 0x7FF0000000000001,
        "-0": 0x8000000000000000,
        "1.5": 0x3FF8000000000000,
        "12345678901234567": 0x4345EE2A2F643B1E,  # printed in hex by xDSL
    },
}
SCALARS = (float("inf"), float("-inf"), float("nan"), -0.0, 1.5)
CASES = [(t, name) for t, values in BITS.items() for name in values]


def case_id(case) -> str:
    element_type, name = case
    return f"{element_type.name}-{name}"


def dense(
    element_type: Attribute, bits: list[int], shape: tuple[int, ...]
) -> DenseIntOrFPElementsAttr:
    """A dense attribute whose elements are the given bit patterns."""
    size = element_type.compile_time_size
    raw = b"".join(b.to_bytes(size, "little") for b in bits)
    return DenseIntOrFPElementsAttr(TensorType(element_type, shape), BytesAttr(raw))


def module_of(*ops) -> builtin.ModuleOp:
    return builtin.ModuleOp(list(ops))


def generic(module: builtin.ModuleOp) -> str:
    text = []

    class Out:
        def write(self, s):
            text.append(s)

    Printer(stream=Out(), print_generic_format=True).print_op(module)
    return "".join(text)


def constants(module: builtin.ModuleOp) -> list[bytes]:
    """The raw bytes of every dense constant, in order."""
    return [
        attr.data.data
        for op in module.walk()
        for attr in op.properties.values()
        if isinstance(attr, DenseIntOrFPElementsAttr)
    ]


def xdsl_opt(text: str, *args: str) -> str:
    """Plain `xdsl-opt` (our dialects and this fix come in through the
    `xdsl.universe` entry point) on `text`."""
    result = subprocess.run(
        [XDSL_OPT, *args], input=text, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.rstrip("\n")


def assert_round_trips(module: builtin.ModuleOp) -> str:
    """Every dense constant of `module` keeps its bytes through the custom
    and generic forms, and the printed text is a fixed point."""
    expected = constants(module)
    text = str(module)
    again = parse_module_text(text, "custom.mlir")
    assert constants(again) == expected, text
    assert str(again) == text
    assert constants(parse_module_text(generic(module), "generic.mlir")) == expected
    return text


def splat_and_not(element_type, name) -> builtin.ModuleOp:
    values = BITS[element_type]
    v, one = values[name], values["1.5"]
    ops = [
        arith.ConstantOp(dense(element_type, [v] * 6, (2, 3))),
        arith.ConstantOp(dense(element_type, [one, v, v, one], (2, 2))),
        arith.ConstantOp(dense(element_type, [v], ())),
    ]
    return module_of(*ops)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_dense_round_trip_bit_exact(case):
    assert_round_trips(splat_and_not(*case))


@pytest.mark.parametrize("element_type", list(BITS), ids=lambda t: t.name)
def test_dense_mixing_every_value(element_type):
    """One non-splat tensor holding every case, short (an element list) and
    long (xDSL's hex string of the buffer, over 100 elements)."""
    bits = list(BITS[element_type].values())
    long = (bits * (101 // len(bits) + 1))[:102]
    module = module_of(
        arith.ConstantOp(dense(element_type, bits, (len(bits),))),
        arith.ConstantOp(dense(element_type, long, (2, 51))),
    )
    assert_round_trips(module)


def every_case() -> builtin.ModuleOp:
    """Every case of BITS in one module: per type a tensor mixing them all
    and a splat of each; rlx.constant and mil.const; scalar FloatAttrs."""
    ops = []
    for element_type, values in BITS.items():
        bits = list(values.values())
        ops.append(arith.ConstantOp(dense(element_type, bits, (len(bits),))))
        ops += [arith.ConstantOp(dense(element_type, [b] * 4, (4,))) for b in bits]
        for value in SCALARS:
            ops.append(arith.ConstantOp(FloatAttr(value, element_type)))
    for element_type in (f32, f16):
        bits = list(BITS[element_type].values())
        ops.append(rlx.ConstantOp(dense(element_type, bits, (len(bits),))))
        ops.append(mil.ConstOp(dense(element_type, bits, (len(bits),))))
    return module_of(*ops)


def test_plain_xdsl_opt_keeps_bits():
    """`xdsl-opt` reads what it prints: the same text, twice, and from the
    generic form; the text read back here has the original bits."""
    module = every_case()
    text = str(module)
    once = xdsl_opt(text)
    assert once == text
    assert xdsl_opt(once) == text
    assert xdsl_opt(xdsl_opt(text, "--print-op-generic")) == text
    assert constants(parse_module_text(once, "opt.mlir")) == constants(module)


def test_signed_zeros_are_not_a_splat():
    """xDSL compares elements as floats, where 0.0 == -0.0, and would print
    `[0.0, -0.0]` as the splat `dense<0.0>`."""
    module = module_of(arith.ConstantOp(dense(f32, [0, 0x80000000], (2,))))
    text = assert_round_trips(module)
    assert "dense<[0.000000e+00, -0.000000e+00]>" in text


@pytest.mark.parametrize("element_type", [f32, f16])
def test_rlx_constant_and_mil_const(element_type):
    bits = list(BITS[element_type].values())
    module = module_of(
        rlx.ConstantOp(dense(element_type, bits, (len(bits),))),
        rlx.ConstantOp(dense(element_type, [BITS[element_type]["-inf"]] * 4, (2, 2))),
        mil.ConstOp(dense(element_type, bits, (len(bits),))),
        mil.ConstOp(dense(element_type, [BITS[element_type]["nan"]], ())),
    )
    assert_round_trips(module)


def test_printed_form_is_mlir_bit_pattern():
    module = module_of(
        rlx.ConstantOp(dense(f32, [0xFF800000], ())),
        rlx.ConstantOp(dense(f16, [0x3C00, 0x7C00, 0xFE00], (3,))),
    )
    text = str(module)
    assert "rlx.constant dense<0xff800000> : tensor<f32>" in text
    assert "rlx.constant dense<[1.000000e+00, 0x7c00, 0xfe00]> : tensor<3xf16>" in text


FLOAT_PROPERTIES = """\
func.func @f(%x: tensor<1x4x8xf32>, %g: tensor<8xf32>, %q: tensor<1x2x4x8xf32>) {
  %y = rlx.rms_norm %x, %g {eps = EPS : f32} : (tensor<1x4x8xf32>, tensor<8xf32>) -> tensor<1x4x8xf32>
  %a = rlx.attention %q, %q, %q {mask = "causal", scale = SCALE : f32} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return
}
"""


PROPERTY_BITS = [("0x7f800000", "0xff800000"), ("0x7fc00000", "0x4CEB79A3")]


def test_float_properties():
    """f32 FloatAttr properties (rms_norm's eps, attention's scale) keep
    their bits, custom and generic, here and in xdsl-opt."""
    text = "\n".join(
        FLOAT_PROPERTIES.replace("@f", f"@f{i}").replace("EPS", e).replace("SCALE", s)
        for i, (e, s) in enumerate(PROPERTY_BITS)
    )
    module = parse_module_text(text, "props.mlir")
    got = [
        (op.properties["eps"], next(op.next_op.walk()).properties["scale"])
        for op in module.walk()
        if op.name == "rlx.rms_norm"
    ]
    assert [tuple(f32.pack((a.value.data,)) for a in pair) for pair in got] == [
        tuple(int(h, 16).to_bytes(4, "little") for h in pair) for pair in PROPERTY_BITS
    ]
    printed = str(module)
    for eps, scale in PROPERTY_BITS:
        assert f"eps = {eps} : f32" in printed and f"scale = {scale} : f32" in printed
    assert xdsl_opt(printed) == printed
    assert str(parse_module_text(generic(module), "props.mlir")) == printed


@pytest.mark.parametrize("element_type", list(BITS), ids=lambda t: t.name)
def test_float_attr_scalars(element_type):
    """Scalar FloatAttrs of every type: inf, -inf, the canonical NaN, -0.0
    (a FloatAttr holds a Python float, so xDSL keeps no f16 NaN payload)."""
    module = module_of(*(arith.ConstantOp(FloatAttr(v, element_type)) for v in SCALARS))
    text = str(module)
    again = parse_module_text(text, "s.mlir")
    got = [op.properties["value"].value.data for op in again.body.ops]
    assert [element_type.pack((v,)) for v in got] == [
        element_type.pack((v,)) for v in SCALARS
    ], text
    assert str(again) == text


@pytest.mark.parametrize(
    "literal, message",
    [
        ("dense<-0x7F800000> : tensor<f32>", "should not have a leading minus"),
        ("dense<[1.0, 0x1FF800000]> : tensor<2xf32>", "out of range for type"),
        ("dense<[0x7C00, 0x10000]> : tensor<2xf16>", "out of range for type"),
        ("dense<[0x7F800000, 1.0]> : tensor<3xf32>", "Shape mismatch"),
    ],
)
def test_bad_hex_literal_is_one_line(literal, message):
    text = f"%c = arith.constant {literal}\n"
    with pytest.raises(XdslAneError) as e:
        parse_module_text(text, "bad.mlir")
    assert str(e.value).startswith("bad.mlir:")
    assert message in str(e.value) and "\n" not in str(e.value)


def test_integer_dense_unchanged():
    """Hex integer elements stay integers (xDSL's own parser reads them)."""
    text = "%c = arith.constant dense<[0xFF, 1]> : tensor<2xi32>\n"
    (op,) = list(parse_module_text(text, "i.mlir").walk())[1:]
    assert op.properties["value"].get_values() == (255, 1)


def test_xdsl_still_needs_the_patch():
    """xDSL's own parser reads `dense<0xff800000> : tensor<f32>` as the
    integer 4286578688, not -inf. When an xDSL upgrade makes this fail,
    `xdsl_ane.dialects.float_text` is no longer needed."""
    parser = Parser(Context(), "<0xff800000> : tensor<f32>")
    attr = float_text.XDSL_PARSE_DENSE(parser, None)
    assert attr.get_values() == (4286578688.0,)


def test_masked_softmax_by_numbers(tmp_path):
    """A causal mask filled with -inf, exported from torch, imported to
    `.mlir` and run from the text: the masked positions get probability 0
    (with the -inf read as 4.3e9 every row came out uniform)."""
    import torch

    class MaskedSoftmax(torch.nn.Module):
        def forward(self, scores):
            s = scores.shape[-1]
            mask = torch.triu(torch.ones(s, s, dtype=torch.bool), 1)
            return scores.masked_fill(mask, float("-inf")).softmax(-1)

    torch.manual_seed(0)
    scores = torch.randn(1, 2, 6, 6)
    with torch.no_grad():
        program = torch.export.export(MaskedSoftmax(), (scores,))
        expected = program.module()(scores).numpy()
    torch.export.save(program, tmp_path / "m.pt2")
    np.savez(tmp_path / "in.npz", arg0=scores.numpy())
    mlir = tmp_path / "m.mlir"
    result = xdsl_ane("import", str(tmp_path / "m.pt2"), "-o", str(mlir))
    assert result.returncode == 0, result.stderr
    assert "dense<0xff800000> : tensor<f32>" in mlir.read_text()
    opt = tmp_path / "opt.mlir"  # the same text after plain xdsl-opt
    opt.write_text(xdsl_opt(mlir.read_text()))
    for source in (mlir, opt):
        out = tmp_path / f"{source.stem}.out.npz"
        inputs = str(tmp_path / "in.npz")
        result = xdsl_ane("run", str(source), "--inputs", inputs, "--output", str(out))
        assert result.returncode == 0, result.stderr
        actual = np.load(out)["out0"]
        assert np.abs(actual - expected).max() / np.abs(expected).max() <= 1e-5
        assert (actual[..., 0, 1:] == 0).all()


def test_bad_hex_literal_from_the_command_line(tmp_path):
    path = tmp_path / "bad.mlir"
    path.write_text(
        "func.func @f() -> tensor<f32> {\n"
        "  %c = rlx.constant dense<-0xff800000> : tensor<f32>\n"
        "  func.return %c : tensor<f32>\n}\n"
    )
    result = xdsl_ane("run", str(path), "--random", "0")
    error_line(result, f"{path}:2:", "leading minus")

"""rlx.pixel_shuffle / rlx.pixel_unshuffle and MIL's ops of those names by
numbers: both interpreters against torch's `F.pixel_shuffle` /
`F.pixel_unshuffle`, the verifiers, the lowering (one MIL op each, the same
numbers), MIL's uint32 downscale_factor through the printers and readers,
and the placement and layout of an image through them (on the ANE, `nchw`,
no layout changes). The torch import is checked in
tests/test_torch_structured_ops.py."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from ane_form import run_ane_form
from lowering_cases import build_case, f16, f32, lower, mil_op_counts, normal, value
from mil_op_check import check, run
from xdsl.dialects.builtin import i32
from xdsl.utils.exceptions import VerifyException

import xdsl_ane
from xdsl_ane.ane.chips import get_chip
from xdsl_ane.backend.mil_text import module_to_mil_text, write_mil_text_dir
from xdsl_ane.dialects import mil, rlx
from xdsl_ane.dialects.ane import arg_layouts, result_layouts
from xdsl_ane.dialects.typing import tensor
from xdsl_ane.estimator.cost import flops
from xdsl_ane.frontend.mil_text import MilTextError, parse_mil_text, read_mil_file
from xdsl_ane.frontend.milproto import read_compiled
from xdsl_ane.frontend.mlir import parse_module_text
from xdsl_ane.interpreter.core import random_inputs, run_function
from xdsl_ane.passes.placement import ON_ANE, placement_rule

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import coremltools as ct
    from coremltools.converters.mil import Builder as mb
    from coremltools.converters.mil.mil import Function
    from coremltools.proto import MIL_pb2

RNG = np.random.default_rng(0)
DTYPES = [np.float32, np.float16]

# (input shape, factor) of each direction
SHUFFLES = [
    ((1, 8, 3, 5), 2),
    ((2, 18, 2, 4), 3),
    ((1, 4, 3, 3), 1),
    ((1, 16, 1, 2), 4),
]
UNSHUFFLES = [
    ((1, 3, 4, 6), 2),
    ((2, 2, 6, 9), 3),
    ((1, 4, 3, 3), 1),
    ((1, 1, 8, 4), 4),
]


def images(shape, dtype) -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


def torch_shuffle(x: np.ndarray, r: int, up: bool) -> np.ndarray:
    f = F.pixel_shuffle if up else F.pixel_unshuffle
    return f(torch.from_numpy(x), r).numpy()


def element_of(dtype) -> object:
    return f32 if dtype == np.float32 else f16


def rlx_module(shape, r: int, up: bool, dtype):
    op = rlx.PixelShuffleOp if up else rlx.PixelUnshuffleOp
    return build_case(
        [normal(*shape)], lambda dt, x: [op(x, r).result], element_of(dtype)
    )


CASES = [(s, r, True) for s, r in SHUFFLES] + [(s, r, False) for s, r in UNSHUFFLES]
IDS = [f"{'up' if up else 'down'}{r}-{'x'.join(map(str, s))}" for s, r, up in CASES]


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f16"])
@pytest.mark.parametrize(("shape", "r", "up"), CASES, ids=IDS)
def test_rlx_and_lowered_match_torch(shape, r, up, dtype):
    """The rlx op and its lowering (one MIL op; none for a factor of 1)
    move the same elements as torch: equal, not close."""
    x = images(shape, dtype)
    expected = torch_shuffle(x, r, up)
    module = rlx_module(shape, r, up, dtype)
    lowered = lower(module)
    counts = mil_op_counts(lowered)
    name = "mil.pixel_shuffle" if up else "mil.pixel_unshuffle"
    assert counts == ({} if r == 1 else {name: 1})
    for program in (module, lowered):
        (y,) = run_function(program, [x])
        assert y.dtype == dtype
        np.testing.assert_array_equal(y, expected)


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f16"])
@pytest.mark.parametrize(("shape", "r", "up"), CASES, ids=IDS)
def test_mil_matches_torch(shape, r, up, dtype):
    """MIL's ops (coremltools has no value inference for them; its torch
    frontend maps torch's ops to them one for one)."""
    x = images(shape, dtype)
    op = mil.PixelShuffleOp if up else mil.PixelUnshuffleOp
    check(run(lambda v: op(v, r), x), torch_shuffle(x, r, up), dtype)


def test_shuffle_then_unshuffle_is_the_identity():
    x = images((2, 12, 3, 4), np.float32)
    module = build_case(
        [normal(*x.shape)],
        lambda dt, v: [rlx.PixelUnshuffleOp(rlx.PixelShuffleOp(v, 2).result, 2).result],
        f32,
    )
    (y,) = run_function(lower(module), [x])
    np.testing.assert_array_equal(y, x)


# --- verifiers -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: rlx.PixelShuffleOp(value([1, 6, 3, 3]), 2),
            "rlx.pixel_shuffle: operand 'input' [1, 6, 3, 3] has 6 channels, not a "
            "multiple of upscale_factor² = 4",
        ),
        (
            lambda: rlx.PixelShuffleOp(value([8, 3, 3]), 2),
            "rlx.pixel_shuffle: operand 'input' must be [N, C, H, W], got shape "
            "[8, 3, 3]",
        ),
        (
            lambda: rlx.PixelShuffleOp(value([1, 4, 3, 3], i32), 2),
            "rlx.pixel_shuffle: operand 'input' must have a float element type",
        ),
        (
            lambda: rlx.PixelShuffleOp(value([1, 4, 3, 3]), 0),
            "rlx.pixel_shuffle: property 'upscale_factor' value 0 must be ≥ 1",
        ),
        (
            lambda: rlx.PixelUnshuffleOp(value([1, 2, 4, 5]), 2),
            "rlx.pixel_unshuffle: operand 'input' [1, 2, 4, 5]: H and W must be "
            "multiples of downscale_factor 2",
        ),
        (
            lambda: mil.PixelShuffleOp(value([1, 8, 3, 3]), 3),
            "mil.pixel_shuffle: operand 'x' [1, 8, 3, 3] has 8 channels, not a "
            "multiple of upscale_factor² = 9",
        ),
        (
            lambda: mil.PixelShuffleOp(value([1, 4, 3, 3, 1]), 2),
            "mil.pixel_shuffle: operand 'x' must have rank 4 [N, C, H, W], got "
            "[1, 4, 3, 3, 1]",
        ),
        (
            lambda: mil.PixelUnshuffleOp(value([1, 4, 6, 3], i32), 3),
            "mil.pixel_unshuffle: operand 'x' has element type i32",
        ),
        (
            lambda: mil.PixelUnshuffleOp(value([1, 4, 6, 4]), 3),
            "mil.pixel_unshuffle: operand 'x' [1, 4, 6, 4]: H and W must be "
            "multiples of downscale_factor 3",
        ),
        (
            lambda: mil.PixelUnshuffleOp(value([1, 4, 6, 4]), -1),
            "mil.pixel_unshuffle: property 'downscale_factor' value -1 must be ≥ 1",
        ),
    ],
)
def test_verifier_errors(build, message):
    with pytest.raises(VerifyException) as info:
        build()
    assert message in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("ours", "theirs", "shape"),
    [
        (
            lambda x: mil.PixelShuffleOp(x, 2),
            lambda x: mb.pixel_shuffle(x=x, upscale_factor=2),
            (2, 12, 3, 5),
        ),
        (
            lambda x: mil.PixelUnshuffleOp(x, 3),
            lambda x: mb.pixel_unshuffle(x=x, downscale_factor=np.uint32(3)),
            (1, 2, 6, 9),
        ),
    ],
)
def test_mil_types_match_coremltools(ours, theirs, shape):
    op = ours(value(shape, f16))
    with Function({"x": mb.TensorSpec(shape=shape)}, ct.target.iOS18) as f:
        out = theirs(f.inputs["x"])
    assert op.result.type == tensor([int(d) for d in out.shape], f16)


# --- MIL's uint32 downscale_factor -------------------------------------------------

PROGRAM = """
func.func @main(%x: tensor<1x8x4x6xf16>) -> tensor<1x8x4x6xf16> {
  %down = mil.pixel_unshuffle %x {downscale_factor = 2 : i64} : (tensor<1x8x4x6xf16>) -> tensor<1x32x2x3xf16>
  %up = mil.pixel_shuffle %down {upscale_factor = 2 : i64} : (tensor<1x32x2x3xf16>) -> tensor<1x8x4x6xf16>
  func.return %up : tensor<1x8x4x6xf16>
}
"""


def test_downscale_factor_is_written_as_uint32(tmp_path: Path):
    """coremltools types pixel_unshuffle's downscale_factor uint32 (and
    upscale_factor int32): the MIL text writes `uint32(2)`, the protobuf a
    UINT32 immediate in bytes; both read back to the same program, and
    coremltools' loader takes the package."""
    module = parse_module_text(PROGRAM, "program")
    text, _ = module_to_mil_text(module, {})
    assert (
        'uint32 down_downscale_factor = const()[name = string("down_downscale_factor"), '
        "val = uint32(2)];"
    ) in text
    assert "int32 up_upscale_factor = const()" in text
    directory = write_mil_text_dir(module, {}, tmp_path / "model")
    imported, _ = read_mil_file(directory / "model.mil")
    again, _ = module_to_mil_text(imported, {})
    assert again == text

    compiled = xdsl_ane.compile(module, pipeline="")
    function = compiled.spec.mlProgram.functions["main"]
    operations = function.block_specializations["CoreML8"].operations
    consts = {
        op.outputs[0].name: op.attributes["val"]
        for op in operations
        if op.type == "const"
    }
    given = {
        op.type: consts[op.inputs[name].arguments[0].name]
        for op in operations
        for name in ("upscale_factor", "downscale_factor")
        if name in op.inputs
    }
    factor = given["pixel_unshuffle"]
    assert factor.type.tensorType.dataType == MIL_pb2.UINT32
    assert factor.immediateValue.tensor.bytes.values == (2).to_bytes(4, "little")
    assert given["pixel_shuffle"].type.tensorType.dataType == MIL_pb2.INT32
    report = compiled.validate()
    assert report.ok, report.findings
    compiled.save(tmp_path / "model.mlpackage")
    inputs = random_inputs(module.body.block.first_op, 0)
    (y,) = run_function(read_compiled(tmp_path / "model.mlpackage").module, inputs)
    np.testing.assert_array_equal(y, inputs[0])


def test_downscale_factor_of_another_dtype_is_refused():
    text = """program(1.3)
{
    func main<ios18>(tensor<fp16, [1, 4, 2, 2]> x) {
        tensor<fp16, [1, 16, 1, 1]> y = pixel_unshuffle(x = x, downscale_factor = int32(2))[name = string("y")];
    } -> (y);
}
"""
    with pytest.raises(MilTextError) as info:
        parse_mil_text(text)
    assert (
        "input 'downscale_factor' of pixel_unshuffle must be a uint32 scalar, got "
        "int32" in str(info.value)
    )
    with pytest.raises(MilTextError) as info:
        parse_mil_text(text.replace("x = x", "x = uint32(1)"))
    assert "a uint32 value can only be a compile-time input" in str(info.value)


# --- placement and layout ------------------------------------------------------------


@pytest.mark.parametrize("up", [True, False], ids=["shuffle", "unshuffle"])
def test_an_image_stays_nchw_and_on_the_ane(up):
    """Through the whole pipeline the image keeps its `nchw` layout (no
    reshape or transpose around the op), the op runs on the ANE in fp16
    (a rearrangement, like transpose) and costs no FLOPs."""
    shape = (1, 8, 4, 6)
    module = rlx_module(shape, 2, up, np.float32)
    compiled = xdsl_ane.compile(module)
    names = [op.name for op in compiled.module.walk() if op.name.startswith("mil.")]
    op_name = "mil.pixel_shuffle" if up else "mil.pixel_unshuffle"
    assert op_name in names
    assert not {"mil.reshape", "mil.transpose"} & set(names), names
    function = compiled.module.body.block.first_op
    assert [a.kind.data for a in arg_layouts(function)] == ["nchw"]
    assert [a.kind.data for a in result_layouts(function)] == ["nchw"]
    (op,) = [op for op in compiled.module.walk() if op.name == op_name]
    assert placement_rule(op, get_chip("m4")) == ON_ANE
    assert flops(op) == 0
    estimate = xdsl_ane.estimate(compiled, chip="m4")
    (row,) = [r for r in estimate.ops if r.op == op_name.removeprefix("mil.")]
    assert row.unit == "ane"
    inputs = [images(shape, np.float32)]
    expected = torch_shuffle(inputs[0], 2, up)
    (y,) = run_ane_form(compiled.module, inputs, compiled.weights, [expected.shape])
    assert y.dtype == np.float16
    np.testing.assert_allclose(y, expected, rtol=1e-3, atol=1e-3)

"""rlx.quantize / rlx.dequantize with per-channel and per-block `scales`:
verified, interpreted, and lowered to MIL with the same numbers — a
dequantize of constant int8 weights becomes constexpr_blockwise_shift_scale
(MIL's own decompression), others MIL ops computing it blockwise."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import f16, f32, i8
from xdsl.utils.exceptions import VerifyException

from xdsl_ane.backend.weights import quiet_coremltools
from xdsl_ane.dialects import mil, rlx
from xdsl_ane.dialects.typing import tensor
from xdsl_ane.interpreter.core import run_function
from xdsl_ane.passes.rlx_to_mil import ConvertRlxToMilPass

with quiet_coremltools():
    from coremltools.converters.mil.mil.ops.defs.iOS18.compression import (
        constexpr_blockwise_shift_scale as ct_shift_scale,
    )

rng = np.random.default_rng(0)


def lowered(module: builtin.ModuleOp) -> builtin.ModuleOp:
    module = module.clone()
    ConvertRlxToMilPass().apply(Context(), module)
    module.verify()
    assert not [op for op in module.walk() if op.name.startswith("rlx.")]
    return module


SCALE_SHAPES = {"per_channel": (8, 1), "per_block": (8, 4), "per_tensor_tensor": (1, 1)}


@pytest.mark.parametrize("case", sorted(SCALE_SHAPES))
@pytest.mark.parametrize("element_type", [f32, f16])
def test_dequantize_constant_weights_is_a_constexpr(case: str, element_type):
    """int8 weights [8, 32] and their scales as params: MIL's decompression."""
    dtype = np.float32 if element_type == f32 else np.float16
    weights = {
        "q": rng.integers(-128, 128, (8, 32)).astype(np.int8),
        "s": (rng.random(SCALE_SHAPES[case]) * 0.1).astype(dtype),
    }
    q = rlx.ParamOp("q", tensor((8, 32), i8))
    s = rlx.ParamOp("s", tensor(SCALE_SHAPES[case], element_type))
    d = rlx.DequantizeOp(
        q.result, zero_point=3, element_type=element_type, scales=s.result
    )
    f = func.FuncOp("main", ((), (tensor((8, 32), element_type),)))
    f.body.block.add_ops([q, s, d, func.ReturnOp(d.result)])
    module = builtin.ModuleOp([f])
    module.verify()
    (ours,) = run_function(module, [], weights)
    mil_module = lowered(module)
    constexprs = [
        op
        for op in mil_module.walk()
        if isinstance(op, mil.ConstexprBlockwiseShiftScaleOp)
    ]
    assert len(constexprs) == 1
    (theirs,) = run_function(mil_module, [], weights)
    reference = ct_shift_scale.decompress(
        weights["q"], weights["s"], np.full(SCALE_SHAPES[case], 3, np.int8)
    )
    np.testing.assert_array_equal(theirs, reference)
    np.testing.assert_allclose(
        ours, reference, rtol=1e-3 if dtype == np.float16 else 1e-6
    )


@pytest.mark.parametrize("case", ["per_channel", "per_block"])
@pytest.mark.parametrize("element_type", [f32, f16])
def test_runtime_quantize_and_dequantize_lower_to_the_same_numbers(
    case: str, element_type
):
    """Activations quantized and dequantized with per-channel / per-block
    scales that are function arguments: interpreted rlx = lowered MIL."""
    dtype = np.float32 if element_type == f32 else np.float16
    shape, scale_shape = (8, 32), SCALE_SHAPES[case]
    x_type, s_type = tensor(shape, element_type), tensor(scale_shape, element_type)
    f = func.FuncOp("main", ((x_type, s_type), (tensor(shape, i8), x_type)))
    x, s = f.body.block.args
    q = rlx.QuantizeOp(x, zero_point=-2, scales=s)
    d = rlx.DequantizeOp(q.result, zero_point=-2, element_type=element_type, scales=s)
    f.body.block.add_ops([q, d, func.ReturnOp(q.result, d.result)])
    module = builtin.ModuleOp([f])
    module.verify()
    inputs = [
        (rng.standard_normal(shape) * 2).astype(dtype),
        (rng.random(scale_shape) * 0.05 + 0.01).astype(dtype),
    ]
    expected = run_function(module, inputs)
    mil_module = lowered(module)
    assert not [op for op in mil_module.walk() if op.name.startswith("mil.constexpr")]
    actual = run_function(mil_module, inputs)
    np.testing.assert_array_equal(actual[0], expected[0])
    np.testing.assert_array_equal(actual[1], expected[1])
    # and the formula itself
    repeated = np.repeat(
        np.repeat(inputs[1], 8 // scale_shape[0], 0), 32 // scale_shape[1], 1
    )
    q_ref = np.clip(np.rint(inputs[0] / repeated) - 2, -128, 127).astype(np.int8)
    np.testing.assert_array_equal(expected[0], q_ref)


@pytest.mark.parametrize(
    ("scale", "scales_shape", "message"),
    [
        (
            0.5,
            (8, 1),
            "exactly one of the property 'scale' (per tensor) and the operand 'scales'",
        ),
        (
            None,
            None,
            "exactly one of the property 'scale' (per tensor) and the operand 'scales'",
        ),
        (
            None,
            (8, 5),
            "operand 'scales' [8, 5] must have the rank of the data [8, 32] and dimensions that divide it",
        ),
        (None, (8,), "operand 'scales' [8] must have the rank of the data [8, 32]"),
    ],
)
def test_invalid_scales(scale, scales_shape, message):
    x = func.FuncOp("f", ((tensor((8, 32), f32),), ())).body.block.args[0]
    scales = None
    if scales_shape is not None:
        scales = func.FuncOp("g", ((tensor(scales_shape, f32),), ())).body.block.args[0]
    with pytest.raises(VerifyException, match="rlx.quantize") as e:
        rlx.QuantizeOp(x, scale, 0, scales=scales)
    assert message in str(e.value)


def test_text_form_round_trips():
    from xdsl_ane.frontend.mlir import parse_module_text

    text = """
func.func @main(%x: tensor<8x32xf32>, %s: tensor<8x4xf32>) -> (tensor<8x32xi8>, tensor<8x32xf16>) {
  %q = rlx.quantize %x scales %s {zero_point = 0 : i64} : (tensor<8x32xf32>, tensor<8x4xf32>) -> tensor<8x32xi8>
  %d = rlx.dequantize %q {scale = 5.0e-01 : f32, zero_point = 1 : i64} : (tensor<8x32xi8>) -> tensor<8x32xf16>
  func.return %q, %d : tensor<8x32xi8>, tensor<8x32xf16>
}
"""
    module = parse_module_text(text, "quantize")
    printed = str(module)
    assert "rlx.quantize %x scales %s {zero_point = 0 : i64}" in printed
    assert str(parse_module_text(printed, "again")) == printed

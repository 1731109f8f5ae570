"""Regression tests for the bugs the fuzzers (test_fuzz_*.py) found."""

from __future__ import annotations

import numpy as np
import pytest
from ane_form import run_ane_form
from robustness_inputs import (
    KERNEL_MIL,
    PROGRAM,
    WEIGHT,
    replaced,
)
from xdsl.context import Context

import xdsl_ane
from xdsl_ane.errors import XdslAneError, XdslAneInternalError
from xdsl_ane.frontend.mil_text import parse_mil_text
from xdsl_ane.frontend.mlir import parse_module_text
from xdsl_ane.interpreter.core import run_function
from xdsl_ane.passes.pipeline import AnePipelinePass


def compile_and_compare(text: str, weights: dict, inputs: list, fp16: bool) -> None:
    module = parse_module_text(text, "regression.mlir")
    expected = run_function(module, inputs, weights)
    for mode in ("static", "dynamic"):
        compiled = module.clone()
        AnePipelinePass(weights=mode, fp16=fp16, lint=False).apply(Context(), compiled)
        compiled.verify()
        actual = run_ane_form(compiled, inputs, weights, [e.shape for e in expected])
        for e, a in zip(expected, actual):
            np.testing.assert_allclose(a, e, rtol=1e-2 if fp16 else 1e-5, atol=1e-3)


def test_padded_broadcast_operand_with_a_layout_chain():
    """mil-ane-layout asserted (`Layout.to_ane`) when an operand that reaches
    its layout through reshapes is broadcast with leading ones ([1, 1] read
    as [1, 1, 1]); found by test_fuzz_pipeline."""
    text = """\
func.func @f(%i: tensor<1x1xi32>, %y: tensor<1x1x1xf32>) -> tensor<1x1x1xf32> {
  %t = rlx.param "t" : tensor<7x1xf32>
  %0 = rlx.gather %t, %i {axis = 0 : i64} : (tensor<7x1xf32>, tensor<1x1xi32>) -> tensor<1x1x1xf32>
  %1 = rlx.reshape %0 : tensor<1x1x1xf32> -> tensor<1x1xf32>
  %2 = rlx.add %1, %y : (tensor<1x1xf32>, tensor<1x1x1xf32>) -> tensor<1x1x1xf32>
  func.return %2 : tensor<1x1x1xf32>
}
"""
    weights = {"t": np.arange(7, dtype=np.float32).reshape(7, 1)}
    inputs = [np.array([[3]], np.int32), np.ones((1, 1, 1), np.float32)]
    for fp16 in (False, True):
        compile_and_compare(text, weights, inputs, fp16)


def test_weight_name_with_a_newline_gives_one_line(tmp_path):
    """An escaped newline in a name used to split the error message (found
    by test_fuzz_parsers)."""
    path = tmp_path / "p.mlir"
    path.write_text(replaced('"w"', '"a\\0Ab"'))
    with pytest.raises(XdslAneError) as raised:
        xdsl_ane.compile(path)
    assert "\n" not in str(raised.value) and "a\\nb" in str(raised.value)


def test_stray_quote_is_reported_fast(tmp_path):
    """xDSL 0.75's string-literal regex backtracks exponentially on an
    unterminated literal followed by a long line; parse_module_text checks
    literals first (found by test_fuzz_parsers)."""
    text = 'func.func @f(%x: tensor<4x8xf32>, %y: tensor<8xf32>, %la"els: tensor<4xi32>, %z: tensor<4xi32>) -> () {\n  func.return\n}\n'
    with pytest.raises(XdslAneError, match=r"p.mlir:1:57: unterminated string"):
        parse_module_text(text, "p.mlir")
    # Valid strings, escapes and quotes in comments still parse.
    parse_module_text(
        '// a "quote\nfunc.func @f() {\n  %0 = rlx.constant dense<1.0> : tensor<f32>\n'
        '  %1 = rlx.param "a\\"b\\0A\\\\" : tensor<f32>\n  func.return\n}\n',
        "ok.mlir",
    )


def test_where_with_the_widest_condition():
    """convert-rlx-to-mil lowered rlx.where to mil.select unchanged, but MIL
    takes select's shape from a and b: a condition wider than both branches
    failed mil.select's verifier (found by test_fuzz_pipeline)."""
    text = """\
func.func @f(%c: tensor<2x3xi1>, %a: tensor<1x3xf32>) -> tensor<2x3xf32> {
  %0 = rlx.neg %a : tensor<1x3xf32>
  %1 = rlx.where %c, %a, %0 : (tensor<2x3xi1>, tensor<1x3xf32>, tensor<1x3xf32>) -> tensor<2x3xf32>
  func.return %1 : tensor<2x3xf32>
}
"""
    inputs = [np.array([[1, 0, 1], [0, 1, 0]], bool), np.ones((1, 3), np.float32)]
    compile_and_compare(text, {}, inputs, fp16=False)


def test_gelu_of_a_scalar_interprets():
    """The interpreter's erf (np.frompyfunc) gave a Python float for a rank-0
    array: rlx.gelu on tensor<f32> raised AttributeError (found by
    test_fuzz_pipeline)."""
    module = parse_module_text(
        "func.func @f(%x: tensor<f32>) -> tensor<f32> {\n"
        "  %0 = rlx.gelu %x : tensor<f32>\n  func.return %0 : tensor<f32>\n}\n",
        "p.mlir",
    )
    (y,) = run_function(module, [np.array(1.0, np.float32)], {})
    assert abs(float(y) - 0.8413447) < 1e-6


def test_rms_norm_backward_input_f16_row_of_zeros():
    """The rlx interpreter computed r³ in f16, which overflows for a row near
    zero (r = 1/sqrt(eps)): nan where the lowering and the math are finite
    (found by test_fuzz_pipeline)."""
    module = parse_module_text(
        "func.func @f(%x: tensor<1x4xf16>, %g: tensor<4xf16>, %d: tensor<1x4xf16>) -> tensor<1x4xf16> {\n"
        "  %0 = rlx.rms_norm_backward_input %x, %g, %d {eps = 1.0e-05 : f32} : "
        "(tensor<1x4xf16>, tensor<4xf16>, tensor<1x4xf16>) -> tensor<1x4xf16>\n"
        "  func.return %0 : tensor<1x4xf16>\n}\n",
        "p.mlir",
    )
    x = np.zeros((1, 4), np.float16)
    g = np.ones(4, np.float16)
    d = np.full((1, 4), 0.1, np.float16)
    (y,) = run_function(module, [x, g, d], {})
    assert np.all(np.isfinite(y))


@pytest.mark.parametrize("literal", ["0x1p16385", "1e400", "-1e400"])
def test_mil_float_literal_beyond_float64(literal):
    """A hex float beyond float64 raised OverflowError (an internal error)
    in the MIL text parser, and a decimal one became inf (found by
    test_fuzz_parsers)."""
    text = KERNEL_MIL.replace("relu(x = x)", f"mul(x = x, y = fp16({literal}))")
    with pytest.raises(XdslAneError, match=r"k.mil:4:\d+: .* is out of range for fp16"):
        parse_mil_text(text, "k.mil")


def test_api_rejects_wrong_arguments_with_its_one_exception(tmp_path):
    """Misused API arguments were internal errors (TypeError) or misleading
    shape errors (a weight given as a list of strings)."""
    path = tmp_path / "p.mlir"
    path.write_text(PROGRAM)
    cases = [
        ((123,), {}, "expected a builtin.ModuleOp or the path"),
        ((path,), {"weights": 5}, "expected a mapping"),
        ((path,), {"weights": {"w": ["a", "b"]}}, "'w' is not a numeric array"),
    ]
    for args, kwargs, needle in cases:
        with pytest.raises(XdslAneError) as raised:
            xdsl_ane.compile(*args, **kwargs)
        assert not isinstance(raised.value, XdslAneInternalError)
        assert needle in str(raised.value)
    # Nested lists of numbers are arrays like any other.
    model = xdsl_ane.compile(path, weights={"w": WEIGHT.tolist()})
    assert model.weights["w"].shape == (2, 3)


def test_out_of_memory_is_an_error_naming_the_file(tmp_path, monkeypatch):
    path = tmp_path / "p.mlir"
    path.write_text(PROGRAM)

    def exhausted(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr("xdsl_ane.passes.compile_pipeline.run_pipeline", exhausted)
    with pytest.raises(XdslAneError, match=r"p.mlir: out of memory"):
        xdsl_ane.compile(path, weights={"w": WEIGHT})

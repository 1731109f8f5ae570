"""canonicalize's patterns for layout changes that only add or drop axes of
size 1, for slices of layout ops and for multiplications by one
(`xdsl_ane.passes.canonicalization`), and mil-ane-layout's concat rule,
checked by numbers: each function is interpreted before and after on the
same random inputs and weights and the results must be identical (the
patterns only move data or drop an exact multiplication by one). The
bench's encoders and vision models hold these chains: an MLP-mixer's token
mixing, a pooler reading the first token, Whisper's attention of scale 1,
a ViT's class token (bench/torch_models.py)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from ane_form import function_of, run_ane_form
from canonicalize_check import (
    arange_weights,
    build_module,
    check_same,
    check_text,
    consts,
    mil_ops,
    parse,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.context import Context
from xdsl.dialects.builtin import f32
from xdsl.ir import Operation
from xdsl.traits import HasCanonicalizationPatternsTrait
from xdsl.transforms.canonicalize import CanonicalizePass

from xdsl_ane.dialects import mil
from xdsl_ane.dialects.typing import tensor
from xdsl_ane.interpreter.core import random_inputs, run_function
from xdsl_ane.passes import canonicalization as canon
from xdsl_ane.passes.ane_layout import MilAneLayoutPass
from xdsl_ane.passes.driver import make_context


@pytest.mark.parametrize(
    "op_type, pattern",
    [
        (mil.TransposeOp, canon.UnitTransposeToReshape),
        (mil.TransposeOp, canon.SinkLayoutThroughSlice),
        (mil.ReshapeOp, canon.MergeUnitReshapesIntoTranspose),
        (mil.ReshapeOp, canon.SinkLayoutThroughSlice),
        (mil.MulOp, canon.RemoveMultiplyByOne),
        (mil.RealDivOp, canon.RemoveMultiplyByOne),
    ],
)
def test_patterns_registered_on_op(op_type: type[Operation], pattern: type) -> None:
    traits = op_type.get_traits_of_type(HasCanonicalizationPatternsTrait)
    found = [p for t in traits for p in t.get_patterns(op_type)]
    assert any(isinstance(p, pattern) for p in found)


# --- reshapes of axes of size 1 around a transpose ----------------------------------


def test_token_mixing_is_one_transpose() -> None:
    """[1, C, 1, S] -> [1, C, S] -> [1, S, C] -> [1, S, 1, C] and back, with
    a token-mixing conv between: two rank-4 transposes."""
    check_text(
        """
        func.func @f(%x: tensor<1x8x1x6xf32>) -> tensor<1x8x1x6xf32> {
          %a = mil.reshape %x {shape = array<i64: 1, 8, 6>} : (tensor<1x8x1x6xf32>) -> tensor<1x8x6xf32>
          %t = mil.transpose %a {perm = array<i64: 0, 2, 1>} : (tensor<1x8x6xf32>) -> tensor<1x6x8xf32>
          %b = mil.reshape %t {shape = array<i64: 1, 6, 1, 8>} : (tensor<1x6x8xf32>) -> tensor<1x6x1x8xf32>
          %w = mil.const weight "w" : tensor<6x6x1x1xf32>
          %m = mil.conv %b, %w : (tensor<1x6x1x8xf32>, tensor<6x6x1x1xf32>) -> tensor<1x6x1x8xf32>
          %c = mil.reshape %m {shape = array<i64: 1, 6, 8>} : (tensor<1x6x1x8xf32>) -> tensor<1x6x8xf32>
          %u = mil.transpose %c {perm = array<i64: 0, 2, 1>} : (tensor<1x6x8xf32>) -> tensor<1x8x6xf32>
          %d = mil.reshape %u {shape = array<i64: 1, 8, 1, 6>} : (tensor<1x8x6xf32>) -> tensor<1x8x1x6xf32>
          func.return %d : tensor<1x8x1x6xf32>
        }
        """,
        {"transpose": 2, "conv": 1},
        arange_weights(w=(6, 6, 1, 1)),
    )


def test_head_split_takes_the_unit_axis() -> None:
    """reshape [1, H·D, 1, S] -> [H, D, S], transpose, reshape [1, H, S, D]:
    one reshape and one transpose."""
    check_text(
        """
        func.func @f(%x: tensor<1x12x1x5xf32>) -> tensor<1x3x5x4xf32> {
          %a = mil.reshape %x {shape = array<i64: 3, 4, 5>} : (tensor<1x12x1x5xf32>) -> tensor<3x4x5xf32>
          %t = mil.transpose %a {perm = array<i64: 0, 2, 1>} : (tensor<3x4x5xf32>) -> tensor<3x5x4xf32>
          %b = mil.reshape %t {shape = array<i64: 1, 3, 5, 4>} : (tensor<3x5x4xf32>) -> tensor<1x3x5x4xf32>
          func.return %b : tensor<1x3x5x4xf32>
        }
        """,
        {"reshape": 1, "transpose": 1},
    )


def test_shared_inner_reshape_stays() -> None:
    """The reshape before the transpose has another use: it stays, the
    transpose and the reshape after it become one transpose of its
    source."""
    check_text(
        """
        func.func @f(%x: tensor<1x8x1x6xf32>) -> (tensor<1x8x6xf32>, tensor<1x6x1x8xf32>) {
          %a = mil.reshape %x {shape = array<i64: 1, 8, 6>} : (tensor<1x8x1x6xf32>) -> tensor<1x8x6xf32>
          %t = mil.transpose %a {perm = array<i64: 0, 2, 1>} : (tensor<1x8x6xf32>) -> tensor<1x6x8xf32>
          %b = mil.reshape %t {shape = array<i64: 1, 6, 1, 8>} : (tensor<1x6x8xf32>) -> tensor<1x6x1x8xf32>
          func.return %a, %b : tensor<1x8x6xf32>, tensor<1x6x1x8xf32>
        }
        """,
        {"reshape": 1, "transpose": 1},
    )


def test_transpose_of_unit_axes_next_to_a_reshape_is_a_reshape() -> None:
    check_text(
        """
        func.func @f(%x: tensor<2x4xf32>) -> tensor<8xf32> {
          %a = mil.reshape %x {shape = array<i64: 1, 8, 1>} : (tensor<2x4xf32>) -> tensor<1x8x1xf32>
          %t = mil.transpose %a {perm = array<i64: 2, 1, 0>} : (tensor<1x8x1xf32>) -> tensor<1x8x1xf32>
          %r = mil.relu %t : tensor<1x8x1xf32>
          %b = mil.reshape %r {shape = array<i64: 8>} : (tensor<1x8x1xf32>) -> tensor<8xf32>
          func.return %b : tensor<8xf32>
        }
        """,
        {"reshape": 1, "relu": 1},
    )


# --- slices of layout ops ------------------------------------------------------------


def test_first_token_is_one_slice() -> None:
    """A pooler's input: the ANE form [1, C, 1, S] seen as [1, S, C], its
    first token taken and laid out as [1, C, 1, 1]: one slice."""
    check_text(
        """
        func.func @f(%x: tensor<1x8x1x6xf16>) -> tensor<1x8x1x1xf16> {
          %a = mil.reshape %x {shape = array<i64: 1, 8, 6>} : (tensor<1x8x1x6xf16>) -> tensor<1x8x6xf16>
          %t = mil.transpose %a {perm = array<i64: 0, 2, 1>} : (tensor<1x8x6xf16>) -> tensor<1x6x8xf16>
          %s = mil.slice_by_size %t {begin = array<i64: 0, 0, 0>, size = array<i64: 1, 1, 8>} : (tensor<1x6x8xf16>) -> tensor<1x1x8xf16>
          %b = mil.reshape %s {shape = array<i64: 1, 8, 1, 1>} : (tensor<1x1x8xf16>) -> tensor<1x8x1x1xf16>
          func.return %b : tensor<1x8x1x1xf16>
        }
        """,
        {"slice_by_size": 1},
    )


def test_slice_of_transpose_reads_to_the_end() -> None:
    check_text(
        """
        func.func @f(%x: tensor<4x6xf32>) -> tensor<2x2xf32> {
          %t = mil.transpose %x {perm = array<i64: 1, 0>} : (tensor<4x6xf32>) -> tensor<6x4xf32>
          %s = mil.slice_by_size %t {begin = array<i64: 1, 2>, size = array<i64: 2, -1>} : (tensor<6x4xf32>) -> tensor<2x2xf32>
          func.return %s : tensor<2x2xf32>
        }
        """,
        {"slice_by_size": 1, "transpose": 1},
    )


def test_slice_of_merging_reshape_stays() -> None:
    after = check_text(
        """
        func.func @f(%x: tensor<2x3x4xf32>) -> tensor<6x2xf32> {
          %r = mil.reshape %x {shape = array<i64: 6, 4>} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
          %s = mil.slice_by_size %r {begin = array<i64: 0, 0>, size = array<i64: 6, 2>} : (tensor<6x4xf32>) -> tensor<6x2xf32>
          func.return %s : tensor<6x2xf32>
        }
        """,
        {"reshape": 1, "slice_by_size": 1},
    )
    (slice_op,) = [op for op in after.walk() if isinstance(op, mil.SliceBySizeOp)]
    assert isinstance(slice_op.x.owner, mil.ReshapeOp)


# --- multiplications by one ----------------------------------------------------------


def test_multiply_by_one_is_dropped() -> None:
    check_text(
        """
        func.func @f(%s: tensor<1x2x4x4xf16>, %x: tensor<2x3xf32>, %i: tensor<2x3xi32>) -> (tensor<1x2x4x4xf16>, tensor<2x3xf32>, tensor<2x3xi32>) {
          %c = mil.const dense<1.0> : tensor<f16>
          %m = mil.mul %s, %c : (tensor<1x2x4x4xf16>, tensor<f16>) -> tensor<1x2x4x4xf16>
          %p = mil.softmax %m {axis = -1 : i64} : tensor<1x2x4x4xf16>
          %o = mil.const dense<1.0> : tensor<1x3xf32>
          %n = mil.mul %o, %x : (tensor<1x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
          %k = mil.const dense<1> : tensor<i32>
          %d = mil.real_div %i, %k : (tensor<2x3xi32>, tensor<i32>) -> tensor<2x3xi32>
          func.return %p, %n, %d : tensor<1x2x4x4xf16>, tensor<2x3xf32>, tensor<2x3xi32>
        }
        """,
        {"softmax": 1},
    )


def test_one_that_broadcasts_or_divides_stays() -> None:
    check_text(
        """
        func.func @f(%x: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>) {
          %c = mil.const dense<1.0> : tensor<2x3xf32>
          %m = mil.mul %x, %c : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
          %one = mil.const dense<1.0> : tensor<f32>
          %d = mil.real_div %one, %x : (tensor<f32>, tensor<3xf32>) -> tensor<3xf32>
          %k = mil.const dense<[1.0, 2.0, 1.0]> : tensor<3xf32>
          %n = mil.mul %x, %k : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
          func.return %m, %d, %n : tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>
        }
        """,
        {"mul": 2, "real_div": 1},
    )


# --- weight views that add axes of size 1 ----------------------------------------------


def test_transpose_of_unit_view_composes() -> None:
    """Whisper's position table [S, C], read as [1, S, C], transposed and
    reshaped to [1, C, 1, S]: one view of the file's tensor."""
    after = check_text(
        """
        func.func @f(%x: tensor<1x4x1x6xf32>) -> tensor<1x4x1x6xf32> {
          %w = mil.const weight "pos" {weight_shape = array<i64: 6, 4>} : tensor<1x6x4xf32>
          %t = mil.transpose %w {perm = array<i64: 0, 2, 1>} : (tensor<1x6x4xf32>) -> tensor<1x4x6xf32>
          %r = mil.reshape %t {shape = array<i64: 1, 4, 1, 6>} : (tensor<1x4x6xf32>) -> tensor<1x4x1x6xf32>
          %y = mil.add %x, %r : (tensor<1x4x1x6xf32>, tensor<1x4x1x6xf32>) -> tensor<1x4x1x6xf32>
          func.return %y : tensor<1x4x1x6xf32>
        }
        """,
        {"add": 1},
        arange_weights(pos=(6, 4)),
    )
    (const,) = consts(after)
    assert const.file_shape() == (6, 4)
    assert const.perm is not None and tuple(const.perm.get_values()) == (1, 0)


@pytest.mark.parametrize(
    "file_perm, view, perm, transposed",
    [
        (None, (1, 6, 4), (1, 0, 2), (6, 1, 4)),  # the order kept: no perm
        ((1, 0), (4, 1, 6), (2, 1, 0), (6, 1, 4)),  # transposed back
        (None, (6, 1, 1, 4), (3, 1, 2, 0), (4, 1, 1, 6)),
    ],
)
def test_unit_views_transposed(file_perm, view, perm, transposed) -> None:
    def t(shape):
        return f"tensor<{'x'.join(map(str, shape))}xf32>"

    view_perm = (
        ""
        if file_perm is None
        else f", perm = array<i64: {', '.join(map(str, file_perm))}>"
    )
    text = f"""
        func.func @f() -> {t(transposed)} {{
          %w = mil.const weight "w" {{weight_shape = array<i64: 6, 4>{view_perm}}} : {t(view)}
          %t = mil.transpose %w {{perm = array<i64: {", ".join(map(str, perm))}>}} : ({t(view)}) -> {t(transposed)}
          func.return %t : {t(transposed)}
        }}
        """
    after = check_text(text, {}, arange_weights(w=(6, 4)))
    (const,) = consts(after)
    expected_perm = None if transposed[0] == 6 else (1, 0)
    actual_perm = None if const.perm is None else tuple(const.perm.get_values())
    assert actual_perm == expected_perm


# --- random chains of unit reshapes, transposes and slices -----------------------------


@st.composite
def unit_chains(draw: st.DrawFn):
    """A start shape and steps: reshapes that add or drop axes of size 1,
    transposes, slices, unary ops."""
    core = draw(st.lists(st.integers(2, 4), min_size=1, max_size=3))

    def with_units(dims: list[int]) -> tuple[int, ...]:
        shape = list(dims)
        for _ in range(draw(st.integers(0, 4 - len(dims)))):
            shape.insert(draw(st.integers(0, len(shape))), 1)
        return tuple(shape)

    start = with_units(core)
    shape, steps = start, []
    for _ in range(draw(st.integers(2, 7))):
        kind = draw(st.sampled_from(["units", "transpose", "slice", "relu"]))
        if kind == "units":
            shape = with_units([d for d in shape if d != 1])
            steps.append(("reshape", shape))
        elif kind == "transpose":
            perm = tuple(draw(st.permutations(range(len(shape)))))
            shape = tuple(shape[p] for p in perm)
            steps.append(("transpose", perm))
        elif kind == "slice":
            begin, size = [], []
            for d in shape:
                b = draw(st.integers(0, d - 1))
                s = draw(st.sampled_from([-1, *range(1, d - b + 1)]))
                begin.append(b)
                size.append(s)
            shape = tuple(
                d - b if s == -1 else s for d, b, s in zip(shape, begin, size)
            )
            steps.append(("slice", (begin, size)))
        else:
            steps.append(("relu", None))
    return start, steps


def emit_steps(emit, x, steps):
    for kind, arg in steps:
        if kind == "reshape":
            x = emit(mil.ReshapeOp(x, arg))
        elif kind == "transpose":
            x = emit(mil.TransposeOp(x, arg))
        elif kind == "slice":
            x = emit(mil.SliceBySizeOp(x, *arg))
        else:
            x = emit(mil.ReluOp(x))
    return x


@settings(max_examples=150, deadline=None, derandomize=True)
@given(chain=unit_chains())
def test_random_unit_chains(chain) -> None:
    """Identical numbers, a second canonicalize changing nothing, and never
    more ops than before."""
    start, steps = chain
    module = build_module(
        [tensor(start, f32)], lambda emit, x: [emit_steps(emit, x, steps)]
    )
    after = check_same(module, seeds=(0,))
    assert sum(mil_ops(after).values()) <= sum(mil_ops(module).values())


# --- mil-ane-layout: concat in ANE form -------------------------------------------------

CLASS_TOKEN = """
func.func @f(%x: tensor<1x3x8x8xf32>) -> tensor<1x5x6xf32> {
  %w = mil.const weight "patch" : tensor<6x3x4x4xf32>
  %p = mil.conv %x, %w {strides = array<i64: 4, 4>} : (tensor<1x3x8x8xf32>, tensor<6x3x4x4xf32>) -> tensor<1x6x2x2xf32>
  %f = mil.reshape %p {shape = array<i64: 1, 6, 4>} : (tensor<1x6x2x2xf32>) -> tensor<1x6x4xf32>
  %s = mil.transpose %f {perm = array<i64: 0, 2, 1>} : (tensor<1x6x4xf32>) -> tensor<1x4x6xf32>
  %cls = mil.const weight "cls" : tensor<1x1x6xf32>
  %c = mil.concat %cls, %s {axis = 1 : i64} : (tensor<1x1x6xf32>, tensor<1x4x6xf32>) -> tensor<1x5x6xf32>
  %pos = mil.const weight "pos" : tensor<1x5x6xf32>
  %e = mil.add %c, %pos : (tensor<1x5x6xf32>, tensor<1x5x6xf32>) -> tensor<1x5x6xf32>
  func.return %e : tensor<1x5x6xf32>
}
"""

CHANNELS = """
func.func @f(%a: tensor<4x3xf32>, %b: tensor<4x5xf32>) -> tensor<4x8xf32> {
  %r = mil.relu %a : tensor<4x3xf32>
  %c = mil.concat %r, %b {axis = -1 : i64} : (tensor<4x3xf32>, tensor<4x5xf32>) -> tensor<4x8xf32>
  func.return %c : tensor<4x8xf32>
}
"""


@pytest.mark.parametrize(
    "text, weights, remaining",
    [
        (
            CLASS_TOKEN,
            arange_weights(patch=(6, 3, 4, 4), cls=(1, 1, 6), pos=(1, 5, 6)),
            {"conv": 1, "reshape": 1, "concat": 1, "add": 1},
        ),
        (CHANNELS, {}, {"relu": 1, "concat": 1}),
    ],
)
def test_concat_runs_in_ane_form(text, weights, remaining) -> None:
    """The logical program and its ANE form on the same data give the same
    numbers; the concat joins ANE forms, no layout op is left around it."""
    module = parse(text)
    inputs = random_inputs(function_of(module), 0)
    expected = run_function(module, inputs, weights)
    ane = module.clone()
    MilAneLayoutPass().apply(Context(), ane)
    CanonicalizePass().apply(make_context(), ane)
    ane.verify()
    actual = run_ane_form(ane, inputs, weights, [e.shape for e in expected])
    for a, e in zip(actual, expected):
        np.testing.assert_array_equal(a, e)
    assert mil_ops(ane) == Counter(remaining)

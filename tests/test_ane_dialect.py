"""The ane dialect: its records print and parse back, alone and on a
compiled module (with xdsl-opt's context, which finds the dialect through
the `xdsl.universe` entry point), offer typed views, and give the API's
manifest its plain JSON values."""

from __future__ import annotations

import json

import pytest
from ane_form import function_of
from xdsl.dialects import builtin
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, StringAttr, f32
from xdsl.parser import Parser
from xdsl.universe import Universe
from xdsl.utils.exceptions import VerifyException

import xdsl_ane
from xdsl_ane.dialects import ane, mil
from xdsl_ane.dialects.functions import build_function
from xdsl_ane.dialects.typing import tensor
from xdsl_ane.frontend.mlir import parse_module_text
from xdsl_ane.models.transformer import (
    QWEN3_0_6B,
    build_attention_block,
    make_weights,
)
from xdsl_ane.passes.driver import make_context
from xdsl_ane.passes.layouts import LayoutError, layout_of, recorded_layout

LAYOUT = ane.LayoutAttr("bsc", (1, 4, 8), (1, 8, 1, 4))
WEIGHT = ane.WeightArgAttr("w", 1, (1, 8, 1, 6), stored_out_in=True)
X = ane.PackedTensorAttr("x", "arg", 0, (1, 8, 1, 4), axis=3, offset=0, length=4)
Y = ane.PackedTensorAttr(
    "y", "arg", 1, (1, 4, 1, 12), axis=3, offset=4, length=6, view=(1, 8, 1, 6)
)
OUT = ane.PackedTensorAttr(
    "out0", "result", 0, (1, 8, 1, 4), axis=1, offset=0, length=8
)
PACKING = ane.PackingAttr(
    "f",
    [ane.PackedBufferAttr((1, 8, 1, 10), [X, Y])],
    [ane.PackedBufferAttr((1, 8, 1, 4), [OUT])],
)


def parse_attribute(text: str):
    return Parser(make_context(), text).parse_attribute()


def test_the_dialect_is_in_the_universe():
    assert Universe.get_multiverse().all_dialects["ane"]() is ane.ANE


@pytest.mark.parametrize(
    "attr, text",
    [
        (LAYOUT, "#ane.layout<bsc, logical = [1, 4, 8], ane = [1, 8, 1, 4]>"),
        (
            ane.LayoutAttr("scalar", (), (1, 1, 1, 1)),
            "#ane.layout<scalar, logical = [], ane = [1, 1, 1, 1]>",
        ),
        (
            ane.LayoutAttr("state", (16, 8), (16, 8)),
            "#ane.layout<state, logical = [16, 8], ane = [16, 8]>",
        ),
        (
            WEIGHT,
            '#ane.weight_arg<"w", arg = 1, shape = [1, 8, 1, 6], stored = [Cout, Cin]>',
        ),
        (
            ane.WeightArgAttr("w", 2, (1, 6, 1, 8), stored_out_in=False),
            '#ane.weight_arg<"w", arg = 2, shape = [1, 6, 1, 8], stored = [Cin, Cout]>',
        ),
        (
            Y,
            '#ane.packed<"y", arg = 1, shape = [1, 4, 1, 12], axis = 3, offset = 4, '
            "length = 6, view = [1, 8, 1, 6]>",
        ),
        (
            PACKING,
            '#ane.packing<"f", inputs = [#ane.buffer<shape = [1, 8, 1, 10], tensors = '
            '[#ane.packed<"x", arg = 0, shape = [1, 8, 1, 4], axis = 3, offset = 0, '
            'length = 4>, #ane.packed<"y", arg = 1, shape = [1, 4, 1, 12], axis = 3, '
            "offset = 4, length = 6, view = [1, 8, 1, 6]>]>], outputs = [#ane.buffer<"
            'shape = [1, 8, 1, 4], tensors = [#ane.packed<"out0", result = 0, shape = '
            "[1, 8, 1, 4], axis = 1, offset = 0, length = 8>]>]>",
        ),
    ],
)
def test_records_print_and_parse_back(attr, text):
    assert str(attr) == text
    assert parse_attribute(text) == attr


def test_typed_views():
    assert LAYOUT.logical_shape == (1, 4, 8) and LAYOUT.ane_shape == (1, 8, 1, 4)
    assert LAYOUT.map == "[1, S, C] -> [1, C, 1, S]"
    assert recorded_layout(LAYOUT) == layout_of((1, 4, 8))
    assert WEIGHT.weight.data == "w" and WEIGHT.arg.data == 1
    assert WEIGHT.arg_shape == (1, 8, 1, 6) and WEIGHT.stored_out_in
    assert not X.is_result and OUT.is_result
    assert X.view_shape is None and X.packed_shape == X.tensor_shape == (1, 8, 1, 4)
    assert Y.view_shape == Y.packed_shape == (1, 8, 1, 6)
    assert Y.tensor_shape == (1, 4, 1, 12) and Y.span == slice(4, 10)
    (buffer,) = PACKING.inputs
    assert buffer.buffer_shape == (1, 8, 1, 10) and list(buffer.tensors) == [X, Y]


def test_a_record_that_is_not_its_shapes_layout():
    with pytest.raises(
        LayoutError, match="layout of logical shape \\[1, 4, 8\\] is bsc"
    ):
        recorded_layout(ane.LayoutAttr("sc", (1, 4, 8), (1, 8, 1, 4)))


def test_manifest_values():
    assert LAYOUT.manifest() == {
        "layout": "bsc",
        "logical": [1, 4, 8],
        "ane": [1, 8, 1, 4],
        "map": "[1, S, C] -> [1, C, 1, S]",
    }
    assert WEIGHT.manifest() == {
        "weight": "w",
        "arg": 1,
        "shape": [1, 8, 1, 6],
        "stored": "[Cout, Cin]",
        "layout": "W[o, i] at [0, i, 0, o]",
    }
    assert PACKING.manifest() == {
        "function": "f",
        "inputs": [
            {
                "shape": [1, 8, 1, 10],
                "tensors": [
                    {
                        "name": "x",
                        "arg": 0,
                        "shape": [1, 8, 1, 4],
                        "axis": 3,
                        "offset": 0,
                        "length": 4,
                    },
                    {
                        "name": "y",
                        "arg": 1,
                        "shape": [1, 4, 1, 12],
                        "axis": 3,
                        "offset": 4,
                        "length": 6,
                        "view": [1, 8, 1, 6],
                    },
                ],
            }
        ],
        "outputs": [
            {
                "shape": [1, 8, 1, 4],
                "tensors": [
                    {
                        "name": "out0",
                        "result": 0,
                        "shape": [1, 8, 1, 4],
                        "axis": 1,
                        "offset": 0,
                        "length": 8,
                    }
                ],
            }
        ],
    }


def test_a_compiled_module_prints_and_parses_back():
    """Every record of a compiled kernel (layouts, dynamic weights, packing)
    survives printing: the reparsed module prints the same and gives the
    same manifest."""
    config = QWEN3_0_6B.with_(
        hidden_size=32, num_heads=2, num_kv_heads=1, head_dim=16, seq_len=8
    )
    module = build_attention_block(config)
    model = xdsl_ane.compile(
        module,
        make_weights(module, config, 0),
        "ane-pipeline{weights=dynamic pack-io=true}",
    )
    function = function_of(model.module)
    assert ane.arg_layouts(function) and ane.weight_args(function)
    assert ane.packing(function) is not None
    text = str(model.module)
    reparsed = parse_module_text(text, "compiled")
    assert str(reparsed) == text
    again = xdsl_ane.CompiledModel(reparsed, model.weights, model.pipeline)
    assert json.dumps(again.manifest()) == json.dumps(model.manifest())


def test_a_state_argument_keeps_its_shape():
    state = mil.StateType(tensor((16, 8), f32))

    def body(x, cache):
        return [mil.ReluOp(x).result]

    module = builtin.ModuleOp(
        [build_function("f", [tensor((4, 8), f32), state], body, ["x", "cache"])]
    )
    model = xdsl_ane.compile(module, {}, "mil-ane-layout")
    (entry,) = model.manifest()["functions"].values()
    assert entry["arg_layouts"][1] == {
        "layout": "state",
        "logical": [16, 8],
        "ane": [16, 8],
        "map": "state, held in its own shape",
    }


def test_a_record_of_another_kind_is_an_error():
    """A function attribute under an `ane.*` record key must hold that kind
    of record (a dictionary, as earlier versions wrote, does not)."""
    function = build_function("f", [tensor((1, 8, 1, 4), f32)], lambda x: [x], ["x"])
    function.attributes[ane.ARG_LAYOUTS] = ArrayAttr(
        [DictionaryAttr({"layout": StringAttr("ane")})]
    )
    with pytest.raises(VerifyException, match="@f: ane.arg_layouts must be an array"):
        ane.arg_layouts(function)
    function.attributes[ane.PACKING] = StringAttr("{}")
    with pytest.raises(VerifyException, match="@f: ane.packing must be"):
        ane.packing(function)


def test_an_invalid_record_is_an_error_at_its_position():
    text = (
        "func.func @f() attributes {ane.arg_layouts = "
        "[#ane.layout<sc, logical = [4, 8], ane = [1, 8, 1, 8]>]} {\n"
        "  func.return\n}\n"
    )
    with pytest.raises(xdsl_ane.XdslAneError) as raised:
        parse_module_text(text, "f.mlir")
    assert str(raised.value) == (
        "f.mlir:1:58: #ane.layout: logical [4, 8] and ane [1, 8, 1, 8] differ in "
        "element count"
    )

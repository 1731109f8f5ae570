"""The runtime interface (`xdsl_ane.interface`): one record of a compiled
function's layouts, dynamic weights and packing, the same from the IR and
from the manifest, converting logical tensors to the function's arguments
and its results back; and the protobuf reader, which builds the same mil
module as the MIL text reader of the same model."""

from __future__ import annotations

import json

import numpy as np
import pytest
from xdsl.dialects import builtin

import xdsl_ane
from xdsl_ane.errors import XdslAneError
from xdsl_ane.frontend.milproto import read_compiled
from xdsl_ane.interface import FunctionInterface
from xdsl_ane.interpreter.core import random_inputs, run_function
from xdsl_ane.models.transformer import QWEN3_0_6B, build_decoder_layer, make_weights

SMALL = QWEN3_0_6B.with_(
    hidden_size=32, num_heads=2, num_kv_heads=1, head_dim=16, ffn_size=48, seq_len=8
)
PACKED = "ane-pipeline{weights=dynamic pack-io=true fp16=false}"


@pytest.fixture(scope="module")
def layer():
    module = build_decoder_layer(SMALL)
    return module, make_weights(module, SMALL, 0)


@pytest.fixture(scope="module")
def packed(layer):
    module, weights = layer
    return xdsl_ane.compile(module, weights=weights, pipeline=PACKED)


def test_the_manifest_record_reads_back_as_the_same_interface(packed):
    (function,) = packed.functions
    interface = FunctionInterface.of_function(function)
    assert interface.packing is not None and interface.weight_args
    record = json.loads(json.dumps(interface.manifest()))
    assert FunctionInterface.from_manifest(record) == interface
    assert packed.manifest()["functions"][function.sym_name.data] == record


def test_arguments_and_results_drive_the_compiled_function_like_its_source(
    layer, packed
):
    """The source layer on random logical inputs against the packed,
    dynamic-weight function fed through the interface (fp32, so equal to
    rounding)."""
    module, weights = layer
    (source,) = [op for op in module.ops if hasattr(op, "sym_name")]
    logical = random_inputs(source, 3)
    expected = run_function(module, logical, weights)
    (function,) = packed.functions
    interface = FunctionInterface.of_function(function)
    args = interface.arguments(logical, weights, function.function_type.inputs.data)
    assert (
        len(args)
        == len(function.function_type.inputs.data)
        < len(logical) + len(interface.weight_args or ())
    )  # packed: fewer buffers than tensors
    results = run_function(packed.module, args, packed.weights)
    actual = interface.logical_results(results)
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-5)


def test_pack_then_unpack_is_the_identity_on_every_buffer(packed):
    (function,) = packed.functions
    packing = FunctionInterface.of_function(function).packing
    assert packing is not None
    rng = np.random.default_rng(0)
    # The outputs' layout read as inputs: cut apart, then put back.
    outputs = [rng.standard_normal(b.shape).astype(np.float32) for b in packing.outputs]
    tensors = packing.unpack(outputs)
    for buffer, value in zip(packing.outputs, outputs):
        again = buffer.pack(tensors, np.dtype(np.float32))
        np.testing.assert_array_equal(again, value)
    # The inputs: put together, then cut apart.
    shapes = {t.index: t.shape for b in packing.inputs for t in b.tensors}
    args = {i: rng.standard_normal(s).astype(np.float32) for i, s in shapes.items()}
    buffers = packing.pack(args, [np.dtype(np.float32)] * len(packing.inputs))
    back = {
        i: v for b, x in zip(packing.inputs, buffers) for i, v in b.unpack(x).items()
    }
    assert back.keys() == args.keys()
    for i, value in args.items():
        np.testing.assert_array_equal(back[i], value)


@pytest.mark.parametrize(
    "record, message",
    [
        ({"arg_layouts": [{"layout": "sc"}]}, "malformed record"),
        (
            {"arg_layouts": [{"layout": "sc", "logical": [8, 4], "ane": [1, 8, 1, 4]}]},
            "held as \\[1, 4, 1, 8\\]",
        ),
        (
            {
                "weight_args": [
                    {"weight": "w", "arg": 1, "shape": [1, 2, 1, 3], "stored": "[O, I]"}
                ]
            },
            "weight argument 'w': stored \\[O, I\\]",
        ),
    ],
)
def test_a_malformed_manifest_record_is_one_clear_error(record, message):
    with pytest.raises(XdslAneError, match=message) as info:
        FunctionInterface.from_manifest(record, "m.manifest.json: @main")
    assert str(info.value).startswith("m.manifest.json: @main: ")
    assert "\n" not in str(info.value)


def unnamed(module: builtin.ModuleOp) -> str:
    """The module's text with no value names, and weights by order."""
    module = module.clone()
    for op in module.walk():
        for value in (
            *op.results,
            *(a for r in op.regions for b in r.blocks for a in b.args),
        ):
            value.name_hint = None
        if "weight" in op.properties:
            op.properties["weight"] = builtin.StringAttr("w")
    return str(module)


def weight_data(weights) -> list[tuple[tuple[int, ...], str, bytes]]:
    return sorted((v.shape, v.dtype.str, v.tobytes()) for v in weights.values())


@pytest.mark.parametrize("pipeline", ["ane-pipeline", PACKED])
def test_protobuf_and_mil_text_read_back_as_the_same_module(layer, tmp_path, pipeline):
    """One model saved as an .mlpackage and as MIL text: the protobuf reader
    and the MIL text reader give the same ops, types and weights."""
    module, weights = layer
    compiled = xdsl_ane.compile(module, weights=weights, pipeline=pipeline)
    compiled.save(tmp_path / "m.mlpackage")
    compiled.save(tmp_path / "text", emit="mil-text")
    from_proto = read_compiled(tmp_path / "m.mlpackage")
    from_text = read_compiled(tmp_path / "text")
    # a single-function package names its function main
    (function,) = from_text.module.ops
    assert function.sym_name.data == "decoder_layer"
    function.sym_name = builtin.StringAttr("main")
    # value names are the printers' own (the protobuf's may differ)
    assert unnamed(from_proto.module) == unnamed(from_text.module)
    assert weight_data(from_proto.weights) == weight_data(from_text.weights)
    assert from_proto.manifest["functions"] == from_text.manifest["functions"]


def test_a_protobuf_op_the_dialect_lacks_is_named(packed, tmp_path):
    from xdsl_ane.frontend.milproto import ProtoImportError, read_proto

    spec = type(packed.spec)()
    spec.CopyFrom(packed.spec)
    function = next(iter(spec.mlProgram.functions.values()))
    block = function.block_specializations[function.opset]
    op = next(o for o in block.operations if o.type != "const")
    op.type = "no_such_op"
    with pytest.raises(ProtoImportError, match="no_such_op") as info:
        read_proto(spec, tmp_path, "m.mlpackage")
    assert str(info.value).startswith("m.mlpackage: @")
    assert "unknown MIL op 'no_such_op'" in str(info.value)

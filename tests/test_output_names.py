"""Output names: a compiled function's outputs carry the source's names
(`ane.result_names`: the torch output names, the LLM record's, the
returned values' hints), the same in the protobuf's program and
description, the MIL text and the manifest, and in every function of a
package; coremltools reads them back, and each name holds the value the
source gives it."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from cli_helpers import cli, saved_output_names
from xdsl.dialects import func
from xdsl.utils.exceptions import VerifyException

import xdsl_ane
from xdsl_ane.api import CompiledModel
from xdsl_ane.backend.milproto import module_to_proto
from xdsl_ane.backend.names import boundary_names
from xdsl_ane.dialects import ane
from xdsl_ane.frontend.milproto import read_compiled
from xdsl_ane.frontend.mlir import parse_module_text
from xdsl_ane.interpreter.core import random_inputs, run_function
from xdsl_ane.passes.layouts import layout_of


def mil_text_outputs(text: str) -> list[list[str]]:
    return [m.split(", ") for m in re.findall(r"\} -> \((.*)\);", text)]


MIL = """
func.func @f(%x: tensor<1x4x1x8xf16>, %c: tensor<1x4x1x8xi1>) -> (tensor<1x4x1x8xf16>, tensor<1x4x1x8xf16>, tensor<1x4x1x8xf16>, tensor<1x4x1x8xi1>, tensor<1x2x1x8xf16>, tensor<1x4x1x8xf16>) attributes {ane.result_names = ["logits_0", "x", "logits_0_copy", "mask", "half_1", "hidden.states"]} {
  %logits_0 = mil.relu %x : tensor<1x4x1x8xf16>
  %eq = mil.equal %logits_0, %x : (tensor<1x4x1x8xf16>, tensor<1x4x1x8xf16>) -> tensor<1x4x1x8xi1>
  %s:2 = mil.split %x {axis = 1 : i64, num_splits = 2 : i64} : (tensor<1x4x1x8xf16>) -> (tensor<1x2x1x8xf16>, tensor<1x2x1x8xf16>)
  %mask = mil.select %c, %x, %logits_0 : (tensor<1x4x1x8xi1>, tensor<1x4x1x8xf16>, tensor<1x4x1x8xf16>) -> tensor<1x4x1x8xf16>
  func.return %logits_0, %x, %logits_0, %eq, %s#1, %mask : tensor<1x4x1x8xf16>, tensor<1x4x1x8xf16>, tensor<1x4x1x8xf16>, tensor<1x4x1x8xi1>, tensor<1x2x1x8xf16>, tensor<1x4x1x8xf16>
}
"""
EXPECTED = ["logits_0", "x_output", "logits_0_copy", "mask", "half_1", "hidden_states"]
"""The recorded names as MIL identifiers: `x` is an input's name (so
`x_output`), `hidden.states` is sanitized; `%mask`'s own hint yields to the
output named `mask` (a bool output, cast at the end)."""


def test_mil_function_outputs_take_the_recorded_names(tmp_path):
    module = parse_module_text(MIL, "names.mlir")
    function = module.body.block.first_op
    assert isinstance(function, func.FuncOp)
    assert boundary_names(function) == (["x", "c"], EXPECTED)
    result = module_to_proto(module, {})
    report = result.validate()
    assert report.ok, str(report)
    block = result.spec.mlProgram.functions["main"].block_specializations["CoreML8"]
    assert list(block.outputs) == EXPECTED
    assert [o.name for o in result.spec.description.output] == EXPECTED
    # the op defining an output is renamed; an argument or a value returned
    # again is an identity
    types = {o.name: op.type for op in block.operations for o in op.outputs}
    assert types["logits_0"] == "relu"
    assert types["s_0"] == types["half_1"] == "split"
    assert types["x_output"] == types["logits_0_copy"] == "identity"
    model = CompiledModel(module, {}, "none")
    assert model.manifest()["functions"]["f"]["outputs"] == EXPECTED
    assert mil_text_outputs(model.mil_text) == [EXPECTED]
    # each name holds the value the source returns under it
    path = model.save(tmp_path / "names.mlpackage")
    assert saved_output_names(path) == {"main": EXPECTED}
    inputs = random_inputs(function, 0)
    expected = run_function(module, inputs)
    back = read_compiled(path)
    got = run_function(back.module, [inputs[0], inputs[1].astype(np.float32)])
    for e, g, name in zip(expected, got, EXPECTED):
        np.testing.assert_array_equal(g.astype(e.dtype), e, err_msg=name)


def test_recorded_names_must_be_one_string_per_result(tmp_path):
    module = parse_module_text(MIL.replace(', "hidden.states"]', "]"), "bad.mlir")
    function = module.body.block.first_op
    with pytest.raises(VerifyException, match="one non-empty string per result"):
        ane.result_names(function)
    source = tmp_path / "bad.mlir"
    source.write_text(
        RLX.replace("{\n  %w", 'attributes {ane.result_names = ["a"]} {\n  %w')
    )
    np.savez(tmp_path / "w.npz", w=np.zeros((16, 16), np.float32))
    out = tmp_path / "bad.mlpackage"
    result = cli(
        "compile", str(source), "--weights", str(tmp_path / "w.npz"), "-o", str(out)
    )
    assert result.returncode == 1 and not out.exists()
    assert result.stderr == (
        f"xdsl-ane: error: {source}: ane-pipeline: mil-ane-layout: @f: "
        'ane.result_names must hold one non-empty string per result (2), got ["a"]\n'
    )


RLX = """
func.func @f(%x: tensor<1x8x16xf32>) -> (tensor<1x8x16xf32>, tensor<1x8x16xf32>) {
  %w = rlx.param "w" : tensor<16x16xf32>
  %logits = rlx.matmul %x, %w {transpose_rhs = true} : (tensor<1x8x16xf32>, tensor<16x16xf32>) -> tensor<1x8x16xf32>
  %hidden = rlx.relu %x : tensor<1x8x16xf32>
  func.return %logits, %hidden : tensor<1x8x16xf32>, tensor<1x8x16xf32>
}
"""


@pytest.mark.parametrize("pack_io", [False, True], ids=["plain", "pack-io"])
def test_compiled_mlir_outputs_keep_the_returned_names(tmp_path, pack_io):
    """Through ane-pipeline (whose values are replaced) the outputs are the
    returned values' names; packed, the one output is `output` and the
    packed tensors keep the names."""
    source = tmp_path / "f.mlir"
    source.write_text(RLX)
    weights = {"w": np.random.default_rng(0).standard_normal((16, 16), np.float32)}
    pipeline = "ane-pipeline{pack-io=true}" if pack_io else "ane-pipeline"
    model = xdsl_ane.compile(source, weights=weights, pipeline=pipeline)
    expected = ["output"] if pack_io else ["logits", "hidden"]
    path = model.save(tmp_path / "f.mlpackage")
    assert saved_output_names(path) == {"main": expected}
    entry = model.manifest()["functions"]["f"]
    assert entry["outputs"] == expected
    if pack_io:
        tensors = entry["packing"]["outputs"][0]["tensors"]
        assert [t["name"] for t in tensors] == ["logits", "hidden"]
    manifest = json.loads((tmp_path / "f.manifest.json").read_text())
    assert manifest["functions"]["f"]["outputs"] == expected
    text_dir = model.save(tmp_path / "f_mil", emit="mil-text")
    assert mil_text_outputs((text_dir / "model.mil").read_text()) == [expected]
    if not pack_io:  # by numbers: each name is the right value
        x = np.random.default_rng(1).standard_normal((1, 8, 16), np.float32)
        back = read_compiled(path)
        got = run_function(
            back.module, [layout_of(x.shape).to_ane(x).astype(np.float16)], back.weights
        )
        want = {"logits": x @ weights["w"].T, "hidden": np.maximum(x, 0)}
        for name, g in zip(expected, got):
            g = layout_of(x.shape).to_logical(g).astype(np.float32)
            np.testing.assert_allclose(g, want[name], rtol=2e-2, atol=2e-2)


def torch_program(kind: str):
    import torch

    class Dict(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(16, 8)

        def forward(self, x):
            h = torch.relu(x)
            return {"last_hidden_state": h, "logits": self.proj(h)}

    class Tuple(Dict):
        def forward(self, x):
            h = torch.relu(x)
            return self.proj(h), h

    torch.manual_seed(0)
    module = (Dict if kind == "dict" else Tuple)().eval()
    x = torch.randn(1, 4, 16)
    program = torch.export.export(module, (x,))
    with torch.no_grad():
        out = module(x)
    values = list(out.values()) if isinstance(out, dict) else list(out)
    return program, x, [v.numpy() for v in values]


@pytest.mark.parametrize("kind", ["dict", "tuple"])
@pytest.mark.parametrize("through_text", [False, True], ids=["module", "text"])
def test_torch_outputs_keep_the_torch_names(tmp_path, kind, through_text):
    """A torch import's outputs are its output names (`output_0`,
    `output_1` for a tuple, which a name hint cannot carry), through the
    .mlir text too; each name holds torch's value."""
    program, x, reference = torch_program(kind)
    imported = xdsl_ane.from_torch(program)
    names = (
        ["last_hidden_state", "logits"] if kind == "dict" else ["output_0", "output_1"]
    )
    assert imported.output_names == names
    source = imported.module
    if through_text:
        path = tmp_path / "m.mlir"
        path.write_text(str(imported.module))
        source = path
    model = xdsl_ane.compile(source, weights=imported.weights)
    saved = model.save(tmp_path / "m.mlpackage")
    assert saved_output_names(saved) == {"main": names}
    assert model.manifest()["functions"]["main"]["outputs"] == names
    back = read_compiled(saved)
    xs = x.numpy()
    got = run_function(
        back.module, [layout_of(xs.shape).to_ane(xs).astype(np.float16)], back.weights
    )
    for name, g, want in zip(names, got, reference):
        g = layout_of(want.shape).to_logical(g).astype(np.float32)
        np.testing.assert_allclose(g, want, rtol=2e-2, atol=2e-2, err_msg=name)


def test_llm_functions_share_the_record_names(tmp_path):
    """compile-llm: prefill and decode expose the record's outputs
    (`logits_0`, ... or `next_token`) under the same names; split, each
    package's functions are named as its manifest says."""
    from llm_checkpoints import write_checkpoint

    from xdsl_ane.api.llm_compile import compile_llm

    checkpoint = tmp_path / "ckpt"
    write_checkpoint(checkpoint, "qwen3")
    for argmax, chunk in ((False, 128), (True, 512)):
        package = compile_llm(
            checkpoint, context=16, prefill=4, chunk=chunk, argmax=argmax
        )
        out = tmp_path / f"llm{argmax}.mlpackage"
        package.save(out)
        manifest = json.loads(out.with_name(out.stem + ".manifest.json").read_text())
        names = manifest["llm"]["outputs"]
        assert names == (
            ["next_token"] if argmax else ["logits_0", "logits_1", "logits_2"]
        )
        assert saved_output_names(out) == {"prefill": names, "decode": names}
        for f in ("prefill", "decode"):
            assert manifest["functions"][f]["outputs"] == names
    split = compile_llm(
        checkpoint, context=16, prefill=4, chunk=512, layers_per_package=1
    )
    for part in split.parts:
        path = tmp_path / f"{part.name}.mlpackage"
        part.compiled.save(path)
        functions = part.compiled.manifest()["functions"]
        saved = saved_output_names(path)
        assert saved == {f: functions[f]["outputs"] for f in ("prefill", "decode")}
        assert saved["prefill"] == saved["decode"]
        if (
            part.record["inputs"] == ["hidden_states"]
            or "input_ids" in part.record["inputs"]
        ):
            # the embedding and the head: the record's names themselves
            assert saved["prefill"] == part.record["outputs"]
        else:  # the layers read hidden_states too: Core ML names are unique
            assert saved["prefill"] == ["hidden_states_output"]

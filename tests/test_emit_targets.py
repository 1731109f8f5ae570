"""Every emit honours the deployment target, and functions that return an
argument or a value twice give valid models in every form."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import builtin
from xdsl.dialects.builtin import f32

import xdsl_ane
from xdsl_ane.backend.mil_text import module_to_mil_text
from xdsl_ane.backend.targets import Deployment
from xdsl_ane.dialects import mil, rlx
from xdsl_ane.dialects.functions import build_function
from xdsl_ane.dialects.typing import tensor
from xdsl_ane.errors import XdslAneError
from xdsl_ane.frontend.mil_text import parse_mil_text
from xdsl_ane.interpreter.core import run_function

T = tensor((8, 32), f32)


def identity_module() -> builtin.ModuleOp:
    return builtin.ModuleOp([build_function("f", [T], lambda x: [x], ["x"])])


def twice_module() -> builtin.ModuleOp:
    def body(x):
        y = rlx.ReluOp(x).result
        return [y, y]

    return builtin.ModuleOp([build_function("f", [T], body, ["x"])])


def mixed_module() -> builtin.ModuleOp:
    """An argument returned next to a computed value, and that value twice."""

    def body(x, z):
        y = rlx.SiluOp(x).result
        return [z, y, y, x]

    return builtin.ModuleOp([build_function("f", [T, T], body, ["x", "z"])])


@pytest.mark.parametrize("build", [identity_module, twice_module, mixed_module])
@pytest.mark.parametrize("fp16", ["true", "false"])
def test_returned_arguments_and_repeated_values(build, fp16, tmp_path):
    module = build()
    model = xdsl_ane.compile(module, pipeline=f"ane-pipeline{{fp16={fp16}}}")
    report = model.validate()
    assert report.ok, report.findings
    description = model.spec.description
    inputs = [f.name for f in description.input]
    outputs = [f.name for f in description.output]
    assert len(set(outputs)) == len(outputs)
    assert not set(inputs) & set(outputs)
    # The MIL text names its outputs uniquely too, and imports back to a
    # program with the same numbers.
    text = model.mil_text
    returned = text.split("} -> (")[1].split(")")[0].split(", ")
    params = text.split("func f<ios18>(")[1].split(")")[0]
    assert len(set(returned)) == len(returned)
    assert not any(f"> {name}" in params for name in returned)
    imported, _ = parse_mil_text(text)
    rng = np.random.default_rng(0)
    f = model.functions[0]
    inputs_ = [
        rng.standard_normal(a.type.get_shape()).astype(
            np.float16 if fp16 == "true" else np.float32
        )
        for a in f.body.block.args
    ]
    expected = run_function(model.module, inputs_, {})
    got = run_function(imported, inputs_, {})
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        np.testing.assert_array_equal(a, b)
    model.save(tmp_path / "m.mlpackage")


def test_validation_rejects_duplicate_feature_names():
    """The check itself: a spec whose output repeats an input's name fails."""
    model = xdsl_ane.compile(identity_module())
    spec = model.proto.spec
    block = spec.mlProgram.functions["main"].block_specializations["CoreML8"]
    del block.operations[:]
    block.outputs[:] = ["x"]
    spec.description.output[0].name = "x"
    report = model.proto.validate()
    assert not report.ok
    assert any("feature names must be unique" in str(f) for f in report.findings)


@pytest.mark.parametrize("target, opset", [("iOS17", "ios17"), ("iOS18", "ios18")])
def test_mil_text_honours_target(target, opset, tmp_path):
    model = xdsl_ane.compile(twice_module(), target=target)
    assert f"func f<{opset}>(" in model.mil_text
    model.save(tmp_path / "m", emit="mil-text")
    assert f"func f<{opset}>(" in (tmp_path / "m" / "model.mil").read_text()
    assert model.spec.specificationVersion == {"iOS17": 8, "iOS18": 9}[target]


def test_an_op_the_target_lacks_is_an_error():
    """Each printer checks every op against the target's opset."""
    iOS16 = Deployment("iOS16", 7, "CoreML6", "ios16")
    program = parse_mil_text(
        "program(1.3)\n{\n    func main<ios18>(tensor<fp32, [4]> x) {\n"
        "        tensor<int8, [4]> q = quantize(input = x, scale = fp32(0.5), "
        'output_dtype = string("int8"))[name = string("q")];\n'
        "    } -> (q);\n}\n"
    )[0]
    (quantize,) = [op for op in program.walk() if isinstance(op, mil.QuantizeOp)]
    with pytest.raises(
        XdslAneError, match="mil.quantize needs deployment target iOS17"
    ):
        iOS16.check_available(quantize, "@main")
    text, _ = module_to_mil_text(program, target="iOS17")
    assert "func main<ios17>" in text

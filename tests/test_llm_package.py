"""compile-llm and generate: the stateful multifunction package of a tiny
checkpoint passes coremltools' loader with both functions and their
states, shares one weight blob, is in ANE form, and generates transformers'
tokens in fp16 through the interpreter; bad input gives one line and
writes nothing."""

from __future__ import annotations

import json

import numpy as np
import pytest
from llm_checkpoints import write_checkpoint

from xdsl_ane.passes.layouts import ane_form_problems
from xdsl_ane.tools.cli import main
from xdsl_ane.tools.llm import PackageRunner, compile_llm, reference_generate

pytest.importorskip("transformers")

PROMPT = [5, 17, 200, 3, 99]


@pytest.mark.parametrize(
    "family,tied,argmax", [("qwen3", False, False), ("llama", True, True)]
)
def test_package_generates_transformers_tokens(tmp_path, family, tied, argmax):
    checkpoint = tmp_path / "ckpt"
    write_checkpoint(checkpoint, family, tied, "bfloat16")
    package = compile_llm(checkpoint, context=32, prefill=4, chunk=128, argmax=argmax)
    report = package.validate()
    assert report.ok, str(report)
    spec = package.compiled.proto.spec
    functions = {f.name: f for f in spec.description.functions}
    assert set(functions) == {"prefill", "decode"}
    for f in functions.values():
        assert [s.name for s in f.state] == ["key_cache", "value_cache"]
        assert list(f.state[0].type.stateType.arrayType.shape) == [2, 2, 32, 16]
    for f in package.compiled.functions:
        assert ane_form_problems(f, fp16=True) == []
    # one blob for both functions: each fp16 weight once (twice would be
    # 4 bytes per parameter; blob records and alignment add some)
    params = sum(w.size for w in package.weights.values())
    assert 2 * params <= package.compiled.weight_bytes() < 3 * params
    out = tmp_path / "llm.mlpackage"
    package.save(out)
    manifest = json.loads((tmp_path / "llm.manifest.json").read_text())["llm"]
    assert manifest["head_chunks"] == [[0, 100], [100, 200], [200, 300]]
    assert manifest["outputs"] == (
        ["next_token"] if argmax else ["logits_0", "logits_1", "logits_2"]
    )
    tokens, logits = PackageRunner(out).generate(PROMPT, 6)
    ref_tokens, ref_logits = reference_generate(checkpoint, PROMPT, 6)
    assert tokens == ref_tokens
    for got, ref in zip(logits, ref_logits):
        np.testing.assert_allclose(got, ref, rtol=2e-2, atol=2e-2 * np.abs(ref).max())


def test_cli_compile_llm_and_generate(tmp_path, capsys):
    checkpoint = tmp_path / "ckpt"
    write_checkpoint(checkpoint, "qwen3", False, "float16", "40KB")
    out = tmp_path / "q.mlpackage"
    args = [
        "compile-llm",
        str(checkpoint),
        "-o",
        str(out),
        "--context",
        "32",
        "--prefill",
        "8",
        "--chunk",
        "128",
    ]
    assert main(args + ["--validate"]) == 0
    assert "validated" in capsys.readouterr().out
    assert main(args) == 1
    assert "already exists (use --force" in capsys.readouterr().err
    assert (
        main(
            [
                "generate",
                str(out),
                "--prompt-ids",
                "5,17,200",
                "--steps",
                "4",
                "--reference",
                str(checkpoint),
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "same tokens" in text and "largest logit difference" in text


def test_bad_input_writes_nothing(tmp_path, capsys):
    checkpoint = tmp_path / "ckpt"
    write_checkpoint(checkpoint, "qwen3")
    capsys.readouterr()  # transformers' own progress output
    out = tmp_path / "x.mlpackage"
    assert (
        main(["compile-llm", str(checkpoint), "-o", str(out), "--context", "300"]) == 1
    )
    err = capsys.readouterr().err
    assert (
        err.count("\n") == 1
        and "context 300 is beyond the model's max_position_embeddings 256" in err
    )
    config = json.loads((checkpoint / "config.json").read_text())
    (checkpoint / "config.json").write_text(
        json.dumps(config | {"architectures": ["BertModel"]})
    )
    assert (
        main(["compile-llm", str(checkpoint), "-o", str(out), "--context", "32"]) == 1
    )
    assert "supported: Qwen3ForCausalLM" in capsys.readouterr().err
    (checkpoint / "model.safetensors").unlink()
    assert main(["compile-llm", str(checkpoint), "-o", str(out)]) == 1
    assert (
        "no model.safetensors or model.safetensors.index.json"
        in capsys.readouterr().err
    )
    assert not out.exists() and not (tmp_path / "x.manifest.json").exists()

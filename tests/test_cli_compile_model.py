"""`xdsl-ane compile-model`: the real Qwen3-0.6B training kernel set,
compiled, validated with coremltools' loader, and written with manifests."""

from __future__ import annotations

import json

import coremltools as ct
import pytest
from cli_helpers import cli as in_process
from cli_helpers import cli_process as cli
from cli_helpers import error_line

# Qwen3-0.6B-size kernels and a 2-layer forward model: -m 'not slow' skips them.
pytestmark = pytest.mark.slow

REFERENCE = {
    "attention_forward",
    "output_projection",
    "ffn_forward",
    "ffn_backward_w2",
    "ffn_backward_w13",
    "output_projection_backward",
    "attention_backward_1",
    "attention_backward_2",
    "q_projection_backward",
    "kv_projection_backward",
}


def test_qwen3_training_kernels(tmp_path):
    out = tmp_path / "kernels"
    result = cli(
        "compile-model", "qwen3-0.6b", "--training", "-o", str(out), "--validate"
    )
    assert result.returncode == 0, result.stderr
    assert "and validated" in result.stdout
    listing = json.loads((out / "kernels.json").read_text())
    names = {k["name"] for k in listing["kernels"]}
    assert REFERENCE <= names
    assert {
        "rms_norm_forward",
        "rms_norm_backward",
        "silu_backward",
        "rope_backward",
        "gqa_reduce",
        "cross_entropy_combine",
    } <= names
    assert any(n.startswith("weight_gradient_") for n in names)
    assert any(n.startswith("classifier_forward") for n in names)
    for kernel in listing["kernels"]:
        assert "0 errors, 0 warnings" in kernel["lint"]
        spec = ct.utils.load_spec(str(out / kernel["mlpackage"]))
        (function,) = spec.mlProgram.functions.values()
        assert len(spec.description.input) == 1 and len(spec.description.output) == 1
        assert (out / kernel["mil_text"]).read_text().startswith("program(1.3)")
        manifest = json.loads((out / kernel["manifest"]).read_text())
        (entry,) = manifest["functions"].values()
        assert len(entry["packing"]["inputs"]) == 1
        assert len(entry["packing"]["outputs"]) == 1
        assert function.opset == "CoreML8"


def test_existing_directory_and_unknown_model(tmp_path):
    out = tmp_path / "kernels"
    out.mkdir()
    result = cli("compile-model", "qwen3-0.6b", "--training", "-o", str(out))
    assert result.returncode == 1 and "already exists" in result.stderr
    assert "Traceback" not in result.stderr
    result = cli("compile-model", "gpt-5", "-o", str(tmp_path / "x"))
    assert result.returncode == 1 and "unknown model 'gpt-5'" in result.stderr
    assert not (tmp_path / "x").exists()


def test_forward_model_frees_its_fp16_copies_and_force(tmp_path, monkeypatch):
    """The forward model is written with the fp16 copies of its weights made
    while the passes ran, and frees them once written (held to the end,
    they were ~0.9 GB at 28 layers); --force replaces the kernels'
    directory, but not one holding a file xdsl-ane did not write."""
    from xdsl_ane.backend.weights import Fp16Prefetch

    made = []
    start = Fp16Prefetch.__init__

    def tracked(self, *args, **kwargs):
        made.append(self)
        start(self, *args, **kwargs)

    monkeypatch.setattr(Fp16Prefetch, "__init__", tracked)
    out = tmp_path / "forward"
    args = ["compile-model", "qwen3-0.6b", "--layers", "1", "--seq-len", "8"]
    result = in_process(*args, "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert made and all(p.stopped.is_set() and not p.copies for p in made)
    listing = json.loads((out / "kernels.json").read_text())["kernels"]
    assert [k["name"] for k in listing] == ["decoder"]
    (out / "notes.txt").write_text("mine")
    error_line(
        in_process(*args, "-o", str(out), "--force"),
        "holds notes.txt, which xdsl-ane did not write",
    )
    assert (out / "notes.txt").read_text() == "mine"
    (out / "notes.txt").unlink()
    assert in_process(*args, "-o", str(out), "--force").returncode == 0

"""`xdsl-ane import model.pt2` and `xdsl-ane compile model.pt2`: a file
written by `torch.export.save` to rlx with its weights, and all the way to
a validated package; bad programs are one line with nothing written."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
import transformers
from cli_helpers import cli as xdsl_ane_cli
from cli_helpers import error_line as assert_clean_error
from lowering_cases import relative_error
from torch import nn
from torch_check import export

from xdsl_ane.frontend.mlir import parse_module
from xdsl_ane.interpreter.core import run_function
from xdsl_ane.weights.arrays import load_arrays

# Exports torch programs and Hugging Face models built from configs: -m 'not slow' skips them.
pytestmark = pytest.mark.slow

warnings.filterwarnings("ignore", module="transformers")
transformers.logging.set_verbosity_error()


@pytest.fixture(scope="module")
def qwen3(tmp_path_factory) -> tuple[Path, torch.export.ExportedProgram, torch.Tensor]:
    config = transformers.Qwen3Config(
        vocab_size=256,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=1,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        max_position_embeddings=64,
    )
    torch.manual_seed(0)
    model = transformers.Qwen3ForCausalLM(config).eval()
    ids = torch.randint(0, 256, (1, 8))
    program = export(model, (ids,), {"use_cache": False})
    path = tmp_path_factory.mktemp("pt2") / "qwen3.pt2"
    torch.export.save(program, path)
    return path, program, ids


def test_import_writes_rlx_and_weights(qwen3, tmp_path):
    path, program, ids = qwen3
    out = tmp_path / "qwen3.mlir"
    result = xdsl_ane_cli("import", str(path), "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    weights_path = tmp_path / "qwen3.weights.npz"
    assert f"wrote {out} and" in result.stdout and weights_path.exists()
    module = parse_module(out)
    weights = load_arrays(weights_path, "weights")
    assert "model.layers.0.self_attn.q_proj.weight" in weights
    (logits,) = run_function(module, [ids.numpy().astype(np.int32)], weights)
    with torch.no_grad():
        expected = program.module()(ids, use_cache=False).logits.numpy()
    assert relative_error(expected, logits) < 1e-4


def test_compile_pt2_end_to_end(qwen3, tmp_path):
    path, _, _ = qwen3
    out = tmp_path / "qwen3.mlpackage"
    result = xdsl_ane_cli("compile", str(path), "-o", str(out), "--validate")
    assert result.returncode == 0, result.stderr
    assert f"{path}: compiled with ane-pipeline" in result.stdout
    assert "conv" in result.stdout and "validated" in result.stdout
    assert out.is_dir() and (tmp_path / "qwen3.manifest.json").exists()


class Unsupported(nn.Module):
    def forward(self, x):
        return torch.lgamma(x)


def test_unsupported_op_in_pt2_writes_nothing(tmp_path):
    path = tmp_path / "lgamma.pt2"
    torch.export.save(export(Unsupported(), (torch.randn(1, 4, 8),)), path)
    for command in (
        ["import", "-o", str(tmp_path / "c.mlir")],
        ["compile", "-o", str(tmp_path / "c.mlpackage")],
    ):
        result = xdsl_ane_cli(command[0], str(path), *command[1:])
        assert_clean_error(result, str(path), "aten.lgamma.default", "node lgamma")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lgamma.pt2"]


def test_not_a_pt2_file(tmp_path):
    path = tmp_path / "broken.pt2"
    path.write_bytes(b"not a zip archive")
    result = xdsl_ane_cli("compile", str(path), "-o", str(tmp_path / "b.mlpackage"))
    assert_clean_error(result, f"{path}: not a torch.export program")
    missing = xdsl_ane_cli("import", str(tmp_path / "missing.pt2"))
    assert_clean_error(missing, "missing.pt2: file does not exist")

"""Hugging Face checkpoints to the stateful rlx program (prefill + decode,
KV cache as state): the fp32 program interpreted against transformers on
the same weights, every family, sharded and not, tied and not; bad
checkpoints give one-line errors."""

from __future__ import annotations

import json
import os

import pytest
from llm_checkpoints import (
    assert_same_greedy,
    program_greedy,
    reference_greedy,
    write_checkpoint,
)

from xdsl_ane.errors import XdslAneError
from xdsl_ane.models.hf_config import FAMILIES, llm_config
from xdsl_ane.models.llm import Decoder, LlmShape
from xdsl_ane.weights.checkpoint import read_checkpoint

# Compiles and runs LLM checkpoints against transformers: -m 'not slow' skips them.
pytestmark = pytest.mark.slow


PROMPT = [5, 17, 200, 3, 99]


CASES = [
    ("qwen3", False, None, "float32"),
    ("qwen3", True, "40KB", "bfloat16"),
    ("qwen2", False, None, "float16"),
    ("llama", True, None, "float32"),
    ("mistral", False, "60KB", "float32"),
    ("gemma", True, None, "float32"),
    ("phi3", False, None, "float32"),
    ("gemma3_text", True, None, "float32"),
    ("gemma2", True, None, "float32"),
    ("gpt_neox", False, None, "float32"),
    ("gpt2", True, None, "float32"),
    ("starcoder2", False, None, "float32"),
    ("granite", False, None, "float32"),
    ("smollm3", True, None, "float32"),
    ("olmo2", False, None, "float32"),
    ("cohere", True, None, "float32"),
    ("glm", False, None, "float32"),
    ("glm4", True, None, "float32"),
    ("olmo3", False, None, "float32"),
    ("exaone4", True, None, "float32"),
    ("seed_oss", False, None, "float32"),
    ("ministral3", False, None, "float32"),
    ("apertus", True, None, "float32"),
    ("lfm2", True, None, "float32"),
    ("mamba2", False, None, "float32"),
    ("granitemoehybrid", True, None, "float32"),
    ("qwen3_5", False, None, "float32"),
    ("qwen3_moe", False, None, "float32"),
    ("mixtral", False, "60KB", "float32"),
    ("olmoe", True, None, "float32"),
    ("granitemoe", False, None, "float32"),
    ("gpt_oss", True, None, "float32"),
    ("gemma4_text", True, None, "float32"),
    ("gemma4", True, "100KB", "float32"),
]


@pytest.mark.parametrize("family,tied,shard,dtype", CASES)
def test_fp32_program_matches_transformers(tmp_path, family, tied, shard, dtype):
    model = write_checkpoint(tmp_path, family, tied, dtype, shard)
    if shard:
        assert (tmp_path / "model.safetensors.index.json").is_file()
    config = llm_config(read_checkpoint(tmp_path))
    assert (config.family.name, config.tied) == (family, tied)
    shape = LlmShape(context=32, prefill=8, chunk=128)  # 3 head chunks
    steps = 16
    assert_same_greedy(
        program_greedy(tmp_path, PROMPT, steps, shape),
        reference_greedy(model, PROMPT, steps),
    )


def test_bad_checkpoints(tmp_path):
    write_checkpoint(tmp_path, "qwen3", False, "float32", "40KB")
    index = json.loads((tmp_path / "model.safetensors.index.json").read_text())
    shards = sorted(set(index["weight_map"].values()))
    missing = tmp_path / shards[1]
    data = missing.read_bytes()
    missing.unlink()
    with pytest.raises(XdslAneError, match=f"{shards[1]}: weights file not found"):
        read_checkpoint(tmp_path)
    missing.write_bytes(data[:100])
    with pytest.raises(XdslAneError, match="not a valid safetensors file"):
        read_checkpoint(tmp_path)
    missing.write_bytes(data)
    config = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(
        json.dumps(config | {"architectures": ["JambaForCausalLM"]})  # Mamba layers
    )
    with pytest.raises(
        XdslAneError,
        match="field 'architectures' is \\['JambaForCausalLM'\\]; supported: "
        + ", ".join(FAMILIES),
    ):
        llm_config(read_checkpoint(tmp_path))
    (tmp_path / "config.json").write_text(
        json.dumps(config | {"intermediate_size": 96})
    )
    checkpoint = read_checkpoint(tmp_path)
    cfg = llm_config(checkpoint)
    module = Decoder(cfg, LlmShape(context=16, prefill=4)).build()
    with pytest.raises(
        XdslAneError,
        match=r"tensor 'model.layers.0.mlp.gate_proj.weight' has shape \[128, 64\], the config needs \[96, 64\]",
    ):
        Decoder(cfg, LlmShape(context=16, prefill=4)).weights(checkpoint, module)


def test_bf16_to_fp16_rounds_every_bf16_as_numpy_does():
    """All 65536 bf16 bit patterns: the table lookup the blob writer uses
    gives numpy's float32 -> float16 rounding of the widened value
    (subnormals, overflow to inf, signed zeros, inf; nan stays nan), and
    the widening puts the bits in float32's upper half."""
    import numpy as np

    from xdsl_ane.weights.checkpoint import bf16_to_fp16, bf16_to_fp32

    bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    with np.errstate(over="ignore"):
        expected = bf16_to_fp32(bits).astype(np.float16)
    actual = bf16_to_fp16(bits, np.empty(bits.size, np.float16))
    nan = np.isnan(expected)
    assert np.array_equal(actual.view(np.uint16)[~nan], expected.view(np.uint16)[~nan])
    assert np.isnan(actual[nan]).all()
    widened = bf16_to_fp32(bits)
    assert np.array_equal(widened.view(np.uint32) >> 16, bits)
    assert not (widened.view(np.uint32) & 0xFFFF).any()


def test_a_bf16_tensor_reads_and_converts_block_by_block_as_torch(
    tmp_path, monkeypatch
):
    """CheckpointTensor's reads in blocks of rows (several here, each
    looked up in several index blocks): float32 widening, as a new array
    and into a caller's buffer, and the direct bf16 -> fp16 conversion
    into the blob's buffer give torch's values (subnormal, overflow to inf
    and -0 among them)."""
    import numpy as np
    import torch
    from safetensors.torch import save_file

    import xdsl_ane.weights.checkpoint as checkpoint_module

    tensor = (torch.randn(37, 11) * 300).to(torch.bfloat16)
    tensor[0, :3] = torch.tensor([1e-7, 7e4, -0.0])
    save_file({"w": tensor}, str(tmp_path / "model.safetensors"))
    (tmp_path / "config.json").write_text("{}")
    monkeypatch.setattr(checkpoint_module, "DIRECT_BLOCK", 50)  # 4 rows a block
    monkeypatch.setattr(checkpoint_module, "FP16_BLOCK", 7)
    lazy = read_checkpoint(tmp_path).lazy("w")
    out = np.empty(lazy.size, np.float16)
    lazy.convert_into(out, None)
    expected = tensor.to(torch.float16).numpy().reshape(-1)
    assert np.isinf(expected[1])
    assert np.array_equal(out.view(np.uint16), expected.view(np.uint16))
    np.testing.assert_array_equal(np.asarray(lazy), tensor.float().numpy())
    widened = np.full(lazy.size, np.nan, np.float32)
    lazy.convert_into(widened, None)
    np.testing.assert_array_equal(widened, tensor.float().numpy().reshape(-1))


def test_a_bf16_tensor_cut_short_after_its_header_was_read_is_named(tmp_path):
    """A file that ends inside a tensor once its header was read (it
    changed under the compile) is a one-line error naming the file and
    the tensor, not a fault of the mapping the bits are read through."""
    import numpy as np
    import torch
    from safetensors.torch import save_file

    save_file(
        {"w": torch.ones(64, 64, dtype=torch.bfloat16)},
        str(tmp_path / "model.safetensors"),
    )
    (tmp_path / "config.json").write_text("{}")
    lazy = read_checkpoint(tmp_path).lazy("w")
    path = tmp_path / "model.safetensors"
    os.truncate(path, path.stat().st_size - 100)
    with pytest.raises(
        XdslAneError, match=r"model.safetensors: cannot read tensor 'w' \(the file ends"
    ):
        lazy.convert_into(np.empty(lazy.size, np.float16), None)
    with pytest.raises(XdslAneError, match=r"cannot read tensor 'w'"):
        np.asarray(lazy)

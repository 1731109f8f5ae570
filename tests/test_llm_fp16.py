"""fp16 safety of compile-llm: the fp32 program run on calibration prompts
finds the largest hidden state of the embedding and of each layer; where
the residual stream would pass fp16's range it is carried scaled by
α = 2^−k, and where a stream RMSNorm would square values past fp16's range
its input is divided by 2^j first — both exact, so the outputs do not
change. Checkpoints whose branches are scaled up make the stream pass
65504 (and the norms' squares long before)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from llm_checkpoints import program_inputs, write_checkpoint

from xdsl_ane.api.llm import PackageRunner, reference_generate
from xdsl_ane.api.llm_compile import compile_llm
from xdsl_ane.errors import XdslAneError
from xdsl_ane.interpreter.core import StatefulRuntime
from xdsl_ane.models.calibration import (
    calibration_prompts,
    fp16_rescaled,
    residual_maxima,
)
from xdsl_ane.models.hf_config import llm_config
from xdsl_ane.models.llm import Decoder, LlmShape
from xdsl_ane.tools.cli import main
from xdsl_ane.weights.checkpoint import read_checkpoint

# Compiles LLM checkpoints and runs transformers: -m 'not slow' skips them.
pytestmark = pytest.mark.slow


PROMPT = [5, 17, 200, 3, 99]


def scaled_checkpoint(
    directory,
    family: str,
    names: tuple[str, ...],
    factor: float,
    divided: tuple[str, ...] = (),
):
    """A tiny checkpoint with the tensors whose names contain one of `names`
    multiplied by `factor` and those of `divided` divided by it (then read
    back by transformers as its reference)."""
    from safetensors.torch import load_file, save_file

    write_checkpoint(directory, family)
    path = directory / "model.safetensors"
    tensors = load_file(path)
    for name in tensors:
        if any(n in name for n in names):
            tensors[name] = tensors[name] * factor
        if any(n in name for n in divided):
            tensors[name] = tensors[name] / factor
    save_file(tensors, path, metadata={"format": "pt"})
    return directory


BRANCH_ENDS = ("o_proj", "down_proj")


# (the unchecked package's weights overflow as they are cast to fp16)
@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
def test_stream_past_65504_is_rescaled_and_generates_transformers_tokens(tmp_path):
    checkpoint = scaled_checkpoint(tmp_path / "ckpt", "llama", BRANCH_ENDS, 1.5e6)
    package = compile_llm(checkpoint, context=32, prefill=4, chunk=128)
    fp16 = package.manifest_record["fp16"]
    assert max(fp16["largest_per_layer"]) > 65504
    assert fp16["stream_scale"] < 1 and max(fp16["norm_input_scales"]) > 1
    out = tmp_path / "llm.mlpackage"
    package.save(out)
    tokens, logits = PackageRunner(out).generate(PROMPT, 16)
    ref_tokens, ref_logits = reference_generate(checkpoint, PROMPT, 16)
    assert tokens == ref_tokens
    for got, ref in zip(logits, ref_logits):
        np.testing.assert_allclose(got, ref, rtol=2e-2, atol=2e-2 * np.abs(ref).max())
    # unchecked, the same checkpoint's fp16 package overflows
    unchecked = tmp_path / "unchecked.mlpackage"
    compile_llm(checkpoint, context=32, prefill=4, chunk=128, fp16_check=False).save(
        unchecked
    )
    tokens, logits = PackageRunner(unchecked).generate(PROMPT, 4)
    assert not all(np.isfinite(row).all() for row in logits) or tokens != ref_tokens[:4]


def test_norm_inputs_are_divided_before_the_stream_overflows(tmp_path):
    """A stream of ~600 is in fp16's range, but its squares are not: the
    norms' inputs are divided, the stream is not scaled."""
    checkpoint = scaled_checkpoint(tmp_path / "ckpt", "qwen3", BRANCH_ENDS, 1e4)
    package = compile_llm(checkpoint, context=32, prefill=4, chunk=128)
    fp16 = package.manifest_record["fp16"]
    assert 256 < max(fp16["largest_per_layer"]) < 16384
    assert fp16["stream_scale"] == 1.0 and max(fp16["norm_input_scales"]) > 1
    out = tmp_path / "llm.mlpackage"
    package.save(out)
    assert (
        PackageRunner(out).generate(PROMPT, 16)[0]
        == (reference_generate(checkpoint, PROMPT, 16)[0])
    )


@pytest.mark.parametrize(
    "family,names,factor",
    [
        ("llama", BRANCH_ENDS, 1.5e6),
        ("gemma3_text", ("post_feedforward_layernorm",), 3e4),
        # each expert's down projection ends the branch: its own, or rows
        # of the stacked experts
        ("mixtral", ("o_proj", "w2"), 1.5e6),
        ("granitemoe", ("o_proj", "output_linear"), 1.5e6),
        # Gemma 4's stream passes into its router's norm and, without a
        # norm, into the gate of its per-layer inputs (divided: the gate's
        # activation sees values near 0, where it is not linear)
        ("gemma4_text", ("post_feedforward_layernorm.", "post_per_layer_input"), 3e4),
    ],
)
def test_rescaling_leaves_the_fp32_program_unchanged(tmp_path, family, names, factor):
    """The rescaled program in fp32 gives the original's logits (the
    scales are powers of two; eps moves with them)."""
    divided = ("per_layer_input_gate",) if family == "gemma4_text" else ()
    checkpoint = scaled_checkpoint(tmp_path, family, names, factor, divided)
    checkpoint = read_checkpoint(checkpoint)
    config = llm_config(checkpoint)
    shape = LlmShape(context=16, prefill=4)
    decoder = Decoder(config, shape)
    maxima = residual_maxima(checkpoint, decoder, calibration_prompts(decoder))
    rescaled = fp16_rescaled(config, maxima, str(tmp_path))
    assert rescaled != config
    outputs = []
    for c in (config, rescaled):
        module = Decoder(c, shape).build()
        runtime = StatefulRuntime(module, Decoder(c, shape).weights(checkpoint, module))
        ids = np.array(PROMPT[:4], np.int32)
        outputs.append(
            np.concatenate(
                runtime.call("prefill", program_inputs(checkpoint, c, ids, 0)), 1
            )
        )
    scale = np.abs(outputs[0]).max()
    np.testing.assert_allclose(outputs[1], outputs[0], rtol=1e-5, atol=1e-5 * scale)


@pytest.mark.parametrize("family", ["llama", "gemma3_text", "gpt_neox", "gemma4_text"])
def test_calibrating_a_part_at_a_time_matches_the_whole_program(tmp_path, family):
    """part_maxima (the embedding over the rows the prompts read, then a
    layer at a time) finds the maxima the whole fp32 probe program finds,
    a chunked table, Gemma's scaled embedding and GPT-NeoX's own tensor
    names included; Gemma 4's per-layer inputs and shared keys and values
    passed from part to part."""
    from xdsl_ane.models.calibration import part_maxima, probe_maxima

    write_checkpoint(tmp_path, family)
    checkpoint = read_checkpoint(tmp_path)
    config = llm_config(checkpoint)
    shape = LlmShape(context=16, prefill=4, chunk=config.vocab_size // 3)
    prompts = [PROMPT, [1, 2]]
    whole = probe_maxima(checkpoint, config, shape, prompts)
    parts = part_maxima(checkpoint, config, shape, prompts)
    assert len(whole) == config.num_layers + 1
    np.testing.assert_allclose(parts, whole, rtol=1e-5)
    assert whole[0] > 0


def test_a_layer_scalar_below_1_counts_the_stream_inside_its_layer(tmp_path):
    """Gemma 4's layer_scalar shrinks a layer's output, not the stream its
    second norm and branch ends see: the check takes each layer's largest
    |x| after the scalar divided by it."""
    from xdsl_ane.models.calibration import part_maxima

    scaled_checkpoint(tmp_path, "gemma4_text", ("layer_scalar",), 1e-3)
    checkpoint = read_checkpoint(tmp_path)
    config = llm_config(checkpoint)
    decoder = Decoder(config, LlmShape(context=16, prefill=4))
    prompts = calibration_prompts(decoder)
    after = part_maxima(checkpoint, config, decoder.shape, prompts)
    inside = residual_maxima(checkpoint, decoder, prompts)
    scalars = [
        float(checkpoint.tensor(f"model.layers.{i}.layer_scalar")[0])
        for i in range(config.num_layers)
    ]
    assert all(0 < s < 1e-2 for s in scalars)
    np.testing.assert_allclose(
        inside, [after[0]] + [m / s for m, s in zip(after[1:], scalars)], rtol=1e-6
    )


def test_a_post_norm_family_past_the_range_names_the_layer(tmp_path, capsys):
    """OLMo 2 reads the stream without a norm: no rescaling keeps its
    outputs, so compile-llm refuses in one line and writes nothing."""
    scaled_checkpoint(tmp_path / "ckpt", "olmo2", ("post_attention_layernorm",), 3e4)
    out = tmp_path / "m.mlpackage"
    capsys.readouterr()
    command = ["compile-llm", str(tmp_path / "ckpt"), "-o", str(out)]
    assert main(command + ["--context", "16", "--prefill", "4"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert re.search(r"ckpt: layer \d's hidden states reach [0-9.e+]+, past", err)
    assert "the layers of olmo2 read them without a norm, so no rescaling" in err
    assert not out.exists()


def test_compile_llm_reports_the_check(tmp_path, capsys):
    write_checkpoint(tmp_path / "ckpt", "qwen3")
    out = tmp_path / "m.mlpackage"
    command = ["compile-llm", str(tmp_path / "ckpt"), "-o", str(out)]
    assert main(command + ["--context", "16", "--prefill", "4"]) == 0
    assert "over 2 calibration prompts, within range" in capsys.readouterr().out
    assert (
        main(
            command
            + ["--context", "16", "--prefill", "4", "--force", "--no-fp16-check"]
        )
        == 0
    )
    assert "fp16: not checked (--no-fp16-check)" in capsys.readouterr().out


def test_non_finite_float32_is_named():
    config = llm_config_stub()
    with pytest.raises(XdslAneError, match="layer 1's hidden states are not finite"):
        fp16_rescaled(config, [1.0, 2.0, float("inf")], "ckpt")


def llm_config_stub():
    from xdsl_ane.models.configs import FAMILIES, LlmConfig

    return LlmConfig(
        family=FAMILIES["LlamaForCausalLM"],
        hidden_size=8,
        num_layers=2,
        num_heads=2,
        num_kv_heads=2,
        head_dim=4,
        ffn_size=16,
        vocab_size=10,
        rms_eps=1e-6,
        rope_theta=1e4,
        rope_scaling=None,
        max_positions=64,
        tied=False,
    )


def nan_checkpoint(directory, family: str, name_part: str):
    """A tiny checkpoint with one NaN in the first tensor whose name holds
    `name_part`; returns that tensor's name."""
    from safetensors.torch import load_file, save_file

    write_checkpoint(directory, family)
    path = directory / "model.safetensors"
    tensors = load_file(path)
    name = next(n for n in sorted(tensors) if name_part in n)
    tensors[name].view(-1)[3] = float("nan")
    save_file(tensors, path, metadata={"format": "pt"})
    return name


@pytest.mark.parametrize(
    "family, part", [("qwen3", "layers.1.mlp.down_proj"), ("gpt2", "h.1.mlp.c_fc")]
)
def test_a_nan_weight_is_named_not_called_within_range(tmp_path, capsys, family, part):
    """A NaN in a layer's weight made the calibration's maxima NaN, which
    Python's max() dropped: compile-llm said "within range" and every token
    came out 0. It now fails in one line naming the tensor and the layer,
    and writes nothing (RoPE families calibrate a part at a time, learned
    positions the whole program: both are checked)."""
    name = nan_checkpoint(tmp_path / "ckpt", family, part)
    out = tmp_path / "m.mlpackage"
    capsys.readouterr()
    command = ["compile-llm", str(tmp_path / "ckpt"), "-o", str(out)]
    assert main(command + ["--context", "16", "--prefill", "4"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert f"checkpoint tensor '{name}' holds 1 non-finite value(s) (nan)" in err
    assert "layer 1's hidden states are not finite" in err
    assert not out.exists()

"""`xdsl-ane train` against torch, step by step: a tiny checkpoint of each
trainable family fine-tuned for 3 steps of 2 sequences (gradient
accumulation) with AdamW (weight decay on rank >= 2 tensors), gradient
clipping and a cosine schedule with warmup, in fp32 kernels, gives torch's
losses (relative 1e-4) and weights (relative 1e-3) read back with
`from_pretrained`; the same run in fp16 kernels with a dynamic loss scale
learns a repeated batch; a resumed run prints the uninterrupted run's
losses; bad input is one line and leaves nothing."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from cli_helpers import cli, error_line
from llm_checkpoints import write_checkpoint
from train_helpers import OPTIONS, SEQ, relative, token_file, torch_reference

from xdsl_ane.api.train import TrainOptions, train

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    "family, tied, overrides",
    [
        ("qwen3", False, {}),
        ("qwen3", True, {}),
        ("llama", False, {}),
        ("qwen2", False, {}),  # q, k and v biases
        ("llama", False, {"attention_bias": True}),  # and o_proj's
        ("llama", False, {"hidden_act": "gelu"}),
        ("gemma", True, {}),  # (1 + w) norms, √hidden embedding, GELU-tanh
        ("llama", False, {"mlp_bias": True}),
        ("mistral", False, {"sliding_window": 8}),  # a window below --seq-len
        ("phi3", False, {"partial_rotary_factor": 0.5}),  # fused qkv and gate_up
        ("gpt_neox", False, {}),  # LayerNorm, parallel residual, per-head qkv
        ("gpt_neox", False, {"use_parallel_residual": False}),
        ("gpt2", True, {}),  # Conv1D, learned positions, biases everywhere
        ("starcoder2", False, {"sliding_window": 8}),  # LayerNorm, plain MLP
        ("granite", False, {}),  # the four multipliers
        ("smollm3", False, {}),  # a layer without RoPE
        ("olmo2", False, {}),  # post-norms, QK-norm over the projections
        ("cohere", True, {}),  # one LayerNorm, parallel, interleaved RoPE
        ("gemma2", True, {}),  # sandwich norms, both soft-caps, windows
        ("gemma3_text", True, {}),  # QK-norm, the sliding layers' own RoPE
        ("glm4", False, {}),  # fused gate_up, interleaved partial RoPE, norms
        ("olmo3", False, {}),  # OLMo 2's with windows, per-type RoPE (YaRN)
        ("exaone4", True, {}),  # post-norms, per-head QK-norm, a NoPE layer
        ("seed_oss", False, {}),  # q, k, v, o and MLP biases
        ("ministral3", False, {}),  # YaRN
        ("apertus", True, {}),  # xIELU's learned parameters, a plain MLP
    ],
)
def test_fine_tuning_matches_torch_step_by_step(tmp_path, family, tied, overrides):
    model = write_checkpoint(tmp_path / "ckpt", family, tied=tied, **overrides)
    steps = 3
    data, ids = token_file(tmp_path, steps * 2 * (SEQ + 1))
    lines = []
    result = train(
        tmp_path / "ckpt",
        data,
        tmp_path / "out",
        TrainOptions(steps=steps, **OPTIONS),
        on_step=lambda r: lines.append(r.line()),
    )
    losses = [r.loss for r in result.records]
    expected, trained = torch_reference(model, ids, steps, OPTIONS)
    assert relative(losses, expected) < 1e-4, (losses, expected)
    assert lines[0].startswith("step 1/3: loss ") and " tok/s " in lines[0]

    from transformers import AutoModelForCausalLM

    ours = AutoModelForCausalLM.from_pretrained(tmp_path / "out", dtype=torch.float32)
    theirs = dict(trained.named_parameters())
    for name, value in ours.named_parameters():
        assert relative(value.detach(), theirs[name].detach()) < 1e-3, name
    start = AutoModelForCausalLM.from_pretrained(tmp_path / "ckpt", dtype=torch.float32)
    moved = [
        relative(value.detach(), dict(start.named_parameters())[name].detach())
        for name, value in ours.named_parameters()
    ]
    assert min(moved) > 1e-4  # every tensor trained


@pytest.mark.parametrize("family", ["qwen3", "llama"])
def test_the_plan_is_the_runtimes_call_order(tmp_path, family):
    """plan.json's kernel calls are the calls TrainingRuntime.step makes
    (traced), and compile-train writes each kernel the plan names."""
    from xdsl_ane.api.train import compile_train, trainable_weights, training_setup
    from xdsl_ane.models.rope import rope_tables
    from xdsl_ane.models.runtime import TrainingRuntime

    write_checkpoint(tmp_path / "ckpt", family)
    result = compile_train(
        tmp_path / "ckpt", tmp_path / "kernels", seq_len=SEQ, precision="fp32"
    )
    setup = training_setup(tmp_path / "ckpt", SEQ)
    cos, sin = rope_tables(setup.config, SEQ)
    weights = setup.layout.to_runtime(trainable_weights(setup))
    weights |= {"rope.cos": cos, "rope.sin": sin}
    runtime = TrainingRuntime(setup.config, weights, result.kernels)
    runtime.trace = []
    tokens = np.arange(SEQ) % 300
    runtime.step(tokens, tokens[::-1].copy())
    planned = [(c["kernel"], c["layer"]) for c in result.plan["calls"]]
    assert runtime.trace == planned
    written = json.loads((tmp_path / "kernels" / "plan.json").read_text())
    assert written["calls"] == result.plan["calls"]
    for kernel in written["kernels"]:
        assert (tmp_path / "kernels" / kernel["mlpackage"]).is_dir()


def test_fp16_with_a_dynamic_loss_scale_learns_a_repeated_batch(tmp_path):
    write_checkpoint(tmp_path / "ckpt", "qwen3")
    row = np.random.default_rng(1).integers(0, 300, SEQ + 1).astype(np.int32)
    np.save(tmp_path / "same.npy", np.tile(row, 8))
    options = TrainOptions(steps=8, seq_len=SEQ, lr=1e-2, precision="fp16")
    result = train(tmp_path / "ckpt", tmp_path / "same.npy", tmp_path / "out", options)
    losses = [r.loss for r in result.records if not r.skipped]
    assert len(losses) >= 6 and losses[-1] < 0.5 * losses[0], losses
    assert all(r.loss_scale == 512.0 for r in result.records)  # 256 x 2 layers
    from safetensors.numpy import load_file

    tensors = load_file(str(tmp_path / "out" / "model.safetensors"))
    assert all(np.all(np.isfinite(v)) for v in tensors.values())


def test_a_resumed_run_prints_the_uninterrupted_losses(tmp_path):
    write_checkpoint(tmp_path / "ckpt", "llama")
    data, _ = token_file(tmp_path, 4 * 2 * (SEQ + 1), seed=3)
    options = dict(OPTIONS, schedule="constant", warmup=0)
    whole = train(
        tmp_path / "ckpt", data, tmp_path / "whole", TrainOptions(steps=4, **options)
    )
    first = cli(
        "train", str(tmp_path / "ckpt"), "--data", str(data), "-o", str(tmp_path / "half"),
        "--steps", "2", "--seq-len", str(SEQ), "--batch", "2", "--lr", "3e-3",
        "--weight-decay", "0.1", "--betas", "0.9,0.95", "--grad-clip", "1.0",
        "--precision", "fp32",
    )  # fmt: skip
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines()[0].startswith("step 1/2: loss ")
    rest = train(
        tmp_path / "ckpt",
        data,
        tmp_path / "half",
        TrainOptions(steps=4, **options),
        resume=tmp_path / "half",
    )
    assert [r.step for r in rest.records] == [3, 4]
    expected = [r.loss for r in whole.records[2:]]
    assert relative([r.loss for r in rest.records], expected) < 1e-6
    from safetensors.numpy import load_file

    a = load_file(str(tmp_path / "whole" / "model.safetensors"))
    b = load_file(str(tmp_path / "half" / "model.safetensors"))
    assert all(np.allclose(a[k], b[k], rtol=1e-6, atol=1e-7) for k in a)


def test_steps_zero_writes_the_starting_point_with_the_tokenizer(tmp_path):
    write_checkpoint(tmp_path / "ckpt", "qwen3")
    (tmp_path / "ckpt" / "tokenizer_config.json").write_text("{}")
    data, _ = token_file(tmp_path, SEQ + 1)
    options = TrainOptions(steps=0, seq_len=SEQ, precision="fp32")
    train(tmp_path / "ckpt", data, tmp_path / "out", options)
    assert (tmp_path / "out" / "tokenizer_config.json").read_text() == "{}"
    from safetensors.numpy import load_file

    before = load_file(str(tmp_path / "ckpt" / "model.safetensors"))
    after = load_file(str(tmp_path / "out" / "model.safetensors"))
    assert sorted(before) == sorted(after)
    assert all(np.array_equal(before[k].astype(np.float32), after[k]) for k in before)


def bad(tmp_path, *args):
    write_checkpoint(tmp_path / "ckpt", "qwen3")
    data, _ = token_file(tmp_path, 4 * (SEQ + 1))
    base = ["train", str(tmp_path / "ckpt"), "--data", str(data)]
    result = cli(*base, "-o", str(tmp_path / "out"), "--seq-len", str(SEQ), *args)
    assert not (tmp_path / "out").exists()
    return result


@pytest.mark.parametrize(
    "args, message",
    [
        (["--lr", "0"], "--lr 0.0: must be > 0"),
        (["--lr=-1e-3"], "--lr -0.001: must be > 0"),
        (["--batch", "0"], "--batch 0: must be ≥ 1"),
        (["--betas", "0.9"], "--betas 0.9: expected two numbers"),
        (["--loss-scale", "big"], "--loss-scale big: expected auto or a number"),
        (["--seq-len", "1"], "--seq-len 1: must lie in [2,"),
        (
            ["--kernels", "/nonexistent"],
            "--kernels /nonexistent: no readable plan.json",
        ),
    ],
)
def test_bad_options_are_one_line(tmp_path, args, message):
    error_line(bad(tmp_path, *args), message)


def test_bad_data_is_one_line(tmp_path):
    write_checkpoint(tmp_path / "ckpt", "qwen3")
    out = tmp_path / "out"

    def run(data):
        base = ["train", str(tmp_path / "ckpt"), "--data", str(data), "-o", str(out)]
        return cli(*base, "--seq-len", str(SEQ))

    np.save(tmp_path / "big.npy", np.array([1, 2, 300, 4] * 10, np.int32))
    error_line(run(tmp_path / "big.npy"), "big.npy", "300")
    np.save(tmp_path / "short.npy", np.arange(SEQ, dtype=np.int32))
    error_line(run(tmp_path / "short.npy"), "short.npy")
    (tmp_path / "odd.bin").write_bytes(b"\x01\x00\x02")
    error_line(run(tmp_path / "odd.bin"), "odd.bin")
    (tmp_path / "text.txt").write_text("hello")
    error_line(run(tmp_path / "text.txt"), "text.txt", "tokenizer.json")
    assert not out.exists()


def test_refusals_name_the_field_or_the_checkpoint(tmp_path):
    write_checkpoint(tmp_path / "g2", "gpt2", scale_attn_by_inverse_layer_idx=True)
    data, _ = token_file(tmp_path, 4 * (SEQ + 1))
    args = ["--data", str(data), "-o", str(tmp_path / "out"), "--seq-len", str(SEQ)]
    error_line(
        cli("train", str(tmp_path / "g2"), *args),
        "g2/config.json",
        "scale_attn_by_inverse_layer_idx",
    )
    from safetensors.torch import load_file, save_file

    write_checkpoint(tmp_path / "nan", "qwen3")
    path = tmp_path / "nan" / "model.safetensors"
    tensors = load_file(path)
    tensors["model.norm.weight"][0] = float("nan")
    save_file(tensors, path, metadata={"format": "pt"})
    error_line(cli("train", str(tmp_path / "nan"), *args), "norm.weight", "non-finite")
    del tensors["model.layers.1.mlp.up_proj.weight"]
    tensors["model.norm.weight"][0] = 1.0
    save_file(tensors, path, metadata={"format": "pt"})
    error_line(
        cli("compile-train", str(tmp_path / "nan"), "-o", str(tmp_path / "k")),
        "has no tensor 'model.layers.1.mlp.up_proj.weight'",
    )
    write_checkpoint(tmp_path / "other", "llama")
    train(tmp_path / "other", data, tmp_path / "saved",
          TrainOptions(steps=1, seq_len=SEQ, precision="fp32"))  # fmt: skip
    write_checkpoint(tmp_path / "q3", "qwen3")
    error_line(
        cli("train", str(tmp_path / "q3"), *args, "--resume", str(tmp_path / "saved")),
        "--resume",
        "saved with family llama",
    )
    assert not (tmp_path / "out").exists()


def test_train_then_compile_llm_then_generate(tmp_path):
    """The trained checkpoint is one compile-llm reads: its package
    generates transformers' tokens for the trained weights."""
    write_checkpoint(tmp_path / "ckpt", "qwen3")
    data, _ = token_file(tmp_path, 2 * (SEQ + 1), seed=5)
    options = TrainOptions(steps=2, seq_len=SEQ, lr=1e-2, precision="fp32")
    train(tmp_path / "ckpt", data, tmp_path / "tuned", options)
    package = tmp_path / "tuned.mlpackage"
    compiled = cli(
        "compile-llm", str(tmp_path / "tuned"), "-o", str(package),
        "--context", "16", "--prefill", "4",
    )  # fmt: skip
    assert compiled.returncode == 0, compiled.stderr
    generated = cli(
        "generate", str(package), "--prompt-ids", "5,17,200,3", "--max-new-tokens",
        "4", "--reference", str(tmp_path / "tuned"),
    )  # fmt: skip
    assert generated.returncode == 0, generated.stderr
    assert "tokens: " in generated.stdout


def test_train_runs_the_kernels_compile_train_wrote(tmp_path):
    """--kernels DIR: the packages read back drive the same step as the
    kernels compiled in memory (and a directory of other shapes is named)."""
    write_checkpoint(tmp_path / "ckpt", "qwen3")
    data, _ = token_file(tmp_path, 2 * (SEQ + 1), seed=7)
    made = cli(
        "compile-train", str(tmp_path / "ckpt"), "-o", str(tmp_path / "kernels"),
        "--seq-len", str(SEQ), "--precision", "fp32",
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert "kernel calls a step" in made.stdout
    assert "estimate on M4: " in made.stdout and " ms per step (" in made.stdout
    estimated = cli("estimate", str(tmp_path / "kernels"), "--chip", "m2")
    assert estimated.returncode == 0, estimated.stderr
    last = estimated.stdout.splitlines()[-1]
    assert last.startswith("estimate on M2: ") and "kernel calls" in last
    options = TrainOptions(steps=1, seq_len=SEQ, precision="fp32")
    here = train(tmp_path / "ckpt", data, tmp_path / "a", options)
    there = train(
        tmp_path / "ckpt", data, tmp_path / "b", options, kernels=tmp_path / "kernels"
    )
    assert relative([there.records[0].loss], [here.records[0].loss]) < 1e-6
    args = ["--data", str(data), "-o", str(tmp_path / "c"), "--seq-len", "8"]
    error_line(
        cli(
            "train",
            str(tmp_path / "ckpt"),
            *args,
            "--kernels",
            str(tmp_path / "kernels"),
        ),
        "compiled for seq_len 16, this run has 8",
    )


def test_the_step_estimate_counts_every_call(tmp_path):
    """A step's estimate is each kernel's estimate times its calls, plus
    AdamW's 28 bytes per parameter at the chip's bandwidth."""
    from xdsl_ane.ane.chips import get_chip
    from xdsl_ane.api.train import compile_train, step_estimate
    from xdsl_ane.estimator import estimate_functions

    write_checkpoint(tmp_path / "ckpt", "qwen3")
    made = compile_train(tmp_path / "ckpt", seq_len=SEQ)
    chip = get_chip("m1")
    one = step_estimate(made.kernels, made.plan, chip)
    two = step_estimate(made.kernels, made.plan, chip, batch=2)
    by_hand = sum(
        estimate_functions(
            [(c["kernel"], made.kernels[c["kernel"]].function)], chip, "k"
        ).total_ms
        for c in made.plan["calls"]
    )
    assert one.kernels_ms == pytest.approx(by_hand)
    assert two.kernels_ms == pytest.approx(2 * by_hand)
    assert one.optimizer_ms == pytest.approx(
        28 * made.plan["parameters"] / chip.bandwidth * 1e3
    )
    assert (
        made.plan["parameters"]
        == 300 * 64 * 2
        + 2 * (64 * 64 + 2 * 32 * 64 + 64 * 64 + 3 * 128 * 64 + 2 * 64 + 2 * 16)
        + 64
    )


def test_text_data_goes_through_the_checkpoints_tokenizer(tmp_path):
    """A .txt file is tokenized as transformers' tokenizer(text) does, with
    the checkpoint's tokenizer.json (a word-level one here)."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    write_checkpoint(tmp_path / "ckpt", "qwen3")
    words = [f"w{i}" for i in range(200)]
    tokenizer = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, "w0"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.save(str(tmp_path / "ckpt" / "tokenizer.json"))
    rng = np.random.default_rng(0)
    text = " ".join(words[i] for i in rng.integers(0, 200, 2 * (SEQ + 1)))
    (tmp_path / "notes.txt").write_text(text)
    ids = np.array([int(w[1:]) for w in text.split()])
    np.save(tmp_path / "ids.npy", ids)
    options = TrainOptions(steps=2, seq_len=SEQ, precision="fp32")
    from_text = train(
        tmp_path / "ckpt", tmp_path / "notes.txt", tmp_path / "a", options
    )
    from_ids = train(tmp_path / "ckpt", tmp_path / "ids.npy", tmp_path / "b", options)
    assert [r.loss for r in from_text.records] == [r.loss for r in from_ids.records]
    assert (tmp_path / "a" / "tokenizer.json").is_file()

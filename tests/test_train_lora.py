"""`xdsl-ane train --lora` against a hand-written torch LoRA, step by
step: adapters from the `--steps 0` save, trained 3 steps, give torch's
losses and adapters; on fused and Conv1D projections; with the frozen
weights compressed (`--compress`), torch's on the dequantized weights; the
merged checkpoint; resume; one line for targets that match nothing."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from cli_helpers import cli, error_line
from llm_checkpoints import write_checkpoint
from train_helpers import OPTIONS, SEQ, relative, token_file

from xdsl_ane.api.train import TrainOptions, train

pytestmark = pytest.mark.slow

LORA = dict(lora=4, lora_alpha=8.0, lora_targets=("q_proj", "v_proj", "down_proj"))


def torch_lora_reference(model, adapters, ids, steps, options):
    """A hand-written LoRA on transformers' model: every targeted Linear
    gains s·(x·Aᵀ)·Bᵀ from the given adapters, the base frozen, trained as
    `train` trains; returns the losses and the adapters after."""
    from transformers import get_cosine_schedule_with_warmup

    scale = LORA["lora_alpha"] / LORA["lora"]
    for p in model.parameters():
        p.requires_grad_(False)
    trained = {}
    for name, module in model.named_modules():
        key = f"base_model.model.{name}.lora_A.weight"
        if key not in adapters:
            continue
        a = torch.nn.Parameter(torch.tensor(adapters[key]))
        b = torch.nn.Parameter(torch.tensor(adapters[key.replace("lora_A", "lora_B")]))
        trained[key], trained[key.replace("lora_A", "lora_B")] = a, b
        base = module.forward
        module.forward = lambda x, base=base, a=a, b=b: (
            base(x) + scale * (x @ a.T) @ b.T
        )
    optimizer = torch.optim.AdamW(
        list(trained.values()),
        lr=options["lr"],
        betas=options["betas"],
        eps=1e-8,
        weight_decay=options["weight_decay"],
        foreach=False,
    )
    schedule = get_cosine_schedule_with_warmup(optimizer, options["warmup"], steps)
    s, bsz, losses = options["seq_len"], options["batch"], []
    for k in range(steps):
        rows = [
            ids[(k * bsz + j) * (s + 1) : (k * bsz + j + 1) * (s + 1)]
            for j in range(bsz)
        ]
        batch = torch.tensor(np.stack(rows), dtype=torch.long)
        logits = model(input_ids=batch[:, :-1]).logits
        loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1)
        )
        losses.append(float(loss.detach()))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(trained.values()), options["grad_clip"])
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
    return losses, {k: v.detach().numpy() for k, v in trained.items()}


def test_lora_matches_a_hand_written_torch_lora(tmp_path):
    from safetensors.numpy import load_file

    model = write_checkpoint(tmp_path / "ckpt", "qwen3")
    steps = 3
    data, ids = token_file(tmp_path, steps * 2 * (SEQ + 1), seed=11)
    start = TrainOptions(steps=0, seed=3, **LORA, **OPTIONS)
    train(tmp_path / "ckpt", data, tmp_path / "a0", start)
    initial = load_file(str(tmp_path / "a0" / "adapter_model.safetensors"))
    assert len(initial) == 2 * 3 * 2  # A and B of 3 modules in 2 layers
    a = initial["base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight"]
    assert a.shape == (4, 64) and 0 < np.abs(a).max() <= 1 / 8
    assert not np.any(
        initial["base_model.model.model.layers.1.mlp.down_proj.lora_B.weight"]
    )
    config = json.loads((tmp_path / "a0" / "adapter_config.json").read_text())
    assert config["peft_type"] == "LORA" and config["r"] == 4
    assert config["lora_alpha"] == 8.0
    assert config["target_modules"] == ["down_proj", "q_proj", "v_proj"]

    options = TrainOptions(steps=steps, seed=3, **LORA, **OPTIONS)
    result = train(tmp_path / "ckpt", data, tmp_path / "a3", options)
    expected, adapters = torch_lora_reference(model, initial, ids, steps, OPTIONS)
    assert relative([r.loss for r in result.records], expected) < 1e-4
    ours = load_file(str(tmp_path / "a3" / "adapter_model.safetensors"))
    for name, value in adapters.items():
        assert relative(ours[name], value) < 1e-3, name
    assert not (tmp_path / "a3" / "model.safetensors").exists()


@pytest.mark.parametrize(
    "family, targets",
    [
        ("gpt2", ("c_attn", "c_fc")),
        ("phi3", ("qkv_proj", "gate_up_proj")),
        ("apertus", ("q_proj", "up_proj")),
    ],
)
def test_lora_on_fused_and_conv1d_projections(tmp_path, family, targets):
    """Adapters on a fused qkv (gate_up) projection adapt it whole, as PEFT
    does; on GPT-2's Conv1D weights ([in, out]) with fan_in_fan_out; on
    Apertus's up_proj, its xIELU parameters frozen."""
    from safetensors.numpy import load_file

    model = write_checkpoint(tmp_path / "ckpt", family)
    data, ids = token_file(tmp_path, 3 * 2 * (SEQ + 1), seed=12)
    lora = dict(LORA, lora_targets=targets)
    train(tmp_path / "ckpt", data, tmp_path / "a0",
          TrainOptions(steps=0, seed=5, **lora, **OPTIONS))  # fmt: skip
    initial = load_file(str(tmp_path / "a0" / "adapter_model.safetensors"))
    config = json.loads((tmp_path / "a0" / "adapter_config.json").read_text())
    assert config["fan_in_fan_out"] is (family == "gpt2")
    result = train(tmp_path / "ckpt", data, tmp_path / "a3",
                   TrainOptions(steps=3, seed=5, **lora, **OPTIONS))  # fmt: skip
    expected, adapters = torch_lora_reference(model, initial, ids, 3, OPTIONS)
    assert relative([r.loss for r in result.records], expected) < 1e-4
    ours = load_file(str(tmp_path / "a3" / "adapter_model.safetensors"))
    assert len(ours) == 2 * 2 * 2
    for name, value in adapters.items():
        assert relative(ours[name], value) < 1e-3, name


def test_lora_merge_writes_the_merged_checkpoint(tmp_path):
    from safetensors.numpy import load_file

    write_checkpoint(tmp_path / "ckpt", "llama")
    data, _ = token_file(tmp_path, 2 * (SEQ + 1), seed=2)
    options = dict(steps=1, seq_len=SEQ, lr=1e-2, precision="fp32", **LORA)
    train(tmp_path / "ckpt", data, tmp_path / "adapter", TrainOptions(**options))
    train(
        tmp_path / "ckpt",
        data,
        tmp_path / "merged",
        TrainOptions(merge=True, **options),
    )
    base = load_file(str(tmp_path / "ckpt" / "model.safetensors"))
    merged = load_file(str(tmp_path / "merged" / "model.safetensors"))
    adapter = load_file(str(tmp_path / "adapter" / "adapter_model.safetensors"))
    for name in base:
        key = f"base_model.model.{name.removesuffix('.weight')}.lora_A.weight"
        expected = base[name].astype(np.float32)
        if key in adapter:
            b = adapter[key.replace("lora_A", "lora_B")]
            expected = expected + 2.0 * b @ adapter[key]
            assert np.abs(b).max() > 0
        np.testing.assert_allclose(merged[name], expected, rtol=1e-6, atol=1e-7)


def test_lora_targets_that_match_nothing_are_named(tmp_path):
    write_checkpoint(tmp_path / "ckpt", "qwen3")
    data, _ = token_file(tmp_path, 2 * (SEQ + 1))
    args = ["--data", str(data), "-o", str(tmp_path / "out"), "--seq-len", str(SEQ)]
    result = cli("train", str(tmp_path / "ckpt"), *args, "--lora", "4",
                 "--lora-targets", "q_proj,qkv")  # fmt: skip
    error_line(result, "--lora-targets q_proj,qkv: 'qkv' matches no module", "o_proj")
    assert not (tmp_path / "out").exists()


def test_a_resumed_lora_run_prints_the_uninterrupted_losses(tmp_path):
    write_checkpoint(tmp_path / "ckpt", "qwen3")
    data, _ = token_file(tmp_path, 3 * (SEQ + 1), seed=4)
    options = dict(seq_len=SEQ, lr=1e-2, precision="fp32", **LORA)
    whole = train(
        tmp_path / "ckpt", data, tmp_path / "w", TrainOptions(steps=3, **options)
    )
    train(tmp_path / "ckpt", data, tmp_path / "h", TrainOptions(steps=1, **options))
    rest = train(
        tmp_path / "ckpt",
        data,
        tmp_path / "h",
        TrainOptions(steps=3, **options),
        resume=tmp_path / "h",
    )
    assert [r.step for r in rest.records] == [2, 3]
    assert (
        relative([r.loss for r in rest.records], [r.loss for r in whole.records[1:]])
        < 1e-6
    )


def test_compressed_frozen_weights_train_as_torch_on_the_dequantized_weights(
    tmp_path,
):
    """`--compress int8:per-tensor`: the kernels hold the frozen projections
    compressed (constexpr ops; the classifier as it is) and the adapters
    train as a torch LoRA on the int8-dequantized base weights; the same
    run from compile-train's directory (`--kernels`) prints the same
    losses."""
    from safetensors.numpy import load_file

    from xdsl_ane.passes.compression.linear import quantize_linear

    model = write_checkpoint(tmp_path / "ckpt", "llama")
    data, ids = token_file(tmp_path, 3 * 2 * (SEQ + 1), seed=13)
    lora = dict(LORA, compress="int8:per-tensor")
    train(tmp_path / "ckpt", data, tmp_path / "a0",
          TrainOptions(steps=0, seed=2, **LORA, **OPTIONS))  # fmt: skip
    initial = load_file(str(tmp_path / "a0" / "adapter_model.safetensors"))
    result = train(tmp_path / "ckpt", data, tmp_path / "a3",
                   TrainOptions(steps=3, seed=2, **lora, **OPTIONS))  # fmt: skip
    with torch.no_grad():
        for name, p in model.named_parameters():
            if ".layers." in name and p.ndim == 2:
                q = quantize_linear(p.numpy().reshape(1, -1), 8)
                p.copy_(torch.tensor((q.data * q.scale).reshape(p.shape)))
    expected, adapters = torch_lora_reference(model, initial, ids, 3, OPTIONS)
    losses = [r.loss for r in result.records]
    assert relative(losses, expected) < 1e-4, (losses, expected)
    ours = load_file(str(tmp_path / "a3" / "adapter_model.safetensors"))
    for name, value in adapters.items():
        assert relative(ours[name], value) < 1e-3, name

    made = cli(
        "compile-train", str(tmp_path / "ckpt"), "-o", str(tmp_path / "kernels"),
        "--seq-len", str(SEQ), "--precision", "fp32", "--lora", "4",
        "--lora-alpha", "8", "--lora-targets", "q_proj,v_proj,down_proj",
        "--compress", "int8:per-tensor",
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    plan = json.loads((tmp_path / "kernels" / "plan.json").read_text())
    assert plan["lora"]["compress"] == "int8:per-tensor"
    names = {k["name"] for k in plan["kernels"]}
    assert {"ffn_forward_layer1", "lora_gradient_64x128"} <= names
    assert not any(n.startswith("weight_gradient") for n in names)
    again = train(tmp_path / "ckpt", data, tmp_path / "a3k",
                  TrainOptions(steps=3, seed=2, **lora, **OPTIONS),
                  kernels=tmp_path / "kernels")  # fmt: skip
    assert relative([r.loss for r in again.records], losses) < 1e-6


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--compress", "int8"], "--compress int8: needs --lora R"),
        (["--lora", "4", "--compress", "int9"], "--compress int9"),
        (
            ["--lora", "4", "--lora-targets", "embed_tokens"],
            "'model.embed_tokens' is not a projection",
        ),
    ],
)
def test_bad_lora_options_are_one_line(tmp_path, extra, message):
    write_checkpoint(tmp_path / "ckpt", "qwen3")
    data, _ = token_file(tmp_path, 2 * (SEQ + 1))
    args = ["--data", str(data), "-o", str(tmp_path / "out"), "--seq-len", str(SEQ)]
    error_line(cli("train", str(tmp_path / "ckpt"), *args, *extra), message)
    assert not (tmp_path / "out").exists()

"""compile-llm --compress w8a8 and auto:BITS: int8 activations and a mode
per weight on tiny decoder checkpoints, calibrated on prompts run through
prefill and decode with their KV cache; checked against transformers'
fp32 logits, by coremltools' loader and in the program's ops."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from llm_checkpoints import write_checkpoint

from xdsl_ane.api.llm import PackageRunner
from xdsl_ane.api.llm_compile import compile_llm
from xdsl_ane.errors import XdslAneError
from xdsl_ane.frontend.milproto import read_compiled
from xdsl_ane.models.kv_cache import prompt_calls
from xdsl_ane.tools.cli import main

SHAPE = dict(context=32, prefill=4, chunk=128)
TOKENS = [5, 17, 200, 3, 99, 42, 7, 250, 11]
PROMPT = 5
"""TOKENS[:PROMPT] through prefill (two calls, the second padded), the
rest through decode."""


def package_logits(path, tokens=TOKENS, prompt=PROMPT) -> np.ndarray:
    """The package's logits [len(tokens), V] of every token: the prompt's
    through prefill, each later one through decode."""
    runner = PackageRunner(path)
    window, recurrent = runner.record["local_window"], runner.record["recurrent"]
    rows = [
        runner.call(function, tokens[start : start + count], start)
        for function, start, count in prompt_calls(
            prompt, SHAPE["prefill"], window, recurrent
        )
    ]
    rows += [runner.call("decode", [t], p) for p, t in enumerate(tokens) if p >= prompt]
    return np.concatenate(rows)


def relative_error(logits: np.ndarray, model, tokens=TOKENS) -> float:
    """‖logits − transformers' fp32 logits‖ / ‖transformers'‖ over every row."""
    with torch.no_grad():
        reference = model(torch.tensor([tokens])).logits[0].numpy()
    return float(np.linalg.norm(logits - reference) / np.linalg.norm(reference))


def quantize_ops(path) -> dict[str, int]:
    """quantize ops per function of a package, as read back from its files."""
    from xdsl.dialects import func

    counts: dict[str, int] = {}
    module = read_compiled(path).module
    for f in [op for op in module.ops if isinstance(op, func.FuncOp)]:
        ops = [op for op in f.walk() if op.name == "mil.quantize"]
        dequantized = [op for op in f.walk() if op.name == "mil.dequantize"]
        assert len(ops) == len(dequantized)
        counts[f.sym_name.data] = len(ops)
    return counts


@pytest.fixture(scope="module")
def qwen3(tmp_path_factory):
    """A 2-layer qwen3 checkpoint (fp32) and transformers' model of it."""
    directory = tmp_path_factory.mktemp("w8a8") / "ckpt"
    return directory, write_checkpoint(directory, "qwen3")


def test_w8a8_decoder_against_transformers(qwen3, tmp_path):
    """Every projection and the head read int8 activations in prefill and
    decode (a quantize / dequantize pair before each conv of int8 weights,
    q, k and v sharing one), the package reloads through coremltools'
    loader with its states, and its logits on a prompt and three decoded
    tokens are within 5% of transformers' fp32 (relative L2), at most 4x
    the int8-weights package's error."""
    checkpoint, model = qwen3
    errors = {}
    for mode in ("int8", "w8a8"):
        out = tmp_path / f"{mode}.mlpackage"
        package = compile_llm(checkpoint, compress=mode, output=out, **SHAPE)
        errors[mode] = relative_error(package_logits(out), model)
    package.validate().raise_if_failed()
    # per layer: q/k/v, o_proj, gate/up, down_proj; then the 3 head chunks
    assert quantize_ops(out) == {"prefill": 9, "decode": 9}
    summary = package.summary(chip=None)
    assert (
        "w8a8: 18 activations int8 (per-tensor scales from 2 calibration prompts) "
        "into 34 convs, linears and matmuls; kept fp16: 8 matmul, 18 rsqrt, "
        "4 softmax" in summary
    )
    assert errors["w8a8"] < min(0.05, 4 * errors["int8"]), errors


def test_split_tied_w8a8(tmp_path):
    """Split one layer a package, a tied table's embedding and head in one
    package compiled first: every package but the embedding's is
    calibrated on what the parts before give it (the fp32 program a part
    at a time), its summary says what each made int8, and the split
    package's logits are near transformers'."""
    checkpoint = tmp_path / "ckpt"
    model = write_checkpoint(checkpoint, "qwen3", tied=True)
    out = tmp_path / "split"
    package = compile_llm(
        checkpoint, compress="w8a8", layers_per_package=1, output=out, **SHAPE
    )
    record = json.loads((out / "manifest.json").read_text())["llm"]
    paths = sorted({p["path"] for p in record["packages"]})
    counts = {p: quantize_ops(out / p) for p in paths}
    assert counts == {
        "embed_head.mlpackage": {
            "embed_prefill": 0,
            "embed_decode": 0,
            "prefill": 1,
            "decode": 1,
        },
        "layers_0-0.mlpackage": {"prefill": 4, "decode": 4},
        "layers_1-1.mlpackage": {"prefill": 4, "decode": 4},
    }
    summary = package.summary(chip=None)
    assert summary.count("w8a8: ") == 3, summary
    assert relative_error(package_logits(out), model) < 0.05


def test_calibration_prompts_from_a_file(qwen3, tmp_path, capsys):
    """--calibration takes token ids (.npz: an array per prompt, or rows)
    or text (.txt through the checkpoint's tokenizer.json, a prompt per
    line): the same prompts give the same package, others other scales;
    the fp16 check counts them. Float ids, ids past the vocabulary, a
    prompt that leaves decode no room in the context and text without a
    tokenizer are one line each."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    checkpoint, _ = qwen3
    words = [f"w{i}" for i in range(300)]
    tokenizer = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, "w0"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.save(str(checkpoint / "tokenizer.json"))
    prompts = [[7, 9, 250, 31, 2, 8], [100, 4, 200, 5]]
    (tmp_path / "p.txt").write_text(
        "\n".join(" ".join(f"w{t}" for t in p) for p in prompts) + "\n\n"
    )
    np.savez(tmp_path / "p.npz", a=np.array(prompts[0]), b=np.array(prompts[1]))
    np.savez(tmp_path / "q.npz", rows=np.array([[1, 2, 3, 4], [5, 6, 7, 8]]))
    command = [
        "compile-llm",
        str(checkpoint),
        *sum(([f"--{k}", str(v)] for k, v in SHAPE.items()), []),
        "--compress",
        "w8a8",
    ]
    texts = {}
    try:
        for name in ("p.txt", "p.npz", "q.npz"):
            out = tmp_path / f"{name}.mlpackage"
            args = [*command, "-o", str(out), "--calibration", str(tmp_path / name)]
            assert main(args) == 0
            printed = capsys.readouterr().out
            assert "over 2 calibration prompts" in printed
            assert "scales from 2 calibration prompts" in printed
            texts[name] = str(read_compiled(out).module)
    finally:
        (checkpoint / "tokenizer.json").unlink()
    assert texts["p.txt"] == texts["p.npz"] != texts["q.npz"]
    np.savez(tmp_path / "f.npz", x=np.array([0.5, 1.0]))
    np.savez(tmp_path / "big.npz", x=np.array([[1, 2, 300]]))
    np.savez(tmp_path / "full.npz", x=np.arange(32))  # no room left for decode
    for name, message in [
        ("f.npz", "calibration='.*f.npz': array 'x' is float64 \\[2\\]"),
        ("big.npz", "calibration prompt of 3 ids: each must lie in \\[0, 300\\)"),
        ("full.npz", "calibration: no prompt runs through decode \\(with prefill=4"),
        (
            "p.txt",
            "p.txt: a .txt calibration file needs the checkpoint's tokenizer.json",
        ),
    ]:
        with pytest.raises(XdslAneError, match=message):
            compile_llm(
                checkpoint, compress="w8a8", calibration=tmp_path / name, **SHAPE
            )


def test_auto_bits_on_a_decoder(tmp_path):
    """auto:4.5 on a one-layer decoder (vocabulary 256, so that lut's
    groups of 16 divide the head; hidden 32, so that its MLP and the
    head's two chunks are the weights large enough to compress): at most
    4.5 bits per weight on average, no more bytes than lut5 would take
    (lut6's · 5/6: MIL has no lut5), and logits no further from
    transformers' fp32 than uniform lut4's; the summary lists each
    weight's mode and each uniform mode's error."""
    checkpoint = tmp_path / "ckpt"
    model = write_checkpoint(
        checkpoint,
        "qwen3",
        layers=1,
        vocab_size=256,
        hidden_size=32,
        num_attention_heads=2,
        num_key_value_heads=1,
    )
    errors, stored = {}, {}
    for mode in ("auto:4.5", "lut4", "lut6"):
        out = tmp_path / f"{mode}.mlpackage"
        package = compile_llm(checkpoint, compress=mode, output=out, **SHAPE)
        errors[mode] = relative_error(package_logits(out), model)
        compression = package.compiled.compression
        stored[mode] = sum(w.bytes_after for w in compression.weights)
        if mode.startswith("auto"):
            auto = compression.auto
            assert auto.average_bits <= 4.5
            assert len(auto.chosen) == 5 and len(set(auto.chosen.values())) > 1
            summary = package.summary(chip=None)
            assert "auto:4.5: " in summary and "(uniform: lut2 " in summary
            assert "model.layers.0.mlp.down_proj.weight" in summary
    assert errors["auto:4.5"] <= errors["lut4"], errors
    assert stored["auto:4.5"] <= stored["lut6"] * 5 / 6, stored


@pytest.mark.parametrize(
    "extra, message",
    [
        (
            ["--compress", "w8a8", "--experts", "routed"],
            "--experts routed: routed experts are not split into packages or "
            "compressed",
        ),
        (
            ["--compress", "auto:4.5", "--experts", "routed"],
            "--experts routed: routed experts",
        ),
        (["--compress", "auto:1"], "--compress auto:1: expected auto:BITS"),
        (
            ["--compress", "auto:4", "--compress-embedding", "lut4"],
            "--compress-embedding lut4: with --compress auto:4 each weight's mode "
            "is measured; expected none",
        ),
        (
            ["--compress", "auto:4", "--compress-head", "int8"],
            "--compress-head int8: with --compress auto:4",
        ),
        (
            ["--no-fp16-check", "--calibration", "p.npz"],
            "--calibration: nothing reads the prompts without the fp16 check",
        ),
        (["--compress", "w8a8", "--calibration", "p.json"], "expected prompts as"),
    ],
)
def test_mis_combinations_are_one_line(qwen3, tmp_path, capsys, extra, message):
    checkpoint, _ = qwen3
    out = tmp_path / "x.mlpackage"
    extra = [str(tmp_path / e) if e.startswith("p.") else e for e in extra]
    np.savez(tmp_path / "p.npz", a=np.array([1, 2, 3]))
    (tmp_path / "p.json").write_text("[1, 2]")
    args = ["compile-llm", str(checkpoint), "-o", str(out), "--context", "32"]
    args += ["--prefill", "4"]
    assert main([*args, *extra]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    assert not out.exists() and not (tmp_path / "x.manifest.json").exists()


@pytest.mark.slow
@pytest.mark.parametrize(
    "family, layers",
    [
        ("gemma3_text", 2),  # a sliding layer's ring cache
        ("lfm2", 4),  # short convolutions' state
        ("mamba2", 2),  # state-space state
        ("qwen3_5", 4),  # gated delta-nets' state
        ("gemma4_text", 4),  # per-layer inputs, shared keys and values, experts
    ],
)
def test_w8a8_across_states(tmp_path, family, layers):
    """The states beside the KV cache calibrate as the cache does: each
    layers package of the split model (one layer a package, calibrated on
    the fp32 program's values at its inputs) reads int8 activations, and
    the whole package's and the split one's logits are within 4x the int8
    package's error of transformers' fp32, plus 0.02 (a mixture of
    experts may route a token otherwise)."""
    checkpoint = tmp_path / "ckpt"
    model = write_checkpoint(checkpoint, family, layers=layers)
    logits = {}
    for name, extra in [
        ("int8.mlpackage", {"compress": "int8"}),
        ("w8a8.mlpackage", {"compress": "w8a8"}),
        ("split", {"compress": "w8a8", "layers_per_package": 1}),
    ]:
        compile_llm(checkpoint, output=tmp_path / name, **SHAPE, **extra)
        logits[name] = package_logits(tmp_path / name)
    record = json.loads((tmp_path / "split" / "manifest.json").read_text())["llm"]
    for part in record["packages"]:
        if part["layers"]:
            counts = quantize_ops(tmp_path / "split" / part["path"])
            assert min(counts.values()) > 0, (part["path"], counts)
    int8 = relative_error(logits["int8.mlpackage"], model)
    for name in ("w8a8.mlpackage", "split"):
        error = relative_error(logits[name], model)
        assert error <= 4 * int8 + 0.02, (name, error, int8)

"""`--compress w8a8`: int8 weights and int8 activations into the
convolutions, linears and matmuls that read them, with scales from
calibration samples; checked against torch fp32 through the interpreter,
by coremltools' loader, and in the estimate's int8 compute."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import xdsl_ane
from xdsl_ane.api.run import run
from xdsl_ane.errors import XdslAneError
from xdsl_ane.estimator import estimate
from xdsl_ane.tools.cli import main


class SmallCnn(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Conv2d(16, 32, 3, padding=1)
        self.b = torch.nn.Conv2d(32, 64, 3, padding=1, stride=2)
        self.c = torch.nn.Linear(64, 48)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.a(x))
        x = torch.relu(self.b(x))
        return self.c(x.mean((2, 3)))


@pytest.fixture(scope="module")
def cnn():
    torch.manual_seed(0)
    model = SmallCnn().eval()
    x = torch.randn(1, 16, 16, 16)
    return model, x


def relative_error(model, path, x) -> float:
    (out,) = run(path, arrays={"arg0": x.numpy()})[1]
    with torch.no_grad():
        ref = model(x).numpy()
    return float(np.linalg.norm(out - ref) / np.linalg.norm(ref))


def test_w8a8_cnn_against_torch(cnn, tmp_path) -> None:
    """Both convs and the linear (each of at least 2048 weights) read int8
    activations: quantize / dequantize before it, int8 in the estimate
    (faster than fp16 on M4), the package reloads through coremltools'
    loader, and its error against torch fp32 stays near the int8 weights'
    alone (the activations' rounding adds to it, not more than 2x)."""
    model, x = cnn
    errors = {}
    for mode in ("int8", "w8a8"):
        compiled = xdsl_ane.compile(model, example_args=(x,), compress=mode)
        compiled.save(tmp_path / f"{mode}.mlpackage")
        errors[mode] = relative_error(model, tmp_path / f"{mode}.mlpackage", x)
        if mode == "w8a8":
            compiled.validate().raise_if_failed()
            counts = compiled.op_counts()["main"]
            assert counts["quantize"] == counts["dequantize"] == 3
            assert "w8a8: 3 activations int8" in compiled.summary()
            ops = estimate(compiled, "m4").ops
            assert [o.precision for o in ops if o.op == "conv"] == ["int8"] * 3
            fp16 = estimate(xdsl_ane.compile(model, example_args=(x,)), "m4")
            int8 = [o for o in ops if o.precision == "int8"]
            assert sum(o.bytes for o in int8) < sum(
                o.bytes for o in fp16.ops if o.op == "conv"
            )
    assert errors["int8"] < errors["w8a8"] < max(2 * errors["int8"], 0.02)


def test_calibration_sets_the_scales(cnn, tmp_path) -> None:
    """Samples of a larger range give larger scales and another result;
    arrays of the wrong count or shape are one line naming the option."""
    model, x = cnn
    samples = np.stack([x.numpy()[0] * s for s in (1.0, 1.0)])
    wide = np.stack([x.numpy()[0] * s for s in (1.0, 20.0)])
    outputs = []
    for name, arrays in [("a", samples), ("b", wide)]:
        np.savez(tmp_path / f"{name}.npz", x=arrays[:, None])
        compiled = xdsl_ane.compile(
            model,
            example_args=(x,),
            compress="w8a8",
            calibration=tmp_path / f"{name}.npz",
        )
        compiled.save(tmp_path / f"{name}.mlpackage")
        outputs.append(
            run(tmp_path / f"{name}.mlpackage", arrays={"arg0": x.numpy()})[1][0]
        )
    assert not np.allclose(outputs[0], outputs[1])
    with pytest.raises(
        XdslAneError,
        match=r"calibration: sample 0 of x is \[16, 16, 16\], the program takes \[1, 16",
    ):
        xdsl_ane.compile(
            model, example_args=(x,), compress="w8a8", calibration={"x": x.numpy()}
        )
    with pytest.raises(XdslAneError, match=r"calibration: applies only with"):
        xdsl_ane.compile(model, example_args=(x,), calibration={"x": samples})


def test_largest_magnitude_of_f16_by_its_bits() -> None:
    """Calibration's max |x| of f16 values, read from their bits, equals
    numpy's in float32: every finite f16 value (subnormals, ±0, the
    extremes), infinities; a NaN gives NaN as numpy's does."""
    from xdsl_ane.passes.quantize_activations import largest_magnitude

    every = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    finite = every[np.isfinite(every)]
    rng = np.random.default_rng(0)
    for x in [finite, np.array([-np.inf, 2.0], np.float16)] + [
        rng.choice(finite, (3, 5)) for _ in range(20)
    ]:
        assert largest_magnitude(x) == float(np.max(np.abs(x.astype(np.float32))))
    assert np.isnan(largest_magnitude(np.array([np.nan, 1.0], np.float16)))


def test_w8a8_from_the_command_line(cnn, tmp_path, capsys) -> None:
    model, x = cnn
    program = torch.export.export(model, (x,))
    torch.export.save(program, tmp_path / "cnn.pt2")
    np.savez(tmp_path / "cal.npz", x=np.stack([x.numpy()] * 2))
    out = tmp_path / "cnn.mlpackage"
    command = ["compile", str(tmp_path / "cnn.pt2"), "-o", str(out)]
    assert (
        main(
            [*command, "--compress", "w8a8", "--calibration", str(tmp_path / "cal.npz")]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert (
        "w8a8: 3 activations int8 (per-tensor scales from 2 calibration samples)"
        in printed
    )
    assert main([*command, "--force", "--calibration", str(tmp_path / "cal.npz")]) == 1
    assert "--calibration" in capsys.readouterr().err


def test_an_activation_zero_in_calibration_keeps_a_scale(cnn) -> None:
    """Samples of zeros leave the first conv's input 0: its scale is
    fp16's least positive value, not a 0 that MIL's quantize refuses."""
    model, x = cnn
    zeros = {"x": np.zeros((2, *x.shape), np.float32)}
    compiled = xdsl_ane.compile(
        model, example_args=(x,), compress="w8a8", calibration=zeros
    )
    compiled.validate().raise_if_failed()


def coremltools_w8a8(model, x, samples, tmp_path) -> np.ndarray:
    """coremltools' own W8A8 of `model` (jit-traced, ct.convert fp16,
    `linear_quantize_activations` on `samples` with its calibration's
    predictions made by the interpreter, `linear_quantize_weights` int8):
    its outputs on x, by the interpreter."""
    import coremltools as ct

    from bench.w8a8 import coremltools_w8a8 as quantize
    from bench.w8a8 import run_coremltools

    dtype = np.float32 if x.is_floating_point() else np.int32
    fp = ct.convert(
        torch.jit.trace(model, (x,)),
        inputs=[ct.TensorType(name="x", shape=x.shape, dtype=dtype)],
        minimum_deployment_target=ct.target.iOS18,
        convert_to="mlprogram",
    )
    fp.save(str(tmp_path / "ct_fp.mlpackage"))
    feeds = [{"x": s} for s in samples]
    quantize(fp, tmp_path / "ct_fp.mlpackage", feeds, tmp_path / "ct.mlpackage")
    (out,) = run_coremltools(tmp_path / "ct.mlpackage", [x.numpy()])
    return out


class Vit(torch.nn.Module):
    """A tiny ViT encoder (transformers' ViTModel), its hidden states."""

    def __init__(self) -> None:
        import transformers

        super().__init__()
        config = transformers.ViTConfig(
            image_size=32,
            patch_size=8,
            hidden_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=128,
        )
        self.vit = transformers.ViTModel(config, add_pooling_layer=False).eval()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.vit(pixel_values=x).last_hidden_state


class Bert(torch.nn.Module):
    """A tiny BERT encoder (transformers' BertModel) from token ids, its
    hidden states: coremltools casts the ids to int16 for the embedding's
    gather."""

    VOCAB = 128

    def __init__(self) -> None:
        import transformers

        super().__init__()
        config = transformers.BertConfig(
            vocab_size=self.VOCAB,
            hidden_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=128,
            max_position_embeddings=32,
        )
        self.bert = transformers.BertModel(config, add_pooling_layer=False).eval()

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.bert(input_ids=ids).last_hidden_state


def comparison_case(name, cnn) -> tuple[torch.nn.Module, torch.Tensor, np.ndarray]:
    """The model, its input and 8 calibration samples of it."""
    rng = np.random.default_rng(1)
    torch.manual_seed(0)
    if name == "bert":
        x = torch.randint(0, Bert.VOCAB, (1, 16))
        samples = rng.integers(0, Bert.VOCAB, (8, *x.shape)).astype(np.int32)
        return Bert().eval(), x, samples
    model, x = cnn if name == "cnn" else (Vit().eval(), torch.randn(1, 3, 32, 32))
    return model, x, rng.standard_normal((8, *x.shape)).astype(np.float32)


@pytest.mark.parametrize("name", ["cnn", "vit", "bert"])
def test_w8a8_error_beside_coremltools(name, cnn, tmp_path) -> None:
    """On the same program and calibration samples, our W8A8's error
    against torch fp32 is at most 1.25x that of coremltools' own: the
    small CNN, a ViT and a BERT (their attention's matmuls, softmax and
    norms kept fp16; BERT's ids through coremltools' int16 casts)."""
    model, x, samples = comparison_case(name, cnn)
    theirs = coremltools_w8a8(model, x, list(samples), tmp_path)
    compiled = xdsl_ane.compile(
        model, example_args=(x,), compress="w8a8", calibration={"x": samples}
    )
    compiled.save(tmp_path / "ours.mlpackage")
    (ours,) = run(tmp_path / "ours.mlpackage", arrays={"arg0": x.numpy()})[1]
    with torch.no_grad():
        ref = model(x).numpy()

    def error(y):
        return float(np.linalg.norm(y - ref) / np.linalg.norm(ref))

    assert error(ours) <= 1.25 * error(theirs), (error(ours), error(theirs))


def test_compile_model_takes_w8a8(tmp_path, capsys) -> None:
    """compile-model's forward decoder layer: its projections read int8
    activations (attention's matmuls, softmax and norms kept fp16)."""
    out = tmp_path / "layer.mlpackage"
    command = ["compile-model", "qwen3-0.6b", "--layers", "1", "--seq-len", "16"]
    assert main([*command, "-o", str(out), "--compress", "w8a8"]) == 0
    printed = capsys.readouterr().out
    assert "w8a8: 4 activations int8" in printed
    assert "into 7 convs, linears and matmuls; kept fp16: " in printed

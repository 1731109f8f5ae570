"""`--compress auto:BITS`: each weight's mode chosen by its measured effect
on the outputs to meet an average of BITS bits per weight."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import xdsl_ane
from xdsl_ane.api.run import run
from xdsl_ane.errors import XdslAneError


class Stack(torch.nn.Module):
    """A tiny Llama decoder stack (transformers' LlamaModel, 2 layers)."""

    def __init__(self) -> None:
        import transformers

        super().__init__()
        config = transformers.LlamaConfig(
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            vocab_size=64,
        )
        self.model = transformers.LlamaModel(config).eval()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.model(inputs_embeds=x).last_hidden_state


@pytest.fixture(scope="module")
def stack():
    torch.manual_seed(0)
    return Stack().eval(), torch.randn(1, 8, 64)


def test_auto_beats_lut4_within_five_bits(stack, tmp_path) -> None:
    """auto:4.5 on the decoder stack: an average of at most 4.5 stored bits
    per weight, no more bytes than 5 bits per weight would take (MIL has
    no lut5: lut6's bytes · 5/6), and an output error against torch fp32
    no larger than uniform lut4's; the summary lists each weight's mode
    and the uniform modes' errors."""
    model, x = stack
    calibration = {"x": np.random.default_rng(1).standard_normal((2, 1, 8, 64))}
    errors, stored = {}, {}
    for mode in ("auto:4.5", "lut4", "lut6"):
        extra = {"calibration": calibration} if mode.startswith("auto") else {}
        compiled = xdsl_ane.compile(model, example_args=(x,), compress=mode, **extra)
        compiled.save(tmp_path / f"{mode}.mlpackage")
        (out,) = run(tmp_path / f"{mode}.mlpackage", arrays={"arg0": x.numpy()})[1]
        with torch.no_grad():
            ref = model(x).numpy()
        errors[mode] = float(np.linalg.norm(out - ref) / np.linalg.norm(ref))
        stored[mode] = sum(w.bytes_after for w in compiled.compression.weights)
        if mode.startswith("auto"):
            auto = compiled.compression.auto
            assert auto.average_bits <= 4.5
            assert len(auto.chosen) == 14 and len(set(auto.chosen.values())) > 1
            summary = compiled.summary()
            assert "auto:4.5: " in summary and "uniform: lut2" in summary
    assert errors["auto:4.5"] <= errors["lut4"], errors
    assert stored["auto:4.5"] <= stored["lut6"] * 5 / 6, stored


def test_bad_budget_is_one_line(stack) -> None:
    model, x = stack
    for text in ("auto:1", "auto:x", "auto:17"):
        with pytest.raises(XdslAneError, match=rf"compress='{text}': expected auto"):
            xdsl_ane.compile(model, example_args=(x,), compress=text)

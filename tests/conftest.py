"""Fixtures shared by the test files (session-scoped ones are built once
per pytest worker, and read only). Helpers that tests import are
modules beside this one, each named for what it checks: cli_helpers
(the `xdsl-ane` command in this process), torch_check, proto_check,
mil_op_check, mil_type_check, canonicalize_check, lowering_cases,
ane_form, llm_checkpoints, robustness_inputs, tiny_decoder."""

from __future__ import annotations

from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest
from tiny_decoder import TINY_DECODER

from xdsl_ane.models.transformer import build_decoder_layer, make_weights
from xdsl_ane.tools.cli import main


class LayerFiles(NamedTuple):
    source: Path
    """layer.mlir"""
    weights_path: Path
    """layer.npz"""
    weights: dict[str, np.ndarray]


@pytest.fixture(scope="session")
def decoder_layer_files(tmp_path_factory) -> LayerFiles:
    """A TINY_DECODER layer and its weights (seed 0) as the command line
    takes them."""
    directory = tmp_path_factory.mktemp("layer")
    module = build_decoder_layer(TINY_DECODER)
    weights = make_weights(module, TINY_DECODER, 0)
    source = directory / "layer.mlir"
    source.write_text(str(module))
    np.savez(directory / "layer.npz", **weights)
    return LayerFiles(source, directory / "layer.npz", weights)


@pytest.fixture
def rng() -> np.random.Generator:
    """A generator of the same numbers for every test that asks for one."""
    return np.random.default_rng(1234)


class TinyLlm(NamedTuple):
    checkpoint: Path
    """A two-layer qwen3 checkpoint of llm_checkpoints' SMALL size, fp32."""
    whole: Path
    """Its compile-llm package (context 32, prefill 4), summary on M1."""
    split: Path
    """The same, one layer a package, summary on the default chip (M4)."""
    summaries: str
    """What the two compile-llm commands printed."""


@pytest.fixture(scope="session")
def tiny_llm(tmp_path_factory) -> TinyLlm:
    """A tiny compile-llm model, whole and split."""
    from llm_checkpoints import write_checkpoint

    root = tmp_path_factory.mktemp("tiny_llm")
    checkpoint = root / "ckpt"
    write_checkpoint(checkpoint, "qwen3", False, "float32")
    common = ["--context", "32", "--prefill", "4", "--chunk", "128"]
    whole, split = root / "q.mlpackage", root / "split"
    printed = StringIO()
    with redirect_stdout(printed):
        args = ["compile-llm", str(checkpoint), "-o", str(whole), *common]
        assert main([*args, "--chip", "m1"]) == 0
        args = ["compile-llm", str(checkpoint), "-o", str(split), *common]
        assert main([*args, "--layers-per-package", "1"]) == 0
    return TinyLlm(checkpoint, whole, split, printed.getvalue())

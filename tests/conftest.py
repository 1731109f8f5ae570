"""Fixtures shared by the test files. Helpers that tests import are
modules beside this one, each named for what it checks: cli_helpers
(the `xdsl-ane` command in this process), torch_check, proto_check,
mil_op_check, mil_type_check, canonicalize_check, lowering_cases,
ane_form, llm_checkpoints, robustness_inputs, tiny_decoder."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest
from tiny_decoder import TINY_DECODER

from xdsl_ane.models.transformer import build_decoder_layer, make_weights


class LayerFiles(NamedTuple):
    source: Path
    """layer.mlir"""
    weights_path: Path
    """layer.npz"""
    weights: dict[str, np.ndarray]


@pytest.fixture(scope="session")
def decoder_layer_files(tmp_path_factory) -> LayerFiles:
    """A TINY_DECODER layer and its weights (seed 0) as the command line
    takes them; built once per worker, and read only."""
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

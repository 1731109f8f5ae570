"""compile-llm at scale, on tiny checkpoints: a tied embedding and LM head
stored once in the weight blob; the size guard that splits a model whose
weights pass --max-package-size into chained packages (generating what
the unsplit package generates); the checkpoint read tensor by tensor."""

from __future__ import annotations

import json

import numpy as np
import pytest
from llm_checkpoints import write_checkpoint

from xdsl_ane.frontend.checkpoint import read_checkpoint
from xdsl_ane.tools.cli import main
from xdsl_ane.tools.llm import PackageRunner, compile_llm

pytest.importorskip("transformers")

PROMPT = [5, 17, 200, 3, 99]
SHAPE = dict(context=32, prefill=4, chunk=128)


@pytest.fixture(scope="module")
def tied(tmp_path_factory):
    """A tied two-layer Qwen3 in bf16."""
    directory = tmp_path_factory.mktemp("tied") / "ckpt"
    write_checkpoint(directory, "qwen3", True, "bfloat16")
    return directory


def fp16_bytes(checkpoint, package) -> int:
    """The model's fp16 weights: each checkpoint tensor once, and the RoPE
    tables (which are not in the checkpoint)."""
    tensors = read_checkpoint(checkpoint).tensors
    rope = [w for name, w in package.weights.items() if name.startswith("rope")]
    return 2 * (
        sum(int(np.prod(t.shape)) for t in tensors.values())
        + sum(w.size for w in rope)
    )


def test_tied_table_is_stored_once(tied, tmp_path):
    """The embedding's gather tables and the head's 1x1-conv weights are
    the same rows in different shapes: one blob record each, read by both
    functions' gather and conv; the blob file is within 2% of the fp16
    weights (records and alignment)."""
    package = compile_llm(tied, **SHAPE)
    package.save(tmp_path / "t.mlpackage")
    (blob,) = (tmp_path / "t.mlpackage").rglob("weight.bin")
    weights = fp16_bytes(tied, package)
    assert weights <= blob.stat().st_size <= 1.02 * weights
    references = [
        line
        for line in package.compiled.mil_text.splitlines()
        if " model_embed_tokens_weight_0_100_" in line and "BLOBFILE" in line
    ]
    assert len(references) == 4  # gather and conv in prefill and decode
    offsets = {line.split("offset = uint64(")[1].split(")")[0] for line in references}
    assert len(offsets) == 1

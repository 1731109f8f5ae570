"""The routing weights of a mixture of experts (`models/moe.py`) by
numbers: the rlx interpreter against torch's top k (softmax then top k,
renormalized or not; the top k of the logits), ties picked by the lowest
index, and the lowered fp16 program placed on the ANE op by op (no
integer index, no topk)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from lowering_cases import build_case, f32, lower, normal
from xdsl.context import Context

from xdsl_ane.ane.chips import get_chip
from xdsl_ane.interpreter.core import run_function
from xdsl_ane.models.configs import MoeConfig
from xdsl_ane.models.moe import routing_weights
from xdsl_ane.passes.fp16 import MilFp16Pass
from xdsl_ane.passes.placement import is_const, placement_rule

EXPERTS = 8


def moe(top_k: int, renormalize: bool, topk_of_logits: bool) -> MoeConfig:
    return MoeConfig(EXPERTS, top_k, 16, renormalize, topk_of_logits, frozenset())


def program(config: MoeConfig, tokens: int):
    return build_case(
        [normal(1, tokens, EXPERTS)],
        lambda dt, logits: [routing_weights(logits, config)],
        f32,
    )


def torch_weights(logits: np.ndarray, config: MoeConfig) -> np.ndarray:
    """As transformers' routers: Qwen3-MoE / OLMoE / Mixtral (softmax, top
    k, renormalized where set) and Granite-MoE (top k of the logits,
    softmax over them), scattered into [1, S, E]."""
    x = torch.from_numpy(logits)
    probabilities = torch.softmax(x, -1)
    if config.topk_of_logits:
        top, index = x.topk(config.top_k, dim=-1)
        top = torch.softmax(top, -1)
    else:
        top, index = probabilities.topk(config.top_k, dim=-1)
        if config.renormalize:
            top = top / top.sum(-1, keepdim=True)
    return torch.zeros_like(x).scatter(-1, index, top).numpy()


@pytest.mark.parametrize("top_k", [1, 2, 3, EXPERTS])
@pytest.mark.parametrize(
    "renormalize,topk_of_logits", [(False, False), (True, False), (True, True)]
)
def test_routing_weights_match_torch(top_k, renormalize, topk_of_logits):
    config = moe(top_k, renormalize, topk_of_logits)
    logits = np.random.default_rng(top_k).standard_normal((1, 16, EXPERTS))
    logits = logits.astype(np.float32)
    (got,) = run_function(program(config, 16), [logits])
    expected = torch_weights(logits, config)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)
    assert ((got > 0).sum(-1) == top_k).all()


def test_ties_pick_the_lowest_index():
    """Equal scores: the lowest expert index first, as numpy's stable
    sort orders them (and torch.topk on these)."""
    logits = np.array(
        [[[1, 3, 3, 0, 3, 1, 1, 2], [2, 2, 2, 2, 2, 2, 2, 2]]], np.float32
    )
    config = moe(2, False, False)
    (got,) = run_function(program(config, 2), [logits])
    picked = [sorted(np.flatnonzero(row).tolist()) for row in got[0]]
    assert picked == [[1, 2], [0, 1]]
    stable = np.argsort(-logits[0], axis=-1, kind="stable")[:, :2]
    assert picked == [sorted(row.tolist()) for row in stable]


def test_lowered_fp16_routing_runs_on_the_ane():
    """Every op of the lowered routing in fp16 is placed on the ANE: the
    picks are float comparisons, not an integer index (argmax's) that the
    ANE does not hold, nor topk."""
    module = lower(program(moe(2, True, False), 4))
    MilFp16Pass().apply(Context(), module)
    module.verify()
    chip = get_chip("m4")
    placed = {
        op.name: placement_rule(op, chip).unit
        for op in module.walk()
        if op.name.startswith("mil.") and not is_const(op.name)
    }
    assert "mil.reduce_min" in placed and "mil.select" in placed
    assert set(placed.values()) == {"ane"}, placed

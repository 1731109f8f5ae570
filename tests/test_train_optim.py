"""The training step's CPU pieces against the torch and transformers objects
they stand for: AdamW (decay on rank ≥ 2 only, as transformers' Trainer
groups parameters), clip_grad_norm_, the warmup schedules and GradScaler's
loss-scale rule; and their state, saved and resumed."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from safetensors.numpy import load as load_safetensors
from safetensors.numpy import save as save_safetensors

from xdsl_ane.errors import XdslAneError
from xdsl_ane.models.optim import (
    SCHEDULES,
    AdamW,
    DynamicLossScale,
    clip_grad_norm,
    lr_at,
)

SHAPES = {
    "embed_tokens.weight": (50, 16),
    "layers.0.q_proj.weight": (24, 16),
    "layers.0.q_proj.bias": (24,),
    "norm.weight": (16,),
}
HYPER = {"betas": (0.85, 0.99), "eps": 1e-7, "weight_decay": 0.1}

# Parameters agree with torch to within an ulp of the update: torch's
# vectorized sqrt is not always correctly rounded, numpy's is. Near zero
# that ulp is not 1e-6 of the value, hence the tiny absolute tolerance.
RTOL, ATOL = 1e-6, 1e-9


def random_tensors(
    rng: np.random.Generator, scale: float = 1.0
) -> dict[str, np.ndarray]:
    return {
        name: (scale * rng.standard_normal(shape)).astype(np.float32)
        for name, shape in SHAPES.items()
    }


def torch_adamw(params: dict[str, np.ndarray], lr: float):
    """torch.optim.AdamW with Trainer's two parameter groups."""
    tensors = {name: torch.nn.Parameter(torch.tensor(p)) for name, p in params.items()}
    groups = [
        {"params": [t for t in tensors.values() if t.ndim >= 2]},
        {"params": [t for t in tensors.values() if t.ndim < 2], "weight_decay": 0.0},
    ]
    optimizer = torch.optim.AdamW(groups, lr=lr, foreach=False, **HYPER)
    return tensors, optimizer


def test_adamw_matches_torch_with_scheduled_lr():
    rng = np.random.default_rng(0)
    params = random_tensors(rng)
    tensors, reference = torch_adamw(params, lr=1e-2)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        reference, lambda k: lr_at(k, 1.0, warmup=2, total=7, schedule="cosine")
    )
    optimizer = AdamW(lr=1e-2, **HYPER)
    for step in range(7):
        grads = random_tensors(rng, scale=0.1)
        for name, t in tensors.items():
            t.grad = torch.tensor(grads[name])
        reference.step()
        scheduler.step()
        optimizer.step(params, grads, lr=lr_at(step, 1e-2, 2, 7, "cosine"))
    assert optimizer.step_count == 7
    for name, t in tensors.items():
        np.testing.assert_allclose(
            params[name], t.detach().numpy(), rtol=RTOL, atol=ATOL
        )
        state = reference.state[t]
        np.testing.assert_allclose(
            optimizer.m[name], state["exp_avg"].numpy(), rtol=RTOL
        )
        np.testing.assert_allclose(
            optimizer.v[name], state["exp_avg_sq"].numpy(), rtol=RTOL
        )


def test_adamw_decays_only_rank_two_tensors():
    params = {"w": np.ones((2, 2), np.float32), "b": np.ones(2, np.float32)}
    zero = {name: np.zeros_like(p) for name, p in params.items()}
    AdamW(lr=0.5, weight_decay=0.1).step(params, zero)
    assert np.all(params["w"] == np.float32(0.95))
    assert np.all(params["b"] == 1.0)


def test_adamw_resume_equals_uninterrupted_run():
    rng = np.random.default_rng(1)
    start = random_tensors(rng)
    all_grads = [random_tensors(rng, scale=0.1) for _ in range(5)]

    params = {name: p.copy() for name, p in start.items()}
    uninterrupted = AdamW(lr=1e-2, **HYPER)
    for grads in all_grads:
        uninterrupted.step(params, grads)

    resumed_params = {name: p.copy() for name, p in start.items()}
    first = AdamW(lr=1e-2, **HYPER)
    for grads in all_grads[:2]:
        first.step(resumed_params, grads)
    saved = load_safetensors(save_safetensors(first.state_arrays()))
    assert set(saved) == {"step"} | {f"{k}.{n}" for k in "mv" for n in SHAPES}
    second = AdamW(lr=1e-2, **HYPER)
    second.load_state_arrays(saved, resumed_params)
    for grads in all_grads[2:]:
        second.step(resumed_params, grads)
    assert second.step_count == 5
    for name in SHAPES:
        np.testing.assert_array_equal(resumed_params[name], params[name])
        np.testing.assert_array_equal(second.m[name], uninterrupted.m[name])


def stepped_state() -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    params = random_tensors(np.random.default_rng(2))
    optimizer = AdamW()
    optimizer.step(params, random_tensors(np.random.default_rng(3)))
    return params, dict(optimizer.state_arrays())


@pytest.mark.parametrize(
    "edit, message",
    [
        (
            lambda s: s.update(
                {f"{k}.norm.weight": np.zeros(8, np.float32) for k in "mv"}
            ),
            "state for 'norm.weight' has shape \\[8\\], the tensor \\[16\\]",
        ),
        (lambda s: s.pop("m.norm.weight"), "'m.norm.weight'"),
        (
            lambda s: [s.pop("m.norm.weight"), s.pop("v.norm.weight")],
            "no optimizer state for tensor 'norm.weight'",
        ),
        (
            lambda s: s.update(
                {"m.extra": np.zeros(2, np.float32), "v.extra": np.zeros(2, np.float32)}
            ),
            "'extra'",
        ),
        (lambda s: s.update({"m.norm.weight": np.zeros(16, np.float16)}), "float16"),
        (lambda s: s.pop("step"), "'step'"),
    ],
)
def test_adamw_refuses_mismatched_state(edit, message):
    params, state = stepped_state()
    edit(state)
    with pytest.raises(XdslAneError, match=message) as error:
        AdamW().load_state_arrays(state, params)
    assert "\n" not in str(error.value)


def test_adamw_checks_loaded_state_at_the_next_step():
    params, state = stepped_state()
    params["norm.weight"] = np.zeros(8, np.float32)
    optimizer = AdamW()
    optimizer.load_state_arrays(state)
    grads = {name: np.zeros_like(p) for name, p in params.items()}
    with pytest.raises(XdslAneError, match="'norm.weight' has shape \\[16\\]"):
        optimizer.step(params, grads)


def test_adamw_refuses_missing_gradient_and_bad_hyperparameters():
    params = {"w": np.zeros((2, 2), np.float32)}
    with pytest.raises(XdslAneError, match="no gradient for tensor 'w'"):
        AdamW().step(params, {})
    with pytest.raises(XdslAneError, match="learning rate"):
        AdamW(lr=-1.0)
    with pytest.raises(XdslAneError, match="beta 2"):
        AdamW(betas=(0.9, 1.0))


@pytest.mark.parametrize("max_norm", [0.5, 1e3])
def test_clip_grad_norm_matches_torch(max_norm):
    grads = random_tensors(np.random.default_rng(4), scale=0.1)
    tensors = []
    for g in grads.values():
        t = torch.nn.Parameter(torch.zeros(g.shape))
        t.grad = torch.tensor(g)
        tensors.append(t)
    expected = torch.nn.utils.clip_grad_norm_(tensors, max_norm, foreach=False)
    unclipped = {name: g.copy() for name, g in grads.items()}
    total = clip_grad_norm(grads, max_norm)
    assert total == pytest.approx(float(expected), rel=1e-6)
    for g, t in zip(grads.values(), tensors, strict=True):
        np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-6)
    if max_norm > total:
        for name, g in grads.items():
            np.testing.assert_array_equal(g, unclipped[name])


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_lr_at_matches_transformers(schedule):
    import transformers

    make = {
        "constant": lambda opt: transformers.get_constant_schedule_with_warmup(opt, 3),
        "cosine": lambda opt: transformers.get_cosine_schedule_with_warmup(opt, 3, 10),
    }[schedule]
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=3e-4)
    scheduler = make(optimizer)
    for step in range(12):
        assert lr_at(step, 3e-4, 3, 10, schedule) == optimizer.param_groups[0]["lr"]
        optimizer.step()
        scheduler.step()


def test_lr_at_refuses_unknown_schedule():
    with pytest.raises(XdslAneError, match="unknown learning-rate schedule 'linear'"):
        lr_at(0, 1e-4, 0, 10, "linear")


def test_loss_scale_matches_grad_scaler():
    # finite ×3 grows (interval 3), inf backs off, growth restarts from 0.
    pattern = [True, True, True, False, True, True, False, True, True, True, True]
    reference = torch.amp.GradScaler("cpu", init_scale=3072.0, growth_interval=3)
    param = torch.nn.Parameter(torch.zeros(4))
    optimizer = torch.optim.SGD([param], lr=0.0)
    scale = DynamicLossScale(3072.0, growth_interval=3)
    rng = np.random.default_rng(5)
    for finite in pattern:
        grad = rng.standard_normal(4).astype(np.float32) * 3072
        if not finite:
            grad[1] = np.inf
        reference.scale(torch.ones(()))  # GradScaler's scale is created lazily
        param.grad = torch.tensor(grad)
        reference.unscale_(optimizer)
        reference.step(optimizer)
        reference.update()
        grads = {"g": grad}
        found_finite = scale.unscale_and_check(grads)
        assert found_finite == finite
        if finite:
            np.testing.assert_array_equal(grads["g"], param.grad.numpy())
        scale.update(found_finite)
        assert scale.scale == reference.get_scale()
    assert scale.skipped_steps == 2


def test_loss_scale_growth_stops_before_overflow():
    scale = DynamicLossScale(2.0**127, growth_interval=1)
    scale.update(True)
    assert scale.scale == 2.0**127


def test_fixed_loss_scale_and_option():
    fixed = DynamicLossScale.from_option("1024", auto_scale=256.0)
    grads = {"g": np.array([2048.0, np.nan], np.float32)}
    assert not fixed.unscale_and_check(grads)
    assert grads["g"][0] == 2.0
    fixed.update(False)
    assert fixed.scale == 1024.0 and fixed.skipped_steps == 1
    automatic = DynamicLossScale.from_option("auto", auto_scale=256.0 * 28)
    assert automatic.dynamic and automatic.scale == 7168.0
    for bad in ["0", "-2", "nan", "big"]:
        with pytest.raises(
            XdslAneError, match="loss_scale=.*: expected auto or a number > 0"
        ):
            DynamicLossScale.from_option(bad, auto_scale=256.0)


def test_loss_scale_state_round_trip():
    scale = DynamicLossScale(512.0, growth_interval=4)
    for finite in [True, False, True, True]:
        scale.update(finite)
    state = {**AdamW().state_arrays(), **scale.state_arrays()}
    resumed = DynamicLossScale(99.0, growth_interval=4)
    resumed.load_state_arrays(load_safetensors(save_safetensors(state)))
    assert (resumed.scale, resumed.growth_tracker, resumed.skipped_steps) == (
        256.0,
        2,
        1,
    )
    for other in (scale, resumed):
        other.update(True), other.update(True)
    assert resumed.scale == scale.scale == 512.0
    with pytest.raises(XdslAneError, match="'loss_scale.scale'"):
        DynamicLossScale(1.0).load_state_arrays({})

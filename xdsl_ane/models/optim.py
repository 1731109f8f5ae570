"""The CPU side of a training step: AdamW, gradient clipping, the learning
rate schedule and the fp16 loss scale, in numpy, each exactly as the torch or
transformers object it stands for.

| here | reference |
|---|---|
| `AdamW` | `torch.optim.AdamW(foreach=False)`, parameters grouped as transformers' `Trainer` groups them (decay on tensors of rank ≥ 2 only) |
| `clip_grad_norm` | `torch.nn.utils.clip_grad_norm_` (norm 2 over all gradients) |
| `lr_at` | transformers' `get_constant_schedule_with_warmup` / `get_cosine_schedule_with_warmup` under `torch.optim.lr_scheduler.LambdaLR` |
| `DynamicLossScale` | `torch.amp.GradScaler` (or a fixed scale) |

The arithmetic follows torch's float32 kernels operation by operation: the
scalars are computed in float64 and applied as float32, and `lerp_` and
`addcmul_`, which torch's CPU kernels fuse into multiply-adds, are fused
here too (`_fused_multiply_add`), so AdamW's moments agree with torch's to
the last bit. The parameters agree to within an ulp of the update: torch's
vectorized `sqrt` is not always correctly rounded (AVX-512 builds), numpy's
is. Parameters are updated in chunks, so a step needs no temporary the size
of a whole tensor.

Optimizer and loss-scale state are flat dicts of arrays (`state_arrays`), so
one safetensors file holds both: AdamW's keys are `step`, `m.<name>` and
`v.<name>`, the loss scale's `loss_scale.*`; each `load_state_arrays` reads
its own keys and ignores the rest.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from xdsl_ane.errors import XdslAneError, option

SCHEDULES = ("constant", "cosine")
"""The learning-rate schedules `lr_at` knows (`--schedule`)."""

_CHUNK = 1 << 18
"""Elements updated at a time: float64 temporaries of 2 MiB stay in cache."""


def decays(array: np.ndarray) -> bool:
    """Whether weight decay applies to a tensor: matmul and embedding weights
    (rank ≥ 2) decay; biases and norm weights (rank 1) do not, as in the
    parameter groups transformers' `Trainer` builds."""
    return array.ndim >= 2


def _fused_multiply_add(
    a: np.ndarray, b: np.ndarray | np.float64, c: np.ndarray
) -> np.ndarray:
    """a·b + c rounded once to float32, as a float32 fma instruction gives
    it: the float32 product is exact in float64."""
    result = a.astype(np.float64)
    result *= b
    result += c
    return result.astype(np.float32)


class AdamW:
    """`torch.optim.AdamW` (amsgrad, maximize and foreach off) over a dict of
    float32 tensors, updated in place. For optimizer step t (from 1), with
    gradient g and learning rate lr:

        p ← p · (1 − lr·wd)                        (rank ≥ 2 only, `decays`)
        m ← m + (1 − β1)·(g − m)                   (torch's lerp_)
        v ← β2·v + (1 − β2)·g²
        p ← p − lr/(1 − β1ᵗ) · m / (√v / √(1 − β2ᵗ) + ε)

    m and v are float32, one pair per tensor name, created at the first step.
    """

    def __init__(
        self,
        lr: float = 1e-4,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
    ):
        # torch.optim.AdamW's own checks.
        if not lr >= 0.0:
            raise XdslAneError(f"AdamW: invalid learning rate {lr}")
        if not eps >= 0.0:
            raise XdslAneError(f"AdamW: invalid epsilon {eps}")
        for index, beta in enumerate(betas):
            if not 0.0 <= beta < 1.0:
                raise XdslAneError(f"AdamW: invalid beta {index + 1} {beta}")
        if not weight_decay >= 0.0:
            raise XdslAneError(f"AdamW: invalid weight decay {weight_decay}")
        self.lr = float(lr)
        self.betas = (float(betas[0]), float(betas[1]))
        self.eps = float(eps)
        self.weight_decay = float(weight_decay)
        self.step_count = 0
        """Optimizer steps taken (torch's `state[p]["step"]`)."""
        self.m: dict[str, np.ndarray] = {}
        self.v: dict[str, np.ndarray] = {}

    def step(
        self,
        params: dict[str, np.ndarray],
        grads: Mapping[str, np.ndarray],
        lr: float | None = None,
    ) -> None:
        """One optimizer step: updates `params` (float32) in place from
        `grads`, at learning rate `lr` (the constructor's when None)."""
        lr = self.lr if lr is None else float(lr)
        self._check(params, grads)
        if not self.m:
            self.m = {name: np.zeros_like(p) for name, p in params.items()}
            self.v = {name: np.zeros_like(p) for name, p in params.items()}
        self.step_count += 1
        beta1, beta2 = self.betas
        bias_correction1 = 1 - beta1**self.step_count
        bias_correction2_sqrt = (1 - beta2**self.step_count) ** 0.5
        # torch computes these scalars in double and applies them as float32.
        decay = np.float32(1 - lr * self.weight_decay)
        one_minus_beta1 = np.float64(np.float32(1 - beta1))
        beta2_32 = np.float32(beta2)
        one_minus_beta2 = np.float32(1 - beta2)
        correction2 = np.float32(bias_correction2_sqrt)
        eps = np.float32(self.eps)
        step_size = np.float32(-(lr / bias_correction1))
        for name, param in params.items():
            apply_decay = self.weight_decay != 0 and decays(param)
            flat_p = param.reshape(-1)
            flat_g = np.asarray(grads[name], dtype=np.float32).reshape(-1)
            flat_m = self.m[name].reshape(-1)
            flat_v = self.v[name].reshape(-1)
            for start in range(0, flat_p.size, _CHUNK):
                chunk = slice(start, start + _CHUNK)
                p, g, m, v = flat_p[chunk], flat_g[chunk], flat_m[chunk], flat_v[chunk]
                if apply_decay:
                    p *= decay
                m[...] = _fused_multiply_add(g - m, one_minus_beta1, m)
                v *= beta2_32
                v[...] = _fused_multiply_add(one_minus_beta2 * g, g, v)
                denom = np.sqrt(v)
                denom /= correction2
                denom += eps
                update = step_size * m
                update /= denom
                p += update

    def _check(
        self, params: Mapping[str, np.ndarray], grads: Mapping[str, np.ndarray]
    ) -> None:
        for name, param in params.items():
            if name not in grads:
                raise XdslAneError(f"AdamW: no gradient for tensor '{name}'")
            if param.dtype != np.float32 or not param.flags.c_contiguous:
                raise XdslAneError(
                    f"AdamW: tensor '{name}' must be a contiguous float32 array, "
                    f"not {param.dtype}"
                )
            if np.shape(grads[name]) != param.shape:
                raise XdslAneError(
                    f"AdamW: gradient of '{name}' has shape "
                    f"{list(np.shape(grads[name]))}, the tensor {list(param.shape)}"
                )
            if self.m and (name not in self.m or self.m[name].shape != param.shape):
                raise XdslAneError(self._mismatch(name, param))
        for name in grads:
            if name not in params:
                raise XdslAneError(f"AdamW: gradient for unknown tensor '{name}'")
        for name in self.m:
            if name not in params:
                raise XdslAneError(
                    f"AdamW: optimizer state for tensor '{name}', "
                    "which the model does not have"
                )

    def _mismatch(self, name: str, param: np.ndarray) -> str:
        if name not in self.m:
            return f"AdamW: no optimizer state for tensor '{name}'"
        return (
            f"AdamW: optimizer state for '{name}' has shape "
            f"{list(self.m[name].shape)}, the tensor {list(param.shape)}"
        )

    def state_arrays(self) -> dict[str, np.ndarray]:
        """The state as a flat dict for safetensors: `step` (int64 scalar),
        `m.<name>` and `v.<name>` (float32). The moments are the live arrays,
        not copies: save them before the next step."""
        arrays = {"step": np.array(self.step_count, dtype=np.int64)}
        for name in self.m:
            arrays[f"m.{name}"] = self.m[name]
            arrays[f"v.{name}"] = self.v[name]
        return arrays

    def load_state_arrays(
        self,
        arrays: Mapping[str, np.ndarray],
        params: Mapping[str, np.ndarray] | None = None,
    ) -> None:
        """Resume from `state_arrays` output (keys other than `step`, `m.*`
        and `v.*` are ignored). The state must match `params`, tensor for
        tensor, in names and shapes: checked here when `params` is given,
        else at the next `step`."""
        if "step" not in arrays:
            raise XdslAneError("AdamW state: no 'step' entry")
        step = np.asarray(arrays["step"])
        if step.size != 1 or step.dtype.kind not in "iu" or int(step) < 0:
            raise XdslAneError("AdamW state: 'step' is not a step count")
        m = {k[2:]: a for k, a in arrays.items() if k.startswith("m.")}
        v = {k[2:]: a for k, a in arrays.items() if k.startswith("v.")}
        for name in m.keys() | v.keys():
            if name not in m or name not in v:
                kind = "v" if name not in v else "m"
                raise XdslAneError(f"AdamW state: no '{kind}.{name}' entry")
            for kind, moments in (("m", m), ("v", v)):
                if np.asarray(moments[name]).dtype != np.float32:
                    raise XdslAneError(
                        f"AdamW state: '{kind}.{name}' is "
                        f"{np.asarray(moments[name]).dtype}, not float32"
                    )
            if np.shape(m[name]) != np.shape(v[name]):
                raise XdslAneError(
                    f"AdamW state: 'm.{name}' and 'v.{name}' differ in shape"
                )
        if int(step) > 0 and not m:
            raise XdslAneError("AdamW state: a step count but no moments")
        loaded = AdamW(self.lr, self.betas, self.eps, self.weight_decay)
        loaded.step_count = int(step)
        loaded.m = {
            name: np.array(a, dtype=np.float32, order="C") for name, a in m.items()
        }
        loaded.v = {name: np.array(v[name], dtype=np.float32, order="C") for name in m}
        if params is not None and loaded.m:
            for name, param in params.items():
                if name not in loaded.m or loaded.m[name].shape != param.shape:
                    raise XdslAneError(loaded._mismatch(name, param))
            for name in loaded.m:
                if name not in params:
                    raise XdslAneError(
                        f"AdamW: optimizer state for tensor '{name}', "
                        "which the model does not have"
                    )
        self.step_count, self.m, self.v = loaded.step_count, loaded.m, loaded.v


def clip_grad_norm(grads: Mapping[str, np.ndarray], max_norm: float) -> float:
    """`torch.nn.utils.clip_grad_norm_(norm_type=2)`: the 2-norm of all
    gradients together (before clipping), and every gradient scaled in place
    by max_norm / (norm + 1e-6) when that is below 1. torch computes each
    tensor's norm, then the norm of those norms, in float32; so does this
    (accumulating in float64). A non-finite norm leaves the gradients as
    they are (the step is skipped or fails on its own)."""
    norms = [
        np.float32(np.sqrt(np.sum(np.square(g, dtype=np.float64))))
        for g in grads.values()
    ]
    if not norms:
        return 0.0
    total = np.float32(np.sqrt(np.sum(np.square(norms, dtype=np.float64))))
    coefficient = np.float32(max_norm) / (total + np.float32(1e-6))
    if coefficient < 1:
        for g in grads.values():
            g *= coefficient
    return float(total)


def lr_at(step: int, base_lr: float, warmup: int, total: int, schedule: str) -> float:
    """The learning rate of optimizer step `step` (from 0), as transformers'
    schedulers under `LambdaLR` give it: linear warmup from 0 over `warmup`
    steps, then constant, or a half cosine from base_lr at `warmup` to 0 at
    `total` (`get_cosine_schedule_with_warmup`, num_cycles 0.5)."""
    if schedule not in SCHEDULES:
        raise XdslAneError(
            f"unknown learning-rate schedule '{schedule}' "
            f"(expected one of {', '.join(SCHEDULES)})"
        )
    if step < warmup:
        factor = float(step) / float(max(1, warmup))
    elif schedule == "constant":
        factor = 1.0
    else:
        progress = float(step - warmup) / float(max(1, total - warmup))
        factor = max(0.0, 0.5 * (1.0 + math.cos(math.pi * 0.5 * 2.0 * progress)))
    return base_lr * factor


class DynamicLossScale:
    """The fp16 loss scale, as `torch.amp.GradScaler` keeps it: the loss (so
    every gradient) is multiplied by `scale`; `unscale_and_check` multiplies
    the gradients by the float32 reciprocal of the scale (computed in
    float64, as GradScaler does) and says whether all are finite. Then
    `update`: a step with a non-finite gradient is skipped and the scale
    multiplied by `backoff_factor`; after `growth_interval` finite steps in
    a row it is multiplied by `growth_factor` (unless that overflows
    float32). With `dynamic=False` (`--loss-scale N`) the scale never
    changes, and non-finite steps are still skipped."""

    def __init__(
        self,
        init_scale: float,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        dynamic: bool = True,
    ):
        if not (math.isfinite(init_scale) and init_scale > 0):
            raise XdslAneError(f"invalid loss scale {init_scale}: must be positive")
        self._scale = np.float32(init_scale)
        self.growth_factor = float(growth_factor)
        self.backoff_factor = float(backoff_factor)
        self.growth_interval = int(growth_interval)
        self.dynamic = dynamic
        self.growth_tracker = 0
        """Finite steps in a row since the scale last changed."""
        self.skipped_steps = 0
        """Steps skipped for a non-finite gradient."""

    @classmethod
    def from_option(cls, value: str | float, auto_scale: float) -> DynamicLossScale:
        """The loss scale `--loss-scale VALUE` asks for: `auto` is dynamic,
        starting at `auto_scale`; a positive number is a fixed scale."""
        if value == "auto":
            return cls(auto_scale)
        try:
            scale = float(value)
        except ValueError:
            scale = math.nan
        if not (math.isfinite(scale) and scale > 0):
            raise XdslAneError(
                f"{option('loss_scale', value)}: expected auto or a number > 0"
            )
        return cls(scale, dynamic=False)

    @property
    def scale(self) -> float:
        """The current scale (a float32 value)."""
        return float(self._scale)

    def unscale_and_check(self, grads: Mapping[str, np.ndarray]) -> bool:
        """Divides every gradient by the scale, in place; True if all are
        finite."""
        inverse = np.float32(1.0 / np.float64(self._scale))
        finite = True
        for g in grads.values():
            finite = finite and bool(np.isfinite(g).all())
            g *= inverse
        return finite

    def update(self, found_finite: bool) -> None:
        """After a step: `torch._amp_update_scale_`'s rule."""
        if not found_finite:
            self.skipped_steps += 1
        if not self.dynamic:
            return
        if not found_finite:
            self._scale = np.float32(self._scale * np.float32(self.backoff_factor))
            self.growth_tracker = 0
            return
        self.growth_tracker += 1
        if self.growth_tracker == self.growth_interval:
            with np.errstate(over="ignore"):
                grown = np.float32(self._scale * np.float32(self.growth_factor))
            if np.isfinite(grown):
                self._scale = grown
            self.growth_tracker = 0

    def state_arrays(self) -> dict[str, np.ndarray]:
        """`loss_scale.scale` (float32), `loss_scale.growth_tracker` and
        `loss_scale.skipped_steps` (int64)."""
        return {
            "loss_scale.scale": np.array(self._scale, dtype=np.float32),
            "loss_scale.growth_tracker": np.array(self.growth_tracker, dtype=np.int64),
            "loss_scale.skipped_steps": np.array(self.skipped_steps, dtype=np.int64),
        }

    def load_state_arrays(self, arrays: Mapping[str, np.ndarray]) -> None:
        """Resume from `state_arrays` output (other keys are ignored)."""
        for key in self.state_arrays():
            if key not in arrays or np.asarray(arrays[key]).size != 1:
                raise XdslAneError(f"loss-scale state: no '{key}' entry")
        scale = float(np.asarray(arrays["loss_scale.scale"]).reshape(()))
        if not (math.isfinite(scale) and scale > 0):
            raise XdslAneError(f"loss-scale state: invalid scale {scale}")
        self._scale = np.float32(scale)
        self.growth_tracker = int(
            np.asarray(arrays["loss_scale.growth_tracker"]).reshape(())
        )
        self.skipped_steps = int(
            np.asarray(arrays["loss_scale.skipped_steps"]).reshape(())
        )

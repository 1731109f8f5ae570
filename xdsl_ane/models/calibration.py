"""compile-llm's fp16 check and rescaling: the residual stream's and the
norms' maxima measured on calibration prompts in float32, layer by layer
from the checkpoint, and the power-of-two scales that keep every value in
fp16's range (`fp16_rescaled`)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from xdsl.dialects import builtin

from xdsl_ane.dialects import rlx
from xdsl_ane.dialects.typing import shape_of
from xdsl_ane.errors import XdslAneError
from xdsl_ane.models.configs import LlmConfig
from xdsl_ane.models.hf_config import EMBED
from xdsl_ane.models.llm import Decoder, LlmShape
from xdsl_ane.models.per_layer_inputs import PER_LAYER_ROWS, checkpoint_rows
from xdsl_ane.models.rope import ROPE_POSITION, text_rope_positions
from xdsl_ane.weights.checkpoint import Checkpoint
from xdsl_ane.weights.lazy import LazyWeight

FP16_HEADROOM = 16384.0
"""The largest |hidden state| the fp16 program may carry: a quarter of
fp16's 65504, for the sums inside a layer."""


def calibration_prompts(decoder: Decoder) -> list[list[int]]:
    """Two prompts of `prefill` ids, drawn from a fixed seed."""
    rng = np.random.default_rng(0)
    vocab, prefill = decoder.config.vocab_size, decoder.shape.prefill
    return [[int(t) for t in rng.integers(0, vocab, prefill)] for _ in range(2)]


def residual_maxima(
    checkpoint: Checkpoint, decoder: Decoder, prompts: list[list[int]]
) -> list[float]:
    """The largest |hidden state| over `prompts` of the embedding and after
    each layer (num_layers + 1 values; inside it where a layer scalar
    shrinks its output: `before_scalars`), from the fp32 program
    (shape.probe) in the interpreter, prefill calls as the package makes
    them. With RoPE (the stream is the embedding's output) the program
    runs a part at a time, the embedding and then each layer over every
    prompt (`part_maxima`), so that one layer's weights are in memory at
    a time rather than all of them."""
    config, shape = decoder.config, decoder.shape
    if config.family.rope:
        maxima = part_maxima(checkpoint, config, shape, prompts)
    else:
        maxima = probe_maxima(checkpoint, config, shape, prompts)
    return before_scalars(checkpoint, config, maxima)


def before_scalars(
    checkpoint: Checkpoint, config: LlmConfig, maxima: list[float]
) -> list[float]:
    """`maxima` with each layer's own larger where the stream inside it,
    before its `layer_scalar` s (Family.layer_scalar), is: the largest
    |x| after it divided by |s|, exactly (its second norm and the
    branches' ends read the stream before s)."""
    if not config.family.layer_scalar:
        return maxima
    inside = list(maxima)
    for layer in range(config.num_layers):
        name = config.weight_name(f"model.layers.{layer}.layer_scalar")
        scalar = abs(float(np.asarray(checkpoint.tensor(name)).reshape(-1)[0]))
        if 0 < scalar < 1:
            inside[layer + 1] = maxima[layer + 1] / scalar
    return inside


def probe_maxima(
    checkpoint: Checkpoint,
    config: LlmConfig,
    shape: LlmShape,
    prompts: list[list[int]],
) -> list[float]:
    """`residual_maxima` from the whole fp32 probe program (every weight
    in memory): the reference `part_maxima` agrees with."""
    from xdsl_ane.interpreter.core import StatefulRuntime

    probe = replace(shape, probe=True, argmax=False, part="all", layers=None)
    module = Decoder(config, probe).build()
    weights = Decoder(config, probe).weights(checkpoint, module)
    count = config.num_layers + 1
    maxima = np.zeros(count)
    for prompt in prompts:
        runtime = StatefulRuntime(module, weights)  # a fresh cache each
        for start in range(0, len(prompt), shape.prefill):
            ids = np.zeros(shape.prefill, np.int32)
            part = prompt[start : start + shape.prefill]
            ids[: len(part)] = part
            given = [ids, np.array([start], np.int32)]
            if config.per_layer_width:  # the rows the file would give
                given.append(checkpoint_rows(config, checkpoint, ids))
            out = runtime.call("prefill", given)
            seen = [float(o.reshape(-1)[0]) for o in out[-count:]]
            maxima = np.maximum(maxima, seen)
    if not np.all(np.isfinite(maxima)):
        first = int(np.flatnonzero(~np.isfinite(maxima))[0])
        check_finite_weights(weights, first)
    return [float(m) for m in maxima]


def part_maxima(
    checkpoint: Checkpoint,
    config: LlmConfig,
    shape: LlmShape,
    prompts: list[list[int]],
) -> list[float]:
    """`residual_maxima` a part at a time (`walk_parts`): the embedding's
    program over every prompt's prefill calls, then each layer's over the
    hidden states the one before gave, the largest |x| of each part's
    hidden states kept."""
    calls = [
        Call(p, "prefill", start, np.array(prompt[start : start + shape.prefill]))
        for p, prompt in enumerate(prompts)
        for start in range(0, len(prompt), shape.prefill)
    ]
    maxima: list[float] = []
    for step in walk_parts(checkpoint, config, shape, calls):
        largest = 0.0
        for values in step.values:
            # np.max, not max(): a NaN must carry on to the check
            found = np.abs(values["hidden_states"]).max()
            largest = float(np.max([largest, found]))
        if not np.isfinite(largest):
            check_finite_weights(step.weights, len(maxima))
        maxima.append(largest)
    return maxima


@dataclass(frozen=True)
class Call:
    """A call of the decoder's functions on a calibration prompt."""

    prompt: int
    """Which prompt (each has its own cache)."""
    function: str
    """prefill or decode."""
    position: int
    ids: np.ndarray
    """Its tokens (fewer than prefill's rows: padded)."""


@dataclass
class PartStep:
    """`walk_parts` after one part: the embedding (layers None) or a layer."""

    layers: tuple[int, int] | None
    weights: dict[str, Any]
    """The part's weights (arrays reused by the next part's)."""
    values: list[dict[str, np.ndarray]]
    """Every value each call has by name so far (the later parts' inputs:
    hidden states, per-layer inputs, a source layer's keys and values)."""


def walk_parts(
    checkpoint: Checkpoint,
    config: LlmConfig,
    shape: LlmShape,
    calls: list[Call],
    layers: int | None = None,
) -> Iterator[PartStep]:
    """The fp32 program a part at a time over `calls`: the embedding's
    (`embedding_rows`), then each layer's of the first `layers` (default:
    all) over the values the parts before gave, in the calls' order with
    a fresh cache per prompt; a part's outputs feed the later parts'
    inputs of their names, as in a split package. Each layer's weights
    are read once and into the arrays of the layer before
    (`read_reusing`), so one layer's are in memory at a time."""
    from xdsl_ane.interpreter.core import StatefulRuntime

    base = replace(shape, probe=False, argmax=False)
    parts: list[tuple[int, int] | None] = [None]
    parts += [
        (i, i + 1) for i in range(config.num_layers if layers is None else layers)
    ]
    values: list[dict[str, np.ndarray]] = [{} for _ in calls]
    spare: dict[tuple[Any, ...], list[np.ndarray]] = {}
    for part in parts:
        kind = "embed" if part is None else "layers"
        named = Decoder(config, replace(base, part=kind, layers=part))
        if part is None:
            module, weights, renumbered = embedding_rows(
                checkpoint, config, base, calls
            )
        else:
            module = named.build()
            weights, spare = read_reusing(named.weights(checkpoint, module), spare)
        runtimes: dict[int, StatefulRuntime] = {}
        for i, call in enumerate(calls):
            runtime = runtimes.setdefault(call.prompt, StatefulRuntime(module, weights))
            given = values[i] | {
                "input_ids": renumbered[i] if part is None else None,
                "position": np.array([call.position], np.int32),
                ROPE_POSITION: rope_rows(call, base.prefill),
            }
            if part is None and config.per_layer_width:  # the file's rows
                given[PER_LAYER_ROWS] = checkpoint_rows(
                    config, checkpoint, call_ids(call, base.prefill)
                )
            out = runtime.call(call.function, [given[n] for n in named.input_names()])
            values[i].update(zip(named.output_names(), out))
        yield PartStep(part, weights, values)
        del module, weights, runtimes


def rope_rows(call: Call, prefill: int) -> np.ndarray:
    """The call's multimodal RoPE positions [rows, 3] of a text prompt:
    its position + i on every axis (read where the decoder takes them)."""
    rows = prefill if call.function == "prefill" else 1
    return text_rope_positions(call.position, rows)


def call_ids(call: Call, prefill: int) -> np.ndarray:
    """The call's ids padded with 0 to its function's rows."""
    ids = np.zeros(prefill if call.function == "prefill" else 1, np.int32)
    ids[: len(call.ids)] = call.ids
    return ids


def check_finite_weights(weights: dict[str, Any], index: int) -> None:
    """Fails naming a checkpoint tensor among `weights` that holds a NaN or
    inf, which is why the hidden states of maxima[index] (`stream_name`)
    are not finite."""
    for name, value in weights.items():
        if isinstance(value, LazyWeight) and value.shape:
            array = np.empty(value.shape, value.dtype)
            value.convert_into(array.reshape(-1), None)
            value = array
        if isinstance(value, np.ndarray) and value.dtype.kind == "f":
            bad = value[~np.isfinite(value)]
            if bad.size:
                raise XdslAneError(
                    f"checkpoint tensor '{name}' holds {bad.size} non-finite "
                    f"value(s) ({bad.flat[0]}), so {stream_name(index)}'s hidden "
                    "states are not finite"
                )


def embedding_rows(
    checkpoint: Checkpoint,
    config: LlmConfig,
    shape: LlmShape,
    calls: list[Call],
) -> tuple[builtin.ModuleOp, dict[str, Any], list[np.ndarray]]:
    """The embedding's program for `part_maxima` over a table of just the
    rows the calls read (the prefill's padding id 0 among them), and each
    call's ids renumbered into it: the same values as the whole table's
    program (a gather, then the family's scales), without widening a
    vocabulary's rows to float32 for a few hundred ids; the per-layer
    embedding's rows given as an input (`per_layer_rows`), its program's
    other weights read whole."""

    def own(t: int) -> int:  # placeholders read the pad's rows (padded_ids)
        return config.pad_id if t in config.padded_ids else t

    used = sorted({own(0), *(own(int(t)) for call in calls for t in call.ids)})
    index = {t: i for i, t in enumerate(used)}
    rows = replace(
        config, vocab_size=len(used), per_layer_vocab=len(used), padded_ids=()
    )
    whole = max(shape.chunk, len(used))  # the tables unchunked
    module = Decoder(rows, replace(shape, part="embed", layers=None, chunk=whole))
    module = module.build()
    tables = {config.weight_name(EMBED): config.hidden_size}  # gpt_neox.embed_in
    weights: dict[str, Any] = {
        op.param_name.data: checkpoint.lazy(op.param_name.data, shape_of(op.result))
        for op in module.walk()
        if isinstance(op, rlx.ParamOp) and op.param_name.data not in tables
    }
    for name, width in tables.items():
        table = checkpoint.lazy(name, (config.vocab_size, width))
        weights[name] = np.concatenate([table.read_rows(t, t + 1) for t in used])
    renumbered = [
        np.array([index[own(int(t))] for t in call_ids(call, shape.prefill)], np.int32)
        for call in calls
    ]
    return module, weights, renumbered


def read_reusing(
    weights: dict[str, Any], spare: dict[tuple[Any, ...], list[np.ndarray]]
) -> tuple[dict[str, Any], dict[tuple[Any, ...], list[np.ndarray]]]:
    """`weights` with each checkpoint tensor read once (for every call of
    a part's program, not at each), into an array of `spare` of its shape
    and dtype where there is one (the part before's, whose layers are the
    same shapes), and the arrays now held, to be spare for the next part:
    so calibrating allocates about one layer's weights once rather than
    each layer's (fresh pages fault in slowly while the page cache is
    full of the checkpoint)."""
    held: dict[tuple[Any, ...], list[np.ndarray]] = {}
    read = {}
    for name, value in weights.items():
        if isinstance(value, LazyWeight) and value.shape:
            key = (value.shape, value.dtype)
            free = spare.get(key)
            array = free.pop() if free else np.empty(value.shape, value.dtype)
            value.convert_into(array.reshape(-1), None)
            held.setdefault(key, []).append(array)
            value = array
        read[name] = value
    return read, held


def fp16_rescaled(config: LlmConfig, maxima: list[float], where: str) -> LlmConfig:
    """`config` made safe in fp16 from the calibration's `maxima` (the
    embedding's, then after each layer): where the stream passes
    FP16_HEADROOM it is carried times α = 2^−k (stream_scale); where a
    stream RMSNorm would square values past NORM_HEADROOM its input is
    divided by s = 2^j first (norm_input_scales). Both are exact in
    floating point and leave the outputs unchanged. A family whose layers
    read the stream without a norm first (post_norms) cannot be rescaled
    so: the error names the layer."""
    if not all(np.isfinite(m) for m in maxima):
        layer = next(i for i, m in enumerate(maxima) if not np.isfinite(m))
        raise XdslAneError(
            f"{where}: {stream_name(layer)}'s hidden states are not finite in float32"
        )
    largest = max(maxima, default=0.0)
    alpha = 1.0
    if largest > FP16_HEADROOM:
        if config.family.post_norms:
            layer = maxima.index(largest)
            raise XdslAneError(
                f"{where}: {stream_name(layer)}'s hidden states reach {largest:.4g}, "
                f"past fp16's range (65504; {FP16_HEADROOM:g} with headroom), and "
                f"the layers of {config.family.name} read them without a norm, so no "
                "rescaling leaves its outputs unchanged"
            )
        alpha = 2.0 ** -math.ceil(math.log2(largest / FP16_HEADROOM))
    # layer L's first norm reads the stream entering it (maxima[L]), its
    # second the stream after attention (maxima[L + 1] the closest measured;
    # the input with a parallel residual), the final norm maxima[-1]
    second = maxima[:-1] if config.parallel_residual else maxima[1:]
    reads = [m for pair in zip(maxima[:-1], second) for m in pair] + [maxima[-1]]
    scales = tuple(
        2.0 ** math.ceil(math.log2(m * alpha / NORM_HEADROOM))
        if m * alpha > NORM_HEADROOM
        else 1.0
        for m in reads
    )
    if alpha == 1.0 and all(s == 1.0 for s in scales):
        return config
    return replace(
        config,
        stream_scale=None if alpha == 1.0 else alpha,
        norm_input_scales=() if all(s == 1.0 for s in scales) else scales,
    )


NORM_HEADROOM = 128.0
"""The largest |x| an RMSNorm squares in fp16 (128² = 16384, a quarter of
65504, for the mean)."""


def stream_name(index: int) -> str:
    """maxima[index]'s place: the embedding or a layer's output."""
    return "the embedding" if index == 0 else f"layer {index - 1}"

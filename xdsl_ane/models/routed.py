"""Routed experts (`compile-llm --experts routed`): decode reads only the
experts each token picks.

The program is cut at each layer with a mixture of experts into
segments, each a function pair `prefill_{i}` / `decode_{i}` over the same
states. Segment 0 takes input_ids and position and runs the layers before
the first such layer, then that layer up to its MLP: it returns the
residual stream after the mixer (`residual_out`), the MLP's normed input
(`mlp_input_out`) and the routing weights [1, S, E] (`routing`: the top
k's weights, 0 elsewhere, as the dense mixture computes them). Segment i
takes those (`residual`, `mlp_input`) with the weights and weights of the
experts the runtime chose (`experts_weight` [1, S, K], `experts_gate` and
`experts_up` [1, K, F, H], `experts_down` [1, K, H, F]), adds
Σ_j w_j · down_j(act(gate_j h) · up_j h) (and the shared MLP where the
family has one) to the residual, and goes on to the next cut or the head.
Prefill passes every expert (K = E, the routing as it is), decode the k
a token picks (K = k, their weights): the runtime reads those k from the
experts file beside the package, so the other experts' weights are not
touched. The expert weights are inputs, not constants: the file holds
them once, fp16, per layer gate [E, F, H], up [E, F, H], down [E, H, F].
"""

from __future__ import annotations

from typing import Any

from xdsl.dialects.builtin import f32, i32
from xdsl.ir import SSAValue

from xdsl_ane.ane.limits import MAX_DIMENSION
from xdsl_ane.dialects import rlx
from xdsl_ane.dialects.functions import build_function
from xdsl_ane.dialects.typing import shape_of, tensor
from xdsl_ane.models.configs import LlmConfig
from xdsl_ane.models.kv_cache import ring_positions
from xdsl_ane.models.moe import router_logits, routing_weights

CUT_OUTPUTS = ["residual_out", "mlp_input_out", "routing"]
"""What a segment that ends at a cut returns."""

FEEDS = {"residual_out": "residual", "mlp_input_out": "mlp_input"}
"""The next segment's inputs they feed (Core ML's inputs and outputs of
one function share a namespace)."""

EXPERT_KINDS = ("gate", "up", "down")


def experts_per_input(config: LlmConfig, count: int) -> int:
    """How many of a segment's `count` experts one input holds. Decode's k
    (fewer than all) take an input each: a slice of an input moves the
    whole input, so k experts grouped would move k times their bytes. The
    prefill's E experts are grouped, as many to an input as keep its
    channels, experts × max(F, hidden), within the ANE's 16384."""
    assert config.moe is not None
    if count < config.moe.experts:
        return 1
    return max(1, MAX_DIMENSION // max(config.moe.ffn_size, config.hidden_size))


def expert_chunks(config: LlmConfig, count: int) -> list[tuple[int, int]]:
    """[start, size) of the groups of `count` experts one input holds."""
    per = experts_per_input(config, count)
    return [(s, min(per, count - s)) for s in range(0, count, per)]


def expert_inputs(config: LlmConfig, count: int) -> list[str]:
    """The expert inputs of a segment taking `count` experts."""
    return ["experts_weight"] + [
        f"experts_{kind}_{i}"
        for i in range(len(expert_chunks(config, count)))
        for kind in EXPERT_KINDS
    ]


def expert_shape(count: int, matrix: tuple[int, int]) -> tuple[int, ...]:
    """The shape of an input holding `count` experts' `matrix`-shaped
    weights: [1, count, rows, columns], or the matrix itself for one
    expert (no reshape to reach it)."""
    return matrix if count == 1 else (1, count, *matrix)


def cuts(config: LlmConfig) -> list[int]:
    """The layers with a mixture of experts, where the program is cut."""
    assert config.moe is not None
    return sorted(config.moe.layers)


def segment_inputs(config: LlmConfig, index: int, count: int) -> list[str]:
    """The non-state inputs of segment `index` taking `count` experts."""
    if index == 0:
        return ["input_ids", "position"]
    return ["residual", "mlp_input", *expert_inputs(config, count), "position"]


def segment_function(b: Any, name: str, tokens: int, index: int, experts: int):
    """Segment `index` of `b`'s decoder over `tokens` tokens, taking the
    weights of `experts` experts (E in prefill, k in decode)."""
    c = b.c
    layers = cuts(c)
    states = b.state_types()
    names = list(states)
    hidden = tensor((1, tokens, c.hidden_size), f32)
    position = tensor((1,), i32)
    if index == 0:
        args = [tensor((tokens,), i32), position]
    else:
        assert c.moe is not None
        f, h = c.moe.ffn_size, c.hidden_size
        args = [hidden, hidden, tensor((1, tokens, experts), f32)]
        for _, n in expert_chunks(c, experts):
            args += [tensor(expert_shape(n, (f, h)), f32)] * 2
            args.append(tensor(expert_shape(n, (h, f)), f32))
        args.append(position)

    def body(*values: SSAValue) -> list[SSAValue]:
        given, caches = values[: len(args)], dict(zip(names, values[len(args) :]))
        pos = given[-1]
        tables, masks = b.positions(pos, tokens)
        if caches and "local_key_cache" in caches:
            b.ring = ring_positions(b, pos, tokens)
        if index == 0:
            x, first = b.embedded(given[0]), 0
        else:
            layer = layers[index - 1]
            m = routed_mlp(b, given[1], given[2:-1], layer)
            x, first = b.residual(given[0], m), layer + 1
        end = layers[index] if index < len(layers) else c.num_layers
        for layer in range(first, end):
            cos, sin, mask = b.layer_positions(layer, tables, masks)
            x = b.layer(x, layer, cos, sin, mask, pos, caches)
        if index == len(layers):
            return b.final(x)
        cos, sin, mask = b.layer_positions(end, tables, masks)
        x, h = b.front(x, end, cos, sin, mask, pos, caches)
        assert c.moe is not None
        return [x, h, routing_weights(router_logits(b, h, end), c.moe)]

    arg_names = [*segment_inputs(c, index, experts), *names]
    return build_function(name, [*args, *states.values()], body, arg_names)


def routed_mlp(b: Any, h: SSAValue, inputs, layer: int) -> SSAValue:
    """Σ_j w_j · down_j(act(gate_j(h)) · up_j(h)) over the K experts given
    (their weights [1, S, K] and matrices), plus the shared MLP where the
    family has one."""
    weights, chunks = inputs[0], inputs[1:]
    total, expert = None, 0
    for c in range(0, len(chunks), 3):
        total, expert = chunk_mlp(
            b, h, weights, chunks[c : c + 3], (total, expert), layer
        )
    assert total is not None
    if b.c.family.shared_mlp:
        total = rlx.AddOp(total, b.dense_mlp(h, layer)).result
    return total


def chunk_mlp(b: Any, h, weights, chunk, so_far, layer: int):
    """The experts of one input group added to the running sum: (the sum,
    the index after them)."""
    gate, up, down = chunk
    total, expert = so_far
    k, f, hidden = (
        (1, *shape_of(gate)) if len(shape_of(gate)) == 2 else shape_of(gate)[1:]
    )

    def matrix(w: SSAValue, j: int, shape: tuple[int, int]) -> SSAValue:
        if k == 1:
            return w
        return rlx.ReshapeOp(rlx.NarrowOp(w, 1, j, 1).result, shape).result

    for j in range(k):
        g, u = (matrix(w, j, (f, hidden)) for w in (gate, up))
        d = matrix(down, j, (hidden, f))
        gated = b.activate(rlx.MatmulOp(h, g, transpose_rhs=True).result, layer)
        inner = rlx.MulOp(gated, rlx.MatmulOp(h, u, transpose_rhs=True).result)
        y = rlx.MatmulOp(inner.result, d, transpose_rhs=True).result
        y = rlx.MulOp(y, rlx.NarrowOp(weights, 2, expert + j, 1).result).result
        total = y if total is None else rlx.AddOp(total, y).result
    return total, expert + k


def segment_outputs(config: LlmConfig, index: int, final: list[str]) -> list[str]:
    """The record's output names of segment `index` (`final`: the head's)."""
    return final if index == len(cuts(config)) else list(CUT_OUTPUTS)


def check_routed(config: LlmConfig) -> str | None:
    """Why `config` cannot be routed (None: it can)."""
    family = config.family
    if config.moe is None:
        return "the model has no mixture of experts"
    if family.expert_layout == "gpt_oss":
        return "GPT-OSS's experts (biases, interleaved gate and up) are not routed yet"
    if (
        config.parallel_residual
        or family.post_norms
        or family.sandwich_norms
        or not family.gated_mlp
    ):
        return f"a {family.name} layer is not a pre-norm layer with a gated MLP"
    return None


def expert_file_index(config: LlmConfig) -> dict[str, Any]:
    """The experts file's layout: per cut layer the byte offset of its gate
    [E, F, H], up [E, F, H] and down [E, H, F] arrays (fp16, C order)."""
    moe = config.moe
    assert moe is not None
    e, f, h = moe.experts, moe.ffn_size, config.hidden_size
    shapes = {"gate": [e, f, h], "up": [e, f, h], "down": [e, h, f]}
    size = 2 * e * f * h
    layers = {
        str(layer): {kind: (3 * n + k) * size for k, kind in enumerate(EXPERT_KINDS)}
        for n, layer in enumerate(cuts(config))
    }
    return {"dtype": "fp16", "shapes": shapes, "layers": layers}


def expert_tensors(config: LlmConfig, checkpoint: Any, views: dict[str, Any]):
    """The experts' weights in the file's order, each a checkpoint tensor
    (or an expert's rows of a stacked one) read where it is written, the
    down projections scaled with the residual stream where it is."""
    from xdsl_ane.models.checkpoint_use import expert_weights, scaled_weights

    moe = config.moe
    assert moe is not None
    scaled = scaled_weights(config)
    for layer in cuts(config):
        for k in range(3):
            for expert in range(moe.experts):
                name = config.weight_name(expert_weights(config, layer, expert)[k])
                view = views.get(name)
                tensor = view.read(checkpoint) if view else checkpoint.lazy(name)
                if config.stream_scale and name in scaled:
                    tensor = tensor.scaled(config.stream_scale)
                yield name, tensor


def write_experts(config: LlmConfig, checkpoint: Any, views, path) -> None:
    """The experts file at `path`: each expert's weights, fp16, one at a
    time (the weights are never all in memory)."""
    import numpy as np

    with open(path, "wb") as out:
        for _, tensor in expert_tensors(config, checkpoint, views):
            np.asarray(tensor, np.float32).astype(np.float16).tofile(out)

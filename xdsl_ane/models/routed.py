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

import math
from typing import Any

from xdsl.dialects.builtin import f32, i32
from xdsl.ir import SSAValue

from xdsl_ane.ane.limits import MAX_DIMENSION
from xdsl_ane.dialects import rlx
from xdsl_ane.dialects.functions import build_function
from xdsl_ane.dialects.typing import shape_of, tensor
from xdsl_ane.models.configs import LlmConfig
from xdsl_ane.models.kv_cache import ring_positions
from xdsl_ane.models.moe import gpt_oss_expert_math, router_logits, routing_weights

CUT_OUTPUTS = ["residual_out", "mlp_input_out", "routing"]
"""What a segment that ends at a cut returns."""

FEEDS = {"residual_out": "residual", "mlp_input_out": "mlp_input"}
"""The next segment's inputs they feed (Core ML's inputs and outputs of
one function share a namespace)."""


def expert_matrices(config: LlmConfig) -> dict[str, tuple[int, int]]:
    """Each kind of an expert's weights and its shape, in the experts
    file's order: gate and up [F, H] and down [H, F] (out by in), or
    GPT-OSS's gate_up [H, 2F] and its bias [1, 2F], down [F, H] and its
    bias [1, H] (in by out, as the checkpoint stacks them)."""
    assert config.moe is not None
    f, h = config.moe.ffn_size, config.hidden_size
    if config.family.expert_layout == "gpt_oss":
        shapes = [(h, 2 * f), (1, 2 * f), (f, h), (1, h)]
        return dict(zip(("gate_up", "gate_up_bias", "down", "down_bias"), shapes))
    return {"gate": (f, h), "up": (f, h), "down": (h, f)}


def experts_per_input(config: LlmConfig, count: int) -> int:
    """How many of a segment's `count` experts one input holds. Decode's k
    (fewer than all, not in a run of the file) take an input each, a view
    of the file; the prefill's E experts are grouped, as many to an input
    as keep its channels, experts × a matrix's rows, within the ANE's
    16384."""
    assert config.moe is not None
    if count < config.moe.experts:
        return 1
    rows = max(shape[0] for shape in expert_matrices(config).values())
    return max(1, MAX_DIMENSION // rows)


def expert_chunks(config: LlmConfig, count: int) -> list[tuple[int, int]]:
    """[start, size) of the groups of `count` experts one input holds."""
    per = experts_per_input(config, count)
    return [(s, min(per, count - s)) for s in range(0, count, per)]


def expert_inputs(config: LlmConfig, count: int) -> list[str]:
    """The expert inputs of a segment taking `count` experts."""
    return ["experts_weight"] + [
        f"experts_{kind}_{i}"
        for i in range(len(expert_chunks(config, count)))
        for kind in expert_matrices(config)
    ]


def expert_shape(count: int, matrix: tuple[int, int]) -> tuple[int, int, int, int]:
    """The shape of an input holding `count` experts' `matrix`-shaped
    weights: [1, count · rows, 1, columns], the ANE's own layout, in
    which the experts file's rows are already laid out; so the runtime
    passes a run of experts as a view of the file, no copy."""
    rows, columns = matrix
    return (1, count * rows, 1, columns)


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
        args = [hidden, hidden, tensor((1, tokens, experts), f32)]
        for _, n in expert_chunks(c, experts):
            args += [
                tensor(expert_shape(n, m), f32) for m in expert_matrices(c).values()
            ]
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
    """Σ_j w_j · expert_j(h) over the K experts given (their weights
    [1, S, K] and matrices, grouped in inputs), plus the shared MLP where
    the family has one."""
    weights, groups = inputs[0], inputs[1:]
    kinds = len(expert_matrices(b.c))
    total, expert = None, 0
    for g in range(0, len(groups), kinds):
        group = groups[g : g + kinds]
        rows = [m[0] for m in expert_matrices(b.c).values()]
        count = shape_of(group[0])[1] // rows[0]
        for j in range(count):
            matrices = [expert_matrix(w, r, j) for w, r in zip(group, rows)]
            y = expert_mlp(b, h, matrices, layer)
            y = rlx.MulOp(y, rlx.NarrowOp(weights, 2, expert + j, 1).result).result
            total = y if total is None else rlx.AddOp(total, y).result
        expert += count
    assert total is not None
    if b.c.family.shared_mlp:
        total = rlx.AddOp(total, b.dense_mlp(h, layer)).result
    return total


def expert_matrix(w: SSAValue, rows: int, j: int) -> SSAValue:
    """Expert `j`'s [rows, columns] matrix of an input of experts
    (`expert_shape`): its rows, then a reshape that keeps the last axis (a
    view)."""
    if shape_of(w)[1] > rows:
        w = rlx.NarrowOp(w, 1, j * rows, rows).result
    return rlx.ReshapeOp(w, (rows, shape_of(w)[3])).result


def expert_mlp(b: Any, h: SSAValue, matrices: list[SSAValue], layer: int):
    """One expert on h from its matrices (`expert_matrices`' kinds)."""
    if b.c.family.expert_layout == "gpt_oss":
        return gpt_oss_expert_math(h, *matrices, b.c.moe)
    gate, up, down = matrices
    gated = b.activate(rlx.MatmulOp(h, gate, transpose_rhs=True).result, layer)
    inner = rlx.MulOp(gated, rlx.MatmulOp(h, up, transpose_rhs=True).result)
    return rlx.MatmulOp(inner.result, down, transpose_rhs=True).result


def segment_outputs(config: LlmConfig, index: int, final: list[str]) -> list[str]:
    """The record's output names of segment `index` (`final`: the head's)."""
    return final if index == len(cuts(config)) else list(CUT_OUTPUTS)


def check_routed(config: LlmConfig) -> str | None:
    """Why `config` cannot be routed (None: it can)."""
    family = config.family
    if config.moe is None:
        return "the model has no mixture of experts"
    if (
        config.parallel_residual
        or family.post_norms
        or family.sandwich_norms
        or not family.gated_mlp
    ):
        return f"a {family.name} layer is not a pre-norm layer with a gated MLP"
    return None


def expert_file_index(config: LlmConfig) -> dict[str, Any]:
    """The experts file's layout: per cut layer the byte offset of each
    kind's [E, rows, columns] array (`expert_matrices`; fp16, C order)."""
    moe = config.moe
    assert moe is not None
    shapes = {k: [moe.experts, *m] for k, m in expert_matrices(config).items()}
    sizes = [2 * math.prod(shape) for shape in shapes.values()]
    layers = {
        str(layer): {
            kind: n * sum(sizes) + sum(sizes[:k]) for k, kind in enumerate(shapes)
        }
        for n, layer in enumerate(cuts(config))
    }
    return {"dtype": "fp16", "shapes": shapes, "layers": layers}


def expert_tensors(config: LlmConfig, checkpoint: Any, views: dict[str, Any]):
    """The experts' weights in the file's order, each a checkpoint tensor
    (or an expert's rows of a stacked one) read where it is written, the
    down projections scaled with the residual stream where it is."""
    from xdsl_ane.models.checkpoint_use import scaled_weights

    moe = config.moe
    assert moe is not None
    scaled = scaled_weights(config)
    for layer in cuts(config):
        for k in range(len(expert_matrices(config))):
            for expert in range(moe.experts):
                name = expert_names(config, layer, expert)[k]
                view = views.get(name)
                tensor = view.read(checkpoint) if view else checkpoint.lazy(name)
                if config.stream_scale and name in scaled:
                    tensor = tensor.scaled(config.stream_scale)
                yield name, tensor


def expert_names(config: LlmConfig, layer: int, expert: int) -> list[str]:
    """The params (checkpoint tensors or row views) of an expert's
    matrices, in `expert_matrices`' order."""
    from xdsl_ane.models.checkpoint_use import expert_weights, gpt_oss_expert

    if config.family.expert_layout == "gpt_oss":
        return [view.name for view in gpt_oss_expert(config, layer, expert)]
    return [config.weight_name(n) for n in expert_weights(config, layer, expert)]


def write_experts(config: LlmConfig, checkpoint: Any, views, path) -> None:
    """The experts file at `path`: each expert's weights, fp16, one at a
    time (the weights are never all in memory)."""
    import numpy as np

    with open(path, "wb") as out:
        for _, tensor in expert_tensors(config, checkpoint, views):
            np.asarray(tensor, np.float32).astype(np.float16).tofile(out)

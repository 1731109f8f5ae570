"""How a decoder uses its checkpoint's tensors: the row views of the
embedding and the head split into chunks and of the stacked experts
(`RowView`, by param name), each expert's weights (`expert_weights`), the
tensors a residual-stream scale multiplies, and the check that every
tensor is read (`check_all_used`), naming the config field that leaves an
unread one out."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from xdsl.dialects import builtin

from xdsl_ane.dialects import rlx
from xdsl_ane.errors import XdslAneError
from xdsl_ane.models.configs import LlmConfig
from xdsl_ane.models.hf_config import EMBED, MLP, OUT, QKV, head_name
from xdsl_ane.models.per_layer_inputs import PER_LAYER_TABLE
from xdsl_ane.weights.checkpoint import Checkpoint


def chunks(rows: int, limit: int) -> list[tuple[int, int]]:
    """[start, end) row ranges of at most `limit` rows, as equal as possible."""
    count = math.ceil(rows / limit)
    size = math.ceil(rows / count)
    return [(s, min(s + size, rows)) for s in range(0, rows, size)]


@dataclass(frozen=True)
class RowView:
    """Rows [start, end) of a checkpoint tensor read as a matrix (its
    leading axes' rows by its last axis): a chunk of the embedding or the
    head, or one expert's gate, up or down weight of the stacked experts;
    a param of its own. `name` is the param's, `base` the tensor it
    views, `shape` the base's shape as config.json gives it."""

    base: str
    start: int
    end: int
    shape: tuple[int, ...]

    @property
    def name(self) -> str:
        return chunk_name(self.base, self.start, self.end)

    def read(self, checkpoint: Checkpoint):
        """Its rows of the checkpoint's tensor, unread (a CheckpointTensor)."""
        table = checkpoint.lazy(self.base, self.shape).matrix()
        return table.rows(self.start, self.end)


def row_views(config: LlmConfig, chunk: int) -> dict[str, RowView]:
    """The views the builder reads, by param name, of the checkpoint's
    tensors (by its names: GPT-2's `transformer.wte.weight`): chunks of the
    embedding and the head where the vocabulary is more than one chunk (of
    the per-layer embedding too, or its vocabulary's rows where it has
    more), and each expert's rows of stacked experts (Family.fused_experts)."""
    parts = chunks(config.vocab_size, chunk)
    table = (config.vocab_size, config.hidden_size)
    views = [
        RowView(config.weight_name(base), start, end, table)
        for base in dict.fromkeys([EMBED, head_name(config)])
        for start, end in (parts if len(parts) > 1 else [])
    ]
    moe = config.moe
    if moe is not None and config.family.expert_layout == "gpt_oss":
        views += gpt_oss_views(config)
    elif moe is not None and config.family.fused_experts:
        e, f, h = moe.experts, moe.ffn_size, config.hidden_size
        for layer in sorted(moe.layers):
            p = f"model.layers.{layer}.mlp.experts."
            gate_up = config.weight_name(p + "gate_up_proj.weight")
            down = config.weight_name(p + "down_proj.weight")
            for rows in range(0, 2 * e * f, f):
                views.append(RowView(gate_up, rows, rows + f, (e, 2 * f, h)))
            for rows in range(0, e * h, h):
                views.append(RowView(down, rows, rows + h, (e, h, f)))
    return {view.name: view for view in views}


def chunk_name(name: str, start: int, end: int) -> str:
    return f"{name}[{start}:{end}]"


def expert_weights(
    config: LlmConfig, layer: int, expert: int, base: str = "model."
) -> tuple[str, str, str]:
    """The builder's names (before the family's renames) of the gate, up
    and down weights of expert `expert` in layer `layer`: its own tensors
    `mlp.experts.{expert}.gate_proj.weight` ..., or its rows of the stacked
    `mlp.experts.gate_up_proj.weight` [E·2F, H] ([gate; up] per expert)
    and `mlp.experts.down_proj.weight` [E·H, F] (Family.fused_experts)."""
    assert config.moe is not None
    p = f"{base}layers.{layer}.mlp.experts."
    if not config.family.fused_experts:
        gate, up, down = (
            f"{p}{expert}.{name}.weight"
            for name in ("gate_proj", "up_proj", "down_proj")
        )
        return gate, up, down
    f, h = config.moe.ffn_size, config.hidden_size
    first = 2 * f * expert
    return (
        chunk_name(p + "gate_up_proj.weight", first, first + f),
        chunk_name(p + "gate_up_proj.weight", first + f, first + 2 * f),
        chunk_name(p + "down_proj.weight", h * expert, h * (expert + 1)),
    )


GPT_OSS_EXPERTS = ("gate_up_proj", "gate_up_proj_bias", "down_proj", "down_proj_bias")
"""GPT-OSS's stacked expert tensors: [E, H, 2F], [E, 2F], [E, F, H], [E, H]."""


def gpt_oss_shapes(config: LlmConfig) -> dict[str, tuple[int, ...]]:
    assert config.moe is not None
    e, f, h = config.moe.experts, config.moe.ffn_size, config.hidden_size
    shapes = [(e, h, 2 * f), (e, 2 * f), (e, f, h), (e, h)]
    return dict(zip(GPT_OSS_EXPERTS, shapes))


def gpt_oss_expert(
    config: LlmConfig, layer: int, expert: int, base: str = "model."
) -> tuple[RowView, ...]:
    """Expert `expert`'s rows of GPT-OSS's stacked tensors (each read as a
    matrix of its last axis): gate_up [H, 2F], its bias [1, 2F], down
    [F, H], its bias [1, H]."""
    p = f"{base}layers.{layer}.mlp.experts."
    views = []
    for name, shape in gpt_oss_shapes(config).items():
        rows = shape[1] if len(shape) == 3 else 1
        full = config.weight_name(p + name)
        views.append(RowView(full, rows * expert, rows * (expert + 1), shape))
    return tuple(views)


def gpt_oss_views(config: LlmConfig) -> list[RowView]:
    assert config.moe is not None
    return [
        view
        for layer in sorted(config.moe.layers)
        for expert in range(config.moe.experts)
        for view in gpt_oss_expert(config, layer, expert)
    ]


BRANCH_ENDS = ("self_attn.o_proj", "mlp.down_proj", "conv.out_proj", "mixer.out_proj")
"""The projections that end a layer's branches, whichever mixer it has."""


def scaled_weights(config: LlmConfig) -> set[str]:
    """The checkpoint tensors a stream_scale multiplies: the weights and
    biases that end each branch (o_proj, down_proj, a short convolution's
    or a state-space mixer's out_proj, each expert's down_proj) where no
    norm follows them."""
    if (
        config.stream_scale is None
        or config.family.sandwich_norms
        or config.family.post_norms
    ):
        return set()
    names = {
        config.weight_name(f"model.layers.{layer}.{projection}.{kind}")
        for layer in range(config.num_layers)
        for projection in BRANCH_ENDS
        for kind in ("weight", "bias")
    }
    moe = config.moe
    for layer in sorted(moe.layers) if moe is not None else ():
        for expert in range(moe.experts):
            if config.family.expert_layout == "gpt_oss":
                views = gpt_oss_expert(config, layer, expert)
                names |= {views[2].name, views[3].name}  # down and its bias
            else:
                names.add(config.weight_name(expert_weights(config, layer, expert)[2]))
    return names


HARMLESS = ("rotary_emb.inv_freq",)
"""Checkpoint tensors that transformers ignores on load and recomputes
(older checkpoints saved RoPE's inverse frequencies, per layer or once)."""


LAYER_TENSOR = re.compile(r"model\.layers\.(\d+)\.(.+)")


def read_names(modules: list[builtin.ModuleOp], views: dict[str, RowView]) -> set[str]:
    """The checkpoint tensors the modules' params read (a chunk view reads
    its base)."""
    names = {
        op.param_name.data
        for module in modules
        for op in module.walk()
        if isinstance(op, rlx.ParamOp)
    }
    return {views[n].base if n in views else n for n in names}


def check_all_used(
    checkpoint: Checkpoint,
    config: LlmConfig,
    chunk: int,
    modules: list[builtin.ModuleOp],
    also: set[str] = frozenset(),
) -> None:
    """Every tensor of the checkpoint is read by one of `modules` (or is
    HARMLESS, or of another modality's encoder: Family.other_towers), so a tensor the config does not account for (a layer past
    num_hidden_layers, a bias the config turns off) is an error naming it,
    not silently dropped. A tied checkpoint may also hold lm_head.weight
    when it equals the embedding table. `chunk`: the most rows of a
    chunk of the embedding and the head (LlmShape.chunk). The per-layer
    embedding is read into the file beside the package
    (`per_layer_inputs.write_per_layer`)."""
    used = read_names(modules, row_views(config, chunk)) | set(also)
    if config.per_layer_width:  # in the file beside the package
        used.add(config.weight_name(PER_LAYER_TABLE))
    towers = config.family.other_towers  # a multimodal checkpoint's encoders
    unused = [
        n
        for n in checkpoint.tensors
        if n not in used and not n.endswith(HARMLESS) and not n.startswith(towers)
    ]
    head, embed = config.weight_name("lm_head.weight"), config.weight_name(EMBED)
    if config.tied and head in unused:
        if checkpoint.equal(head, embed):
            unused.remove(head)
    if not unused:
        return
    name = unused[0]
    more = f"; {len(unused) - 1} more tensors are not used" if len(unused) > 1 else ""
    raise XdslAneError(
        f"{checkpoint.directory}: tensor '{name}' is not used "
        f"({unused_reason(config, name)}){more}"
    )


def unused_reason(config: LlmConfig, name: str) -> str:
    """Which config field leaves tensor `name` out."""
    layer = LAYER_TENSOR.fullmatch(name)
    if layer and int(layer[1]) >= config.num_layers:
        return f"num_hidden_layers is {config.num_layers}"
    if name == "lm_head.weight" and config.tied:
        return f"tie_word_embeddings is true and it differs from {EMBED}"
    family = config.family
    if layer and layer[2].endswith(".bias"):
        projection = layer[2].removesuffix(".bias")
        if projection in QKV + OUT and family.attention_bias:
            return "attention_bias is false"
        if projection in MLP and family.mlp_bias:
            return "mlp_bias is false"
        return f"a {family.name} model has no bias on {projection}"
    return f"a {family.name} model of this config.json has no such tensor"

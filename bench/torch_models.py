"""Vision, audio and encoder models, side by side: the same `torch.export`
program of each model (random weights from its config, nothing downloaded)
through coremltools' `ct.convert` and through xdsl-ane (`from_torch` +
`compile` + `save`): compile-and-save time, non-const op counts and the op
histogram of both packages.

    python -m bench.torch_models [--models resnet50,vit_b16] [--repeats 2]
                                 [--output FILE.json]

The models: ResNet-50, MobileNetV2 and ViT-B/16 at 224×224, Whisper-base's
encoder on 80 mel bins × 3000 frames, BERT-base and DistilBERT-base on 128
token ids, an MLP-mixer block (196 tokens × 768) and
`nn.TransformerEncoderLayer(768, 12)` on [1, 128, 768]; and, for their op
counts, Swin, ConvNeXt, RoBERTa and Depth Anything at small sizes
(`SMALL_MODELS`). BatchNorm running statistics, and every parameter a config
initialises to one value (norms, layer scales), are set to values that are
not the identity. Each model runs in a
process of its own (`--case`), exported once and compiled by both; the
fastest of `--repeats` runs of each is reported. What coremltools needs to
accept the programs is applied here and recorded in the results
(`COREMLTOOLS_PATCHES`): `run_decompositions({})`, which its converter asks
for, keeps `linear` and `scaled_dot_product_attention` whole, and with
these models its converter takes them (and gives its fewest ops); torch's
default table, which the Qwen3 cases need, costs it more ops here.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import report
from bench.common import git_state, run_child
from bench.torch_frontend import ours, theirs

COREMLTOOLS_PATCHES = [
    "program.run_decompositions({}) first: ct.convert refuses the export's "
    "training dialect and asks for it (an empty table: linear and "
    "scaled_dot_product_attention stay whole, which its converter takes)",
    "aten.alias registered as a no-op (torch_alias of coremltools' noop) for "
    "the programs that hold one (`alias_nodes` > 0)",
]


def randomize_batch_norms(model):
    """Statistics that are not the identity (as tests/test_vision_models.py
    sets them), so that folding them is real work; and every parameter that
    a config initialises to one value (norms' ones and zeros, layer scales)
    drawn around it, as in a trained model: neither compiler may drop a
    multiplication by one or merge two norms because their weights are
    equal."""
    import torch
    import torch.nn as nn

    for m in model.modules():
        if isinstance(m, nn.BatchNorm1d | nn.BatchNorm2d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 2.0)
            m.weight.data.uniform_(0.5, 1.5)
            m.bias.data.uniform_(-0.5, 0.5)
    generator = torch.Generator().manual_seed(2)
    with torch.no_grad():
        for p in model.parameters():
            if p.numel() > 1 and bool((p == p.flatten()[0]).all()):
                value = float(p.flatten()[0])
                noise = torch.rand(p.shape, generator=generator) - 0.5
                p.add_(noise * (abs(value) if value else 0.2))
    return model


def mixer_block(tokens: int = 196, channels: int = 768):
    """One MLP-mixer block in plain torch: LayerNorm, a token-mixing MLP
    (over the tokens, hidden 384), residual; LayerNorm, a channel-mixing MLP
    (hidden 3072), residual."""
    import torch.nn as nn

    class MixerBlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1 = nn.LayerNorm(channels)
            self.token_mlp = nn.Sequential(
                nn.Linear(tokens, 384), nn.GELU(), nn.Linear(384, tokens)
            )
            self.norm2 = nn.LayerNorm(channels)
            self.channel_mlp = nn.Sequential(
                nn.Linear(channels, 3072), nn.GELU(), nn.Linear(3072, channels)
            )

        def forward(self, x):
            y = self.token_mlp(self.norm1(x).transpose(1, 2)).transpose(1, 2)
            x = x + y
            return x + self.channel_mlp(self.norm2(x))

    return MixerBlock()


SMALL_MODELS: dict[str, tuple[str, str, dict[str, Any], tuple[int, ...] | None]] = {
    # name: (model class, config class, config fields, image shape or None
    # for token ids [1, 16]); the sizes of tests/test_vision_models.py
    "swin_small_config": (
        "SwinModel",
        "SwinConfig",
        dict(
            image_size=32,
            patch_size=4,
            embed_dim=16,
            depths=[2, 2],
            num_heads=[1, 2],
            window_size=4,
        ),
        (1, 3, 32, 32),
    ),
    "convnext_small_config": (
        "ConvNextModel",
        "ConvNextConfig",
        dict(hidden_sizes=[16, 32], depths=[1, 1], num_stages=2),
        (1, 3, 64, 64),
    ),
    "roberta_small_config": (
        "RobertaModel",
        "RobertaConfig",
        dict(
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
        ),
        None,
    ),
    "depth_anything_small_config": (
        "DepthAnythingForDepthEstimation",
        "DepthAnythingConfig",
        dict(
            backbone_config=dict(
                hidden_size=32,
                num_hidden_layers=4,
                num_attention_heads=2,
                mlp_ratio=2,
                image_size=32,
                patch_size=8,
                out_indices=[1, 2, 3, 4],
                reshape_hidden_states=False,
            ),
            reassemble_hidden_size=32,
            neck_hidden_sizes=[8, 16, 32, 32],
            fusion_hidden_size=16,
            head_hidden_size=8,
            patch_size=8,
            # a sigmoid head: random weights leave a ReLU's output all zeros
            depth_estimation_type="metric",
        ),
        (1, 3, 32, 32),
    ),
}
"""Models whose op counts (not times) are the point, at small sizes: Swin's
shifted windows and patch merging, ConvNeXt's channels-last blocks, RoBERTa
and DPT's reassembly (Depth Anything); their op counts are checked against
coremltools' by tests/test_models_vs_coremltools.py."""


def build(name: str):
    """The model (in eval) and its example arguments."""
    import torch
    import torch.nn as nn
    import transformers
    from transformers.models.whisper.modeling_whisper import WhisperEncoder

    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(1)

    def image():
        return (torch.randn(1, 3, 224, 224, generator=generator),)

    def ids():
        return (torch.randint(0, 30522, (1, 128), generator=generator),)

    if name == "resnet50":
        model, args = transformers.ResNetModel(transformers.ResNetConfig()), image()
    elif name == "mobilenet_v2":
        config = transformers.MobileNetV2Config()
        model, args = transformers.MobileNetV2Model(config), image()
    elif name == "vit_b16":
        model, args = transformers.ViTModel(transformers.ViTConfig()), image()
    elif name == "whisper_base_encoder":
        config = transformers.WhisperConfig(
            d_model=512,
            encoder_layers=6,
            encoder_attention_heads=8,
            encoder_ffn_dim=2048,
            num_mel_bins=80,
        )
        model = WhisperEncoder(config)
        args = (torch.randn(1, 80, 3000, generator=generator),)
    elif name == "bert_base":
        model, args = transformers.BertModel(transformers.BertConfig()), ids()
    elif name == "distilbert_base":
        config = transformers.DistilBertConfig()
        model, args = transformers.DistilBertModel(config), ids()
    elif name == "mlp_mixer_block":
        model = mixer_block()
        args = (torch.randn(1, 196, 768, generator=generator),)
    elif name == "transformer_encoder_layer":
        model = nn.TransformerEncoderLayer(768, 12, batch_first=True)
        args = (torch.randn(1, 128, 768, generator=generator),)
    elif name in SMALL_MODELS:
        model_class, config_class, fields, shape = SMALL_MODELS[name]
        fields = dict(fields)
        backbone = fields.pop("backbone_config", None)
        if backbone is not None:
            fields["backbone_config"] = transformers.Dinov2Config(**backbone)
        config = getattr(transformers, config_class)(**fields)
        model = getattr(transformers, model_class)(config)
        if shape is None:
            args = (torch.randint(0, 1000, (1, 16), generator=generator),)
        else:
            args = (torch.randn(shape, generator=generator),)
    else:
        raise ValueError(f"unknown model {name!r}")
    return randomize_batch_norms(model).eval(), args


MODELS = tuple(report.MODEL_NAMES)
"""The models, in the tables' order (their names are the report's)."""


def export(name: str):
    import torch

    model, args = build(name)
    with torch.no_grad():
        return torch.export.export(model, args)


def measure_case(args: argparse.Namespace) -> dict[str, Any]:
    import coremltools  # noqa: F401  (imports outside the clocks)

    import xdsl_ane.backend.milproto  # noqa: F401
    import xdsl_ane.backend.mlpackage  # noqa: F401

    start = time.perf_counter()
    program = export(args.case)
    export_s = time.perf_counter() - start
    workdir = Path(args.workdir)
    runs: dict[str, list[dict[str, Any]]] = {"ours": [], "theirs": []}
    frontend_decompose = []
    for run in range(args.repeats):
        runs["ours"].append(ours(program, workdir, run))
        runs["theirs"].append(theirs(program, workdir, run, decompositions={}))
        frontend_decompose.append(decompose_time(program))
    best = {k: min(v, key=lambda r: r["total_s"]) for k, v in runs.items()}
    for k, v in runs.items():
        best[k] = {**best[k], "runs_s": [r["total_s"] for r in v]}
    # what from_torch's own run_decompositions takes (inside import_s)
    best["ours"]["frontend_decompose_s"] = min(frontend_decompose)
    best["theirs"]["alias_nodes"] = alias_nodes(program)
    ours_types, theirs_types = best["ours"]["by_type"], best["theirs"]["by_type"]
    return {
        "model": args.case,
        "parameters": sum(p.numel() for p in program.parameters()),
        "export_s": round(export_s, 3),
        **best,
        "time_ratio": round(best["ours"]["total_s"] / best["theirs"]["total_s"], 3),
        "ops_ratio": round(best["ours"]["ops"] / best["theirs"]["ops"], 3),
        "ops_difference": {
            op: ours_types.get(op, 0) - theirs_types.get(op, 0)
            for op in sorted(set(ours_types) | set(theirs_types))
            if ours_types.get(op, 0) != theirs_types.get(op, 0)
        },
    }


def alias_nodes(program) -> int:
    """aten.alias nodes of the program ct.convert gets, which its op
    registry lacks (the patch registers a no-op)."""
    import torch

    decomposed = program.run_decompositions({})
    return sum(
        node.target is torch.ops.aten.alias.default for node in decomposed.graph.nodes
    )


def decompose_time(program) -> float:
    """The time of the run_decompositions that `xdsl_ane.from_torch` runs
    first (its own table) where it needs one, measured apart: part of our
    import time; 0 where it translates torch.export's graph as it is."""
    from xdsl_ane.frontend.torch import needs_decomposition
    from xdsl_ane.frontend.torch.program import decompose

    if not needs_decomposition(program, "bench"):
        return 0.0
    start = time.perf_counter()
    decompose(program, "bench")
    return round(time.perf_counter() - start, 3)


def table(cases: list[dict[str, Any]]) -> str:
    lines = [
        "| model | xdsl-ane s | ct.convert s | ratio | xdsl-ane ops | ct.convert ops |",
        "|---|---|---|---|---|---|",
    ]
    for c in cases:
        lines.append(
            f"| {report.MODEL_NAMES[c['model']]} | {c['ours']['total_s']:.2f} | "
            f"{c['theirs']['total_s']:.2f} | {c['time_ratio']:.3f} | "
            f"{c['ours']['ops']} | {c['theirs']['ops']} |"
        )
    return "\n".join(lines)


def measure_torch_models(
    models: list[str] | None = None, repeats: int = 2
) -> dict[str, Any]:
    """Every model in a child process; the results and the patches used."""
    started = datetime.datetime.now(datetime.timezone.utc)
    state = git_state()
    cases = []
    with tempfile.TemporaryDirectory(prefix="xdsl-ane-models-bench-") as scratch:
        for name in models or list(MODELS):
            print(f"torch models: {name} ...", flush=True)
            cases.append(
                run_child(
                    "torch_models",
                    ["--case", name, "--repeats", str(repeats)],
                    Path(scratch),
                    f"torch models case {name}",
                )
            )
    print(table(cases), flush=True)
    return {
        # this section can be measured apart from the rest of the bench
        "date": started.isoformat(timespec="seconds"),
        **state,
        "repeats": repeats,
        "coremltools_patches": COREMLTOOLS_PATCHES,
        "cases": cases,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--output", type=Path, help="instead of results.json")
    parser.add_argument("--case", choices=MODELS)
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args(argv)
    if args.case:
        args.output.write_text(json.dumps(measure_case(args), indent=2) + "\n")
        return 0
    results = measure_torch_models(args.models.split(","), args.repeats)
    if args.output:
        args.output.write_text(json.dumps(results, indent=2) + "\n")
        print(f"wrote {args.output}")
    else:
        report.store_section("torch_models", results)
    return 0


if __name__ == "__main__":
    sys.exit(main())

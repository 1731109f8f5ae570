"""The new decoders at real size (issue 44): an OLMoE-1B-7B-shaped mixture
of experts (`--experts routed`), an LFM2-1.2B-shaped and a Qwen3.5-shaped
hybrid, beside the Llama-3.2-3B-shaped dense model of `bench.llm`. Each a
random bf16 checkpoint of transformers' own tensor names and shapes
(written a layer at a time, cached under ~/.cache/xdsl-ane-bench),
compiled with compile-llm's defaults in a child process: time, peak RSS,
bytes written against the fp16 weights, the largest package; and the
estimated decode tokens/s on the M4 (the decode functions' estimate).

    python -m bench.decoders [--models olmoe,lfm2,qwen3_5,llama_3b]
                             [--output FILE.json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import report
from bench.common import proc_status_mb, run_child

CACHE = Path.home() / ".cache" / "xdsl-ane-bench"

MODELS: dict[str, tuple[str, str, dict[str, Any], dict[str, Any]]] = {
    "olmoe": (
        "OLMoE-1B-7B shape (64 experts, top 8; routed)",
        "OlmoeForCausalLM",
        dict(
            hidden_size=2048,
            intermediate_size=1024,
            num_hidden_layers=16,
            num_attention_heads=16,
            num_key_value_heads=16,
            num_experts=64,
            num_experts_per_tok=8,
            vocab_size=50304,
            max_position_embeddings=4096,
            tie_word_embeddings=False,
        ),
        {"experts": "routed"},
    ),
    "lfm2": (
        "LFM2-1.2B shape (10 short-convolution and 6 attention layers)",
        "Lfm2ForCausalLM",
        dict(
            hidden_size=2048,
            intermediate_size=12288,
            num_hidden_layers=16,
            num_attention_heads=32,
            num_key_value_heads=8,
            vocab_size=65536,
            max_position_embeddings=128000,
            full_attn_idxs=[2, 5, 8, 10, 12, 14],
            tie_word_embeddings=True,
        ),
        {},
    ),
    "qwen3_5": (
        "Qwen3.5 shape (hidden 2048, 24 layers: 18 delta-nets, 6 attention)",
        "Qwen3_5ForCausalLM",
        dict(
            hidden_size=2048,
            intermediate_size=6144,
            num_hidden_layers=24,
            num_attention_heads=8,
            num_key_value_heads=2,
            head_dim=256,
            linear_num_key_heads=16,
            linear_num_value_heads=16,
            linear_key_head_dim=128,
            linear_value_head_dim=128,
            vocab_size=151936,
            max_position_embeddings=32768,
            tie_word_embeddings=True,
        ),
        {},
    ),
}


def write_checkpoint(name: str) -> Path:
    """The model's checkpoint of random bf16 weights (N(0, 0.02); norms and
    1-d parameters 1 where named norms, else small) in transformers' names
    and shapes (its model on the meta device), a shard per layer; made
    once and cached (made again when its config differs)."""
    _, architecture, fields, _ = MODELS[name]
    return write_random_checkpoint(CACHE / f"{name}-random-bf16", architecture, fields)


def write_random_checkpoint(
    directory: Path, architecture: str, fields: dict[str, Any]
) -> Path:
    """`write_checkpoint` of transformers' class `architecture` with config
    `fields`, into `directory`."""
    import torch
    import transformers
    from safetensors.torch import save_file

    model_class = getattr(transformers, architecture)
    config = model_class.config_class(**fields)
    config.architectures = [architecture]
    text = config.to_json_string()
    if (directory / "config.json").is_file() and (
        directory / "config.json"
    ).read_text() == text:
        return directory
    directory.mkdir(parents=True, exist_ok=True)
    with torch.device("meta"):
        shapes = {
            n: tuple(t.shape) for n, t in model_class(config).state_dict().items()
        }
    if config.tie_word_embeddings:  # the head is the embedding, not saved
        shapes.pop("lm_head.weight", None)
        shapes.pop("proj_out.weight", None)  # Whisper's
    for tensor in [t for t in shapes if t.endswith("mlp.experts.gate_up_proj")]:
        # save_pretrained writes the experts one by one, as the Hub's files
        e, two_f, h = shapes.pop(tensor)
        e, h, f = shapes.pop(tensor.replace("gate_up_proj", "down_proj"))
        p = tensor.removesuffix("gate_up_proj")
        for i in range(e):
            shapes[f"{p}{i}.gate_proj.weight"] = (f, h)
            shapes[f"{p}{i}.up_proj.weight"] = (f, h)
            shapes[f"{p}{i}.down_proj.weight"] = (h, f)
    generator = torch.Generator().manual_seed(0)
    shards: dict[str, dict[str, tuple[int, ...]]] = {}
    for tensor, shape in shapes.items():
        parts = tensor.split(".")
        key = parts[2] if parts[:2] == ["model", "layers"] else "rest"
        shards.setdefault(key, {})[tensor] = shape
    index = {}
    for key, tensors in shards.items():
        file = f"model-{key}.safetensors"
        data = {}
        for tensor, shape in tensors.items():
            if len(shape) == 1 and "norm" in tensor:
                data[tensor] = torch.ones(shape, dtype=torch.bfloat16)
            else:
                value = torch.randn(*shape, generator=generator) * 0.02
                data[tensor] = value.to(torch.bfloat16)
            index[tensor] = file
        save_file(data, str(directory / file), metadata={"format": "pt"})
    (directory / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {}, "weight_map": index}, indent=2)
    )
    (directory / "config.json").write_text(text)
    return directory


class Planned(Exception):
    """Stops compile_llm once it has planned the packages."""


def stop() -> None:
    raise Planned


def compiled(args: argparse.Namespace) -> dict[str, Any]:
    """compile-llm's defaults on the checkpoint (in this child): time,
    peak RSS, bytes written and the estimated decode tokens/s."""
    from xdsl_ane.api.estimation import estimate
    from xdsl_ane.api.llm_compile import compile_llm

    options = json.loads(args.options)
    split: list[bool] = []
    try:  # whether the defaults split it: OUT is then a directory
        compile_llm(
            args.checkpoint, on_plan=lambda s, r: split.append(s) or stop(), **options
        )
    except Planned:
        pass
    out = args.workdir / ("out" if split[0] else "out.mlpackage")
    start = time.perf_counter()
    package = compile_llm(args.checkpoint, output=out, **options)
    seconds = time.perf_counter() - start
    written = [f for f in args.workdir.rglob("*") if f.is_file()]
    packages = [f for f in written if f.name == "weight.bin"]
    result = {
        "compile_and_write_s": round(seconds, 1),
        "peak_rss_mb": round(proc_status_mb("VmHWM"), 1),
        "written_mb": round(sum(f.stat().st_size for f in written) / 2**20, 1),
        "largest_blob_mb": round(max(f.stat().st_size for f in packages) / 2**20, 1),
    }
    path = getattr(package, "written", None) or out
    result |= decode_estimate(estimate(path), args.checkpoint)
    return result


def active_bytes(checkpoint: str) -> int:
    """The fp16 bytes of the parameters one token uses: all of them but
    the experts a token does not pick."""
    from xdsl_ane.models.hf_config import llm_config
    from xdsl_ane.weights.checkpoint import read_checkpoint

    ck = read_checkpoint(checkpoint)
    total = sum(math.prod(t.shape) for t in ck.tensors.values())
    moe = llm_config(ck).moe
    if moe is not None:
        unpicked = moe.experts - moe.top_k
        total -= (
            len(moe.layers) * 3 * moe.ffn_size * ck.config["hidden_size"] * unpicked
        )
    return 2 * total


def decode_estimate(estimated: Any, checkpoint: str) -> dict[str, Any]:
    """The decode functions' estimated ms and tokens/s on the M4, and the
    bytes their ops move over the active parameters' fp16 bytes."""
    functions = estimated.function_ms()
    decode = sum(ms for name, ms in functions.items() if "decode" in name)
    if not decode:
        raise SystemExit(f"no decode function among {sorted(functions)}")
    moved = sum(o.bytes for o in estimated.ops if "decode" in o.function)
    return {
        "decode_ms_m4": round(decode, 3),
        "decode_tokens_per_s_m4": round(1000 / decode, 1),
        "decode_bytes_over_active": round(moved / active_bytes(checkpoint), 3),
    }


def row(name: str, scratch: Path) -> dict[str, Any]:
    import numpy as np

    from bench.llm import checkpoint_shapes, write_large_checkpoint

    if name == "llama_3b":
        label, checkpoint, options = (
            "Llama-3.2-3B shape (dense)",
            write_large_checkpoint("3b"),
            {},
        )
    else:
        label, _, _, options = MODELS[name]
        checkpoint = write_checkpoint(name)
    shapes = checkpoint_shapes(checkpoint)
    fp16_mb = sum(2 * int(np.prod(s)) for s in shapes.values()) / 2**20
    arguments = ["--case", "compile", "--checkpoint", str(checkpoint)]
    result = run_child(
        "decoders", [*arguments, "--options", json.dumps(options)], scratch, name
    )
    result |= {
        "load_average": round(os.getloadavg()[0], 2),  # the machine's, 1 min
        "model": label,
        "fp16_weights_mb": round(fp16_mb, 1),
        "written_over_fp16_weights": round(result["written_mb"] / fp16_mb, 4),
    }
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="olmoe,lfm2,qwen3_5,llama_3b")
    parser.add_argument("--output", type=Path, help="instead of results.json")
    parser.add_argument("--case", choices=["compile"])
    parser.add_argument("--checkpoint")
    parser.add_argument("--options", default="{}")
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args(argv)
    if args.case:
        args.output.write_text(json.dumps(compiled(args), indent=2) + "\n")
        return 0
    section: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="xdsl-ane-decoders-") as scratch:
        for name in args.models.split(","):
            section[name] = row(name, Path(scratch))
            print(json.dumps(section[name]), flush=True)
    report.output_section("decoders", section, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())

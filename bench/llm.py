"""An LLM inference package at real size, side by side: a Qwen3-0.6B-shaped
checkpoint (random weights, written in the Hugging Face layout by
`save_pretrained`) compiled by `xdsl-ane compile-llm` (one package, and
split with `--layers-per-package`) and through coremltools' path for a
stateful model: a torch module holding the KV cache as registered fp16
buffers updated in place, `torch.jit.trace` for the prefill and the decode
shapes, `ct.convert(..., states=[ct.StateType(...)],
minimum_deployment_target=iOS18)` of each and `save_multifunction` to
share their weights. Compile-and-save time, peak resident memory, package
size and non-const ops per function.

    python -m bench.llm [--layers 28] [--vocab 151936] [--context 512]
                       [--prefill 64] [--layers-per-package 14]
                       [--output FILE.json]

Each path runs in a process of its own (`--case`), so each peak RSS is its
own; the checkpoint is written once, before. The figures go under `llm` in
bench/results.json (and the docs are regenerated), or to `--output`.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

from bench import report
from bench.common import ChildFailed, function_op_counts, maxrss_mb, run_child

QWEN3_0_6B = dict(
    hidden_size=1024,
    intermediate_size=3072,
    num_attention_heads=16,
    num_key_value_heads=8,
    head_dim=128,
    max_position_embeddings=40960,
    rope_theta=1000000.0,
    rms_norm_eps=1e-6,
    tie_word_embeddings=True,
)


def write_checkpoint(directory: Path, layers: int, vocab: int) -> None:
    """save_pretrained of a randomly initialised Qwen3 (bf16, sharded as
    transformers does by default)."""
    import torch
    import transformers

    transformers.logging.set_verbosity_error()
    config = transformers.Qwen3Config(
        vocab_size=vocab, num_hidden_layers=layers, **QWEN3_0_6B
    )
    torch.manual_seed(0)
    model = transformers.Qwen3ForCausalLM(config).eval()
    model.to(torch.bfloat16).save_pretrained(directory)


def peak_rss_mb() -> float:
    return round(maxrss_mb(), 1)


def size_mb(path: Path) -> float:
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    return round(sum(p.stat().st_size for p in files) / 2**20, 1)


def proto_function_ops(spec: Any) -> dict[str, int]:
    """Non-const ops of each function of an ML program."""
    return {name: c.total() for name, c in function_op_counts(spec).items()}


# --- xdsl-ane ---------------------------------------------------------------------


def ours(args: argparse.Namespace) -> dict[str, Any]:
    import xdsl_ane

    split = args.layers_per_package
    out = Path(args.workdir) / ("split" if split else "ours.mlpackage")
    start = time.perf_counter()
    package = xdsl_ane.compile_llm(
        args.checkpoint,
        context=args.context,
        prefill=args.prefill,
        layers_per_package=split,
    )
    compiled_at = time.perf_counter()
    package.save(out)
    end = time.perf_counter()
    parts = package.parts if split else [package]
    ops: dict[str, int] = Counter()
    for part in parts:
        for function, counts in part.compiled.op_counts().items():
            ops[function] += sum(counts.values())
    return {
        "compile_s": round(compiled_at - start, 2),
        "save_s": round(end - compiled_at, 2),
        "total_s": round(end - start, 2),
        "peak_rss_mb": peak_rss_mb(),
        "package_mb": size_mb(out),
        "packages": len(parts),
        "ops": dict(ops),
        "lint": "; ".join(p.compiled.lint.summary() for p in parts[:1]),
    }


# --- coremltools' stateful path ---------------------------------------------------


def stateful_module(checkpoint: str, context: int):
    """The checkpoint's Qwen3 as a torch module over (input_ids [1, S],
    position [1]) with the KV cache as buffers key_cache / value_cache
    [L, Hkv, context, D] fp16 written in place at the position; the same
    math as transformers' (RoPE tables gathered at the positions, a mask
    from the position, grouped-query attention)."""
    import torch
    import transformers

    hf = transformers.Qwen3ForCausalLM.from_pretrained(checkpoint, dtype=torch.float32)
    hf.eval()
    c = hf.config

    class StatefulQwen3(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model, self.lm_head = hf.model, hf.lm_head
            shape = (c.num_hidden_layers, c.num_key_value_heads, context, c.head_dim)
            self.register_buffer("key_cache", torch.zeros(shape, dtype=torch.float16))
            self.register_buffer("value_cache", torch.zeros(shape, dtype=torch.float16))
            inv = hf.model.rotary_emb.inv_freq.float()
            angles = torch.arange(context).float()[:, None] * inv[None, :]
            self.cos = torch.cat([angles.cos(), angles.cos()], -1)
            self.sin = torch.cat([angles.sin(), angles.sin()], -1)
            self.keys = torch.arange(context)[None, :]

        def rope(self, x, cos, sin):
            half = x.shape[-1] // 2
            rotated = torch.cat([-x[..., half:], x[..., :half]], -1)
            return x * cos + rotated * sin

        def forward(self, input_ids, position):
            s = input_ids.shape[1]
            positions = position + torch.arange(s, dtype=position.dtype)
            cos = self.cos[positions][None, None]
            sin = self.sin[positions][None, None]
            visible = self.keys <= positions[:, None]
            mask = torch.where(visible, 0.0, -1e4)[None, None]
            start = position[0]
            x = self.model.embed_tokens(input_ids)
            heads, kv, d = c.num_attention_heads, c.num_key_value_heads, c.head_dim
            for i, layer in enumerate(self.model.layers):
                attn = layer.self_attn
                h = layer.input_layernorm(x)
                q = attn.q_norm(attn.q_proj(h).view(1, s, heads, d)).transpose(1, 2)
                k = attn.k_norm(attn.k_proj(h).view(1, s, kv, d)).transpose(1, 2)
                v = attn.v_proj(h).view(1, s, kv, d).transpose(1, 2)
                q, k = self.rope(q, cos, sin), self.rope(k, cos, sin)
                self.key_cache[i : i + 1, :, start : start + s] = k.half()
                self.value_cache[i : i + 1, :, start : start + s] = v.half()
                keys = self.key_cache[i : i + 1].float()
                values = self.value_cache[i : i + 1].float()
                keys = keys.repeat_interleave(heads // kv, 1)
                values = values.repeat_interleave(heads // kv, 1)
                scores = q @ keys.transpose(-1, -2) * attn.scaling + mask
                a = (scores.softmax(-1) @ values).transpose(1, 2).reshape(1, s, -1)
                x = x + attn.o_proj(a)
                x = x + layer.mlp(layer.post_attention_layernorm(x))
            return self.lm_head(self.model.norm(x))

    return StatefulQwen3().eval(), hf


def theirs(args: argparse.Namespace) -> dict[str, Any]:
    import coremltools as ct
    import numpy as np
    import torch

    workdir = Path(args.workdir)
    start = time.perf_counter()
    module, hf = stateful_module(args.checkpoint, args.context)
    loaded_at = time.perf_counter()
    check = check_against_transformers(module, hf, args.prefill)
    module.key_cache.zero_()
    module.value_cache.zero_()
    checked_at = time.perf_counter()
    cache = module.key_cache.shape
    states = [
        ct.StateType(
            wrapped_type=ct.TensorType(shape=tuple(cache), dtype=np.float16), name=n
        )
        for n in ("key_cache", "value_cache")
    ]
    paths, convert_s = {}, {}
    for name, tokens in (("prefill", args.prefill), ("decode", 1)):
        t0 = time.perf_counter()
        ids = torch.zeros((1, tokens), dtype=torch.int32)
        position = torch.zeros((1,), dtype=torch.int32)
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            traced = torch.jit.trace(module, (ids, position))
            mlmodel = ct.convert(
                traced,
                inputs=[
                    ct.TensorType(name="input_ids", shape=(1, tokens), dtype=np.int32),
                    ct.TensorType(name="position", shape=(1,), dtype=np.int32),
                ],
                outputs=[ct.TensorType(name="logits", dtype=np.float16)],
                states=states,
                compute_precision=ct.precision.FLOAT16,
                minimum_deployment_target=ct.target.iOS18,
                skip_model_load=True,
            )
        paths[name] = workdir / f"theirs-{name}.mlpackage"
        mlmodel.save(str(paths[name]))
        convert_s[name] = round(time.perf_counter() - t0, 2)
        del mlmodel, traced
    t0 = time.perf_counter()
    descriptor = ct.utils.MultiFunctionDescriptor()
    for name, path in paths.items():
        descriptor.add_function(str(path), "main", name)
    descriptor.default_function_name = "prefill"
    out = workdir / "theirs.mlpackage"
    ct.utils.save_multifunction(descriptor, str(out))
    end = time.perf_counter()
    spec = ct.utils.load_spec(str(out))
    return {
        "load_s": round(loaded_at - start, 2),
        "convert_s": convert_s,
        "multifunction_s": round(end - t0, 2),
        "total_s": round(end - start - (checked_at - loaded_at), 2),
        "peak_rss_mb": peak_rss_mb(),
        "package_mb": size_mb(out),
        "packages": 1,
        "ops": proto_function_ops(spec),
        "module_vs_transformers": check,
    }


def check_against_transformers(module, hf, tokens: int) -> float:
    """The stateful module's prefill logits against transformers' on the
    same ids: the largest difference relative to the largest logit (it is
    the same model, or the comparison means nothing)."""
    import torch

    ids = torch.arange(1, tokens + 1, dtype=torch.int32)[None] * 7
    with torch.no_grad():
        got = module(ids, torch.zeros(1, dtype=torch.int32))
        ref = hf(ids.long()).logits
    return round(float((got - ref).abs().max() / ref.abs().max()), 6)


# --- driver -------------------------------------------------------------------------


def run_case(case: str, checkpoint: Path, scratch: Path, args: argparse.Namespace):
    """One path in a child process; a path that fails has `failed`, its
    last error line."""
    arguments = ["--case", case, "--checkpoint", str(checkpoint)]
    arguments += ["--context", str(args.context), "--prefill", str(args.prefill)]
    if case == "split":
        arguments += ["--layers-per-package", str(args.layers_per_package)]
    print(f"llm bench: {case} ...", flush=True)
    try:
        return run_child("llm", arguments, scratch, f"llm {case}")
    except ChildFailed as e:
        return {"failed": e.last_line}


def measure_llm(
    layers: int = 28,
    vocab: int = 151936,
    context: int = 512,
    prefill: int = 64,
    layers_per_package: int = 14,
) -> dict[str, Any]:
    """The checkpoint written once; ours, ours split and coremltools' path
    each in a child process."""
    args = argparse.Namespace(
        context=context, prefill=prefill, layers_per_package=layers_per_package
    )
    with tempfile.TemporaryDirectory(prefix="xdsl-ane-llm-bench-") as scratch:
        checkpoint = Path(scratch) / "checkpoint"
        start = time.perf_counter()
        write_checkpoint(checkpoint, layers, vocab)
        written_s = round(time.perf_counter() - start, 1)
        checkpoint_mb = size_mb(checkpoint)
        cases = {
            case: run_case(case, checkpoint, Path(scratch), args)
            for case in ("ours", "split", "theirs")
        }
    result = {
        "model": f"Qwen3-0.6B shape, {layers} layers, vocabulary {vocab}, random bf16",
        "layers": layers,
        "vocab": vocab,
        "context": context,
        "prefill": prefill,
        "layers_per_package": layers_per_package,
        "checkpoint_mb": checkpoint_mb,
        "checkpoint_write_s": written_s,
        **cases,
    }
    if "total_s" in cases["ours"] and "total_s" in cases["theirs"]:
        result["time_ratio"] = round(
            cases["ours"]["total_s"] / cases["theirs"]["total_s"], 3
        )
    print(report.llm_table(result), flush=True)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=28)
    parser.add_argument("--vocab", type=int, default=151936)
    parser.add_argument("--context", type=int, default=512)
    parser.add_argument("--prefill", type=int, default=64)
    parser.add_argument("--layers-per-package", type=int, default=14)
    parser.add_argument("--output", type=Path, help="instead of results.json")
    parser.add_argument("--case", choices=["ours", "split", "theirs"])
    parser.add_argument("--checkpoint")
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args(argv)
    if args.case:
        if args.case != "split":
            args.layers_per_package = None
        measure = theirs if args.case == "theirs" else ours
        args.output.write_text(json.dumps(measure(args), indent=2) + "\n")
        return 0
    result = measure_llm(
        args.layers, args.vocab, args.context, args.prefill, args.layers_per_package
    )
    if args.output:
        args.output.write_text(json.dumps(result, indent=2) + "\n")
        print(f"wrote {args.output}")
    else:
        report.store_section("llm", result)
    return 0


if __name__ == "__main__":
    sys.exit(main())

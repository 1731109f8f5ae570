"""An LLM inference package at real size, side by side: a Qwen3-0.6B-shaped
checkpoint (random weights, written in the Hugging Face layout by
`save_pretrained`) compiled by `xdsl-ane compile-llm` (one package, and
split with `--layers-per-package`) and through coremltools' path for a
stateful model: a torch module holding the KV cache as registered fp16
buffers updated in place, `torch.jit.trace` for the prefill and the decode
shapes, `ct.convert(..., states=[ct.StateType(...)],
minimum_deployment_target=iOS18)` of each and `save_multifunction` to
share their weights. Compile-and-save time, peak resident memory, package
size and non-const ops per function. Then a Llama-3.2-3B-shaped checkpoint
(random bf16, written tensor by tensor with safetensors and cached under
~/.cache/xdsl-ane-bench) compiled as `compile-llm`'s defaults split it, and
with `--compress lut4`: time, peak RSS, bytes written against the fp16
weights, and the write limit (the same bytes written to the same disk);
and coremltools' stateful path on it under an RSS watchdog (the RSS it
reached when killed, where the machine is too small); and `generate` in
the interpreter on its packages (`large_generate`: prefill time and
tokens/s, issue 42). `--again large_8b` measures a Llama-3.1-8B-shaped
checkpoint the same way (not in the whole run).

    python -m bench.llm [--layers 28] [--vocab 151936] [--context 512]
                       [--prefill 64] [--layers-per-package 14]
                       [--no-large] [--output FILE.json]
    python -m bench.llm --again {large,large_lut4,large_theirs,large_8b,large_generate}

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
from bench.common import (
    ChildFailed,
    function_op_counts,
    memory_total_mb,
    proc_status_mb,
    read_results,
    run_child,
)

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


LLAMA_3_2_3B = dict(
    architectures=["LlamaForCausalLM"],
    model_type="llama",
    hidden_size=3072,
    intermediate_size=8192,
    num_hidden_layers=28,
    num_attention_heads=24,
    num_key_value_heads=8,
    head_dim=128,
    vocab_size=128256,
    max_position_embeddings=131072,
    rms_norm_eps=1e-5,
    rope_theta=500000.0,
    rope_scaling={
        "factor": 32.0,
        "high_freq_factor": 4.0,
        "low_freq_factor": 1.0,
        "original_max_position_embeddings": 8192,
        "rope_type": "llama3",
    },
    tie_word_embeddings=True,
    hidden_act="silu",
    torch_dtype="bfloat16",
)
LLAMA_3_1_8B = {
    **LLAMA_3_2_3B,
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "rope_scaling": {**LLAMA_3_2_3B["rope_scaling"], "factor": 8.0},
    "tie_word_embeddings": False,
}
CACHE = Path.home() / ".cache" / "xdsl-ane-bench"
LARGE = {  # the large checkpoints: their configs and where they are cached
    "3b": (LLAMA_3_2_3B, CACHE / "llama-3.2-3b-random-bf16"),
    "8b": (LLAMA_3_1_8B, CACHE / "llama-3.1-8b-random-bf16"),
}
LARGE_CACHE = LARGE["3b"][1]


def write_large_checkpoint(size: str = "3b") -> Path:
    """A Llama-3.2-3B- (or Llama-3.1-8B-) shaped checkpoint of random bf16
    weights (N(0, 0.02), norms 1), written tensor by tensor with
    safetensors (a shard for the embedding, one per layer and, untied, one
    for the head, as an index names them), so that writing it holds one
    layer; kept under ~/.cache/xdsl-ane-bench between runs (made again
    when its config differs)."""
    import torch
    from safetensors.torch import save_file

    c, directory = LARGE[size]
    config = json.dumps(c, indent=2)
    if (directory / "config.json").is_file() and (
        directory / "config.json"
    ).read_text() == config:
        return directory
    directory.mkdir(parents=True, exist_ok=True)
    h, f, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    q, kv = (
        c["num_attention_heads"] * c["head_dim"],
        c["num_key_value_heads"] * c["head_dim"],
    )
    generator = torch.Generator().manual_seed(0)

    def random(*shape: int):
        return (torch.randn(*shape, generator=generator) * 0.02).to(torch.bfloat16)

    def ones():
        return torch.ones(h, dtype=torch.bfloat16)

    layers = c["num_hidden_layers"]

    def shard(i: int) -> dict[str, Any]:
        if i == 0:
            return {
                "model.embed_tokens.weight": random(v, h),
                "model.norm.weight": ones(),
            }
        if i > layers:
            return {"lm_head.weight": random(v, h)}
        p = f"model.layers.{i - 1}."
        return {
            p + "input_layernorm.weight": ones(),
            p + "post_attention_layernorm.weight": ones(),
            p + "self_attn.q_proj.weight": random(q, h),
            p + "self_attn.k_proj.weight": random(kv, h),
            p + "self_attn.v_proj.weight": random(kv, h),
            p + "self_attn.o_proj.weight": random(h, q),
            p + "mlp.gate_proj.weight": random(f, h),
            p + "mlp.up_proj.weight": random(f, h),
            p + "mlp.down_proj.weight": random(h, f),
        }

    count = layers + 1 + (not c["tie_word_embeddings"])
    weight_map = {}
    for i in range(count):
        name = f"model-{i + 1:05d}-of-{count:05d}.safetensors"
        tensors = shard(i)
        save_file(tensors, str(directory / name), metadata={"format": "pt"})
        weight_map |= dict.fromkeys(tensors, name)
    index = {"metadata": {}, "weight_map": weight_map}
    (directory / "model.safetensors.index.json").write_text(json.dumps(index))
    (directory / "config.json").write_text(config)  # last: the cache is complete
    return directory


SHAPE_NAMES = {"3b": "Llama-3.2-3B", "8b": "Llama-3.1-8B"}


def shape_name(config: dict[str, Any]) -> str:
    """The model whose shape a large checkpoint's config has."""
    for size, (c, _) in LARGE.items():
        if all(config[k] == c[k] for k in ("hidden_size", "num_hidden_layers")):
            return SHAPE_NAMES[size]
    raise ValueError(f"no large checkpoint has hidden size {config['hidden_size']}")


def peak_rss_mb() -> float:
    """This child's peak RSS, imports included: `VmHWM`, the high-water
    mark of its own memory since it started. Not `ru_maxrss`: Linux
    carries that across `execve`, so a child of a parent holding gigabytes
    (the one that wrote the 0.6B checkpoint) would report the parent's."""
    return round(proc_status_mb("VmHWM"), 1)


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
        max_package_size=None,  # one package, as coremltools' (1.4 GB)
    )
    compiled_at = time.perf_counter()
    package.save(out)
    end = time.perf_counter()
    parts = package.parts if split else [package]
    # (a tied model's embed_head package serves two parts)
    compiled = list({id(p.compiled): p.compiled for p in parts}.values())
    ops: dict[str, int] = Counter()
    for model in compiled:
        for function, counts in model.op_counts().items():
            ops[function.removeprefix("embed_")] += sum(counts.values())
    return {
        "compile_s": round(compiled_at - start, 2),
        "save_s": round(end - compiled_at, 2),
        "total_s": round(end - start, 2),
        "peak_rss_mb": peak_rss_mb(),
        "package_mb": size_mb(out),
        "packages": len(compiled),
        "ops": dict(ops),
        "lint": "; ".join(p.compiled.lint.summary() for p in parts[:1]),
    }


def large(args: argparse.Namespace) -> dict[str, Any]:
    """compile-llm of the 3B checkpoint as its defaults split it (and
    with `--compress`): time, the process' peak RSS, the bytes written and
    the write limit: the same bytes written to a file on the same disk
    from one reused buffer, measured after it in this process. Module
    imports (coremltools, which imports torch and scikit-learn where they
    are installed: about 6 s here) come before the clock starts, as in
    `bench.measure`."""
    import os

    import numpy as np

    import xdsl_ane
    from bench.measure import preload

    preload()
    out = Path(args.workdir) / "large"
    cpu = os.times()
    start = time.perf_counter()
    package = xdsl_ane.compile_llm(  # each package written as it is compiled
        args.checkpoint,
        context=args.context,
        prefill=args.prefill,
        compress=args.compress,
        output=out,
    )
    compiled_at = time.perf_counter()
    os.sync()
    end = time.perf_counter()
    cpu_end = os.times()
    rss = peak_rss_mb()
    blobs = [p.stat().st_size for p in out.rglob("weight.bin")]
    written = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    config = json.loads((Path(args.checkpoint) / "config.json").read_text())
    weights = sum(
        2 * int(np.prod(shape))
        for shape in checkpoint_shapes(Path(args.checkpoint)).values()
    )
    del package
    limit_s = write_limit(Path(args.workdir) / "limit.bin", written, direct=False)
    direct_s = write_limit(Path(args.workdir) / "limit.bin", written, direct=True)
    return {
        "model": f"{shape_name(config)} shape, {config['num_hidden_layers']} layers, "
        f"vocabulary {config['vocab_size']}, random bf16",
        "compress": args.compress,
        "compile_and_write_s": round(compiled_at - start, 1),
        "sync_s": round(end - compiled_at, 1),
        "total_s": round(end - start, 1),
        "cpu_s": round(
            cpu_end.user - cpu.user + cpu_end.system - cpu.system, 1
        ),  # of every thread: over total_s, the cores kept busy
        "peak_rss_mb": rss,
        "written_mb": round(written / 2**20, 1),
        "largest_blob_mb": round(max(blobs) / 2**20, 1),
        "fp16_weights_mb": round(weights / 2**20, 1),
        "written_over_fp16_weights": round(written / weights, 4),
        "packages": len(blobs),
        "write_limit_s": round(limit_s, 1),
        "time_over_write_limit": round((end - start) / limit_s, 2),
        "direct_write_s": round(direct_s, 1),
        "time_over_direct_write": round((end - start) / direct_s, 2),
    }


GENERATE_PROMPT = [128000, 791, 6864, 315, 9822, 374]
"""The prompt ids of the generate row (6 tokens: one prefill call)."""
GENERATE_TOKENS = 8


def generate_timing(
    package: Path, prompt: list[int], new_tokens: int
) -> dict[str, Any]:
    """`xdsl-ane generate PACKAGE --prompt-ids ... --max-new-tokens N` in
    this process, timed: reading the packages, the prefill (its call gives
    the first token) and each decode step (each gives one token). Decode
    tokens/s is over the median step; end-to-end tokens/s counts the
    prefill too (not the reading)."""
    import os

    import numpy as np

    from xdsl_ane.api.llm import PackageRunner

    start = time.perf_counter()
    runner = PackageRunner(package)
    read = time.perf_counter()
    times: list[float] = []
    runner.generate(
        prompt, new_tokens, on_token=lambda _: times.append(time.perf_counter())
    )
    steps = np.diff(times)
    return {
        "prompt_tokens": len(prompt),
        "new_tokens": len(times),
        "read_s": round(read - start, 1),
        "prefill_s": round(times[0] - read, 2),
        "decode_step_s": [round(float(s), 3) for s in steps],
        "decode_step_median_s": round(float(np.median(steps)), 3),
        "decode_tokens_per_s": round(1 / float(np.median(steps)), 3),
        "tokens_per_s": round(len(times) / (times[-1] - read), 3),
        # other processes' load on the machine, which the steps share it with
        "load_average": [round(x, 1) for x in os.getloadavg()],
    }


def large_generate(args: argparse.Namespace) -> dict[str, Any]:
    """`generate` in the interpreter on the 3B packages as compile-llm's
    defaults split them (issue 42's target: ≥ 1 token/s): compiled into the
    work directory, then timed by `generate_timing`, with the process' peak
    RSS."""
    import xdsl_ane

    out = Path(args.workdir) / "large"
    xdsl_ane.compile_llm(
        args.checkpoint, context=args.context, prefill=args.prefill, output=out
    )
    config = json.loads((Path(args.checkpoint) / "config.json").read_text())
    row = generate_timing(out, GENERATE_PROMPT, GENERATE_TOKENS)
    return {
        "model": f"{shape_name(config)} shape, {config['num_hidden_layers']} layers, "
        f"vocabulary {config['vocab_size']}, random bf16",
        **row,
        "peak_rss_mb": peak_rss_mb(),
    }


def write_limit(path: Path, nbytes: int, direct: bool) -> float:
    """Seconds to write `nbytes` of random data to `path` from one reused
    64 MiB buffer and sync: through the page cache, or with `direct`
    O_DIRECT writes (the disk's own rate: a buffered write's time also
    counts the kernel's fresh pages, which on this virtual machine varies
    several times over with what was freed before)."""
    import mmap
    import os

    import numpy as np

    buffer = np.frombuffer(mmap.mmap(-1, 1 << 26), np.uint8)  # page-aligned
    buffer[:] = np.random.default_rng(0).integers(0, 256, buffer.size, np.uint8)
    os.sync()
    start = time.perf_counter()
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | (os.O_DIRECT if direct else 0)
    fd = os.open(path, flags, 0o644)
    try:
        done = 0
        while done < nbytes:  # whole buffers: the last is cut below
            done += os.write(fd, buffer)
        os.ftruncate(fd, nbytes)
    finally:
        os.close(fd)
    os.sync()
    seconds = time.perf_counter() - start
    path.unlink()
    return seconds


def checkpoint_shapes(directory: Path) -> dict[str, list[int]]:
    """Each tensor's shape, from the safetensors headers."""
    from safetensors import safe_open

    shapes = {}
    for file in sorted(directory.glob("*.safetensors")):
        with safe_open(str(file), framework="np") as f:
            for name in f.keys():
                shapes[name] = f.get_slice(name).get_shape()
    return shapes


# --- coremltools' stateful path ---------------------------------------------------


def stateful_module(checkpoint: str, context: int):
    """The checkpoint's Qwen3 or Llama as a torch module over (input_ids [1, S],
    position [1]) with the KV cache as buffers key_cache / value_cache
    [L, Hkv, context, D] fp16 written in place at the position; the same
    math as transformers' (RoPE tables gathered at the positions, a mask
    from the position, grouped-query attention)."""
    import torch
    import transformers

    hf = transformers.AutoModelForCausalLM.from_pretrained(
        checkpoint, dtype=torch.float32
    )
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
                q = attn.q_proj(h).view(1, s, heads, d)
                k = attn.k_proj(h).view(1, s, kv, d)
                if hasattr(attn, "q_norm"):  # Qwen3's per-head norms
                    q, k = attn.q_norm(q), attn.k_norm(k)
                q, k = q.transpose(1, 2), k.transpose(1, 2)
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
    from transformers.utils import logging as hf_logging

    # the log's last line says what it was doing if the watchdog stops it
    hf_logging.disable_progress_bar()
    workdir = Path(args.workdir)
    start = time.perf_counter()
    print("loading the checkpoint in transformers (fp32)", flush=True)
    module, hf = stateful_module(args.checkpoint, args.context)
    loaded_at = time.perf_counter()
    print("checking the module against transformers", flush=True)
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
        print(f"converting {name} (torch.jit.trace, ct.convert)", flush=True)
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


LARGE_CASES = ("large", "large_lut4", "large_theirs", "large_8b", "large_generate")


def run_case(case: str, checkpoint: Path, scratch: Path, args: argparse.Namespace):
    """One path in a child process; a path that fails has `failed`, its
    last error line."""
    arguments = ["--case", case, "--checkpoint", str(checkpoint)]
    arguments += ["--context", str(args.context), "--prefill", str(args.prefill)]
    if case == "split":
        arguments += ["--layers-per-package", str(args.layers_per_package)]
    if case == "large_lut4":
        arguments += ["--compress", "lut4"]
    # coremltools' path at 3B may need more memory than the machine has:
    # killed at three quarters of it, the row says where and at what RSS
    limit = 0.75 * memory_total_mb() if case == "large_theirs" else None
    print(f"llm bench: {case} ...", flush=True)
    try:
        return run_child("llm", arguments, scratch, f"llm {case}", limit)
    except ChildFailed as e:
        return {"failed": e.last_line}


def measure_llm(
    layers: int = 28,
    vocab: int = 151936,
    context: int = 512,
    prefill: int = 64,
    layers_per_package: int = 14,
    large: bool = True,
) -> dict[str, Any]:
    """The checkpoint written once; ours, ours split and coremltools' path
    each in a child process; with `large`, compile-llm of the 3B
    checkpoint (cached) with its defaults and with --compress lut4, and
    coremltools' path on it (the 8B row, measured on its own, is kept)."""
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
        if large:
            large_checkpoint = write_large_checkpoint()
            for case in ("large", "large_lut4", "large_theirs", "large_generate"):
                cases[case] = run_case(case, large_checkpoint, Path(scratch), args)
            # the 8B row is measured on its own (`--again large_8b`): kept
            earlier = read_results().get("llm", {}).get("large_8b")
            if earlier is not None:
                cases["large_8b"] = earlier
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
    parser.add_argument(
        "--no-large", action="store_true", help="leave out the 3B checkpoint's rows"
    )
    parser.add_argument("--case", choices=["ours", "split", "theirs", *LARGE_CASES])
    parser.add_argument("--compress")
    parser.add_argument("--checkpoint")
    parser.add_argument("--workdir", type=Path)
    parser.add_argument(
        "--again",
        choices=LARGE_CASES,
        help="measure this row of the 3B checkpoint again (in a child, as the "
        "whole section does) and store it in results.json's llm section; "
        "large_8b: compile-llm's defaults on a Llama-3.1-8B-shaped checkpoint "
        "(16 GB, made once and cached; not part of the whole section)",
    )
    args = parser.parse_args(argv)
    if args.again:
        with tempfile.TemporaryDirectory(prefix="xdsl-ane-llm-bench-") as scratch:
            size = "8b" if args.again == "large_8b" else "3b"
            checkpoint = write_large_checkpoint(size)
            row = run_case(args.again, checkpoint, Path(scratch), args)
        section = read_results().get("llm", {})
        report.store_section("llm", {**section, args.again: row})
        return 0
    if args.case:
        if args.case != "split":
            args.layers_per_package = None
        measure = {
            "theirs": theirs,
            "large_theirs": theirs,
            "large_generate": large_generate,
        }.get(args.case, large if args.case in LARGE_CASES else ours)
        args.output.write_text(json.dumps(measure(args), indent=2) + "\n")
        return 0
    result = measure_llm(
        args.layers,
        args.vocab,
        args.context,
        args.prefill,
        args.layers_per_package,
        large=not args.no_large,
    )
    if args.output:
        args.output.write_text(json.dumps(result, indent=2) + "\n")
        print(f"wrote {args.output}")
    else:
        report.store_section("llm", result)
    return 0


if __name__ == "__main__":
    sys.exit(main())

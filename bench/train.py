"""Fine-tuning at real size: `xdsl-ane compile-train` and `xdsl-ane train`
on a Stories110M-shaped and a Qwen3-0.6B-shaped checkpoint (random weights
from the configs, written in bf16 by transformers' `save_pretrained` and
cached under ~/.cache/xdsl-ane-bench), at sequence 256, batch 1, beside
PyTorch's step of the same model on the same machine and the hand-written
ANE trainer's published step times.

Per checkpoint, each case in a process of its own (`--case`), so that each
peak RSS (`VmHWM`) is its own:

- `compile`: `compile_train(checkpoint, OUT, seq_len=256)` (fp16 kernels,
  written as `xdsl-ane compile-train` writes them): time, the kernels' ops
  (consts excluded) and `step_estimate(..., "m4")`, the estimated step on
  an M4;
- `fp32`, `fp16`: `train(checkpoint, data, OUT, TrainOptions(steps=2,
  seq_len=256, batch=1, precision=...))` in the numpy interpreter; the
  second step is the one reported (the first also compiles the kernels):
  its wall time from the end of the first step to the end of the second
  (forward, backward and AdamW) and its forward + backward alone (the
  StepRecord's tok/s);
- `torch`: transformers' model of the same checkpoint in float32,
  forward + cross-entropy + backward + `torch.optim.AdamW` (the same
  hyper-parameters), two steps on the same tokens, the second reported.

A depth can be capped (`--layers qwen3_0_6b=N`): the interpreted rows then
run a checkpoint of N layers (the same shapes, cached apart) and say so
(`layers_measured`); torch then runs both depths. Nothing is extrapolated.

    python -m bench.train [--models stories110m,qwen3_0_6b] [--layers MODEL=N]
                          [--output FILE.json]
    python -m bench.train --again MODEL.CASE    # one row again, the rest kept

The figures go under `train` in bench/results.json (and the docs are
regenerated), or to `--output`.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import report
from bench.common import (
    ChildFailed,
    git_state,
    proc_status_mb,
    read_results,
    run_child,
    write_atomically,
)
from xdsl_ane.models.configs import QWEN3_0_6B as QWEN3_0_6B_SHAPE

SHAPE = QWEN3_0_6B_SHAPE
SEQ_LEN = 256
BATCH = 1
CHIP = "m4"
CACHE = Path.home() / ".cache" / "xdsl-ane-bench"

STORIES_110M = dict(
    architecture="LlamaForCausalLM",
    hidden_size=768,
    intermediate_size=2048,
    num_hidden_layers=12,
    num_attention_heads=12,
    num_key_value_heads=12,
    vocab_size=32000,
    max_position_embeddings=1024,
    rms_norm_eps=1e-5,
    tie_word_embeddings=False,  # llama2.c's Stories110M has its own head
)
QWEN3_0_6B = dict(  # the named shape compile-model builds, as config.json
    architecture="Qwen3ForCausalLM",
    hidden_size=SHAPE.hidden_size,
    intermediate_size=SHAPE.ffn_size,
    num_hidden_layers=SHAPE.num_layers,
    num_attention_heads=SHAPE.num_heads,
    num_key_value_heads=SHAPE.num_kv_heads,
    head_dim=SHAPE.head_dim,
    vocab_size=SHAPE.vocab_size,
    max_position_embeddings=SHAPE.max_positions,
    rope_theta=SHAPE.rope_theta,
    rms_norm_eps=SHAPE.rms_eps,
    tie_word_embeddings=SHAPE.tied,
)
MODELS = {
    "stories110m": ("Stories110M", STORIES_110M),
    "qwen3_0_6b": ("Qwen3-0.6B", QWEN3_0_6B),
}

HAND_WRITTEN_MS = {"stories110m": 91.0, "qwen3_0_6b": 412.0}
"""The hand-written ANE trainer's published step (M4, sequence 256), from
/work/shared/ANE_FACTS.md ("Facts for training": maderix/ANE's README and
training/README.md): Stories110M with the classifier, softmax and RMSNorm
backward on the ANE; Qwen3-0.6B (28 layers, GQA 16/8)."""

CASES = ("compile", "fp32", "fp16", "torch")


# --- checkpoints ---------------------------------------------------------------------


def checkpoint_path(model: str, layers: int) -> Path:
    return CACHE / f"{model}-{layers}-layers-random-bf16"


def write_checkpoint(model: str, layers: int) -> Path:
    """`model`'s shape at `layers` layers with transformers' random
    initialisation (seed 0), saved in bf16 by `save_pretrained`; kept under
    ~/.cache/xdsl-ane-bench between runs (made again when its config
    differs), written to a temporary directory renamed into place."""
    import shutil

    directory = checkpoint_path(model, layers)
    spec = json.dumps({**MODELS[model][1], "num_hidden_layers": layers}, indent=1)
    marker = directory / "bench-spec.json"
    if marker.is_file() and marker.read_text() == spec:
        return directory
    import torch
    import transformers

    transformers.logging.set_verbosity_error()
    fields = dict(MODELS[model][1], num_hidden_layers=layers)
    architecture = fields.pop("architecture")
    config_class = {
        "LlamaForCausalLM": transformers.LlamaConfig,
        "Qwen3ForCausalLM": transformers.Qwen3Config,
    }[architecture]
    print(f"writing the {model} checkpoint ({layers} layers) to {directory}")
    torch.manual_seed(0)
    hf = getattr(transformers, architecture)(config_class(**fields)).eval()
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{directory.name}.", dir=CACHE))
    hf.to(torch.bfloat16).save_pretrained(tmp)
    (tmp / "bench-spec.json").write_text(spec)
    shutil.rmtree(directory, ignore_errors=True)
    os.replace(tmp, directory)
    return directory


def size_mb(path: Path) -> float:
    return round(
        sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20, 1
    )


def token_file(directory: Path, vocab: int) -> Path:
    """Random token ids (seed 0) for two steps of batch 1."""
    import numpy as np

    path = directory / "tokens.npy"
    rng = np.random.default_rng(0)
    np.save(path, rng.integers(0, vocab, 2 * BATCH * (SEQ_LEN + 1)).astype(np.int32))
    return path


def cpu_s() -> float:
    """The CPU seconds of every thread of this process so far (user and
    system): over a step's wall time, the cores it kept busy; it depends
    less than the wall time on what else the machine runs."""
    t = os.times()
    return t.user + t.system


def peak_rss_mb() -> float:
    """This process' peak RSS so far (`VmHWM`: its own, imports included;
    not `ru_maxrss`, which Linux carries over from the parent)."""
    return round(proc_status_mb("VmHWM"), 1)


# --- the cases (each in a child process) --------------------------------------------


def compile_case(args: argparse.Namespace) -> dict[str, Any]:
    """`xdsl-ane compile-train` of the checkpoint (fp16 kernels, written)
    and the estimated step on the chip."""
    from xdsl_ane.api.train import compile_train, step_estimate

    start = time.perf_counter()
    made = compile_train(
        args.checkpoint, Path(args.workdir) / "kernels", seq_len=SEQ_LEN
    )
    seconds = time.perf_counter() - start
    estimate = step_estimate(made.kernels, made.plan, CHIP, BATCH)
    kernels = made.plan["kernels"]
    return {
        "total_s": round(seconds, 2),
        "kernels": len(kernels),
        "ops_total": sum(k["ops"] for k in kernels),
        "ops": {k["name"]: k["ops"] for k in kernels},
        "calls_per_step": len(made.plan["calls"]),
        "parameters": made.plan["parameters"],
        "written_mb": size_mb(Path(args.workdir) / "kernels"),
        "peak_rss_mb": peak_rss_mb(),
        "estimate": {
            "chip": CHIP,
            "total_ms": round(estimate.total_ms, 1),
            "kernels_ms": round(estimate.kernels_ms, 1),
            "optimizer_ms": round(estimate.optimizer_ms, 1),
            "cpu_ms": round(estimate.cpu_ms, 1),
            "calls": estimate.calls,
        },
    }


def interpreted_case(args: argparse.Namespace) -> dict[str, Any]:
    """Two steps of `train` in the interpreter; the second is reported:
    from the first step's end to the second's (its forward, backward and
    AdamW), and its forward + backward alone (the record's tok/s)."""
    from xdsl_ane.api.train import TrainOptions, train

    workdir = Path(args.workdir)
    config = json.loads((Path(args.checkpoint) / "config.json").read_text())
    data = token_file(workdir, config["vocab_size"])
    marks: list[float] = []
    cpu: list[float] = []
    peaks: list[float] = []

    def on_step(record: Any) -> None:
        marks.append(time.perf_counter())
        cpu.append(cpu_s())
        peaks.append(peak_rss_mb())
        print(record.line(), flush=True)

    options = TrainOptions(steps=2, seq_len=SEQ_LEN, batch=BATCH, precision=args.case)
    start = time.perf_counter()
    result = train(args.checkpoint, data, workdir / "out", options, on_step=on_step)
    end = time.perf_counter()
    records = result.records
    return {
        "layers_measured": config["num_hidden_layers"],
        "precision": args.case,
        "step_s": round(marks[1] - marks[0], 2),
        "step_cpu_s": round(cpu[1] - cpu[0], 2),
        "load_average": round(os.getloadavg()[0], 2),  # the machine's, 1 min
        "forward_backward_s": round(SEQ_LEN * BATCH / records[1].tokens_per_s, 2),
        "first_step_s": round(marks[0] - start, 2),  # with the kernels' compile
        "save_s": round(end - marks[1], 2),
        "tokens_per_s": round(records[1].tokens_per_s, 2),
        "losses": [r.loss for r in records],
        "skipped": [r.skipped for r in records],
        "loss_scale": records[1].loss_scale,
        "peak_rss_mb": peaks[1],  # through the second step
        "process_peak_rss_mb": peak_rss_mb(),  # with the save of OUT
    }


def torch_case(args: argparse.Namespace) -> dict[str, Any]:
    """transformers' model of the checkpoint in float32: forward, mean
    cross-entropy, backward and `torch.optim.AdamW` with `train`'s
    defaults (lr 1e-4, betas 0.9/0.999, eps 1e-8, no weight decay), on
    the same two sequences; the second step reported."""
    import numpy as np
    import torch
    import transformers

    transformers.logging.set_verbosity_error()
    workdir = Path(args.workdir)
    hf = transformers.AutoModelForCausalLM.from_pretrained(
        args.checkpoint, dtype=torch.float32
    )
    hf.train()
    ids = np.load(token_file(workdir, hf.config.vocab_size))
    optimizer = torch.optim.AdamW(
        hf.parameters(), lr=1e-4, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0
    )
    losses, marks, cpu = [], [time.perf_counter()], [cpu_s()]
    for k in range(2):
        row = ids[k * (SEQ_LEN + 1) : (k + 1) * (SEQ_LEN + 1)]
        batch = torch.tensor(row[None], dtype=torch.long)
        logits = hf(input_ids=batch[:, :-1]).logits
        loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1)
        )
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(float(loss.detach()))
        marks.append(time.perf_counter())
        cpu.append(cpu_s())
        print(f"torch step {k + 1}: loss {losses[-1]:.6f}", flush=True)
    return {
        "layers_measured": hf.config.num_hidden_layers,
        "step_s": round(marks[2] - marks[1], 2),
        "step_cpu_s": round(cpu[2] - cpu[1], 2),
        "load_average": round(os.getloadavg()[0], 2),  # the machine's, 1 min
        "first_step_s": round(marks[1] - marks[0], 2),
        "losses": losses,
        "threads": torch.get_num_threads(),
        "peak_rss_mb": peak_rss_mb(),
    }


# --- driver -------------------------------------------------------------------------


def run_case(case: str, checkpoint: Path, scratch: Path, label: str) -> dict[str, Any]:
    """One case in a child process; a case that fails has `failed`, its
    last error line."""
    arguments = ["--case", case, "--checkpoint", str(checkpoint)]
    print(f"train bench: {label} ...", flush=True)
    start = time.perf_counter()
    try:
        row = run_child("train", arguments, scratch, f"train {label}")
    except ChildFailed as e:
        row = {"failed": e.last_line}
    print(f"train bench: {label}: {time.perf_counter() - start:.0f} s", flush=True)
    return row


def relative(a: list[float], b: list[float]) -> float:
    return round(max(abs(x - y) / abs(y) for x, y in zip(a, b)), 7)


def measure_model(
    model: str, cases: tuple[str, ...], layers: int | None, scratch: Path
) -> dict[str, Any]:
    """`cases` of `model`: compile on the whole checkpoint; the interpreted
    steps at `layers` (all when None); torch at every depth measured."""
    name, shape = MODELS[model]
    full = shape["num_hidden_layers"]
    depth = layers or full
    checkpoint = write_checkpoint(model, full)
    row: dict[str, Any] = {}
    for case in cases:
        on = checkpoint
        if case in ("fp32", "fp16") and depth != full:
            on = write_checkpoint(model, depth)
        row[case] = run_case(case, on, scratch, f"{model} {case}")
        if case == "torch" and depth != full:
            row["torch_at_layers_measured"] = run_case(
                case, write_checkpoint(model, depth), scratch, f"{model} torch {depth}"
            )
    return row


def describe(model: str, row: dict[str, Any]) -> dict[str, Any]:
    """The row's fixed fields and the ratios between its cases."""
    name, shape = MODELS[model]
    described = {
        "model": f"{name} shape ({shape['architecture']}: hidden "
        f"{shape['hidden_size']}, {shape['num_hidden_layers']} layers, "
        f"{shape['num_attention_heads']}/{shape['num_key_value_heads']} heads, "
        f"FFN {shape['intermediate_size']}, vocabulary {shape['vocab_size']}, "
        f"{'tied' if shape['tie_word_embeddings'] else 'untied'}), random bf16",
        "layers": shape["num_hidden_layers"],
        "checkpoint_mb": size_mb(checkpoint_path(model, shape["num_hidden_layers"])),
        "hand_written_ms": HAND_WRITTEN_MS[model],
        **{k: v for k, v in row.items() if k in CASES or k.startswith("torch_")},
    }
    fp32 = row.get("fp32", {})
    same_depth = (
        row.get("torch_at_layers_measured")
        if fp32.get("layers_measured") != shape["num_hidden_layers"]
        else row.get("torch")
    )
    if same_depth and "losses" in fp32 and "losses" in same_depth:
        # the same model on the same tokens: the losses agree, or the
        # timings compare different work
        described["fp32_loss_vs_torch"] = relative(fp32["losses"], same_depth["losses"])
        if "losses" in row.get("fp16", {}):
            described["fp16_loss_vs_torch"] = relative(
                row["fp16"]["losses"], same_depth["losses"]
            )
        for case in ("fp32", "fp16"):
            if "step_s" in row.get(case, {}):
                described[f"{case}_over_torch"] = round(
                    row[case]["step_s"] / same_depth["step_s"], 2
                )
    compiled = row.get("compile", {})
    if "estimate" in compiled:
        described["estimate_over_hand_written"] = round(
            compiled["estimate"]["total_ms"] / HAND_WRITTEN_MS[model], 2
        )
    return described


def parse_layers(text: list[str]) -> dict[str, int]:
    layers = {}
    for item in text:
        model, _, count = item.partition("=")
        if model not in MODELS or not count.isdigit():
            raise SystemExit(
                f"--layers {item}: expected MODEL=N, MODEL one of {list(MODELS)}"
            )
        layers[model] = int(count)
    return layers


def section(models: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="seconds"
        ),
        **git_state(),
        "cores": os.cpu_count(),
        "seq_len": SEQ_LEN,
        "batch": BATCH,
        "chip": CHIP,
        "models": models,
    }


CASE_RUNNERS = {
    "compile": compile_case,
    "fp32": interpreted_case,
    "fp16": interpreted_case,
    "torch": torch_case,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument(
        "--layers",
        action="append",
        default=[],
        help="MODEL=N: run the interpreted steps on N layers of MODEL",
    )
    parser.add_argument("--output", type=Path, help="instead of results.json")
    parser.add_argument("--case", choices=CASES)
    parser.add_argument("--checkpoint")
    parser.add_argument("--workdir", type=Path)
    parser.add_argument(
        "--again",
        help="MODEL.CASE (CASE one of compile, fp32, fp16, torch): measure this "
        "row again and store it in results.json's train section, the rest kept",
    )
    args = parser.parse_args(argv)
    if args.case:
        row = CASE_RUNNERS[args.case](args)
        write_atomically(args.output, json.dumps(row, indent=2) + "\n")
        return 0
    layers = parse_layers(args.layers)
    with tempfile.TemporaryDirectory(prefix="xdsl-ane-train-bench-") as scratch:
        if args.again:
            model, _, case = args.again.partition(".")
            if model not in MODELS or case not in CASES:
                parser.error(f"--again {args.again}: expected MODEL.CASE")
            earlier = read_results().get("train", {}).get("models", {})
            row = measure_model(model, (case,), layers.get(model), Path(scratch))
            kept = {k: v for k, v in earlier.get(model, {}).items() if k not in row}
            models = {**earlier, model: describe(model, {**kept, **row})}
        else:
            models = {}
            for model in args.models.split(","):
                row = measure_model(model, CASES, layers.get(model), Path(scratch))
                models[model] = describe(model, row)
    result = section(models)
    print(report.train_table(result), flush=True)
    if args.output:
        write_atomically(args.output, json.dumps(result, indent=2) + "\n")
        print(f"wrote {args.output}")
    else:
        report.store_section("train", result)
    return 0


if __name__ == "__main__":
    sys.exit(main())

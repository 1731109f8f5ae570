"""`xdsl-ane compile-train` and `xdsl-ane train`: argument parsing and
printing over `xdsl_ane.api.train`."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from xdsl_ane.errors import XdslAneError


def add_train_commands(commands: Any) -> None:
    """Registers `compile-train` and `train` on the CLI's subparsers."""
    from xdsl_ane.tools.options import add_chip_argument, add_output_arguments

    compile_train = commands.add_parser(
        "compile-train",
        help="compile the kernels of one training step for a checkpoint",
        description="Writes the directory OUT: every kernel of one training step "
        "of the checkpoint's decoder (dynamic weights, packed I/O, [1, C, 1, S]; "
        "with --lora, the frozen weights constants and the adapters dynamic) "
        "as NAME.mlpackage with its manifest, and plan.json, the step as data "
        "(kernel calls in order, CPU operations, the optimizer, the loss scale).",
    )
    compile_train.add_argument("checkpoint", help="Hugging Face model directory")
    add_output_arguments(compile_train, "the kernels' directory")
    add_shape_arguments(compile_train)
    add_lora_arguments(compile_train)
    add_chip_argument(compile_train, "the chip the step's estimate is for")
    compile_train.set_defaults(handler=command_compile_train)

    train = commands.add_parser(
        "train",
        help="fine-tune a checkpoint in the interpreter (kernels as the ANE runs them)",
        description="Fine-tunes a Hugging Face checkpoint on token ids (.npy, "
        ".bin of uint16) or text (.txt, through the checkpoint's tokenizer): "
        "sequence i is tokens[i*(S+1):(i+1)*(S+1)], step k takes sequences "
        "k*B..k*B+B-1 (gradient accumulation), the loss is the mean "
        "cross-entropy over B*S targets, AdamW as torch.optim.AdamW (weight "
        "decay on tensors of rank >= 2). Writes OUT, a Hugging Face checkpoint "
        "(float32 weights, the tokenizer copied) that from_pretrained and "
        "compile-llm read, with the optimizer state for --resume.",
    )
    train.add_argument("checkpoint", help="Hugging Face model directory")
    train.add_argument("--data", required=True, help="token ids (.npy, .bin) or .txt")
    add_output_arguments(train, "the trained checkpoint's directory")
    add_shape_arguments(train)
    add = train.add_argument
    add("--steps", type=int, help="optimizer steps (default: one pass over the data)")
    add("--batch", type=int, default=1, help="sequences per step (default 1)")
    add("--lr", type=float, default=1e-4, help="learning rate (default 1e-4)")
    add("--weight-decay", type=float, default=0.0, help="AdamW's (default 0)")
    add("--betas", default="0.9,0.999", help="AdamW's B1,B2 (default 0.9,0.999)")
    add("--eps", type=float, default=1e-8, help="AdamW's (default 1e-8)")
    add("--warmup", type=int, default=0, help="linear warm-up steps (default 0)")
    add(
        "--schedule",
        choices=("constant", "cosine"),
        default="constant",
        help="the learning rate after the warm-up, as transformers' schedules "
        "(default: constant)",
    )
    add("--grad-clip", type=float, help="clip the gradients' global norm to C")
    add(
        "--loss-scale",
        default="auto",
        help="fp16: auto (dynamic, from 256 x layers; the default) or a fixed number",
    )
    add_lora_arguments(train)
    add(
        "--merge",
        action="store_true",
        help="with --lora: write the merged checkpoint, not the PEFT adapter",
    )
    add("--kernels", help="a compile-train directory (default: compile here)")
    add("--save-every", type=int, help="save OUT every N steps")
    add("--resume", help="continue from a save of train (weights and optimizer)")
    add(
        "--seed",
        type=int,
        default=0,
        help="LoRA's initialisation (default 0; the data is read in order)",
    )
    add("--log", help="write one JSON line per step to FILE.jsonl")
    add("--plot", help="write the loss curve to FILE.png or .svg")
    add_chip_argument(train, "the chip the step's estimate is for")
    train.set_defaults(handler=command_train)


def add_lora_arguments(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("--lora", type=int, metavar="R", help="train LoRA adapters of rank R only")
    add("--lora-alpha", type=float, metavar="A", help="LoRA's alpha (default: R)")
    add(
        "--lora-targets",
        default="q_proj,v_proj",
        metavar="NAMES",
        help="the modules LoRA adapts, by name (default: q_proj,v_proj)",
    )
    add(
        "--compress",
        metavar="MODE",
        help="with --lora: compress the frozen weights, the kernels' constants "
        "(int8, int4, lut4, ... as compile's --compress; the classifier stays "
        "as it is; default: none)",
    )


def lora_targets(text: str) -> tuple[str, ...]:
    return tuple(t for t in text.split(",") if t)


def add_shape_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--seq-len", type=int, default=256, help="tokens per sequence (default 256)"
    )
    parser.add_argument(
        "--precision",
        choices=("fp16", "fp32"),
        default="fp16",
        help="the kernels' precision: fp16 as the ANE runs them (default), or "
        "fp32, the exact reference",
    )


def betas(text: str) -> tuple[float, float]:
    try:
        b1, b2 = (float(v) for v in text.split(","))
    except ValueError:
        raise XdslAneError(
            f"--betas {text}: expected two numbers B1,B2 (as 0.9,0.999)"
        ) from None
    return b1, b2


def command_compile_train(args: argparse.Namespace) -> int:
    from xdsl_ane.ane.chips import get_chip
    from xdsl_ane.api.train import compile_train, step_estimate
    from xdsl_ane.progress import Progress

    chip = get_chip(args.chip)  # an unknown chip fails before the work
    result = compile_train(
        args.checkpoint,
        args.output,
        seq_len=args.seq_len,
        precision=args.precision,
        force=args.force,
        progress=Progress(),
        lora=args.lora,
        lora_alpha=args.lora_alpha,
        lora_targets=lora_targets(args.lora_targets),
        compress=args.compress,
    )
    plan = result.plan
    ops = sum(k["ops"] for k in plan["kernels"])
    print(
        f"{args.checkpoint}: {plan['family']}, {plan['layers']} layers, sequence "
        f"{plan['seq_len']}, {plan['precision']}: {len(plan['kernels'])} kernels "
        f"({ops} ops), {len(plan['calls'])} kernel calls a step"
    )
    print("  " + step_estimate(result.kernels, plan, chip).summary())
    print(f"wrote {args.output}")
    return 0


def command_train(args: argparse.Namespace) -> int:
    from xdsl_ane.ane.chips import get_chip
    from xdsl_ane.api.train import TrainOptions, train

    chip = get_chip(args.chip)  # an unknown chip fails before the work
    options = TrainOptions(
        steps=args.steps,
        seq_len=args.seq_len,
        batch=args.batch,
        lr=args.lr,
        weight_decay=args.weight_decay,
        betas=betas(args.betas),
        eps=args.eps,
        warmup=args.warmup,
        schedule=args.schedule,
        grad_clip=args.grad_clip,
        precision=args.precision,
        loss_scale=args.loss_scale,
        save_every=args.save_every,
        seed=args.seed,
        lora=args.lora,
        lora_alpha=args.lora_alpha,
        lora_targets=lora_targets(args.lora_targets),
        merge=args.merge,
        compress=args.compress,
    )
    result = train(
        args.checkpoint,
        args.data,
        args.output,
        options,
        kernels=args.kernels,
        resume=args.resume,
        log=args.log,
        plot=args.plot,
        force=args.force,
        on_step=lambda record: print(record.line(), flush=True),
        chip=chip,
    )
    skipped = sum(r.skipped for r in result.records)
    note = f" ({skipped} skipped for fp16 overflow)" if skipped else ""
    if result.estimate is not None:
        print(result.estimate.summary())
    print(f"wrote {result.output}{note}")
    if args.log:
        print(f"wrote {args.log}", file=sys.stderr)
    return 0

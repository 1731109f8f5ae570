"""`xdsl-ane compile-llm` and `xdsl-ane generate`: their arguments and what
they print, over `xdsl_ane.api.llm` (compile_llm, PackageRunner)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from xdsl_ane.errors import XdslAneError
from xdsl_ane.models.configs import EXPERTS
from xdsl_ane.models.llm_packages import parse_size
from xdsl_ane.outputs import check_outputs
from xdsl_ane.tools.options import (
    add_chip_argument,
    add_compress_arguments,
    compress_options,
    first_difference,
)

# --- the commands -------------------------------------------------------------------

if TYPE_CHECKING:
    from xdsl_ane.api.text import Sampling


def listing_families(parser: argparse.ArgumentParser) -> None:
    """`{families}` in the parser's description becomes the families of the
    architecture table when its help is shown (read then: the table's module
    is not loaded to build the command line)."""
    format_help = parser.format_help

    def with_families() -> str:
        from xdsl_ane.models.hf_config import FAMILIES

        names = sorted({family.name for family in FAMILIES.values()})
        description = parser.description or ""
        parser.description = description.replace("{families}", ", ".join(names))
        return format_help()

    parser.format_help = with_families  # type: ignore[method-assign]


def add_llm_commands(commands: Any) -> None:
    """Registers `compile-llm` and `generate` on the CLI's subparsers."""
    add_compile_llm_command(commands)
    add_generate_command(commands)


def add_compile_llm_command(commands: Any) -> None:
    from xdsl_ane.tools.options import add_output_arguments

    compile_llm_ = commands.add_parser(
        "compile-llm",
        help="compile a Hugging Face checkpoint to a stateful prefill/decode package",
        description="Reads a Hugging Face checkpoint directory (config.json and "
        "safetensors) of a decoder of one of the families {families} and writes one "
        "multifunction package (prefill and decode sharing one weight blob, the "
        "KV cache as Core ML state) and OUT.manifest.json, the calling protocol "
        "a runtime needs; with --layers-per-package a directory of packages. A "
        "vision-language checkpoint (LLaVA, Idefics3/SmolVLM; the torch extra) "
        "gives its language model's packages, the embedding a step of its own, "
        "and a vision package beside them (OUT.vision.mlpackage, or "
        "OUT/vision.mlpackage) for generate --image.",
    )
    listing_families(compile_llm_)
    compile_llm_.add_argument("checkpoint", help="Hugging Face model directory")
    add_output_arguments(
        compile_llm_,
        "the package: OUT.mlpackage and OUT.manifest.json, or a directory with "
        "--layers-per-package",
    )
    compile_llm_.add_argument(
        "--context",
        type=int,
        default=512,
        help="KV cache length: prompt and generated tokens (default: %(default)s)",
    )
    compile_llm_.add_argument(
        "--prefill",
        type=int,
        default=64,
        help="tokens per prefill call (default: %(default)s)",
    )
    compile_llm_.add_argument(
        "--chunk",
        type=int,
        default=None,
        help="rows per embedding/LM-head chunk (default: the ANE's 16384)",
    )
    compile_llm_.add_argument(
        "--argmax", action="store_true", help="output the next token, not logits"
    )
    compile_llm_.add_argument(
        "--validate", action="store_true", help="reload with coremltools' MIL loader"
    )
    compile_llm_.add_argument(
        "--no-fp16-check",
        dest="fp16_check",
        action="store_false",
        help="skip running the fp32 program on the calibration prompts "
        "(--calibration) to keep its hidden states in fp16's range by exact "
        "rescaling (default: the check runs)",
    )
    compile_llm_.add_argument(
        "--layers-per-package",
        type=int,
        default=None,
        metavar="K",
        help="split into packages embed, layers of at most K each, head "
        "(OUT is then a directory)",
    )
    compile_llm_.add_argument(
        "--max-package-size",
        default="1GB",
        metavar="SIZE",
        help="split a model whose weights pass SIZE into chained packages of at "
        "most SIZE each, as --layers-per-package does (bytes, or KB, MB, GB: "
        "powers of 1024; none: no limit; default: %(default)s)",
    )
    compile_llm_.add_argument(
        "--experts",
        choices=EXPERTS,
        default="dense",
        help="a mixture-of-experts model: dense computes every expert on every "
        "token, weighted by the routing (zero for the experts not picked); "
        "routed cuts the program at each layer with experts and writes their "
        "weights beside it (OUT.experts.bin): decode reads only the experts "
        "each token picks (default: %(default)s)",
    )
    add_image_size_argument(compile_llm_)
    add_compress_arguments(compile_llm_)
    compile_llm_.add_argument(
        "--calibration",
        metavar="FILE",
        help="the calibration prompts of the fp16 check and of --compress w8a8 "
        "or auto:BITS (whose prompts run through prefill, their last tokens "
        "through decode): a .txt file of one prompt per line, tokenized with the "
        "checkpoint's tokenizer.json, or token ids as .npz (each array a prompt, "
        "or prompts by row) (default: two prompts of --prefill random ids, "
        "seed 0)",
    )
    add_chip_argument(compile_llm_, "the chip of the summary's estimate")
    compile_llm_.set_defaults(handler=command_compile_llm)


def add_image_size_argument(command: Any) -> None:
    command.add_argument(
        "--image-size",
        type=int,
        default=None,
        metavar="N",
        help="a vision-language checkpoint whose processor picks the image size "
        "per image (Qwen2-VL, Qwen2.5-VL): the side of the square images its "
        "vision package takes, a multiple of 28 (default: 448; others take their "
        "checkpoint's size)",
    )


def add_generate_command(commands: Any) -> None:

    generate = commands.add_parser(
        "generate",
        help="generate text or token ids with a compile-llm package (interpreter)",
        description="Runs the package's prefill on the prompt (once per "
        "--prefill tokens of it) and its decode once per further token in the "
        "numpy interpreter, the KV cache carried between calls, until the "
        "checkpoint's end-of-sequence token (generation_config.json's "
        "eos_token_id) or --max-new-tokens. --prompt TEXT is tokenized with the "
        "checkpoint's tokenizer, which compile-llm copies beside the package "
        "(tokenizer.json through the tokenizers package: pip install "
        "'xdsl-ane[text]'), and the new text is printed as it is generated; "
        "--prompt-ids prints the prompt and the new token ids. Greedy by "
        "default; --temperature, --top-k or --top-p sample instead, the logits "
        "filtered as transformers' generate(do_sample=True) filters them and "
        "the token drawn by numpy's Generator(--seed), so a seed repeats a run "
        "here but not transformers' draws. With --reference it also runs "
        "transformers' greedy generate on the checkpoint and fails (exit 1) "
        "where the tokens differ.",
    )
    generate.add_argument(
        "package", help="OUT.mlpackage (or the OUT directory) written by compile-llm"
    )
    prompt = generate.add_mutually_exclusive_group(required=True)
    prompt.add_argument(
        "--prompt",
        metavar="TEXT",
        help="the prompt as text, tokenized as transformers' tokenizer(TEXT)",
    )
    prompt.add_argument(
        "--prompt-ids", metavar="IDS", help="the prompt: comma-separated token ids"
    )
    generate.add_argument(
        "--chat",
        action="store_true",
        help="with --prompt: TEXT is a user message, put in the checkpoint's "
        "chat template as transformers' apply_chat_template("
        "add_generation_prompt=True) does",
    )
    generate.add_argument(
        "--image",
        metavar="IMAGE",
        action="append",
        help="an image (PNG, JPEG, ...) for a vision-language package, repeated "
        "for several in order: processed as the checkpoint's image processor does "
        "and put where the prompt's image tokens are, one per image (with --chat: "
        "where the chat template puts them; with --prompt and no image token: "
        "first; with --prompt-ids: the ids hold one image token per image, each "
        "expanded to its image's feature rows) (default: none, a text prompt)",
    )
    generate.add_argument(
        "--show-ids",
        action="store_true",
        help="with --prompt: also print the prompt's and the new token ids",
    )
    generate.add_argument(
        "--max-new-tokens",
        type=int,
        default=16,
        metavar="N",
        help="at most N tokens after the prompt, as transformers' "
        "max_new_tokens (default: %(default)s)",
    )
    generate.add_argument(
        "--temperature",
        type=float,
        metavar="T",
        help="sample, the logits divided by T (> 0; off: greedy)",
    )
    generate.add_argument(
        "--top-k",
        type=int,
        metavar="K",
        help="sample from the K most likely tokens (0: all; off: greedy)",
    )
    generate.add_argument(
        "--top-p",
        type=float,
        metavar="P",
        help="sample from the fewest most likely tokens whose probability "
        "reaches P (in (0, 1]; off: greedy)",
    )
    generate.add_argument(
        "--seed",
        type=int,
        metavar="S",
        help="seed of numpy's Generator, which draws the sampled tokens "
        "(off: a fresh seed each run)",
    )
    generate.add_argument(
        "--reference",
        metavar="CHECKPOINT",
        help="also run transformers on the checkpoint (greedy, stopping at the "
        "same end-of-sequence tokens; with --image, on the same pixels) and "
        "compare",
    )
    generate.set_defaults(handler=command_generate)


def command_compile_llm(args: Any) -> int:
    from xdsl_ane.ane.chips import get_chip
    from xdsl_ane.api import manifest_path
    from xdsl_ane.api.llm import LlmPackageSet, check_split_output
    from xdsl_ane.api.llm_compile import compile_llm
    from xdsl_ane.api.text import TEXT_FILES

    get_chip(args.chip)  # an unknown chip fails before the work
    output = Path(args.output)
    limit = (
        None
        if args.max_package_size.strip().lower() == "none"
        else parse_size(args.max_package_size)
    )

    def check(split: bool, reason: str | None) -> None:
        """The outputs, once the split is known (before the compile)."""
        if split:
            check_split_output(output, reason)
        outputs = [output] if split else [output, manifest_path(output, "mlpackage")]
        if not split:  # the copies of the text files beside it, the vision package
            outputs += [
                output.with_name(f"{output.stem}.{name}")
                for name in TEXT_FILES + vision_outputs(args.checkpoint)
                if name.startswith("vision.") or (Path(args.checkpoint) / name).exists()
            ]
        inputs = [args.checkpoint, *([args.calibration] if args.calibration else [])]
        check_outputs(outputs, args.force, inputs)

    if args.layers_per_package is not None:  # known before reading anything
        check(True, f"--layers-per-package {args.layers_per_package}")
    package = compile_llm(
        args.checkpoint,
        context=args.context,
        prefill=args.prefill,
        chunk=args.chunk,
        argmax=args.argmax,
        validate=args.validate,
        layers_per_package=args.layers_per_package,
        max_package_size=limit,
        fp16_check=args.fp16_check,
        calibration=args.calibration,
        experts=args.experts,
        image_size=args.image_size,
        on_plan=check,
        output=output,
        force=args.force,
        **compress_options(args),
    )
    split = isinstance(package, LlmPackageSet)
    print(package.summary(chip=args.chip))
    record = package.manifest_record
    if split:
        states = ", ".join(
            f"{p['name']} {name} {state['shape']}"
            for p in record["packages"]
            for name, state in p["states"].items()
            if name.endswith("key_cache")
        )
    else:
        states = ", ".join(f"{k} {v['shape']}" for k, v in record["states"].items())
    print(
        f"  llm: {record['family']}, vocabulary {record['vocab_size']}, context "
        f"{record['context']}, prefill {record['prefill']}, "
        f"{len(record['head_chunks'])} head chunk(s), "
        + ("key/value states per package: " if split else "states ")
        + states
    )
    if split:
        files = len({p["path"] for p in record["packages"]})
        print(f"  split: {package.reason}: {files} packages")
        print(f"  wrote {output}/ ({files} packages, manifest.json)")
    else:
        print(f"  wrote {output} and {manifest_path(output, 'mlpackage')}")
    if package.vision is not None:
        print(f"  {vision_line(package.vision, output if split else output.parent)}")
        print(f"  vision {package.vision.estimate_line(args.chip)}")
    if package.text_files:
        where = "into it" if split else f"beside it ({output.stem}.NAME)"
        eos = ids_text(record["eos_token_id"]) or "none"
        print(
            f"  text: copied {', '.join(package.text_files)} {where}; "
            f"end-of-sequence tokens: {eos}"
        )
    if args.validate:
        print("  validated: coremltools' MIL loader rebuilt both functions and states")
    print(f"  {fp16_line(record['fp16'])}")
    return 0


def vision_outputs(checkpoint: str) -> tuple[str, ...]:
    """The files a vision-language checkpoint adds beside one package
    (those of its processor files it has are kept by the caller); none for
    a text model or a checkpoint whose config.json does not read (the
    compile names that problem)."""
    import json

    from xdsl_ane.api.vlm import PROCESSOR_FILES, VISION_PACKAGE
    from xdsl_ane.models.vision_language import VISION_FAMILIES

    try:
        config = json.loads((Path(checkpoint) / "config.json").read_text())
        architectures = config.get("architectures") or []
    except (OSError, ValueError, AttributeError):
        return ()
    if not any(str(a) in VISION_FAMILIES for a in list(architectures)):
        return ()
    return (
        f"{VISION_PACKAGE}.mlpackage",
        f"{VISION_PACKAGE}.manifest.json",
        *PROCESSOR_FILES,
    )


def vision_line(vision: Any, directory: Path) -> str:
    """What the vision package of a vision-language checkpoint holds."""
    r = vision.record
    height, width = r["image_size"]
    return (
        f"vision: wrote {directory / r['path']} ({r['family']}: {height}x{width} "
        f"pixels -> {r['image_tokens']} image tokens of {r['hidden_size']}, in "
        f"place of token {r['image_token_id']})"
    )


def fp16_line(fp16: dict[str, Any]) -> str:
    """What the fp16 check found, in one line."""
    from xdsl_ane.models.calibration import stream_name

    if not fp16["checked"]:
        return "fp16: not checked (--no-fp16-check)"
    maxima = fp16["largest_per_layer"]
    largest = max(maxima)
    where = (
        f"largest hidden state {largest:.4g} ({stream_name(maxima.index(largest))}) "
        f"over {fp16['prompts']} calibration prompts"
    )
    changes = []
    if fp16["stream_scale"] != 1.0:
        changes.append(
            f"the residual stream carried x 2^{int(np.log2(fp16['stream_scale']))}"
        )
    if fp16["norm_input_scales"]:
        changes.append(
            f"{sum(s != 1.0 for s in fp16['norm_input_scales'])} norm inputs divided "
            "by powers of two"
        )
    if not changes:
        return f"fp16: {where}, within range"
    return f"fp16: {where}: {' and '.join(changes)} (outputs unchanged)"


def parse_ids(text: str) -> list[int]:
    try:
        ids = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise XdslAneError(
            f"--prompt-ids {text}: expected integers like 1,2,3"
        ) from None
    if not ids:
        raise XdslAneError("--prompt-ids: no token ids")
    return ids


def sampling_options(args: Any) -> Sampling | None:
    from xdsl_ane.api.text import Sampling

    """The sampling the options ask for (None: greedy)."""
    given = {
        "temperature": args.temperature,
        "top_k": args.top_k,
        "top_p": args.top_p,
    }
    given = {k: v for k, v in given.items() if v is not None}
    if not given:
        if args.seed is not None:
            raise XdslAneError(
                f"--seed {args.seed}: applies only when sampling (--temperature, "
                "--top-k or --top-p)"
            )
        return None
    if args.reference:
        raise XdslAneError(
            "--reference: compares greedy generation; leave out --temperature, "
            "--top-k and --top-p"
        )
    return Sampling(**given, seed=args.seed)


def command_generate(args: Any) -> int:
    import sys

    from xdsl_ane.api.llm import PackageRunner, check_reference, reference_generate

    if args.chat and args.prompt is None:
        raise XdslAneError("--chat: applies only with --prompt TEXT")
    if args.show_ids and args.prompt is None:
        raise XdslAneError("--show-ids: applies only with --prompt TEXT")
    sampling = sampling_options(args)
    runner = PackageRunner(args.package)
    tokenizer = None
    vision = None
    if args.image is not None:
        from xdsl_ane.api.images import read_image
        from xdsl_ane.api.vlm import VisionRunner

        vision = VisionRunner(runner)
        images = [vision.prepare(read_image(path)) for path in args.image]
    if args.prompt is not None:
        tokenizer = runner.tokenizer()
        if vision is not None:
            prompt = vision.text_prompt(tokenizer, args.prompt, args.chat, images)
        elif args.chat:
            prompt = tokenizer.encode_chat([{"role": "user", "content": args.prompt}])
        else:
            prompt = tokenizer.encode(args.prompt)
        what = "--prompt"
    else:
        prompt, what = parse_ids(args.prompt_ids), "--prompt-ids"
        if vision is not None:
            beside = runner.text_files.get("tokenizer.json")
            tokenizer_ = runner.tokenizer() if beside is not None else None
            prompt = vision.expand_ids(prompt, images, tokenizer_)
    rows = None
    if vision is not None:
        runner.check_prompt(prompt, args.max_new_tokens, what, sampling)
        rows = vision.rows(prompt, vision.image_features(images))
    if args.reference:
        check_reference(args.reference, runner.record)
    runner.check_prompt(prompt, args.max_new_tokens, what, sampling)
    show_ids = tokenizer is None or args.show_ids or bool(args.reference)
    if show_ids:
        print(f"prompt: {ids_text(prompt)}", flush=True)
    on_token = None
    if tokenizer is not None:
        stream = tokenizer.stream()

        def on_token(token: int) -> None:
            sys.stdout.write(stream.push(token))
            sys.stdout.flush()

    tokens, logits = runner.generate(
        prompt,
        args.max_new_tokens,
        stop=runner.eos,
        sampling=sampling,
        on_token=on_token,
        rows=rows,
        blocks=None if vision is None else vision.blocks(prompt),
        rope=None if vision is None else vision.rope_positions(prompt),
    )
    if tokenizer is not None:
        print(stream.finish(), flush=True)
    if show_ids:
        print(f"tokens: {ids_text(tokens)}")
    if not args.reference:
        return 0
    ref_tokens, ref_logits = reference_generate(
        args.reference,
        prompt,
        args.max_new_tokens,
        runner.eos,
        None if vision is None else vision.reference_inputs(images, prompt),
    )
    print(f"reference: {ids_text(ref_tokens)}")
    if logits:
        diff = max(float(np.abs(a - b).max()) for a, b in zip(logits, ref_logits))
        print(f"largest logit difference: {diff:.3g}")
    difference = first_difference(tokens, ref_tokens)
    if difference is None:
        return 0
    i, mine, theirs = difference
    raise XdslAneError(
        f"{args.package}: new token {i + 1} (position {len(prompt) + i}) differs "
        f"from the reference: {mine}, transformers {theirs}"
    )


def ids_text(ids: list[int]) -> str:
    return ",".join(map(str, ids))

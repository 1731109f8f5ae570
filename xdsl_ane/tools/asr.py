"""`xdsl-ane compile-asr` and `xdsl-ane transcribe`: their arguments and
what they print, over `xdsl_ane.api.asr` (compile_asr, AsrRunner)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from xdsl_ane.errors import XdslAneError, option
from xdsl_ane.tools.options import (
    add_chip_argument,
    add_compress_arguments,
    add_output_arguments,
    compress_options,
    first_difference,
)


def add_asr_commands(commands: Any) -> None:
    """Registers `compile-asr` and `transcribe` on the CLI's subparsers."""
    compile_asr = commands.add_parser(
        "compile-asr",
        help="compile a Whisper checkpoint to encoder and decoder packages",
        description="Reads a Hugging Face Whisper checkpoint directory "
        "(config.json, safetensors, generation_config.json) and writes the "
        "directory OUT: encoder.mlpackage (log-mel features of a 30 s window to "
        "the encoder's output; the features themselves are computed by the "
        "runtime in numpy), decoder.mlpackage (prefill, which also computes the "
        "cross-attention keys and values into state once per window, and decode, "
        "the self-attention KV cache as state), the checkpoint's tokenizer and "
        "generation files, and manifest.json.",
    )
    compile_asr.add_argument("checkpoint", help="Hugging Face Whisper model directory")
    add_output_arguments(compile_asr, "the directory of packages")
    compile_asr.add_argument(
        "--context",
        type=int,
        default=None,
        help="decoder cache positions: forced prompt and new tokens per window "
        "(default: the checkpoint's max_target_positions)",
    )
    compile_asr.add_argument(
        "--prefill",
        type=int,
        default=4,
        help="tokens per prefill call: at least the forced prompt (default: "
        "%(default)s)",
    )
    compile_asr.add_argument(
        "--max-package-size",
        default="1GB",
        metavar="SIZE",
        help="split an encoder whose weights pass SIZE into chained packages of "
        "layers of at most SIZE each; a decoder past it is refused (bytes, or KB, "
        "MB, GB; none: no limit; default: %(default)s)",
    )
    compile_asr.add_argument(
        "--validate", action="store_true", help="reload with coremltools' MIL loader"
    )
    add_compress_arguments(compile_asr)
    # the token table is the embedding and the head: stored once, compressed
    compile_asr.set_defaults(compress_embedding="same")
    add_chip_argument(compile_asr, "the chip of the summary's estimate")
    compile_asr.set_defaults(handler=command_compile_asr)

    transcribe = commands.add_parser(
        "transcribe",
        help="transcribe a WAV file with a compile-asr directory (interpreter)",
        description="Reads a 16-bit PCM WAV file (any rate, resampled to 16 kHz; "
        "channels mixed down), computes Whisper's log-mel features and runs the "
        "encoder and the greedy decoder in the numpy interpreter, with the "
        "forced prompt, suppressed tokens and timestamp rules of transformers' "
        "generate; audio over 30 s in consecutive windows as its sequential long "
        "form does. Prints the text.",
    )
    transcribe.add_argument("package", help="the directory compile-asr wrote")
    transcribe.add_argument("audio", help="a 16-bit PCM WAV file")
    transcribe.add_argument(
        "--language",
        metavar="L",
        help="the language code (en, de, ...) of a multilingual checkpoint "
        "(default: detected as transformers detects it)",
    )
    transcribe.add_argument(
        "--task",
        choices=("transcribe", "translate"),
        default=None,
        help="the task token forced after the language: translate gives "
        "English text (default: the checkpoint's forced tokens, else transcribe "
        "after a given language)",
    )
    transcribe.add_argument(
        "--max-new-tokens",
        type=int,
        default=None,
        metavar="N",
        help="at most N tokens per window after the forced prompt (default: as "
        "many as the decoder's context holds)",
    )
    transcribe.add_argument(
        "--show-ids",
        action="store_true",
        help="also print the new token ids (tokens: a,b,c)",
    )
    transcribe.add_argument(
        "--reference",
        metavar="CHECKPOINT",
        help="also run transformers' generate on the checkpoint and the same "
        "samples, and fail (exit 1) naming the first token that differs",
    )
    transcribe.set_defaults(handler=command_transcribe)


def command_compile_asr(args: Any) -> int:
    from xdsl_ane.ane.chips import get_chip
    from xdsl_ane.api.asr import compile_asr
    from xdsl_ane.models.llm_packages import parse_size
    from xdsl_ane.outputs import check_outputs

    get_chip(args.chip)  # an unknown chip fails before the work
    output = Path(args.output)
    if output.suffix == ".mlpackage":
        raise XdslAneError(
            f"{output}: compile-asr writes a directory of packages (encoder and "
            "decoder); name it without .mlpackage"
        )
    check_outputs([output], args.force, [args.checkpoint])
    limit = (
        None
        if args.max_package_size.strip().lower() == "none"
        else parse_size(args.max_package_size)
    )
    if args.compress is None and args.compress_embedding == "same":
        args.compress_embedding = "none"  # (this command's default)
    package = compile_asr(
        args.checkpoint,
        context=args.context,
        prefill=args.prefill,
        max_package_size=limit,
        validate=args.validate,
        output=output,
        force=args.force,
        **compress_options(args),
    )
    print(package.summary(chip=args.chip))
    record = package.record
    states = ", ".join(
        f"{name} {state['shape']}"
        for name, state in record["decoder"]["states"].items()
    )
    print(
        f"  asr: whisper, {record['mels']} mel bins, {record['encoder_layers']} "
        f"encoder and {record['decoder_layers']} decoder layers, vocabulary "
        f"{record['vocab_size']}, context {record['context']}, states {states}"
    )
    print("  front end: log-mel features in numpy in the runtime")
    if args.validate:
        print("  validated: coremltools' MIL loader rebuilt both packages")
    limit = option("max_package_size", args.max_package_size)
    for what in ("encoder", "decoder"):
        parts = record[what]["parts"]
        if len(parts) > 1:
            print(
                f"  split: the {what}'s weights pass {limit}: "
                f"{len(parts)} chained packages of layers "
                + ", ".join(
                    f"{first}-{end - 1}" for first, end in (p["layers"] for p in parts)
                )
            )
    every = [*record["encoder"]["parts"], *record["decoder"]["parts"]]
    packages = ", ".join(p["path"] for p in every)
    print(f"  wrote {output}/ ({packages}, manifest.json)")
    return 0


def command_transcribe(args: Any) -> int:
    from xdsl_ane.api.asr import AsrRunner, check_reference, reference_transcribe
    from xdsl_ane.models.audio import read_wav
    from xdsl_ane.tools.llm import ids_text

    runner = AsrRunner(args.package)
    samples = read_wav(args.audio)
    if args.language is not None:
        runner.tokens.language_id(args.language)  # checked before the work
    if args.task is not None:
        runner.tokens.task_id(args.task)
    if args.reference:
        check_reference(args.reference, runner.record)
    tokens = runner.transcribe(samples, args.language, args.max_new_tokens, args.task)
    has_tokenizer = (Path(args.package) / "tokenizer.json").is_file()
    if has_tokenizer:
        print(runner.text(tokens).strip(), flush=True)
    if args.show_ids or args.reference or not has_tokenizer:
        print(f"tokens: {ids_text(tokens)}", flush=True)
    if not args.reference:
        return 0
    # (without --max-new-tokens, as many as the package's context holds,
    # which transformers bounds by max_target_positions instead)
    limit = args.max_new_tokens or runner.record["context"] - len(runner.prompt)
    expected = reference_transcribe(
        args.reference, samples, args.language, limit, args.task
    )
    print(f"reference: {ids_text(expected)}")
    difference = first_difference(tokens, expected)
    if difference is None:
        return 0
    i, mine, theirs = difference
    raise XdslAneError(
        f"{args.package}: token {i + 1} differs from the reference: {mine}, "
        f"transformers {theirs}"
    )

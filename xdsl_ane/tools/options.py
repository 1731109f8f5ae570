"""The options several `xdsl-ane` commands share, described alike by
each: `-o/--output` and `--force`, `--chip` (estimate, compile,
compile-llm) and `--compress` with its head and embedding settings
(compile, compile-model, compile-llm: the options of
`mil-compress-weights`)."""

from __future__ import annotations

import argparse

from xdsl_ane.ane.chips import CHIPS, DEFAULT_CHIP
from xdsl_ane.errors import XdslAneError


def add_output_arguments(
    parser: argparse.ArgumentParser, what: str, required: bool = True
) -> None:
    """`-o/--output OUT` and `--force`, described alike by every command."""
    parser.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        required=required,
        help=f"where to write {what}",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="replace an existing OUT that xdsl-ane wrote (never an input, nor "
        "a directory xdsl-ane did not write)",
    )


def add_chip_argument(parser: argparse.ArgumentParser, what: str) -> None:
    """`--chip NAME` (checked by `chips.get_chip`, whose error lists the
    known chips in one line, rather than by argparse's choices)."""
    parser.add_argument(
        "--chip",
        default=DEFAULT_CHIP,
        metavar="{" + ",".join(CHIPS) + "}",
        help=f"{what} (default: %(default)s)",
    )


def add_compress_arguments(parser: argparse.ArgumentParser) -> None:
    """`--compress MODE[:GRANULARITY[:GROUP]]` and the head and embedding
    settings (the options of `mil-compress-weights`)."""
    parser.add_argument(
        "--compress",
        metavar="MODE[:GRANULARITY[:GROUP]]",
        help="compress the weights of matmuls and convs: int8, int4, lut2, lut3, "
        "lut4, lut6 or lut8, per-tensor, per-channel, per-grouped-channel (lut) or per-block "
        "(int) (iOS18); or w8a8: int8 weights and the activations they multiply "
        "int8 too, their scales from the calibration; or auto:BITS: each weight's "
        "mode chosen by its measured effect on the outputs on the calibration, "
        "an average of at most BITS bits per weight (default: none, fp16 weights)",
    )
    parser.add_argument(
        "--compress-head",
        default="same",
        metavar="MODE",
        help="the LM head's mode with --compress: same, none or a mode "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--compress-embedding",
        default="none",
        metavar="MODE",
        help="the embedding's mode with --compress: none, same or a mode "
        "(default: %(default)s)",
    )


def compress_options(args: argparse.Namespace) -> dict[str, str | None]:
    """`compile`'s keyword arguments for the --compress options; the head
    and embedding settings need --compress."""
    if args.compress is None:
        for flag, value, default in (
            ("--compress-head", args.compress_head, "same"),
            ("--compress-embedding", args.compress_embedding, "none"),
        ):
            if value != default:
                raise XdslAneError(f"{flag} {value}: applies only with --compress")
        return {}
    return {
        "compress": args.compress,
        "compress_head": args.compress_head,
        "compress_embedding": args.compress_embedding,
    }


def first_difference(tokens: list[int], expected: list[int]):
    """None where `tokens` are the reference's `expected` (printing "same
    tokens"), else (the index of the first that differs, ours, theirs),
    "none" for a token past the end of its list."""
    differ = [i for i, (a, b) in enumerate(zip(tokens, expected)) if a != b]
    if not differ and len(tokens) == len(expected):
        print("same tokens")
        return None
    i = differ[0] if differ else min(len(tokens), len(expected))
    mine = tokens[i] if i < len(tokens) else "none"
    theirs = expected[i] if i < len(expected) else "none"
    return i, mine, theirs

"""`--chip`, as the commands that estimate share it (estimate, compile,
compile-llm)."""

from __future__ import annotations

import argparse

from xdsl_ane.chips import CHIPS, DEFAULT_CHIP


def add_chip_argument(parser: argparse.ArgumentParser, what: str) -> None:
    """`--chip NAME` (checked by `chips.get_chip`, whose error lists the
    known chips in one line, rather than by argparse's choices)."""
    parser.add_argument(
        "--chip",
        default=DEFAULT_CHIP,
        metavar="{" + ",".join(CHIPS) + "}",
        help=f"{what} (default: %(default)s)",
    )

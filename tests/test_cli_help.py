"""The command's own description: `--version`, a description for every
subcommand, defaults shown, and one wording of `-o` and `--force`."""

from __future__ import annotations

import argparse
from importlib.metadata import version

import pytest
from cli_helpers import cli

from xdsl_ane.tools.cli import build_parser


def subcommands() -> dict[str, argparse.ArgumentParser]:
    (commands,) = [
        a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)
    ]
    return dict(commands.choices)


def test_version():
    with pytest.raises(SystemExit) as exit_:
        cli("--version")
    assert exit_.value.code == 0


def test_version_text(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--version"])
    assert capsys.readouterr().out == f"xdsl-ane {version('xdsl-ane')}\n"


@pytest.mark.parametrize("name", sorted(subcommands()))
def test_every_subcommand_describes_itself(name):
    parser = subcommands()[name]
    assert parser.description, f"{name} has no description"
    text = parser.format_help()
    options = {o: a for a in parser._actions for o in a.option_strings}
    for option, action in options.items():
        if action.default not in (None, False, argparse.SUPPRESS):
            assert action.help and "default" in action.help, option
    # one wording of the output options in every command that has them
    if "-o" in options:
        assert options["-o"].metavar == "OUT" and "--output" in options
        assert options["-o"].help.startswith("where to write ")
        assert (
            options["--force"].help
            == subcommands()["compile"]._option_string_actions["--force"].help
        )
    assert "usage: xdsl-ane" in text


def test_llm_defaults_in_help():
    compile_llm = " ".join(subcommands()["compile-llm"].format_help().split())
    assert "(default: 512)" in compile_llm and "(default: 64)" in compile_llm
    assert "--max-new-tokens N" in subcommands()["generate"].format_help()

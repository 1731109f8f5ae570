"""MIL names (`backend/names.py`) follow coremltools' sanitizer: its
reserved words are all in `RESERVED`, and a name spelled by
`mil_identifier` is the one `NameSanitizer.sanitize_name` spells."""

from __future__ import annotations

import ast
import inspect
import textwrap

import pytest

from xdsl_ane.backend.names import RESERVED, mil_identifier
from xdsl_ane.backend.weights import quiet_coremltools

with quiet_coremltools():
    from coremltools.converters.mil.mil.passes.defs.preprocess import NameSanitizer

OWN_WORDS = {"const", "BLOBFILE", "inf", "nan"}
"""The words of MIL text that are not names, reserved here besides
coremltools' own."""


def coremltools_reserved() -> set[str]:
    """The `reserved_names` list literal inside `sanitize_name`."""
    source = textwrap.dedent(inspect.getsource(NameSanitizer.sanitize_name))
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Assign)
            and any(
                isinstance(t, ast.Name) and t.id == "reserved_names"
                for t in node.targets
            )
            and isinstance(node.value, ast.List)
        ):
            return {ast.literal_eval(e) for e in node.value.elts}
    raise AssertionError("NameSanitizer.sanitize_name has no reserved_names list")


def test_reserved_words_are_coremltools_and_mil_texts():
    theirs = coremltools_reserved()
    assert "state" in theirs and "fp16" in theirs  # the list was found
    assert theirs <= RESERVED
    assert RESERVED - theirs == OWN_WORDS


@pytest.mark.parametrize(
    "name", sorted(coremltools_reserved()) + ["x.y", "0abc", "a-b c", "fp16_1"]
)
def test_identifiers_are_spelled_as_coremltools_spells_them(name):
    sanitizer = NameSanitizer(prefix="var_")
    assert mil_identifier(name) == sanitizer.sanitize_name(name)

"""`xdsl_ane.errors.first_line`, the one helper every layer uses to keep a
foreign exception's message to one line."""

from __future__ import annotations

from xdsl.utils.exceptions import VerifyException

from xdsl_ane.errors import first_line, internal_error


def test_the_first_non_blank_line_stripped():
    assert first_line(ValueError("\n\n  bad input  \nmore detail")) == "bad input"
    assert first_line(ValueError("  bad input  "), typed=True) == (
        "ValueError: bad input"
    )


def test_a_verifier_message_gives_the_reason_not_the_header():
    e = VerifyException(
        "Operation does not verify: operand x has shape (2, 3)\n\n%0 = ..."
    )
    assert first_line(e) == "operand x has shape (2, 3)"
    assert first_line(e, typed=True) == ("VerifyException: operand x has shape (2, 3)")


def test_an_empty_message_is_the_type_name():
    assert first_line(AssertionError()) == "AssertionError"
    assert first_line(AssertionError(" \n "), typed=True) == "AssertionError"


def test_internal_errors_name_the_type_and_the_line():
    e = internal_error("compile", KeyError("w"))
    assert str(e).endswith("(please report it): KeyError: 'w'")
    assert str(internal_error("run", AssertionError())).endswith(": AssertionError")

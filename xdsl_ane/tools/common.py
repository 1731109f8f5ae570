"""Shared plumbing of the `xdsl-ane` commands, under the names the tools use:
errors kept to one line (`xdsl_ane.errors`), outputs written atomically
(`xdsl_ane.outputs`), IR files read (`frontend.mlir`), pass pipelines built
and applied (`passes.driver`), weights and inputs loaded (`frontend.arrays`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from xdsl_ane.errors import (  # noqa: F401 (the tools' names for them)
    XdslAneError,
    XdslAneInternalError,
    first_line,
    internal_error,
    one_line,
    reported,
)
from xdsl_ane.outputs import (  # noqa: F401 (the tools' names for them)
    atomic_output,
    check_output,
    check_outputs,
    replace,
    save_npz,
)

if TYPE_CHECKING:
    from xdsl_ane.frontend.arrays import load_arrays  # noqa: F401
    from xdsl_ane.frontend.mlir import (  # noqa: F401
        check_string_literals,
        one_line_parse_error,
        parse_module,
        parse_module_text,
    )
    from xdsl_ane.passes.driver import (  # noqa: F401
        all_passes,
        apply_passes,
        apply_pipeline,
        check_pass_names,
        make_context,
        parse_pipeline,
        unverified_op,
        verify,
    )

_READERS = ("check_string_literals", "one_line_parse_error", "parse_module")
_READERS += ("parse_module_text",)
_DRIVER = ("all_passes", "apply_passes", "apply_pipeline", "check_pass_names")
_DRIVER += ("make_context", "parse_pipeline", "unverified_op", "verify")


def __getattr__(name: str) -> Any:
    """The names of `frontend.arrays`, `frontend.mlir` and `passes.driver`,
    imported on first use: `xdsl-ane --help` loads no dialect or pass."""
    if name == "load_arrays":
        from xdsl_ane.frontend import arrays as module
    elif name in _READERS:
        from xdsl_ane.frontend import mlir as module
    elif name in _DRIVER:
        from xdsl_ane.passes import driver as module
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(module, name)
    globals()[name] = value
    return value


def add_output_arguments(parser, what: str, required: bool = True) -> None:
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

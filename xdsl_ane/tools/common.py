"""Shared plumbing of the `xdsl-ane` commands, under the names the tools use:
errors kept to one line (`xdsl_ane.errors`), outputs written atomically
(`xdsl_ane.outputs`), IR files read (`frontend.mlir`), pass pipelines built
and applied (`passes.driver`), weights and inputs loaded (`frontend.arrays`)."""

from xdsl_ane.errors import (  # noqa: F401 (the tools' names for them)
    XdslAneError,
    XdslAneInternalError,
    first_line,
    internal_error,
    one_line,
    reported,
)
from xdsl_ane.frontend.arrays import load_arrays  # noqa: F401
from xdsl_ane.frontend.mlir import (  # noqa: F401
    check_string_literals,
    one_line_parse_error,
    parse_module,
    parse_module_text,
)
from xdsl_ane.outputs import (  # noqa: F401 (the tools' names for them)
    atomic_output,
    check_output,
    check_outputs,
    replace,
    save_npz,
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

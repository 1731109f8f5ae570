"""The op reference, `docs/ops.md`, generated from the op definitions: every
rlx and mil op with its operands, results and properties (their types, and
which are optional), and the first paragraph of its own docstring (an op
without one is an error, so that no op reads as its base class).

    python -m xdsl_ane.tools.op_reference [-o OUT.md]   (default: docs/ops.md)
    python -m xdsl_ane.tools.op_reference --check       (fails if docs/ops.md is stale)
"""

from __future__ import annotations

import argparse
import inspect
import sys
from pathlib import Path

from xdsl.dialects.builtin import (
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
)
from xdsl.ir import Dialect, Operation
from xdsl.irdl import (
    AnyOf,
    BaseAttr,
    OptOperandDef,
    OptPropertyDef,
    ParamAttrConstraint,
    VarOperandDef,
)

from xdsl_ane.errors import XdslAneError

DOCUMENT = Path(__file__).resolve().parents[2] / "docs" / "ops.md"


def meaning(op: type[Operation]) -> str:
    """The first paragraph of the op's own docstring, on one line."""
    # inspect.getdoc would fall back to a base class's text, which describes
    # the family, not the op
    own = op.__dict__.get("__doc__")
    if not own or not own.strip():
        raise XdslAneError(f"{op.name} ({op.__qualname__}) has no docstring of its own")
    paragraph = inspect.cleandoc(own).split("\n\n")[0]
    return " ".join(paragraph.split()).replace("|", "\\|")


def constraint_text(constr: object) -> str:
    """`i64`, `bool`, `f32`, `array<i64>`, `string`, ... for a property's
    constraint (its xDSL spelling when it is none of these)."""
    if isinstance(constr, AnyOf):
        return " or ".join(constraint_text(c) for c in constr.attr_constrs)
    if isinstance(constr, BaseAttr):
        if constr.attr is FloatAttr:
            return "float"
        if constr.attr is IntegerAttr:
            return "integer"
        if constr.attr is StringAttr:
            return "string"
        return constr.attr.name
    if isinstance(constr, ParamAttrConstraint):
        params = [getattr(p, "attr", None) for p in constr.param_constrs]
        if constr.base_attr is IntegerAttr and len(params) == 2:
            width = params[1]
            if isinstance(width, IntegerType):
                return "bool" if width.width.data == 1 else f"i{width.width.data}"
        if constr.base_attr is DenseArrayBase and isinstance(params[0], IntegerType):
            return f"array<i{params[0].width.data}>"
        if constr.base_attr is FloatAttr:
            inner = constr.param_constrs[1]
            name = getattr(getattr(inner, "attr", None), "name", "float")
            return name.removeprefix("builtin.")
    return str(constr)


def operand_text(name: str, definition: object) -> str:
    if isinstance(definition, OptOperandDef):
        return f"`{name}`?"
    if isinstance(definition, VarOperandDef):
        return f"`{name}`…"
    return f"`{name}`"


def op_rows(dialect: Dialect) -> list[str]:
    rows = [
        "| op | operands | results | properties | meaning |",
        "|---|---|---|---|---|",
    ]
    for op in sorted(list(dialect.operations), key=lambda o: o.name):
        definition = op.get_irdl_definition()
        operands = ", ".join(operand_text(n, d) for n, d in definition.operands)
        results = ", ".join(f"`{n}`" for n, _ in definition.results)
        properties = ", ".join(
            f"`{name}`{'?' if isinstance(p, OptPropertyDef) else ''}: "
            f"{constraint_text(p.constr)}"
            for name, p in definition.properties.items()
            if name != "operandSegmentSizes"
        )
        rows.append(
            f"| `{op.name}` | {operands or '–'} | {results or '–'} | "
            f"{properties or '–'} | {meaning(op)} |"
        )
    return rows


def document() -> str:
    from xdsl_ane.dialects.mil import MIL
    from xdsl_ane.dialects.rlx import RLX

    lines = [
        "# Op reference",
        "",
        "Generated from the op definitions by `python -m xdsl_ane.tools.op_reference`",
        "(a test checks it is current). `x?` is an optional operand or property,",
        "`x…` a variadic operand. The meaning is the first paragraph of the op's",
        "docstring and states the defaults of rlx's optional properties (mil's are",
        "MIL's); the rules every op follows are in `docs/DESIGN.md`.",
        "",
    ]
    for title, dialect in (("rlx", RLX), ("mil", MIL)):
        count = len(list(dialect.operations))
        lines += [f"## {title} ({count} ops)", "", *op_rows(dialect), ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m xdsl_ane.tools.op_reference",
        description="Writes the op reference of the rlx and mil dialects.",
    )
    parser.add_argument(
        "-o", "--output", type=Path, default=DOCUMENT, help="default: docs/ops.md"
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; fail if the output file is not what would be written",
    )
    args = parser.parse_args(argv)
    try:
        text = document()
    except XdslAneError as e:
        print(f"op_reference: error: {e}", file=sys.stderr)
        return 1
    if args.check:
        if not args.output.is_file() or args.output.read_text() != text:
            print(
                f"op_reference: error: {args.output} is stale: run "
                "python -m xdsl_ane.tools.op_reference",
                file=sys.stderr,
            )
            return 1
        return 0
    args.output.write_text(text)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Running passes: the context of every registered dialect, `xdsl-opt`-style
pipeline specs (unknown passes and options named with the closest known
ones), passes applied as an xDSL `PassPipeline` with one-line errors that
name the op's `file:line:col` and the pass, and verification that names
the failing op. `compile_pipeline.py` runs `xdsl_ane.compile`'s pipeline
through these."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from contextlib import ExitStack

from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.ir import Operation
from xdsl.passes import ModulePass, PassPipeline
from xdsl.universe import Universe
from xdsl.utils.arg_spec import parse_pipeline as parse_pass_specs
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException

from xdsl_ane.diagnostics import did_you_mean
from xdsl_ane.errors import XdslAneError, first_line, internal_error
from xdsl_ane.locations import location
from xdsl_ane.progress import NO_PROGRESS, Progress


def make_context() -> Context:
    """A context that knows every dialect of the environment (xDSL's own and
    those registered through `xdsl.universe`, including rlx and mil), the
    mil dialect's canonicalization patterns registered."""
    from xdsl_ane.passes.canonicalization import register

    register()
    ctx = Context()
    for name, factory in Universe.get_multiverse().all_dialects.items():
        ctx.register_dialect(name, factory)
    return ctx


LOCATION = re.compile(r"^(\S+:\d+:\d+): ")
"""A diagnostic that starts with `file:line:col: `."""


def verify(module: builtin.ModuleOp, name: str) -> None:
    """Verifies `module`; the error names the failing op's `file:line:col`
    where it was read from a file, else `name`."""
    try:
        module.verify()
    except DiagnosticException as e:
        failing = unverified_op(module)
        at = location(failing) if failing is not None else None
        raise XdslAneError(f"{at or name}: {first_line(e)}") from None


def unverified_op(module: builtin.ModuleOp) -> Operation | None:
    """The innermost op of `module` that does not verify on its own."""
    found = None
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
        except DiagnosticException:
            found = op
            if not op.regions:
                return op
    return found


def all_passes() -> dict[str, Callable]:
    return dict(Universe.get_multiverse().all_passes)


def parse_pipeline(spec: str) -> PassPipeline:
    """The passes of an `xdsl-opt`-style pipeline spec; a malformed spec, an
    unknown pass or a bad option is one line naming the spec."""
    try:
        check_pass_names(spec)
        return PassPipeline.parse_spec(all_passes(), spec)
    except XdslAneError:
        raise
    except ArgSpecParseError as e:  # a BaseException in xDSL
        lines = [ln for ln in str(e).splitlines() if ln.strip()]
        position = next((ln for ln in lines if ln.startswith("pass-pipeline:")), "")
        column = position.rsplit(":", 1)[-1] if position else "?"
        message = lines[-1].strip() if lines else "malformed"
        raise XdslAneError(
            f"pass pipeline '{spec}': column {column}: {message}"
        ) from None
    except Exception as e:
        raise XdslAneError(f"pass pipeline '{spec}': {first_line(e)}") from None


def check_pass_names(spec: str) -> None:
    """Fails on an unknown pass or option of `spec`, naming the closest
    known ones."""
    available = all_passes()
    for p in parse_pass_specs(spec):
        if p.name not in available:
            raise XdslAneError(
                f"pass pipeline '{spec}': unknown pass '{p.name}'"
                f"{did_you_mean(p.name, available)}"
            )
        options = [
            f.name.replace("_", "-") for f in dataclasses.fields(available[p.name]())
        ]
        for key in p.parameters:
            if key.replace("_", "-") not in options:
                known = ", ".join(options) or "none"
                raise XdslAneError(
                    f"pass pipeline '{spec}': {p.name} has no option '{key}'"
                    f"{did_you_mean(key.replace('_', '-'), options)} (its options: "
                    f"{known})"
                )


def apply_pipeline(
    module: builtin.ModuleOp,
    spec: str | None,
    ctx: Context | None = None,
    source: str | None = None,
) -> None:
    """Applies an `xdsl-opt`-style pass pipeline to `module` in place. Errors
    name `source` (the input file) and the failing pass."""
    if not spec:
        return
    ctx = ctx or make_context()
    apply_passes(
        module, [(p.name, p) for p in parse_pipeline(spec).passes], ctx, source
    )
    verify(module, f"{source + ': ' if source else ''}after '{spec}'")


def apply_passes(
    module: builtin.ModuleOp,
    passes: Sequence[tuple[str, ModulePass]],
    ctx: Context,
    source: str | None = None,
    progress: Progress = NO_PROGRESS,
) -> None:
    """Applies `passes` in order as one xDSL `PassPipeline`, each pass a
    step of `progress`; each comes with the name its errors carry
    (`ane-pipeline` for the passes of the pipeline pass). An `XdslAneError`
    a pass raises (a compile's lint failure) is its message as it is."""
    prefix = f"{source}: " if source else ""
    running: list[tuple[str, ModulePass]] = []
    step = ExitStack()

    def between(_done: ModulePass | None, _module, following: ModulePass | None):
        step.close()  # the pass before is done
        if following is not None:
            running.append(passes[len(running)])
            step.enter_context(progress.step(f"pass {following.name}"))

    try:
        with step:
            PassPipeline(tuple(p for _, p in passes), between).apply(ctx, module)
    except DiagnosticException as e:
        # A pass names the op's `file:line:col` first where it knows it.
        name = running[-1][0]
        message = first_line(e)
        located = LOCATION.match(message)
        at = f"{located.group(1)}: " if located else prefix
        message = message[located.end() :] if located else message
        if not message.startswith(name):
            message = f"{name}: {message}"
        raise XdslAneError(at + message) from None
    except (MemoryError, XdslAneError):
        raise
    except Exception as e:
        raise internal_error(f"{prefix}pass {running[-1][1].name}", e) from e

"""`xdsl-ane estimate` and `xdsl_ane.estimate`: the placement and latency
estimate (`xdsl_ane.estimator`) of a compiled model, or of anything
`compile` takes, compiled on the way with the default pipeline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from xdsl_ane.ane.chips import DEFAULT_CHIP, Chip, get_chip
from xdsl_ane.errors import XdslAneError, option, reported
from xdsl_ane.estimator import Estimate, estimate_functions
from xdsl_ane.estimator import estimate as estimate_compiled


def estimate(
    source: Any,
    chip: str | Chip = DEFAULT_CHIP,
    weights: Any = None,
    pipeline: str | None = None,
) -> Estimate:
    """The estimate of `source` on `chip`: a compiled model (`CompiledModel`,
    `LlmPackage`, `LlmPackageSet`, or the path of an `.mlpackage`, a
    compile-llm output, a `--emit proto` / `mil-text` directory or a
    `.mil`), or a program `compile` takes (an `.mlir`, a `.pt2`, a
    `builtin.ModuleOp`, a torch program), compiled with `pipeline` (default
    `ane-pipeline`). The estimate needs no weight values: without `weights`
    an `.mlir` is compiled from its types alone. Raises `XdslAneError`."""
    from xdsl.dialects import builtin

    from xdsl_ane.api import compile
    from xdsl_ane.api.llm import split_record
    from xdsl_ane.frontend.compiled import is_compiled
    from xdsl_ane.frontend.torch import is_torch_input

    chip = get_chip(chip)  # an unknown chip fails before any work
    if is_torch_input(source) or (weights is not None and not _is_path(source)):
        model = compile(source, weights, pipeline, allow_lint_errors=True)
        return estimate_compiled(model, chip)
    if isinstance(source, builtin.ModuleOp):
        if all(op.name.startswith(COMPILED) for op in source.walk()):
            return estimate_compiled(source, chip)
        return _from_types(source, chip, pipeline)
    if not _is_path(source):
        return estimate_compiled(source, chip)
    path = Path(source)
    if not path.exists():
        raise XdslAneError(f"{path}: no such file or directory")
    record = split_record(path) if path.is_dir() else None
    if record is not None:  # a compile-llm model split into packages
        from xdsl_ane.frontend.milproto import read_compiled

        functions = []
        for part in record["packages"]:
            program = read_compiled(path / part["path"])
            name = part.get("name", part["path"])
            # (a tied model's embed_head serves two parts, each its own two)
            called = set(part.get("function_names", {}).values())
            functions += [
                (f"{name}/{f.sym_name.data}", f)
                for f in _functions(program.module)
                if f.sym_name.data in (called or {"prefill", "decode"})
            ]
        return estimate_functions(functions, chip, str(path))
    asr = asr_record(path) if path.is_dir() else None
    if asr is not None:  # compile-asr's encoder and decoder
        from xdsl_ane.frontend.milproto import read_compiled

        functions = []
        for part in asr["encoder"]["parts"]:
            program = read_compiled(path / part["path"])
            name = part["path"].removesuffix(".mlpackage")
            # (the encoder's one function is `main` once read back)
            functions += [(f"{name}/encode", f) for f in _functions(program.module)]
        for part in asr["decoder"]["parts"]:
            program = read_compiled(path / part["path"])
            name = part["path"].removesuffix(".mlpackage")
            functions += [
                (f"{name}/{f.sym_name.data}", f) for f in _functions(program.module)
            ]
        return estimate_functions(functions, chip, str(path))
    listing = path / "kernels.json"
    if path.is_dir() and (path / "plan.json").is_file():  # compile-train's
        listing = path / "plan.json"
    if path.is_dir() and listing.is_file():  # compile-model --training's kernels
        from xdsl_ane.frontend.milproto import read_compiled

        functions = []
        for kernel in _kernels(listing):
            program = read_compiled(path / kernel["mlpackage"])
            functions += [
                (f"{kernel['name']}/{f.sym_name.data}", f)
                for f in _functions(program.module)
            ]
        return estimate_functions(functions, chip, str(path))
    if is_compiled(path) or path.is_dir():
        if pipeline:
            raise XdslAneError(
                f"{option('pipeline', pipeline, flag='-p')}: does not apply to a "
                f"compiled model ({path} is compiled already)"
            )
        return estimate_compiled(path, chip)
    if weights is not None:
        model = compile(path, weights, pipeline, allow_lint_errors=True)
        return estimate_compiled(model, chip)
    return _from_types(path, chip, pipeline)


COMPILED = ("mil.", "func.", "builtin.")
"""The ops of a compiled module (anything else is compiled first)."""


def _from_types(source: Any, chip: Chip, pipeline: str | None) -> Estimate:
    """A program compiled without its weights (the passes need only types)."""
    from xdsl_ane.api import DEFAULT_PIPELINE, load_module
    from xdsl_ane.passes.compile_pipeline import run_pipeline

    module, name, _ = load_module(source)
    with reported(name, name):
        run_pipeline(module, pipeline or DEFAULT_PIPELINE, name, True)
    result = estimate_compiled(module, chip)
    result.source = name
    return result


def _kernels(listing: Path) -> list[dict[str, Any]]:
    import json

    try:
        kernels = json.loads(listing.read_text())["kernels"]
        return [k for k in kernels if k["name"] and k["mlpackage"]]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise XdslAneError(f"{listing}: not a kernel listing ({e})") from None


def _is_path(source: Any) -> bool:
    return isinstance(source, str | Path)


def _functions(module):
    from xdsl.dialects import func

    return [op for op in module.walk() if isinstance(op, func.FuncOp)]


def asr_record(path: Path) -> dict[str, Any] | None:
    """The `asr` record of a compile-asr directory (None if `path` is not
    one)."""
    import json

    try:
        record = json.loads((path / "manifest.json").read_text()).get("asr")
    except (OSError, ValueError, AttributeError):
        return None
    return record if isinstance(record, dict) and "encoder" in record else None

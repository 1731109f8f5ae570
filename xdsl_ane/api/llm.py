"""`xdsl_ane.compile_llm` and `PackageRunner` (the library under `xdsl-ane
compile-llm` and `xdsl-ane generate`): Hugging Face checkpoints to
stateful multifunction Core ML packages, and generation with them in the
interpreter (token ids, or text through the checkpoint's tokenizer:
api/text.py).

The package holds `prefill` and `decode` (models/llm.py) in one
multifunction ML program sharing one weight blob; the KV cache is two
iOS18 fp16 states. The manifest beside it (`OUT.manifest.json`) records
what a runtime needs: under `llm` the family, vocabulary size, context,
prefill length, the states' names and shapes, the head chunks (output
names and vocabulary ranges) and the calling protocol; under `functions`
the `[1, C, 1, S]` layout of each input and output.

With `layers_per_package` K the model is a directory OUT of packages,
called in order: `embed.mlpackage` (input_ids → hidden_states),
`layers_F-L.mlpackage` for each run of at most K layers (hidden_states,
position → hidden_states, with its own `key_cache` / `value_cache` states
[L − F + 1, Hkv, context, D]) and `head.mlpackage` (hidden_states → the
logits chunks or next_token); each a multifunction prefill/decode package
with its function records in `NAME.manifest.json` beside it.
`OUT/manifest.json` holds the `llm` record with `packages`: each one's
name, path, layer range, inputs, outputs (Core ML's names) and states, in
calling order. An output feeds the later inputs of its name, or of the
name `feeds` maps it to: a layers package returns `hidden_states_output`
(Core ML's inputs and outputs share one namespace), which the next
package takes as `hidden_states`.

Protocol: state starts at zeros; `prefill` takes up to `prefill` prompt
tokens (padded with any id) at `position` 0, N, 2N, ...; the logits of
prompt token i are row i; then `decode` takes one token at position p.
Padding rows are written to the cache but never seen: a later call
overwrites them before any query can reach them. With a ring cache for
the sliding layers (the record's `local_window` W), a padded last chunk
that ends past W would overwrite ring slots later tokens read, so its
tokens go through `decode` instead (`models.llm.prompt_calls`).

Text: the checkpoint's `tokenizer.json`, `tokenizer_config.json`,
`chat_template.jinja` and `generation_config.json`, where present, are
copied beside the package (`OUT.tokenizer.json`, ...; in a split model's
directory under their own names) and named in the `llm` record's `text`
(the checkpoint's name to the copy's, relative to the manifest); its
`eos_token_id` lists the end-of-sequence tokens generation stops at
(api/text.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from xdsl_ane.ane.chips import DEFAULT_CHIP
from xdsl_ane.api.text import (
    Sampling,
    TextTokenizer,
    eos_token_ids,
    read_text_files,
)
from xdsl_ane.errors import XdslAneError, first_line, option
from xdsl_ane.models.llm_packages import DEFAULT_MAX_PACKAGE_SIZE
from xdsl_ane.outputs import atomic_output, check_outputs

if TYPE_CHECKING:
    from xdsl_ane.api import PendingPackage


@dataclass
class LlmPackage:
    """A compiled LLM: the compiled model (both functions) and its manifest."""

    compiled: Any
    manifest_record: dict[str, Any]
    source: str
    weights: dict[str, np.ndarray] = field(repr=False, default_factory=dict)
    text_files: dict[str, bytes] = field(repr=False, default_factory=dict)
    """The checkpoint's tokenizer files (api/text.py), copied on save."""

    def manifest(self, path: str | Path | None = None) -> dict[str, Any]:
        """The manifest; saved at `path`, with the copies of the text files."""
        record = self.manifest_record
        if path is not None and self.text_files:
            stem = Path(path).stem
            record = {**record, "text": {n: f"{stem}.{n}" for n in self.text_files}}
        return {**self.compiled.manifest(), "llm": record}

    def validate(self):
        return self.compiled.validate()

    def summary(self, chip: str | None = DEFAULT_CHIP) -> str:
        return self.compiled.summary(chip=chip)

    def save(self, path: str | Path, force: bool = False) -> Path:
        """Writes OUT.mlpackage, OUT.manifest.json and the copies of the
        checkpoint's text files, OUT.tokenizer.json, ... (nothing on
        failure)."""
        from contextlib import ExitStack

        from xdsl_ane.api import manifest_path

        path = Path(path)
        copies = {
            path.with_name(f"{path.stem}.{n}"): d for n, d in self.text_files.items()
        }
        outputs = [path, manifest_path(path, "mlpackage"), *copies]
        check_outputs(outputs, force, [self.source])
        manifest = json.dumps(self.manifest(path), indent=2) + "\n"
        with ExitStack() as stack:  # every file moved into place, or none
            for copy, data in copies.items():
                stack.enter_context(atomic_output(copy, force)).write_bytes(data)
            tmp = stack.enter_context(
                atomic_output(manifest_path(path, "mlpackage"), force)
            )
            tmp.write_text(manifest)
            self.compiled.write_mlpackage(path, force)
        return path


@dataclass
class LlmPart:
    """One package of a split LLM: its compiled model and its entry in the
    manifest's `packages`."""

    name: str
    compiled: Any
    record: dict[str, Any]
    weights: dict[str, np.ndarray] = field(repr=False, default_factory=dict)


@dataclass
class LlmPackageSet:
    """A compiled LLM split into packages (embedding, runs of layers, head)
    and the manifest that chains them."""

    parts: list[LlmPart]
    manifest_record: dict[str, Any]
    source: str
    text_files: dict[str, bytes] = field(repr=False, default_factory=dict)
    """The checkpoint's tokenizer files (api/text.py), copied on save."""
    written: Path | None = None
    """The directory compile_llm(output=...) wrote the set into (its
    packages' weights released as each was written), or None."""

    @property
    def reason(self) -> str:
        """Why the model is split (--layers-per-package, or its size)."""
        return self.manifest_record.get("split", "")

    def manifest(self) -> dict[str, Any]:
        record = self.manifest_record
        if self.text_files:
            record = {**record, "text": {n: n for n in self.text_files}}
        return {"llm": record}

    def validate(self) -> None:
        """coremltools' loader on each package; raises on the first failure."""
        for part in self.parts:
            part.compiled.validate().raise_if_failed()

    def summary(self, chip: str | None = DEFAULT_CHIP) -> str:
        files = len({part.record["path"] for part in self.parts})
        lines = [f"{self.source}: {files} packages"]
        for part in self.parts:
            counts = part.compiled.op_counts()
            called = part.record.get("function_names")
            if called is not None:  # embed_head: the embedding's functions
                counts = {f: counts[f] for f in called.values()}
            elif part.record["path"] != f"{part.name}.mlpackage":
                counts = {f: counts[f] for f in ("prefill", "decode")}
            ops = ", ".join(f"@{f} {sum(c.values())} ops" for f, c in counts.items())
            lines.append(
                f"  {part.name}: {ops}, weights {part.compiled.weight_bytes():,} bytes"
            )
        if chip is not None:  # the packages one after the other
            from xdsl_ane.estimator import estimate
            from xdsl_ane.estimator.report import summary

            lines.append(f"  {summary(estimate(self, chip))}")
        return "\n".join(lines)

    def save(self, path: str | Path, force: bool = False) -> Path:
        """Writes the directory OUT: each NAME.mlpackage with
        NAME.manifest.json, the copies of the checkpoint's text files, and
        manifest.json (nothing on failure). A set compile_llm has written
        already is not written again."""
        path = Path(path)
        if self.written is not None:
            if path.resolve() == self.written.resolve():
                return path
            raise XdslAneError(
                f"{path}: the packages were written to {self.written} as they "
                "were compiled and their weights released; copy that directory"
            )
        with split_output(path, self.reason, force, self.source) as tmp:
            for part in self.parts:
                write = write_part(tmp, part)
                if write is not None:
                    write.finish()
            self.write_rest(tmp)
        return path

    def write_rest(self, directory: Path) -> None:
        """The copies of the text files and manifest.json, in `directory`."""
        for name, data in self.text_files.items():
            (directory / name).write_bytes(data)
        manifest = json.dumps(self.manifest(), indent=2) + "\n"
        (directory / "manifest.json").write_text(manifest)


def write_part(directory: Path, part: LlmPart) -> PendingPackage | None:
    """NAME.manifest.json and, unless it is there already (embed_head: the
    embedding's and head's package), NAME's package started, in
    `directory`: the `PendingPackage` to finish (None if there already)."""
    (directory / f"{part.name}.manifest.json").write_text(
        json.dumps({**part.compiled.manifest(), "llm_part": part.record}, indent=2)
        + "\n"
    )
    package = directory / part.record["path"]
    if package.exists():
        return None
    return part.compiled.start_mlpackage(package)


@contextmanager
def split_output(path: Path, reason: str, force: bool, source: str) -> Iterator[Path]:
    """The directory a package set is written into: checked as an output
    of `source`, created beside `path` and moved there when the block ends
    without error (nothing left on failure)."""
    check_split_output(path, reason)
    check_outputs([path], force, [source])
    with atomic_output(path, force) as tmp:
        tmp.mkdir()
        yield tmp


def check_split_output(path: Path, reason: str | None = None) -> None:
    if path.suffix == ".mlpackage":
        why = reason or option("layers_per_package")
        raise XdslAneError(
            f"{path}: split ({why}), the output is a directory of packages; "
            "name it without .mlpackage"
        )


def cache_states(config: Any, shape: Any) -> dict[str, Any]:
    """The manifest's record of the cache states of a program of `shape`."""
    from xdsl_ane.models.llm import cache_shapes

    return {
        name: {"shape": list(dims), "dtype": "fp16"}
        for name, dims in cache_shapes(config, shape).items()
    }


def compile_llm(
    checkpoint: str | Path,
    *,
    context: int = 512,
    prefill: int = 64,
    chunk: int | None = None,
    argmax: bool = False,
    validate: bool = False,
    layers_per_package: int | None = None,
    max_package_size: int | None = DEFAULT_MAX_PACKAGE_SIZE,
    compress: str | None = None,
    compress_head: str = "same",
    compress_embedding: str = "none",
    fp16_check: bool = True,
    calibration: list[list[int]] | None = None,
    on_plan: Callable[[LlmPackageSet | None, str | None], None] | None = None,
    output: str | Path | None = None,
    force: bool = False,
) -> LlmPackage | LlmPackageSet:
    """Compiles a Hugging Face checkpoint directory to a stateful
    multifunction package (`prefill`, `decode`), or with
    `layers_per_package` to a set of them (see the module docstring).
    `compress` (`MODE[:GRANULARITY[:GROUP]]`) compresses the weights with
    `mil-compress-weights`, the LM head as `compress_head` and the
    embedding table as `compress_embedding` (as in `xdsl_ane.compile`).
    `fp16_check` runs the fp32 program on the `calibration` prompts (token
    ids; default two seeded random ones) and, where a layer's hidden states
    would leave fp16's range, carries the residual stream scaled by a power
    of two that leaves the outputs unchanged (`models.llm.fp16_rescaled`);
    the manifest's `fp16` records the maxima and the scale.
    A model whose weights would pass `max_package_size` bytes (default 1
    GB, 2^30 bytes; None: no limit) is split as with `layers_per_package`,
    into packages of at most that many bytes (models/llm_packages.py);
    `on_plan(split, reason)` is called once that is decided, before the
    compile (`split`: whether the result is a package set; `reason`: why).
    The checkpoint's tokenizer files go with the package (copied on save)
    and its end-of-sequence ids into the manifest. With `output`, the
    result is also saved there (as `save(output, force)`), a split model's
    packages each as soon as it is compiled, its weights released after, so
    that the memory held is about one package's (the set's `written`).
    Errors are one-line
    `XdslAneError`s naming the file, tensor or field."""
    from xdsl_ane.ane.limits import MAX_DIMENSION
    from xdsl_ane.api import compile as compile_module
    from xdsl_ane.frontend.checkpoint import read_checkpoint
    from xdsl_ane.models.llm import (
        LlmShape,
        build_llm,
        calibration_prompts,
        check_all_used,
        check_shape,
        check_table_shapes,
        chunks,
        fp16_rescaled,
        llm_config,
        llm_weights,
        local_window,
        output_names,
        residual_maxima,
    )
    from xdsl_ane.models.llm_packages import (
        ENDS,
        Compression,
        ends_module,
        llm_units,
        plan_packages,
        position_bytes,
        size_option,
        size_text,
    )

    if layers_per_package is not None and layers_per_package < 1:
        raise XdslAneError(
            f"{option('layers_per_package', layers_per_package)}: must be at least 1"
        )
    if max_package_size is not None and max_package_size < 1:
        raise XdslAneError(
            f"{option('max_package_size', max_package_size)}: must be at least 1 byte"
        )
    source = str(checkpoint)
    ck = read_checkpoint(checkpoint)
    config = llm_config(ck)
    check_table_shapes(ck, config)
    text_files = read_text_files(checkpoint)
    eos = eos_token_ids(text_files, ck.config, checkpoint)
    shape = LlmShape(
        context, prefill, MAX_DIMENSION if chunk is None else chunk, argmax
    )
    check_shape(config, shape, str(Path(source) / "config.json"))
    plan = plan_packages(
        llm_units(
            config, shape, Compression(compress, compress_head, compress_embedding)
        ),
        max_package_size,
        layers_per_package,
        config.tied,
        position_bytes(shape),
    )
    if on_plan is not None:
        on_plan(plan is not None, plan.reason if plan else None)
    fp16: dict[str, Any] = {"checked": fp16_check}
    if fp16_check:
        prompts = calibration or calibration_prompts(config, shape)
        for prompt in prompts:
            if len(prompt) > context or any(
                not 0 <= t < config.vocab_size for t in prompt
            ):
                raise XdslAneError(
                    f"calibration prompt of {len(prompt)} ids: each must lie in "
                    f"[0, {config.vocab_size}) and the prompt within "
                    f"{option('context', context)}"
                )
        maxima = residual_maxima(ck, config, shape, prompts)
        config = fp16_rescaled(config, maxima, source)
        fp16 |= {
            "prompts": len(prompts),
            "largest_per_layer": [float(f"{m:.6g}") for m in maxima],
            "stream_scale": config.stream_scale or 1.0,
            "norm_input_scales": list(config.norm_input_scales),
        }
    record: dict[str, Any] = {
        "family": config.family,
        "vocab_size": config.vocab_size,
        "context": context,
        "prefill": prefill,
        "functions": {"prefill": prefill, "decode": 1},
        "inputs": ["input_ids", "position"],
        "states": cache_states(config, shape),
        "local_window": local_window(config, shape),
        "outputs": output_names(config, shape),
        "argmax": argmax,
        "head_chunks": [[s, e] for s, e in chunks(config.vocab_size, shape.chunk)],
        "protocol": "prefill at positions 0, N, 2N, ... (the last chunk padded; "
        "with local_window W, a last chunk ending past W runs through decode "
        "instead), then decode one token per call at its position; states "
        "start at zeros",
        "eos_token_id": eos,
        "fp16": fp16,
    }

    # every part's program first: a checkpoint tensor that none reads is
    # an error before anything is compiled
    if plan is None:
        modules = {"": build_llm(config, shape)}
    else:
        modules = {}
        for _, part, layers, package in plan.parts:
            if package == ENDS:
                modules[package] = ends_module(config, shape)
            elif package not in modules:
                modules[package] = build_llm(
                    config, replace(shape, part=part, layers=layers)
                )
    check_all_used(ck, config, list(modules.values()))

    stamps: dict[str, tuple[Any, list[str], list[Any]]] = {}

    def compiled_part(package: str):
        module = modules.pop(package)
        weights = llm_weights(ck, config, shape, module)
        compiled = None
        if compress is None:  # compressed weights are not the program's
            text, names = weightless_text(module)
            if text in stamps:
                compiled = stamped(stamps[text], module, names, weights, source)
        if compiled is None:
            compiled = compile_module(
                module,
                weights=weights,
                compress=compress,
                compress_head=compress_head,
                compress_embedding=compress_embedding,
            )
            compiled.source = source  # the summary names the checkpoint
            if compress is None:
                held = [(tuple(weights[n].shape), weights[n].dtype) for n in names]
                stamps[text] = (compiled, names, held)
        if validate:
            compiled.validate().raise_if_failed()
        if output is None or plan is None:
            check_size(package, compiled)
        # else checked once written: printed as its blob is written
        return compiled, weights

    def check_size(package: str, compiled: Any) -> None:
        written = compiled.proto.blob.next_offset  # the size of weight.bin
        if max_package_size is not None and written > max_package_size:
            raise XdslAneError(
                f"{package or 'the package'}: {size_text(written)} of weights, over "
                f"{size_option(max_package_size)} (raise it)"
            )

    if plan is None:
        compiled, weights = compiled_part("")
        single = LlmPackage(compiled, record, source, weights, text_files)
        if output is not None:
            single.save(output, force)
        return single
    with ExitStack() as stack:
        directory = None
        if output is not None:  # each package written once compiled
            output = Path(output)
            directory = stack.enter_context(
                split_output(output, plan.reason, force, source)
            )
        packages = split_parts(
            plan, config, shape, compiled_part, directory, check_size
        )
        record["split"] = plan.reason
        record["max_package_size"] = max_package_size
        del record["states"]  # each package has its own slice
        record["layers_per_package"] = layers_per_package
        record["hidden_states"] = {
            "shape": [1, "S", config.hidden_size],
            "dtype": "fp16",
        }
        record["packages"] = [p.record for p in packages]
        package_set = LlmPackageSet(packages, record, source, text_files)
        if directory is not None:
            package_set.write_rest(directory)
    if output is not None:
        package_set.written = output
    return package_set


def weightless_text(module: Any) -> tuple[str, list[str]]:
    """The rlx program's text with its params named by their order
    (`w0`, `w1`, ...), and their names in that order: programs of equal
    text differ only in which checkpoint tensors they read."""
    from xdsl.dialects.builtin import StringAttr

    from xdsl_ane.dialects import rlx

    params = [op for op in module.walk() if isinstance(op, rlx.ParamOp)]
    names = [op.param_name.data for op in params]
    try:
        for i, op in enumerate(params):
            op.properties["name"] = StringAttr(f"w{i}")
        text = str(module)
    finally:
        for op, name in zip(params, names):
            op.properties["name"] = StringAttr(name)
    return text, names


def stamped(
    stamp: tuple[Any, list[str], list[Any]],
    module: Any,
    names: list[str],
    weights: dict[str, Any],
    source: str,
) -> Any:
    """The compiled model of `module` (its params `names`, in order),
    from `stamp` (a compiled model of a program of the same weightless
    text, its params, their shapes and dtypes): the compiled module cloned, each
    weight const reading this program's tensor in place of the stamp's.
    The passes see only the program, not the weights' data, so that is
    what compiling it would give (a test compares the bytes); None where
    a tensor's shape or dtype differs, or a const reads a weight that is
    not a param, and the program is compiled instead."""
    from xdsl.dialects.builtin import StringAttr

    from xdsl_ane.api import CompiledModel, check_weights
    from xdsl_ane.dialects import mil

    compiled, stamp_names, held = stamp
    for (shape, dtype), name in zip(held, names):
        if tuple(weights[name].shape) != shape or weights[name].dtype != dtype:
            return None
    renames = dict(zip(stamp_names, names))
    clone = compiled.module.clone()
    for op in clone.walk():
        if isinstance(op, mil.ConstOp) and op.weight is not None:
            name = renames.get(op.weight.data)
            if name is None:
                return None
            op.properties["weight"] = StringAttr(name)
    unused = check_weights(module, weights, source)
    return CompiledModel(
        clone,
        weights,
        compiled.pipeline,
        target=compiled.target,
        source=compiled.source,
        unused_weights=unused,
        progress=compiled.progress,
    )


def split_parts(
    plan: Any,
    config: Any,
    shape: Any,
    compiled_part: Callable[[str], tuple[Any, dict[str, np.ndarray]]],
    directory: Path | None,
    check_size: Callable[[str, Any], None],
) -> list[LlmPart]:
    """The parts of a split model in calling order, each package compiled
    once; with `directory`, each part written into it as it is made: the
    package printed as its blob is written, the blob still going to disk
    while the next package compiles (unless compressed: it holds its
    compressed data until written, so memory holds one package's), then
    finished, `check_size`d and, after its last part, its weights
    released."""
    last = {package: i for i, (_, _, _, package) in enumerate(plan.parts)}
    packages: list[LlmPart] = []
    done: dict[str, tuple[Any, dict[str, np.ndarray]]] = {}
    writing = None  # the PendingPackage being written
    after: list[Callable[[], None]] = []  # what follows its write

    def release(part: LlmPart) -> None:
        part.compiled.release_weights()
        part.weights.clear()

    def settle() -> None:  # the package being written: finished, checked
        nonlocal writing, after
        if writing is not None:
            writing.finish()
        writing = None
        for step in after:
            step()
        after = []

    try:
        for i, plan_part in enumerate(plan.parts):
            package = plan_part[3]
            if package not in done:
                if packages and packages[-1].compiled.uncompressed is not None:
                    settle()
                done[package] = compiled_part(package)  # beside the blob before
            compiled, weights = done[package]
            packages.append(llm_part(plan_part, config, shape, compiled, weights))
            if directory is None:
                continue
            settle()
            writing = write_part(directory, packages[-1])
            after = [partial(check_size, package, compiled)] if writing else []
            if last[package] == i:
                after.append(partial(release, packages[-1]))
        settle()
    except BaseException:
        if writing is not None:  # the writer stopped, nothing kept
            writing.abort()
        raise
    return packages


def llm_part(
    plan_part: tuple[str, str, Any, str],
    config: Any,
    shape: Any,
    compiled: Any,
    weights: dict[str, np.ndarray],
) -> LlmPart:
    """The part `plan_part` (name, part, layers, package) of a split
    model, of its package's compiled model and weights."""
    from xdsl_ane.models.llm import output_names
    from xdsl_ane.models.llm_packages import ENDS, ENDS_FUNCTIONS

    name, part, layers, package = plan_part
    part_shape = replace(shape, part=part, layers=layers)
    inputs = {
        "embed": ["input_ids"],
        "layers": ["hidden_states", "position"],
        "head": ["hidden_states"],
    }[part]
    states = cache_states(config, part_shape) if layers else {}
    functions = ENDS_FUNCTIONS if package == ENDS and part == "embed" else {}
    # Core ML's names: a layers package takes and returns hidden_states,
    # and its output is renamed (inputs and outputs share one namespace);
    # `feeds` says which later input each renamed output is.
    prefill_name = functions.get("prefill", "prefill")
    outputs = compiled.manifest()["functions"][prefill_name]["outputs"]
    logical = output_names(config, part_shape)
    record = {
        "name": name,
        "path": f"{package}.mlpackage",
        "layers": list(layers) if layers else None,
        "inputs": inputs,
        "outputs": outputs,
        "feeds": {o: n for o, n in zip(outputs, logical) if o != n},
        "states": states,
    }
    if functions:
        record["function_names"] = functions
    return LlmPart(name, compiled, record, weights)


# --- generation in the interpreter ------------------------------------------------


def split_record(path: Path) -> dict[str, Any] | None:
    """The `llm` record of a split model's directory (None if `path` is
    not one)."""
    top = path / "manifest.json"
    if not top.is_file():
        return None
    try:
        record = json.loads(top.read_text()).get("llm")
    except (OSError, ValueError) as e:
        raise XdslAneError(f"{top}: cannot read the manifest: {e}") from None
    return record if isinstance(record, dict) and "packages" in record else None


class PackageRunner:
    """Runs a compiled LLM's prefill and decode with the interpreter: one
    package, or the packages of a split model chained in the manifest's
    order (each output feeds the inputs of its `feeds` name after it); each
    package keeps its own states across calls; logits are concatenated
    over the head chunks."""

    def __init__(self, path: str | Path):
        from xdsl_ane.frontend.milproto import read_compiled
        from xdsl_ane.interpreter.core import StatefulRuntime

        path = Path(path)
        self.path = path
        record = split_record(path)
        if record is not None:
            read: dict[str, Any] = {}  # embed_head serves two parts
            for p in record["packages"]:
                if p["path"] not in read:
                    read[p["path"]] = read_compiled(path / p["path"])
            programs = [(p, read[p["path"]]) for p in record["packages"]]
            beside = path
        else:
            program = read_compiled(path)
            record = program.manifest.get("llm")
            if record is None:
                raise XdslAneError(
                    f"{path}: no LLM manifest beside it (compile it with compile-llm)"
                )
            programs = [(record, program)]
            beside = path.parent
        self.record = record
        text = record.get("text")
        self.text_files = {
            str(name): beside / str(copy)
            for name, copy in (text.items() if isinstance(text, dict) else [])
        }
        self.eos: list[int] = [int(t) for t in record.get("eos_token_id") or []]
        """The end-of-sequence tokens (api/text.py): [] in packages
        compiled before they were recorded."""
        runtimes: dict[int, Any] = {}  # one runtime (and states) per package
        self.parts = [
            (
                p,
                runtimes.setdefault(
                    id(program), StatefulRuntime(program.module, program.weights)
                ),
            )
            for p, program in programs
        ]

    def call(self, function: str, ids: list[int], position: int) -> np.ndarray:
        """Logits [len(ids), V] (or next tokens [len(ids)] with argmax)."""
        from xdsl_ane.passes.layouts import layout_of

        tokens = self.record["functions"][function]
        padded = np.zeros(tokens, np.int32)
        padded[: len(ids)] = ids
        values = {
            "input_ids": layout_of((tokens,)).to_ane(padded),
            "position": layout_of((1,)).to_ane(np.array([position], np.int32)),
        }
        for part, runtime in self.parts:
            name = part.get("function_names", {}).get(function, function)
            outputs = runtime.call(name, [values[n] for n in part["inputs"]])
            feeds = part.get("feeds", {})
            values.update(zip([feeds.get(o, o) for o in part["outputs"]], outputs))
        outputs = [values[n] for n in self.record["outputs"]]
        if self.record["argmax"]:
            return layout_of((tokens,)).to_logical(outputs[0])[: len(ids)]
        logical = [
            layout_of((tokens, e - s)).to_logical(o)
            for o, (s, e) in zip(outputs, self.record["head_chunks"])
        ]
        return np.concatenate(logical, 1)[: len(ids)].astype(np.float32)

    def tokenizer(self) -> TextTokenizer:
        """The checkpoint's tokenizer, from the copies beside the package."""
        return TextTokenizer(self.text_files, self.path)

    def check_prompt(
        self,
        prompt: list[int],
        max_new_tokens: int,
        what: str | None = None,
        sampling: Sampling | None = None,
    ) -> None:
        """Fails unless `generate` can run the prompt: ids in the
        vocabulary, prompt and new tokens within the context, logits to
        sample from. `what` names the prompt (default: `generate`'s
        `prompt`)."""
        what = what or option("prompt")
        context, vocab = self.record["context"], self.record["vocab_size"]
        if not prompt:
            raise XdslAneError(f"{what}: no token ids")
        if max_new_tokens < 1:
            raise XdslAneError(
                f"{option('max_new_tokens', max_new_tokens)}: must be at least 1"
            )
        outside = [t for t in prompt if not 0 <= t < vocab]
        if outside:
            raise XdslAneError(
                f"{what}: token id {outside[0]} is outside the package's vocabulary "
                f"[0, {vocab})"
            )
        if len(prompt) > context:
            raise XdslAneError(
                f"{what}: a prompt of {len(prompt)} tokens is longer than the "
                f"package's context {context}"
            )
        # Every token but the last new one is written to the cache.
        if len(prompt) + max_new_tokens - 1 > context:
            raise XdslAneError(
                f"a prompt of {len(prompt)} tokens and {max_new_tokens} new tokens "
                f"need {len(prompt) + max_new_tokens - 1} cache positions; the "
                f"package's context is {context}"
            )
        if sampling is not None and self.record["argmax"]:
            raise XdslAneError(
                f"{self.path}: sampling needs logits; the package outputs the next "
                f"token (compiled with {option('argmax', True)})"
            )

    def generate(
        self,
        prompt: list[int],
        max_new_tokens: int,
        *,
        stop: list[int] | tuple[int, ...] = (),
        sampling: Sampling | None = None,
        on_token: Any = None,
    ) -> tuple[list[int], list[np.ndarray]]:
        """Generation as transformers' `generate(max_new_tokens=N)`: at
        most N tokens after the prompt (the prefill's token is the first),
        ending after the first of `stop` (which is kept, as transformers
        keeps it), and the logits that chose each (empty with argmax).
        Greedy, or drawn as `sampling` says. A prompt longer than the
        prefill length runs prefill once per `prefill` tokens (chunked
        prefill, the last chunk padded). `on_token(id)` is called as each
        token is chosen."""
        self.check_prompt(prompt, max_new_tokens, sampling=sampling)
        n = self.record["prefill"]
        generator = sampling.generator() if sampling is not None else None
        from xdsl_ane.models.llm import prompt_calls

        window = self.record.get("local_window")
        for function, start, count in prompt_calls(len(prompt), n, window):
            out = self.call(function, prompt[start : start + count], start)
        row = out[-1]
        tokens: list[int] = []
        logits_seen: list[np.ndarray] = []
        while True:
            if self.record["argmax"]:
                tokens.append(int(row))
            else:
                logits_seen.append(row)
                if sampling is None:
                    tokens.append(int(np.argmax(row)))
                else:
                    tokens.append(sampling.draw(row, generator))
            if on_token is not None:
                on_token(tokens[-1])
            if len(tokens) == max_new_tokens or tokens[-1] in stop:
                return tokens, logits_seen
            row = self.call("decode", [tokens[-1]], len(prompt) + len(tokens) - 1)[0]


def check_reference(checkpoint: str | Path, record: dict[str, Any]) -> None:
    """Fails unless `checkpoint` is a checkpoint directory that compile-llm
    reads (with its messages: a missing directory or file, a truncated
    shard, an unsupported field) holding a model of the package's shape,
    so that `--reference` fails before anything runs rather than inside
    transformers after the tokens."""
    from xdsl_ane.frontend.checkpoint import read_checkpoint
    from xdsl_ane.models.llm import llm_config

    config = llm_config(read_checkpoint(checkpoint))
    parts = record.get("packages", [record])
    caches = [
        state["shape"]
        for p in parts
        for name, state in (p.get("states") or {}).items()
        if name.endswith("key_cache")
    ]
    package = {
        "family": record["family"],
        "vocab_size": record["vocab_size"],
        "num_hidden_layers": sum(shape[0] for shape in caches),
        "num_key_value_heads": caches[0][1],
        "head_dim": caches[0][3],
    }
    reference = {
        "family": config.family,
        "vocab_size": config.vocab_size,
        "num_hidden_layers": config.num_layers,
        "num_key_value_heads": config.num_kv_heads,
        "head_dim": config.head_dim,
    }
    for key, value in package.items():
        if reference[key] != value:
            raise XdslAneError(
                f"{option('checkpoint', checkpoint, flag='--reference')}: {key} is "
                f"{reference[key]}, the "
                f"package's is {value} (not the checkpoint it was compiled from)"
            )


def reference_generate(
    checkpoint: str | Path,
    prompt: list[int],
    max_new_tokens: int,
    stop: list[int] | tuple[int, ...] = (),
) -> tuple[list[int], list[np.ndarray]]:
    """transformers' greedy `generate(max_new_tokens=N)` on the
    checkpoint's weights (fp32): the new tokens and the logits that chose
    each. It stops at the end-of-sequence tokens `stop` alone, as the
    package's generation does (none: it runs on to N tokens)."""
    try:
        import torch
        import transformers
    except ImportError:
        raise XdslAneError(
            f"{option('reference_generate', flag='--reference')} needs torch and "
            "transformers: pip install 'xdsl-ane[torch]'"
        ) from None
    # The package's generation is plain greedy: none of the checkpoint's
    # generation_config.json (sampling, penalties) applies but `stop`.
    settings = transformers.GenerationConfig(
        max_new_tokens=max_new_tokens,
        do_sample=False,
        eos_token_id=list(stop) or None,
        pad_token_id=0,
        output_logits=True,
        return_dict_in_generate=True,
    )
    # (its progress bars would come between the tokens and the comparison)
    bars = transformers.utils.logging.is_progress_bar_enabled()
    transformers.utils.logging.disable_progress_bar()
    try:
        model = transformers.AutoModelForCausalLM.from_pretrained(
            str(checkpoint), dtype=torch.float32
        ).eval()
        # (in place of the model's own, which transformers would merge in)
        model.generation_config = settings
        with torch.no_grad():
            out = model.generate(
                torch.tensor([prompt]),
                attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
            )
    except (OSError, ValueError, RuntimeError) as e:
        raise XdslAneError(
            f"{option('checkpoint', checkpoint, flag='--reference')}: transformers "
            f"failed: {first_line(e)}"
        ) from None
    finally:
        if bars:
            transformers.utils.logging.enable_progress_bar()
    tokens = [int(t) for t in out.sequences[0, len(prompt) :]]
    return tokens, [row[0].numpy() for row in out.logits]

"""`xdsl_ane.compile_llm`, the library under `xdsl-ane compile-llm`: a
Hugging Face checkpoint to one stateful package or a set of them (what
they hold and how a runtime drives them: `api/llm.py`). `LlmOptions`
carries the options, `LlmCompilation` the checkpoint, its decoder and the
package plan through the steps `compile_llm` drives."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, replace
from functools import cached_property, partial
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.dialects import builtin

from xdsl_ane.ane.limits import MAX_DIMENSION
from xdsl_ane.api.llm import (
    LlmPackage,
    LlmPackageSet,
    LlmPart,
    split_output,
    write_part,
)
from xdsl_ane.api.text import (
    eos_token_ids,
    read_text_files,
)
from xdsl_ane.api.vlm import VISION_PACKAGE, read_processor_files
from xdsl_ane.errors import XdslAneError, option
from xdsl_ane.models.calibration import (
    calibration_prompts,
    fp16_rescaled,
    residual_maxima,
)
from xdsl_ane.models.checkpoint_use import check_all_used, chunks
from xdsl_ane.models.configs import EXPERTS, LlmConfig
from xdsl_ane.models.llm import Decoder, LlmShape
from xdsl_ane.models.llm_packages import (
    DEFAULT_MAX_PACKAGE_SIZE,
    ENDS,
    ENDS_FUNCTIONS,
    SEGMENT_FUNCTIONS,
    Compression,
    ends_module,
    llm_units,
    plan_packages,
    position_bytes,
    segments_module,
    size_option,
    size_text,
)
from xdsl_ane.models.vision_language import text_checkpoint, vision_family


def cache_states(decoder: Decoder) -> dict[str, Any]:
    """The manifest's record of the cache states of `decoder`'s program."""
    return {
        name: {"shape": list(dims), "dtype": "fp16"}
        for name, dims in decoder.cache_shapes().items()
    }


@dataclass(frozen=True)
class LlmOptions:
    """compile-llm's options (see `compile_llm`)."""

    context: int = 512
    prefill: int = 64
    chunk: int | None = None
    argmax: bool = False
    validate: bool = False
    layers_per_package: int | None = None
    max_package_size: int | None = DEFAULT_MAX_PACKAGE_SIZE
    compress: str | None = None
    compress_head: str = "same"
    compress_embedding: str = "none"
    fp16_check: bool = True
    calibration: list[list[int]] | str | Path | None = None
    """The calibration prompts of the fp16 check and of w8a8 and
    auto:BITS: token ids, or a file of them (`api/llm_calibration.py`'s
    `read_prompts`); None: two of `prefill` random ids, seed 0."""
    experts: str = "dense"
    """How a mixture of experts is computed: "dense" (every expert on
    every token, weighted by the routing; `models/moe.py`); "routed"
    (decode reads only the experts each token picks, from a file beside
    the package; `models/routed.py`)."""
    image_size: int | None = None
    """The image side of the vision package of a family whose processor
    picks the size per image (Qwen2-VL; models.vision_language.GRID_IMAGE_SIZE when None)."""

    def check(self) -> None:
        """One line naming the option for a value outside its domain."""
        if self.experts not in EXPERTS:
            raise XdslAneError(
                f"{option('experts', self.experts)}: expected " + " or ".join(EXPERTS)
            )
        from xdsl_ane.api import auto_bits, w8a8

        if w8a8.is_auto(self.compress):
            auto_bits.budget(self.compress)  # a bad BITS before any work
            for name, value, allowed in (
                ("compress_head", self.compress_head, ("same", "none")),
                ("compress_embedding", self.compress_embedding, ("none",)),
            ):
                if value not in allowed:
                    raise XdslAneError(
                        f"{option(name, value)}: with {option('compress', self.compress)} "
                        "each weight's mode is measured; expected "
                        + " or ".join(allowed)
                    )
        if self.calibration is not None and not (
            self.fp16_check or w8a8.is_calibrated(self.compress)
        ):
            raise XdslAneError(
                f"{option('calibration')}: nothing reads the prompts without the "
                f"fp16 check ({option('fp16_check', False)}) unless "
                f"{option('compress', 'w8a8')} or auto:BITS"
            )
        if self.experts == "routed" and (
            self.compress is not None or self.layers_per_package is not None
        ):
            raise XdslAneError(
                f"{option('experts', self.experts)}: routed experts are not split "
                "into packages or compressed yet (their weights are a file of "
                "fp16 beside the package)"
            )
        split, size = self.layers_per_package, self.max_package_size
        if split is not None and split < 1:
            raise XdslAneError(
                f"{option('layers_per_package', split)}: must be at least 1"
            )
        if size is not None and size < 1:
            raise XdslAneError(
                f"{option('max_package_size', size)}: must be at least 1 byte"
            )

    @property
    def shape(self) -> LlmShape:
        chunk = MAX_DIMENSION if self.chunk is None else self.chunk
        return LlmShape(
            self.context, self.prefill, chunk, self.argmax, experts=self.experts
        )

    @property
    def compression(self) -> Compression:
        """How the weights are stored, for the package plan: auto:BITS as
        fp16 (a weight may stay fp16; an upper bound), w8a8 as int8."""
        from xdsl_ane.api import w8a8

        mode = None if w8a8.is_auto(self.compress) else self.compress
        return Compression(
            w8a8.weight_mode(mode), self.compress_head, self.compress_embedding
        )


class LlmCompilation:
    """A checkpoint on its way to packages: its decoder (config and shape),
    text files and end-of-sequence ids, the package plan (None: one
    package) and the manifest's `llm` record, built step by step."""

    def __init__(self, checkpoint: str | Path, options: LlmOptions):
        from xdsl_ane.models.hf_config import (
            check_table_shapes,
            decoder_fields,
            llm_config,
        )
        from xdsl_ane.weights.checkpoint import read_checkpoint

        self.options = options
        self.source = str(checkpoint)
        self.checkpoint = read_checkpoint(checkpoint)
        self.vision = vision_family(
            self.checkpoint.config, str(Path(self.source) / "config.json")
        )
        """A vision-language checkpoint's family (None: a text model): the
        decoder is then its language model (`text_checkpoint`), its
        embedding a step of its own, and a vision package goes beside it."""
        if options.image_size is not None:  # (before anything compiles)
            from xdsl_ane.api.vlm import check_image_size

            check_image_size(self.vision, self.checkpoint.config, options.image_size)
        if self.vision is not None:
            self.whole = self.checkpoint
            self.checkpoint = text_checkpoint(self.whole, self.vision)
        config = llm_config(self.checkpoint)
        check_table_shapes(self.checkpoint, config)
        self.text_files = read_text_files(checkpoint)
        if self.vision is not None:
            self.text_files |= read_processor_files(checkpoint)
        fields = decoder_fields(self.checkpoint.config, config.family)
        self.eos = eos_token_ids(self.text_files, fields, checkpoint)
        shape = options.shape
        if self.vision is not None and self.vision.image_blocks:
            shape = replace(shape, image_blocks=True)
        self.decoder = Decoder(config, shape)
        self.decoder.check(str(Path(self.source) / "config.json"))
        if options.experts == "routed":
            from xdsl_ane.models.routed import check_routed

            problem = check_routed(config)
            if problem is not None:
                raise XdslAneError(f"{option('experts', 'routed')}: {problem}")
        self.plan: Any = None
        self.fp16: dict[str, Any] = {"checked": options.fp16_check}
        self.stamps: dict[str, tuple[Any, list[str], list[Any]]] = {}
        self.calibration: Any = None
        """w8a8 and auto:BITS's `DecoderCalibration` (`calibrate`)."""

    @property
    def config(self) -> LlmConfig:
        return self.decoder.config

    def plan_packages(self) -> None:
        """Whether and how the model splits into packages."""
        o, shape = self.options, self.decoder.shape
        if o.experts == "routed":  # one package; the experts in a file beside
            return
        self.plan = plan_packages(
            llm_units(self.decoder, o.compression),
            o.max_package_size,
            o.layers_per_package,
            self.config.tied,
            position_bytes(shape),
        )

    @cached_property
    def prompts(self) -> list[list[int]]:
        """The calibration prompts, each checked against the vocabulary and
        the context."""
        o, config = self.options, self.config
        if isinstance(o.calibration, str | Path):
            from xdsl_ane.api.llm_calibration import read_prompts

            prompts = read_prompts(o.calibration, self.source)
        else:
            prompts = o.calibration or calibration_prompts(self.decoder)
        for prompt in prompts:
            if len(prompt) > o.context or any(
                not 0 <= t < config.vocab_size for t in prompt
            ):
                raise XdslAneError(
                    f"calibration prompt of {len(prompt)} ids: each must lie in "
                    f"[0, {config.vocab_size}) and the prompt within "
                    f"{option('context', o.context)}"
                )
        return prompts

    def check_fp16(self) -> None:
        """The fp32 program on the calibration prompts; the residual stream
        rescaled where a layer's hidden states would leave fp16's range."""
        config, prompts = self.config, self.prompts
        text = self.decoder.part(image_blocks=False)  # (text prompts)
        maxima = residual_maxima(self.checkpoint, text, prompts)
        config = fp16_rescaled(config, maxima, self.source)
        self.decoder = Decoder(config, self.decoder.shape)
        self.fp16 |= {
            "prompts": len(prompts),
            "largest_per_layer": [float(f"{m:.6g}") for m in maxima],
            "stream_scale": config.stream_scale or 1.0,
            "norm_input_scales": list(config.norm_input_scales),
        }

    def calibrate(self) -> None:
        """For w8a8 and auto:BITS: the prompts' calls and every package's
        inputs on them (`api/llm_calibration.py`), after the fp16 check's
        rescaling, which the packages carry."""
        from xdsl_ane.api.llm_calibration import DecoderCalibration

        self.calibration = DecoderCalibration(
            self.checkpoint, self.decoder, self.prompts, self.package_parts()
        )

    def package_parts(self) -> dict[str, Any]:
        """Each package's parts in calling order (`PackageParts`)."""
        if self.plan is None and self.vision is not None:
            return {"": [(p, None, names) for p, names in SEGMENT_FUNCTIONS.items()]}
        if self.plan is None:
            return {"": [("all", None, {})]}
        packages: dict[str, Any] = {}
        for _, part, layers, package in self.plan.parts:
            names = ENDS_FUNCTIONS if package == ENDS and part == "embed" else {}
            packages.setdefault(package, []).append((part, layers, names))
        return packages

    def record(self) -> dict[str, Any]:
        """The manifest's `llm` record of one package."""
        o, config, decoder = self.options, self.config, self.decoder
        return (
            {
                "family": config.family.name,
                "vocab_size": config.vocab_size,
                "context": o.context,
                "prefill": o.prefill,
                "functions": {"prefill": o.prefill, "decode": 1},
                "inputs": decoder.input_names(),
                "mrope_section": list(config.mrope_section or []),
                "states": cache_states(decoder),
                "local_window": decoder.local_window,
                "recurrent": config.recurrent,
                "outputs": decoder.output_names(),
                "argmax": o.argmax,
                "head_chunks": [
                    [s, e] for s, e in chunks(config.vocab_size, decoder.shape.chunk)
                ],
                "protocol": "prefill at positions 0, N, 2N, ... (the last chunk padded; "
                "with local_window W, a last chunk ending past W runs through decode "
                "instead, and with recurrent states a short last chunk always does), "
                "then decode one token per call at its position; states start at "
                "zeros",
                "eos_token_id": self.eos,
                "fp16": self.fp16,
            }
            | self.routed_record()
            | self.per_layer_record()
        )

    def per_layer_record(self) -> dict[str, Any]:
        """With per-layer inputs (Gemma 4): the `per_layer` record of the
        table's file beside the package (`models/per_layer_inputs.py`)."""
        if not self.config.per_layer_width:
            return {}
        from xdsl_ane.models.per_layer_inputs import per_layer_record

        return {"per_layer": per_layer_record(self.config)}

    def write_per_layer(self, path: Path) -> None:
        """The per-layer table's file at `path`."""
        from xdsl_ane.models.per_layer_inputs import write_per_layer

        write_per_layer(self.config, self.checkpoint, path)

    def routed_record(self) -> dict[str, Any]:
        """With routed experts: the segments a call runs in order (their
        functions, inputs, outputs and feeds, the layer whose experts each
        takes) and the experts file's layout."""
        if self.options.experts != "routed":
            return {}
        from xdsl_ane.models.routed import (
            FEEDS,
            cuts,
            expert_file_index,
            experts_per_input,
            segment_inputs,
            segment_outputs,
        )

        config, layers = self.config, cuts(self.config)
        assert config.moe is not None
        segments = [
            {
                "function_names": {
                    "prefill": f"prefill_{i}",
                    "decode": f"decode_{i}",
                },
                "inputs": {
                    "prefill": segment_inputs(config, i, config.moe.experts),
                    "decode": segment_inputs(config, i, config.moe.top_k),
                },
                "outputs": segment_outputs(config, i, self.decoder.output_names()),
                "feeds": FEEDS if i < len(layers) else {},
                "experts_layer": layers[i - 1] if i else None,
            }
            for i in range(len(layers) + 1)
        ]
        experts = expert_file_index(config) | {
            "file": "experts.bin",
            "count": config.moe.experts,
            "top_k": config.moe.top_k,
            "per_input": {
                "prefill": experts_per_input(config, config.moe.experts),
                "decode": experts_per_input(config, config.moe.top_k),
            },
        }
        return {"segments": segments, "experts": experts}

    def programs(self) -> dict[str, builtin.ModuleOp]:
        """Every package's program, by package ("": the one package); a
        checkpoint tensor that none reads is an error before any compile."""
        decoder = self.decoder
        if self.plan is None and self.vision is not None:
            modules = {"": segments_module(decoder)}
        elif self.plan is None:
            modules = {"": decoder.build()}
        else:
            modules = {}
            for _, part, layers, package in self.plan.parts:
                if package == ENDS:
                    modules[package] = ends_module(decoder)
                elif package not in modules:
                    modules[package] = decoder.part(part=part, layers=layers).build()
        decoder = self.decoder
        check_all_used(
            self.checkpoint,
            decoder.config,
            decoder.shape.chunk,
            list(modules.values()),
            self.expert_names(),
        )
        return modules

    def expert_names(self) -> set[str]:
        """The checkpoint tensors the experts file holds (routed experts)."""
        if self.options.experts != "routed":
            return set()
        from xdsl_ane.models.checkpoint_use import row_views
        from xdsl_ane.models.routed import expert_tensors

        config = self.config
        views = row_views(config, self.decoder.shape.chunk)
        return {
            views[n].base if n in views else n
            for n, _ in expert_tensors(config, self.checkpoint, views)
        }

    def compile_part(self, modules: dict[str, Any], package: str, written: bool):
        """One package's compiled model and weights (a program of a text
        compiled before is stamped, not compiled again)."""
        from xdsl_ane.api import compile as compile_module

        o = self.options
        module = modules.pop(package)
        weights = self.decoder.weights(self.checkpoint, module)
        compiled = None
        if o.compress is None:  # compressed weights are not the program's
            text, names = weightless_text(module)
            if text in self.stamps:
                stamp = self.stamps[text]
                compiled = stamped(stamp, module, names, weights, self.source)
        if compiled is None:
            compiled = compile_module(
                module,
                weights=weights,
                compress=o.compress,
                compress_head=o.compress_head,
                compress_embedding=o.compress_embedding,
                calibration=None
                if self.calibration is None
                else self.calibration.package(package),
            )
            compiled.source = self.source  # the summary names the checkpoint
            if o.compress is None:
                held = [(tuple(weights[n].shape), weights[n].dtype) for n in names]
                self.stamps[text] = (compiled, names, held)
        if o.validate:
            compiled.validate().raise_if_failed()
        if not written:  # else checked once written, as its blob is
            self.check_size(package, compiled)
        return compiled, weights

    def vision_package(self, path: str) -> Any:
        """The vision package of a vision-language checkpoint, its record
        naming it at `path` (relative to the manifest); its features are
        scaled as the embedding is (the stream scale, where the family
        scales the embedding by it)."""
        from xdsl_ane.api.vlm import compile_vision

        config = self.config
        scale = (config.stream_scale or 1.0) if config.family.rope else 1.0
        o = self.options
        vision = compile_vision(
            self.whole, self.vision, scale, o.validate, o.image_size
        )
        vision.record["path"] = path
        return vision

    def check_size(self, package: str, compiled: Any) -> None:
        written = compiled.proto.blob.next_offset  # the size of weight.bin
        limit = self.options.max_package_size
        if limit is not None and written > limit:
            raise XdslAneError(
                f"{package or 'the package'}: {size_text(written)} of weights, over "
                f"{size_option(limit)} (raise it)"
            )

    def package(self, output: str | Path | None, force: bool) -> LlmPackage:
        modules = self.programs()
        compiled, weights = self.compile_part(modules, "", False)
        record = self.record()
        vision = None
        if self.vision is not None:
            record["segments"] = segment_records(self.decoder, compiled)
            stem = Path(output).stem if output is not None else "OUT"
            vision = self.vision_package(f"{stem}.{VISION_PACKAGE}.mlpackage")
            record["vision"] = vision.record
        single = LlmPackage(compiled, record, self.source, weights, self.text_files)
        if vision is not None:
            single.writers |= vision.writers()
            single.vision = vision
        if self.config.per_layer_width:
            from xdsl_ane.models.per_layer_inputs import PER_LAYER_FILE

            single.writers[PER_LAYER_FILE] = self.write_per_layer
        if self.options.experts == "routed":
            from xdsl_ane.models.checkpoint_use import row_views
            from xdsl_ane.models.routed import write_experts

            views = row_views(self.config, self.decoder.shape.chunk)
            single.writers["experts.bin"] = partial(
                write_experts, self.config, self.checkpoint, views
            )
        if output is not None:
            single.save(output, force)
        return single

    def package_set(self, output: str | Path | None, force: bool) -> LlmPackageSet:
        """The split model's packages, each written once compiled (with
        `output`), its weights released after."""
        o, plan = self.options, self.plan
        record = self.record()
        modules = self.programs()
        compile_part = partial(self.compile_part, modules, written=output is not None)
        with ExitStack() as stack:
            directory = None
            if output is not None:
                output = Path(output)
                directory = stack.enter_context(
                    split_output(output, plan.reason, force, self.source)
                )
            packages = split_parts(
                plan, self.decoder, compile_part, directory, self.check_size
            )
            del record["states"]  # each package has its own slice
            record |= {
                "split": plan.reason,
                "max_package_size": o.max_package_size,
                "layers_per_package": o.layers_per_package,
                "hidden_states": {
                    "shape": [1, "S", self.config.hidden_size],
                    "dtype": "fp16",
                },
                "packages": [p.record for p in packages],
            }
            if self.vision is not None:
                vision = self.vision_package(f"{VISION_PACKAGE}.mlpackage")
                if directory is not None:
                    vision.write(directory / f"{VISION_PACKAGE}.mlpackage")
                record["vision"] = vision.record
            package_set = LlmPackageSet(packages, record, self.source, self.text_files)
            if self.vision is not None:
                package_set.vision = vision
            if self.config.per_layer_width:
                from xdsl_ane.models.per_layer_inputs import PER_LAYER_FILE

                package_set.writers[PER_LAYER_FILE] = self.write_per_layer
            if directory is not None:
                package_set.write_rest(directory)
        if output is not None:
            package_set.written = output
        return package_set


def compile_llm(
    checkpoint: str | Path,
    options: LlmOptions | None = None,
    *,
    on_plan: Callable[[bool, str | None], None] | None = None,
    output: str | Path | None = None,
    force: bool = False,
    **fields: Any,
) -> LlmPackage | LlmPackageSet:
    """Compiles a Hugging Face checkpoint directory to a stateful
    multifunction package (`prefill`, `decode`), or with
    `layers_per_package` to a set of them (see `api/llm.py`). The options
    are `LlmOptions`' fields, given as one object or by name.
    `compress` (`MODE[:GRANULARITY[:GROUP]]`) compresses the weights with
    `mil-compress-weights`, the LM head as `compress_head` and the
    embedding table as `compress_embedding` (as in `xdsl_ane.compile`).
    `compress="w8a8"` makes the activations those weights multiply int8
    too and `"auto:BITS"` picks a mode per weight, both measured on the
    `calibration` prompts run through prefill and decode
    (`api/llm_calibration.py`). `fp16_check` runs the fp32 program on the
    `calibration` prompts (token ids, or a .txt or .npz file of them;
    default two seeded random ones) and, where a layer's hidden states
    would leave fp16's range, carries the residual stream scaled by a power
    of two that leaves the outputs unchanged (`models.calibration.fp16_rescaled`);
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
    Errors are one-line `XdslAneError`s naming the file, tensor or field."""
    from xdsl_ane.api import w8a8

    options = replace(options or LlmOptions(), **fields)
    options.check()
    job = LlmCompilation(checkpoint, options)
    job.plan_packages()
    if on_plan is not None:
        on_plan(job.plan is not None, job.plan.reason if job.plan else None)
    if options.fp16_check:
        job.check_fp16()
    if w8a8.is_calibrated(options.compress):
        job.calibrate()
    if job.plan is None:
        return job.package(output, force)
    return job.package_set(output, force)


def segment_records(decoder: Decoder, compiled: Any) -> list[dict[str, Any]]:
    """The segments of one package whose embedding is a step of its own
    (`segments_module`), as the runner calls them: each one's functions,
    inputs, outputs (Core ML's names) and the later inputs they feed."""
    functions = compiled.manifest()["functions"]
    records = []
    for part, names in SEGMENT_FUNCTIONS.items():
        outputs = functions[names.get("prefill", "prefill")]["outputs"]
        logical = decoder.part(part=part, layers=None).output_names()
        taken = part_inputs(decoder.part(part=part, layers=None))
        records.append(
            {
                "name": part,
                "function_names": {f: names.get(f, f) for f in ("prefill", "decode")},
                "inputs": taken,
                "outputs": outputs,
                "feeds": {o: n for o, n in zip(outputs, logical) if o != n},
            }
        )
    return records


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

    from xdsl_ane.api import CompiledModel
    from xdsl_ane.dialects import mil
    from xdsl_ane.weights.check import check_weights

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
    decoder: Decoder,
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
            packages.append(llm_part(plan_part, decoder, compiled, weights))
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


def part_inputs(decoder: Decoder) -> list[str] | dict[str, list[str]]:
    """A part's non-state inputs as its record lists them: the layers of
    a decoder whose image rows attend both ways take `image_blocks` in
    prefill (last, as `models.llm` builds it), so per function."""
    names = decoder.input_names()
    shape = decoder.shape
    if shape.part == "layers" and shape.image_blocks and shape.prefill > 1:
        return {"prefill": [*names, "image_blocks"], "decode": names}
    return names


def llm_part(
    plan_part: tuple[str, str, Any, str],
    decoder: Decoder,
    compiled: Any,
    weights: dict[str, np.ndarray],
) -> LlmPart:
    """The part `plan_part` (name, part, layers, package) of a split
    model, of its package's compiled model and weights."""
    name, part, layers, package = plan_part
    part_decoder = decoder.part(part=part, layers=layers)
    inputs = part_inputs(part_decoder)
    states = cache_states(part_decoder) if layers else {}
    functions = ENDS_FUNCTIONS if package == ENDS and part == "embed" else {}
    # Core ML's names: a layers package takes and returns hidden_states,
    # and its output is renamed (inputs and outputs share one namespace);
    # `feeds` says which later input each renamed output is.
    prefill_name = functions.get("prefill", "prefill")
    outputs = compiled.manifest()["functions"][prefill_name]["outputs"]
    logical = part_decoder.output_names()
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

"""`xdsl-ane compile-llm` and `xdsl-ane generate`: Hugging Face checkpoints
to stateful multifunction Core ML packages, and greedy generation with
them in the interpreter.

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
overwrites them before any query can reach them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from xdsl_ane.tools.chip_option import add_chip_argument
from xdsl_ane.tools.common import (
    XdslAneError,
    atomic_output,
    check_outputs,
    first_line,
)
from xdsl_ane.tools.compress_options import add_compress_arguments, compress_options


@dataclass
class LlmPackage:
    """A compiled LLM: the compiled model (both functions) and its manifest."""

    compiled: Any
    manifest_record: dict[str, Any]
    source: str
    weights: dict[str, np.ndarray] = field(repr=False, default_factory=dict)

    def manifest(self) -> dict[str, Any]:
        return {**self.compiled.manifest(), "llm": self.manifest_record}

    def validate(self):
        return self.compiled.validate()

    def summary(self, chip: str | None = "m4") -> str:
        return self.compiled.summary(chip=chip)

    def save(self, path: str | Path, force: bool = False) -> Path:
        """Writes OUT.mlpackage and OUT.manifest.json (nothing on failure)."""
        from xdsl_ane.api import manifest_path

        path = Path(path)
        check_outputs([path, manifest_path(path, "mlpackage")], force, [self.source])
        manifest = json.dumps(self.manifest(), indent=2) + "\n"
        proto = self.compiled.proto
        with atomic_output(manifest_path(path, "mlpackage"), force) as tmp:
            tmp.write_text(manifest)
            proto.save(path, force=force)
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

    def manifest(self) -> dict[str, Any]:
        return {"llm": self.manifest_record}

    def validate(self) -> None:
        """coremltools' loader on each package; raises on the first failure."""
        for part in self.parts:
            part.compiled.validate().raise_if_failed()

    def summary(self, chip: str | None = "m4") -> str:
        lines = [f"{self.source}: {len(self.parts)} packages"]
        for part in self.parts:
            counts = part.compiled.op_counts()
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
        NAME.manifest.json, and manifest.json (nothing on failure)."""
        path = Path(path)
        check_split_output(path)
        check_outputs([path], force, [self.source])
        manifest = json.dumps(self.manifest(), indent=2) + "\n"
        with atomic_output(path, force) as tmp:
            tmp.mkdir()
            for part in self.parts:
                (tmp / f"{part.name}.manifest.json").write_text(
                    json.dumps(
                        {**part.compiled.manifest(), "llm_part": part.record}, indent=2
                    )
                    + "\n"
                )
                part.compiled.proto.save(tmp / part.record["path"])
            (tmp / "manifest.json").write_text(manifest)
        return path


def check_split_output(path: Path) -> None:
    if path.suffix == ".mlpackage":
        raise XdslAneError(
            f"{path}: with --layers-per-package the output is a directory of "
            "packages; name it without .mlpackage"
        )


def cache_states(config: Any, layers: int, context: int) -> dict[str, Any]:
    shape = [layers, config.num_kv_heads, context, config.head_dim]
    return {
        name: {"shape": shape, "dtype": "fp16"} for name in ("key_cache", "value_cache")
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
    compress: str | None = None,
    compress_head: str = "same",
    compress_embedding: str = "none",
) -> LlmPackage | LlmPackageSet:
    """Compiles a Hugging Face checkpoint directory to a stateful
    multifunction package (`prefill`, `decode`), or with
    `layers_per_package` to a set of them (see the module docstring).
    `compress` (`MODE[:GRANULARITY[:GROUP]]`) compresses the weights with
    `mil-compress-weights`, the LM head as `compress_head` and the
    embedding table as `compress_embedding` (as in `xdsl_ane.compile`).
    Errors are one-line `XdslAneError`s naming the file, tensor or field."""
    from xdsl_ane.api import compile as compile_module
    from xdsl_ane.frontend.checkpoint import read_checkpoint
    from xdsl_ane.limits import MAX_DIMENSION
    from xdsl_ane.models.llm import (
        LlmShape,
        build_llm,
        check_all_used,
        check_shape,
        chunks,
        llm_config,
        llm_weights,
        output_names,
        split_parts,
    )

    source = str(checkpoint)
    ck = read_checkpoint(checkpoint)
    config = llm_config(ck)
    shape = LlmShape(
        context, prefill, MAX_DIMENSION if chunk is None else chunk, argmax
    )
    check_shape(config, shape, str(Path(source) / "config.json"))
    if layers_per_package is not None and layers_per_package < 1:
        raise XdslAneError(
            f"--layers-per-package {layers_per_package}: must be at least 1"
        )
    record: dict[str, Any] = {
        "family": config.family,
        "vocab_size": config.vocab_size,
        "context": context,
        "prefill": prefill,
        "functions": {"prefill": prefill, "decode": 1},
        "inputs": ["input_ids", "position"],
        "states": cache_states(config, config.num_layers, context),
        "outputs": output_names(config, shape),
        "argmax": argmax,
        "head_chunks": [[s, e] for s, e in chunks(config.vocab_size, shape.chunk)],
        "protocol": "prefill at positions 0, N, 2N, ... (padded), then decode one "
        "token per call at its position; states start at zeros",
    }

    if layers_per_package is None:
        part_shapes = [shape]
    else:
        part_shapes = [
            replace(shape, part=part, layers=layers)
            for _, part, layers in split_parts(config, layers_per_package)
        ]
    # every part's program first: a checkpoint tensor that none reads is
    # an error before anything is compiled
    modules = {s: build_llm(config, s) for s in part_shapes}
    check_all_used(ck, config, list(modules.values()))

    def compiled_part(part_shape: LlmShape):
        module = modules.pop(part_shape)
        weights = llm_weights(ck, config, part_shape, module)
        compiled = compile_module(
            module,
            weights=weights,
            compress=compress,
            compress_head=compress_head,
            compress_embedding=compress_embedding,
        )
        if validate:
            compiled.validate().raise_if_failed()
        return compiled, weights

    if layers_per_package is None:
        compiled, weights = compiled_part(shape)
        return LlmPackage(compiled, record, source, weights)
    packages = []
    for name, part, layers in split_parts(config, layers_per_package):
        part_shape = replace(shape, part=part, layers=layers)
        compiled, weights = compiled_part(part_shape)
        inputs = {
            "embed": ["input_ids"],
            "layers": ["hidden_states", "position"],
            "head": ["hidden_states"],
        }[part]
        states = cache_states(config, layers[1] - layers[0], context) if layers else {}
        # Core ML's names: a layers package takes and returns hidden_states,
        # and its output is renamed (inputs and outputs share one namespace);
        # `feeds` says which later input each renamed output is.
        outputs = compiled.manifest()["functions"]["prefill"]["outputs"]
        logical = output_names(config, part_shape)
        part_record = {
            "name": name,
            "path": f"{name}.mlpackage",
            "layers": list(layers) if layers else None,
            "inputs": inputs,
            "outputs": outputs,
            "feeds": {o: n for o, n in zip(outputs, logical) if o != n},
            "states": states,
        }
        packages.append(LlmPart(name, compiled, part_record, weights))
    del record["states"]  # each package has its own slice
    record["layers_per_package"] = layers_per_package
    record["hidden_states"] = {"shape": [1, "S", config.hidden_size], "dtype": "fp16"}
    record["packages"] = [p.record for p in packages]
    return LlmPackageSet(packages, record, source)


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
        record = split_record(path)
        if record is not None:
            programs = [
                (p, read_compiled(path / p["path"])) for p in record["packages"]
            ]
        else:
            program = read_compiled(path)
            record = program.manifest.get("llm")
            if record is None:
                raise XdslAneError(
                    f"{path}: no LLM manifest beside it (compile it with compile-llm)"
                )
            programs = [(record, program)]
        self.record = record
        self.parts = [
            (p, StatefulRuntime(program.module, program.weights))
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
            outputs = runtime.call(function, [values[n] for n in part["inputs"]])
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

    def generate(
        self, prompt: list[int], max_new_tokens: int
    ) -> tuple[list[int], list[np.ndarray]]:
        """Greedy generation: the `max_new_tokens` tokens after the prompt
        (as transformers' `generate(max_new_tokens=N)` counts them: the
        prefill's token is the first) and the logits that chose each
        (empty with argmax)."""
        n, context = self.record["prefill"], self.record["context"]
        if not prompt:
            raise XdslAneError("--prompt-ids: no token ids")
        if max_new_tokens < 1:
            raise XdslAneError(f"--max-new-tokens {max_new_tokens}: must be at least 1")
        # Every token but the last new one is written to the cache.
        if len(prompt) + max_new_tokens - 1 > context:
            raise XdslAneError(
                f"a prompt of {len(prompt)} tokens and {max_new_tokens} new tokens "
                f"need {len(prompt) + max_new_tokens - 1} cache positions; the "
                f"package's context is {context}"
            )
        vocab = self.record["vocab_size"]
        if any(not 0 <= t < vocab for t in prompt):
            raise XdslAneError(f"--prompt-ids: every id must lie in [0, {vocab})")
        for start in range(0, len(prompt), n):
            out = self.call("prefill", prompt[start : start + n], start)
        row = out[-1]
        tokens: list[int] = []
        logits_seen: list[np.ndarray] = []
        while True:
            if self.record["argmax"]:
                tokens.append(int(row))
            else:
                logits_seen.append(row)
                tokens.append(int(np.argmax(row)))
            if len(tokens) == max_new_tokens:
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
    caches = [p["states"]["key_cache"]["shape"] for p in parts if p.get("states")]
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
                f"--reference {checkpoint}: {key} is {reference[key]}, the "
                f"package's is {value} (not the checkpoint it was compiled from)"
            )


def reference_generate(
    checkpoint: str | Path, prompt: list[int], max_new_tokens: int
) -> tuple[list[int], list[np.ndarray]]:
    """transformers' greedy `generate(max_new_tokens=N)` on the
    checkpoint's weights (fp32): the new tokens and the logits that chose
    each. It runs on to N tokens, as the package's generation does: no
    end-of-sequence token stops it."""
    try:
        import torch
        import transformers
    except ImportError:
        raise XdslAneError(
            "--reference needs torch and transformers: pip install 'xdsl-ane[torch]'"
        ) from None
    # The package's generation is plain greedy: none of the checkpoint's
    # generation_config.json (sampling, penalties, stop tokens) applies.
    settings = transformers.GenerationConfig(
        max_new_tokens=max_new_tokens,
        do_sample=False,
        eos_token_id=None,
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
            f"--reference {checkpoint}: transformers failed: {first_line(e)}"
        ) from None
    finally:
        if bars:
            transformers.utils.logging.enable_progress_bar()
    tokens = [int(t) for t in out.sequences[0, len(prompt) :]]
    return tokens, [row[0].numpy() for row in out.logits]


# --- the commands -------------------------------------------------------------------


def add_llm_commands(commands: Any) -> None:
    """Registers `compile-llm` and `generate` on the CLI's subparsers."""
    from xdsl_ane.tools.common import add_output_arguments

    compile_llm_ = commands.add_parser(
        "compile-llm",
        help="compile a Hugging Face checkpoint to a stateful prefill/decode package",
        description="Reads a Hugging Face checkpoint directory (config.json and "
        "safetensors) of a Qwen3, Qwen2, Llama or Mistral model and writes one "
        "multifunction package (prefill and decode sharing one weight blob, the "
        "KV cache as Core ML state) and OUT.manifest.json, the calling protocol "
        "a runtime needs; with --layers-per-package a directory of packages.",
    )
    compile_llm_.add_argument("checkpoint", help="Hugging Face model directory")
    add_output_arguments(
        compile_llm_,
        "the package: OUT.mlpackage and OUT.manifest.json, or a directory with "
        "--layers-per-package",
    )
    compile_llm_.add_argument(
        "--context",
        type=int,
        default=512,
        help="KV cache length: prompt and generated tokens (default: %(default)s)",
    )
    compile_llm_.add_argument(
        "--prefill",
        type=int,
        default=64,
        help="tokens per prefill call (default: %(default)s)",
    )
    compile_llm_.add_argument(
        "--chunk",
        type=int,
        default=None,
        help="rows per embedding/LM-head chunk (default: the ANE's 16384)",
    )
    compile_llm_.add_argument(
        "--argmax", action="store_true", help="output the next token, not logits"
    )
    compile_llm_.add_argument(
        "--validate", action="store_true", help="reload with coremltools' MIL loader"
    )
    compile_llm_.add_argument(
        "--layers-per-package",
        type=int,
        default=None,
        metavar="K",
        help="split into packages embed, layers of at most K each, head "
        "(OUT is then a directory)",
    )
    add_compress_arguments(compile_llm_)
    add_chip_argument(compile_llm_, "the chip of the summary's estimate")
    compile_llm_.set_defaults(handler=command_compile_llm)

    generate = commands.add_parser(
        "generate",
        help="greedy generation with a compile-llm package (interpreter)",
        description="Runs the package's prefill on the prompt and its decode "
        "once per further token in the numpy interpreter, the KV cache carried "
        "between calls, and prints the prompt and the new token ids; with "
        "--reference it also runs transformers' greedy generate on the "
        "checkpoint and fails (exit 1) where the tokens differ.",
    )
    generate.add_argument(
        "package", help="OUT.mlpackage (or the OUT directory) written by compile-llm"
    )
    generate.add_argument(
        "--prompt-ids", required=True, help="the prompt: comma-separated token ids"
    )
    generate.add_argument(
        "--max-new-tokens",
        type=int,
        default=16,
        metavar="N",
        help="tokens to generate after the prompt, as transformers' "
        "max_new_tokens (default: %(default)s)",
    )
    generate.add_argument(
        "--reference",
        metavar="CHECKPOINT",
        help="also run transformers on the checkpoint and compare",
    )
    generate.set_defaults(handler=command_generate)


def command_compile_llm(args: Any) -> int:
    from xdsl_ane.api import manifest_path
    from xdsl_ane.chips import get_chip

    get_chip(args.chip)  # an unknown chip fails before the work
    output = Path(args.output)
    split = args.layers_per_package is not None
    if split:
        check_split_output(output)
    outputs = [output] if split else [output, manifest_path(output, "mlpackage")]
    check_outputs(outputs, args.force, [args.checkpoint])
    package = compile_llm(
        args.checkpoint,
        context=args.context,
        prefill=args.prefill,
        chunk=args.chunk,
        argmax=args.argmax,
        validate=args.validate,
        layers_per_package=args.layers_per_package,
        **compress_options(args),
    )
    package.save(output, force=args.force)
    print(package.summary(chip=args.chip))
    record = package.manifest_record
    if split:
        states = ", ".join(
            f"{p['name']} {p['states']['key_cache']['shape']}"
            for p in record["packages"]
            if p["states"]
        )
    else:
        states = ", ".join(f"{k} {v['shape']}" for k, v in record["states"].items())
    print(
        f"  llm: {record['family']}, vocabulary {record['vocab_size']}, context "
        f"{record['context']}, prefill {record['prefill']}, "
        f"{len(record['head_chunks'])} head chunk(s), "
        + ("key/value states per package: " if split else "states ")
        + states
    )
    if split:
        print(f"  wrote {output}/ ({len(record['packages'])} packages, manifest.json)")
    else:
        print(f"  wrote {output} and {manifest_path(output, 'mlpackage')}")
    if args.validate:
        print("  validated: coremltools' MIL loader rebuilt both functions and states")
    return 0


def parse_ids(text: str) -> list[int]:
    try:
        ids = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise XdslAneError(
            f"--prompt-ids {text}: expected integers like 1,2,3"
        ) from None
    if not ids:
        raise XdslAneError("--prompt-ids: no token ids")
    return ids


def command_generate(args: Any) -> int:
    prompt = parse_ids(args.prompt_ids)
    runner = PackageRunner(args.package)
    if args.reference:
        check_reference(args.reference, runner.record)
    tokens, logits = runner.generate(prompt, args.max_new_tokens)
    print(f"prompt: {ids_text(prompt)}")
    print(f"tokens: {ids_text(tokens)}")
    if not args.reference:
        return 0
    ref_tokens, ref_logits = reference_generate(
        args.reference, prompt, args.max_new_tokens
    )
    print(f"reference: {ids_text(ref_tokens)}")
    if logits:
        diff = max(float(np.abs(a - b).max()) for a, b in zip(logits, ref_logits))
        print(f"largest logit difference: {diff:.3g}")
    differ = [i for i, (a, b) in enumerate(zip(tokens, ref_tokens)) if a != b]
    if not differ and len(tokens) == len(ref_tokens):
        print("same tokens")
        return 0
    i = differ[0] if differ else min(len(tokens), len(ref_tokens))
    mine = tokens[i] if i < len(tokens) else "none"
    theirs = ref_tokens[i] if i < len(ref_tokens) else "none"
    raise XdslAneError(
        f"{args.package}: new token {i + 1} (position {len(prompt) + i}) differs "
        f"from the reference: {mine}, transformers {theirs}"
    )


def ids_text(ids: list[int]) -> str:
    return ",".join(map(str, ids))

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
tokens go through `decode` instead (`models.kv_cache.prompt_calls`); so do a
short last chunk's with recurrent state (the record's `recurrent`: short
convolutions' last rows), which padding rows would enter.

Gemma 4's per-layer embedding table is a file beside the package
(`OUT.per_layer.bin`; `per_layer.bin` in a split model's directory), fp16
[vocab, L·P] as the record's `per_layer` says: each call passes the
rows of its ids as the input `per_layer_rows` of the function that takes
input_ids, read from a memory map (models/per_layer_inputs.py).

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
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from xdsl_ane.ane.chips import DEFAULT_CHIP
from xdsl_ane.api.text import (
    Sampling,
    TextTokenizer,
)
from xdsl_ane.errors import XdslAneError, first_line, option
from xdsl_ane.models.per_layer_inputs import (
    PER_LAYER_FILE,
    PER_LAYER_ROWS,
    gathered_rows,
)
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
    writers: dict[str, Any] = field(repr=False, default_factory=dict)
    """Files beside the package (OUT.NAME), each written by its function
    of the path (routed experts' `experts.bin`, a vision package)."""
    vision: Any = field(repr=False, default=None)
    """A vision-language checkpoint's vision package (api/vlm.py)."""

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

        from xdsl_ane.api import manifest_path

        path = Path(path)
        copies = {
            path.with_name(f"{path.stem}.{n}"): d for n, d in self.text_files.items()
        }
        written = {
            path.with_name(f"{path.stem}.{n}"): w for n, w in self.writers.items()
        }
        outputs = [path, manifest_path(path, "mlpackage"), *copies, *written]
        check_outputs(outputs, force, [self.source])
        manifest = json.dumps(self.manifest(path), indent=2) + "\n"
        with ExitStack() as stack:  # every file moved into place, or none
            for copy, data in copies.items():
                stack.enter_context(atomic_output(copy, force)).write_bytes(data)
            for target, write in written.items():
                write(stack.enter_context(atomic_output(target, force)))
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
    vision: Any = field(repr=False, default=None)
    """A vision-language checkpoint's vision package (api/vlm.py)."""
    writers: dict[str, Any] = field(repr=False, default_factory=dict)
    """Files in the directory beside the packages (NAME), each written by
    its function of the path (Gemma 4's `per_layer.bin`)."""

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
            if part.record.get("function_names") is None:  # once per package
                lines += [f"    {x}" for x in part.compiled.compression_lines()]
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
        """The copies of the text files, the `writers`' files and
        manifest.json, in `directory`."""
        for name, data in self.text_files.items():
            (directory / name).write_bytes(data)
        for name, write in self.writers.items():
            write(directory / name)
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


# --- generation in the interpreter ------------------------------------------------


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


def per_layer_table(file: Path, record: dict[str, Any]) -> Any:
    """The map of the per-layer table's file (`file`: in a split model's
    directory; else the package, the file beside it) as [vocab, L·P]
    fp16 (None: the model has none); a missing or short file is an error
    naming it."""
    table = record.get("per_layer")
    if table is None:
        return None
    if file.suffix == ".mlpackage":
        file = file.with_name(f"{file.stem}.{table['file']}")
    shape = tuple(int(n) for n in table["shape"])
    need = 2 * int(np.prod(shape))
    if not file.is_file() or file.stat().st_size != need:
        raise XdslAneError(
            f"{file}: the per-layer embedding table is missing or not {need} bytes"
        )
    return np.memmap(file, np.float16, mode="r", shape=shape)


def routed_experts(path: Path, record: dict[str, Any]) -> Any:
    """The map of the experts file beside a routed package (None: not
    routed); a missing or short file is an error naming it."""
    experts = record.get("experts")
    if experts is None:
        return None
    file = path.with_name(f"{path.stem}.{experts['file']}")
    layer = sum(2 * int(np.prod(shape)) for shape in experts["shapes"].values())
    need = layer * len(experts["layers"])
    if not file.is_file() or file.stat().st_size != need:
        raise XdslAneError(
            f"{file}: the routed experts' weights are missing or not {need} bytes"
        )
    return np.memmap(file, np.uint8, mode="r")


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
            programs = [(part, program) for part in record.get("segments", [record])]
            beside = path.parent
        self.record = record
        self.manifest_dir = beside
        """Where the manifest's relative paths start (the vision package)."""
        self.experts = routed_experts(path, record)
        self.per_layer = per_layer_table(
            path / PER_LAYER_FILE if "packages" in record else path, record
        )
        """Gemma 4's per-layer table [vocab, L·P] (a read-only map of the
        file beside the package: only a call's rows are read), or None."""
        """Routed experts' weights (a read-only map of the file beside the
        package: only the experts a call picks are read), or None."""
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

    def call(
        self,
        function: str,
        ids: list[int],
        position: int,
        rows: dict[int, np.ndarray] | None = None,
        blocks: list[int] | None = None,
        rope: np.ndarray | None = None,
    ) -> np.ndarray:
        """Logits [len(ids), V] (or next tokens [len(ids)] with argmax).
        `rows`: hidden states [hidden] that replace the embedding's rows
        (by row of the call: image features, api/vlm.py); `blocks`: the
        image of each row (−1: text), for a prefill that takes them;
        `rope`: the rows' multimodal RoPE positions [len(ids), 3] where
        the package takes them (default: position + i on every axis)."""
        from xdsl_ane.models.rope import ROPE_POSITION, text_rope_positions
        from xdsl_ane.passes.layouts import layout_of

        tokens = self.record["functions"][function]
        padded = np.zeros(tokens, np.int32)
        padded[: len(ids)] = ids
        values = {
            "input_ids": layout_of((tokens,)).to_ane(padded),
            "position": layout_of((1,)).to_ane(np.array([position], np.int32)),
        }
        if self.record.get("mrope_section"):
            if rope is None:
                rope = text_rope_positions(position, len(ids))
            # (padding rows repeat the last: any row of the tables will do)
            at = np.minimum(np.arange(tokens), len(ids) - 1)
            values[ROPE_POSITION] = layout_of((tokens, 3)).to_ane(
                np.asarray(rope, np.int32)[at]
            )
        if blocks is not None:
            ids_blocks = np.full(tokens, -1, np.int32)
            ids_blocks[: len(blocks)] = blocks
            values["image_blocks"] = layout_of((tokens,)).to_ane(ids_blocks)
        if self.per_layer is not None:  # the table's rows of the ids
            rows_in = gathered_rows(self.per_layer, padded, self.record["per_layer"])
            values[PER_LAYER_ROWS] = layout_of(rows_in.shape).to_ane(rows_in)
        for part, runtime in self.parts:
            name = part.get("function_names", {}).get(function, function)
            if part.get("experts_layer") is not None:
                layer = part["experts_layer"]
                values |= self.expert_inputs(layer, values, function, tokens)
            inputs = part["inputs"]
            if isinstance(inputs, dict):  # routed segments: per function
                inputs = inputs[function]
            if PER_LAYER_ROWS in inputs:  # in the program's precision
                at = list(inputs).index(PER_LAYER_ROWS)
                values[PER_LAYER_ROWS] = as_argument(runtime, name, at, values)
            outputs = runtime.call(name, [values[n] for n in inputs])
            feeds = part.get("feeds", {})
            values.update(zip([feeds.get(o, o) for o in part["outputs"]], outputs))
            if rows and part.get("name") == "embed":
                hidden = values["hidden_states"]
                values["hidden_states"] = merged_rows(hidden, tokens, rows)
        outputs = [values[n] for n in self.record["outputs"]]
        if self.record["argmax"]:
            return layout_of((tokens,)).to_logical(outputs[0])[: len(ids)]
        logical = [
            layout_of((tokens, e - s)).to_logical(o)
            for o, (s, e) in zip(outputs, self.record["head_chunks"])
        ]
        return np.concatenate(logical, 1)[: len(ids)].astype(np.float32)

    def expert_inputs(
        self, layer: int, values: dict, function: str, tokens: int
    ) -> dict:
        """A segment's expert inputs from the routing before it: every
        expert in prefill (the routing as it is), the k picked by the one
        token in decode (their weights), read from the experts file."""
        from xdsl_ane.passes.layouts import layout_of

        record, experts = self.record["experts"], self.experts
        count = record["count"]
        routing = layout_of((1, tokens, count)).to_logical(values["routing"])
        routing = routing.astype(np.float32)
        if function == "decode":  # the k experts the token picked
            picked = np.sort(
                np.argsort(-routing[0, 0], kind="stable")[: record["top_k"]]
            )
            routing = routing[:, :, picked]
        else:
            picked = np.arange(count)
        arrays = {"experts_weight": routing}
        per = record["per_input"][function]
        for kind in record["shapes"]:
            shape = record["shapes"][kind]
            offset = record["layers"][str(layer)][kind]
            table = np.ndarray(shape, np.float16, experts, offset)
            rows, columns = shape[1:]
            for i, start in enumerate(range(0, len(picked), per)):
                first, n = int(picked[start]), len(picked[start : start + per])
                run = table[first : first + n]  # a view of the file
                arrays[f"experts_{kind}_{i}"] = run.reshape(1, n * rows, 1, columns)
        dtype = values["routing"].dtype  # the program's precision
        return {
            n: layout_of(a.shape).to_ane(a.astype(dtype, copy=False))
            for n, a in arrays.items()
        }

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
        rows: dict[int, np.ndarray] | None = None,
        blocks: list[int] | None = None,
        rope: np.ndarray | None = None,
    ) -> tuple[list[int], list[np.ndarray]]:
        """Generation as transformers' `generate(max_new_tokens=N)`: at
        most N tokens after the prompt (the prefill's token is the first),
        ending after the first of `stop` (which is kept, as transformers
        keeps it), and the logits that chose each (empty with argmax).
        Greedy, or drawn as `sampling` says. A prompt longer than the
        prefill length runs prefill once per `prefill` tokens (chunked
        prefill, the last chunk padded). `on_token(id)` is called as each
        token is chosen. `rows`: hidden states that replace the embedding
        of the prompt's tokens at their positions (an image's features);
        `blocks`: the image of each prompt token (−1: text) for a package
        whose image rows see each other both ways, each image then in one
        prefill call (api/vlm.py's image_calls); `rope`: the prompt's
        multimodal RoPE positions [len(prompt), 3] (`VisionRunner.
        rope_positions`), the new tokens' counting on from the largest + 1."""
        self.check_prompt(prompt, max_new_tokens, sampling=sampling)
        n = self.record["prefill"]
        generator = sampling.generator() if sampling is not None else None
        from xdsl_ane.models.kv_cache import prompt_calls
        from xdsl_ane.models.rope import text_rope_positions

        window = self.record.get("local_window")
        recurrent = self.record.get("recurrent", False)
        calls = prompt_calls(len(prompt), n, window, recurrent)
        if blocks is not None:
            from xdsl_ane.api.vlm import image_calls

            calls = image_calls(blocks, n, window, recurrent)
        for function, start, count in calls:
            chunk = {
                i - start: r
                for i, r in (rows or {}).items()
                if start <= i < start + count
            }
            own = None
            if blocks is not None and function == "prefill":
                own = blocks[start : start + count]
            ids = prompt[start : start + count]
            at = None if rope is None else rope[start : start + count]
            out = self.call(function, ids, start, chunk, own, at)
        # transformers' rope_deltas: how far the positions lag the cache rows
        delta = 0 if rope is None else int(rope.max()) + 1 - len(prompt)
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
            at = len(prompt) + len(tokens) - 1
            here = None if rope is None else text_rope_positions(at + delta, 1)
            row = self.call("decode", [tokens[-1]], at, rope=here)[0]


def as_argument(runtime: Any, function: str, index: int, values: dict) -> Any:
    """values[PER_LAYER_ROWS] in the dtype of `function`'s argument
    `index` (fp16 in a compiled package)."""
    from xdsl_ane.interpreter.values import find_function, numpy_dtype

    arg = find_function(runtime.module, function).body.block.args[index]
    dtype = numpy_dtype(arg.type.element_type)
    return values[PER_LAYER_ROWS].astype(dtype, copy=False)


def merged_rows(
    hidden: np.ndarray, tokens: int, rows: dict[int, np.ndarray]
) -> np.ndarray:
    """The embedding's hidden states [1, tokens, hidden] (in the ANE's
    layout) with rows replaced by `rows` (row -> [hidden]), in its
    precision."""
    from xdsl_ane.passes.layouts import layout_of

    width = len(next(iter(rows.values())))
    layout = layout_of((1, tokens, width))
    logical = layout.to_logical(hidden).copy()
    for i, row in rows.items():
        logical[0, i] = row
    return layout.to_ane(logical).astype(hidden.dtype)


def check_reference(checkpoint: str | Path, record: dict[str, Any]) -> None:
    """Fails unless `checkpoint` is a checkpoint directory that compile-llm
    reads (with its messages: a missing directory or file, a truncated
    shard, an unsupported field) holding a model of the package's shape
    (family, vocabulary, and the states of each package: layers, heads and
    head sizes), so that `--reference` fails before anything runs rather
    than inside transformers after the tokens."""
    from xdsl_ane.models.hf_config import llm_config
    from xdsl_ane.models.llm import Decoder, LlmShape
    from xdsl_ane.models.vision_language import text_checkpoint, vision_family
    from xdsl_ane.weights.checkpoint import read_checkpoint

    read = read_checkpoint(checkpoint)
    family = vision_family(read.config, str(Path(checkpoint) / "config.json"))
    if family is not None:  # its language model
        read = text_checkpoint(read, family)
    config = llm_config(read)
    flag = option("checkpoint", checkpoint, flag="--reference")
    package = {"family": record["family"], "vocab_size": record["vocab_size"]}
    reference = {"family": config.family.name, "vocab_size": config.vocab_size}
    for key, value in package.items():
        if reference[key] != value:
            raise XdslAneError(
                f"{flag}: {key} is {reference[key]}, the package's is {value} (not "
                "the checkpoint it was compiled from)"
            )
    split = "packages" in record
    for part in record.get("packages", [record]):
        layers = part.get("layers")
        kind = "layers" if layers else "embed" if split else "all"
        shape = LlmShape(
            record["context"],
            record["prefill"],
            part=kind,
            layers=tuple(layers) if layers else None,
        )
        theirs = {
            name: list(dims)
            for name, dims in Decoder(config, shape).cache_shapes().items()
        }
        ours = {name: s["shape"] for name, s in (part.get("states") or {}).items()}
        if theirs != ours:
            raise XdslAneError(
                f"{flag}: its states are {theirs}, the package's {ours} (not the "
                "checkpoint it was compiled from)"
            )


def reference_generate(
    checkpoint: str | Path,
    prompt: list[int],
    max_new_tokens: int,
    stop: list[int] | tuple[int, ...] = (),
    images: dict[str, np.ndarray] | None = None,
) -> tuple[list[int], list[np.ndarray]]:
    """transformers' greedy `generate(max_new_tokens=N)` on the
    checkpoint's weights (fp32): the new tokens and the logits that chose
    each. It stops at the end-of-sequence tokens `stop` alone, as the
    package's generation does (none: it runs on to N tokens). With
    `images` (a vision-language checkpoint: `VisionRunner.reference_inputs`,
    pixel_values and what else the model reads of the image), its image
    and text model is run on them."""
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
        auto = (
            transformers.AutoModelForCausalLM
            if images is None
            else transformers.AutoModelForImageTextToText
        )
        model = auto.from_pretrained(str(checkpoint), dtype=torch.float32).eval()
        # (in place of the model's own, which transformers would merge in)
        model.generation_config = settings
        inputs = {n: torch.from_numpy(np.asarray(v)) for n, v in (images or {}).items()}
        with torch.no_grad():
            out = model.generate(
                torch.tensor([prompt]),
                attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
                **inputs,
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

"""`xdsl_ane.compile_asr` and `AsrRunner` (the library under `xdsl-ane
compile-asr` and `xdsl-ane transcribe`): a Whisper checkpoint to a
directory of two packages, and transcription with them in the interpreter.

OUT/ holds `encoder.mlpackage` (`encode`: input_features [1, mels, 3000]
→ encoder_hidden_states [1, 1500, d]), `decoder.mlpackage` (`prefill`
and `decode` sharing one blob and four states: models/whisper.py; either
chained packages of runs of layers when over the size limit), each
with `NAME.manifest.json` (its functions' layouts), the checkpoint's
tokenizer files, generation_config.json and preprocessor_config.json,
and `manifest.json` whose `asr` record says what a runtime needs: the
front end (numpy in the runtime: models/audio.py), the packages, the
states, the head chunks and the calling protocol.

Protocol, per 30 s window: `encode` the window's features; `prefill` the
forced prompt (padded to `prefill` tokens) at position 0 with the
encoder output, which also fills the cross-attention caches; then
`decode` one token per call at its position. The decoding rules are
transformers' (models/transcription.py).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from xdsl_ane.ane.chips import DEFAULT_CHIP
from xdsl_ane.errors import XdslAneError, first_line, option
from xdsl_ane.models.llm_packages import (
    DEFAULT_MAX_PACKAGE_SIZE,
    size_option,
    size_text,
)
from xdsl_ane.outputs import atomic_output, check_outputs

ASR_FILES = ("preprocessor_config.json",)
"""Copied beside the packages with api/text.py's TEXT_FILES."""


@dataclass(frozen=True)
class AsrOptions:
    """compile-asr's options (see `compile_asr`)."""

    context: int | None = None
    """Decoder cache positions (default: max_target_positions)."""
    prefill: int = 4
    compress: str | None = None
    compress_head: str = "same"
    compress_embedding: str = "same"
    """Whisper's token table is the embedding and the head: compressed as
    the head, so that it is stored once (with "none", once in fp16 for the
    embedding's gather and once compressed for the head)."""
    max_package_size: int | None = DEFAULT_MAX_PACKAGE_SIZE
    validate: bool = False


@dataclass
class AsrPackage:
    """A compiled Whisper: the compiled model of each package by name (the
    encoder, or its parts `encoder_F-L`, then `decoder`) and the manifest's
    `asr` record."""

    packages: dict[str, Any]
    record: dict[str, Any]
    source: str
    files: dict[str, bytes] = field(repr=False, default_factory=dict)

    def summary(self, chip: str | None = DEFAULT_CHIP) -> str:
        lines = []
        for name, compiled in self.packages.items():
            text = compiled.summary(chip=chip).splitlines()
            lines.append(f"{name}: " + text[0])
            lines += text[1:]
        return "\n".join(lines)

    def save(self, path: str | Path, force: bool = False) -> Path:
        """Writes the directory OUT (nothing on failure)."""
        path = Path(path)
        if path.suffix == ".mlpackage":
            raise XdslAneError(
                f"{path}: compile-asr writes a directory of packages (encoder and "
                "decoder); name it without .mlpackage"
            )
        check_outputs([path], force, [self.source])
        with atomic_output(path, force) as tmp:
            tmp.mkdir()
            for name, compiled in self.packages.items():
                manifest = json.dumps(compiled.manifest(), indent=2) + "\n"
                (tmp / f"{name}.manifest.json").write_text(manifest)
                compiled.write_mlpackage(tmp / f"{name}.mlpackage")
            for name, data in self.files.items():
                (tmp / name).write_bytes(data)
            record = self.record | {"files": sorted(self.files)}
            text = json.dumps({"asr": record}, indent=2) + "\n"
            (tmp / "manifest.json").write_text(text)
        return path


def compile_asr(
    checkpoint: str | Path,
    options: AsrOptions | None = None,
    *,
    output: str | Path | None = None,
    force: bool = False,
    **fields: Any,
) -> AsrPackage:
    """Compiles a Whisper checkpoint directory (config.json, safetensors,
    generation_config.json) into the encoder and decoder packages
    (`AsrOptions` fields given as one object or by name); with `output`,
    writes the directory. `compress` as in `xdsl_ane.compile`; a package
    whose weights pass `max_package_size` bytes (default 1 GB; None: no
    limit) is an error naming it. Errors are one-line `XdslAneError`s."""
    from dataclasses import replace

    from xdsl_ane.api import compile as compile_module
    from xdsl_ane.api.text import read_text_files
    from xdsl_ane.models.whisper import (
        WhisperBuilder,
        WhisperShape,
        check_all_read,
        whisper_config,
        whisper_weights,
    )
    from xdsl_ane.weights.checkpoint import read_checkpoint

    o = replace(options or AsrOptions(), **fields)
    source = str(checkpoint)
    read = read_checkpoint(checkpoint)
    config = whisper_config(read)
    shape = WhisperShape(o.context or config.target_positions, o.prefill)
    shape.check(config)
    files = read_text_files(checkpoint) | asr_files(checkpoint)
    if "generation_config.json" not in files:
        raise XdslAneError(
            f"{checkpoint}: no generation_config.json (Whisper's special tokens, "
            "suppressed tokens and languages are read from it)"
        )
    builder = WhisperBuilder(config, shape)
    parts = layer_parts(builder.encoder_module, config.encoder_layers, o, "encoder")
    decoder = layer_parts(builder.decoder_module, config.decoder_layers, o, "decoder")
    modules = {
        part_name("encoder", layers, len(parts)): builder.encoder_module(layers)
        for layers in parts
    }
    for layers in decoder:
        name = part_name("decoder", layers, len(decoder))
        modules[name] = builder.decoder_module(layers)
    check_all_read(read, list(modules.values()))
    compiled = {}
    for name, module in modules.items():
        weights = whisper_weights(config, read, module)
        check_size(name, weights, o)
        compiled[name] = compile_module(
            module,
            weights=weights,
            compress=o.compress,
            compress_head=o.compress_head,
            compress_embedding=o.compress_embedding,
        )
        compiled[name].source = source
        written = compiled[name].proto.blob.next_offset
        if o.max_package_size is not None and written > o.max_package_size:
            raise XdslAneError(
                f"the {name}: {size_text(written)} of weights, over "
                f"{size_option(o.max_package_size)} (raise it)"
            )
        if o.validate:
            compiled[name].validate().raise_if_failed()
    record = asr_record(builder, parts, decoder)
    package = AsrPackage(compiled, record, source, files)
    if output is not None:
        package.save(output, force)
    return package


def asr_record(
    builder: Any, parts: list[tuple[int, int]], decoder: list[tuple[int, int]]
) -> dict[str, Any]:
    """The manifest's `asr` record of the programs of `builder`
    (models.whisper.WhisperBuilder) in the encoder's and the decoder's
    `parts`: what a runtime needs."""
    from xdsl_ane.models.whisper import head_chunks

    config, shape = builder.c, builder.shape
    return {
        "family": "whisper",
        "mels": config.mels,
        "frames": config.frames,
        "source_positions": config.source_positions,
        "d_model": config.d_model,
        "vocab_size": config.vocab_size,
        "encoder_layers": config.encoder_layers,
        "decoder_layers": config.decoder_layers,
        "context": shape.context,
        "prefill": shape.prefill,
        "front_end": {
            "where": "runtime (numpy: models/audio.py)",
            "sample_rate": 16000,
            "n_fft": 400,
            "hop": 160,
        },
        "encoder": {
            "function": "encode",
            "parts": [
                {
                    "path": f"{part_name('encoder', layers, len(parts))}.mlpackage",
                    "layers": list(layers),
                    "inputs": ["input_features" if layers[0] == 0 else "hidden_states"],
                    "outputs": ["encoder_hidden_states"],
                }
                for layers in parts
            ],
        },
        "decoder": {
            "functions": {"prefill": shape.prefill, "decode": 1},
            "states": states_record(builder, None),
            "parts": [
                decoder_part(builder, layers, len(decoder)) for layers in decoder
            ],
            "head_chunks": [[s, e] for s, e in head_chunks(config, shape)],
        },
        "protocol": "per 30 s window: encode its features; prefill the forced "
        "prompt (padded) at position 0 with the encoder output, which fills the "
        "cross-attention states; decode one token per call at its position; a "
        "split decoder's parts in order, each part's output the next one's "
        "hidden_states",
    }


def states_record(builder: Any, layers: tuple[int, int] | None) -> dict[str, Any]:
    """The decoder's states (of its `layers`) as the manifest lists them."""
    return {
        n: {"shape": list(s), "dtype": "fp16"}
        for n, s in builder.state_shapes(layers).items()
    }


def decoder_part(builder: Any, layers: tuple[int, int], count: int) -> dict[str, Any]:
    """The record of the decoder's package of `layers` (one of `count`)."""
    first = "input_ids" if layers[0] == 0 else "hidden_states"
    return {
        "path": f"{part_name('decoder', layers, count)}.mlpackage",
        "layers": list(layers),
        "inputs": {
            "prefill": [first, "position", "encoder_hidden_states"],
            "decode": [first, "position"],
        },
        "states": states_record(builder, layers),
        "outputs": builder.output_names(layers),
    }


def asr_files(directory: str | Path) -> dict[str, bytes]:
    from xdsl_ane.api.text import parse_text_file

    found = {}
    for name in ASR_FILES:
        path = Path(directory) / name
        if path.is_file():
            data = path.read_bytes()
            parse_text_file(path, data)
            found[name] = data
    return found


def part_name(what: str, layers: tuple[int, int], count: int) -> str:
    """`encoder` (`decoder`), or `encoder_F-L` for a part of a split one."""
    return what if count == 1 else f"{what}_{layers[0]}-{layers[1] - 1}"


def layer_parts(
    build: Any, count: int, o: AsrOptions, what: str
) -> list[tuple[int, int]]:
    """The encoder's or decoder's packages as [first, end) layer ranges
    (`build(layers)`: the module of a range, None: of all): all of it, or,
    when its weights (as `--compress` stores them) pass max_package_size,
    runs of layers that each stay within it (the encoder's stem, the
    decoder's embedding with the first, the final norm and the decoder's
    head with the last; each a chained package); a layer alone over the
    limit is an error naming it."""
    from xdsl_ane.models.llm_packages import Compression, unit_weights

    limit = o.max_package_size
    if limit is None:
        return [(0, count)]
    compression = Compression(o.compress, o.compress_head, o.compress_embedding)

    def size(layers: tuple[int, int] | None) -> int:
        return sum(unit_weights(build(layers), "layers", compression).values())

    if size(None) <= limit:
        return [(0, count)]
    sizes = [size((i, i + 1)) for i in range(count)]
    parts: list[tuple[int, int]] = []
    for i, unit in enumerate(sizes):
        if unit > limit:
            raise XdslAneError(
                f"the {what}'s layer {i} alone holds {size_text(unit)} of weights, "
                f"over {size_option(limit)} (raise it, or compress with "
                f"{option('compress')})"
            )
        first = parts[-1][0] if parts else None
        if first is not None and sum(sizes[first : i + 1]) <= limit:
            parts[-1] = (first, i + 1)
        else:
            parts.append((i, i + 1))
    return parts


def check_size(name: str, weights: dict[str, Any], o: AsrOptions) -> None:
    """Before compiling: the package's fp16 weights within the limit (a
    compressed package is checked once compiled)."""
    if o.max_package_size is None or o.compress is not None:
        return
    total = sum(2 * math.prod(w.shape) for w in weights.values())
    if total > o.max_package_size:
        raise XdslAneError(
            f"the {name} alone holds {size_text(total)} of weights, over "
            f"{size_option(o.max_package_size)} (raise it, or compress with "
            f"{option('compress')})"
        )


# --- transcription in the interpreter ----------------------------------------------


class AsrRunner:
    """Runs a compile-asr directory's packages in the interpreter: the
    encoder per window, the decoder's prefill and decode with its states."""

    def __init__(self, path: str | Path):
        from xdsl_ane.frontend.milproto import read_compiled
        from xdsl_ane.interpreter.core import StatefulRuntime
        from xdsl_ane.models.transcription import WhisperTokens

        self.path = Path(path)
        top = self.path / "manifest.json"
        try:
            record = json.loads(top.read_text())["asr"]
        except (OSError, ValueError, KeyError, TypeError):
            raise XdslAneError(
                f"{self.path}: not a compile-asr directory (no manifest.json with "
                "an asr record)"
            ) from None
        self.record = record
        self.encoders = [
            read_compiled(self.path / part["path"])
            for part in record["encoder"]["parts"]
        ]
        """The encoder's packages, chained in order."""
        self.decoders = []
        """The decoder's packages' runtimes (their states), chained in order."""
        for part in record["decoder"]["parts"]:
            program = read_compiled(self.path / part["path"])
            self.decoders.append(StatefulRuntime(program.module, program.weights))
        generation = self.json_file("generation_config.json")
        self.tokens = WhisperTokens.of(generation, {})
        self.prompt: list[int] = []
        """The forced prompt of the last `transcribe`."""

    def json_file(self, name: str) -> dict[str, Any]:
        from xdsl_ane.api.text import parse_text_file

        path = self.path / name
        if not path.is_file():
            raise XdslAneError(f"{path}: missing (compile-asr copies it)")
        return parse_text_file(path, path.read_bytes())

    def interface(self, program: Any, function: str):
        from xdsl_ane.interface import FunctionInterface

        records = program.manifest.get("functions", {})
        return FunctionInterface.from_manifest(records[function], function)

    def encode(self, window: np.ndarray) -> np.ndarray:
        """The encoder's output [1, 1500, d] for features [mels, 3000],
        through its packages in order."""
        from xdsl_ane.interpreter.core import run_function

        x = window[None]
        for program in self.encoders:
            interface = self.interface(program, "encode")
            f = program.module.body.block.first_op
            args = interface.arguments([x], {}, f.function_type.inputs.data)
            name = f.sym_name.data  # `main` in a package read back
            outputs = run_function(program.module, args, program.weights, name)
            x = interface.logical_results(outputs)[0]
        return x

    def logits(self, tokens: list[int], position: int, encoded: Any) -> np.ndarray:
        """Logits [len(tokens), V]: prefill with the encoder output (a
        prompt longer than the prefill has its last tokens decoded one by
        one), or decode of one token (encoded None)."""
        if encoded is None:
            return self.call("decode", tokens, position)
        count = self.record["decoder"]["functions"]["prefill"]
        rows = [self.call("prefill", tokens[:count], position, encoded)]
        for i, token in enumerate(tokens[count:]):
            rows.append(self.call("decode", [token], position + count + i))
        return np.concatenate(rows)

    def call(
        self, function: str, tokens: list[int], position: int, encoded: Any = None
    ) -> np.ndarray:
        """One call of the decoder's `function` (the tokens padded to its
        length): logits [len(tokens), V] over the head chunks."""
        from xdsl_ane.passes.layouts import layout_of

        decoder = self.record["decoder"]
        count = decoder["functions"][function]
        ids = np.zeros(count, np.int32)
        ids[: len(tokens)] = tokens
        logical = [ids, np.array([position], np.int32)]
        if encoded is not None:
            logical.append(encoded)
        inputs = [layout_of(np.shape(x)).to_ane(x) for x in logical]
        for runtime in self.decoders:  # each part's output the next's input
            outputs = runtime.call(function, inputs)
            inputs = [outputs[0], *inputs[1:]]
        rows = [
            layout_of((count, e - s)).to_logical(out)
            for out, (s, e) in zip(outputs, decoder["head_chunks"])
        ]
        return np.concatenate(rows, 1)[: len(tokens)].astype(np.float32)

    def transcribe(
        self,
        samples: np.ndarray,
        language: str | None = None,
        max_new_tokens: int | None = None,
        task: str | None = None,
    ) -> list[int]:
        """The new token ids of 16 kHz samples (models/transcription.py)."""
        from xdsl_ane.models.audio import WINDOW_SAMPLES, log_mel
        from xdsl_ane.models.transcription import Transcriber

        long = len(samples) > WINDOW_SAMPLES
        features = log_mel(samples, self.record["mels"], pad_to_window=not long)
        transcriber = Transcriber(
            self.tokens, self.encode, self.logits, self.record["context"]
        )
        tokens = transcriber.transcribe(features, language, max_new_tokens, task)
        self.prompt = transcriber.prompt
        return tokens

    def text(self, ids: list[int]) -> str:
        """The ids as text (timestamps and special tokens left out), by the
        checkpoint's tokenizer."""
        from xdsl_ane.api.text import TextTokenizer

        files = {
            n: self.path / n
            for n in ("tokenizer.json", "tokenizer_config.json")
            if (self.path / n).is_file()
        }
        begin = self.tokens.timestamp_begin
        kept = [t for t in ids if begin is None or t < begin]
        return TextTokenizer(files, self.path).decode(kept)


def check_reference(checkpoint: str | Path, record: dict[str, Any]) -> None:
    """Fails unless `checkpoint` is a Whisper checkpoint of the package's
    shape (read as compile-asr reads it), before anything runs."""
    from xdsl_ane.models.whisper import whisper_config
    from xdsl_ane.weights.checkpoint import read_checkpoint

    config = whisper_config(read_checkpoint(checkpoint))
    for key, value in (
        ("mels", config.mels),
        ("d_model", config.d_model),
        ("vocab_size", config.vocab_size),
        ("encoder_layers", config.encoder_layers),
        ("decoder_layers", config.decoder_layers),
    ):
        if record[key] != value:
            raise XdslAneError(
                f"{option('reference', checkpoint, flag='--reference')}: {key} is "
                f"{value}, the package's is {record[key]} (not the checkpoint it "
                "was compiled from)"
            )


def reference_transcribe(
    checkpoint: str | Path,
    samples: np.ndarray,
    language: str | None,
    max_new_tokens: int | None,
    task: str | None = None,
) -> list[int]:
    """transformers' greedy `generate` on the checkpoint (fp32) with its
    feature extractor's features of the same 16 kHz samples: the ids it
    returns (after the forced prompt, without the end token; for audio
    over 30 s the long form's, `return_timestamps=True`)."""
    try:
        import torch
        import transformers
    except ImportError:
        raise XdslAneError(
            f"{option('reference', flag='--reference')} needs torch and "
            "transformers: pip install 'xdsl-ane[torch]'"
        ) from None
    bars = transformers.utils.logging.is_progress_bar_enabled()
    transformers.utils.logging.disable_progress_bar()
    verbosity = transformers.utils.logging.get_verbosity()
    transformers.utils.logging.set_verbosity_error()
    try:
        model = transformers.WhisperForConditionalGeneration.from_pretrained(
            str(checkpoint), dtype=torch.float32
        ).eval()
        mels = model.config.num_mel_bins
        extractor = transformers.WhisperFeatureExtractor(feature_size=mels)
        long = len(samples) > 480000
        settings = dict(truncation=False, padding="longest") if long else {}
        features = extractor(
            samples, sampling_rate=16000, return_tensors="pt", **settings
        ).input_features
        options: dict[str, Any] = {"language": language, "task": task}
        if max_new_tokens is not None:
            options["max_new_tokens"] = max_new_tokens
        if long:
            options["return_timestamps"] = True
        with torch.no_grad():
            out = model.generate(features, **options)
    except (OSError, ValueError, RuntimeError) as e:
        raise XdslAneError(
            f"{option('reference', checkpoint, flag='--reference')}: transformers "
            f"failed: {first_line(e)}"
        ) from None
    finally:
        transformers.utils.logging.set_verbosity(verbosity)
        if bars:
            transformers.utils.logging.enable_progress_bar()
    # (transformers 5 returns each window's kept tokens: no forced prompt,
    # no end token)
    sequence = out["sequences"] if isinstance(out, dict) else out
    return [int(t) for t in sequence[0]]

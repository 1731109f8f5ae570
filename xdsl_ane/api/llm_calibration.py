"""compile-llm's calibration prompts and what `--compress w8a8` and
`--compress auto:BITS` measure on them.

The prompts (`--calibration FILE`, else two of `--prefill` random ids,
seed 0: the fp16 check's) run as a runtime runs them: each through
`prefill` (`prompt_calls`: a last chunk padded, or through decode where a
ring or a recurrent state needs it), then DECODE_STEPS tokens through
`decode`, a token per call (its own first tokens again: the calibration
needs the activations of decode calls over a filled cache, not a
continuation the fp32 program would pick), each prompt with its own cache,
zeros at first. A package's calibration sample is one prompt's
calls of its functions; a split model's packages after the first take
what the parts before give, which the fp32 program computes a part at a
time (`models.calibration.walk_parts`, the fp16 check's walk), so that
every package is calibrated before or without its neighbours (the tied
embedding and head share a package compiled before the layers).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from xdsl.dialects import builtin, func

from xdsl_ane.errors import XdslAneError, option
from xdsl_ane.models.calibration import Call, call_ids, rope_rows, walk_parts
from xdsl_ane.models.kv_cache import prompt_calls
from xdsl_ane.models.llm import Decoder
from xdsl_ane.models.per_layer_inputs import PER_LAYER_ROWS, checkpoint_rows
from xdsl_ane.models.rope import ROPE_POSITION
from xdsl_ane.weights.checkpoint import Checkpoint

DECODE_STEPS = 4
"""The decode calls after each prompt (fewer where the context ends)."""

PROMPT_FILES = (".txt", ".npz")

PackageParts = list[tuple[str, tuple[int, int] | None, dict[str, str]]]
"""A package's parts in calling order: (part: all, embed, layers or head,
its layers, its functions' names where renamed: ENDS_FUNCTIONS, ...)."""


def read_prompts(path: str | Path, checkpoint: str | Path) -> list[list[int]]:
    """The prompts of a calibration file: `.txt`, a prompt per non-empty
    line, tokenized as transformers' `tokenizer(line)` with the
    checkpoint's tokenizer.json; `.npz`, each array a prompt of token ids
    (1-D) or prompts by row (2-D), in the file's order."""
    from xdsl_ane.weights.arrays import load_arrays

    path = Path(path)
    what = option("calibration", str(path))
    if path.suffix not in PROMPT_FILES:
        raise XdslAneError(
            f"{what}: expected prompts as .txt (a prompt per line) or token ids as .npz"
        )
    if path.suffix == ".txt":
        from xdsl_ane.api.text import checkpoint_tokenizer

        tokenizer = checkpoint_tokenizer(checkpoint, path, "calibration file", ".npz")
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as e:
            raise XdslAneError(f"{what}: cannot read the prompts: {e}") from None
        prompts = [tokenizer.encode(line) for line in lines if line.strip()]
    else:
        prompts = []
        for name, array in load_arrays(path, "calibration").items():
            if array.dtype.kind not in "iu" or array.ndim not in (1, 2):
                raise XdslAneError(
                    f"{what}: array '{name}' is {array.dtype} {list(array.shape)}; "
                    "expected integer token ids, a prompt (1-D) or prompts by row "
                    "(2-D)"
                )
            prompts += [
                [int(t) for t in row] for row in array.reshape(-1, array.shape[-1])
            ]
    if not prompts or not all(prompts):
        raise XdslAneError(f"{what}: no prompt, or an empty one")
    return prompts


def prompt_run(prompts: list[list[int]], decoder: Decoder) -> list[Call]:
    """Every prompt's calls in order: the prompt as a runtime runs it
    (`prompt_calls`), then DECODE_STEPS decode calls (fewer where the
    context ends) continuing it with its own first tokens. Both functions
    must be called: an error names the one no prompt reaches."""
    shape = decoder.shape
    window, recurrent = decoder.local_window, decoder.config.recurrent
    calls = []
    for p, prompt in enumerate(prompts):
        for function, start, count in prompt_calls(
            len(prompt), shape.prefill, window, recurrent
        ):
            calls.append(
                Call(p, function, start, np.array(prompt[start : start + count]))
            )
        steps = min(DECODE_STEPS, shape.context - len(prompt))
        for i in range(steps):
            token = prompt[i % len(prompt)]
            calls.append(Call(p, "decode", len(prompt) + i, np.array([token])))
    for function in ("prefill", "decode"):
        if not any(call.function == function for call in calls):
            raise XdslAneError(
                f"{option('calibration')}: no prompt runs through {function} (with "
                f"{option('prefill', shape.prefill)} and {option('context', shape.context)}"
                f"{', a recurrent state' if recurrent else ''}{', a ring' if window else ''})"
            )
    return calls


class DecoderCalibration:
    """The calibration of every package of one compile-llm: the prompts'
    calls, the values each call gives a package's inputs, and a
    `w8a8.Calibration` per package (`package`)."""

    def __init__(
        self,
        checkpoint: Checkpoint,
        decoder: Decoder,
        prompts: list[list[int]],
        packages: dict[str, PackageParts],
    ):
        self.decoder, self.prompts, self.packages = decoder, prompts, packages
        self.calls = prompt_run(prompts, decoder)
        config = decoder.config
        self.given = [self.call_inputs(checkpoint, call) for call in self.calls]
        """What each call takes from the runtime (input_ids, position, ...)."""
        count = config.num_layers
        starts = {
            first_layer(part, layers, count)
            for parts in packages.values()
            for part, layers, _ in parts
            if part in ("layers", "head")
        }
        self.entering: dict[int, list[dict[str, np.ndarray]]] = {}
        """By the layers done (0: the embedding's output), each call's
        values entering a part that starts there (hidden states, ...)."""
        if starts:
            text = decoder.part(image_blocks=False)
            steps = walk_parts(checkpoint, config, text.shape, self.calls, max(starts))
            for done, step in enumerate(steps):
                if done in starts:
                    self.entering[done] = [dict(v) for v in step.values]

    def call_inputs(self, checkpoint: Checkpoint, call: Call) -> dict[str, Any]:
        """A call's inputs from the runtime, as logical arrays: the padded
        ids, the position, Gemma 4's per-layer rows, a text prompt's
        multimodal RoPE positions, and text's image blocks (−1) where
        prefill takes them."""
        config, shape = self.decoder.config, self.decoder.shape
        ids = call_ids(call, shape.prefill)
        given: dict[str, Any] = {
            "input_ids": ids,
            "position": np.array([call.position], np.int32),
        }
        if config.per_layer_width:
            given[PER_LAYER_ROWS] = checkpoint_rows(config, checkpoint, ids)
        if config.mrope_section:
            given[ROPE_POSITION] = rope_rows(call, shape.prefill)
        if shape.image_blocks and call.function == "prefill":
            given["image_blocks"] = np.full(len(ids), -1, np.int32)
        return given

    def package(self, name: str) -> Any:
        """The `w8a8.Calibration` of package `name` (the plan's; "": the
        one package)."""
        from xdsl_ane.api.w8a8 import Calibration

        return Calibration(
            lambda module: self.samples(module, self.packages[name]),
            "calibration prompts",
        )

    def samples(self, module: builtin.ModuleOp, parts: PackageParts) -> list[Any]:
        """Each prompt's calls of the compiled `module`'s functions, part
        after part, their arguments in the functions' own layouts."""
        functions = {
            f.sym_name.data: f for f in module.walk() if isinstance(f, func.FuncOp)
        }
        count = self.decoder.config.num_layers
        samples: list[list[Any]] = [[] for _ in self.prompts]
        for part, layers, names in parts:
            start = first_layer(part, layers, count)
            for i, call in enumerate(self.calls):
                values = self.given[i] | (
                    self.entering[start][i] if start is not None else {}
                )
                inputs = self.input_names(part, layers, call.function)
                name = names.get(call.function, call.function)
                args = arguments(functions[name], [values[n] for n in inputs])
                samples[call.prompt].append((name, args))
        return samples

    def input_names(
        self, part: str, layers: tuple[int, int] | None, function: str
    ) -> list[str]:
        """A part's function's non-state inputs in order (a prefill that
        takes image blocks: them last, as `models.llm` builds it)."""
        shape = self.decoder.shape
        names = self.decoder.part(part=part, layers=layers).input_names()
        blocks = shape.image_blocks and function == "prefill" and shape.prefill > 1
        return (
            names + ["image_blocks"] if blocks and part in ("all", "layers") else names
        )


def first_layer(part: str, layers: tuple[int, int] | None, count: int) -> int | None:
    """The layers done before a part's input (None: it takes none of the
    stream, the embedding or the whole program)."""
    if part == "layers":
        return 0 if layers is None else layers[0]
    return count if part == "head" else None


def arguments(f: func.FuncOp, values: list[Any]) -> list[np.ndarray]:
    """`f`'s non-state arguments of the logical `values`, laid out as the
    compile recorded and in their element types."""
    from xdsl_ane.dialects.state_type import StateTypeBase
    from xdsl_ane.interface import FunctionInterface
    from xdsl_ane.interpreter.values import numpy_dtype

    layouts = FunctionInterface.of_function(f).arg_layouts
    args = [
        (i, a) for i, a in enumerate(f.args) if not isinstance(a.type, StateTypeBase)
    ]
    assert len(args) == len(values), (f.sym_name.data, len(args), len(values))
    out = []
    for (i, arg), value in zip(args, values):
        value = np.asarray(value)
        if layouts is not None:
            value = layouts[i].to_ane(value)
        out.append(value.astype(numpy_dtype(arg.type.element_type)))  # type: ignore[attr-defined]
    return out

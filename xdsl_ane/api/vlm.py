"""Images in: the vision package of a vision-language checkpoint (compiled
beside its decoder by `compile_llm`), the image processor, the prompt with
its image tokens, and the image features merged into the decoder's
embedding in generation.

Compiled: transformers' vision tower and projector
(`models/vision_language.py`) through torch.export and the importer to a
package `vision.mlpackage` (pixel_values [1, 3, H, W] -> features [N,
hidden]; H = W = the checkpoint's image size). The decoder is the text
model's, with its embedding a step of its own: one package, its functions
run as three segments (`embed_prefill` / `embed_decode`, `prefill` /
`decode` over the layers, `head_prefill` / `head_decode`), or the split
model's `embed` package. The runtime replaces the embedding's rows at the
image placeholder tokens by the features (transformers' `masked_scatter`),
times the stream scale the fp16 check chose, between the embedding and
the layers: the ANE runs every step, and the merge is a copy of N rows in
the runtime, no gather or select in a program. (A prefill taking
embeddings in place of ids would do the same with one function less,
but it would be a second prefill function holding the whole stack.)

Generation: the image read and processed as the checkpoint's image
processor does (`api/images.py`), the vision package run once (once per
tile for Idefics3), the prompt built as the processor's
`apply_chat_template(tokenize=True)` (with `--chat`) or its `__call__`
builds it: its image token replaced by the processor's text for the
image (the token once per feature row; Idefics3's tile markers).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from xdsl_ane.api.images import (
    GridImageProcessor,
    ImageProcessor,
    TiledImage,
    TilingImageProcessor,
)
from xdsl_ane.errors import XdslAneError, option

VISION_PACKAGE = "vision"
"""The vision package's name: `OUT.vision.mlpackage` beside one package,
`OUT/vision.mlpackage` in a split model's directory."""

PROCESSOR_FILES = (
    "processor_config.json",
    "preprocessor_config.json",
    "chat_template.json",
)
"""A vision-language checkpoint's processor files copied beside the
package (beside api/text.py's TEXT_FILES)."""


def read_processor_files(directory: str | Path) -> dict[str, bytes]:
    """The checkpoint's PROCESSOR_FILES that exist, each checked (a JSON
    object)."""
    from xdsl_ane.api.text import parse_text_file, read_file

    found = {}
    for name in PROCESSOR_FILES:
        path = Path(directory) / name
        if path.exists():
            found[name] = read_file(path)
            parse_text_file(path, found[name])
    return found


# --- compiling ---------------------------------------------------------------------


@dataclass
class VisionPackage:
    """The compiled vision package and its record in the manifest."""

    compiled: Any
    record: dict[str, Any]

    def estimate_line(self, chip: str) -> str:
        """The estimate of the vision package on `chip`, in one line."""
        from xdsl_ane.estimator import estimate
        from xdsl_ane.estimator.report import summary

        return summary(estimate(self.compiled, chip))

    def writers(self) -> dict[str, Any]:
        """The files beside one package (`LlmPackage.writers`): the
        package and its manifest, each written by its function of the
        path."""
        manifest = {**self.compiled.manifest(), "vision": self.record}
        text = json.dumps(manifest, indent=2) + "\n"

        def package(path: Path) -> None:  # (a package's name ends in .mlpackage)
            staged = path.with_name(path.name + ".mlpackage")
            self.compiled.write_mlpackage(staged, force=True)
            staged.rename(path)

        return {
            f"{VISION_PACKAGE}.mlpackage": package,
            f"{VISION_PACKAGE}.manifest.json": lambda path: path.write_text(text),
        }

    def write(self, path: Path) -> None:
        """NAME.mlpackage and NAME.manifest.json at `path` (NAME.mlpackage)."""
        from xdsl_ane.api import manifest_path

        self.compiled.write_mlpackage(path, force=True)
        manifest = {**self.compiled.manifest(), "vision": self.record}
        manifest_path(path, "mlpackage").write_text(
            json.dumps(manifest, indent=2) + "\n"
        )


def compile_vision(
    checkpoint: Any,
    family: Any,
    stream_scale: float,
    validate: bool = False,
    image_size: int | None = None,
) -> VisionPackage:
    """The vision tower and projector of `checkpoint` (the whole
    vision-language one) as a package; `stream_scale`: what the
    decoder's embedding is multiplied by, which the features are too;
    `image_size`: the image side of a family whose processor picks the
    size per image (VisionFamily.grid; default
    models.vision_language.GRID_IMAGE_SIZE)."""
    from xdsl_ane.api import compile as compile_module
    from xdsl_ane.frontend.torch import from_torch
    from xdsl_ane.models.vision_language import GRID_IMAGE_SIZE, image_features_module

    if family.grid:
        image_size = image_size or GRID_IMAGE_SIZE
        check_image_size(family, checkpoint.config, image_size)
    features = image_features_module(checkpoint, family, image_size)
    size = features.image_size
    imported = from_torch(features.module, (features.example,))
    compiled = compile_module(imported.module, weights=imported.weights)
    compiled.source = str(checkpoint.directory)
    if validate:
        compiled.validate().raise_if_failed()
    from xdsl_ane.dialects.dense import numpy_dtype_of

    function = compiled.functions[0].sym_name.data
    element = compiled.functions[0].function_type.inputs.data[0].element_type
    record = {
        "family": family.name,
        "function": function,
        "input": imported.input_names[0],
        "input_dtype": np.dtype(numpy_dtype_of(element)).name,
        "image_size": [size, size],
        "image_tokens": features.tokens,
        "hidden_size": features.hidden_size,
        "image_token_id": features.image_token_id,
        "placeholder_token_id": features.placeholder_token_id,
        "image_blocks": family.image_blocks,
        "features_scale": stream_scale,
    }
    if features.grid is not None:  # the runtime cuts the image into patches
        visual = features.module.visual.config
        record["grid"] = list(features.grid)
        record["patch_size"] = int(visual.patch_size)
        record["merge_size"] = int(visual.spatial_merge_size)
        record["temporal_patch_size"] = int(visual.temporal_patch_size)
    return VisionPackage(compiled, record)


def check_image_size(family: Any, config: dict[str, Any], size: int) -> None:
    """`--image-size` checked for a checkpoint: a VisionFamily.grid family
    (its vision model's patch x merge size dividing it); one line else."""
    if family is None or not family.grid:
        what = "a text model" if family is None else family.name
        raise XdslAneError(
            f"{option('image_size', size)}: applies to vision-language models "
            f"whose processor picks the image size (Qwen2-VL, Qwen2.5-VL); the "
            f"checkpoint is {what}"
        )
    vision = config.get("vision_config") or {}
    factor = int(vision.get("patch_size", 14)) * int(
        vision.get("spatial_merge_size", 2)
    )
    if size <= 0 or size % factor:
        raise XdslAneError(
            f"{option('image_size', size)}: the image side must be a positive "
            f"multiple of {factor} (the vision model's patch size x merge size)"
        )


# --- the processor files -----------------------------------------------------------


def processor_settings(files: dict[str, Path]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the processor's settings, the image processor's) from
    `processor_config.json` (the image processor's under
    `image_processor`) or `preprocessor_config.json`."""
    from xdsl_ane.api.text import parse_text_file, read_file

    processor: dict[str, Any] = {}
    image: dict[str, Any] = {}
    path = files.get("processor_config.json")
    if path is not None:
        processor = parse_text_file(path, read_file(path))
        image = processor.get("image_processor") or {}
    path = files.get("preprocessor_config.json")
    if not image and path is not None:
        image = parse_text_file(path, read_file(path))
        processor = {**image, **processor}
    return processor, image


# --- generation ---------------------------------------------------------------------


class VisionRunner:
    """The vision package of a compile-llm output, its image processor and
    the prompt's image tokens."""

    def __init__(self, runner: Any):
        record = runner.record.get("vision")
        if record is None:
            raise XdslAneError(
                f"{option('image', flag='--image')}: {runner.path} is a text-only "
                "package (compiled from a checkpoint without a vision model)"
            )
        self.runner = runner
        self.record = record
        self.path = runner.manifest_dir / record["path"]
        self.processor, image = processor_settings(runner.text_files)
        self.tiled = record["family"] == "idefics3"
        self.grid = record.get("grid")
        """The patch grid (t, h, w) of a Qwen2-VL-style package, else None."""
        self.image_processor: Any = (
            TilingImageProcessor(image) if self.tiled else ImageProcessor(image)
        )
        if self.grid is not None:
            self.image_processor = GridImageProcessor(
                image,
                int(record["image_size"][0]),
                int(record["patch_size"]),
                int(record["merge_size"]),
                int(record["temporal_patch_size"]),
            )

    @property
    def image_token_id(self) -> int:
        return int(self.record["image_token_id"])

    @property
    def tokens(self) -> int:
        return int(self.record["image_tokens"])

    def pixel_values(self, image: Any) -> np.ndarray:
        """The image processed (one tile); its size checked against the
        package's."""
        return self.prepare(image).tiles[0]

    def prepare(self, image: Any) -> TiledImage:
        """The image processed into the vision package's inputs, each of
        its size (checked)."""
        out = self.image_processor(image)
        if not isinstance(out, TiledImage):
            out = TiledImage([out])
        want = tuple(self.record["image_size"])
        for pixels in out.tiles if self.grid is None else ():
            if pixels.shape[2:] != want:
                raise XdslAneError(
                    f"{self.runner.path}: the image processor gives {pixels.shape[2]}x"
                    f"{pixels.shape[3]} pixels, the vision package takes "
                    f"{want[0]}x{want[1]}"
                )
        return out

    def reference_inputs(
        self, images: list[TiledImage], prompt: list[int]
    ) -> dict[str, np.ndarray]:
        """The images' inputs of transformers' model for the prompt:
        pixel_values ([images, 3, H, W], every tile [1, tiles, 3, S, S]
        for Idefics3, the patches for Qwen2-VL with its image_grid_thw and
        mm_token_type_ids) and token_type_ids where the model reads them."""
        pixels = np.concatenate([t for image in images for t in image.tiles])
        inputs = {"pixel_values": pixels[None] if self.tiled else pixels}
        types = self.token_type_ids(prompt)
        if types is not None:
            inputs["token_type_ids"] = np.array([types])
        if self.grid is not None:
            inputs["image_grid_thw"] = np.array([self.grid] * len(images))
            inputs["mm_token_type_ids"] = np.array(
                [[int(t == self.image_token_id) for t in prompt]]
            )
        return inputs

    def rope_positions(self, prompt: list[int]) -> np.ndarray | None:
        """The multimodal RoPE positions [len(prompt), 3] of a Qwen2-VL-style
        package's prompt (transformers' get_rope_index): text tokens
        count on by one on all three axes; an image's tokens take the
        position after the text before it plus their (0, row, column) in
        the merged grid, and the text after the image goes on from the
        largest of them + 1. None for other packages."""
        if self.grid is None:
            return None
        _, height, width = self.grid
        merge = int(self.record["merge_size"])
        rows, cols = height // merge, width // merge
        count = rows * cols
        row, col = np.divmod(np.arange(count, dtype=np.int32), cols)
        grid = np.stack([np.zeros_like(row), row, col])  # [3, tokens], row-major
        out = np.zeros((len(prompt), 3), np.int32)
        i, current = 0, 0
        while i < len(prompt):
            if prompt[i] != self.image_token_id:
                out[i] = current
                i, current = i + 1, current + 1
                continue
            if prompt[i : i + count] != [self.image_token_id] * count:
                raise XdslAneError(
                    f"the prompt's image at token {i} has fewer than the image's "
                    f"{count} tokens ({self.image_token_id})"
                )
            out[i : i + count] = (grid + current).T
            i, current = i + count, current + max(rows, cols)
        return out

    def image_features(self, images: list[TiledImage]) -> np.ndarray:
        """The features of every tile of every image, in the prompt's order."""
        return np.concatenate(
            [self.features(t) for image in images for t in image.tiles]
        )

    @property
    def placeholder_id(self) -> int:
        """The token the prompt holds for the image (the image token, or
        Gemma 3's `<start_of_image>`)."""
        return int(self.record.get("placeholder_token_id", self.image_token_id))

    def token_text(self, tokenizer: Any) -> str:
        """The processor's image token as text."""
        return (
            self.processor.get("image_token")
            or tokenizer.config.get("image_token")
            or tokenizer.tokenizer.id_to_token(self.image_token_id)
        )

    def placeholder_text(self, tokenizer: Any) -> str:
        """The text the prompt holds for the image."""
        if self.placeholder_id == self.image_token_id:
            return self.token_text(tokenizer)
        return tokenizer.tokenizer.id_to_token(self.placeholder_id)

    def replacement(self, image: TiledImage, tokenizer: Any) -> str:
        """The text the processor puts in place of the image's placeholder:
        the image token once per feature row (LLaVA); Gemma 3's
        `\n\n<start_of_image>`, its tokens, `<end_of_image>\n\n`;
        Idefics3's tiles, each `<fake_token_around_image><row_R_col_C>` and
        its tokens, a line a row, then the whole image's `<global-img>` and
        tokens."""
        token = self.token_text(tokenizer)
        if self.placeholder_id != self.image_token_id:
            start = self.placeholder_text(tokenizer)
            end = tokenizer.tokenizer.id_to_token(self.placeholder_id + 1)
            end = tokenizer.config.get("eoi_token") or end
            return f"\n\n{start}{token * self.tokens}{end}\n\n"
        if not self.tiled:
            return token * self.tokens
        fake, tokens = "<fake_token_around_image>", token * self.tokens
        whole = f"{fake}<global-img>{tokens}{fake}"
        if image.rows == image.cols == 0:
            return whole
        text = ""
        for r in range(image.rows):
            for c in range(image.cols):
                text += f"{fake}<row_{r + 1}_col_{c + 1}>{tokens}"
            text += "\n"
        return text + "\n" + whole

    def features(self, pixels: np.ndarray) -> np.ndarray:
        """The vision package on pixel_values: features [N, hidden],
        scaled as the decoder's embedding is."""
        from xdsl_ane.api.run import run_compiled

        _, (out,) = run_compiled(
            self.path,
            self.record["function"],
            "logical",
            {self.record["input"]: pixels.astype(self.record["input_dtype"])},
            None,
            {},
        )
        scale = float(self.record.get("features_scale") or 1.0)
        return out.astype(np.float32) * np.float32(scale)

    def blocks(self, prompt: list[int]) -> list[int] | None:
        """The image of each prompt token where the package's image rows
        see each other both ways (else None)."""
        if not self.record.get("image_blocks"):
            return None
        return image_blocks(prompt, self.image_token_id)

    def token_type_ids(self, prompt: list[int]) -> list[int] | None:
        """transformers' token_type_ids of the prompt (1 at the image
        rows) where the model reads them (its rows attend both ways)."""
        blocks = self.blocks(prompt)
        return None if blocks is None else [int(b >= 0) for b in blocks]

    def rows(self, prompt: list[int], features: np.ndarray) -> dict[int, np.ndarray]:
        """The feature row of each image token of the prompt, by position."""
        return image_rows(prompt, self.image_token_id, features)

    def expand(self, ids: list[int], images: int = 1) -> list[int]:
        """The prompt with each image token expanded to one per feature
        row; exactly `images` of them expected."""
        token = self.image_token_id
        check_count(ids.count(token), images, token)
        out: list[int] = []
        for t in ids:
            out += [token] * self.tokens if t == token else [t]
        return out

    def expand_ids(
        self, ids: list[int], images: list[TiledImage], tokenizer: Any | None
    ) -> list[int]:
        """`--prompt-ids`: the image tokens, one per image, replaced by the
        images' tokens in order (with the tokenizer where they are more
        than the token repeated)."""
        if not self.tiled and self.placeholder_id == self.image_token_id:
            return self.expand(ids, len(images))
        token = self.placeholder_id
        check_count(ids.count(token), len(images), token)
        if tokenizer is None:
            raise XdslAneError(
                f"{self.runner.path}: the image's tokens (tiles and their markers) "
                "need the checkpoint's tokenizer, which is not beside the package"
            )
        out: list[int] = []
        pending = iter(images)
        for t in ids:
            if t != token:
                out.append(t)
                continue
            text = self.replacement(next(pending), tokenizer)
            out += tokenizer.encode(text, add_special_tokens=False)
        return out

    def text_prompt(
        self,
        tokenizer: Any,
        text: str,
        chat: bool,
        images: list[TiledImage] | None = None,
    ) -> list[int]:
        """The prompt's ids as the processor builds them: with `chat`, its
        `apply_chat_template` of a user message [image, ..., text]
        (tokenized without special tokens where the rendering begins with
        the bos token, as transformers does); else `processor(text=TEXT,
        images=...)`, the image tokens put first where TEXT has none.
        `images` None: one image whose tokens do not depend on it."""
        token_text = self.placeholder_text(tokenizer)
        count = 1 if images is None else len(images)
        if chat:
            content = [{"type": "image"}] * count + [{"type": "text", "text": text}]
            messages = [{"role": "user", "content": content}]
            if tokenizer.template_path is None and "chat_template.json" in (
                self.runner.text_files
            ):
                tokenizer = with_template(tokenizer, self.runner.text_files)
            rendered = tokenizer.render_chat(messages)
            bos = tokenizer.special.get("bos_token")
            special = not (bos is not None and rendered.startswith(bos))
        else:
            rendered = text if token_text in text else token_text * count + text
            special = True
        if images is None and self.placeholder_id == self.image_token_id:
            return self.expand(tokenizer.encode(rendered, add_special_tokens=special))
        images = images or [TiledImage([])]
        pieces = rendered.split(token_text)
        check_count(len(pieces) - 1, count, token_text)
        rendered = pieces[0] + "".join(
            self.replacement(image, tokenizer) + piece
            for image, piece in zip(images, pieces[1:])
        )
        return tokenizer.encode(rendered, add_special_tokens=special)


def check_count(found: int, images: int, token: Any) -> None:
    """One line unless the prompt holds one image token per image."""
    if found != images:
        raise XdslAneError(
            f"the prompt holds {found} image tokens ({token}); {images} image(s) "
            "need one each, where each image's tokens go"
        )


def image_blocks(prompt: list[int], token: int) -> list[int]:
    """The image each prompt token belongs to (−1: text): runs of the
    image token, numbered from 0 (transformers' block_sequence_ids)."""
    blocks, current = [], -1
    for i, t in enumerate(prompt):
        if t == token and (i == 0 or prompt[i - 1] != token):
            current += 1
        blocks.append(current if t == token else -1)
    return blocks


def image_calls(
    blocks: list[int], prefill: int, window: int | None, recurrent: bool
) -> list[tuple[str, int, int]]:
    """The calls that run a prompt whose images' rows see each other both
    ways: prefill calls of at most `prefill` tokens as models.kv_cache's
    prompt_calls makes them (its rule for padded calls), but ending before an image that the call
    could not hold whole, so that each image is in one prefill call; a
    call prompt_calls would run through decode (a padded call a ring or a
    recurrent state does not take) must hold no image row."""
    calls: list[tuple[str, int, int]] = []
    start, length = 0, len(blocks)
    while start < length:
        count = min(prefill, length - start)
        end = start + count
        if end < length and blocks[end] >= 0 and blocks[end - 1] == blocks[end]:
            first = end - 1  # the image at the cut starts at or before here
            while first > start and blocks[first - 1] == blocks[end]:
                first -= 1
            if first == start:
                size = blocks.count(blocks[end])
                raise XdslAneError(
                    f"an image's {size} tokens do not fit one prefill call of "
                    f"{prefill} (compile with a larger --prefill)"
                )
            count = first - start
        padded_ok = not recurrent and (window is None or start + prefill <= window)
        if count == prefill or padded_ok:
            calls.append(("prefill", start, count))
        elif any(b >= 0 for b in blocks[start : start + count]):
            raise XdslAneError(
                "an image's tokens would run through decode one by one (a padded "
                "prefill past the sliding window); compile with a --prefill that "
                "the prompt's image calls fill"
            )
        else:
            calls += [("decode", p, 1) for p in range(start, start + count)]
        start += count
    return calls


def with_template(tokenizer: Any, files: dict[str, Path]) -> Any:
    """The tokenizer with chat_template.json's template (older processors
    save it there rather than in chat_template.jinja)."""
    from xdsl_ane.api.text import parse_text_file, read_file

    path = files["chat_template.json"]
    template = parse_text_file(path, read_file(path)).get("chat_template")
    if isinstance(template, str):
        tokenizer.config = {**tokenizer.config, "chat_template": template}
    return tokenizer


def image_rows(
    prompt: list[int], token: int, features: np.ndarray
) -> dict[int, np.ndarray]:
    """The prompt positions of the image tokens and the feature row each
    takes, in order (transformers' masked_scatter)."""
    positions = [i for i, t in enumerate(prompt) if t == token]
    if len(positions) != len(features):
        raise XdslAneError(
            f"the prompt holds {len(positions)} image tokens ({token}); the image "
            f"has {len(features)} feature rows"
        )
    return dict(zip(positions, features))

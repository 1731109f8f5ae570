"""Vision-language checkpoints: what compile-llm reads of one beside the
decoder it compiles as for a text model.

A vision-language checkpoint (LLaVA: a CLIP vision tower, a two-layer
projector and a Llama decoder) is read as two things:

- its language model, as a text checkpoint (`text_checkpoint`): the
  `text_config` completed by transformers' config class (a real
  checkpoint's `text_config` holds only what differs from the class'
  defaults), and the decoder's tensors under the text model's names
  (`language_model.model.X` or `model.language_model.X` as `model.X`,
  `language_model.lm_head.weight` as `lm_head.weight`), so that the
  decoder's builder, weight map and checks run unchanged;
- its image features (`image_features_module`): the vision tower and the
  projector, transformers' own modules built on the meta device and given
  the checkpoint's tensors, behind `get_image_features` — the feature
  layer, the selection (`default`: the class token dropped) and the
  projection as transformers computes them — for torch.export and our
  importer. Built this way every family's connector (pixel shuffle, patch
  merger) is the family's own code, checked op by op by the importer's
  tests, not a second copy of it.

The prompt holds one placeholder token per image feature row
(`image_token_id`); the decoder's embedding of those rows is replaced by
the features (transformers' `masked_scatter`): `api/vlm.py`.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from xdsl_ane.errors import XdslAneError
from xdsl_ane.weights.checkpoint import Checkpoint


@dataclass(frozen=True)
class VisionFamily:
    """How a vision-language architecture differs: its text model's
    tensor prefixes (checkpoint's -> the text model's) and its vision
    tensors' first name segments."""

    name: str
    text_prefixes: tuple[tuple[str, str], ...]
    vision_modules: tuple[str, ...]
    image_blocks: bool = False
    """An image's rows attend to each other both ways in prefill (Gemma 3;
    LlmShape.image_blocks)."""
    placeholder: str | None = None
    """The config field of the token the prompt holds for an image, where
    it is not the image token the features replace (Gemma 3's
    `boi_token_index`: `<start_of_image>`, which the processor expands)."""
    tiles: bool = False
    """The image is cut into tiles of the vision model's size, each run
    alone (Idefics3): the features of one tile are the vision model's
    last hidden state through the connector, as `get_image_features`
    computes them for a tile that is not padding (its test of a tile of
    zeros, a boolean index, is no program's)."""
    text_architecture: str | None = None
    """The text family (a FAMILIES key) of a text model whose model_type
    is the multimodal model's own (Qwen2-VL's `qwen2_vl_text`: Qwen2 with
    multimodal RoPE)."""
    grid: bool = False
    """The image is resized to the package's size and cut into patches by
    the runtime, in the vision model's order (Qwen2-VL: `pixel_values`
    [patches, 3·2·P·P] of a fixed grid); its rows rotate by their place
    in the grid (multimodal RoPE: `rope_position`)."""


LLAVA_TEXT = (
    ("language_model.model.", "model."),
    ("language_model.lm_head.", "lm_head."),
    ("model.language_model.", "model."),
    ("lm_head.", "lm_head."),
)

QWEN_VL_TEXT = (
    ("model.language_model.", "model."),
    ("model.", "model."),
    ("lm_head.", "lm_head."),
)
"""Qwen2-VL's text tensors: `model.X` (the hub's) or `model.language_model.X`."""


def qwen_vl(name: str) -> VisionFamily:
    """Qwen2-VL and Qwen2.5-VL: the vision model `visual`, a Qwen2 text
    model rotating by multimodal positions."""
    return VisionFamily(
        name,
        QWEN_VL_TEXT,
        ("visual",),
        text_architecture="Qwen2ForCausalLM",
        grid=True,
    )


VISION_FAMILIES = {
    "LlavaForConditionalGeneration": VisionFamily(
        "llava", LLAVA_TEXT, ("vision_tower", "multi_modal_projector")
    ),
    "Gemma3ForConditionalGeneration": VisionFamily(
        "gemma3",
        LLAVA_TEXT,
        ("vision_tower", "multi_modal_projector"),
        image_blocks=True,
        placeholder="boi_token_index",
    ),
    "Idefics3ForConditionalGeneration": VisionFamily(
        "idefics3",
        (("model.text_model.", "model."), ("lm_head.", "lm_head.")),
        ("vision_model", "connector"),
        tiles=True,
    ),
    "Qwen2VLForConditionalGeneration": qwen_vl("qwen2_vl"),
    "Qwen2_5_VLForConditionalGeneration": qwen_vl("qwen2_5_vl"),
}
"""The vision-language architectures compile-llm reads, by config.json's
`architectures`."""


def vision_family(
    config: dict[str, Any], where: str = "config.json"
) -> VisionFamily | None:
    """The row of VISION_FAMILIES of a config.json (None: a text model); a
    multimodal architecture that is neither one nor read for its text
    (hf_config's FAMILIES) is refused, naming those supported."""
    from xdsl_ane.models.hf_config import FAMILIES

    architectures = config.get("architectures") or []
    if not isinstance(architectures, list):
        architectures = [architectures]
    names = [str(a) for a in architectures]
    found = next((VISION_FAMILIES[a] for a in names if a in VISION_FAMILIES), None)
    other = [a for a in names if a.endswith("ForConditionalGeneration")]
    if found is None and other and not any(a in FAMILIES for a in names):
        raise XdslAneError(
            f"{where}: {other[0]} is not supported; vision-language architectures "
            "supported: " + ", ".join(VISION_FAMILIES)
        )
    return found


def transformers_config(checkpoint: Checkpoint) -> Any:
    """transformers' config object of the checkpoint (its class fills
    what config.json leaves to defaults)."""
    try:
        import transformers
    except ImportError:
        raise XdslAneError(
            f"{checkpoint.directory}: a vision-language checkpoint needs torch and "
            "transformers to build its vision tower: pip install 'xdsl-ane[torch]'"
        ) from None
    try:
        return transformers.AutoConfig.from_pretrained(str(checkpoint.directory))
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise XdslAneError(
            f"{checkpoint.directory / 'config.json'}: transformers cannot read it: "
            f"{str(e).splitlines()[0] if str(e) else type(e).__name__}"
        ) from None


def text_checkpoint(checkpoint: Checkpoint, family: VisionFamily) -> Checkpoint:
    """The language model of a vision-language checkpoint as a text
    checkpoint: its text_config (completed, with the text model's
    `architectures`) and the decoder's tensors under the text model's
    names (the vision tensors left out)."""
    from xdsl_ane.models.hf_config import FAMILIES

    config = transformers_config(checkpoint)
    text = config.get_text_config().to_dict()
    model_type = text.get("model_type")
    arch = family.text_architecture or next(
        (a for a, f in FAMILIES.items() if f.name == model_type), None
    )
    if arch is None:
        raise XdslAneError(
            f"{checkpoint.directory / 'config.json'}: text_config's model_type "
            f"{model_type!r} is not a decoder family compile-llm reads"
        )
    text["architectures"] = [arch]
    tied = checkpoint.config.get("tie_word_embeddings")
    if isinstance(tied, bool):  # the whole model's, which transformers ties by
        text["tie_word_embeddings"] = tied
    tensors = {}
    for name, entry in checkpoint.tensors.items():
        if vision_tensor_key(name).split(".")[0] in family.vision_modules:
            continue
        for old, new in family.text_prefixes:
            if name.startswith(old):
                tensors[new + name[len(old) :]] = entry
                break
    return Checkpoint(checkpoint.directory, text, tensors)


def vision_tensor_key(name: str) -> str:
    """A vision tensor's name as the checkpoint may spell it, reduced to
    one form: `model.` and the vision model's own `vision_model.` level
    dropped (transformers writes `vision_tower.X` and reads
    `model.vision_tower.vision_model.X` alike)."""
    name = name.removeprefix("model.")
    return name.replace("vision_tower.vision_model.", "vision_tower.")


@dataclass
class ImageFeatures:
    """The vision package's source: the module (pixel_values [1, 3, H, W],
    or a grid family's patches -> features [N, hidden]) and its facts."""

    module: Any
    image_size: int
    tokens: int
    hidden_size: int
    image_token_id: int
    placeholder_token_id: int
    example: Any
    """The package's example input (zeros of its shape)."""
    grid: tuple[int, int, int] | None = None
    """VisionFamily.grid: the patches' (t, h, w) grid of the image size."""


GRID_IMAGE_SIZE = 448
"""The image side of a vision package whose family's processor picks the
size per image (Qwen2-VL), unless `--image-size` says another: 448 x 448
pixels, 1024 patches, 256 image tokens."""


def image_features_module(
    checkpoint: Checkpoint, family: VisionFamily, image_size: int | None = None
) -> ImageFeatures:
    """transformers' vision tower and projector of the checkpoint behind
    `get_image_features`, with the checkpoint's tensors, in float32
    (`image_size`: the side of a VisionFamily.grid family's images,
    default GRID_IMAGE_SIZE)."""
    import torch

    config, inner = vision_model(checkpoint, family)
    image_id = int(config.image_token_id)
    placeholder = image_id
    if family.placeholder is not None:
        placeholder = int(checkpoint.config[family.placeholder])
    if family.grid:
        from xdsl_ane.models.vision_grid import grid_features

        size = image_size or GRID_IMAGE_SIZE
        module, grid, example = grid_features(inner.visual, size)
        with torch.no_grad():
            tokens, hidden = module(example).shape
        return ImageFeatures(
            module,
            size,
            int(tokens),
            int(hidden),
            image_id,
            image_id,
            example,
            grid,
        )
    wrapper = FeaturesOf(inner, family.tiles).eval()
    vision = config.vision_config
    size = int(vision.image_size)
    with torch.no_grad():
        example = torch.zeros(1, 3, size, size)
        tokens, hidden = wrapper(example).shape
    return ImageFeatures(
        wrapper, size, int(tokens), int(hidden), image_id, placeholder, example
    )


def vision_model(checkpoint: Checkpoint, family: VisionFamily) -> tuple[Any, Any]:
    """(transformers' config, its inner model): the vision modules of
    `family` with the checkpoint's tensors (patch embeddings as linear
    layers), beside a language model of one small layer."""
    import torch
    import transformers

    config = transformers_config(checkpoint)
    model_class = getattr(transformers, config.architectures[0])
    # The vision side built as transformers builds it (its buffers, such as
    # position ids, computed), beside a language model of one small layer:
    # the decoder is compiled from the checkpoint apart.
    shell = copy.deepcopy(config)
    text = shell.get_text_config()
    for field, value in (("num_hidden_layers", 1), ("vocab_size", 8)):
        setattr(text, field, value)
    if isinstance(getattr(text, "layer_types", None), list):
        text.layer_types = text.layer_types[:1]
    torch.manual_seed(0)
    inner = model_class(shell).model
    keep = [(n, m) for n, m in inner.named_children() if n in family.vision_modules]
    by_key = {
        vision_tensor_key(name): name
        for name in checkpoint.tensors
        if vision_tensor_key(name).split(".")[0] in family.vision_modules
    }
    for module_name, module in keep:
        state = {}
        for key, value in module.state_dict().items():
            full = vision_tensor_key(f"{module_name}.{key}")
            name = by_key.get(full)
            if name is None:
                raise XdslAneError(
                    f"{checkpoint.directory}: tensor '{full}' of the vision "
                    "model is missing from the checkpoint"
                )
            array = checkpoint.tensor(name, tuple(value.shape))
            state[key] = torch.from_numpy(array).float()
        module.load_state_dict(state)
        patches_as_linear(module)
    return config, inner.eval()


def FeaturesOf(model: Any, tiles: bool) -> Any:  # noqa: N802 (a torch module)
    """pixel_values [1, 3, H, W] -> the image's features [N, hidden] as
    transformers' `get_image_features` of `model` gives them (`tiles`: of
    one tile, VisionFamily.tiles)."""
    import torch

    class Features(torch.nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, pixel_values):
            if tiles:
                size = (
                    pixel_values.shape[-1] // self.model.config.vision_config.patch_size
                )
                everywhere = torch.ones(1, size, size, dtype=torch.bool)
                hidden = self.model.vision_model(
                    pixel_values=pixel_values, patch_attention_mask=everywhere
                ).last_hidden_state
                features = self.model.connector(hidden)
                return features.reshape(-1, features.shape[-1])
            out = self.model.get_image_features(
                pixel_values=pixel_values, return_dict=True
            )
            features = out.pooler_output
            if isinstance(features, list | tuple):
                features = torch.cat(list(features), 0)
            return features.reshape(-1, features.shape[-1])

    return Features(model)


def patches_as_linear(module: Any) -> None:
    """Each patch embedding of `module` — a Conv2d whose stride is its
    kernel, without padding, dilation or groups — replaced by the same
    product written as patches and a linear layer: the ANE runs
    convolution kernels up to 13 wide (ANE_FACTS.md), and CLIP's 14 and
    SigLIP's 14 or 16 are wider, which put the first op of every vision
    tower on the GPU. The patches are a reshape and one rank-5 transpose
    of the image, the linear a 1x1 convolution on the ANE."""
    import torch

    class PatchLinear(torch.nn.Module):
        def __init__(self, conv):
            super().__init__()
            self.kernel = conv.kernel_size
            out = conv.out_channels
            self.linear = torch.nn.Linear(
                conv.in_channels * self.kernel[0] * self.kernel[1],
                out,
                bias=conv.bias is not None,
            )
            with torch.no_grad():
                self.linear.weight.copy_(conv.weight.reshape(out, -1))
                if conv.bias is not None:
                    self.linear.bias.copy_(conv.bias)

        @property
        def weight(self):  # (read for its dtype, as CLIP's embeddings do)
            return self.linear.weight

        def forward(self, x):
            (kh, kw), (_, c, h, w) = self.kernel, x.shape
            rows, cols = h // kh, w // kw
            # [C, H/kh, kh, W/kw, kw] -> [H/kh, W/kw, C, kh, kw]: one patch a row
            patches = x.reshape(c, rows, kh, cols, kw).permute(1, 3, 0, 2, 4)
            out = self.linear(patches.reshape(rows * cols, c * kh * kw))
            return out.transpose(0, 1).reshape(1, -1, rows, cols)

    for name, child in list(module.named_children()):
        if (
            isinstance(child, torch.nn.Conv2d)
            and child.stride == child.kernel_size
            and child.padding in ((0, 0), "valid")
            and child.dilation == (1, 1)
            and child.groups == 1
            and child.padding_mode == "zeros"
        ):
            setattr(module, name, PatchLinear(child))
        else:
            patches_as_linear(child)

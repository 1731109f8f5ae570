"""Tiny vision-language checkpoints written by the tests: random weights
of a small LLaVA (a CLIP vision tower of 32x32 pixels in 8x8 patches, a
Llama decoder) saved with save_pretrained, and its processor (a word-level
tokenizer trained here, the image processor, a chat template), built
offline; and transformers' greedy generation with pixel_values."""

from __future__ import annotations

from pathlib import Path

import numpy as np

IMAGE_TOKEN = "<image>"

WORDS = (
    "user assistant : describe the image . what is in this picture ? a cat "
    "dog sat on mat red blue green sky tree house small big and"
)
"""The tokenizer's words: ids 3..30 after <unk>, <s>, </s>; the image
token is 31, the last of a 32-token vocabulary (so that every generated
id is a word)."""
IMAGE_ID = 31
VOCABULARY = 32

CHAT_TEMPLATE = (
    "{% for message in messages %}{{ message['role'] + ' : ' }}"
    "{% for item in message['content'] %}"
    "{% if item['type'] == 'image' %}{{ '<image> ' }}"
    "{% elif item['type'] == 'text' %}{{ item['text'] }}{% endif %}"
    "{% endfor %}{{ ' ' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ 'assistant :' }}{% endif %}"
)
"""LLaVA's template's shape: the image where the message puts it."""


TINY_VISION = dict(
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=2,
    num_attention_heads=2,
    image_size=32,
    patch_size=8,
)
"""The tiny vision towers' sizes: 32x32 pixels in 8x8 patches."""

TINY_TEXT = dict(
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=256,
)
"""The tiny decoders' sizes."""


def nudged(model, also=None) -> None:
    """Norms away from 1, biases from 0, so that the features count; then
    `also(name, parameter)` on each parameter, in order."""
    import torch

    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name or name.endswith(".bias"):
                p.add_(0.1 * torch.randn_like(p))
            if also is not None:
                also(name, p)


def write_llava(directory: Path, seed: int = 0, processor: bool = True, **vision):
    """save_pretrained of a random tiny LLaVA (its image token IMAGE_ID,
    the last of VOCABULARY) and, with `processor`, of a LlavaProcessor;
    returns transformers' model read back in float32."""
    import torch
    import transformers

    torch.manual_seed(seed)
    vision_config = transformers.CLIPVisionConfig(**(TINY_VISION | vision))
    text_config = transformers.LlamaConfig(
        **TINY_TEXT, vocab_size=VOCABULARY, bos_token_id=1, eos_token_id=2
    )
    config = transformers.LlavaConfig(
        vision_config=vision_config,
        text_config=text_config,
        image_token_id=IMAGE_ID,
        vision_feature_layer=-2,
        vision_feature_select_strategy="default",
    )
    model = transformers.LlavaForConditionalGeneration(config).eval()

    def projector(name, p):
        if "multi_modal_projector" in name and name.endswith("weight"):
            p.mul_(8.0)

    nudged(model, projector)
    model.save_pretrained(directory)
    if processor:
        llava_processor(vision_config.image_size).save_pretrained(directory)
    return transformers.LlavaForConditionalGeneration.from_pretrained(
        directory, dtype=torch.float32
    ).eval()


def llava_processor(size: int):
    """A LlavaProcessor: a word-level tokenizer of WORDS whose image token
    is IMAGE_ID (the checkpoint's), LLaVA's image processor at `size`."""
    import transformers

    tokenizer = word_tokenizer(["<unk>", "<s>", "</s>"], [IMAGE_TOKEN])
    assert tokenizer.token_to_id(IMAGE_TOKEN) == IMAGE_ID
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        extra_special_tokens={"image_token": IMAGE_TOKEN},
    )
    fast._tokenizer.post_processor = bos_post_processor()
    images = transformers.LlavaImageProcessorPil(
        size={"shortest_edge": size}, crop_size={"height": size, "width": size}
    )
    return transformers.LlavaProcessor(
        image_processor=images,
        tokenizer=fast,
        patch_size=8,
        vision_feature_select_strategy="default",
        chat_template=CHAT_TEMPLATE,
        num_additional_image_tokens=1,
    )


def word_tokenizer(special: list[str], added: list[str]):
    """A word-level `tokenizers.Tokenizer` of WORDS split at whitespace:
    the `special` tokens first, then the words, then `added`."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    trainer = trainers.WordLevelTrainer(special_tokens=special, show_progress=False)
    tokenizer.train_from_iterator([WORDS], trainer)
    tokenizer.add_special_tokens(added)
    return tokenizer


def bos_post_processor():
    """`<s>` before each text, as Llama's tokenizer adds it."""
    from tokenizers import processors

    return processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", 1)]
    )


def random_image(seed: int, height: int = 40, width: int = 50, mode: str = "RGB"):
    """A random image: blocks of random colours on a 4 x 4 grid (noise of
    one seed and another looks alike to a random vision tower)."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    channels = {"RGB": 3, "RGBA": 4, "L": 1}[mode]
    grid = rng.integers(0, 256, (4, 4, channels), dtype=np.uint8)
    image = Image.fromarray(grid.squeeze(-1) if channels == 1 else grid, mode)
    return image.resize((width, height), Image.Resampling.NEAREST)


def reference_generate(
    model, prompt: list[int], pixel_values, steps: int, stop: tuple[int, ...] = ()
):
    """transformers' greedy generate with pixel_values, stopping at the
    tokens `stop` alone: (tokens, logits)."""
    import torch

    with torch.no_grad():
        out = model.generate(
            torch.tensor([prompt]),
            pixel_values=torch.from_numpy(np.asarray(pixel_values)),
            attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
            max_new_tokens=steps,
            do_sample=False,
            eos_token_id=list(stop) or None,
            pad_token_id=0,
            output_logits=True,
            return_dict_in_generate=True,
        )
    tokens = [int(t) for t in out.sequences[0, len(prompt) :]]
    return tokens, [row[0].numpy() for row in out.logits]


NEAR_TIE = 1e-2
"""How close, relative to the step's largest |logit|, transformers' logit
of the fp16 package's token may lie below its best for a difference to
count as a near tie (fp16 rounding chooses between nearly equal logits)."""


def assert_same_greedy(tokens, expected, expected_logits) -> int:
    """The fp16 package's greedy tokens against transformers': the same,
    or the same up to a step where transformers' two candidates are a
    near tie (after it the two continue from different tokens and are not
    compared). Returns how many tokens were compared."""
    for i, (got, want) in enumerate(zip(tokens, expected)):
        if got == want:
            continue
        row = np.asarray(expected_logits[i], np.float64)
        gap = row[want] - row[got]
        assert gap <= NEAR_TIE * np.abs(row).max(), (
            f"new token {i + 1}: {got}, transformers {want} (logit gap {gap:.3g})"
        )
        return i + 1
    assert len(tokens) == len(expected), (tokens, expected)
    return len(tokens)


IDEFICS3_SPECIAL = [
    "<fake_token_around_image>",
    "<global-img>",
    *[f"<row_{r}_col_{c}>" for r in range(1, 7) for c in range(1, 7)],
    "<end_of_utterance>",
    IMAGE_TOKEN,
]
"""The tokens Idefics3's processor writes around an image's tiles."""

IDEFICS3_TEMPLATE = (
    "<|im_start|>{% for message in messages %}{{ message['role'] + ' :' }}"
    "{% for item in message['content'] %}"
    "{% if item['type'] == 'image' %}{{ '<image>' }}"
    "{% elif item['type'] == 'text' %}{{ ' ' + item['text'] }}{% endif %}"
    "{% endfor %}<end_of_utterance>\n{% endfor %}"
    "{% if add_generation_prompt %}{{ 'assistant :' }}{% endif %}"
)
"""SmolVLM's template's shape."""


def idefics3_tokenizer():
    """A word-level tokenizer of WORDS and IDEFICS3_SPECIAL, <image> last."""
    import transformers

    special = ["<unk>", "<s>", "</s>", "<|im_start|>"]
    tokenizer = word_tokenizer(special, IDEFICS3_SPECIAL)
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        extra_special_tokens={"image_token": IMAGE_TOKEN},
    )
    fast._tokenizer.post_processor = bos_post_processor()
    return fast


def write_idefics3(directory: Path, seed: int = 0, splitting: bool = True):
    """save_pretrained of a random tiny Idefics3 (SmolVLM's architecture:
    a SigLIP-like tower of 32x32 pixels in 8x8 patches, pixel shuffle by 2,
    so 4 tokens a tile; a Llama decoder) and its processor (tiles of 32
    pixels of an image resized to 64 on its longest edge); returns
    transformers' model read back in float32."""
    import torch
    import transformers

    tokenizer = idefics3_tokenizer()
    vocabulary = len(tokenizer)
    image_id = tokenizer.convert_tokens_to_ids(IMAGE_TOKEN)
    assert image_id == vocabulary - 1
    torch.manual_seed(seed)
    config = transformers.Idefics3Config(
        vision_config=TINY_VISION,
        text_config=dict(
            **TINY_TEXT,
            model_type="llama",
            vocab_size=vocabulary,
            bos_token_id=1,
            eos_token_id=2,
            pad_token_id=0,
        ),
        image_token_id=image_id,
        scale_factor=2,
    )
    model = transformers.Idefics3ForConditionalGeneration(config).eval()
    nudged(model, lambda name, p: p.mul_(8.0) if "connector" in name else None)
    model.save_pretrained(directory)
    images = transformers.Idefics3ImageProcessorPil(
        size={"longest_edge": 64},
        max_image_size={"longest_edge": 32},
        do_image_splitting=splitting,
    )
    processor = transformers.Idefics3Processor(
        image_processor=images,
        tokenizer=tokenizer,
        image_seq_len=4,
        chat_template=IDEFICS3_TEMPLATE,
    )
    processor.save_pretrained(directory)
    return transformers.Idefics3ForConditionalGeneration.from_pretrained(
        directory, dtype=torch.float32
    ).eval()


GEMMA3_SPECIAL = ["<start_of_image>", "<end_of_image>", "<image_soft_token>"]
"""Gemma 3's image tokens: the placeholder, its end, the image's rows
(the last three ids)."""

GEMMA3_TEMPLATE = (
    "<s>{% for message in messages %}{{ message['role'] + ' :' }}"
    "{% for item in message['content'] %}"
    "{% if item['type'] == 'image' %}{{ ' <start_of_image>' }}"
    "{% elif item['type'] == 'text' %}{{ ' ' + item['text'] }}{% endif %}"
    "{% endfor %}{{ ' ' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ 'assistant :' }}{% endif %}"
)
"""Gemma 3's template's shape: bos in the template, the image's
`<start_of_image>` where the message puts it."""


def write_gemma3(directory: Path, seed: int = 0):
    """save_pretrained of a random tiny Gemma 3 (a SigLIP tower of 32x32
    pixels in 8x8 patches pooled to 4 tokens, a Gemma 3 text decoder with
    a sliding layer) and its processor; returns transformers' model read
    back in float32."""
    import torch
    import transformers

    tokenizer = word_tokenizer(["<unk>", "<s>", "</s>", "<pad>"], GEMMA3_SPECIAL)
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        pad_token="<pad>",
        extra_special_tokens={
            "boi_token": "<start_of_image>",
            "eoi_token": "<end_of_image>",
            "image_token": "<image_soft_token>",
        },
    )
    vocabulary = len(fast)
    boi, eoi, image_id = (fast.convert_tokens_to_ids(t) for t in GEMMA3_SPECIAL)
    torch.manual_seed(seed)
    config = transformers.Gemma3Config(
        vision_config=dict(**TINY_VISION, model_type="siglip_vision_model"),
        text_config=dict(
            **TINY_TEXT,
            model_type="gemma3_text",
            head_dim=16,
            vocab_size=vocabulary,
            sliding_window=6,
            layer_types=["sliding_attention", "full_attention"],
            bos_token_id=1,
            eos_token_id=2,
            pad_token_id=3,
        ),
        mm_tokens_per_image=4,
        image_token_id=image_id,
        boi_token_id=boi,
        eoi_token_id=eoi,
    )
    model = transformers.Gemma3ForConditionalGeneration(config).eval()

    def image_rows_count(name, p):  # in attention too
        if "language_model" in name and ("q_norm" in name or "k_norm" in name):
            p.add_(4.0)  # peaked scores past the QK norms
        if "mm_input_projection" in name:  # (initialised to zeros)
            p.normal_(0.0, 0.2)

    nudged(model, image_rows_count)
    model.save_pretrained(directory)
    images = transformers.Gemma3ImageProcessorPil(size={"height": 32, "width": 32})
    processor = transformers.Gemma3Processor(
        image_processor=images,
        tokenizer=fast,
        image_seq_length=4,
        chat_template=GEMMA3_TEMPLATE,
    )
    processor.save_pretrained(directory)
    return transformers.Gemma3ForConditionalGeneration.from_pretrained(
        directory, dtype=torch.float32
    ).eval()


QWEN_VL_SPECIAL = [
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|video_pad|>",
    "<|image_pad|>",
]
"""Qwen2-VL's tokens: the chat turns, the image's start and end, the
video's and the image's rows (the last id)."""

QWEN_VL_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }} :"
    "{% for item in message['content'] %}"
    "{% if item['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif item['type'] == 'text' %}{{ ' ' + item['text'] }}{% endif %}"
    "{% endfor %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant :{% endif %}"
)
"""Qwen2-VL's template's shape: the image between its start and end."""


def write_qwen_vl(directory: Path, seed: int = 0, version: str = "2"):
    """save_pretrained of a random tiny Qwen2-VL (`version` "2") or
    Qwen2.5-VL ("2.5": RMSNorm, a gated MLP, window attention in 56-pixel
    windows but in blocks 1 and 3) with multimodal RoPE over sections
    [2, 3, 3] of its 16-dim heads, and its processor; returns
    transformers' model read back in float32."""
    import torch
    import transformers

    tokenizer = word_tokenizer(["<unk>"], QWEN_VL_SPECIAL)
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token="<|im_end|>",
        unk_token="<unk>",
        pad_token="<unk>",
        extra_special_tokens={
            "image_token": "<|image_pad|>",
            "video_token": "<|video_pad|>",
        },
    )
    ids = {t: fast.convert_tokens_to_ids(t) for t in QWEN_VL_SPECIAL}
    text = dict(
        **TINY_TEXT,
        vocab_size=len(fast),
        rope_parameters={
            "rope_type": "default",
            "rope_theta": 10000.0,
            "mrope_section": [2, 3, 3],
        },
        eos_token_id=ids["<|im_end|>"],
        pad_token_id=0,
    )
    torch.manual_seed(seed)
    if version == "2":
        vision = dict(depth=2, embed_dim=32, hidden_size=64, num_heads=2, mlp_ratio=2)
        config_class = transformers.Qwen2VLConfig
        model_class = transformers.Qwen2VLForConditionalGeneration
    else:
        vision = dict(
            depth=4,
            hidden_size=32,
            intermediate_size=48,
            out_hidden_size=64,
            num_heads=2,
            window_size=56,
            fullatt_block_indexes=[1, 3],
        )
        config_class = transformers.Qwen2_5_VLConfig
        model_class = transformers.Qwen2_5_VLForConditionalGeneration
    config = config_class(
        vision_config=vision,
        text_config=text,
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
    )
    model = model_class(config).eval()

    def peaked(name, p):
        if "merger" in name and name.endswith("weight"):
            p.mul_(4.0)
        if "language_model" in name and ("q_proj" in name or "k_proj" in name):
            p.mul_(4.0)  # peaked scores: where a row sits counts

    nudged(model, peaked)
    model.save_pretrained(directory)
    images = transformers.Qwen2VLImageProcessorPil(
        size={"shortest_edge": 56 * 56, "longest_edge": 224 * 224}
    )
    images.save_pretrained(directory)  # (its processor class needs torchvision)
    fast.chat_template = QWEN_VL_TEMPLATE
    fast.save_pretrained(directory)
    return model_class.from_pretrained(directory, dtype=torch.float32).eval()

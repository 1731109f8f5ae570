"""Vision-language generation end to end: tiny random LLaVA (CLIP vision
tower, projector, Llama decoder), Idefics3 (SmolVLM's: tiles, pixel
shuffle) and Gemma 3 (SigLIP, pooling; an image's rows attend both ways)
checkpoints through compile-llm to a decoder package and a
vision package; the image processor equals
transformers'; the fp32 programs give transformers' logits with
pixel_values within 1e-4; the fp16 packages give transformers' greedy
tokens, another image other tokens; `generate --image` builds the prompt
as the processor does; bad input is one line."""

from __future__ import annotations

import json

import numpy as np
import pytest
from cli_helpers import cli, error_line, readme_example
from vlm_checkpoints import (
    IMAGE_ID,
    assert_same_greedy,
    llava_processor,
    random_image,
    reference_generate,
    write_gemma3,
    write_idefics3,
    write_llava,
)

from xdsl_ane.api.images import ImageProcessor, TilingImageProcessor
from xdsl_ane.api.llm import PackageRunner
from xdsl_ane.api.llm_compile import compile_llm
from xdsl_ane.api.vlm import VisionRunner

# Compiles a vision-language checkpoint and runs transformers beside it.
pytestmark = pytest.mark.slow

PROMPT = [1, IMAGE_ID, 5, 6, 7]
"""<s>, the image token, three words."""


@pytest.fixture(scope="module")
def llava(tmp_path_factory):
    """The checkpoint, transformers' model of it, and its package
    (compile-llm --validate: coremltools' loader reads both packages)."""
    directory = tmp_path_factory.mktemp("llava")
    checkpoint = directory / "ckpt"
    model = write_llava(checkpoint)
    out = directory / "llava.mlpackage"
    result = cli(
        "compile-llm",
        str(checkpoint),
        "-o",
        str(out),
        "--context",
        "64",
        "--prefill",
        "16",
        "--chunk",
        "128",
        "--validate",
    )
    assert result.returncode == 0, result.stderr
    vision = out.with_name("llava.vision.mlpackage")
    assert f"vision: wrote {vision} (llava: 32x32 pixels -> 16 image tokens" in (
        result.stdout
    )
    # a vision package where another compile would write its own is refused
    # before anything compiles
    (directory / "x.vision.mlpackage").mkdir()
    again = cli(
        "compile-llm", str(checkpoint), "-o", str(directory / "x.mlpackage"),
        "--context", "64",
    )  # fmt: skip
    error_line(again, "x.vision.mlpackage", "already exists")
    assert not (directory / "x.mlpackage").exists()
    return checkpoint, model, out


def test_image_processor_is_transformers(tmp_path):
    """pixel_values equal transformers' LLaVA processor's (PIL backend):
    non-square, grey and RGBA images, smaller than the crop, padded to a
    square."""
    import transformers

    images = [
        random_image(0),
        random_image(1, 70, 30, "L"),
        random_image(2, 20, 24, "RGBA"),
    ]
    for pad in (False, True):
        reference = transformers.LlavaImageProcessorPil(
            size={"shortest_edge": 32},
            crop_size={"height": 32, "width": 32},
            do_pad=pad,
        )
        ours = ImageProcessor(reference.to_dict())
        for image in images:
            expected = reference(image, return_tensors="np")["pixel_values"]
            np.testing.assert_allclose(ours(image), expected, rtol=0, atol=1e-6)


def test_package_gives_transformers_tokens(llava):
    checkpoint, model, out = llava
    runner = PackageRunner(out)
    vision = VisionRunner(runner)
    manifest = json.loads(out.with_name("llava.manifest.json").read_text())["llm"]
    assert manifest["vision"]["image_tokens"] == 16
    assert [s["name"] for s in manifest["segments"]] == ["embed", "layers", "head"]
    assert out.with_name("llava.vision.mlpackage").is_dir()
    seen = []
    for seed in (0, 1):
        pixels = vision.pixel_values(random_image(seed))
        prompt = vision.expand(PROMPT)
        assert len(prompt) == len(PROMPT) + 15
        rows = vision.rows(prompt, vision.features(pixels))
        tokens, logits = runner.generate(prompt, 12, rows=rows)
        expected, expected_logits = reference_generate(model, prompt, pixels, 12)
        same = assert_same_greedy(tokens, expected, expected_logits)
        for got, ref in zip(logits[:same], expected_logits[:same]):
            scale = np.abs(ref).max()
            np.testing.assert_allclose(got, ref, rtol=2e-2, atol=2e-2 * scale)
        seen.append(tokens)
    assert seen[0] != seen[1]  # the image counts


def test_fp32_programs_give_transformers_logits(llava):
    """The vision program and the decoder's three steps, in fp32 in the
    interpreter, the features merged into the embedding's rows: logits
    within 1e-4 of transformers' with pixel_values."""
    import torch

    import xdsl_ane
    from xdsl_ane.interpreter.core import StatefulRuntime, run_function
    from xdsl_ane.models.hf_config import llm_config
    from xdsl_ane.models.llm import Decoder, LlmShape
    from xdsl_ane.models.llm_packages import segments_module
    from xdsl_ane.models.vision_language import (
        image_features_module,
        text_checkpoint,
        vision_family,
    )
    from xdsl_ane.weights.checkpoint import read_checkpoint

    checkpoint, model, _ = llava
    whole = read_checkpoint(checkpoint)
    family = vision_family(whole.config)
    features = image_features_module(whole, family)
    pixels = llava_processor(32).image_processor(random_image(3), return_tensors="np")
    pixels = pixels["pixel_values"]
    imported = xdsl_ane.from_torch(features.module, (torch.from_numpy(pixels),))
    (rows,) = run_function(imported.module, [pixels], imported.weights)
    text = text_checkpoint(whole, family)
    decoder = Decoder(llm_config(text), LlmShape(64, 32, 128))
    module = segments_module(decoder)
    runtime = StatefulRuntime(module, decoder.weights(text, module))
    prompt = [1, *[IMAGE_ID] * 16, 5, 6, 7]
    ids = np.zeros(32, np.int32)
    ids[: len(prompt)] = prompt
    (hidden,) = runtime.call("embed_prefill", [ids])
    hidden = hidden.copy()
    hidden[0, 1:17] = rows
    (hidden,) = runtime.call("prefill", [hidden, np.array([0], np.int32)])
    logits = np.concatenate(runtime.call("head_prefill", [hidden]), 1)
    with torch.no_grad():
        expected = model(
            torch.tensor([prompt]), pixel_values=torch.from_numpy(pixels)
        ).logits[0]
    expected = expected.numpy()
    scale = np.abs(expected).max()
    np.testing.assert_allclose(
        logits[: len(prompt)], expected, rtol=1e-4, atol=1e-4 * scale
    )


def test_cli_generate_with_an_image(llava, tmp_path):
    """--chat builds the ids of the processor's apply_chat_template,
    --prompt those of processor(text=...), --prompt-ids expands the one
    image token; the tokens are transformers' (--reference runs it on the
    same pixels)."""
    import transformers

    checkpoint, model, out = llava
    image = tmp_path / "cat.png"
    random_image(4).save(image)
    processor = transformers.AutoProcessor.from_pretrained(checkpoint)
    from PIL import Image

    loaded = Image.open(image)
    messages = [
        {
            "role": "user",
            "content": [
                {"type": "image", "image": loaded},
                {"type": "text", "text": "describe the image"},
            ],
        }
    ]
    chat = processor.apply_chat_template(
        messages, add_generation_prompt=True, tokenize=True, return_dict=True
    )
    plain = processor(images=loaded, text="<image> what is in this picture ?")
    cases = [
        (["--prompt", "describe the image", "--chat"], chat),
        (["--prompt", "what is in this picture ?"], plain),
    ]
    for args, expected in cases:
        result = cli(
            "generate",
            str(out),
            "--image",
            str(image),
            "--show-ids",
            *args,
            "--max-new-tokens",
            "6",
        )
        assert result.returncode == 0, result.stderr
        lines = result.stdout.splitlines()
        prompt = [int(t) for t in lines[0].removeprefix("prompt: ").split(",")]
        assert prompt == list(expected["input_ids"][0])
        pixels = np.asarray(expected["pixel_values"])
        expected, logits = reference_generate(model, prompt, pixels, 6, stop=(2,))
        tokens = [int(t) for t in lines[-1].removeprefix("tokens: ").split(",")]
        assert_same_greedy(tokens, expected, logits)
    result = cli(
        "generate", str(out), "--image", str(image), "--prompt",
        "describe the image", "--chat", "--reference", str(checkpoint),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "same tokens"
    # two images: each where the template puts it, in order
    other = tmp_path / "dog.png"
    random_image(5).save(other)
    both = [{"type": "image", "image": Image.open(other)}, *messages[0]["content"]]
    expected = processor.apply_chat_template(
        [{"role": "user", "content": both}],
        add_generation_prompt=True,
        tokenize=True,
        return_dict=True,
    )
    result = cli(
        "generate", str(out), "--image", str(other), "--image", str(image),
        "--prompt", "describe the image", "--chat", "--show-ids",
        "--reference", str(checkpoint),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "prompt: " + ",".join(map(str, expected["input_ids"][0]))
    assert lines[-1] == "same tokens"
    assert np.asarray(expected["pixel_values"]).shape[0] == 2
    ids = ",".join(map(str, PROMPT))
    result = cli(
        "generate",
        str(out),
        "--image",
        str(image),
        "--prompt-ids",
        ids,
        "--max-new-tokens",
        "6",
    )
    assert result.returncode == 0, result.stderr
    first = result.stdout.splitlines()[0]
    prompt = [int(t) for t in first.removeprefix("prompt: ").split(",")]
    assert prompt == [1, *[IMAGE_ID] * 16, 5, 6, 7]


def test_split_packages_give_the_same_tokens(llava, tmp_path):
    checkpoint, _, out = llava
    split = tmp_path / "split"
    compile_llm(
        checkpoint,
        context=64,
        prefill=16,
        chunk=128,
        layers_per_package=1,
        output=split,
    )
    assert (split / "vision.mlpackage").is_dir()
    results = []
    for path in (out, split):
        runner = PackageRunner(path)
        vision = VisionRunner(runner)
        prompt = vision.expand(PROMPT)
        rows = vision.rows(
            prompt, vision.features(vision.pixel_values(random_image(5)))
        )
        results.append(runner.generate(prompt, 8, rows=rows)[0])
    assert results[0] == results[1]


def test_bad_images_are_one_line(llava, tiny_llm, tmp_path):
    _, _, out = llava
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"\x89PNG\r\n\x1a\n not an image")
    truncated = tmp_path / "truncated.png"
    random_image(6).save(truncated)
    truncated.write_bytes(truncated.read_bytes()[:60])
    image = tmp_path / "fine.png"
    random_image(7).save(image)
    cases = [
        (
            [str(out), "--image", str(broken), "--prompt-ids", f"1,{IMAGE_ID}"],
            "not an image",
        ),
        (
            [str(out), "--image", str(truncated), "--prompt-ids", f"1,{IMAGE_ID}"],
            "--image",
        ),
        (
            [
                str(out),
                "--image",
                str(tmp_path / "none.png"),
                "--prompt-ids",
                f"1,{IMAGE_ID}",
            ],
            "not found",
        ),
        ([str(out), "--image", str(image), "--prompt-ids", "1,5"], "image token"),
        (
            [
                str(out),
                "--image",
                str(image),
                "--image",
                str(image),
                "--prompt-ids",
                f"1,{IMAGE_ID}",
            ],
            "holds 1 image tokens (31); 2 image(s) need one each",
        ),
        (
            [str(tiny_llm.whole), "--image", str(image), "--prompt-ids", "1,5"],
            "text-only",
        ),
    ]
    for args, words in cases:
        result = cli("generate", *args)
        assert result.stdout == ""
        error_line(result, words)


def test_readme_image_example(tmp_path):
    """The README's image example prints what it shows."""
    import shlex

    compile_command, runs = readme_example(
        "xdsl-ane compile-llm llava", "xdsl-ane generate llava.mlpackage"
    )
    assert len(runs) == 2
    write_llava(tmp_path / "llava")
    random_image(4).save(tmp_path / "cat.png")
    result = cli(*shlex.split(compile_command)[1:], cwd=str(tmp_path))
    assert result.returncode == 0, result.stderr
    for command, expected in runs:
        result = cli(*shlex.split(command)[1:], cwd=str(tmp_path))
        assert result.returncode == 0, result.stderr
        assert result.stdout.splitlines() == expected, command


@pytest.fixture(scope="module")
def idefics3(tmp_path_factory):
    """A tiny Idefics3 checkpoint, transformers' model and processor of it,
    and its package."""
    import transformers

    directory = tmp_path_factory.mktemp("idefics3")
    checkpoint = directory / "ckpt"
    model = write_idefics3(checkpoint)
    out = directory / "smol.mlpackage"
    compile_llm(checkpoint, context=128, prefill=16, chunk=128, output=out)
    processor = transformers.AutoProcessor.from_pretrained(checkpoint)
    return checkpoint, model, processor, out


def test_tiling_image_processor_is_transformers():
    """Idefics3's tiles equal transformers' (PIL backend): wide, tall and
    small images, split into tiles or not."""
    import transformers

    images = [
        random_image(0),
        random_image(1, 90, 30, "L"),
        random_image(2, 20, 24, "RGBA"),
        random_image(3, 33, 100),
    ]
    for splitting in (True, False):
        reference = transformers.Idefics3ImageProcessorPil(
            size={"longest_edge": 64},
            max_image_size={"longest_edge": 32},
            do_image_splitting=splitting,
        )
        ours = TilingImageProcessor(reference.to_dict())
        for image in images:
            expected = reference(image, return_tensors="np", return_row_col_info=True)
            tiled = ours(image)
            assert (tiled.rows, tiled.cols) == (
                expected["rows"][0][0],
                expected["cols"][0][0],
            )
            pixels = expected["pixel_values"][0]
            assert len(tiled.tiles) == len(pixels)
            for got, want in zip(tiled.tiles, pixels):
                np.testing.assert_allclose(got[0], want, rtol=0, atol=1e-6)


def test_idefics3_gives_transformers_tokens(idefics3, tmp_path):
    """The prompt of the processor's apply_chat_template (tiles, their row
    and column tokens, the whole image) and transformers' greedy tokens;
    another image gives other tokens; --prompt-ids expands the image token
    into the same tokens with the tokenizer beside the package."""
    checkpoint, model, processor, out = idefics3
    seen = []
    for seed in (0, 1):
        image = tmp_path / f"image{seed}.png"
        random_image(seed).save(image)
        messages = [
            {
                "role": "user",
                "content": [
                    {"type": "image", "image": str(image)},
                    {"type": "text", "text": "describe the image"},
                ],
            }
        ]
        expected = processor.apply_chat_template(
            messages, add_generation_prompt=True, tokenize=True, return_dict=True
        )
        result = cli(
            "generate", str(out), "--image", str(image), "--prompt",
            "describe the image", "--chat", "--show-ids", "--max-new-tokens", "8",
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        lines = result.stdout.splitlines()
        prompt = [int(t) for t in lines[0].removeprefix("prompt: ").split(",")]
        assert prompt == list(expected["input_ids"][0])
        pixels = np.asarray(expected["pixel_values"])
        reference, logits = reference_generate(model, prompt, pixels, 8, stop=(2,))
        tokens = [int(t) for t in lines[-1].removeprefix("tokens: ").split(",")]
        assert_same_greedy(tokens, reference, logits)
        seen.append(tokens)
    assert seen[0] != seen[1]
    image_id = model.config.image_token_id
    result = cli(
        "generate", str(out), "--image", str(tmp_path / "image0.png"),
        "--prompt-ids", f"1,{image_id},5,6", "--max-new-tokens", "2",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    prompt = result.stdout.splitlines()[0].removeprefix("prompt: ").split(",")
    assert prompt.count(str(image_id)) == 5 * 4  # 2 x 2 tiles and the whole


def test_other_vision_language_architectures_are_refused(tmp_path):
    """A vision-language architecture not read here (Qwen3-VL) is refused
    in one line naming it, before anything is compiled."""
    from safetensors.numpy import save_file

    arch = "Qwen3VLForConditionalGeneration"
    checkpoint = tmp_path / arch
    checkpoint.mkdir()
    (checkpoint / "config.json").write_text(json.dumps({"architectures": [arch]}))
    save_file({"x": np.zeros(2, np.float32)}, checkpoint / "model.safetensors")
    result = cli("compile-llm", str(checkpoint), "-o", str(tmp_path / "x"))
    error_line(result, arch, "supported: ", "Qwen2VLForConditionalGeneration")
    assert not (tmp_path / "x").exists()


def test_patch_embedding_runs_on_the_ane(tmp_path):
    """A patch embedding wider than the ANE's 13 (CLIP's 14 here) becomes
    patches and a linear layer: the features are transformers' (fp32,
    1e-4) and the whole vision package is estimated on the ANE, where
    the convolution put its first op on the GPU."""
    import torch

    import xdsl_ane
    from xdsl_ane.api.vlm import compile_vision
    from xdsl_ane.estimator import estimate
    from xdsl_ane.interpreter.core import run_function
    from xdsl_ane.models.vision_language import image_features_module, vision_family
    from xdsl_ane.weights.checkpoint import read_checkpoint

    model = write_llava(tmp_path, processor=False, image_size=28, patch_size=14)
    checkpoint = read_checkpoint(tmp_path)
    family = vision_family(checkpoint.config)
    features = image_features_module(checkpoint, family)
    pixels = torch.randn(1, 3, 28, 28)
    imported = xdsl_ane.from_torch(features.module, (pixels,))
    assert not any(op.name == "rlx.conv" for op in imported.module.walk())
    (got,) = run_function(imported.module, [pixels.numpy()], imported.weights)
    with torch.no_grad():
        out = model.model.get_image_features(pixel_values=pixels, return_dict=True)
        expected = out.pooler_output[0].numpy()
    scale = np.abs(expected).max()
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4 * scale)
    vision = compile_vision(checkpoint, family, 1.0)
    e = estimate(vision.compiled, "m4")
    assert e.ane_fraction == 1.0 and e.switches == 0


@pytest.mark.parametrize("prefill", [16, 6])
def test_gemma3_gives_transformers_tokens(tmp_path, prefill):
    """Gemma 3: the processor's pixels and apply_chat_template prompt
    (`<start_of_image>` expanded), and transformers' greedy tokens with
    token_type_ids, whose image rows attend to each other both ways: in
    one prefill of 16, and with a prefill of 6 (the sliding layer's ring
    of 6), where the first call ends before the image so that the image
    is in one call. At the image rows transformers' causal logits
    (without token_type_ids) are ten times further from its own than
    ours."""
    import torch
    import transformers

    checkpoint = tmp_path / "ckpt"
    model = write_gemma3(checkpoint)
    out = tmp_path / "gemma.mlpackage"
    compile_llm(checkpoint, context=48, prefill=prefill, chunk=128, output=out)
    processor = transformers.AutoProcessor.from_pretrained(checkpoint)
    runner = PackageRunner(out)
    vision = VisionRunner(runner)
    assert runner.record.get("local_window") == (6 if prefill == 6 else None)
    seen = []
    for seed in (0, 1):
        image = random_image(seed)
        messages = [
            {
                "role": "user",
                "content": [
                    {"type": "image", "image": image},
                    {"type": "text", "text": "describe the image"},
                ],
            }
        ]
        expected = processor.apply_chat_template(
            messages, add_generation_prompt=True, tokenize=True, return_dict=True
        )
        tiled = vision.prepare(image)
        pixels = np.asarray(expected["pixel_values"])
        np.testing.assert_allclose(tiled.tiles[0], pixels, rtol=0, atol=1e-6)
        prompt = vision.text_prompt(
            runner.tokenizer(), "describe the image", True, [tiled]
        )
        assert prompt == list(expected["input_ids"][0])
        rows = vision.rows(prompt, vision.image_features([tiled]))
        blocks = vision.blocks(prompt)
        tokens, logits = runner.generate(prompt, 8, rows=rows, blocks=blocks)
        ids = torch.tensor(expected["input_ids"])
        kwargs = dict(
            pixel_values=torch.from_numpy(pixels),
            attention_mask=torch.ones_like(ids),
            max_new_tokens=8,
            do_sample=False,
            output_logits=True,
            return_dict_in_generate=True,
        )
        with torch.no_grad():
            both_ways = model.generate(
                ids, token_type_ids=torch.tensor(expected["token_type_ids"]), **kwargs
            )
        reference = both_ways.sequences[0, len(prompt) :].tolist()
        reference_logits = [row[0].numpy() for row in both_ways.logits]
        same = assert_same_greedy(tokens, reference, reference_logits)
        seen.append(tokens[:same])
        if prefill < len(prompt):
            continue
        if seed == 1:  # split: the layers' packages take the image blocks too
            split = tmp_path / "split"
            compile_llm(checkpoint, context=48, prefill=prefill, chunk=128,
                        layers_per_package=1, output=split)  # fmt: skip
            again, _ = PackageRunner(split).generate(
                prompt, 8, rows=rows, blocks=blocks
            )
            assert again == tokens
        if seed == 0:  # the command line: --prompt-ids holds <start_of_image>
            path = tmp_path / "image.png"
            image.save(path)
            boi = processor.tokenizer.convert_tokens_to_ids("<start_of_image>")
            result = cli(
                "generate", str(out), "--image", str(path), "--prompt-ids",
                f"1,{boi},7,8", "--reference", str(checkpoint),
                "--max-new-tokens", "4",
            )  # fmt: skip
            assert result.returncode == 0, result.stderr
            lines = result.stdout.splitlines()
            assert lines[-1] == "same tokens"
            assert lines[0].count(f",{model.config.image_token_id}") == 4
        # the prompt's logits in one prefill: the image rows are where the
        # two masks differ
        got = PackageRunner(out).call("prefill", prompt, 0, rows, blocks)
        with torch.no_grad():
            full = model(
                ids,
                pixel_values=kwargs["pixel_values"],
                token_type_ids=torch.tensor(expected["token_type_ids"]),
            ).logits[0]
            causal_full = model(ids, pixel_values=kwargs["pixel_values"]).logits[0]
        full, causal_full = full.numpy(), causal_full.numpy()
        error = np.abs(got - full).max()
        assert error < 2e-2 * np.abs(full).max()
        image = [i for i, b in enumerate(blocks) if b >= 0]
        assert np.abs(causal_full - full)[image].max() > 10 * error
    assert seen[0] != seen[1]

"""Qwen2-VL and Qwen2.5-VL end to end: tiny random checkpoints through
compile-llm (a vision package at one image size, the decoder rotating by
multimodal RoPE positions); the processor's patches and the prompt's 3-D
positions equal transformers'; the fp16 packages give transformers'
greedy tokens (and without the 3-D positions they would not); another
image gives other tokens; the CLI's `--image-size` is checked in one
line."""

from __future__ import annotations

import json

import numpy as np
import pytest
from cli_helpers import cli, error_line
from vlm_checkpoints import assert_same_greedy, random_image, write_qwen_vl

from xdsl_ane.api.images import GridImageProcessor
from xdsl_ane.api.llm import PackageRunner, reference_generate
from xdsl_ane.api.vlm import VisionRunner

# Compiles vision-language checkpoints and runs transformers beside them.
pytestmark = pytest.mark.slow


def compiled(directory, version: str, size: int):
    """The checkpoint, transformers' model and the package (--validate:
    coremltools' loader reads both packages)."""
    checkpoint = directory / "ckpt"
    model = write_qwen_vl(checkpoint, version=version)
    out = directory / "qwen.mlpackage"
    result = cli(
        "compile-llm", str(checkpoint), "-o", str(out), "--context", "128",
        "--prefill", "32", "--image-size", str(size), "--validate",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    tokens = (size // 28) ** 2
    family = "qwen2_vl" if version == "2" else "qwen2_5_vl"
    assert f"({family}: {size}x{size} pixels -> {tokens} image tokens of 64" in (
        result.stdout
    )
    return checkpoint, model, out


@pytest.fixture(scope="module")
def qwen2_vl(tmp_path_factory):
    return compiled(tmp_path_factory.mktemp("qwen2vl"), "2", 112)


def test_grid_processor_is_transformers():
    """The patches and grid equal transformers' Qwen2-VL processor's (PIL
    backend) for images whose size its smart_resize keeps or resizes to
    the package's: RGB, grey, RGBA."""
    import transformers

    reference = transformers.Qwen2VLImageProcessorPil(
        size={"shortest_edge": 56 * 56, "longest_edge": 112 * 112}
    )
    ours = GridImageProcessor(reference.to_dict(), 112, 14, 2, 2)
    for image in (
        random_image(0, 112, 112),
        random_image(1, 120, 104, "L"),
        random_image(2, 100, 110, "RGBA"),
    ):
        expected = reference(image, return_tensors="np")
        assert expected["image_grid_thw"].tolist() == [[1, 8, 8]]
        (patches,) = ours(image).tiles
        np.testing.assert_allclose(patches, expected["pixel_values"], rtol=0, atol=1e-6)


def test_rope_positions_are_transformers(qwen2_vl):
    """The prompt's 3-D positions and the decode positions' lag equal
    transformers' get_rope_index."""
    import torch

    checkpoint, model, out = qwen2_vl
    vision = VisionRunner(PackageRunner(out))
    prompt = [5, 6, 31, *[34] * 16, 32, 7, 8, 9]
    ours = vision.rope_positions(prompt)
    inputs = vision.reference_inputs(
        [vision.prepare(random_image(0, 112, 112))], prompt
    )
    positions, delta = model.model.get_rope_index(
        torch.tensor([prompt]),
        mm_token_type_ids=torch.from_numpy(inputs["mm_token_type_ids"]),
        image_grid_thw=torch.from_numpy(inputs["image_grid_thw"]),
    )
    np.testing.assert_array_equal(ours, positions[:, 0].numpy().T)
    assert int(ours.max()) + 1 - len(prompt) == int(delta) == -12


@pytest.mark.parametrize("version", ["2", "2.5"])
def test_vision_program_is_transformers(tmp_path, version):
    """The vision program in fp32 in the interpreter gives transformers'
    get_image_features within 1e-5 of their largest: Qwen2.5-VL's 4
    windows of 4x4 patches in blocks 0 and 2 included."""
    import torch

    import xdsl_ane
    from xdsl_ane.interpreter.core import run_function
    from xdsl_ane.models.vision_language import image_features_module, vision_family
    from xdsl_ane.weights.checkpoint import read_checkpoint

    model = write_qwen_vl(tmp_path, seed=2, version=version)
    whole = read_checkpoint(tmp_path)
    features = image_features_module(whole, vision_family(whole.config), 112)
    pixels = np.random.default_rng(0).normal(size=features.example.shape)
    pixels = pixels.astype(np.float32)
    imported = xdsl_ane.from_torch(features.module, (torch.from_numpy(pixels),))
    (ours,) = run_function(imported.module, [pixels], imported.weights)
    with torch.no_grad():
        out = model.model.get_image_features(
            torch.from_numpy(pixels), torch.tensor([[1, 8, 8]])
        )
    expected = torch.cat(list(out.pooler_output)).numpy()
    np.testing.assert_allclose(ours, expected, atol=1e-5 * np.abs(expected).max())


def generate_both(runner, vision, checkpoint, image, steps=10, rope=True):
    """(our tokens and logits, transformers') for a chat prompt on `image`
    (or a list of images)."""
    tokenizer = runner.tokenizer()
    images = image if isinstance(image, list) else [image]
    processed = [vision.prepare(i) for i in images]
    prompt = vision.text_prompt(tokenizer, "describe the image .", True, processed)
    rows = vision.rows(prompt, vision.image_features(processed))
    positions = vision.rope_positions(prompt) if rope else None
    ours = runner.generate(prompt, steps, rows=rows, rope=positions)
    reference = vision.reference_inputs(processed, prompt)
    return ours, reference_generate(checkpoint, prompt, steps, (), reference)


def test_two_images(qwen2_vl):
    """Two images in one prompt: each image's rows from the position after
    the text before it, as get_rope_index places them; transformers'
    tokens, and the images in the other order give other tokens."""
    import torch

    checkpoint, model, out = qwen2_vl
    runner = PackageRunner(out)
    vision = VisionRunner(runner)
    images = [random_image(5, 112, 112), random_image(6, 112, 112)]
    prompt = vision.text_prompt(
        runner.tokenizer(),
        "what is in this picture ?",
        True,
        [vision.prepare(i) for i in images],
    )
    assert prompt.count(34) == 32
    inputs = vision.reference_inputs([vision.prepare(i) for i in images], prompt)
    positions, _ = model.model.get_rope_index(
        torch.tensor([prompt]),
        mm_token_type_ids=torch.from_numpy(inputs["mm_token_type_ids"]),
        image_grid_thw=torch.from_numpy(inputs["image_grid_thw"]),
    )
    np.testing.assert_array_equal(
        vision.rope_positions(prompt), positions[:, 0].numpy().T
    )
    seen = []
    for order in (images, images[::-1]):
        (tokens, logits), (expected, expected_logits) = generate_both(
            runner, vision, checkpoint, order, steps=8
        )
        same = assert_same_greedy(tokens, expected, expected_logits)
        assert same >= 4
        for got, ref in zip(logits[:same], expected_logits[:same]):
            np.testing.assert_allclose(got, ref, atol=2e-2 * np.abs(ref).max())
        seen.append(expected_logits[0])
    # the order counts beyond the tolerance the packages' logits keep
    assert np.abs(seen[0] - seen[1]).max() > 2e-2 * np.abs(seen[0]).max()


def test_qwen2_vl_gives_transformers_tokens(qwen2_vl):
    checkpoint, _, out = qwen2_vl
    runner = PackageRunner(out)
    vision = VisionRunner(runner)
    manifest = json.loads(out.with_name("qwen.manifest.json").read_text())["llm"]
    assert manifest["mrope_section"] == [2, 3, 3]
    assert manifest["vision"]["grid"] == [1, 8, 8]
    seen = []
    for seed in (0, 1):
        image = random_image(seed, 112, 112)
        (tokens, logits), (expected, expected_logits) = generate_both(
            runner, vision, checkpoint, image
        )
        same = assert_same_greedy(tokens, expected, expected_logits)
        assert same >= 5
        for got, ref in zip(logits[:same], expected_logits[:same]):
            np.testing.assert_allclose(got, ref, atol=2e-2 * np.abs(ref).max())
        seen.append(tokens)
        if seed == 0:  # the image's rows rotated by the cache index instead
            (_, flat), _ = generate_both(runner, vision, checkpoint, image, 1, False)
            gap = np.abs(flat[0] - expected_logits[0]).max()
            # (outside the tolerance the packages' logits keep: 1e-3 here)
            assert gap > 2e-2 * np.abs(expected_logits[0]).max()
    assert seen[0] != seen[1]  # the image counts


def test_qwen2_5_vl_window_attention(tmp_path):
    """Qwen2.5-VL at 112 pixels: 4 windows of 4x4 patches (2x2 merged) in
    blocks 0 and 2, the whole image in 1 and 3."""
    checkpoint, _, out = compiled(tmp_path, "2.5", 112)
    runner = PackageRunner(out)
    vision = VisionRunner(runner)
    (tokens, logits), (expected, expected_logits) = generate_both(
        runner, vision, checkpoint, random_image(3, 112, 112), steps=8
    )
    same = assert_same_greedy(tokens, expected, expected_logits)
    assert same >= 4
    for got, ref in zip(logits[:same], expected_logits[:same]):
        np.testing.assert_allclose(got, ref, atol=2e-2 * np.abs(ref).max())


def test_cli_generate_and_image_size_errors(qwen2_vl, tiny_llm, tmp_path):
    checkpoint, _, out = qwen2_vl
    image = tmp_path / "image.png"
    random_image(4, 90, 130).save(image)  # (resized to the package's 112)
    result = cli(
        "generate", str(out), "--image", str(image), "--prompt",
        "what is in this picture ?", "--chat", "--max-new-tokens", "6",
        "--reference", str(checkpoint),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "same tokens" in result.stdout
    target = tmp_path / "x.mlpackage"
    for source, size, problem in (
        (checkpoint, "100", "multiple of 28"),
        (tiny_llm.checkpoint, "112", "the checkpoint is a text model"),
    ):
        bad = cli("compile-llm", str(source), "-o", str(target), "--image-size", size)
        error_line(bad, f"--image-size {size}", problem)
        assert not target.exists()

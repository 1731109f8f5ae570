"""Images as transformers' image processors give them to a model, in
numpy and Pillow (no torch): the image read (`read_image`), LLaVA's
CLIP-style processor (`ImageProcessor`: RGB, optional square padding,
resize of the shortest edge, center crop, rescale, normalise) and
Idefics3's tiling one (`TilingImageProcessor`: the longest edge resized,
then to multiples of the tile, the tiles row by row and the whole image),
each computing what transformers' PIL backend computes (the tests compare
them with it)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from xdsl_ane.errors import XdslAneError, first_line, option

PIL_RESAMPLE = {
    0: "NEAREST",
    1: "LANCZOS",
    2: "BILINEAR",
    3: "BICUBIC",
    4: "BOX",
    5: "HAMMING",
}
"""transformers' `PILImageResampling` values by number."""


def read_image(path: str | Path) -> Any:
    """The image at `path` as a PIL image, or one line naming the problem."""
    try:
        from PIL import Image, UnidentifiedImageError
    except ImportError:
        raise XdslAneError(
            f"{option('image', path)} needs the Pillow package: pip install "
            "'xdsl-ane[text]'"
        ) from None
    try:
        with Image.open(path) as image:
            image.load()
            return image.copy()
    except FileNotFoundError:
        raise XdslAneError(f"{option('image', path)}: not found") from None
    except UnidentifiedImageError:
        raise XdslAneError(
            f"{option('image', path)}: not an image Pillow can decode"
        ) from None
    except (OSError, ValueError, SyntaxError) as e:
        raise XdslAneError(
            f"{option('image', path)}: cannot decode the image: {first_line(e)}"
        ) from None


@dataclass(frozen=True)
class ImageProcessor:
    """transformers' CLIP-style image processor (LLaVA's): settings by
    transformers' names, read from the checkpoint's processor file."""

    settings: dict[str, Any]

    def get(self, name: str, default: Any = None) -> Any:
        value = self.settings.get(name)
        return default if value is None else value

    def __call__(self, image: Any) -> np.ndarray:
        """pixel_values [1, 3, H, W] (float32) as transformers' PIL
        backend computes them: RGB, optionally padded to a square of the
        mean colour, resized (PIL, on uint8), center-cropped, rescaled and
        normalised."""
        from PIL import Image

        s = self.get
        if s("do_convert_rgb", True):
            image = rgb(image)
        array = np.asarray(image)
        if array.ndim == 2:
            array = array[:, :, None]
        mean = np.asarray(s("image_mean", [0.48145466, 0.4578275, 0.40821073]))
        std = np.asarray(s("image_std", [0.26862954, 0.26130258, 0.27577711]))
        if s("do_pad", False):
            array = pad_to_square(array, [int(m * 255) for m in mean])
        if s("do_resize", True):
            height, width = resized_size(array.shape[:2], s("size", {}))
            resample = getattr(Image.Resampling, PIL_RESAMPLE[int(s("resample", 3))])
            array = np.asarray(
                Image.fromarray(
                    array.squeeze(-1) if array.shape[2] == 1 else array
                ).resize((width, height), resample=resample)
            )
            if array.ndim == 2:
                array = array[:, :, None]
        if s("do_center_crop", "crop_size" in self.settings):
            crop = s("crop_size", {})
            array = center_crop(array, int(crop["height"]), int(crop["width"]))
        pixels = array.transpose(2, 0, 1)
        if s("do_rescale", True):
            factor = s("rescale_factor", 1 / 255)
            pixels = (pixels.astype(np.float64) * factor).astype(np.float32)
        if s("do_normalize", True):
            pixels = pixels.astype(np.float32)
            pixels = (pixels - mean.astype(np.float32)[:, None, None]) / std.astype(
                np.float32
            )[:, None, None]
        return pixels.astype(np.float32)[None]


def rgb(image: Any) -> Any:
    """The image in RGB, transparency composited onto white (transformers'
    `convert_to_rgb`)."""
    from PIL import Image

    if "A" in image.getbands() or image.info.get("transparency") is not None:
        image = image.convert("RGBA")
        white = Image.new("RGBA", image.size, (255, 255, 255, 255))
        return Image.alpha_composite(white, image).convert("RGB")
    return image.convert("RGB")


def pad_to_square(array: np.ndarray, color: list[int]) -> np.ndarray:
    """The image [H, W, C] centred in a square of `color`."""
    height, width, channels = array.shape
    side = max(height, width)
    out = np.empty((side, side, channels), array.dtype)
    out[:] = np.asarray(color[:channels], array.dtype)
    top, left = (side - height) // 2, (side - width) // 2
    out[top : top + height, left : left + width] = array
    return out


def resized_size(shape: tuple[int, ...], size: dict[str, Any]) -> tuple[int, int]:
    """(height, width) after the resize `size` asks for: the shortest
    edge to `shortest_edge`, the other in proportion (rounded down), or
    `height` and `width`."""
    height, width = int(shape[0]), int(shape[1])
    if size.get("shortest_edge"):
        edge = int(size["shortest_edge"])
        short, long = min(height, width), max(height, width)
        other = int(edge * long / short)
        return (edge, other) if height <= width else (other, edge)
    return int(size["height"]), int(size["width"])


def center_crop(array: np.ndarray, height: int, width: int) -> np.ndarray:
    """The central [height, width] of the image [H, W, C], padded with
    zeros where it is smaller (transformers' `center_crop`)."""
    h, w = array.shape[:2]
    if h < height or w < width:
        top, left = max(0, (height - h) // 2), max(0, (width - w) // 2)
        padded = np.zeros((max(h, height), max(w, width), array.shape[2]), array.dtype)
        padded[top : top + h, left : left + w] = array
        array, h, w = padded, padded.shape[0], padded.shape[1]
    top, left = (h - height) // 2, (w - width) // 2
    return array[top : top + height, left : left + width]


MAX_IMAGE_SIZE = 4096
"""Idefics3's bound on a resized image's longest edge."""


@dataclass(frozen=True)
class TiledImage:
    """An image as the vision package takes it: pixel_values [1, 3, S, S]
    of each tile in the prompt's order (row by row, then the whole image),
    and the grid (0 x 0: the whole image alone)."""

    tiles: list[np.ndarray]
    rows: int = 0
    cols: int = 0


@dataclass(frozen=True)
class TilingImageProcessor:
    """transformers' Idefics3 image processor (SmolVLM's), PIL backend:
    the longest edge resized to `size`, then (`do_image_splitting`) to
    multiples of the vision model's size S and cut into S x S tiles
    followed by the whole image at S x S, or the whole image alone;
    rescaled and normalised."""

    settings: dict[str, Any]

    def get(self, name: str, default: Any = None) -> Any:
        value = self.settings.get(name)
        return default if value is None else value

    def __call__(self, image: Any) -> TiledImage:
        from PIL import Image

        s = self.get
        if s("do_convert_rgb", True):
            image = rgb(image)
        resample = getattr(Image.Resampling, PIL_RESAMPLE[int(s("resample", 1))])
        side = int(s("max_image_size", {"longest_edge": 364})["longest_edge"])
        if s("do_resize", True):
            edge = int(s("size", {"longest_edge": 4 * 364})["longest_edge"])
            image = pil_resize(
                image, longest_edge_size(image.height, image.width, edge), resample
            )
        rows = cols = 0
        if s("do_image_splitting", True):
            image = pil_resize(
                image, tiled_size(image.height, image.width, side), resample
            )
            frames = [image]
            if image.height > side or image.width > side:
                rows, cols = image.height // side, image.width // side
                frames = [
                    image.crop((c * side, r * side, (c + 1) * side, (r + 1) * side))
                    for r in range(rows)
                    for c in range(cols)
                ]
                frames.append(pil_resize(image, (side, side), resample))
        else:
            frames = [pil_resize(image, (side, side), resample)]
        mean = np.asarray(s("image_mean", [0.5, 0.5, 0.5]), np.float32)
        std = np.asarray(s("image_std", [0.5, 0.5, 0.5]), np.float32)
        tiles = []
        for frame in frames:
            pixels = np.asarray(frame).transpose(2, 0, 1)
            if s("do_rescale", True):
                factor = s("rescale_factor", 1 / 255)
                pixels = (pixels.astype(np.float64) * factor).astype(np.float32)
            if s("do_normalize", True):
                pixels = (pixels.astype(np.float32) - mean[:, None, None]) / std[
                    :, None, None
                ]
            tiles.append(pixels.astype(np.float32)[None])
        return TiledImage(tiles, rows, cols)


def pil_resize(image: Any, size: tuple[int, int], resample: Any) -> Any:
    """The image resized to (height, width) (unchanged where it is that)."""
    if (image.height, image.width) == tuple(size):
        return image
    return image.resize((size[1], size[0]), resample=resample)


def longest_edge_size(height: int, width: int, edge: int) -> tuple[int, int]:
    """Idefics3's size for its longest edge `edge`: the other edge in
    proportion, rounded down and up to an even number, at least 1, then
    within MAX_IMAGE_SIZE."""
    ratio = width / height
    if width >= height:
        width = edge
        height = int(width / ratio)
        height += height % 2
    else:
        height = edge
        width = int(height * ratio)
        width += width % 2
    height, width = max(height, 1), max(width, 1)
    ratio = width / height
    if width >= height and width > MAX_IMAGE_SIZE:
        width, height = MAX_IMAGE_SIZE, int(MAX_IMAGE_SIZE / ratio)
    elif height > width and height > MAX_IMAGE_SIZE:
        height, width = MAX_IMAGE_SIZE, int(MAX_IMAGE_SIZE * ratio)
    return max(height, 1), max(width, 1)


def tiled_size(height: int, width: int, side: int) -> tuple[int, int]:
    """Idefics3's `resize_for_vision_encoder`: both edges up to multiples
    of `side`, the shorter through the ratio first."""
    ratio = width / height
    if width >= height:
        width = math.ceil(width / side) * side
        height = math.ceil(int(width / ratio) / side) * side
    else:
        height = math.ceil(height / side) * side
        width = math.ceil(int(height * ratio) / side) * side
    return height, width


@dataclass(frozen=True)
class GridImageProcessor:
    """transformers' Qwen2-VL image processor (PIL backend) for a vision
    package of one image size: the image resized to the package's `size`
    x `size` (where transformers' `smart_resize` picks a size per image
    from its aspect ratio and pixel bounds, the package was compiled for
    one: an image of that size, or whose smart_resize gives it, is
    processed exactly as transformers does), rescaled and normalised as
    the CLIP-style processor does, then cut into `patch` x `patch`
    patches in the vision model's order (merge x merge blocks of patches,
    row by row), each repeated `temporal` times as the processor repeats
    a still image in time: pixel_values [patches, 3·temporal·patch²]."""

    settings: dict[str, Any]
    size: int
    patch: int
    merge: int
    temporal: int

    def __call__(self, image: Any) -> TiledImage:
        exact = {"height": self.size, "width": self.size}
        settings = self.settings | {
            "size": exact,
            "do_center_crop": False,
            "do_pad": False,
        }
        pixels = ImageProcessor(settings)(image)[0]
        return TiledImage([patchify(pixels, self.patch, self.merge, self.temporal)])


def patchify(pixels: np.ndarray, patch: int, merge: int, temporal: int) -> np.ndarray:
    """pixel_values [3, H, W] as Qwen2-VL's processor flattens them:
    [patches, 3·temporal·patch²], patches in merge x merge blocks."""
    channels, height, width = pixels.shape
    rows, cols = height // patch, width // patch
    blocks = pixels.reshape(
        channels, rows // merge, merge, patch, cols // merge, merge, patch
    ).transpose(1, 4, 2, 5, 0, 3, 6)
    repeated = np.broadcast_to(
        blocks[:, :, :, :, :, None], (*blocks.shape[:5], temporal, patch, patch)
    )
    return np.ascontiguousarray(
        repeated.reshape(rows * cols, channels * temporal * patch * patch),
        np.float32,
    )

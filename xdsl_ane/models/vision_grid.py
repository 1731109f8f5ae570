"""Qwen2-VL's and Qwen2.5-VL's vision model at one image size, for
torch.export: what transformers' vision model computes for an image of
a fixed (t, h, w) patch grid, with every grid-derived quantity a constant.

transformers' vision model takes the patches of any number of images of
any size (`grid_thw`) and derives from the grid, as data, the rotary
positions of the patches, where each image's (and, in Qwen2.5-VL, each
window's) attention starts and ends, and Qwen2.5-VL's window order; its
attention splits the sequence by lengths read from a tensor
(`.tolist()`), which no exported program can do. Here the grid is fixed
when the package is compiled, so those are computed once, by
transformers' own functions (`transformers.vision_utils`), and held as
constants: the rotary cos/sin tables (a buffer), the window order (a
constant gather), the attention's chunk lengths (Python ints, so the
split is static slices). What runs per image is the family's own modules
— the patch embedding (its Conv3d, whose kernel is the whole patch, as
the linear layer it equals), each block's norms, qkv, rotary embedding
(`apply_rotary_pos_emb_vision` of the family's module), attention per
chunk (scaled_dot_product_attention) and MLP, and the patch merger — so
the program computes transformers' features, which the tests check.
"""

from __future__ import annotations

import importlib
from typing import Any


def grid_of(visual: Any, size: int) -> tuple[int, int, int]:
    """The (t, h, w) patch grid of a `size` x `size` image (a multiple of
    the patch size times the merge size: api/vlm.check_image_size)."""
    patch = visual.config.patch_size
    return 1, size // patch, size // patch


def grid_features(visual: Any, size: int) -> tuple[Any, tuple[int, int, int], Any]:
    """(the module: pixel_values [patches, 3·T·P·P] -> features [tokens,
    hidden], the grid, an example input) of transformers' vision model
    `visual` for `size` x `size` images."""
    import torch

    grid = grid_of(visual, size)
    config = visual.config
    width = config.in_channels * config.temporal_patch_size * config.patch_size**2
    example = torch.zeros(grid[0] * grid[1] * grid[2], width)
    return GridFeatures(visual, grid).eval(), grid, example


def GridFeatures(visual: Any, grid: tuple[int, int, int]) -> Any:  # noqa: N802
    """The module of `grid_features` (a torch module class, built where
    torch is imported)."""
    import torch
    from transformers import vision_utils

    family = importlib.import_module(type(visual).__module__)
    thw = torch.tensor([list(grid)])
    merge = visual.config.spatial_merge_size
    patches = grid[0] * grid[1] * grid[2]

    class Features(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.visual = visual
            positions = vision_utils.get_vision_position_ids(thw, merge)
            probe = torch.zeros(patches, 1)
            with torch.no_grad():
                cos, sin = visual.rotary_pos_emb(probe, positions)
            self.whole = [patches]
            self.windows = self.whole
            self.full_blocks = set(range(len(visual.blocks)))
            self.order: list[int] | None = None
            self.back: list[int] | None = None
            if hasattr(visual, "window_size"):  # Qwen2.5-VL's window attention
                index, bounds = vision_utils.get_vision_window_index(
                    thw, merge, visual.window_size, visual.patch_size
                )
                unit = merge * merge
                order = (index[:, None] * unit + torch.arange(unit)).reshape(-1)
                self.order = order.tolist()
                self.back = torch.argsort(index).tolist()
                cos, sin = cos[order], sin[order]
                ends = bounds.tolist()
                self.windows = [b - a for a, b in zip(ends, ends[1:])]
                self.full_blocks = set(visual.fullatt_block_indexes)
            self.register_buffer("cos", cos.contiguous())
            self.register_buffer("sin", sin.contiguous())
            conv = visual.patch_embed.proj  # kernel = the whole patch
            self.patch = torch.nn.Linear(
                conv.weight[0].numel(), conv.out_channels, bias=conv.bias is not None
            )
            with torch.no_grad():
                self.patch.weight.copy_(conv.weight.reshape(conv.out_channels, -1))
                if conv.bias is not None:
                    self.patch.bias.copy_(conv.bias)

        def attention(self, attn: Any, h: Any, lengths: list[int]) -> Any:
            n = h.shape[0]
            qkv = attn.qkv(h).reshape(n, 3, attn.num_heads, -1).permute(1, 0, 2, 3)
            q, k, v = qkv.unbind(0)
            q, k = family.apply_rotary_pos_emb_vision(q, k, self.cos, self.sin)
            q, k, v = (t.transpose(0, 1)[None] for t in (q, k, v))
            outs, start = [], 0
            for length in lengths:
                part = slice(start, start + length)
                outs.append(
                    torch.nn.functional.scaled_dot_product_attention(
                        q[:, :, part], k[:, :, part], v[:, :, part], scale=attn.scaling
                    )
                )
                start += length
            out = torch.cat(outs, 2)[0].transpose(0, 1).reshape(n, -1)
            return attn.proj(out)

        def forward(self, pixel_values):
            h = self.patch(pixel_values)
            if self.order is not None:
                h = h[self.order]
            for i, block in enumerate(self.visual.blocks):
                lengths = self.whole if i in self.full_blocks else self.windows
                h = h + self.attention(block.attn, block.norm1(h), lengths)
                h = h + block.mlp(block.norm2(h))
            features = self.visual.merger(h)
            if self.back is not None:
                features = features[self.back]
            return features

    return Features()

"""rlx.upsample and rlx.pad end to end: numpy semantics against torch
(`F.interpolate`, `F.pad`), the mil ops they lower to against coremltools
(type inference, value inference where it exists, the loader), the
lowering by numbers in f32 and f16, and the ATen translations as one-op
torch modules."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from lowering_cases import (
    F16_TOL,
    build_case,
    check_lowering,
    f16,
    f32,
    lower,
    make_inputs,
    mil_op_counts,
    normal,
    value,
)
from mil_op_check import check, coreml, randn, run
from torch import nn
from torch_check import OneOp, check_program, export
from xdsl.dialects.builtin import i32
from xdsl.utils.exceptions import PassFailedException, VerifyException

import xdsl_ane
from xdsl_ane.dialects import mil, rlx
from xdsl_ane.dialects.typing import tensor
from xdsl_ane.errors import XdslAneError
from xdsl_ane.interpreter import resampling
from xdsl_ane.interpreter.core import run_function

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import coremltools as ct
    from coremltools.converters.mil import Builder as mb
    from coremltools.converters.mil.mil import Function
    from coremltools.converters.mil.mil import types as ct_types

RNG = np.random.default_rng(0)
aten = torch.ops.aten


# --- numpy semantics against torch ----------------------------------------------

SIZES = [
    ((4, 6), (8, 12)),  # ×2
    ((4, 6), (12, 6)),  # ×3, ×1
    ((5, 7), (3, 4)),  # down
    ((4, 6), (7, 13)),  # fractional
    ((1, 3), (5, 1)),  # single row, single output
    ((14, 14), (10, 10)),
    ((16, 16), (37, 37)),
]


@pytest.mark.parametrize(
    ("mode", "align_corners"),
    [("nearest", False), ("bilinear", False), ("bilinear", True)]
    + [("bicubic", False), ("bicubic", True)],
)
@pytest.mark.parametrize(("sizes", "size"), SIZES, ids=str)
def test_upsample_matches_torch(mode, align_corners, sizes, size):
    x = RNG.standard_normal((2, 3, *sizes)).astype(np.float32)
    corners = None if mode == "nearest" else align_corners
    expected = F.interpolate(
        torch.from_numpy(x), size=size, mode=mode, align_corners=corners
    ).numpy()
    y = resampling.upsample(x, mode, size, align_corners)
    assert y.dtype == np.float32 and y.shape == expected.shape
    if mode == "nearest":
        np.testing.assert_array_equal(y, expected)
    else:
        np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-5)


def test_nearest_index_is_torchs_on_every_ratio():
    """torch's float32 index rule, rounding boundaries included."""
    for n in range(1, 33):
        for m in range(1, 70):
            x = torch.arange(n, dtype=torch.float32)[None, None]
            expected = F.interpolate(x, size=m, mode="nearest")[0, 0].numpy()
            assert np.array_equal(resampling.nearest_indices(n, m), expected), (n, m)


@pytest.mark.parametrize("mode", ["nearest", "linear"])
@pytest.mark.parametrize("size", [12, 5, 9])
def test_one_dimensional_upsample_matches_torch(mode, size):
    x = RNG.standard_normal((1, 4, 6)).astype(np.float32)
    expected = F.interpolate(torch.from_numpy(x), size=size, mode=mode).numpy()
    rlx_mode = "bilinear" if mode == "linear" else mode
    y = resampling.upsample(x, rlx_mode, (size,), False)
    np.testing.assert_allclose(y, expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate"])
@pytest.mark.parametrize("pads", [(1, 2, 3, 0), (0, 0, 2, 2), (3, 3, 0, 1)], ids=str)
def test_pad_matches_torch(mode, pads):
    x = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    extra = {"value": -1.5} if mode == "constant" else {}
    expected = F.pad(torch.from_numpy(x), pads, mode=mode, **extra).numpy()
    pairs = [(pads[2], pads[3]), (pads[0], pads[1])]
    y = resampling.pad(x, pairs, mode, -1.5)
    np.testing.assert_array_equal(y, expected)


def test_f16_interpolation_rounds_once():
    x = RNG.standard_normal((1, 2, 5, 5)).astype(np.float16)
    y = resampling.upsample(x, "bicubic", (9, 11), True)
    exact = resampling.upsample(x.astype(np.float32), "bicubic", (9, 11), True)
    assert y.dtype == np.float16
    np.testing.assert_array_equal(y, exact.astype(np.float16))


# --- rlx verifiers ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: rlx.UpsampleOp(value([2, 8]), "nearest", [4]),
            "rlx.upsample: operand 'input' must be [N, C, W] or [N, C, H, W], got shape [2, 8]",
        ),
        (
            lambda: rlx.UpsampleOp(value([1, 3, 4, 4]), "area", [8, 8]),
            'rlx.upsample: property \'mode\' is "area", expected one of "nearest", '
            '"bilinear", "bicubic"',
        ),
        (
            lambda: rlx.UpsampleOp(value([1, 3, 4, 4]), "bilinear", [8]),
            "rlx.upsample: property 'size' [8] must be 2 positive sizes",
        ),
        (
            lambda: rlx.UpsampleOp(value([1, 3, 4, 4]), "nearest", [8, 8], True),
            "rlx.upsample: property 'align_corners' applies to modes",
        ),
        (
            lambda: rlx.UpsampleOp(value([1, 3, 4, 4], i32), "nearest", [8, 8]),
            "rlx.upsample: operand 'input' must have a float element type",
        ),
        (
            lambda: rlx.PadOp(value([1, 3, 4, 4]), [1, 1]),
            "rlx.pad: property 'pads' [1, 1] must have 8 entries",
        ),
        (
            lambda: rlx.PadOp(value([1, 3, 4, 4]), [0, 0, 0, 0, -1, 0, 0, 0]),
            "rlx.pad: property 'pads' [0, 0, 0, 0, -1, 0, 0, 0] must be >= 0",
        ),
        (
            lambda: rlx.PadOp(value([1, 3, 4, 4]), [0, 0, 0, 0, 4, 0, 0, 0], "reflect"),
            'rlx.pad: mode "reflect" pads axis 2 of size 4 by (4, 0)',
        ),
        (
            lambda: rlx.PadOp(value([1, 3, 4, 4]), [0] * 8, "edge"),
            "rlx.pad: property 'mode' is \"edge\"",
        ),
        (
            lambda: rlx.PadOp(value([1, 3, 4, 4]), [0] * 8, "replicate", 1.0),
            "rlx.pad: property 'value' applies to mode \"constant\" only",
        ),
    ],
)
def test_rlx_verifier_errors(build, message):
    with pytest.raises(VerifyException) as info:
        build()
    assert message in str(info.value)
    assert "\n" not in str(info.value)


# --- mil ops against coremltools --------------------------------------------------


def coreml_type(build, shape, dtype=ct_types.fp32):
    """coremltools' inferred (shape, dtype) of `build(x)` on an input x."""
    with Function({"x": mb.TensorSpec(shape=shape, dtype=dtype)}, ct.target.iOS18) as f:
        out = build(f.inputs["x"])
    return tuple(out.shape), out.dtype


MIL_TYPE_CASES = [
    (
        lambda x: mil.UpsampleNearestNeighborOp(x, 2, 3),
        lambda x: mb.upsample_nearest_neighbor(
            x=x, scale_factor_height=2, scale_factor_width=3
        ),
        (1, 3, 4, 5),
    ),
    (
        lambda x: mil.UpsampleBilinearOp(x, 2, 1, False),
        lambda x: mb.upsample_bilinear(
            x=x, scale_factor_height=2, scale_factor_width=1, align_corners=False
        ),
        (2, 5, 7),
    ),
    (
        lambda x: mil.UpsampleBilinearOp(x, 1, 4),
        lambda x: mb.upsample_bilinear(
            x=x, scale_factor_height=1, scale_factor_width=4
        ),
        (1, 1, 3, 2),
    ),
    (
        lambda x: mil.PadOp(x, [1, 2, 3, 4]),
        lambda x: mb.pad(x=x, pad=np.array([1, 2, 3, 4], np.int32)),
        (1, 3, 4, 5),
    ),
    (
        lambda x: mil.PadOp(x, [0, 3], "reflect"),
        lambda x: mb.pad(x=x, pad=np.array([0, 3], np.int32), mode="reflect"),
        (2, 4, 5),
    ),
    (
        lambda x: mil.PadOp(x, [0, 0, 1, 1, 5, 0], "replicate"),
        lambda x: mb.pad(
            x=x, pad=np.array([0, 0, 1, 1, 5, 0], np.int32), mode="replicate"
        ),
        (2, 4, 5),
    ),
]


@pytest.mark.parametrize(("ours", "theirs", "shape"), MIL_TYPE_CASES)
@pytest.mark.parametrize("element", [f32, f16])
def test_mil_type_inference_matches_coremltools(ours, theirs, shape, element):
    op = ours(value(shape, element))
    op.verify()
    dtype = ct_types.fp32 if element == f32 else ct_types.fp16
    expected_shape, expected_dtype = coreml_type(theirs, shape, dtype)
    assert op.result.type == tensor(expected_shape, element)
    assert expected_dtype == dtype


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: mil.UpsampleNearestNeighborOp(value([4, 5]), 2, 2),
            "mil.upsample_nearest_neighbor: operand 'x' must have rank >= 3",
        ),
        (
            lambda: mil.UpsampleBilinearOp(value([1, 4, 5]), 0, 2),
            "mil.upsample_bilinear: scale factors [0, 2] must be integers >= 1",
        ),
        (
            lambda: mil.UpsampleBilinearOp(value([1, 4, 5]), 2, 2, True, True),
            "'align_corners' and 'half_pixel_centers' cannot both be true",
        ),
        (
            lambda: mil.PadOp(value([1, 4, 5]), [1, 1, 1]),
            "mil.pad: property 'pad' [1, 1, 1] must have an even number of entries",
        ),
        (
            lambda: mil.PadOp(value([1, 4, 5]), [5, 0], "reflect"),
            'mil.pad: mode "reflect" pads (5, 0) on an axis of size 5; at most 4',
        ),
        (
            lambda: mil.PadOp(value([1, 4, 5], i32), [1, 0]),
            "mil.pad: operand 'x' has element type i32",
        ),
    ],
)
def test_mil_verifier_errors(build, message):
    with pytest.raises(VerifyException) as info:
        build()
    assert message in str(info.value)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize(
    ("pad", "mode"),
    [
        ([1, 2, 3, 0], "constant"),
        ([1, 2, 3, 0], "reflect"),
        ([0, 0, 2, 4], "replicate"),
    ],
)
def test_mil_pad_matches_coremltools_value_inference(dtype, pad, mode):
    x = randn(1, 3, 4, 5, dtype=dtype)
    ours = run(
        lambda v: mil.PadOp(v, pad, mode, 0.5 if mode == "constant" else None), x
    )
    extra = {"constant_val": dtype(0.5)} if mode == "constant" else {}
    theirs = coreml(
        lambda v: mb.pad(x=v, pad=np.array(pad, np.int32), mode=mode, **extra), x
    )
    check(ours, theirs, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("align_corners", [True, False])
def test_mil_upsample_ops_match_torch(dtype, align_corners):
    """coremltools has no value inference for these; torch's interpolate at
    an integer scale is what MIL documents them as."""
    x = randn(1, 3, 4, 5, dtype=dtype)
    t = torch.from_numpy(x.astype(np.float32))
    nearest = F.interpolate(t, scale_factor=(2, 3), mode="nearest").numpy()
    check(
        run(lambda v: mil.UpsampleNearestNeighborOp(v, 2, 3), x),
        nearest.astype(dtype),
        dtype,
    )
    bilinear = F.interpolate(
        t, scale_factor=(2, 3), mode="bilinear", align_corners=align_corners
    ).numpy()
    out = run(lambda v: mil.UpsampleBilinearOp(v, 2, 3, align_corners), x)
    check(out, bilinear, dtype)


# --- lowering by numbers --------------------------------------------------------

LOWERINGS = [
    (
        "nearest_x2",
        (1, 3, 4, 5),
        "nearest",
        (8, 10),
        False,
        "upsample_nearest_neighbor",
    ),
    ("nearest_x3_1d", (1, 3, 5), "nearest", (15,), False, "upsample_nearest_neighbor"),
    (
        "nearest_x8_x4",
        (1, 3, 2, 3),
        "nearest",
        (16, 12),
        False,
        "upsample_nearest_neighbor",
    ),
    ("nearest_fraction", (1, 3, 4, 5), "nearest", (6, 7), False, "matmul"),
    ("nearest_down", (1, 3, 8, 6), "nearest", (4, 3), False, "matmul"),
    ("bilinear_x2", (1, 3, 4, 5), "bilinear", (8, 15), False, "upsample_bilinear"),
    ("bilinear_corners", (1, 3, 4, 5), "bilinear", (8, 10), True, "upsample_bilinear"),
    ("linear_1d", (1, 3, 5), "bilinear", (10,), False, "upsample_bilinear"),
    ("bilinear_fraction", (1, 3, 4, 5), "bilinear", (6, 3), True, "matmul"),
    ("bicubic", (1, 3, 4, 5), "bicubic", (8, 10), False, "matmul"),
    ("bicubic_corners", (1, 2, 7, 7), "bicubic", (14, 14), True, "matmul"),
    ("bicubic_1d", (1, 3, 5), "bicubic", (9,), True, "matmul"),
]


@pytest.mark.parametrize("element", [f32, f16], ids=["f32", "f16"])
@pytest.mark.parametrize(
    ("shape", "mode", "size", "align_corners", "emitted"),
    [c[1:] for c in LOWERINGS],
    ids=[c[0] for c in LOWERINGS],
)
def test_upsample_lowering(shape, mode, size, align_corners, emitted, element):
    args = [normal(*shape)]

    def body(dt, x):
        return rlx.UpsampleOp(x, mode, size, align_corners or None)

    module = build_case(args, body, element)
    tol = {} if element == f32 else F16_TOL
    check_lowering(module, make_inputs(args, element, 0), **tol)
    counts = mil_op_counts(lower(module))
    assert counts[f"mil.{emitted}"] >= 1, counts


def test_power_of_two_nearest_upsamples_in_steps_of_two():
    """The ANE upsamples at most 2x per op: x8 by x4 is three ops."""
    module = build_case(
        [normal(1, 3, 2, 3)],
        lambda dt, x: rlx.UpsampleOp(x, "nearest", [16, 12]),
        f32,
    )
    steps = [
        (op.scale_factor_height.value.data, op.scale_factor_width.value.data)
        for op in lower(module).walk()
        if isinstance(op, mil.UpsampleNearestNeighborOp)
    ]
    assert steps == [(2, 2), (2, 2), (2, 1)]


@pytest.mark.parametrize("mode", ["nearest", "bilinear", "bicubic"])
def test_upsample_to_the_same_size_is_no_op(mode):
    module = build_case(
        [normal(1, 3, 4, 5)], lambda dt, x: rlx.UpsampleOp(x, mode, [4, 5]), f32
    )
    assert not [op for op in lower(module).walk() if op.name.startswith("mil.")]


PAD_LOWERINGS = [
    ("constant", [0, 0, 1, 0, 2, 3, 0, 1], "constant", -2.0, [1, 0, 2, 3, 0, 1]),
    ("zero", [0, 0, 0, 0, 0, 0, 1, 1], "constant", None, [1, 1]),
    ("reflect", [0, 0, 0, 0, 2, 3, 4, 1], "reflect", None, [2, 3, 4, 1]),
    ("replicate", [0, 0, 0, 0, 0, 4, 4, 0], "replicate", None, [0, 4, 4, 0]),
]


@pytest.mark.parametrize("element", [f32, f16], ids=["f32", "f16"])
@pytest.mark.parametrize(
    ("pads", "mode", "fill", "mil_pad"),
    [c[1:] for c in PAD_LOWERINGS],
    ids=[c[0] for c in PAD_LOWERINGS],
)
def test_pad_lowering(pads, mode, fill, mil_pad, element):
    args = [normal(1, 3, 4, 5)]

    def body(dt, x):
        return rlx.PadOp(x, pads, None if mode == "constant" else mode, fill)

    module = build_case(args, body, element)
    tol = {} if element == f32 else F16_TOL
    check_lowering(module, make_inputs(args, element, 0), **tol)
    (pad,) = [op for op in lower(module).walk() if isinstance(op, mil.PadOp)]
    assert list(pad.pad.get_values()) == mil_pad


def test_reflect_pad_of_a_leading_axis_is_refused_in_one_line():
    module = build_case(
        [normal(1, 3, 4, 5)],
        lambda dt, x: rlx.PadOp(x, [0, 0, 1, 1, 0, 0, 0, 0], "reflect"),
        f32,
    )
    with pytest.raises(PassFailedException) as info:
        lower(module)
    message = str(info.value)
    assert (
        'rlx.pad: mode "reflect" pads axis 1; MIL pads reflect on the last two'
        in message
    )
    assert "\n" not in message.strip()


# --- the ATen translations, one op each ----------------------------------------------


X = torch.randn(1, 3, 4, 6)

TORCH_CASES = {
    # aten.upsample_nearest2d.vec
    "nearest2d_scale": lambda x: F.interpolate(x, scale_factor=2, mode="nearest"),
    "nearest2d_size": lambda x: F.interpolate(x, size=(5, 7), mode="nearest"),
    # aten.upsample_bilinear2d.vec
    "bilinear2d_scale": lambda x: F.interpolate(x, scale_factor=2, mode="bilinear"),
    "bilinear2d_corners": lambda x: F.interpolate(
        x, size=(5, 7), mode="bilinear", align_corners=True
    ),
    "bilinear2d_recompute": lambda x: F.interpolate(
        x, scale_factor=1.5, mode="bilinear", recompute_scale_factor=True
    ),
    # aten.upsample_bicubic2d.vec
    "bicubic2d": lambda x: F.interpolate(x, size=(9, 11), mode="bicubic"),
    "bicubic2d_corners": lambda x: F.interpolate(
        x, scale_factor=2, mode="bicubic", align_corners=True
    ),
    # aten.upsample_nearest1d.vec, aten.upsample_linear1d.vec
    "nearest1d": lambda x: F.interpolate(x[:, :, 0], scale_factor=2, mode="nearest"),
    "linear1d": lambda x: F.interpolate(x[:, :, 0], size=9, mode="linear"),
    # the default overloads of nearest, as a program calling them has them
    "nearest2d_default": lambda x: aten.upsample_nearest2d.default(x, [8, 12]),
    "nearest1d_default": lambda x: aten.upsample_nearest1d.default(x[:, :, 0], [12]),
    # aten.constant_pad_nd
    "constant_pad": lambda x: F.pad(x, (1, 2, 3, 0)),
    "constant_pad_value_crop": lambda x: F.pad(x, (1, -2, 3, 0), value=2.5),
    # aten.reflection_pad1d/2d, aten.replication_pad1d/2d
    "reflection_pad2d": lambda x: F.pad(x, (1, 2, 3, 0), mode="reflect"),
    "replication_pad2d": lambda x: F.pad(x, (1, 2, 3, 0), mode="replicate"),
    "reflection_pad1d": lambda x: F.pad(x[:, :, 0], (1, 2), mode="reflect"),
    "replication_pad1d": lambda x: F.pad(x[:, :, 0], (3, 2), mode="replicate"),
}


@pytest.mark.parametrize("name", sorted(TORCH_CASES))
def test_torch_op(name):
    f = TORCH_CASES[name]
    checked = check_program(export(OneOp(f), (X,)), (X,))
    ops = {op.name for op in checked.imported.module.walk()}
    assert ops & {"rlx.upsample", "rlx.pad"}, ops


def test_fractional_scale_without_recompute_is_refused():
    module = OneOp(lambda x: F.interpolate(x, scale_factor=1.3, mode="bilinear"))
    with pytest.raises(XdslAneError) as info:
        xdsl_ane.from_torch(module, (X,))
    assert "scale_factor 1.3" in str(info.value)
    assert "recompute_scale_factor=True" in str(info.value)


class PositionInterpolation(nn.Module):
    """ViT's `interpolate_pos_encoding` at a static size: a bicubic
    upsample of a parameter, which depends on no input."""

    def __init__(self):
        super().__init__()
        self.pos = nn.Parameter(torch.randn(1, 1 + 4 * 4, 8))

    def forward(self, x):
        cls, grid = self.pos[:, :1], self.pos[:, 1:]
        grid = grid.reshape(1, 4, 4, 8).permute(0, 3, 1, 2)
        grid = F.interpolate(grid, size=(6, 6), mode="bicubic", align_corners=False)
        grid = grid.permute(0, 2, 3, 1).reshape(1, 36, 8)
        return x + torch.cat([cls, grid], dim=1)


def test_position_embedding_interpolation_folds_at_import():
    x = torch.randn(1, 37, 8)
    model = PositionInterpolation()
    imported = xdsl_ane.from_torch(export(model, (x,)))
    names = {op.name for op in imported.module.walk()}
    assert "rlx.upsample" not in names and "rlx.add" in names
    (y,) = run_function(imported.module, imported.numpy_inputs(x), imported.weights)
    with torch.no_grad():
        np.testing.assert_allclose(y, model(x).numpy(), rtol=1e-6, atol=1e-6)


def test_dinov2_at_another_image_size_folds_its_position_interpolation():
    """Hugging Face DINOv2 on a 48×48 image, built for 32×32: its position
    embeddings are bicubically resampled to the 6×6 patch grid, from
    parameters only, so torch computes them at import; the model agrees
    with torch in fp32 and as an fp16 package."""
    import transformers

    torch.manual_seed(0)
    config = transformers.Dinov2Config(
        image_size=32,
        patch_size=8,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
    )
    model = transformers.Dinov2Model(config).eval()
    x = torch.randn(1, 3, 48, 48)
    checked = check_program(export(model, (x,)), (x,))
    assert not checked.ops("rlx.upsample")

"""Convolutions end to end: rlx.conv / rlx.conv_transpose (verifiers, numpy
semantics against torch.nn.functional), mil.conv_transpose (types against
coremltools, semantics against torch), and convert-rlx-to-mil by numbers
(f32 1e-5, f16 1e-2)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from ane_form import run_ane_form
from lowering_cases import (
    F16_TOL,
    F32_TOL,
    build_module,
    check_lowering,
    lower,
    relative_error,
)
from mil_type_check import C, Case, R, coreml_types, our_types
from torch import nn
from torch_check import check_program, export
from xdsl.dialects.builtin import TensorType, f16, f32
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.test_value import create_ssa_value

import xdsl_ane
from xdsl_ane.backend.weights import quiet_coremltools
from xdsl_ane.dialects import mil, rlx
from xdsl_ane.interpreter.core import run_function

with quiet_coremltools():
    from coremltools.converters.mil import Builder as mb


def v(shape, element=f32):
    return create_ssa_value(TensorType(element, list(shape)))


# --- rlx verifiers ------------------------------------------------------------


@pytest.mark.parametrize(
    "build, expected",
    [
        (
            lambda: rlx.ConvOp(
                v([1, 4, 9, 9]),
                v([6, 2, 3, 3]),
                v([6]),
                strides=[2, 1],
                padding=[1, 0, 2, 1],
                groups=2,
            ),
            [1, 6, 4, 10],
        ),
        (lambda: rlx.ConvOp(v([2, 3, 16]), v([5, 3, 3]), dilations=[2]), [2, 5, 12]),
        (
            lambda: rlx.ConvOp(
                v([1, 8, 5, 5], f16),
                v([8, 1, 3, 3], f16),
                padding=[1, 1, 1, 1],
                groups=8,
            ),
            [1, 8, 5, 5],
        ),
        (
            lambda: rlx.ConvTransposeOp(
                v([1, 4, 9, 9]),
                v([4, 3, 3, 3]),
                strides=[2, 2],
                padding=[1, 1, 1, 1],
                output_padding=[1, 0],
                groups=2,
            ),
            [1, 6, 18, 17],
        ),
        (
            lambda: rlx.ConvTransposeOp(
                v([1, 4, 7]), v([4, 2, 4]), v([2]), strides=[3]
            ),
            [1, 2, 22],
        ),
    ],
)
def test_result_type_is_inferred(build, expected):
    op = build()
    op.verify()
    assert list(op.result.type.get_shape()) == expected


@pytest.mark.parametrize(
    "build, message",
    [
        (
            lambda: rlx.ConvOp(v([1, 6, 8, 8]), v([4, 3, 3, 3]), groups=4),
            r"rlx\.conv: property 'groups' 4 must divide C_in 6",
        ),
        (
            lambda: rlx.ConvOp(v([1, 6, 8, 8]), v([4, 2, 3, 3]), groups=2),
            r"rlx\.conv: operand 'weight' \[4, 2, 3, 3\] must be \[C_out, C_in/groups",
        ),
        (
            lambda: rlx.ConvOp(v([1, 3, 8, 8]), v([4, 3, 3])),
            r"rlx\.conv: operand 'weight' \[4, 3, 3\] must have the rank",
        ),
        (
            lambda: rlx.ConvOp(v([1, 3, 8, 8, 8]), v([4, 3, 3, 3, 3])),
            r"rlx\.conv: operand 'input' .* must be \[N, C, W\] or \[N, C, H, W\]",
        ),
        (
            lambda: rlx.ConvOp(v([1, 3, 8, 8]), v([4, 3, 3, 3]), v([3])),
            r"rlx\.conv: operand 'bias' \[3\] must be \[4\]",
        ),
        (
            lambda: rlx.ConvOp(v([1, 3, 8, 8]), v([4, 3, 3, 3]), padding=[1, 1]),
            r"rlx\.conv: property 'padding' \[1, 1\] must have 4 entries",
        ),
        (
            lambda: rlx.ConvOp(v([1, 3, 8, 8]), v([4, 3, 3, 3]), strides=[0, 1]),
            r"rlx\.conv: property 'strides' \[0, 1\] must be >= 1",
        ),
        (
            lambda: rlx.ConvOp(v([1, 3, 2, 2]), v([4, 3, 3, 3])),
            r"rlx\.conv: kernel \[3, 3\] .* does not fit",
        ),
        (
            lambda: rlx.ConvOp(v([1, 3, 8]), v([4, 3, 3], f16)),
            r"rlx\.conv: operands 'input' \(f32\) and 'weight' \(f16\)",
        ),
        (
            lambda: rlx.ConvTransposeOp(
                v([1, 4, 8]), v([4, 2, 3]), strides=[2], output_padding=[2]
            ),
            r"rlx\.conv_transpose: property 'output_padding' \[2\] must be smaller "
            r"than the stride or the dilation",
        ),
        (
            lambda: rlx.ConvTransposeOp(v([1, 4, 8]), v([3, 2, 3])),
            r"rlx\.conv_transpose: operand 'weight' \[3, 2, 3\] must be "
            r"\[C_in, C_out/groups",
        ),
    ],
)
def test_verifier_errors_name_the_op_and_what_is_wrong(build, message):
    with pytest.raises(VerifyException, match=message):
        build().verify()


# --- semantics against torch --------------------------------------------------


@dataclass
class Conv:
    """A random convolution case: shapes and properties as rlx writes them."""

    id: str
    input: tuple[int, ...]
    c_out: int
    kernel: tuple[int, ...]
    strides: tuple[int, ...] | None = None
    padding: tuple[int, ...] | None = None
    dilations: tuple[int, ...] | None = None
    groups: int = 1
    bias: bool = True
    transposed: bool = False
    output_padding: tuple[int, ...] | None = None
    weights: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def weight_shape(self) -> tuple[int, ...]:
        c_in = self.input[1]
        if self.transposed:
            return (c_in, self.c_out // self.groups, *self.kernel)
        return (self.c_out, c_in // self.groups, *self.kernel)

    def arrays(self, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        rng = np.random.default_rng(seed)
        x = rng.standard_normal(self.input).astype(np.float32)
        w = (rng.standard_normal(self.weight_shape) * 0.3).astype(np.float32)
        b = rng.standard_normal(self.c_out).astype(np.float32) if self.bias else None
        return x, w, b

    def build(self, x, w, b):
        props = dict(
            strides=self.strides,
            padding=self.padding,
            dilations=self.dilations,
            groups=None if self.groups == 1 else self.groups,
        )
        if self.transposed:
            return rlx.ConvTransposeOp(
                x, w, b, output_padding=self.output_padding, **props
            )
        return rlx.ConvOp(x, w, b, **props)

    def torch(self, x, w, b) -> np.ndarray:
        spatial = len(self.input) - 2
        strides = self.strides or (1,) * spatial
        dilations = self.dilations or (1,) * spatial
        padding = self.padding or (0,) * (2 * spatial)
        xt, wt = torch.tensor(x), torch.tensor(w)
        bt = None if b is None else torch.tensor(b)
        if self.transposed:
            f = F.conv_transpose1d if spatial == 1 else F.conv_transpose2d
            assert padding[::2] == padding[1::2], "torch pads both ends alike"
            out = f(
                xt,
                wt,
                bt,
                stride=strides,
                padding=padding[::2],
                output_padding=self.output_padding or 0,
                groups=self.groups,
                dilation=dilations,
            )
        else:
            # torch pads both ends alike: asymmetric padding pads first.
            pairs = [padding[2 * i : 2 * i + 2] for i in reversed(range(spatial))]
            xt = F.pad(xt, [p for pair in pairs for p in pair])
            f = F.conv1d if spatial == 1 else F.conv2d
            out = f(xt, wt, bt, stride=strides, dilation=dilations, groups=self.groups)
        return out.numpy()


CONVS = [
    Conv("conv1d", (2, 3, 17), 4, (3,)),
    Conv("conv1d_strided_padded", (1, 4, 20), 6, (5,), strides=(2,), padding=(2, 1)),
    Conv(
        "conv1d_dilated_grouped",
        (1, 6, 16),
        4,
        (3,),
        dilations=(3,),
        groups=2,
        padding=(3, 3),
    ),
    Conv("conv1d_depthwise", (1, 5, 12), 5, (3,), padding=(1, 1), groups=5),
    Conv("conv2d", (1, 3, 9, 8), 5, (3, 3), bias=False),
    Conv(
        "conv2d_strided_asymmetric",
        (2, 4, 11, 10),
        6,
        (3, 2),
        strides=(2, 3),
        padding=(1, 0, 0, 2),
    ),
    Conv(
        "conv2d_dilated",
        (1, 3, 12, 12),
        4,
        (3, 3),
        dilations=(2, 1),
        padding=(2, 2, 1, 1),
    ),
    Conv("conv2d_grouped", (1, 8, 7, 7), 12, (3, 3), groups=4, padding=(1, 1, 1, 1)),
    Conv(
        "conv2d_depthwise",
        (1, 16, 8, 8),
        16,
        (3, 3),
        groups=16,
        strides=(2, 2),
        padding=(1, 1, 1, 1),
    ),
    Conv("conv2d_pointwise", (1, 32, 4, 5), 8, (1, 1)),
    Conv(
        "conv_transpose1d",
        (1, 4, 9),
        3,
        (4,),
        strides=(2,),
        padding=(1, 1),
        transposed=True,
    ),
    Conv(
        "conv_transpose1d_output_padding",
        (2, 4, 6),
        6,
        (3,),
        strides=(3,),
        output_padding=(2,),
        groups=2,
        transposed=True,
    ),
    Conv(
        "conv_transpose2d",
        (1, 6, 5, 4),
        4,
        (3, 3),
        strides=(2, 2),
        padding=(1, 1, 1, 1),
        output_padding=(1, 1),
        transposed=True,
    ),
    Conv(
        "conv_transpose2d_unet",
        (1, 8, 4, 4),
        4,
        (2, 2),
        strides=(2, 2),
        transposed=True,
    ),
    Conv(
        "conv_transpose2d_dilated_grouped",
        (1, 4, 5, 6),
        6,
        (3, 2),
        strides=(1, 2),
        dilations=(2, 1),
        padding=(2, 2, 0, 0),
        output_padding=(1, 1),
        groups=2,
        transposed=True,
    ),
    Conv(
        "conv_transpose2d_output_padding_past_the_crop",
        (1, 2, 3, 3),
        2,
        (3, 3),
        strides=(2, 2),
        padding=(0, 0, 1, 1),
        output_padding=(1, 1),
        bias=True,
        transposed=True,
    ),
]


def program(c: Conv, dtype=f32):
    x, w, b = c.arrays()
    weights = {"w": w} if b is None else {"w": w, "b": b}

    def body(xv):
        wv = rlx.ParamOp("w", TensorType(dtype, list(w.shape)))
        bv = None if b is None else rlx.ParamOp("b", TensorType(dtype, list(b.shape)))
        return c.build(xv, wv, bv)

    module = build_module([TensorType(dtype, list(x.shape))], body)
    return module, x, weights


@pytest.mark.parametrize("c", CONVS, ids=[c.id for c in CONVS])
def test_rlx_semantics_match_torch(c: Conv):
    module, x, weights = program(c)
    (out,) = run_function(module, [x], weights)
    expected = c.torch(x, weights["w"], weights.get("b"))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("c", CONVS, ids=[c.id for c in CONVS])
def test_lowering_f32(c: Conv):
    module, x, weights = program(c)
    lowered = lower(module)
    names = {op.name for op in lowered.walk()}
    assert ("mil.conv_transpose" if c.transposed else "mil.conv") in names
    check_lowering(module, [x], weights, **F32_TOL)
    (out,) = run_function(lowered, [x], weights)
    np.testing.assert_allclose(
        out, c.torch(x, weights["w"], weights.get("b")), rtol=1e-5, atol=1e-5
    )


@pytest.mark.parametrize("c", CONVS, ids=[c.id for c in CONVS])
def test_lowering_f16(c: Conv):
    module, x, weights = program(c, f16)
    weights = {k: w.astype(np.float16) for k, w in weights.items()}
    check_lowering(
        module, [x.astype(np.float16)], weights, **F16_TOL, expect_dtype=np.float16
    )


def test_dilated_conv_with_a_runtime_weight_is_refused_in_one_line():
    from xdsl.utils.exceptions import PassFailedException

    module = build_module(
        [TensorType(f32, [1, 3, 8, 8]), TensorType(f32, [4, 3, 3, 3])],
        lambda x, w: rlx.ConvOp(x, w, dilations=[2, 2]),
    )
    with pytest.raises(
        PassFailedException,
        match=(
            r"rlx\.conv: property 'dilations' \[2, 2\] needs a constant operand "
            r"'weight' \(MIL's conv takes a dilated kernel only as a compile-time"
        ),
    ):
        lower(module)


# --- mil.conv_transpose -------------------------------------------------------

MIL_CASES = [
    Case(
        "conv_transpose_1d",
        [R([1, 4, 7]), C([4, 3, 3])],
        lambda x, w: mil.ConvTransposeOp(x, w),
        lambda x, w: mb.conv_transpose(x=x, weight=w),
    ),
    Case(
        "conv_transpose_strided_custom",
        [R([1, 4, 7, 6]), C([4, 3, 3, 2]), C([3])],
        lambda x, w, b: mil.ConvTransposeOp(
            x, w, b, strides=[2, 3], pad_type="custom", pad=[1, 0, 0, 2]
        ),
        lambda x, w, b: mb.conv_transpose(
            x=x, weight=w, bias=b, strides=[2, 3], pad_type="custom", pad=[1, 0, 0, 2]
        ),
    ),
    Case(
        "conv_transpose_same_grouped_dilated",
        [R([2, 6, 5, 5], f16), C([6, 2, 3, 3], f16)],
        lambda x, w: mil.ConvTransposeOp(
            x, w, pad_type="same", strides=[2, 2], dilations=[2, 1], groups=3
        ),
        lambda x, w: mb.conv_transpose(
            x=x, weight=w, pad_type="same", strides=[2, 2], dilations=[2, 1], groups=3
        ),
    ),
    Case(
        "conv_transpose_runtime_weight",
        [R([1, 2, 4, 4]), R([2, 2, 2, 2])],
        lambda x, w: mil.ConvTransposeOp(x, w, strides=[2, 2]),
        lambda x, w: mb.conv_transpose(x=x, weight=w, strides=[2, 2]),
    ),
    Case(
        "conv_1d_custom_dilated_grouped",
        [R([1, 6, 20]), C([4, 3, 3]), C([4])],
        lambda x, w, b: mil.ConvOp(
            x, w, b, pad_type="custom", pad=[2, 1], dilations=[2], strides=[3], groups=2
        ),
        lambda x, w, b: mb.conv(
            x=x,
            weight=w,
            bias=b,
            pad_type="custom",
            pad=[2, 1],
            dilations=[2],
            strides=[3],
            groups=2,
        ),
    ),
]


@pytest.mark.parametrize("case", MIL_CASES, ids=[c.id for c in MIL_CASES])
def test_mil_types_match_coremltools(case: Case):
    assert our_types(case) == coreml_types(case)


def test_mil_conv_transpose_rejects_what_mil_leaves_open():
    with pytest.raises(
        VerifyException,
        match=r"property 'output_shape' \[1, 3, 9\] "
        r"must be \[1, 3, 9, 9\]",
    ):
        mil.ConvTransposeOp(v([1, 4, 7, 7]), v([4, 3, 3, 3]), output_shape=[1, 3, 9])
    with pytest.raises(VerifyException, match=r"pad_type.*\"same_lower\""):
        mil.ConvTransposeOp(v([1, 4, 7]), v([4, 3, 3]), pad_type="same_lower")


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_mil_conv_transpose_semantics_match_torch(dtype):
    """pad_type "same" crops the smaller half at the start; "custom" pads."""
    from mil_op_check import run

    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 4, 5, 6)).astype(dtype)
    w = (rng.standard_normal((4, 3, 3, 3)) * 0.3).astype(dtype)
    b = rng.standard_normal(6).astype(dtype)
    out = run(
        lambda x, w, b: mil.ConvTransposeOp(
            x, w, b, strides=[2, 2], pad_type="custom", pad=[1, 0, 0, 1], groups=2
        ),
        x,
        w,
        b,
    )
    full = F.conv_transpose2d(
        torch.tensor(x.astype(np.float32)),
        torch.tensor(w.astype(np.float32)),
        torch.tensor(b.astype(np.float32)),
        stride=2,
        groups=2,
    )
    expected = full[:, :, 1:, :-1].numpy()
    assert out.dtype == dtype
    tol = 1e-5 if dtype == np.float32 else 1e-2
    np.testing.assert_allclose(out.astype(np.float32), expected, rtol=tol, atol=tol)
    same = run(
        lambda x, w: mil.ConvTransposeOp(
            x, w, strides=[2, 2], pad_type="same", groups=2
        ),
        x,
        w,
    )
    full = F.conv_transpose2d(
        torch.tensor(x.astype(np.float32)),
        torch.tensor(w.astype(np.float32)),
        stride=2,
        groups=2,
    )
    # full is 11 x 13; same keeps 10 x 12, dropping the last row and column.
    np.testing.assert_allclose(
        same.astype(np.float32), full[:, :, :10, :12].numpy(), rtol=tol, atol=tol
    )


# --- torch.export: aten.convolution -------------------------------------------

TORCH_CONVS = [
    ("conv1d", nn.Conv1d(4, 6, 3), (1, 4, 16)),
    (
        "conv1d_strided_padded_dilated",
        nn.Conv1d(4, 6, 5, stride=2, padding=3, dilation=2),
        (1, 4, 20),
    ),
    ("conv2d", nn.Conv2d(3, 8, 3), (1, 3, 10, 10)),
    ("conv2d_strided", nn.Conv2d(3, 8, 3, stride=2, padding=1), (1, 3, 11, 9)),
    (
        "conv2d_dilated",
        nn.Conv2d(4, 4, 3, dilation=2, padding=2, bias=False),
        (1, 4, 9, 9),
    ),
    ("conv2d_grouped", nn.Conv2d(8, 12, 3, groups=4, padding=1), (1, 8, 7, 7)),
    (
        "conv2d_depthwise",
        nn.Conv2d(16, 16, 3, groups=16, stride=2, padding=1),
        (1, 16, 8, 8),
    ),
    ("conv2d_pointwise", nn.Conv2d(16, 24, 1), (1, 16, 6, 5)),
    ("conv_transpose1d", nn.ConvTranspose1d(6, 4, 4, stride=2, padding=1), (1, 6, 9)),
    ("conv_transpose2d", nn.ConvTranspose2d(8, 4, 2, stride=2), (1, 8, 5, 5)),
    (
        "conv_transpose2d_output_padding",
        nn.ConvTranspose2d(6, 4, 3, stride=2, padding=1, output_padding=1),
        (1, 6, 5, 4),
    ),
]


@pytest.mark.parametrize(
    "model, shape", [c[1:] for c in TORCH_CONVS], ids=[c[0] for c in TORCH_CONVS]
)
def test_aten_convolution_matches_torch(model, shape):
    """One aten.convolution per module, through the whole pipeline: the rlx
    program at f32, the fp16 ANE-form package, coremltools' loader."""
    torch.manual_seed(0)
    args = (torch.randn(shape),)
    checked = check_program(export(model.eval(), args), args)
    kind = (
        "rlx.conv_transpose"
        if "transpose" in type(model).__name__.lower()
        else "rlx.conv"
    )
    assert len(checked.ops(kind)) == 1


def test_a_dynamic_spatial_size_names_the_input_and_axis():
    from xdsl_ane.errors import XdslAneError

    model = nn.Conv2d(3, 4, 3).eval()
    width = torch.export.Dim("width", min=4, max=64)
    program = torch.export.export(
        model, (torch.randn(1, 3, 8, 16),), dynamic_shapes=({3: width},)
    )
    with pytest.raises(XdslAneError, match=r"input '\w+' dimension 3 is symbolic"):
        xdsl_ane.from_torch(program)


# --- ANE form: images and signals through the whole ane-pipeline -----------


def conv_net_weights(rng: np.random.Generator) -> dict[str, np.ndarray]:
    def w(*shape, fan_in):
        return (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32)

    return {
        "stem": w(32, 3, 3, 3, fan_in=27),
        "stem_b": w(32, fan_in=1) * 0.1,
        "block": w(32, 32, 3, 3, fan_in=288),
        "depthwise": w(32, 1, 3, 3, fan_in=9),
        "pointwise": w(64, 32, 1, 1, fan_in=32),
        "up": w(64, 32, 2, 2, fan_in=64),
        "up_b": w(32, fan_in=1) * 0.1,
        "audio": w(64, 4, 3, fan_in=12),
        "audio2": w(64, 64, 3, fan_in=192),
    }


def conv_net() -> tuple[object, dict[str, np.ndarray]]:
    """An image branch (conv + bias, relu, a residual conv, depthwise
    stride 2, pointwise, conv_transpose up 2x with bias) and a 1-D signal
    branch (conv, gelu, strided dilated conv): [1, 3, 16, 16] -> [1, 32,
    16, 16] and [1, 4, 32] -> [1, 64, 14]."""
    weights = conv_net_weights(np.random.default_rng(5))

    def p(name):
        return rlx.ParamOp(name, TensorType(f32, list(weights[name].shape))).result

    def body(x, s):
        y = rlx.ReluOp(rlx.ConvOp(x, p("stem"), p("stem_b"), padding=[1] * 4)).result
        r = rlx.ConvOp(y, p("block"), padding=[1] * 4).result
        y = rlx.AddOp(y, r).result
        y = rlx.ConvOp(y, p("depthwise"), strides=[2, 2], padding=[1] * 4, groups=32)
        y = rlx.SiluOp(rlx.ConvOp(y.result, p("pointwise"))).result
        up = rlx.ConvTransposeOp(y, p("up"), p("up_b"), strides=[2, 2]).result
        a = rlx.GeluOp(rlx.ConvOp(s, p("audio"), padding=[1, 1])).result
        a = rlx.ConvOp(a, p("audio2"), strides=[2], dilations=[2], padding=[0, 0])
        return [up, a.result]

    module = build_module(
        [TensorType(f32, [1, 3, 16, 16]), TensorType(f32, [1, 4, 32])], body
    )
    return module, weights


def conv_net_inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(6)
    return [
        rng.standard_normal((1, 3, 16, 16)).astype(np.float32),
        rng.standard_normal((1, 4, 32)).astype(np.float32),
    ]


@pytest.mark.parametrize("compress", [None, "lut6", "int8"])
def test_conv_net_through_the_ane_pipeline(compress):
    """Images stay [1, C, H, W], signals become [1, C, 1, W] with 1-D convs
    as 2-D ones of kernel height 1; fp16 (and compressed) numbers match the
    rlx program, and coremltools reloads the protobuf."""
    module, weights = conv_net()
    inputs = conv_net_inputs()
    expected = run_function(module, inputs, weights)
    compiled = xdsl_ane.compile(module, weights=weights, compress=compress)
    function = next(op for op in compiled.module.walk() if op.name == "func.func")
    records = function.attributes
    assert [r.kind.data for r in records["ane.arg_layouts"].data] == ["nchw", "ncw"]
    assert [r.kind.data for r in records["ane.result_layouts"].data] == ["nchw", "ncw"]
    ops = [op.name for op in function.walk()]
    # no layout change anywhere: the image and the signal stay in ANE form
    assert "mil.transpose" not in ops and "mil.reshape" not in ops, ops
    convs = [
        op for op in function.walk() if op.name in ("mil.conv", "mil.conv_transpose")
    ]
    assert len(convs) == 7
    for conv in convs:
        x, w = conv.operands[0].type, conv.operands[1].type
        assert x.get_num_dims() == w.get_num_dims() == 4
        assert x.element_type == w.element_type == f16
    if compress is not None:
        kind = "lut_to_dense" if compress.startswith("lut") else "blockwise_shift_scale"
        compressed = [
            c for c in convs if c.operands[1].owner.name == f"mil.constexpr_{kind}"
        ]
        # every weight of at least 2048 elements
        assert len(compressed) == 4, [c.operands[1].owner.name for c in convs]
    actual = run_ane_form(
        compiled.module, inputs, compiled.weights, [e.shape for e in expected]
    )
    tolerance = 2e-2 if compress is None else 5e-2
    for e, a in zip(expected, actual):
        assert a.dtype == np.float16
        assert relative_error(e, a) < tolerance
    report = compiled.validate()
    assert report.ok, report.findings


def test_linear_bias_folds_into_the_one_by_one_conv():
    """nn.Linear's bias goes into the bias input of the 1x1 conv it becomes:
    no add is left, and the numbers still match torch."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.GELU(), nn.Linear(128, 64)).eval()
    args = (torch.randn(1, 16, 64),)
    checked = check_program(export(model, args), args)
    counts = checked.compiled.op_counts()["main"]
    assert counts["conv"] == 2 and "add" not in counts, counts


def test_a_per_channel_add_after_a_conv_becomes_its_bias():
    weights = {
        "w": np.random.default_rng(1).standard_normal((6, 3, 3, 3)).astype(np.float32),
        "b": np.random.default_rng(2).standard_normal((6, 1, 1)).astype(np.float32),
    }

    def body(x):
        w = rlx.ParamOp("w", TensorType(f32, [6, 3, 3, 3])).result
        b = rlx.ParamOp("b", TensorType(f32, [6, 1, 1])).result
        return rlx.AddOp(rlx.ConvOp(x, w, padding=[1] * 4).result, b)

    module = build_module([TensorType(f32, [1, 3, 8, 8])], body)
    x = np.random.default_rng(3).standard_normal((1, 3, 8, 8)).astype(np.float32)
    (expected,) = run_function(module, [x], weights)
    compiled = xdsl_ane.compile(module, weights=weights)
    convs = [op for op in compiled.module.walk() if op.name == "mil.conv"]
    assert len(convs) == 1 and convs[0].bias is not None
    assert not [op for op in compiled.module.walk() if op.name == "mil.add"]
    (actual,) = run_ane_form(compiled.module, [x], compiled.weights, [expected.shape])
    assert relative_error(expected, actual) < 2e-2
    assert compiled.validate().ok


class Patches(nn.Module):
    """A ViT's patch embedding, norm and first linear."""

    def __init__(self):
        super().__init__()
        self.patch = nn.Conv2d(3, 32, 4, stride=4)
        self.norm = nn.LayerNorm(32)
        self.linear = nn.Linear(32, 16)

    def forward(self, x):
        return self.linear(self.norm(self.patch(x).flatten(2).transpose(1, 2)))


def test_vit_patches_reach_the_sequence_form_by_one_reshape():
    torch.manual_seed(0)
    args = (torch.randn(1, 3, 16, 16),)
    checked = check_program(export(Patches().eval(), args), args)
    counts = checked.compiled.op_counts()["main"]
    assert counts == {"conv": 2, "reshape": 1, "layer_norm": 1}, counts


class AudioStem(nn.Module):
    """Whisper's encoder stem: two conv1d + GELU, the signal turned into a
    sequence, a position embedding, a norm and a linear."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv1d(16, 32, 3, padding=1)
        self.conv2 = nn.Conv1d(32, 32, 3, stride=2, padding=1)
        self.positions = nn.Parameter(torch.randn(20, 32))
        self.norm = nn.LayerNorm(32)
        self.linear = nn.Linear(32, 32)

    def forward(self, x):
        x = F.gelu(self.conv2(F.gelu(self.conv1(x))))
        return self.linear(self.norm(x.permute(0, 2, 1) + self.positions))


def test_audio_stem_keeps_the_signal_in_ane_form():
    """The signal [1, C, W] is [1, C, 1, W] from the input on; its turn into
    a sequence [1, W, C] costs nothing: the only layout ops left act on the
    constant position table."""
    torch.manual_seed(0)
    args = (torch.randn(1, 16, 40),)
    checked = check_program(export(AudioStem().eval(), args), args)
    function = next(
        op for op in checked.compiled.module.walk() if op.name == "func.func"
    )
    for op in function.walk():
        if op.name in ("mil.transpose", "mil.reshape"):
            assert op.operands[0].owner.name in ("mil.const", "mil.transpose"), op
        if op.name == "mil.conv":
            assert op.operands[0].type.get_shape()[2] == 1


def test_packing_an_image_is_refused_in_one_line():
    from xdsl.utils.exceptions import PassFailedException

    module, weights = conv_net()
    with pytest.raises(
        (PassFailedException, xdsl_ane.XdslAneError),
        match=r"mil-pack-io: @kernel: argument 0 of type tensor<1x3x16x16xf16> is "
        r"an image \[1, C, H, W\]; only \[1, C, 1, S\] tensors pack along S",
    ):
        xdsl_ane.compile(module, weights=weights, pipeline="ane-pipeline{pack-io=true}")


PADDED_CONVS = [
    ("conv2d_same_even_kernel", nn.Conv2d(3, 4, 4, padding="same"), (1, 3, 8, 8)),
    (
        "conv2d_reflect",
        nn.Conv2d(3, 4, 3, padding=1, padding_mode="reflect"),
        (1, 3, 8, 8),
    ),
    ("conv1d_same_even_kernel", nn.Conv1d(3, 4, 4, padding="same"), (1, 3, 9)),
    (
        "conv1d_replicate",
        nn.Conv1d(3, 4, 3, padding=2, padding_mode="replicate"),
        (1, 3, 9),
    ),
]


@pytest.mark.parametrize(
    "model, shape", [c[1:] for c in PADDED_CONVS], ids=[c[0] for c in PADDED_CONVS]
)
def test_a_conv_padded_apart_stays_in_ane_form(model, shape):
    """torch pads an even 'same' kernel or a padding_mode other than zeros
    with a pad before the conv: the pad runs on the image or on the
    signal's [1, C, 1, W], no layout op around it."""
    torch.manual_seed(0)
    args = (torch.randn(shape),)
    checked = check_program(export(model.eval(), args), args)
    assert checked.compiled.op_counts()["main"] == {"pad": 1, "conv": 1}


def test_plain_cnn_needs_no_layout_op():
    """Conv2d + BatchNorm2d + ReLU + MaxPool2d + Conv2d + AdaptiveAvgPool2d +
    Linear: the image is [1, C, H, W] from the input to the pooled
    [1, C, 1, 1], which the classifier's 1x1 conv reads as it is."""
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.BatchNorm2d(8),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(16, 10),
    ).eval()
    args = (torch.randn(1, 3, 16, 16),)
    checked = check_program(export(model, args), args)
    counts = checked.compiled.op_counts()["main"]
    assert not {"reshape", "transpose", "add"} & set(counts), counts
    assert counts["conv"] == 3


class UNetDecoder(nn.Module):
    """A strided conv down, ConvTranspose2d up, a skip concat, nearest
    upsampling, a depthwise-separable block with BatchNorm and ReLU6."""

    def __init__(self):
        super().__init__()
        self.down = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.up = nn.ConvTranspose2d(8, 8, 2, stride=2)
        self.merge = nn.Conv2d(11, 4, 3, padding=1)
        self.depthwise = nn.Conv2d(4, 4, 3, padding=1, groups=4)
        self.pointwise = nn.Conv2d(4, 8, 1)
        self.norm = nn.BatchNorm2d(8)

    def forward(self, x):
        skip = torch.cat([self.up(F.relu(self.down(x))), x], 1)
        y = F.interpolate(self.merge(skip), scale_factor=2, mode="nearest")
        return F.relu6(self.norm(self.pointwise(self.depthwise(y))))


def test_unet_decoder_needs_no_layout_op():
    torch.manual_seed(0)
    args = (torch.randn(1, 3, 16, 16),)
    checked = check_program(export(UNetDecoder().eval(), args), args)
    counts = checked.compiled.op_counts()["main"]
    assert not {"reshape", "transpose"} & set(counts), counts
    assert counts["conv"] == 4 and counts["conv_transpose"] == 1

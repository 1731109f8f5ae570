"""mil.max_pool, mil.avg_pool, mil.batch_norm and mil.instance_norm: type
inference against coremltools 9.0 (the iOS18 opset of `mil.Builder`), the
verifier's MIL rules, the interpreter against torch, and lowered programs
printed as protobuf and reloaded by coremltools' loader (f32 and after
mil-fp16)."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from lowering_cases import build_module, lower
from mil_type_check import C, Case, R, coreml_types, our_types, value
from proto_check import emit
from xdsl.context import Context
from xdsl.dialects.builtin import f16, f32
from xdsl.utils.exceptions import VerifyException

from xdsl_ane.backend.mil_text import module_to_mil_text, write_mil_text_dir
from xdsl_ane.backend.weights import quiet_coremltools
from xdsl_ane.dialects import mil, rlx
from xdsl_ane.dialects.mil.builders import const_op
from xdsl_ane.dialects.typing import tensor
from xdsl_ane.frontend.mil_text import read_mil_file
from xdsl_ane.interpreter.core import run_function
from xdsl_ane.passes.fp16 import MilFp16Pass

with quiet_coremltools():
    from coremltools.converters.mil import Builder as mb

TYPE_CASES = [
    Case(
        "max_pool_valid",
        [R([1, 3, 8, 9])],
        lambda x: mil.MaxPoolOp(x, [3, 3], [2, 2]),
        lambda x: mb.max_pool(
            x=x, kernel_sizes=[3, 3], strides=[2, 2], pad_type="valid"
        ),
    ),
    Case(
        "max_pool_custom_asymmetric",
        [R([1, 3, 7, 7], f16)],
        lambda x: mil.MaxPoolOp(x, [3, 3], [2, 2], "custom", [1, 2, 0, 1]),
        lambda x: mb.max_pool(
            x=x,
            kernel_sizes=[3, 3],
            strides=[2, 2],
            pad_type="custom",
            pad=[1, 2, 0, 1],
        ),
    ),
    Case(
        "max_pool_ceil",
        [R([1, 2, 7, 9])],
        lambda x: mil.MaxPoolOp(x, [3, 3], [2, 2], "custom", [1, 1, 1, 1], True),
        lambda x: mb.max_pool(
            x=x,
            kernel_sizes=[3, 3],
            strides=[2, 2],
            pad_type="custom",
            pad=[1, 1, 1, 1],
            ceil_mode=True,
        ),
    ),
    Case(
        "max_pool_ceil_valid",
        [R([1, 2, 6, 6])],
        lambda x: mil.MaxPoolOp(x, [3, 3], [2, 2], ceil_mode=True),
        lambda x: mb.max_pool(
            x=x, kernel_sizes=[3, 3], strides=[2, 2], pad_type="valid", ceil_mode=True
        ),
    ),
    Case(
        "max_pool_same_1d",
        [R([2, 4, 11])],
        lambda x: mil.MaxPoolOp(x, [4], [3], "same"),
        lambda x: mb.max_pool(x=x, kernel_sizes=[4], strides=[3], pad_type="same"),
    ),
    Case(
        "avg_pool_same_lower",
        [R([1, 4, 10, 7])],
        lambda x: mil.AvgPoolOp(x, [3, 2], [2, 2], "same_lower"),
        lambda x: mb.avg_pool(
            x=x, kernel_sizes=[3, 2], strides=[2, 2], pad_type="same_lower"
        ),
    ),
    Case(
        "avg_pool_exclude_ceil",
        [R([1, 4, 10], f16)],
        lambda x: mil.AvgPoolOp(
            x, [4], [4], "custom", [2, 2], True, exclude_padding_from_average=True
        ),
        lambda x: mb.avg_pool(
            x=x,
            kernel_sizes=[4],
            strides=[4],
            pad_type="custom",
            pad=[2, 2],
            ceil_mode=True,
            exclude_padding_from_average=True,
        ),
    ),
    Case(
        "avg_pool_3d",
        [R([1, 2, 4, 6, 6])],
        lambda x: mil.AvgPoolOp(x, [2, 2, 2], [2, 2, 2]),
        lambda x: mb.avg_pool(
            x=x, kernel_sizes=[2, 2, 2], strides=[2, 2, 2], pad_type="valid"
        ),
    ),
    Case(
        "batch_norm",
        [R([1, 4, 5, 5]), C([4]), C([4]), C([4]), C([4])],
        lambda x, m, v, g, b: mil.BatchNormOp(x, m, v, g, b, epsilon=1e-3),
        lambda x, m, v, g, b: mb.batch_norm(
            x=x, mean=m, variance=v, gamma=g, beta=b, epsilon=np.float32(1e-3)
        ),
    ),
    Case(
        "batch_norm_f16_params_1d",
        [R([2, 3, 7]), C([3], f16), C([3], f16)],
        lambda x, m, v: mil.BatchNormOp(x, m, v),
        lambda x, m, v: mb.batch_norm(x=x, mean=m, variance=v),
    ),
    Case(
        "instance_norm",
        [R([1, 6, 4, 5], f16), C([6], f16), C([6], f16)],
        lambda x, g, b: mil.InstanceNormOp(x, g, b, epsilon=1e-5),
        lambda x, g, b: mb.instance_norm(
            x=x, gamma=g, beta=b, epsilon=np.float16(1e-5)
        ),
    ),
    Case(
        "instance_norm_bare",
        [R([2, 3, 9])],
        lambda x: mil.InstanceNormOp(x),
        lambda x: mb.instance_norm(x=x),
    ),
]


@pytest.mark.parametrize("case", TYPE_CASES, ids=[c.id for c in TYPE_CASES])
def test_type_inference_matches_coremltools(case):
    assert our_types(case) == coreml_types(case)


@pytest.mark.parametrize(
    "build, message",
    [
        (
            lambda: mil.MaxPoolOp(
                value([1, 2, 7, 7]), [3, 3], [2, 2], "custom", [1, 2, 1, 1], True
            ),
            "mil.max_pool: property 'ceil_mode' needs symmetric padding, got pad "
            "[1, 2, 1, 1]",
        ),
        (
            lambda: mil.AvgPoolOp(
                value([1, 2, 7, 7]), [3, 3], pad_type="same", ceil_mode=True
            ),
            "mil.avg_pool: property 'ceil_mode' must be false with pad_type \"same\"",
        ),
        (
            lambda: mil.MaxPoolOp(value([1, 2, 4, 4, 4]), [2, 2, 2], ceil_mode=True),
            "mil.max_pool: property 'ceil_mode' takes 1 or 2 spatial axes only",
        ),
        (
            lambda: mil.MaxPoolOp(value([1, 2, 7, 7]), [3, 3], pad=[1, 1, 1, 1]),
            "mil.max_pool: property 'pad' [1, 1, 1, 1] requires pad_type \"custom\"",
        ),
        (
            lambda: mil.MaxPoolOp(value([1, 2, 7, 7]), [3]),
            "mil.max_pool: property 'kernel_sizes' [3] must have 2 entries",
        ),
        (
            lambda: mil.AvgPoolOp(value([1, 2, 2, 2]), [3, 3]),
            "mil.avg_pool: kernel_sizes [3, 3] do not fit the padded operand 'x'",
        ),
        (
            lambda: mil.BatchNormOp(value([1, 4, 3, 3]), value([4]), value([3])),
            "mil.batch_norm: operand 'variance' [3] must be [4]",
        ),
        (
            lambda: mil.InstanceNormOp(value([1, 4, 3, 3, 3])),
            "mil.instance_norm: operand 'x' must be [n, C, *D] of rank 3 to 4",
        ),
    ],
)
def test_verifier_rejects(build, message):
    with pytest.raises(VerifyException, match=re.escape(message)):
        build()


def test_batch_norm_needs_const_statistics():
    x = value([1, 4, 3, 3])
    op = mil.BatchNormOp(x, value([4]), value([4]))
    with pytest.raises(VerifyException, match="operand 'mean' must be a compile-time"):
        op.verify()


def torch_pool_module(x_shape, build):
    return build_module([tensor(x_shape, f32)], build)


def test_mil_pool_interpreter_matches_torch():
    """MIL's own ceil_mode and same padding, on the interpreter, against
    torch's pooling of the explicitly padded input."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 2, 7, 9)).astype(np.float32)
    t = torch.from_numpy(x.astype(np.float64))
    module = torch_pool_module(
        x.shape,
        lambda v: mil.MaxPoolOp(v, [3, 3], [2, 2], "custom", [1, 1, 1, 1], True),
    )
    (out,) = run_function(module, [x])
    expected = F.max_pool2d(t, 3, 2, 1, ceil_mode=True).numpy()
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)
    module = torch_pool_module(
        x.shape,
        lambda v: mil.AvgPoolOp(
            v, [3, 3], [2, 2], "same", exclude_padding_from_average=True
        ),
    )
    (out,) = run_function(module, [x])
    # same: total padding 2 on each axis, split evenly
    expected = F.avg_pool2d(t, 3, 2, 1, count_include_pad=False).numpy()
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def test_mil_norm_interpreter_matches_torch():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    params = [rng.uniform(0.5, 2, 3).astype(np.float32) for _ in range(4)]
    t = torch.from_numpy(x.astype(np.float64))
    tp = [torch.from_numpy(p.astype(np.float64)) for p in params]

    def batch(v):
        m, var, g, b = (const_op(p, f32).result for p in params)
        return mil.BatchNormOp(v, m, var, g, b, epsilon=1e-3)

    (out,) = run_function(build_module([tensor(x.shape, f32)], batch), [x])
    expected = F.batch_norm(t, *tp, training=False, eps=1e-3).numpy()
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)

    def instance(v):
        g, b = (const_op(p, f32).result for p in params[2:])
        return mil.InstanceNormOp(v, g, b)

    (out,) = run_function(build_module([tensor(x.shape, f32)], instance), [x])
    expected = F.instance_norm(t, weight=tp[2], bias=tp[3], eps=1e-5).numpy()
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def vision_block(element):
    """batch_norm, group_norm (3 groups and instance), max_pool with
    ceil_mode, avg_pool with an overhang and a divisor correction."""

    def body(x):
        def p(name):
            return rlx.ParamOp(name, tensor((6,), element)).result

        y = rlx.BatchNormOp(x, p("m"), p("v"), p("g"), p("b"), 1e-3).result
        y = rlx.GroupNormOp(y, 3, p("g"), p("b")).result
        y = rlx.GroupNormOp(y, 6, p("g")).result
        y = rlx.MaxPoolOp(y, [3, 3], [2, 2], [1, 1, 1, 1], True).result
        return rlx.AvgPoolOp(y, [3, 3], [2, 2], [1, 1, 1, 1], True, True)

    return build_module([tensor((1, 6, 9, 9), element)], body)


def block_weights():
    rng = np.random.default_rng(2)
    w = {n: rng.standard_normal(6).astype(np.float32) for n in "mgb"}
    w["v"] = rng.uniform(0.5, 2, 6).astype(np.float32)
    return w


@pytest.mark.parametrize("fp16", [False, True], ids=["f32", "fp16"])
def test_lowered_program_reloads_in_coremltools(fp16):
    lowered = lower(vision_block(f32))
    if fp16:
        MilFp16Pass().apply(Context(), lowered)
        lowered.verify()
    names = {op.name for op in lowered.walk()}
    assert {
        "mil.batch_norm",
        "mil.instance_norm",
        "mil.max_pool",
        "mil.avg_pool",
    } <= names
    weights = block_weights()
    emit(lowered, weights)
    text, _ = module_to_mil_text(lowered, weights)
    assert "avg_pool(" in text and "max_pool(" in text
    assert "exclude_padding_from_average" in text
    assert "variance = " in text


def test_mil_text_reads_back_to_the_same_numbers():
    """The MIL text of the lowered block, read back by the MIL text
    importer, computes what the lowered module computes."""
    lowered = lower(vision_block(f32))
    weights = block_weights()
    with tempfile.TemporaryDirectory() as d:
        write_mil_text_dir(lowered, weights, d)
        imported, read_weights = read_mil_file(Path(d) / "model.mil")
    x = np.random.default_rng(3).standard_normal((1, 6, 9, 9)).astype(np.float32)
    (expected,) = run_function(lowered, [x], weights)
    (actual,) = run_function(imported, [x], read_weights)
    np.testing.assert_allclose(actual, expected, rtol=1e-6, atol=1e-6)
    names = {op.name for op in imported.walk()}
    assert {"mil.batch_norm", "mil.layer_norm", "mil.max_pool", "mil.avg_pool"} <= names

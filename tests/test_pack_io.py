"""mil-pack-io: packed kernels run on inputs packed by their manifest give
the unpacked kernel's outputs."""

from __future__ import annotations

import numpy as np
import pytest
from ane_form import ane_inputs, function_of
from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.dialects.builtin import f32
from xdsl.transforms.canonicalize import CanonicalizePass
from xdsl.utils.exceptions import PassFailedException

from xdsl_ane.dialects import rlx
from xdsl_ane.dialects.typing import tensor
from xdsl_ane.frontend.mlir import parse_module_text
from xdsl_ane.interpreter.core import random_inputs, run_function
from xdsl_ane.models.transformer import QWEN3_0_6B, BlockBuilder, build_function
from xdsl_ane.passes.ane_layout import MilAneLayoutPass
from xdsl_ane.passes.driver import make_context
from xdsl_ane.passes.pack_io import MilPackIoPass, packing_of
from xdsl_ane.passes.rlx_to_mil import ConvertRlxToMilPass

SMALL = QWEN3_0_6B.with_(
    hidden_size=32, num_heads=2, num_kv_heads=1, head_dim=16, seq_len=8
)


def pack_inputs(manifest, arrays):
    """Packs per-argument arrays into the kernel's packed inputs."""
    packed = []
    for group in manifest["inputs"]:
        buffer = np.zeros(group["shape"], dtype=arrays[0].dtype)
        for t in group["tensors"]:
            a, b = t["offset"], t["offset"] + t["length"]
            buffer[..., a:b] = arrays[t["arg"]].reshape(t.get("view", t["shape"]))
        packed.append(buffer)
    return packed


def unpack_outputs(manifest, outputs):
    """Splits the packed results into the kernel's original results."""
    unpacked = {}
    for group, value in zip(manifest["outputs"], outputs):
        for t in group["tensors"]:
            a, b = t["offset"], t["offset"] + t["length"]
            unpacked[t["result"]] = value[:, a:b].reshape(t["shape"])
    return [unpacked[i] for i in sorted(unpacked)]


def projections():
    """Two projections of one activation and a residual: a dynamic-weight
    kernel with three inputs of C = hidden and two outputs."""
    b = BlockBuilder(SMALL, 0)
    types = [tensor((1, 8, 32), f32), tensor((1, 8, 32), f32)]

    def body(x, r):
        q = b.linear(x, "q", 32)
        k = b.linear(x, "k", 16)
        return [rlx.AddOp(q, r).result, k]

    return builtin.ModuleOp([build_function("proj", types, body, ["x", "r"])])


@pytest.mark.parametrize("mode", ["static", "dynamic"])
def test_packed_kernel_matches(mode):
    module = projections()
    rng = np.random.default_rng(0)
    weights = {
        "layers.0.q.weight": rng.standard_normal((32, 32)).astype(np.float32),
        "layers.0.k.weight": rng.standard_normal((16, 32)).astype(np.float32),
    }
    inputs = random_inputs(function_of(module), 0)
    ConvertRlxToMilPass().apply(Context(), module)
    MilAneLayoutPass(weights=mode).apply(Context(), module)
    CanonicalizePass().apply(make_context(), module)
    unpacked_args = ane_inputs(function_of(module), inputs, weights)
    expected = run_function(module, unpacked_args, weights)

    MilPackIoPass().apply(Context(), module)
    module.verify()
    function = function_of(module)
    manifest = packing_of(function)
    assert manifest is not None
    # Every argument has 32 channels: one input; outputs share S: one output.
    assert len(function.function_type.inputs.data) == 1
    assert len(function.function_type.outputs.data) == 1
    (group,) = manifest["inputs"]
    spatial = 8 + 8 + (32 + 16 if mode == "dynamic" else 0)
    assert group["shape"] == [1, 32, 1, spatial]
    assert [t["name"] for t in group["tensors"]][:2] == ["x", "r"]
    actual = run_function(module, pack_inputs(manifest, unpacked_args), weights)
    for a, e in zip(unpack_outputs(manifest, actual), expected):
        np.testing.assert_array_equal(a, e)
    # The record is typed IR (no JSON in a string): it prints and parses back
    # with the module.
    assert isinstance(function.attributes["ane.packing"], builtin.DictionaryAttr)
    reparsed = parse_module_text(str(module), "packed")
    assert packing_of(function_of(reparsed)) == manifest


def test_groups_by_channel_count():
    text_types = [
        tensor((1, 4, 1, 5), f32),
        tensor((1, 6, 1, 5), f32),
        tensor((1, 4, 1, 3), f32),
    ]

    def body(a, b, c):
        return [a, b, c]

    module = builtin.ModuleOp([build_function("f", text_types, body, ["a", "b", "c"])])
    MilPackIoPass().apply(Context(), module)
    manifest = packing_of(function_of(module))
    assert [g["shape"] for g in manifest["inputs"]] == [[1, 4, 1, 8], [1, 6, 1, 5]]
    assert [g["shape"] for g in manifest["outputs"]] == [[1, 10, 1, 5], [1, 4, 1, 3]]
    arrays = [
        np.random.default_rng(i).standard_normal(t.get_shape()).astype(np.float32)
        for i, t in enumerate(text_types)
    ]
    outputs = run_function(module, pack_inputs(manifest, arrays), {})
    for a, e in zip(unpack_outputs(manifest, outputs), arrays):
        np.testing.assert_array_equal(a, e)


def test_views_make_one_input_and_one_output():
    """Tensors of other sizes are packed through row-major views: [1, 6, 1, 4]
    (24 elements) as [1, 4, 1, 6] among 4-channel inputs, and as
    [1, 12, 1, 2] among outputs of spatial size 2."""
    types = [tensor((1, 4, 1, 2), f32), tensor((1, 6, 1, 4), f32)]

    def body(a, b):
        return [a, b, a]

    module = builtin.ModuleOp([build_function("f", types, body, ["a", "b"])])
    MilPackIoPass().apply(Context(), module)
    module.verify()
    function = function_of(module)
    manifest = packing_of(function)
    assert [g["shape"] for g in manifest["inputs"]] == [[1, 4, 1, 8]]
    assert manifest["inputs"][0]["tensors"][1]["view"] == [1, 4, 1, 6]
    assert [g["shape"] for g in manifest["outputs"]] == [[1, 20, 1, 2]]
    assert manifest["outputs"][0]["tensors"][1]["view"] == [1, 12, 1, 2]
    arrays = [
        np.random.default_rng(i).standard_normal(t.get_shape()).astype(np.float32)
        for i, t in enumerate(types)
    ]
    outputs = run_function(module, pack_inputs(manifest, arrays), {})
    a, b, a2 = unpack_outputs(manifest, outputs)
    np.testing.assert_array_equal(a, arrays[0])
    np.testing.assert_array_equal(b, arrays[1])
    np.testing.assert_array_equal(a2, arrays[0])


def test_requires_ane_form():
    module = builtin.ModuleOp(
        [build_function("f", [tensor((2, 3), f32)], lambda x: [x], ["x"])]
    )
    with pytest.raises(
        PassFailedException, match=r"@f: argument 0 .* not in \[1, C, 1, S\] form"
    ):
        MilPackIoPass().apply(Context(), module)

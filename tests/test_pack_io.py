"""mil-pack-io: packed kernels run on inputs packed as their `ane.packing`
record says give the unpacked kernel's outputs."""

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
from xdsl_ane.dialects.ane import PackingAttr, packing
from xdsl_ane.dialects.functions import build_function
from xdsl_ane.dialects.typing import tensor
from xdsl_ane.frontend.mlir import parse_module_text
from xdsl_ane.interface import Packing
from xdsl_ane.interpreter.core import random_inputs, run_function
from xdsl_ane.models.transformer import QWEN3_0_6B, stateless_builder
from xdsl_ane.passes.ane_layout import MilAneLayoutPass
from xdsl_ane.passes.driver import make_context
from xdsl_ane.passes.pack_io import MilPackIoPass
from xdsl_ane.passes.rlx_to_mil import ConvertRlxToMilPass

SMALL = QWEN3_0_6B.with_(
    hidden_size=32, num_heads=2, num_kv_heads=1, head_dim=16, seq_len=8
)


def pack_inputs(record: PackingAttr, arrays):
    """Packs per-argument arrays into the kernel's packed inputs, as the
    runtime interface does."""
    packing = Packing.of(record)
    return packing.pack(
        dict(enumerate(arrays)), [arrays[0].dtype] * len(packing.inputs)
    )


def unpack_outputs(record: PackingAttr, outputs):
    """Splits the packed results into the kernel's original results."""
    unpacked = Packing.of(record).unpack(outputs)
    return [unpacked[i] for i in sorted(unpacked)]


def projections():
    """Two projections of one activation and a residual: a dynamic-weight
    kernel with three inputs of C = hidden and two outputs."""
    b = stateless_builder(SMALL)
    types = [tensor((1, 8, 32), f32), tensor((1, 8, 32), f32)]

    def body(x, r):
        q = b.linear(x, 0, "q", 32)
        k = b.linear(x, 0, "k", 16)
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
    record = packing(function)
    assert record is not None
    # Every argument has 32 channels: one input; outputs share S: one output.
    assert len(function.function_type.inputs.data) == 1
    assert len(function.function_type.outputs.data) == 1
    (group,) = record.inputs
    spatial = 8 + 8 + (32 + 16 if mode == "dynamic" else 0)
    assert group.buffer_shape == (1, 32, 1, spatial)
    assert [t.tensor_name.data for t in group.tensors][:2] == ["x", "r"]
    actual = run_function(module, pack_inputs(record, unpacked_args), weights)
    for a, e in zip(unpack_outputs(record, actual), expected):
        np.testing.assert_array_equal(a, e)
    # The record is typed IR (an #ane.packing attribute): it prints and
    # parses back with the module.
    assert "ane.packing = #ane.packing<" in str(module)
    reparsed = parse_module_text(str(module), "packed")
    assert packing(function_of(reparsed)) == record


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
    record = packing(function_of(module))
    assert record is not None
    assert [g.buffer_shape for g in record.inputs] == [(1, 4, 1, 8), (1, 6, 1, 5)]
    assert [g.buffer_shape for g in record.outputs] == [(1, 10, 1, 5), (1, 4, 1, 3)]
    arrays = [
        np.random.default_rng(i).standard_normal(t.get_shape()).astype(np.float32)
        for i, t in enumerate(text_types)
    ]
    outputs = run_function(module, pack_inputs(record, arrays), {})
    for a, e in zip(unpack_outputs(record, outputs), arrays):
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
    record = packing(function)
    assert record is not None
    assert [g.buffer_shape for g in record.inputs] == [(1, 4, 1, 8)]
    assert record.inputs.data[0].tensors.data[1].view_shape == (1, 4, 1, 6)
    assert [g.buffer_shape for g in record.outputs] == [(1, 20, 1, 2)]
    assert record.outputs.data[0].tensors.data[1].view_shape == (1, 12, 1, 2)
    arrays = [
        np.random.default_rng(i).standard_normal(t.get_shape()).astype(np.float32)
        for i, t in enumerate(types)
    ]
    outputs = run_function(module, pack_inputs(record, arrays), {})
    a, b, a2 = unpack_outputs(record, outputs)
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

"""The iOS18 compressed-weight ops, constexpr_blockwise_shift_scale and
constexpr_lut_to_dense: types against coremltools' type inference, values
against its decompression (`decompress`, what its value inference runs),
the protobuf through coremltools' loader, MIL text both ways, and sub-byte
data in the blob."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import TensorType, f16, f32, i8
from xdsl.utils.exceptions import VerifyException

from xdsl_ane.backend.mil_text import module_to_mil_text, write_mil_text_dir
from xdsl_ane.backend.milproto import module_to_proto
from xdsl_ane.backend.weights import BlobFile, WeightBlob, quiet_coremltools
from xdsl_ane.dialects import mil
from xdsl_ane.dialects.dense import dense_from_numpy
from xdsl_ane.dialects.typing import STORAGE_ELEMENT_TYPES, tensor
from xdsl_ane.frontend.mil_text import parse_mil_text, read_mil_file
from xdsl_ane.interpreter.core import InterpretationError, run_function

with quiet_coremltools():
    from coremltools.converters.mil.mil.ops.defs.iOS18.compression import (
        constexpr_blockwise_shift_scale as ct_shift_scale,
    )
    from coremltools.converters.mil.mil.ops.defs.iOS18.compression import (
        constexpr_lut_to_dense as ct_lut,
    )

INT4 = STORAGE_ELEMENT_TYPES["i4"]
UINT4 = STORAGE_ELEMENT_TYPES["ui4"]
UINT8 = STORAGE_ELEMENT_TYPES["ui8"]
UINT2 = STORAGE_ELEMENT_TYPES["ui2"]
UINT6 = STORAGE_ELEMENT_TYPES["ui6"]

rng = np.random.default_rng(0)


def const(array: np.ndarray, element_type) -> mil.ConstOp:
    return mil.ConstOp(dense_from_numpy(array, element_type))


def program(*ops_and_results) -> builtin.ModuleOp:
    """A function without arguments returning the given results."""
    ops, results = ops_and_results
    types = [r.type for r in results]
    f = func.FuncOp("main", ((), types))
    f.body.block.add_ops([*ops, func.ReturnOp(*results)])
    module = builtin.ModuleOp([f])
    module.verify()
    return module


SHIFT_SCALE_CASES = {
    # name: data, data type, scale, offset (or None), offset type
    "int8_per_channel": (
        rng.integers(-128, 128, (8, 16, 1, 1)),
        i8,
        rng.random((8, 1, 1, 1)).astype(np.float16),
        None,
        None,
    ),
    "int4_per_block": (
        rng.integers(-8, 8, (8, 32)),
        INT4,
        rng.random((8, 4)).astype(np.float16),
        None,
        None,
    ),
    "uint4_offset": (
        rng.integers(0, 16, (4, 12)),
        UINT4,
        rng.random((2, 3)).astype(np.float32),
        rng.integers(0, 16, (2, 3)),
        UINT4,
    ),
    "int8_float_offset": (
        rng.integers(-128, 128, (6, 4)),
        i8,
        rng.random((6, 1)).astype(np.float16),
        rng.standard_normal((6, 1)).astype(np.float16),
        f16,
    ),
}


@pytest.mark.parametrize("case", sorted(SHIFT_SCALE_CASES))
def test_blockwise_shift_scale_is_mils_decompression(case: str):
    data, data_type, scale, offset, offset_type = SHIFT_SCALE_CASES[case]
    d = const(data, data_type)
    s = const(scale, f16 if scale.dtype == np.float16 else f32)
    ops = [d, s]
    o = None
    if offset is not None:
        o = const(offset, offset_type)
        ops.append(o)
    op = mil.ConstexprBlockwiseShiftScaleOp(d, s, o)
    assert op.result.type == tensor(data.shape, s.result.type.element_type)
    (ours,) = run_function(program([*ops, op], [op.result]), [])
    holder = np.int8 if data_type in (i8, INT4) else np.uint8
    offset_value = None
    if offset is not None:
        offset_value = offset.astype(
            np.float16 if offset_type == f16 else np.dtype(holder)
        )
    theirs = ct_shift_scale.decompress(data.astype(holder), scale, offset_value)
    assert ours.dtype == theirs.dtype
    np.testing.assert_array_equal(ours, theirs)


LUT_CASES = {
    # name: indices shape, index type, lut shape, vector_axis
    "per_tensor_uint4": ((8, 16, 1, 1), UINT4, (1, 1, 1, 1, 16, 1), None),
    "grouped_uint6": ((8, 16), UINT6, (4, 1, 64, 1), None),
    "blocks_both_axes_uint2": ((6, 8), UINT2, (3, 2, 4, 1), None),
    "vector_axis_1": ((4, 3), UINT2, (2, 1, 4, 3), 1),
    "vector_axis_0": ((4, 3), UINT2, (1, 1, 4, 2), 0),
}


@pytest.mark.parametrize("case", sorted(LUT_CASES))
def test_lut_to_dense_is_mils_decompression(case: str):
    shape, index_type, lut_shape, axis = LUT_CASES[case]
    bits = index_type.width.data
    indices = rng.integers(0, 2**bits, shape).astype(np.uint8)
    lut = rng.standard_normal(lut_shape).astype(np.float16)
    i, table = const(indices, index_type), const(lut, f16)
    op = mil.ConstexprLutToDenseOp(i, table, vector_axis=axis)
    (ours,) = run_function(program([i, table, op], [op.result]), [])
    theirs = ct_lut.decompress(indices, lut, axis)
    assert ours.shape == theirs.shape == op.result.type.get_shape()
    np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: mil.ConstexprBlockwiseShiftScaleOp(
                const(np.zeros((8, 6), np.int8), INT4),
                const(np.ones((8, 4), np.float16), f16),
            ),
            "operand 'scale' [8, 4]: dimension 1 (4) does not divide that of operand "
            "'data' [8, 6] (6)",
        ),
        (
            lambda: mil.ConstexprBlockwiseShiftScaleOp(
                const(np.zeros((8, 6), np.int8), i8),
                const(np.ones((8,), np.float16), f16),
            ),
            "operand 'scale' [8] must have the rank of operand 'data' [8, 6]",
        ),
        (
            lambda: mil.ConstexprBlockwiseShiftScaleOp(
                const(np.zeros((8, 6), np.int8), i8),
                const(np.ones((8, 1), np.float16), f16),
                const(np.zeros((8, 1), np.uint8), UINT4),
            ),
            "operand 'offset' has element type ui4: a float type or that of operand "
            "'data' (i8)",
        ),
        (
            lambda: mil.ConstexprLutToDenseOp(
                const(np.zeros((8, 6), np.uint8), UINT4),
                const(np.zeros((1, 1, 8, 1), np.float16), f16),
            ),
            "operand 'lut' [1, 1, 8, 1] has 8 entries per palette; uint4 indices "
            "need 16",
        ),
        (
            lambda: mil.ConstexprLutToDenseOp(
                const(np.zeros((8, 6), np.uint8), UINT4),
                const(np.zeros((3, 1, 16, 1), np.float16), f16),
            ),
            "operand 'lut' [3, 1]: dimension 0 (3) does not divide that of operand "
            "'indices' [8, 6] (8)",
        ),
        (
            lambda: mil.ConstexprLutToDenseOp(
                const(np.zeros((8, 6), np.uint8), UINT4),
                const(np.zeros((1, 1, 16, 2), np.float16), f16),
            ),
            "property 'vector_axis' is required with vector size 2",
        ),
    ],
)
def test_invalid_inputs_name_the_operand(build, message: str):
    with pytest.raises(VerifyException, match="^mil.constexpr_") as e:
        build()
    assert message in str(e.value)


def test_ops_on_storage_types_are_rejected():
    """No computing op takes compressed data."""
    x = const(np.zeros((4,), np.uint8), UINT4)
    with pytest.raises(VerifyException, match="unsupported element type ui4"):
        mil.AddOp(x, x)


def test_sub_byte_data_out_of_range_is_an_error():
    i = const(np.full((2, 2), 20, np.uint8), UINT4)
    table = const(np.zeros((1, 1, 16, 1), np.float16), f16)
    op = mil.ConstexprLutToDenseOp(i, table)
    with pytest.raises(InterpretationError, match=r"outside \[0, 15\]"):
        run_function(program([i, table, op], [op.result]), [])


# --- printed and read back ---------------------------------------------------


def compressed_program() -> tuple[builtin.ModuleOp, dict[str, np.ndarray]]:
    """Both ops on weight consts (blob data: int4, uint4, uint6) and on small
    inline consts, feeding a conv so that they are used as MIL weights."""
    weights = {
        "w4.data": rng.integers(-8, 8, (16, 32, 1, 1)).astype(np.int8),
        "w4.scale": rng.random((16, 4, 1, 1)).astype(np.float16),
        "lut.indices": rng.integers(0, 16, (16, 32, 1, 1)).astype(np.uint8),
        "lut.lut": rng.standard_normal((4, 1, 1, 1, 16, 1)).astype(np.float16),
        "six.indices": rng.integers(0, 64, (16, 32, 1, 1)).astype(np.uint8),
        "six.lut": rng.standard_normal((1, 1, 1, 1, 64, 1)).astype(np.float16),
    }
    ops = []

    def weight(name, t):
        op = mil.ConstOp.from_weight(name, t)
        ops.append(op)
        return op

    w4 = mil.ConstexprBlockwiseShiftScaleOp(
        weight("w4.data", tensor((16, 32, 1, 1), INT4)),
        weight("w4.scale", tensor((16, 4, 1, 1), f16)),
    )
    lut = mil.ConstexprLutToDenseOp(
        weight("lut.indices", tensor((16, 32, 1, 1), UINT4)),
        weight("lut.lut", tensor((4, 1, 1, 1, 16, 1), f16)),
    )
    six = mil.ConstexprLutToDenseOp(
        weight("six.indices", tensor((16, 32, 1, 1), UINT6)),
        weight("six.lut", tensor((1, 1, 1, 1, 64, 1), f16)),
    )
    small_i = const(np.array([[1, 2, 3], [0, 3, 2]], np.uint8), UINT2)
    small_l = const(np.arange(4, dtype=np.float16).reshape(1, 1, 4, 1), f16)
    small = mil.ConstexprLutToDenseOp(small_i, small_l)
    small_d = const(np.array([[-8, 7, 1]], np.int8), INT4)
    small_s = const(np.array([[0.5]], np.float16), f16)
    small_q = mil.ConstexprBlockwiseShiftScaleOp(small_d, small_s)
    ops += [w4, lut, six, small_i, small_l, small, small_d, small_s, small_q]
    for op, name in (
        (w4, "w4"),
        (lut, "lut"),
        (six, "six"),
        (small, "s"),
        (small_q, "q"),
    ):
        op.result.name_hint = name
    x = builtin.TensorType(f16, [1, 32, 1, 4])
    f = func.FuncOp(
        "main",
        (
            (x,),
            [tensor((1, 16, 1, 4), f16)] * 3 + [small.result.type, small_q.result.type],
        ),
    )
    arg = f.body.block.args[0]
    convs = [mil.ConvOp(arg, w.result) for w in (w4, lut, six)]
    f.body.block.add_ops(
        [
            *ops,
            *convs,
            func.ReturnOp(*[c.result for c in convs], small.result, small_q.result),
        ]
    )
    module = builtin.ModuleOp([f])
    module.verify()
    return module, weights


def test_protobuf_loads_in_coremltools_with_our_numbers(tmp_path: Path):
    """coremltools' loader rebuilds every op (type inference) and its
    re-export matches; the values it decompresses (its value inference) are
    the interpreter's, and sub-byte data keeps its dtype through the blob."""
    from coremltools.converters.mil.frontend.milproto.load import load as load_milproto
    from coremltools.converters.mil.mil import types

    from xdsl_ane.interpreter.mil import blockwise_shift_scale, lut_to_dense

    module, weights = compressed_program()
    proto = module_to_proto(module, weights)
    assert proto.validate().ok
    proto.write_weights(tmp_path / "weights")
    loaded = load_milproto(
        proto.spec, specification_version=9, file_weights_dir=tmp_path / "weights"
    )
    ops = {
        op.outputs[0].name: op
        for op in loaded.functions["main"].operations
        if op.op_type.startswith("constexpr_")
    }
    assert set(ops) == {"w4", "lut", "six", "s", "q"}
    for name, op in ops.items():
        theirs = op.materialized_val_inference()
        if op.op_type == "constexpr_lut_to_dense":
            ours = lut_to_dense(op.indices.val, op.lut.val, None)
        else:
            ours = blockwise_shift_scale(op.data.val, op.scale.val, None)
        np.testing.assert_array_equal(ours, theirs, err_msg=name)
    np.testing.assert_array_equal(
        ops["lut"].indices.val, weights["lut.indices"]
    )  # read back from the packed blob
    assert types.builtin_to_string(ops["lut"].indices.dtype) == "uint4"
    assert types.builtin_to_string(ops["six"].indices.dtype) == "uint6"
    assert types.builtin_to_string(ops["w4"].data.dtype) == "int4"
    assert types.builtin_to_string(ops["s"].indices.dtype) == "uint2"


def test_blob_packs_sub_byte_data(tmp_path: Path):
    blob = WeightBlob()
    values = {
        "int4": rng.integers(-8, 8, 37).astype(np.int8),
        "uint4": rng.integers(0, 16, 37).astype(np.uint8),
        "uint6": rng.integers(0, 64, 37).astype(np.uint8),
        "uint2": rng.integers(0, 4, 37).astype(np.uint8),
    }
    entries = {
        dtype: blob.add(dtype, dtype, (37,), dtype, value)
        for dtype, value in values.items()
    }
    assert entries["int4"].nbytes == 19 and entries["uint6"].nbytes == 28
    path = blob.write(tmp_path / "weight.bin")
    reader = BlobFile(path)
    for dtype, value in values.items():
        np.testing.assert_array_equal(
            reader.read(entries[dtype].offset, dtype, (37,)), value
        )


def test_mil_text_round_trip(tmp_path: Path):
    module, weights = compressed_program()
    text, _ = module_to_mil_text(module, weights)
    assert "tensor<uint4, [16, 32, 1, 1]>(BLOBFILE(" in text
    assert "tensor<uint6, [16, 32, 1, 1]>(BLOBFILE(" in text
    assert "tensor<uint2, [2, 3]>([1, 2, 3, 0, 3, 2])" in text
    assert "tensor<int4, [1, 3]>([-8, 7, 1])" in text
    directory = write_mil_text_dir(module, weights, tmp_path / "model")
    imported, imported_weights = read_mil_file(directory / "model.mil")
    again, _ = module_to_mil_text(imported, imported_weights)
    assert again == text
    inputs = [rng.standard_normal((1, 32, 1, 4)).astype(np.float16)]
    for a, b in zip(
        run_function(module, inputs, weights),
        run_function(imported, inputs, imported_weights),
    ):
        np.testing.assert_array_equal(a, b)


def test_mil_text_parameters_as_attributes():
    """Hand-written kernels give const parameters as attributes; both forms
    import to the same op."""
    body = 'tensor<fp16, [2, 3]> w = constexpr_lut_to_dense({args})[{attrs}name = string("w")];'
    literal_i = "tensor<uint2, [2, 3]>([1, 2, 3, 0, 3, 2])"
    literal_l = "tensor<fp16, [1, 1, 4, 1]>([0x0p+0, 0x1p+0, 0x1p+1, 0x1.8p+1])"
    forms = [
        body.format(args=f"indices = {literal_i}, lut = {literal_l}", attrs=""),
        body.format(args="", attrs=f"indices = {literal_i}, lut = {literal_l}, "),
        body.format(args=f"indices = {literal_i}", attrs=f"lut = {literal_l}, "),
    ]
    results = []
    for statement in forms:
        text = (
            "program(1.3)\n{\n    func main<ios18>() {\n        "
            + statement
            + "\n    } -> (w);\n}\n"
        )
        module, weights = parse_mil_text(text)
        (value,) = run_function(module, [], weights)
        results.append(value)
    expected = np.array([[1, 2, 3], [0, 3, 2]], np.float16)
    for value in results:
        np.testing.assert_array_equal(value, expected)


def test_vector_axis_prints_and_imports(tmp_path: Path):
    i = const(rng.integers(0, 4, (4, 3)).astype(np.uint8), UINT2)
    table = const(rng.standard_normal((2, 1, 4, 3)).astype(np.float16), f16)
    op = mil.ConstexprLutToDenseOp(i, table, vector_axis=1)
    op.result.name_hint = "w"
    module = program([i, table, op], [op.result])
    text, _ = module_to_mil_text(module, {})
    assert (
        'int32 w_vector_axis = const()[name = string("w_vector_axis"), val = int32(1)];'
        in text
    )
    directory = write_mil_text_dir(module, {}, tmp_path / "model")
    imported, weights = read_mil_file(directory / "model.mil")
    (a,) = run_function(module, [])
    (b,) = run_function(imported, [], weights)
    np.testing.assert_array_equal(a, b)
    assert isinstance(op.result.type, TensorType) and op.result.type.get_shape() == (
        4,
        9,
    )


def test_ios17_has_no_compressed_ops():
    module, weights = compressed_program()
    from xdsl_ane.errors import XdslAneError

    with pytest.raises(
        XdslAneError, match="needs deployment target iOS18 or later, not iOS17"
    ):
        module_to_proto(module, weights, target="iOS17")

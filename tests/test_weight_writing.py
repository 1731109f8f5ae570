"""How the weights reach the disk: a weight const printed for the blob keeps
a reference to the weights' own array (`DeferredWeight`) and is converted
only as the blob is written, through its view, into a reused buffer; the
`.mlpackage` is laid out by coremltools' `ModelPackage` with the blob
written straight into it. Checked against the eager conversion the
interpreter does and against the package `coremltools.models.MLModel`
writes for the same spec and blob."""

from __future__ import annotations

import json
from pathlib import Path

import coremltools as ct
import numpy as np
import pytest
from coremltools.proto import Model_pb2
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, TensorType
from xdsl.dialects.func import Func
from xdsl.parser import Parser

from xdsl_ane.backend.milproto import module_to_proto
from xdsl_ane.backend.mlpackage import (
    discard_temporary_package,
    print_and_save_mlpackage,
)
from xdsl_ane.backend.validate import validate
from xdsl_ane.backend.weights import (
    BlobStream,
    DeferredWeight,
    WeightBlob,
    quiet_coremltools,
)
from xdsl_ane.dialects import mil
from xdsl_ane.dialects.mil import MIL
from xdsl_ane.dialects.typing import ints_prop
from xdsl_ane.errors import XdslAneError
from xdsl_ane.weights.store import WeightStore

PROGRAM = """
func.func @f(%x: tensor<1x8x1x4xf16>, %y: tensor<1x16x1x4xf16>) -> (tensor<1x16x1x4xf16>, tensor<1x8x1x4xf16>) {
  %w = mil.const weight "proj" {weight_shape = array<i64: 16, 8>} : tensor<16x8x1x1xf16>
  %a = mil.conv %x, %w : (tensor<1x8x1x4xf16>, tensor<16x8x1x1xf16>) -> tensor<1x16x1x4xf16>
  %t = mil.const weight "proj" {weight_shape = array<i64: 16, 8>, perm = array<i64: 1, 0>} : tensor<8x16x1x1xf16>
  %b = mil.conv %y, %t : (tensor<1x16x1x4xf16>, tensor<8x16x1x1xf16>) -> tensor<1x8x1x4xf16>
  %g = mil.const weight "gain" : tensor<1x8x1x4xf16>
  %c = mil.mul %b, %g : (tensor<1x8x1x4xf16>, tensor<1x8x1x4xf16>) -> tensor<1x8x1x4xf16>
  %e = mil.const weight "bias" : tensor<1x16x1x4xf32>
  %e16 = mil.cast %e {dtype = "fp16"} : (tensor<1x16x1x4xf32>) -> tensor<1x16x1x4xf16>
  %d = mil.add %a, %e16 : (tensor<1x16x1x4xf16>, tensor<1x16x1x4xf16>) -> tensor<1x16x1x4xf16>
  func.return %d, %c : tensor<1x16x1x4xf16>, tensor<1x8x1x4xf16>
}
"""


def weights() -> dict[str, np.ndarray]:
    """fp32 data for fp16 consts (converted when written), an fp16 one kept
    as it is, an fp32 one for an fp32 const; values that round in fp16."""
    rng = np.random.default_rng(0)
    return {
        "proj": rng.standard_normal((16, 8)).astype(np.float32) / 3,
        "gain": rng.standard_normal((1, 8, 1, 4)).astype(np.float16),
        "bias": rng.standard_normal((1, 16, 1, 4)).astype(np.float32) / 7,
    }


def printed(given: dict[str, np.ndarray] | None = None):
    ctx = Context()
    for dialect in (Builtin, Func, MIL):
        ctx.load_dialect(dialect)
    module = Parser(ctx, PROGRAM).parse_module()
    module.verify()
    return module, module_to_proto(module, weights() if given is None else given)


def test_blob_weights_are_deferred_and_written_as_converted_eagerly():
    """Every weight in the blob is a DeferredWeight holding the weights'
    own array (no converted copy at print time), and the written blob is
    byte for byte the one of the interpreter's conversion (view, then
    cast), the transposed view included."""
    given = weights()
    module, result = printed(given)
    entries = result.blob.entries
    assert [e.source for e in entries] == ["proj", "proj", "gain", "bias"]
    for entry in entries:
        assert isinstance(entry.data, DeferredWeight)
        assert entry.data.array is given[entry.source]
    store = WeightStore(given)
    eager = WeightBlob()
    for op in module.walk():
        if isinstance(op, mil.ConstOp) and op.weight is not None:
            t = op.result.type
            assert isinstance(t, TensorType)
            data = store.get(
                op.weight.data,
                t,
                "test",
                file_shape=op.file_shape(),
                perm=ints_prop(op.properties, "perm"),
            )
            dtype = {np.float16: "fp16", np.float32: "fp32"}[data.dtype.type]
            key = (op.weight.data, op.file_shape(), ints_prop(op.properties, "perm"))
            eager.add(key, dtype, data.shape, op.weight.data, data)
    assert [(e.offset, e.dtype, e.shape) for e in eager.entries] == [
        (e.offset, e.dtype, e.shape) for e in entries
    ]
    with_eager = type(result)(
        result.spec, eager, result.deployment, result.function_names
    )
    assert result.weight_bytes() == with_eager.weight_bytes()


def test_deferred_weight_as_array_is_the_stores_value():
    module, result = printed()
    store = WeightStore(weights())
    transposed = next(
        op
        for op in module.walk()
        if isinstance(op, mil.ConstOp) and ints_prop(op.properties, "perm")
    )
    t = transposed.result.type
    assert isinstance(t, TensorType)
    expected = store.get("proj", t, "test", (16, 8), (1, 0))
    (entry,) = [e for e in result.blob.entries if e.shape == (8, 16, 1, 1)]
    value = np.asarray(entry.data)
    assert value.dtype == expected.dtype
    np.testing.assert_array_equal(value, expected)


def package_files(path: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(path)): p.read_bytes()
        for p in sorted(path.rglob("*"))
        if p.is_file()
    }


def manifest_items(files: dict[str, bytes]) -> list[dict[str, str]]:
    """The manifest's items without their generated identifiers, the root
    model marked."""
    manifest = json.loads(files.pop("Manifest.json"))
    root = manifest["rootModelIdentifier"]
    items = []
    for identifier, item in manifest["itemInfoEntries"].items():
        items.append({**item, "root": str(identifier == root)})
    return sorted(items, key=lambda item: item["path"])


def test_package_is_the_one_mlmodel_writes(tmp_path: Path):
    """The same files as `MLModel(spec, weights_dir=...).save(...)` — the
    manifest up to its generated identifiers, the same spec, the blob byte
    for byte — and it loads back as the spec and validates."""
    _, result = printed()
    ours = result.save(tmp_path / "ours.mlpackage")
    weights_dir = tmp_path / "weights"
    result.write_weights(weights_dir)
    with quiet_coremltools():
        model = ct.models.MLModel(
            result.spec, weights_dir=str(weights_dir), skip_model_load=True
        )
        try:
            model.save(str(tmp_path / "theirs.mlpackage"))
        finally:
            discard_temporary_package(model)
    our_files = package_files(ours)
    their_files = package_files(tmp_path / "theirs.mlpackage")
    assert manifest_items(our_files) == manifest_items(their_files)
    spec_file = "Data/com.apple.CoreML/model.mlmodel"
    # MLModel writes the spec it parsed back, whose map entries may be
    # serialized in another order: the same message.
    specs = [
        Model_pb2.Model.FromString(f.pop(spec_file)) for f in (our_files, their_files)
    ]
    assert specs[0] == specs[1] == result.spec
    assert our_files == their_files
    with quiet_coremltools():
        loaded = ct.models.MLModel(str(ours), skip_model_load=True)
        spec = ct.utils.load_spec(str(ours))
    assert loaded.get_spec() == result.spec == spec
    weight_file = ours / "Data" / "com.apple.CoreML" / "weights" / "weight.bin"
    assert validate(spec, weight_file.parent).ok


def test_package_printed_while_written_is_the_same_package(tmp_path: Path):
    """`print_and_save_mlpackage` (the blob written on a thread while the
    protobuf is printed, as `CompiledModel.save` does) gives the files of
    printing first and saving after, and the same printed model."""
    module, result = printed()
    given = weights()
    streamed = print_and_save_mlpackage(
        lambda blob: module_to_proto(module, given, blob=blob),
        tmp_path / "streamed.mlpackage",
    )
    result.save(tmp_path / "after.mlpackage")
    ours = package_files(tmp_path / "streamed.mlpackage")
    theirs = package_files(tmp_path / "after.mlpackage")
    assert manifest_items(ours) == manifest_items(theirs)
    assert ours == theirs
    assert streamed.spec == result.spec
    assert [(e.offset, e.dtype, e.shape) for e in streamed.blob.entries] == [
        (e.offset, e.dtype, e.shape) for e in result.blob.entries
    ]
    assert streamed.blob.sink is not None
    assert {p.name for p in tmp_path.iterdir()} == {
        "streamed.mlpackage",
        "after.mlpackage",
    }


def test_a_failure_while_printing_and_writing_leaves_nothing(tmp_path: Path):
    """A printer that fails after planning part of the blob, and a blob entry
    without data: the error reaches the caller, the writer thread has
    stopped, and nothing is left beside the output."""
    module, _ = printed()
    given = weights()

    def fails(blob: WeightBlob):
        module_to_proto(module, given, blob=blob)
        raise XdslAneError("printing failed")

    out = tmp_path / "x.mlpackage"
    with pytest.raises(XdslAneError, match="printing failed"):
        print_and_save_mlpackage(fails, out)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(XdslAneError, match="printed without weights"):
        print_and_save_mlpackage(lambda blob: module_to_proto(module, blob=blob), out)
    assert list(tmp_path.iterdir()) == []


def test_blob_stream_reports_a_writer_failure(tmp_path: Path):
    """An entry without data stops the writer; the stream keeps the error
    for the caller rather than raising it out of the block."""
    stream = BlobStream(tmp_path / "weight.bin")
    with stream as blob:
        blob.add("a", "fp16", (4,), "a", np.ones(4, np.float16))
        blob.add("b", "fp16", (4,), "b", None)
        blob.add("c", "fp16", (4,), "c", np.ones(4, np.float16))
    assert isinstance(stream.error, XdslAneError)
    assert "no data for weight 'b'" in str(stream.error)


def test_prefetched_fp16_copies_write_the_same_blob(tmp_path: Path):
    """`xdsl_ane.compile` converts fp32 weights to fp16 on a thread while
    the passes run (`Fp16Prefetch`); the package is byte for byte the one
    written without it, the copies are freed once it is saved and the
    interpreter's switch interval is as it was."""
    import sys

    import xdsl_ane
    from xdsl_ane.models.transformer import (
        QWEN3_0_6B,
        build_decoder_layer,
        make_weights,
    )

    interval = sys.getswitchinterval()
    config = QWEN3_0_6B.with_(
        hidden_size=64,
        num_heads=2,
        num_kv_heads=1,
        head_dim=32,
        ffn_size=128,
        seq_len=8,
    )
    module = build_decoder_layer(config)
    given = make_weights(module, config, 0)
    model = xdsl_ane.compile(module, weights=given)
    assert model.prefetch is not None
    model.prefetch.thread.join()
    assert len(model.prefetch.copies) == len(given)
    model.save(tmp_path / "prefetched.mlpackage")
    assert model.prefetch is None
    plain = xdsl_ane.compile(build_decoder_layer(config), weights=given)
    plain.release_prefetch()  # written without the copies
    plain.save(tmp_path / "plain.mlpackage")
    ours = package_files(tmp_path / "prefetched.mlpackage")
    theirs = package_files(tmp_path / "plain.mlpackage")
    assert manifest_items(ours) == manifest_items(theirs)
    assert ours == theirs
    assert sys.getswitchinterval() == interval


def blob_test_data(dtype: str, count: int, rng: np.random.Generator) -> np.ndarray:
    """`count` random values of a blob dtype, in its numpy holder."""
    from xdsl_ane.backend.weights import BLOB_NUMPY_DTYPES, SUB_BYTE_BITS

    holder = BLOB_NUMPY_DTYPES[dtype]
    if dtype in SUB_BYTE_BITS:
        bits = SUB_BYTE_BITS[dtype]
        low, high = (
            (-(1 << bits - 1), 1 << bits - 1) if dtype == "int4" else (0, 1 << bits)
        )
        return rng.integers(low, high, count).astype(holder)
    if holder.kind == "f":
        return rng.standard_normal(count).astype(holder)
    info = np.iinfo(holder)
    return rng.integers(info.min, info.max, count, dtype=holder, endpoint=True)


def direct_writes_work(directory: Path) -> bool:
    """Whether this system and `directory`'s file system take O_DIRECT."""
    import os

    if not hasattr(os, "O_DIRECT"):
        return False
    try:
        os.close(os.open(directory / "probe", os.O_WRONLY | os.O_CREAT | os.O_DIRECT))
    except OSError:
        return False
    return True


@pytest.mark.parametrize("route", ["buffered", "direct", "direct refused"])
def test_blob_writer_writes_coremltools_bytes_for_every_dtype(
    tmp_path: Path, monkeypatch, route: str
):
    """`BlobWriter` (Python's writes, without the GIL) writes the file
    coremltools' `_BlobStorageWriter` writes, byte for byte, for every blob
    dtype and lengths that leave sub-byte padding bits (packing in blocks
    of a few elements here), at the same offsets; coremltools' reader
    reads the values back. The same through page cache alone, with the
    writes past the first 200 bytes direct (a stage of two blocks: many
    stages, the last padded and cut), and where the file system refuses
    direct writes (EINVAL: the rest buffered)."""
    import errno
    import os

    import xdsl_ane.backend.milblob as milblob
    from xdsl_ane.backend.weights import BLOB_NUMPY_DTYPES, BlobFile

    with quiet_coremltools():
        from coremltools.libmilstoragepython import _BlobStorageWriter

    monkeypatch.setattr(milblob, "PACK_BLOCK", 16)
    if route != "buffered":
        if not direct_writes_work(tmp_path):
            pytest.skip("no O_DIRECT here")
        monkeypatch.setattr(milblob, "DIRECT_AFTER", 200)
        monkeypatch.setattr(milblob, "DIRECT_STAGE", 2 * milblob.DIRECT_ALIGNMENT)
    if route == "direct refused":

        def refused(*args):
            raise OSError(errno.EINVAL, "Invalid argument")

        monkeypatch.setattr(os, "pwrite", refused)
    rng = np.random.default_rng(0)
    ours = milblob.BlobWriter(tmp_path / "ours.bin")
    theirs = _BlobStorageWriter(str(tmp_path / "theirs.bin"))
    written = []
    for dtype in BLOB_NUMPY_DTYPES:
        method = "float" if dtype == "fp32" else dtype
        for count in (1, 7, 10, 33, 100):
            data = blob_test_data(dtype, count, rng)
            given = data.view(np.uint16) if dtype == "fp16" else data
            expected = getattr(theirs, f"write_{method}_data")(given)
            assert ours.write(dtype, data) == expected, (dtype, count)
            written.append((expected, dtype, data))
    file = ours.file
    ours.close()
    assert (file.direct_bytes > 0) == (route == "direct")
    del theirs  # closes its file
    assert (tmp_path / "ours.bin").read_bytes() == (
        tmp_path / "theirs.bin"
    ).read_bytes()
    blob = BlobFile(tmp_path / "ours.bin")
    for offset, dtype, data in written:
        np.testing.assert_array_equal(blob.read(offset, dtype, data.shape), data)


def test_blob_writer_names_a_value_out_of_its_sub_byte_range(tmp_path: Path):
    from xdsl_ane.backend.milblob import BlobWriter

    writer = BlobWriter(tmp_path / "w.bin")
    with pytest.raises(
        XdslAneError, match=r"uint4 data: .*max value is 15, but got 16"
    ):
        writer.write("uint4", np.array([1, 16], np.uint8))


def test_blob_writer_lets_other_threads_run_while_it_writes(tmp_path: Path):
    """A write of a large tensor releases the GIL (coremltools' writer holds
    it for the whole write): a Python loop beside it runs in the middle of
    the write, so the printer and the passes go on while the weights are
    written."""
    import threading
    import time

    from xdsl_ane.backend.milblob import BlobWriter

    data = np.ones(128 << 20, np.float16)  # 256 MB
    writer = BlobWriter(tmp_path / "w.bin")
    done = threading.Event()
    seen: list[float] = []

    def beside() -> None:
        while not done.is_set():
            seen.append(time.perf_counter())

    thread = threading.Thread(target=beside)
    thread.start()
    try:
        start = time.perf_counter()
        writer.write("fp16", data)
        end = time.perf_counter()
    finally:
        done.set()
        thread.join()
    writer.close()
    quarter = (end - start) / 4
    assert any(start + quarter < t < end - quarter for t in seen)

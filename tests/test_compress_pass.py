"""`mil-compress-weights` and `--compress`: the error bound against
coremltools' own compression on the same tensor, every mode compiled,
validated and interpreted to the decompressed numbers, the compile
summary, the head and embedding settings, and one-line errors."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import f16

import xdsl_ane
from tests.cli_helpers import cli, error_line
from xdsl_ane.backend.weights import quiet_coremltools
from xdsl_ane.dialects import mil
from xdsl_ane.dialects.typing import tensor
from xdsl_ane.interpreter.core import random_inputs, run_function
from xdsl_ane.models.transformer import QWEN3_0_6B, build_decoder_layer, make_weights
from xdsl_ane.passes.compress_weights import (
    CompressionPlan,
    CompressionSetting,
    WeightUse,
    compress_array,
    compress_module,
)

with quiet_coremltools():
    import coremltools as ct
    import coremltools.optimize.coreml as cto
    from coremltools.converters.mil import Builder as mb
    from coremltools.converters.mil.mil import types as ct_types
    from coremltools.converters.mil.mil.ops.defs.iOS18.compression import (
        constexpr_blockwise_shift_scale as ct_shift_scale,
    )
    from coremltools.converters.mil.mil.ops.defs.iOS18.compression import (
        constexpr_lut_to_dense as ct_lut,
    )

SMALL = dataclasses.replace(
    QWEN3_0_6B,
    hidden_size=128,
    num_heads=4,
    num_kv_heads=2,
    head_dim=32,
    ffn_size=256,
    seq_len=8,
)
CONV = WeightUse("linear", 0, 1)


def relative_error(decompressed: np.ndarray, weight: np.ndarray) -> float:
    w = weight.astype(np.float64)
    return float(
        np.linalg.norm(decompressed.astype(np.float64) - w) / np.linalg.norm(w)
    )


def ours(weight: np.ndarray, setting: CompressionSetting) -> np.ndarray:
    """The weight as our constexpr op decompresses it."""
    compressed = compress_array(weight, setting, CONV, "w")
    (_, a, _), (_, b, _) = compressed.inputs
    if compressed.op is mil.ConstexprLutToDenseOp:
        return ct_lut.decompress(a, b, None)
    return ct_shift_scale.decompress(a, b, None)


def coremltools_compressed(weight: np.ndarray, config) -> np.ndarray:
    """The weight as coremltools' `palettize_weights` / `linear_quantize_weights`
    compress it in a one-conv model (its constexpr op's value)."""

    @mb.program(
        input_specs=[mb.TensorSpec((1, weight.shape[1], 1, 4), ct_types.fp16)],
        opset_version=ct.target.iOS18,
    )
    def prog(x):
        return mb.conv(x=x, weight=weight, name="y")

    with quiet_coremltools():
        model = ct.convert(
            prog,
            convert_to="mlprogram",
            minimum_deployment_target=ct.target.iOS18,
            skip_model_load=True,
        )
        op_config, optimize = config
        compressed = optimize(model, cto.OptimizationConfig(global_config=op_config))
        from coremltools.converters.mil.frontend.milproto.load import load

        program = load(
            compressed.get_spec(),
            specification_version=9,
            file_weights_dir=compressed.weights_dir,
        )
    (op,) = [
        o
        for o in program.functions["main"].operations
        if o.op_type.startswith("constexpr_")
    ]
    return op.materialized_val_inference()


WEIGHT = (np.random.default_rng(0).standard_normal((64, 128, 1, 1)) * 0.02).astype(
    np.float16
)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("mode", "ct_config"),
    [
        ("lut4:per-tensor", dict(nbits=4, granularity="per_tensor")),
        (
            "lut4:per-grouped-channel:16",
            dict(nbits=4, granularity="per_grouped_channel", group_size=16),
        ),
        (
            "lut6:per-grouped-channel:16",
            dict(nbits=6, granularity="per_grouped_channel", group_size=16),
        ),
    ],
)
def test_kmeans_error_at_most_coremltools(mode: str, ct_config: dict):
    setting = CompressionSetting.parse(mode)
    theirs = coremltools_compressed(
        WEIGHT,
        (
            cto.OpPalettizerConfig(mode="kmeans", weight_threshold=0, **ct_config),
            cto.palettize_weights,
        ),
    )
    error, bound = (
        relative_error(ours(WEIGHT, setting), WEIGHT),
        relative_error(theirs, WEIGHT),
    )
    assert error <= bound, (error, bound)


@pytest.mark.parametrize(
    ("mode", "ct_config"),
    [
        ("int8:per-channel", dict(dtype="int8", granularity="per_channel")),
        (
            "int4:per-block:32",
            dict(dtype="int4", granularity="per_block", block_size=32),
        ),
    ],
)
def test_linear_error_at_most_coremltools(mode: str, ct_config: dict):
    setting = CompressionSetting.parse(mode)
    theirs = coremltools_compressed(
        WEIGHT,
        (
            cto.OpLinearQuantizerConfig(
                mode="linear_symmetric", weight_threshold=0, **ct_config
            ),
            cto.linear_quantize_weights,
        ),
    )
    error, bound = (
        relative_error(ours(WEIGHT, setting), WEIGHT),
        relative_error(theirs, WEIGHT),
    )
    assert error <= bound, (error, bound)


def decompressed_consts(
    module: builtin.ModuleOp, weights: dict[str, np.ndarray]
) -> tuple[builtin.ModuleOp, dict[str, np.ndarray]]:
    """The module with each constexpr op replaced by a weight const of the
    values coremltools' decompression gives its inputs."""
    module = module.clone()
    weights = dict(weights)
    for op in list(module.walk()):
        if not isinstance(
            op, mil.ConstexprLutToDenseOp | mil.ConstexprBlockwiseShiftScaleOp
        ):
            continue
        values = []
        for operand in op.operands:
            const = operand.owner
            assert isinstance(const, mil.ConstOp) and const.weight is not None
            values.append(weights[const.weight.data])
        if isinstance(op, mil.ConstexprLutToDenseOp):
            dense = ct_lut.decompress(values[0], values[1], None)
        else:
            dense = ct_shift_scale.decompress(values[0], values[1], None)
        name = f"decompressed.{len(weights)}"
        weights[name] = dense
        replacement = mil.ConstOp.from_weight(name, op.result.type)
        op.parent_block().insert_op_before(replacement, op)
        op.result.replace_all_uses_with(replacement.result)
        op.parent_block().erase_op(op)
    return module, weights


@pytest.fixture(scope="module")
def small_layer():
    module = build_decoder_layer(SMALL)
    return module, make_weights(module, SMALL, 0)


@pytest.mark.slow
@pytest.mark.parametrize(
    "mode",
    ["int8", "int4", "lut4", "lut6", "lut8", "lut4:per-tensor", "int4:per-channel"],
)
def test_every_mode_compiles_validates_and_interprets(small_layer, mode: str):
    module, weights = small_layer
    model = xdsl_ane.compile(module, weights=weights, compress=mode)
    kinds = {
        op.name for op in model.module.walk() if op.name.startswith("mil.constexpr_")
    }
    lut = mode.startswith("lut")
    assert kinds == {
        "mil.constexpr_lut_to_dense" if lut else "mil.constexpr_blockwise_shift_scale"
    }
    assert model.compression is not None and len(model.compression.weights) == 7
    assert model.validate().ok
    # the interpreter's numbers are those of MIL's decompression
    (function,) = model.functions
    inputs = random_inputs(function, 1)
    plain, plain_weights = decompressed_consts(model.module, model.weights)
    for a, b in zip(
        run_function(model.module, inputs, model.weights),
        run_function(plain, inputs, plain_weights),
    ):
        np.testing.assert_array_equal(a, b)
    # the report's errors are those of the decompressed weights
    bits = {"int8": 8, "int4": 4, "lut4": 4, "lut6": 6, "lut8": 8}[mode.split(":")[0]]
    worst = max(w.relative_error for w in model.compression.weights)
    assert 0 < worst < {8: 0.02, 6: 0.05, 4: 0.15}[bits]


def test_summary_reports_weight_and_output_errors(small_layer):
    module, weights = small_layer
    model = xdsl_ane.compile(module, weights=weights, compress="int8")
    summary = model.summary()
    assert "compression: 7 weights (int8 per-channel)" in summary
    assert "relative error mean 0.00" in summary
    line = next(s for s in summary.splitlines() if "output error vs fp16" in s)
    error = float(line.split("output error vs fp16: ")[1].split()[0])
    assert 0 < error < 0.05
    # the blob holds int8 data: about half the fp16 bytes
    fp16 = xdsl_ane.compile(module, weights=weights)
    assert model.weight_bytes() < 0.55 * fp16.weight_bytes()


def embedding_and_head_module(vocab=64, hidden=64):
    """gather(embedding) -> conv(up) -> conv(lm_head): the three kinds."""
    ids = tensor((1, 4), builtin.i32)
    table = mil.ConstOp.from_weight("embed_tokens.weight", tensor((vocab, hidden), f16))
    up = mil.ConstOp.from_weight(
        "layers.0.mlp.up_proj.weight", tensor((hidden, hidden, 1, 1), f16)
    )
    head = mil.ConstOp.from_weight("lm_head.weight", tensor((vocab, hidden, 1, 1), f16))
    f = func.FuncOp("main", ((ids,), (tensor((1, vocab, 1, 4), f16),)))
    (x,) = f.body.block.args
    gathered = mil.GatherOp(table, x, axis=0)
    transposed = mil.TransposeOp(gathered.result, [0, 2, 1])
    reshaped = mil.ReshapeOp(transposed.result, [1, hidden, 1, 4])
    hidden_state = mil.ConvOp(reshaped.result, up.result)
    logits = mil.ConvOp(hidden_state.result, head.result)
    ops = [table, up, head, gathered, transposed, reshaped, hidden_state, logits]
    f.body.block.add_ops([*ops, func.ReturnOp(logits.result)])
    module = builtin.ModuleOp([f])
    module.verify()
    rng = np.random.default_rng(0)
    weights = {
        "embed_tokens.weight": rng.standard_normal((vocab, hidden)).astype(np.float32),
        "layers.0.mlp.up_proj.weight": rng.standard_normal(
            (hidden, hidden, 1, 1)
        ).astype(np.float32),
        "lm_head.weight": rng.standard_normal((vocab, hidden, 1, 1)).astype(np.float32),
    }
    return module, weights


def test_head_and_embedding_settings():
    module, weights = embedding_and_head_module()
    lut4, lut6 = CompressionSetting.parse("lut4"), CompressionSetting.parse("lut6")
    plan = CompressionPlan(lut4, lut6, None, min_size=1024)
    report = compress_module(module, plan, weights)
    settings = {w.name: w.setting.mode for w in report.weights}
    assert settings == {"layers.0.mlp.up_proj.weight": "lut4", "lm_head.weight": "lut6"}
    kept = [
        op
        for op in module.walk()
        if isinstance(op, mil.ConstOp) and op.weight is not None
    ]
    assert "embed_tokens.weight" in {op.weight.data for op in kept}
    assert weights["lm_head.weight.indices"].max() < 64
    module.verify()
    # the embedding compressed too, per its own setting
    module, weights = embedding_and_head_module()
    plan = CompressionPlan(lut4, lut6, CompressionSetting.parse("int8"), min_size=1024)
    report = compress_module(module, plan, weights)
    assert {w.name: w.setting.mode for w in report.weights}[
        "embed_tokens.weight"
    ] == "int8"
    gather = next(op for op in module.walk() if isinstance(op, mil.GatherOp))
    assert isinstance(gather.x.owner, mil.ConstexprBlockwiseShiftScaleOp)


# --- bad input: one line, nothing written ----------------------------------------


@pytest.fixture(scope="module")
def layer_files(tmp_path_factory, small_layer):
    from xdsl_ane.outputs import save_npz

    module, weights = small_layer
    directory = tmp_path_factory.mktemp("layer")
    (directory / "layer.mlir").write_text(str(module))
    save_npz(directory / "layer.npz", weights)
    return directory


@pytest.mark.parametrize(
    ("flags", "needles"),
    [
        (["--compress", "lut5"], ["unknown compression mode 'lut5'", "did you mean"]),
        (["--compress", "int8:per-chanel"], ["unknown granularity 'per-chanel'"]),
        (["--compress", "lut4:per-block"], ["per-block does not apply to lut4"]),
        (
            ["--compress", "lut4:per-grouped-channel:24"],
            ["group 24 does not divide the", "output channels of weight"],
        ),
        (["--compress", "int4:per-block:48"], ["block size 48 does not divide"]),
        (
            ["--compress", "int8", "--target", "iOS17"],
            ["iOS18 ops", "not in deployment target iOS17"],
        ),
        (["--compress-head", "lut6"], ["applies only with --compress"]),
        (["--compress", "lut4", "--compress-head", "lut7"], ["head=lut7"]),
    ],
)
def test_bad_settings_fail_in_one_line_writing_nothing(
    layer_files: Path, tmp_path: Path, flags: list[str], needles: list[str]
):
    out = tmp_path / "out.mlpackage"
    result = cli(
        "compile",
        str(layer_files / "layer.mlir"),
        "--weights",
        str(layer_files / "layer.npz"),
        "-o",
        str(out),
        *flags,
    )
    error_line(result, *needles)
    assert not any(tmp_path.iterdir())


def test_cli_compile_with_compress(layer_files: Path, tmp_path: Path):
    out = tmp_path / "layer.mlpackage"
    result = cli(
        "compile",
        str(layer_files / "layer.mlir"),
        "--weights",
        str(layer_files / "layer.npz"),
        "-o",
        str(out),
        "--compress",
        "int4:per-block:32",
        "--validate",
    )
    assert result.returncode == 0, result.stderr
    assert (
        "mil-compress-weights{mode=int4 granularity=per-block group=32" in result.stdout
    )
    assert "compression: 7 weights (int4 per-block 32)" in result.stdout
    assert "output error vs fp16:" in result.stdout
    assert "validated" in result.stdout
    assert out.is_dir()


def test_pass_in_a_pipeline_without_weights_names_the_weight():
    """Run as a plain pass (xdsl-opt), a weight const cannot be compressed."""
    from xdsl.context import Context
    from xdsl.utils.exceptions import PassFailedException

    from xdsl_ane.passes.compress_weights import MilCompressWeightsPass

    module, _ = embedding_and_head_module()
    with pytest.raises(
        PassFailedException,
        match="weight const 'layers.0.mlp.up_proj.weight' needs its data",
    ):
        MilCompressWeightsPass(min_size=1024).apply(Context(), module)


def test_compile_model_training_kernels_take_no_compression(tmp_path: Path):
    """The training kernels' weights are inputs: nothing to compress."""
    result = cli(
        "compile-model",
        "qwen3-0.6b",
        "--training",
        "--compress",
        "lut4",
        "-o",
        str(tmp_path / "kernels"),
    )
    error_line(result, "--compress lut4: does not apply with --training")
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("mode", ["lut4", "int4"])
def test_weights_compressed_on_threads_give_what_one_thread_gives(
    small_layer, mode: str, monkeypatch
):
    """compress_module compresses the distinct weights on threads and then
    rewrites in order: the module, the new weights and the report are those
    of one thread."""
    import xdsl_ane.passes.compress_weights as compress_weights

    module, weights = small_layer

    def compiled(threads: int):
        monkeypatch.setattr(compress_weights, "COMPRESSION_THREADS", threads)
        return xdsl_ane.compile(module, weights=weights, compress=mode)

    one, two = compiled(1), compiled(2)
    assert str(one.module) == str(two.module)
    assert one.weights.keys() == two.weights.keys()
    for name, value in one.weights.items():
        np.testing.assert_array_equal(np.asarray(value), np.asarray(two.weights[name]))
    assert one.compression.weights == two.compression.weights
    assert len(two.compression.weights) == 7


@pytest.mark.parametrize("mode", ["int4", "int8"])
def test_linear_quantization_a_few_rows_at_a_time_is_all_at_once(
    small_layer, mode: str, monkeypatch
):
    """quantize_linear runs over ROWS_AT_ONCE elements' rows at a time and
    the squared norms NORM_BLOCK elements at a time: the weights are
    those of one pass over the whole tensor, the errors the same to
    float64 rounding."""
    import xdsl_ane.passes.compress_weights as compress_weights
    import xdsl_ane.passes.compression.linear as linear

    module, weights = small_layer

    def compiled(rows: int, block: int):
        monkeypatch.setattr(linear, "ROWS_AT_ONCE", rows)
        monkeypatch.setattr(compress_weights, "NORM_BLOCK", block)
        return xdsl_ane.compile(module, weights=weights, compress=mode)

    whole, parts = compiled(1 << 40, 1 << 40), compiled(100, 1000)
    assert str(whole.module) == str(parts.module)
    assert whole.weights.keys() == parts.weights.keys()
    for name, value in whole.weights.items():
        np.testing.assert_array_equal(
            np.asarray(value), np.asarray(parts.weights[name])
        )
    errors = [(w.name, w.relative_error) for w in whole.compression.weights]
    assert [name for name, _ in errors] == [w.name for w in parts.compression.weights]
    np.testing.assert_allclose(
        [e for _, e in errors],
        [w.relative_error for w in parts.compression.weights],
        rtol=1e-12,
    )

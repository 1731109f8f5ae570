"""compile-llm at scale, on tiny checkpoints: a tied embedding and LM head
stored once in the weight blob; the size guard that splits a model whose
weights pass --max-package-size into chained packages (generating what
the unsplit package generates); the checkpoint read tensor by tensor."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from llm_checkpoints import write_checkpoint

from xdsl_ane.api.llm import PackageRunner
from xdsl_ane.api.llm_compile import compile_llm
from xdsl_ane.tools.cli import main
from xdsl_ane.weights.checkpoint import read_checkpoint

PROMPT = [5, 17, 200, 3, 99]
SHAPE = dict(context=32, prefill=4, chunk=128)


@pytest.fixture(scope="module")
def tied(tmp_path_factory):
    """A tied two-layer Qwen3 in bf16."""
    directory = tmp_path_factory.mktemp("tied") / "ckpt"
    write_checkpoint(directory, "qwen3", True, "bfloat16")
    return directory


def fp16_bytes(checkpoint, package) -> int:
    """The model's fp16 weights: each checkpoint tensor once, and the RoPE
    tables (which are not in the checkpoint)."""
    tensors = read_checkpoint(checkpoint).tensors
    rope = [w for name, w in package.weights.items() if name.startswith("rope")]
    return 2 * (
        sum(int(np.prod(t.shape)) for t in tensors.values()) + sum(w.size for w in rope)
    )


def test_tied_table_is_stored_once(tied, tmp_path):
    """The embedding's gather tables and the head's 1x1-conv weights are
    the same rows in different shapes: one blob record each, read by both
    functions' gather and conv; the blob file is within 2% of the fp16
    weights (records and alignment)."""
    package = compile_llm(tied, **SHAPE)
    package.save(tmp_path / "t.mlpackage")
    (blob,) = (tmp_path / "t.mlpackage").rglob("weight.bin")
    weights = fp16_bytes(tied, package)
    assert weights <= blob.stat().st_size <= 1.02 * weights
    references = [
        line
        for line in package.compiled.mil_text.splitlines()
        if " model_embed_tokens_weight_0_100_" in line and "BLOBFILE" in line
    ]
    assert len(references) == 4  # gather and conv in prefill and decode
    offsets = {line.split("offset = uint64(")[1].split(")")[0] for line in references}
    assert len(offsets) == 1


def blob_sizes(path) -> dict[str, int]:
    return {
        blob.parts[len(path.parts)]: blob.stat().st_size
        for blob in sorted(path.rglob("weight.bin"))
    }


@pytest.mark.parametrize("mode", ["int4", "lut4:per-tensor"])
def test_tied_table_compressed_once(tied, tmp_path, monkeypatch, mode):
    """With the embedding compressed as the head, the gather [V, D] and the
    head conv [V, D, 1, 1] compress the table to the same values: one blob
    record each, read through a reshape, so the blob is what compressing
    it twice writes less the second copy, and the package generates the
    same logits."""
    import xdsl_ane.passes.compress_weights as compress_weights

    options = dict(SHAPE, compress=mode, compress_embedding="same")
    once = compile_llm(tied, **options)
    once.compiled.validate().raise_if_failed()  # coremltools' loader reads it
    once.save(tmp_path / "once.mlpackage")
    monkeypatch.setattr(compress_weights, "shared_sources", lambda *args: None)
    twice = compile_llm(tied, **options)
    twice.save(tmp_path / "twice.mlpackage")

    def table(package) -> list:
        return [
            e
            for e in package.compiled.proto.blob.entries
            if e.source.startswith("model.embed_tokens")
        ]

    assert all(e.dtype in ("int4", "uint4", "fp16") for e in table(once))
    assert len(table(twice)) == 2 * len(table(once)) > 0
    copy = sum(e.nbytes for e in table(twice)[len(table(once)) :])
    (size_once,) = blob_sizes(tmp_path / "once.mlpackage").values()
    (size_twice,) = blob_sizes(tmp_path / "twice.mlpackage").values()
    records = 128 * len(table(once))  # each record's metadata and padding
    assert size_twice - copy - records <= size_once <= size_twice - copy
    tokens, logits = PackageRunner(tmp_path / "once.mlpackage").generate(PROMPT, 4)
    expected_tokens, expected = PackageRunner(tmp_path / "twice.mlpackage").generate(
        PROMPT, 4
    )
    assert tokens == expected_tokens
    for got, want in zip(logits, expected):
        np.testing.assert_array_equal(got, want)


def test_size_guard_splits_and_generates_the_same(tied, tmp_path, capsys):
    """Past --max-package-size the model is split as --layers-per-package
    splits it, saying why; the tied table's embedding and head share the
    package embed_head (stored once); generation equals the unsplit
    package's."""
    common = ["--context", "32", "--prefill", "4", "--chunk", "128"]
    whole, split = tmp_path / "whole.mlpackage", tmp_path / "split"
    assert main(["compile-llm", str(tied), "-o", str(whole), *common]) == 0
    assert "  split:" not in capsys.readouterr().out
    args = ["compile-llm", str(tied), "-o", str(split), *common]
    assert main(args + ["--max-package-size", "100KB"]) == 0
    out = capsys.readouterr().out
    assert re.search(
        r"\n  split: the weights, about 1[89]\d KB, exceed --max-package-size "
        r"100 KB: 3 packages\n",
        out,
    )
    manifest = json.loads((split / "manifest.json").read_text())["llm"]
    packages = manifest["packages"]
    assert [(p["name"], p["path"]) for p in packages] == [
        ("embed", "embed_head.mlpackage"),
        ("layers_0-0", "layers_0-0.mlpackage"),
        ("layers_1-1", "layers_1-1.mlpackage"),
        ("head", "embed_head.mlpackage"),
    ]
    assert packages[0]["function_names"] == {
        "prefill": "embed_prefill",
        "decode": "embed_decode",
    }
    sizes = blob_sizes(split)
    assert max(sizes.values()) <= 100 * 1024
    (unsplit,) = blob_sizes(whole).values()
    # each layers package has its own RoPE tables (4 of [32, 8]); the rest once
    rope = 4 * 32 * 8 * 2 + 4 * 64
    assert sum(sizes.values()) <= unsplit + (len(sizes) - 1) * rope
    tokens, logits = PackageRunner(split).generate(PROMPT, 8)
    whole_tokens, whole_logits = PackageRunner(whole).generate(PROMPT, 8)
    assert tokens == whole_tokens
    for got, expected in zip(logits, whole_logits):
        np.testing.assert_array_equal(got, expected)


def test_size_guard_with_layers_per_package(tied, tmp_path, capsys):
    """--layers-per-package still splits a model that fits, and a limit
    splits its runs further; a unit alone over the limit, or a .mlpackage
    name for a split output, is one line and writes nothing."""
    common = ["--context", "32", "--prefill", "4", "--chunk", "128"]
    out = tmp_path / "k"
    args = ["compile-llm", str(tied), "-o", str(out), *common]
    assert main(args + ["--layers-per-package", "2"]) == 0
    assert "  split: --layers-per-package 2: 2 packages\n" in capsys.readouterr().out
    names = [
        p["name"]
        for p in json.loads((out / "manifest.json").read_text())["llm"]["packages"]
    ]
    assert names == ["embed", "layers_0-1", "head"]
    out = tmp_path / "k1"
    args = ["compile-llm", str(tied), "-o", str(out), *common]
    assert (
        main(args + ["--layers-per-package", "2", "--max-package-size", "100KB"]) == 0
    )
    assert "; at most 2 layers each: 3 packages" in capsys.readouterr().out
    for size, message in [
        (
            "60KB",
            "the layer 0 alone holds 74.9 KB of weights, over --max-package-size "
            "60 KB (raise it, or compress with --compress)",
        ),
        ("12", "the embed alone holds"),
        ("1 parsec", "--max-package-size 1 parsec: expected bytes or a size like 1GB"),
        ("0", "--max-package-size 0: must be at least 1 byte"),
    ]:
        bad = tmp_path / f"bad{size}"
        args = ["compile-llm", str(tied), "-o", str(bad), *common]
        assert main(args + ["--max-package-size", size]) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err, err
        assert not bad.exists()
    named = tmp_path / "named.mlpackage"
    args = ["compile-llm", str(tied), "-o", str(named), *common]
    assert main(args + ["--max-package-size", "100KB"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and re.search(
        r"named.mlpackage: split \(the weights, about 1[89]\d KB, exceed "
        r"--max-package-size 100 KB\), the output is a directory of packages; name "
        r"it without .mlpackage",
        err,
    )
    assert not list(tmp_path.glob("named*"))


@pytest.fixture(scope="module")
def gemma4(tmp_path_factory):
    """A tied four-layer Gemma 4 text in bf16 (its per-layer projection in
    the embedding's package, its per-layer embedding in a file beside)."""
    directory = tmp_path_factory.mktemp("gemma4") / "ckpt"
    write_checkpoint(directory, "gemma4_text", True, "bfloat16")
    return directory


def test_the_embeddings_package_is_planned_as_it_compresses(gemma4):
    """In the embedding's package, as mil-compress-weights tells them
    apart: the gathered table compresses as the embedding, Gemma 4's
    per-layer projection as a linear weight; its per-layer table is not
    in the package (a file beside it)."""
    from xdsl_ane.models.hf_config import llm_config
    from xdsl_ane.models.llm import Decoder, LlmShape
    from xdsl_ane.models.llm_packages import Compression, llm_units

    config = llm_config(read_checkpoint(gemma4))
    decoder = Decoder(config, LlmShape(32, 4, 512))
    embed = llm_units(decoder, Compression("int4", embedding="int8"))[0]
    assert {name: how for name, how in embed.sizes if how != "fp16"} == {
        "model.embed_tokens.weight": "int8 per-block 32",
        "model.per_layer_model_projection.weight": "int4 per-block 32",
    }


@pytest.mark.parametrize("mode", [None, "lut4:per-tensor", "int4", "int8"])
@pytest.mark.parametrize("family", ["qwen3", "gemma4_text"])
def test_package_size_estimates_bound_the_blobs(tied, gemma4, family, mode):
    """The plan's sizes are at least what each package's blob holds, and
    within a few records of it (Gemma 4's layers, of many small weights
    and so many records, within a few records per weight; its embedding's
    package, its per-layer table compressed as an embedding and its
    projection as a linear weight, within a few)."""
    from xdsl_ane.models.hf_config import llm_config
    from xdsl_ane.models.llm import Decoder, LlmShape
    from xdsl_ane.models.llm_packages import (
        Compression,
        llm_units,
        plan_packages,
        position_bytes,
    )

    checkpoint = tied if family == "qwen3" else gemma4
    config = llm_config(read_checkpoint(checkpoint))
    shape = LlmShape(32, 4, 512)
    units = llm_units(Decoder(config, shape), Compression(mode))
    plan = plan_packages(units, None, 1, config.tied, position_bytes(shape))
    assert plan is not None
    package = compile_llm(
        checkpoint,
        context=32,
        prefill=4,
        chunk=512,
        layers_per_package=1,
        compress=mode,
        fp16_check=False,
    )
    from xdsl_ane.models.llm_packages import RECORD_BYTES

    for part in package.parts:
        written = part.compiled.proto.blob.next_offset
        estimate = plan.sizes[part.record["path"].removesuffix(".mlpackage")]
        slack = 8192
        if family == "gemma4_text" and part.record["layers"]:
            slack += 3 * RECORD_BYTES * len(part.weights)
        assert written <= estimate <= written + slack


def test_checkpoint_tensors_are_read_where_used(tied, tmp_path, monkeypatch):
    """llm_weights reads nothing: each weight is a CheckpointTensor (rows
    of the table for a chunk); converted a few rows at a time, the blob is
    the one of the whole tensors, and a lazy tensor reads as the tensor."""
    import xdsl_ane.weights.lazy as lazy_weights
    from xdsl_ane.weights.checkpoint import CheckpointTensor

    package = compile_llm(tied, **SHAPE)
    assert all(
        isinstance(w, CheckpointTensor)
        for name, w in package.weights.items()
        if not name.startswith("rope")
    )
    package.save(tmp_path / "whole.mlpackage")
    monkeypatch.setattr(lazy_weights, "CONVERT_BLOCK", 100)  # a row or two at a time
    compile_llm(tied, **SHAPE).save(tmp_path / "blocks.mlpackage")
    (whole,) = (tmp_path / "whole.mlpackage").rglob("weight.bin")
    (blocks,) = (tmp_path / "blocks.mlpackage").rglob("weight.bin")
    assert whole.read_bytes() == blocks.read_bytes()
    checkpoint = read_checkpoint(tied)
    name = "model.embed_tokens.weight"
    table = checkpoint.tensor(name)
    lazy = checkpoint.lazy(name).rows(100, 200)
    np.testing.assert_array_equal(np.asarray(lazy), table[100:200])
    np.testing.assert_array_equal(lazy.read_rows(3, 9), table[103:109])
    np.testing.assert_array_equal(np.asarray(lazy.scaled(0.5)), table[100:200] * 0.5)


@pytest.mark.parametrize("family", ["qwen3", "gemma3_text"])
def test_calibration_a_part_at_a_time(tmp_path, family):
    """The fp16 check runs the embedding and each layer apart (one layer's
    weights in memory at a time) and finds the maxima of the whole probe
    program exactly."""
    from dataclasses import replace

    from xdsl_ane.interpreter.core import StatefulRuntime
    from xdsl_ane.models.calibration import residual_maxima
    from xdsl_ane.models.hf_config import llm_config
    from xdsl_ane.models.llm import Decoder, LlmShape

    write_checkpoint(tmp_path / "ckpt", family, True, "bfloat16")
    checkpoint = read_checkpoint(tmp_path / "ckpt")
    config = llm_config(checkpoint)
    shape = LlmShape(32, 4, 128)
    prompts = [[5, 17, 200, 3, 99, 7], [1, 2, 3]]
    probe = replace(shape, probe=True)
    module = Decoder(config, probe).build()
    weights = Decoder(config, probe).weights(checkpoint, module)
    count = config.num_layers + 1
    whole = np.zeros(count)
    for prompt in prompts:
        runtime = StatefulRuntime(module, weights)
        for start in range(0, len(prompt), 4):
            ids = np.zeros(4, np.int32)
            ids[: len(prompt[start : start + 4])] = prompt[start : start + 4]
            out = runtime.call("prefill", [ids, np.array([start], np.int32)])
            whole = np.maximum(whole, [float(o.reshape(-1)[0]) for o in out[-count:]])
    decoder = Decoder(config, shape)
    assert residual_maxima(checkpoint, decoder, prompts) == list(whole)


def test_gemma4_e2b_fits_packages_of_1gb():
    """A Gemma-4-E2B-shaped config (no weights: the plan's estimates):
    its per-layer table, 262144 × 35 · 256 (4.7 GB in fp16), is the file
    beside the packages, not in the embedding's package, so the model
    splits into packages of at most 1 GB; with the table the embedding's
    package alone would hold over 5 GB."""
    from pathlib import Path

    from xdsl_ane.models.hf_config import llm_config
    from xdsl_ane.models.llm import Decoder, LlmShape
    from xdsl_ane.models.llm_packages import (
        DEFAULT_MAX_PACKAGE_SIZE,
        Compression,
        llm_units,
        plan_packages,
        position_bytes,
    )
    from xdsl_ane.models.per_layer_inputs import per_layer_shape
    from xdsl_ane.weights.checkpoint import Checkpoint

    transformers = pytest.importorskip("transformers")
    saved = transformers.Gemma4TextConfig(
        hidden_size=1536,
        intermediate_size=6144,
        num_hidden_layers=35,
        num_attention_heads=8,
        num_key_value_heads=1,
        head_dim=256,
        global_head_dim=512,
        num_kv_shared_layers=20,
        use_double_wide_mlp=True,
        hidden_size_per_layer_input=256,
        vocab_size=262144,
        vocab_size_per_layer_input=262144,
        tie_word_embeddings=True,
    ).to_dict()
    saved["architectures"] = ["Gemma4ForCausalLM"]
    config = llm_config(Checkpoint(Path("ckpt"), saved))
    table = 2 * int(np.prod(per_layer_shape(config)))
    assert per_layer_shape(config) == (262144, 35 * 256)
    assert table > 4 * 2**30
    shape = LlmShape(context=512, prefill=64)
    units = llm_units(Decoder(config, shape), Compression())
    embed = units[0]
    assert not any("per_layer.weight" in name for name, _ in embed.sizes)
    assert embed.bytes + table > 5 * 2**30  # the embedding's package before
    limit = DEFAULT_MAX_PACKAGE_SIZE
    plan = plan_packages(units, limit, None, config.tied, position_bytes(shape))
    assert plan is not None  # ~5 GB of weights: split
    assert max(plan.sizes.values()) <= limit
    assert embed.bytes <= plan.sizes["embed_head"] < limit  # (the final norm)


def test_compressed_runs_stay_within_the_program_limit():
    """Compressed, a run of layers is also kept within ane-lint's limit
    per program on the fp16 weights (the lint runs before compression);
    the embedding and a tied head share a package where both fit."""
    from xdsl_ane.models.llm_packages import Unit, plan_packages

    gib = 1 << 30

    def unit(name, part, layers, size, fp16):
        return Unit(name, part, layers, {(name, "c"): size}, {(name, "f"): fp16})

    units = [unit("embed", "embed", None, gib // 4, gib // 4)]
    units += [unit(f"layer {i}", "layers", (i, i + 1), gib // 8, gib) for i in range(5)]
    units.append(unit("head", "head", None, gib // 8, gib // 4))
    plan = plan_packages(units, gib, None, tied=True)
    assert plan is not None
    assert [p[0] for p in plan.parts] == [
        "embed",
        "layers_0-1",
        "layers_2-3",
        "layers_4-4",
        "head",
    ]
    assert plan.parts[0][3] == plan.parts[-1][3] == "embed_head"
    assert plan_packages(units, None, None, tied=True) is None  # no limit asked

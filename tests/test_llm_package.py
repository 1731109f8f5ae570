"""compile-llm and generate: the stateful multifunction package of a tiny
checkpoint passes coremltools' loader with both functions and their
states, shares one weight blob, is in ANE form, and generates transformers'
tokens in fp16 through the interpreter; split into packages
(--layers-per-package) it gives the unsplit package's tokens and logits;
bad input gives one line and writes nothing."""

from __future__ import annotations

import json

import numpy as np
import pytest
from cli_helpers import saved_output_names
from llm_checkpoints import write_checkpoint

import xdsl_ane.api.llm_compile as llm_compile
from xdsl_ane.api.llm import PackageRunner, reference_generate, write_part
from xdsl_ane.api.llm_compile import compile_llm
from xdsl_ane.errors import XdslAneError
from xdsl_ane.frontend.milproto import read_compiled
from xdsl_ane.passes.layouts import ane_form_problems
from xdsl_ane.tools.cli import main

# Compiles and runs LLM checkpoints against transformers: -m 'not slow' skips them.
pytestmark = pytest.mark.slow


PROMPT = [5, 17, 200, 3, 99]


@pytest.mark.parametrize(
    "family,tied,argmax",
    [
        ("qwen3", False, False),
        ("llama", True, True),
        ("qwen2", True, False),
        ("mistral", False, False),
        ("gemma", True, False),
        ("phi3", False, True),
        ("gemma3_text", True, False),
        ("gemma2", True, False),
        ("gpt_neox", False, False),
        ("gpt2", True, False),
        ("starcoder2", False, False),
        ("granite", False, False),
        ("smollm3", True, False),
        ("olmo2", False, False),
        ("cohere", True, False),
    ],
)
def test_package_generates_transformers_tokens(tmp_path, family, tied, argmax):
    checkpoint = tmp_path / "ckpt"
    write_checkpoint(checkpoint, family, tied, "bfloat16")
    package = compile_llm(checkpoint, context=32, prefill=4, chunk=128, argmax=argmax)
    report = package.validate()
    assert report.ok, str(report)
    spec = package.compiled.proto.spec
    functions = {f.name: f for f in spec.description.functions}
    assert set(functions) == {"prefill", "decode"}
    # Gemma 2 and 3's first layer slides (window 6): its cache is a ring of 6
    ring = family in ("gemma2", "gemma3_text")
    for f in functions.values():
        states = {s.name: list(s.type.stateType.arrayType.shape) for s in f.state}
        # NeoX and GPT-2 have no grouped heads
        kv_heads = 4 if family in ("gpt_neox", "gpt2") else 2
        full = [1 if ring else 2, kv_heads, 32, 16]
        local = {"local_key_cache": [1, kv_heads, 6, 16]} if ring else {}
        local |= {"local_value_cache": [1, kv_heads, 6, 16]} if ring else {}
        assert states == {"key_cache": full, "value_cache": full} | local
    for f in package.compiled.functions:
        assert ane_form_problems(f, fp16=True) == []
    # one blob for both functions: each fp16 weight once (twice would be
    # 4 bytes per parameter; blob records and alignment add some)
    params = sum(w.size for w in package.weights.values())
    assert 2 * params <= package.compiled.weight_bytes() < 3 * params
    out = tmp_path / "llm.mlpackage"
    package.save(out)
    manifest = json.loads((tmp_path / "llm.manifest.json").read_text())["llm"]
    assert manifest["head_chunks"] == [[0, 100], [100, 200], [200, 300]]
    assert manifest["outputs"] == (
        ["next_token"] if argmax else ["logits_0", "logits_1", "logits_2"]
    )
    tokens, logits = PackageRunner(out).generate(PROMPT, 16)
    ref_tokens, ref_logits = reference_generate(checkpoint, PROMPT, 16)
    assert tokens == ref_tokens
    for got, ref in zip(logits, ref_logits):
        np.testing.assert_allclose(got, ref, rtol=2e-2, atol=2e-2 * np.abs(ref).max())


def test_cli_compile_llm_and_generate(tmp_path, capsys):
    checkpoint = tmp_path / "ckpt"
    write_checkpoint(checkpoint, "qwen3", False, "float16", "40KB")
    out = tmp_path / "q.mlpackage"
    args = [
        "compile-llm",
        str(checkpoint),
        "-o",
        str(out),
        "--context",
        "32",
        "--prefill",
        "8",
        "--chunk",
        "128",
    ]
    assert main(args + ["--validate"]) == 0
    assert "validated" in capsys.readouterr().out
    assert main(args) == 1
    assert "already exists (use --force" in capsys.readouterr().err
    assert (
        main(
            [
                "generate",
                str(out),
                "--prompt-ids",
                "5,17,200",
                "--max-new-tokens",
                "4",
                "--reference",
                str(checkpoint),
            ]
        )
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "prompt: 5,17,200"
    new = lines[1].removeprefix("tokens: ").split(",")
    assert len(new) == 4 and lines[2] == f"reference: {','.join(new)}"
    assert "largest logit difference" in lines[3] and lines[4] == "same tokens"


def test_split_packages_chain_like_the_unsplit_one(tmp_path, capsys):
    checkpoint = tmp_path / "ckpt"
    write_checkpoint(checkpoint, "qwen3", False, "float32", layers=4)
    common = ["--context", "32", "--prefill", "4", "--chunk", "128"]
    split, whole = tmp_path / "split", tmp_path / "whole.mlpackage"
    args = ["compile-llm", str(checkpoint), "-o", str(split), *common]
    assert main(args + ["--layers-per-package", "2", "--validate"]) == 0
    assert main(["compile-llm", str(checkpoint), "-o", str(whole), *common]) == 0
    capsys.readouterr()
    manifest = json.loads((split / "manifest.json").read_text())["llm"]
    names = ["embed", "layers_0-1", "layers_2-3", "head"]
    assert [p["name"] for p in manifest["packages"]] == names
    assert sorted(f.name for f in split.iterdir()) == sorted(
        ["manifest.json", "generation_config.json"]  # copied from the checkpoint
        + [f"{n}.mlpackage" for n in names]
        + [f"{n}.manifest.json" for n in names]
    )
    cache = [2, 2, 32, 16]
    for part in manifest["packages"]:
        program = read_compiled(split / part["path"])
        functions = {f.sym_name.data: f for f in program.module.ops}
        assert set(functions) == {"prefill", "decode"}
        states = {"key_cache": cache, "value_cache": cache} if part["layers"] else {}
        assert {k: v["shape"] for k, v in part["states"].items()} == states
        for f in functions.values():
            args = [a.name_hint for a in f.body.block.args]
            assert args == part["inputs"] + list(states)
        # The record's outputs are Core ML's, in both functions; a renamed
        # one says which later input it feeds.
        saved = saved_output_names(split / part["path"])
        assert saved == {"prefill": part["outputs"], "decode": part["outputs"]}
        expected_feeds = {"hidden_states_output": "hidden_states"}
        assert part["feeds"] == (expected_feeds if part["layers"] else {})
    assert manifest["packages"][-1]["outputs"] == ["logits_0", "logits_1", "logits_2"]
    tokens, logits = PackageRunner(split).generate(PROMPT, 16)
    whole_tokens, whole_logits = PackageRunner(whole).generate(PROMPT, 16)
    ref_tokens, ref_logits = reference_generate(checkpoint, PROMPT, 16)
    assert tokens == whole_tokens == ref_tokens
    for got, unsplit, ref in zip(logits, whole_logits, ref_logits):
        np.testing.assert_array_equal(got, unsplit)
        np.testing.assert_allclose(got, ref, rtol=2e-2, atol=2e-2 * np.abs(ref).max())
    command = ["generate", str(split), "--prompt-ids", "5,17", "--max-new-tokens", "3"]
    assert main(command) == 0
    assert capsys.readouterr().out.splitlines()[1] == "tokens: " + ",".join(
        map(str, PackageRunner(split).generate([5, 17], 3)[0])
    )
    # each layers package holds its own slice of the cache, written up to
    # the position of the last token fed back (the last new one is not)
    runner = PackageRunner(split)
    runner.generate(PROMPT, 4)
    written = len(PROMPT) + 3
    for part, runtime in runner.parts:
        held = {k: v.value for k, v in runtime.states.items()}
        assert set(held) == set(part["states"])
        for value in held.values():
            assert list(value.shape) == cache
            assert np.abs(value[:, :, :written]).sum(axis=(0, 1, 3)).all()
            assert not value[:, :, written:].any()


def test_bad_input_writes_nothing(tmp_path, capsys):
    checkpoint = tmp_path / "ckpt"
    write_checkpoint(checkpoint, "qwen3")
    capsys.readouterr()  # transformers' own progress output
    out = tmp_path / "x.mlpackage"
    assert (
        main(["compile-llm", str(checkpoint), "-o", str(out), "--context", "300"]) == 1
    )
    err = capsys.readouterr().err
    assert (
        err.count("\n") == 1
        and "context 300 is beyond the model's max_position_embeddings 256" in err
    )
    config = json.loads((checkpoint / "config.json").read_text())
    (checkpoint / "config.json").write_text(
        json.dumps(config | {"architectures": ["BertModel"]})
    )
    assert (
        main(["compile-llm", str(checkpoint), "-o", str(out), "--context", "32"]) == 1
    )
    assert "supported: Qwen3ForCausalLM" in capsys.readouterr().err
    (checkpoint / "model.safetensors").unlink()
    assert main(["compile-llm", str(checkpoint), "-o", str(out)]) == 1
    assert (
        "no model.safetensors or model.safetensors.index.json"
        in capsys.readouterr().err
    )
    write_checkpoint(checkpoint, "qwen3")
    capsys.readouterr()
    for bad, message in [
        (["-o", str(out), "--layers-per-package", "2"], "output is a directory"),
        (["-o", str(tmp_path / "d"), "--layers-per-package", "0"], "at least 1"),
    ]:
        command = ["compile-llm", str(checkpoint), "--context", "32", "--prefill", "4"]
        assert main(command + bad) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err
    assert not (tmp_path / "d").exists()
    assert not out.exists() and not (tmp_path / "x.manifest.json").exists()


def test_compressed_package_keeps_the_tokens(tmp_path, capsys):
    """--compress on compile-llm: the linear layers' weights become iOS18
    constexpr ops (the embedding table stays fp16), the package validates
    with its states, and it generates what the uncompressed package does."""
    checkpoint = tmp_path / "ckpt"
    write_checkpoint(checkpoint, "qwen3", False, "float32")
    common = [str(checkpoint), "--context", "32", "--prefill", "4", "--chunk", "128"]
    plain, packed = tmp_path / "plain.mlpackage", tmp_path / "int8.mlpackage"
    assert main(["compile-llm", *common, "-o", str(plain)]) == 0
    assert (
        main(
            [
                "compile-llm",
                *common,
                "-o",
                str(packed),
                "--compress",
                "int8",
                "--validate",
            ]
        )
        == 0
    )
    summary = capsys.readouterr().out
    assert "validated" in summary and "compress" in summary
    program = read_compiled(packed)
    ops = {op.name for op in program.module.walk()}
    assert "mil.constexpr_blockwise_shift_scale" in ops
    assert (packed / "Data").exists()
    size = sum(f.stat().st_size for f in packed.rglob("*") if f.is_file())
    plain_size = sum(f.stat().st_size for f in plain.rglob("*") if f.is_file())
    assert size < 0.8 * plain_size
    tokens, logits = PackageRunner(packed).generate(PROMPT, 8)
    ref_tokens, ref_logits = PackageRunner(plain).generate(PROMPT, 8)
    assert tokens == ref_tokens
    for got, ref in zip(logits, ref_logits):
        scale = np.abs(ref).max()
        assert np.abs(got.astype(np.float32) - ref).max() <= 5e-2 * scale
    error = main(
        [
            "compile-llm",
            *common,
            "-o",
            str(tmp_path / "x.mlpackage"),
            "--compress",
            "int9",
        ]
    )
    assert error == 1 and not (tmp_path / "x.mlpackage").exists()


@pytest.mark.parametrize("count", [1, 2, 6])
def test_max_new_tokens_counts_as_transformers(tiny_llm, count):
    """--max-new-tokens N gives N new tokens, the prefill's the first, as
    transformers' generate(max_new_tokens=N) does, and the same ones."""
    import torch
    import transformers

    checkpoint, whole = tiny_llm.checkpoint, tiny_llm.whole
    tokens, logits = PackageRunner(whole).generate(PROMPT, count)
    model = transformers.AutoModelForCausalLM.from_pretrained(
        checkpoint, dtype=torch.float32
    )
    expected = model.generate(
        torch.tensor([PROMPT]), max_new_tokens=count, do_sample=False
    )[0, len(PROMPT) :].tolist()
    assert len(tokens) == len(logits) == count
    assert tokens == expected == reference_generate(checkpoint, PROMPT, count)[0]


def test_generate_reference_ignores_the_stop_token(tiny_llm, tmp_path):
    """The reference runs on to N tokens as the package does, whatever the
    checkpoint's generation_config.json says (stop tokens, sampling)."""
    import shutil

    checkpoint, whole = tiny_llm.checkpoint, tiny_llm.whole
    tokens, _ = PackageRunner(whole).generate(PROMPT, 6)
    other = tmp_path / "ckpt"
    shutil.copytree(checkpoint, other)
    generation = json.loads((other / "generation_config.json").read_text())
    generation.update(eos_token_id=tokens[1], do_sample=True, repetition_penalty=9.0)
    (other / "generation_config.json").write_text(json.dumps(generation))
    assert reference_generate(other, PROMPT, 6)[0] == tokens


def test_generate_fails_where_tokens_differ(tiny_llm, tmp_path, capsys):
    """A reference of the same shape with other weights: exit 1, one line
    naming the first new token that differs."""
    whole = tiny_llm.whole
    other = tmp_path / "other"
    write_checkpoint(other, "qwen3", False, "float32", seed=1)
    capsys.readouterr()
    command = ["generate", str(whole), "--prompt-ids", "5,17,200"]
    assert main(command + ["--max-new-tokens", "3", "--reference", str(other)]) == 1
    out, err = capsys.readouterr()
    ours = PackageRunner(whole).generate([5, 17, 200], 3)[0]
    theirs = reference_generate(other, [5, 17, 200], 3)[0]
    first = next(i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b)
    assert f"tokens: {','.join(map(str, ours))}" in out
    assert err.count("\n") == 1 and err.startswith("xdsl-ane: error: ")
    assert (
        f"new token {first + 1} (position {3 + first}) differs from the reference: "
        f"{ours[first]}, transformers {theirs[first]}" in err
    )


def test_generate_checks_the_reference_first(tiny_llm, tmp_path, capsys):
    """A reference that is not the package's checkpoint fails in one line
    before any token is printed, with compile-llm's messages."""
    import shutil

    checkpoint, whole, split = tiny_llm.checkpoint, tiny_llm.whole, tiny_llm.split
    vocab, truncated = tmp_path / "vocab", tmp_path / "truncated"
    shutil.copytree(checkpoint, vocab)
    config = json.loads((vocab / "config.json").read_text())
    (vocab / "config.json").write_text(json.dumps(config | {"vocab_size": 500}))
    shutil.copytree(checkpoint, truncated)
    weights = truncated / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-1000])
    for reference, message in [
        (vocab, "vocab_size is 500, the package's is 300"),
        (tmp_path / "missing", "missing: not a checkpoint directory"),
        (truncated, "model.safetensors: not a valid safetensors file"),
    ]:
        for package in (whole, split):
            command = ["generate", str(package), "--prompt-ids", "1,2"]
            assert main(command + ["--reference", str(reference)]) == 1
            out, err = capsys.readouterr()
            assert out == "" and err.count("\n") == 1 and message in err, err


def test_run_on_a_stateful_package(tiny_llm, capsys):
    """run makes one call: a compile-llm package, split or not, or one of a
    split's packages, is pointed to generate in one line."""
    whole, split = tiny_llm.whole, tiny_llm.split
    for path in (whole, split, split / "layers_0-0.mlpackage"):
        assert main(["run", str(path), "--random", "0"]) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "stateful package" in err, err
        assert "use xdsl-ane generate" in err


def test_force_keeps_what_xdsl_ane_did_not_write(tiny_llm, tmp_path, capsys):
    """--force replaces a split model's directory, but not one holding a
    file xdsl-ane did not write there."""
    checkpoint = tiny_llm.checkpoint
    out = tmp_path / "split"
    command = ["compile-llm", str(checkpoint), "-o", str(out), "--context", "32"]
    command += ["--prefill", "4", "--layers-per-package", "1", "--force"]
    assert main(command) == 0
    assert main(command) == 0
    (out / "notes.txt").write_text("mine")
    assert main(command) == 1
    assert "holds notes.txt, which xdsl-ane did not write" in capsys.readouterr().err
    assert (out / "notes.txt").read_text() == "mine"
    assert (out / "manifest.json").is_file()


def test_split_packages_written_as_compiled_equal_a_later_save(tmp_path, monkeypatch):
    """compile_llm(output=...) writes each package once compiled and
    releases its weights; the directory is byte for byte what `save` of
    the same compile writes, and a failed compile leaves nothing."""
    checkpoint = tmp_path / "ckpt"
    write_checkpoint(checkpoint, "qwen3", False, "float32", layers=3)
    options = dict(context=32, prefill=4, chunk=128, layers_per_package=2)
    streamed = compile_llm(
        checkpoint,
        output=tmp_path / "streamed",
        compress="lut4",
        compress_head="none",
        **options,
    )
    assert streamed.written == tmp_path / "streamed"
    assert all(not p.compiled.weights for p in streamed.parts)
    assert not any(
        e.data is not None
        for p in streamed.parts
        for e in p.compiled.proto.blob.entries
    )
    assert streamed.save(tmp_path / "streamed") == tmp_path / "streamed"
    with pytest.raises(XdslAneError, match="written to .*streamed"):
        streamed.save(tmp_path / "elsewhere")
    compile_llm(checkpoint, compress="lut4", compress_head="none", **options).save(
        tmp_path / "saved"
    )
    files = sorted(
        p.relative_to(tmp_path / "saved")
        for p in (tmp_path / "saved").rglob("*")
        if p.is_file()
    )
    assert len(files) > 8
    assert files == sorted(
        p.relative_to(tmp_path / "streamed")
        for p in (tmp_path / "streamed").rglob("*")
        if p.is_file()
    )
    for name in files:  # (Manifest.json: coremltools' fresh identifiers)
        if name.name == "Manifest.json":
            continue
        assert (tmp_path / "saved" / name).read_bytes() == (
            tmp_path / "streamed" / name
        ).read_bytes(), name

    written = []

    def write_one_part(directory, part):  # fails once one package is written
        if written:
            raise XdslAneError(f"{part.name}: disk full")
        written.append(directory / part.record["path"])
        return write_part(directory, part)

    monkeypatch.setattr(llm_compile, "write_part", write_one_part)
    with pytest.raises(XdslAneError, match="disk full"):
        compile_llm(checkpoint, output=tmp_path / "failed", **options)
    assert written and written[0].parent.name.startswith(".")
    assert not written[0].parent.exists()
    assert not (tmp_path / "failed").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []

    # the next package's compile fails while the blob before is written
    import xdsl_ane.api as api

    monkeypatch.setattr(llm_compile, "write_part", write_part)
    compiles = []
    compile_module = api.compile

    def compile_one(*args, **kwargs):
        if compiles:
            raise XdslAneError("layers_0-1: out of memory")
        compiles.append(compile_module(*args, **kwargs))
        return compiles[-1]

    monkeypatch.setattr(api, "compile", compile_one)
    with pytest.raises(XdslAneError, match="out of memory"):
        compile_llm(checkpoint, output=tmp_path / "failed", **options)
    assert len(compiles) == 1 and not (tmp_path / "failed").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_package_past_the_size_limit_once_written_leaves_nothing(
    tmp_path, monkeypatch
):
    """Written as it is compiled, each package is printed as its blob is
    written (a PackageWrite, once a package), so its size is
    checked once it is on disk: past --max-package-size (here a plan made
    without the limit) the compile fails with the one-line error and the
    whole output goes."""
    import xdsl_ane.models.llm_packages as llm_packages

    checkpoint = tmp_path / "ckpt"
    write_checkpoint(checkpoint, "qwen3", False, "float32", layers=3)
    plan = llm_packages.plan_packages
    monkeypatch.setattr(
        llm_compile,
        "plan_packages",
        lambda units, limit, *rest: plan(units, None, *rest),
    )
    options = dict(
        output=tmp_path / "out", context=32, prefill=4, chunk=128, layers_per_package=2
    )
    with pytest.raises(
        XdslAneError,
        match=r"^embed: .* of weights, over max_package_size=1024 \(1 KB\)",
    ):
        compile_llm(checkpoint, max_package_size=1024, **options)
    assert list(tmp_path.iterdir()) == [checkpoint]
    import xdsl_ane.backend.mlpackage as mlpackage

    printed = []

    class Counted(mlpackage.PackageWrite):
        def __init__(self, print_proto, path, **options):
            printed.append(path.name)
            super().__init__(print_proto, path, **options)

    monkeypatch.setattr(mlpackage, "PackageWrite", Counted)
    monkeypatch.setattr(llm_packages, "plan_packages", plan)
    done = compile_llm(checkpoint, **options)
    assert sorted(printed) == sorted({p.record["path"] for p in done.parts})


def test_the_next_package_compiles_beside_the_blob_before_unless_compressed(
    tmp_path, monkeypatch
):
    """Written as compiled, an fp16 package's blob is still being written
    (its weights held) when the next package compiles; a compressed one
    is finished and released first, so memory holds one package's
    compressed data. Packages before it are released either way. (Every
    package compiled: layer packages are not stamped from the first.)"""
    import xdsl_ane.api as api

    monkeypatch.setattr(llm_compile, "stamped", lambda *args: None)
    checkpoint = tmp_path / "ckpt"
    write_checkpoint(checkpoint, "qwen3", False, "float32", layers=3)
    compile_module = api.compile

    def held_at_each_compile(compress: str | None) -> list[list[bool]]:
        """Whether each package compiled before still holds its weights,
        as each package compiles."""
        compiled: list = []
        held: list[list[bool]] = []

        def recording(*args, **kwargs):
            held.append([bool(c.weights) for c in compiled])
            compiled.append(compile_module(*args, **kwargs))
            return compiled[-1]

        monkeypatch.setattr(api, "compile", recording)
        compile_llm(
            checkpoint,
            output=tmp_path / f"out-{compress}",
            context=32,
            prefill=4,
            chunk=128,
            layers_per_package=1,
            compress=compress,
            compress_head="none",
        )
        return held

    for compress, previous_held in [(None, True), ("lut4", False)]:
        held = held_at_each_compile(compress)
        assert len(held) == 5  # embed, a package per layer, head
        for k, before in enumerate(held[1:], 1):
            assert before == [False] * (k - 1) + [previous_held], (compress, k)


@pytest.mark.parametrize(
    ("family", "per_package"),
    [("llama", 1), ("gemma3_text", 1), ("gpt_neox", 1), ("llama", 2)],
)
def test_stamped_layer_packages_are_the_packages_a_compile_writes(
    tmp_path, monkeypatch, family, per_package
):
    """A layer package whose program differs from one compiled before only
    in the tensors it reads is stamped from it (its compiled module
    cloned, the weight consts renamed) rather than compiled: every file
    of every package is byte for byte what compiling each one writes.
    Gemma 3's sliding and global layers are different programs, so each
    kind is compiled once; two layers a package, the second package is
    stamped from the first."""
    import xdsl_ane.api as api

    checkpoint = tmp_path / "ckpt"
    kinds = ["sliding_attention", "full_attention"] * 2
    extra = {"layer_types": kinds} if family == "gemma3_text" else {}
    write_checkpoint(checkpoint, family, False, "float32", layers=4, **extra)
    compile_module = api.compile
    compiles: list[int] = []

    def counting(*args, **kwargs):
        compiles.append(1)
        return compile_module(*args, **kwargs)

    monkeypatch.setattr(api, "compile", counting)
    options = dict(context=32, prefill=4, chunk=128, layers_per_package=per_package)
    compile_llm(checkpoint, output=tmp_path / "stamped", **options)
    stamped_compiles = len(compiles)
    monkeypatch.setattr(llm_compile, "stamped", lambda *args: None)
    compiles.clear()
    compile_llm(checkpoint, output=tmp_path / "compiled", **options)
    assert len(compiles) == 2 + 4 // per_package  # embed, layer packages, head
    assert stamped_compiles == (4 if family == "gemma3_text" else 3)
    files = sorted(
        p.relative_to(tmp_path / "compiled")
        for p in (tmp_path / "compiled").rglob("*")
        if p.is_file() and p.name != "Manifest.json"  # item ids are random
    )
    assert any(p.name == "weight.bin" for p in files)
    for path in files:
        ours = (tmp_path / "stamped" / path).read_bytes()
        assert ours == (tmp_path / "compiled" / path).read_bytes(), path


@pytest.mark.parametrize(
    "family, fields",
    [
        ("lfm2", {"layers": 4}),
        ("mamba2", {"layers": 2}),
        ("qwen3_5", {"layers": 4}),
        ("granitemoehybrid", {"layers": 2, "num_local_experts": 4}),
        ("gpt_oss", {"layers": 2}),
        ("gemma4_text", {"layers": 4}),
    ],
)
def test_new_mixers_split_and_compress_like_the_whole_package(tmp_path, family, fields):
    """The recurrent mixers' states and the mixtures of experts in split
    packages (one layer each) and under --compress int8: the split package
    generates the whole one's tokens and logits, the compressed split one
    the compressed whole one's tokens; each part holds its layers' states."""
    checkpoint = tmp_path / "ckpt"
    write_checkpoint(checkpoint, family, **fields)
    common = [str(checkpoint), "--context", "32", "--prefill", "4", "--chunk", "128"]
    outputs = {}
    for name, extra in [
        ("whole.mlpackage", []),
        ("split", ["--layers-per-package", "1"]),
        ("whole8.mlpackage", ["--compress", "int8"]),
        ("split8", ["--compress", "int8", "--layers-per-package", "1"]),
    ]:
        out = tmp_path / name
        assert main(["compile-llm", *common, "-o", str(out), *extra]) == 0
        outputs[name] = PackageRunner(out).generate(PROMPT + [7, 250, 11], 6)
    manifest = json.loads((tmp_path / "split" / "manifest.json").read_text())["llm"]
    for part in manifest["packages"]:
        if part["layers"]:
            assert part["states"], part["name"]
    whole, split = outputs["whole.mlpackage"], outputs["split"]
    assert split[0] == whole[0]
    for got, ref in zip(split[1], whole[1]):
        np.testing.assert_array_equal(got, ref)
    assert outputs["split8"][0] == outputs["whole8.mlpackage"][0]

"""Text in, text out: compile-llm copies the checkpoint's tokenizer files
beside the package; `generate --prompt` tokenizes as transformers does
and prints transformers' decoded continuation; `--chat` renders the chat
template as transformers' apply_chat_template; generation stops at
generation_config.json's end-of-sequence token as transformers' generate
does; a prompt longer than the prefill runs prefill in chunks, with
transformers' tokens; sampling filters the logits as transformers'
warpers and repeats with a seed; bad input is one line, nothing printed.

The tokenizer is trained here, offline, with the tokenizers package (a
byte-level BPE on a few sentences, with ChatML special tokens)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import cli, error_line, readme_example

from xdsl_ane.api.text import Sampling, TextTokenizer, render_template
from xdsl_ane.errors import XdslAneError

SENTENCES = [
    "the cat sat on the mat.",
    "the dog sat on the log.",
    "a cat and a dog met on the mat!",
    "did the cat see the dog? the dog saw the cat.",
    "we're sure the mat isn't the log.",
    "numbers: one, two, three, four.",
]

CHAT_TEMPLATE = """{% for message in messages %}
{% if message['role'] not in ['system', 'user', 'assistant'] %}
{{ raise_exception('unknown role: ' + message['role']) }}
{% endif %}
    {% if loop.first and message['role'] != 'system' %}
{{ '<|im_start|>system\\nyou are ' + ('terse' | tojson) + '<|im_end|>\\n' }}
    {% endif %}
{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + eos_token + '\\n' }}
{% endfor %}
{% if add_generation_prompt %}
{{ '<|im_start|>assistant\\n' }}
{% endif %}"""
"""A ChatML template whose output depends on transformers' settings:
trim_blocks and lstrip_blocks (the indented, undashed tags), `tojson`,
`loop`, `raise_exception` and the special-token variables."""


def write_tokenizer(
    directory: Path, kind: str = "bytes", chat_template: str | None = CHAT_TEMPLATE
) -> int:
    """A tokenizer trained on SENTENCES saved as tokenizer.json, with a
    tokenizer_config.json naming its special tokens and chat template;
    returns its vocabulary size. `bytes`: a byte-level BPE of at most 300
    tokens (the tiny checkpoints' vocabulary; random weights pick bytes
    that are not all UTF-8); `words`: a WordLevel vocabulary of the words
    and punctuation, decoded with spaces between and cleaned up as
    transformers' clean_up_tokenization_spaces does."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    if kind == "bytes":
        tokenizer = Tokenizer(models.BPE())
        tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tokenizer.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(
            vocab_size=300,
            special_tokens=special,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        )
    else:
        tokenizer = Tokenizer(models.WordLevel(unk_token="<|endoftext|>"))
        tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
        trainer = trainers.WordLevelTrainer(special_tokens=special, show_progress=False)
    tokenizer.train_from_iterator(SENTENCES, trainer)
    assert tokenizer.get_vocab_size() <= 300
    tokenizer.save(str(directory / "tokenizer.json"))
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "eos_token": "<|im_end|>",
        "pad_token": "<|endoftext|>",
        "unk_token": "<|endoftext|>",
        "clean_up_tokenization_spaces": kind == "words",
    }
    if chat_template is not None:
        config["chat_template"] = chat_template
    (directory / "tokenizer_config.json").write_text(json.dumps(config, indent=2))
    return tokenizer.get_vocab_size()


def write_words_checkpoint(directory: Path) -> None:
    """The README's tiny checkpoint: random qwen3 weights over the words
    tokenizer's vocabulary (every id a word)."""
    from llm_checkpoints import write_checkpoint

    directory.mkdir()
    size = write_tokenizer(directory, "words")
    write_checkpoint(directory, "qwen3", False, "float32", vocab_size=size)


def test_sampling_filters_are_checked():
    for options, message in [
        ({"temperature": 0.0}, "temperature=0.0: must be above 0"),
        ({"top_k": -1}, "top_k=-1: must be at least 0"),
        ({"top_p": 0.0}, "top_p=0.0: must lie in (0, 1]"),
        ({"top_p": 1.5}, "top_p=1.5"),
        ({"seed": -2}, "seed=-2"),
    ]:
        with pytest.raises(XdslAneError, match=message.replace("(", r"\(")):
            Sampling(**options)


def test_sampling_repeats_with_a_seed():
    """The same seed draws the same tokens; the draws keep to the tokens
    the filters leave."""
    logits = np.random.default_rng(0).normal(size=(20, 50)).astype(np.float32)
    sampling = Sampling(temperature=0.7, top_k=10, top_p=0.9, seed=5)

    def run(sampling):
        generator = sampling.generator()
        return [sampling.draw(row, generator) for row in logits]

    first = run(sampling)
    assert first == run(sampling)
    assert first != run(Sampling(temperature=0.7, top_k=10, top_p=0.9, seed=6))
    for row, token in zip(logits, first):
        assert np.isfinite(sampling.filter(row)[token])
    assert (np.isfinite(sampling.filter(logits)).sum(-1) <= 10).all()


def test_without_the_text_extra(tmp_path, monkeypatch):
    """Without tokenizers or jinja2, --prompt and --chat are one line
    naming the extra (the rest of xdsl-ane needs neither)."""
    (tmp_path / "tokenizer.json").write_text("{}")
    monkeypatch.setitem(__import__("sys").modules, "tokenizers", None)
    monkeypatch.setitem(__import__("sys").modules, "jinja2", None)
    with pytest.raises(XdslAneError, match=r"pip install 'xdsl-ane\[text\]'"):
        TextTokenizer({"tokenizer.json": tmp_path / "tokenizer.json"}, "p")
    with pytest.raises(
        XdslAneError, match=r"encode_chat needs the jinja2 package: pip"
    ):
        render_template("{{ 1 }}", "p")


def test_text_streams_as_decode(tmp_path):
    """The streamed pieces join to the decoded text of all the tokens, a
    character whose bytes are not all there yet held back (random ids of
    a byte-level BPE are not all UTF-8)."""
    write_tokenizer(tmp_path)
    tokenizer = TextTokenizer({"tokenizer.json": tmp_path / "tokenizer.json"}, "p")
    rng = np.random.default_rng(0)
    for _ in range(20):
        ids = [int(i) for i in rng.integers(0, 300, size=12)]
        stream = tokenizer.stream()
        pieces = [stream.push(i) for i in ids]
        assert not any(p.endswith("\ufffd") for p in pieces)
        assert "".join(pieces) + stream.finish() == tokenizer.decode(ids)


def test_chat_template_renders_chatml(tmp_path):
    write_tokenizer(tmp_path)
    files = {n: tmp_path / n for n in ("tokenizer.json", "tokenizer_config.json")}
    tokenizer = TextTokenizer(files, "p")
    rendered = tokenizer.render_chat([{"role": "user", "content": "hi"}])
    # (the newline after each {{ }} line stays: trim_blocks trims after
    # block tags alone, as transformers renders it)
    assert rendered == (
        '<|im_start|>system\nyou are "terse"<|im_end|>\n\n'
        "<|im_start|>user\nhi<|im_end|>\n\n<|im_start|>assistant\n\n"
    )
    ids = tokenizer.encode_chat([{"role": "user", "content": "hi"}])
    assert ids[0] == tokenizer.tokenizer.token_to_id("<|im_start|>")
    with pytest.raises(XdslAneError, match="does not parse"):
        render_template("{% if %}", "p")
    with pytest.raises(XdslAneError, match="may not start with '_'"):
        render_template("{% set ns = namespace(_x=1) %}", "p")


# --- against transformers ------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    "temperature,top_k,top_p",
    [(1.0, 0, 1.0), (0.7, 0, 1.0), (1.0, 5, 1.0), (1.0, 0, 0.8), (1.3, 40, 0.95)],
)
def test_filters_are_transformers_warpers(temperature, top_k, top_p):
    """Temperature, top-k and top-p give what transformers' warpers give,
    in generate's order, on random logits."""
    import torch
    from transformers.generation.logits_process import (
        LogitsProcessorList,
        TemperatureLogitsWarper,
        TopKLogitsWarper,
        TopPLogitsWarper,
    )

    processors = LogitsProcessorList()
    if temperature != 1.0:
        processors.append(TemperatureLogitsWarper(temperature))
    if top_k:
        processors.append(TopKLogitsWarper(top_k))
    if top_p < 1.0:
        processors.append(TopPLogitsWarper(top_p))
    logits = np.random.default_rng(1).normal(0, 3, size=(64, 300)).astype(np.float32)
    expected = processors(None, torch.tensor(logits)).numpy()
    got = Sampling(temperature, top_k, top_p).filter(logits)
    np.testing.assert_array_equal(np.isfinite(got), np.isfinite(expected))
    kept = np.isfinite(expected)
    np.testing.assert_allclose(got[kept], expected[kept], rtol=1e-6)


@pytest.fixture(scope="module")
def text_checkpoint(tmp_path_factory):
    """A tiny qwen3 checkpoint with the trained tokenizer, and its package
    (prefill 4)."""
    from llm_checkpoints import write_checkpoint

    root = tmp_path_factory.mktemp("text")
    checkpoint = root / "ckpt"
    write_checkpoint(checkpoint, "qwen3", False, "float32")
    write_tokenizer(checkpoint)
    package = root / "q.mlpackage"
    command = ["compile-llm", str(checkpoint), "-o", str(package)]
    result = cli(*command, "--context", "96", "--prefill", "4", "--chunk", "128")
    assert result.returncode == 0, result.stderr
    return checkpoint, package


def transformers_continuation(checkpoint: Path, ids: list[int], new: int):
    """transformers' greedy generate with the checkpoint's own generation
    config, and its tokenizer's decode of the new tokens."""
    import torch
    import transformers

    model = transformers.AutoModelForCausalLM.from_pretrained(
        checkpoint, dtype=torch.float32
    ).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(checkpoint)
    with torch.no_grad():
        out = model.generate(
            torch.tensor([ids]),
            attention_mask=torch.ones(1, len(ids), dtype=torch.long),
            max_new_tokens=new,
            do_sample=False,
            pad_token_id=0,
        )
    tokens = out[0, len(ids) :].tolist()
    return tokens, tokenizer.decode(tokens, skip_special_tokens=True)


@pytest.mark.slow
def test_compile_llm_copies_the_text_files(text_checkpoint, tmp_path):
    checkpoint, package = text_checkpoint
    manifest = json.loads(package.with_name("q.manifest.json").read_text())["llm"]
    copies = {
        "tokenizer.json": "q.tokenizer.json",
        "tokenizer_config.json": "q.tokenizer_config.json",
        "generation_config.json": "q.generation_config.json",
    }
    assert manifest["text"] == copies
    assert manifest["eos_token_id"] == []  # qwen3's small config has none
    for name, copy in copies.items():
        assert (package.parent / copy).read_bytes() == (checkpoint / name).read_bytes()
    # split: the copies under their own names inside the directory, which
    # --force replaces again
    split = tmp_path / "split"
    command = ["compile-llm", str(checkpoint), "-o", str(split), "--context", "96"]
    command += ["--prefill", "4", "--layers-per-package", "1"]
    assert cli(*command).returncode == 0
    assert json.loads((split / "manifest.json").read_text())["llm"]["text"] == {
        name: name for name in copies
    }
    assert (split / "tokenizer.json").read_bytes() == (
        checkpoint / "tokenizer.json"
    ).read_bytes()
    assert cli(*command, "--force").returncode == 0, "its own files are replaced"


@pytest.mark.slow
def test_prompt_gives_transformers_continuation(text_checkpoint):
    """--prompt TEXT: transformers' tokenizer(TEXT) ids, its greedy tokens,
    and their decoded text printed; --show-ids adds the ids. The prompt
    is 2.5 times --prefill: prefill runs three times."""
    import transformers

    checkpoint, package = text_checkpoint
    text = "the cat sat on the log. a dog sat"
    ids = transformers.AutoTokenizer.from_pretrained(checkpoint)(text).input_ids
    assert len(ids) == 10  # 2.5 prefill calls of 4
    tokens, decoded = transformers_continuation(checkpoint, ids, 12)
    result = cli("generate", str(package), "--prompt", text, "--max-new-tokens", "12")
    assert result.returncode == 0, result.stderr
    assert result.stdout == decoded + "\n"
    shown = cli(
        "generate",
        str(package),
        "--prompt",
        text,
        "--max-new-tokens",
        "12",
        "--show-ids",
    )
    assert shown.stdout.splitlines() == [
        f"prompt: {','.join(map(str, ids))}",
        *decoded.splitlines(),
        f"tokens: {','.join(map(str, tokens))}",
    ]


@pytest.mark.slow
def test_chunked_prefill_matches_transformers(text_checkpoint):
    """A prompt of 2.5 prefill lengths (and one of exactly 2): the
    package's tokens and logits are transformers'."""
    from xdsl_ane.api.llm import PackageRunner, reference_generate

    checkpoint, package = text_checkpoint
    runner = PackageRunner(package)
    for prompt in ([7, 31, 250, 4, 99, 18, 3, 120, 64, 201], [9, 8, 7, 6, 5, 4, 3, 2]):
        tokens, logits = runner.generate(prompt, 8)
        ref_tokens, ref_logits = reference_generate(checkpoint, prompt, 8)
        assert tokens == ref_tokens
        for got, ref in zip(logits, ref_logits):
            scale = np.abs(ref).max()
            np.testing.assert_allclose(got, ref, rtol=2e-2, atol=2e-2 * scale)
        runner = PackageRunner(package)  # states at zeros again


@pytest.mark.slow
def test_chat_template_is_rendered_as_transformers(text_checkpoint):
    import transformers

    from xdsl_ane.api.llm import PackageRunner

    checkpoint, package = text_checkpoint
    theirs = transformers.AutoTokenizer.from_pretrained(checkpoint)
    ours = PackageRunner(package).tokenizer()
    for messages in [
        [{"role": "user", "content": "did the cat sit?"}],
        [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "a dog"},
            {"role": "assistant", "content": "the log"},
            {"role": "user", "content": "numbers, one two"},
        ],
    ]:
        rendered = theirs.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=True
        )
        assert ours.render_chat(messages) == rendered
        ids = theirs.apply_chat_template(messages, add_generation_prompt=True)
        ids = ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids
        assert ours.encode_chat(messages) == list(ids)
    assert '<|im_start|>system\nyou are "terse"<|im_end|>\n' in ours.render_chat(
        [{"role": "user", "content": "x"}]
    )
    with pytest.raises(
        XdslAneError, match="the chat template failed: unknown role: tool"
    ):
        ours.render_chat([{"role": "tool", "content": "x"}])
    messages = [{"role": "user", "content": "did the cat sit?"}]
    ids = list(ours.encode_chat(messages))
    tokens, decoded = transformers_continuation(checkpoint, ids, 6)
    result = cli(
        "generate",
        str(package),
        "--prompt",
        messages[0]["content"],
        "--chat",
        "--max-new-tokens",
        "6",
        "--show-ids",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == f"prompt: {','.join(map(str, ids))}"
    assert result.stdout.splitlines()[-1] == f"tokens: {','.join(map(str, tokens))}"


@pytest.mark.slow
def test_generation_stops_at_the_eos_token(text_checkpoint, tmp_path):
    """generation_config.json's eos_token_id is a token the greedy run
    produces: generate stops after it, as transformers' generate with
    that generation config does, and --reference stops there too."""
    from xdsl_ane.api.llm import PackageRunner

    checkpoint, package = text_checkpoint
    prompt = [5, 17, 200, 3, 99]
    tokens, _ = PackageRunner(package).generate(prompt, 12)
    stop_at = next(i for i in range(2, 12) if tokens[i] not in tokens[:i])
    other = tmp_path / "ckpt"
    shutil.copytree(checkpoint, other)
    generation = json.loads((other / "generation_config.json").read_text())
    generation["eos_token_id"] = [tokens[stop_at], 299]
    (other / "generation_config.json").write_text(json.dumps(generation))
    out = tmp_path / "eos.mlpackage"
    command = ["compile-llm", str(other), "-o", str(out), "--context", "96"]
    assert cli(*command, "--prefill", "4", "--chunk", "128").returncode == 0
    manifest = json.loads((tmp_path / "eos.manifest.json").read_text())["llm"]
    assert manifest["eos_token_id"] == [tokens[stop_at], 299]
    expected, _ = transformers_continuation(other, prompt, 12)
    assert expected == tokens[: stop_at + 1]
    ids = ",".join(map(str, prompt))
    result = cli(
        "generate",
        str(out),
        "--prompt-ids",
        ids,
        "--max-new-tokens",
        "12",
        "--reference",
        str(other),
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[1] == f"tokens: {','.join(map(str, expected))}"
    assert lines[2] == f"reference: {','.join(map(str, expected))}"
    assert lines[-1] == "same tokens"


@pytest.mark.slow
def test_sampling_repeats_run_to_run(text_checkpoint):
    _, package = text_checkpoint
    base = ["generate", str(package), "--prompt", "the dog", "--show-ids"]
    base += ["--max-new-tokens", "10", "--temperature", "1.5", "--top-k", "50"]
    base += ["--top-p", "0.95"]
    first = cli(*base, "--seed", "3")
    assert first.returncode == 0, first.stderr
    assert cli(*base, "--seed", "3").stdout == first.stdout
    other = cli(*base, "--seed", "4")
    assert other.stdout.splitlines()[-1] != first.stdout.splitlines()[-1]
    greedy = cli("generate", str(package), "--prompt", "the dog", "--show-ids")
    assert greedy.stdout != first.stdout


@pytest.mark.slow
def test_bad_text_input_is_one_line(text_checkpoint, tmp_path):
    """A prompt longer than the context, an id outside the vocabulary, a
    missing or corrupt tokenizer file, --chat without a template, options
    that do not apply: one line each, nothing printed."""
    checkpoint, package = text_checkpoint
    copy = tmp_path / "pkg"
    copy.mkdir()
    for entry in package.parent.iterdir():
        if entry.name.startswith("q."):
            (shutil.copytree if entry.is_dir() else shutil.copy)(
                entry, copy / entry.name
            )
    pkg = str(copy / "q.mlpackage")
    long_text = " ".join(SENTENCES * 2)
    cases = [
        (["--prompt", long_text], "longer than the package's context 96"),
        (["--prompt-ids", "1,2,300"], "token id 300 is outside the package's"),
        (["--prompt", "the cat", "--max-new-tokens", "100"], "context is 96"),
        (["--prompt-ids", "1,2", "--chat"], "--chat: applies only with --prompt"),
        (["--prompt-ids", "1,2", "--seed", "1"], "--seed 1: applies only when"),
        (["--prompt", "a", "--temperature", "0"], "--temperature 0.0: must be above"),
        (
            ["--prompt-ids", "1", "--top-k", "3", "--reference", str(checkpoint)],
            "--reference: compares greedy generation",
        ),
    ]
    for options, message in cases:
        result = cli("generate", pkg, *options)
        error_line(result, message)
        assert result.stdout == "", options
    config = json.loads((copy / "q.tokenizer_config.json").read_text())
    del config["chat_template"]
    (copy / "q.tokenizer_config.json").write_text(json.dumps(config))
    error_line(
        cli("generate", pkg, "--prompt", "the cat", "--chat"), "has no chat template"
    )
    (copy / "q.tokenizer.json").write_text('{"version": "1.0", "model": ')
    error_line(
        cli("generate", pkg, "--prompt", "the cat"),
        "q.tokenizer.json: not a tokenizer file the tokenizers package reads",
    )
    (copy / "q.tokenizer.json").unlink()
    error_line(
        cli("generate", pkg, "--prompt", "the cat"),
        "q.tokenizer.json: cannot read: No such file",
    )
    # compile-llm refuses a corrupt text file of the checkpoint, writing nothing
    broken = tmp_path / "broken"
    shutil.copytree(checkpoint, broken)
    (broken / "generation_config.json").write_text("{")
    out = tmp_path / "x.mlpackage"
    result = cli("compile-llm", str(broken), "-o", str(out), "--context", "96")
    error_line(result, "generation_config.json: not valid JSON")
    assert not out.exists() and not (tmp_path / "x.manifest.json").exists()


@pytest.mark.slow
def test_prompt_without_a_tokenizer(tmp_path):
    """A package of a checkpoint without tokenizer.json: --prompt is one
    line pointing to --prompt-ids, which still works."""
    from llm_checkpoints import write_checkpoint

    checkpoint = tmp_path / "ckpt"
    write_checkpoint(checkpoint, "qwen3", False, "float32")
    out = tmp_path / "p.mlpackage"
    command = ["compile-llm", str(checkpoint), "-o", str(out), "--context", "32"]
    assert cli(*command, "--prefill", "4", "--chunk", "128").returncode == 0
    manifest = json.loads((tmp_path / "p.manifest.json").read_text())["llm"]
    assert manifest["text"] == {"generation_config.json": "p.generation_config.json"}
    error_line(
        cli("generate", str(out), "--prompt", "hi"),
        "no tokenizer beside it",
        "--prompt-ids",
    )
    assert cli("generate", str(out), "--prompt-ids", "1,2").returncode == 0


README = Path(__file__).resolve().parent.parent / "README.md"


@pytest.mark.slow
def test_readme_text_example(tmp_path):
    """The README's example prints what it shows, and its text is
    transformers' decoded greedy continuation of transformers' ids."""
    import shlex

    import transformers

    compile_command, runs = readme_example(
        "xdsl-ane compile-llm tiny", "xdsl-ane generate tiny.mlpackage"
    )
    assert len(runs) == 2
    write_words_checkpoint(tmp_path / "tiny")
    result = cli(*shlex.split(compile_command)[1:], cwd=str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "text: copied tokenizer.json, tokenizer_config.json" in result.stdout
    for command, expected in runs:
        words = shlex.split(command)
        result = cli(*words[1:], cwd=str(tmp_path))
        assert result.returncode == 0, result.stderr
        assert result.stdout.splitlines() == expected, command
    words = shlex.split(runs[0][0])
    prompt, new = words[words.index("--prompt") + 1], int(words[-1])
    ids = transformers.AutoTokenizer.from_pretrained(tmp_path / "tiny")(prompt)
    _, decoded = transformers_continuation(tmp_path / "tiny", ids.input_ids, new)
    assert runs[0][1] == [decoded]

"""Text in and out of `xdsl-ane generate`: the checkpoint's tokenizer
files, which `compile-llm` copies beside its output, read as transformers
reads them; its chat template rendered as transformers'
`apply_chat_template` renders it; its end-of-sequence tokens; and
sampling with the filters of transformers' `generate` (temperature, top-k,
top-p), the draw from numpy's `Generator`.

- The tokenizer is `tokenizer.json` through the `tokenizers` package, with
  its own post-processor (the special tokens it adds to a plain prompt),
  the named special tokens of `tokenizer_config.json` that it lacks added
  (as transformers' `PreTrainedTokenizerFast` does), no truncation and no
  padding. Decoding skips special tokens and applies
  `clean_up_tokenization_spaces` when `tokenizer_config.json` asks for it
  (not to a BPE model, as transformers).
- The chat template is `chat_template.jinja`, else `tokenizer_config.json`'s
  `chat_template` (a string, or a list of named templates: `default`),
  rendered in Jinja2's immutable sandbox with transformers' settings
  (`trim_blocks`, `lstrip_blocks`, loop controls, its `tojson`,
  `raise_exception`, `strftime_now`, `{% generation %}`), the named
  special tokens as variables, `add_generation_prompt` true, and tokenized
  without special tokens added.
- The end-of-sequence tokens are `generation_config.json`'s `eos_token_id`
  (an id or a list), else `config.json`'s: what transformers' `generate`
  stops at.

`tokenizers` and `jinja2` are the `text` extra (`pip install
'xdsl-ane[text]'`), imported only when a tokenizer is loaded or a template
rendered; sampling is numpy alone."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from xdsl_ane.errors import XdslAneError, first_line, from_command_line, option

TEXT_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "chat_template.jinja",
    "generation_config.json",
)
"""The files of a checkpoint directory that `compile-llm` copies beside its
output, each where present."""

SPECIAL_TOKENS = (
    "bos_token",
    "eos_token",
    "unk_token",
    "sep_token",
    "pad_token",
    "cls_token",
    "mask_token",
)
"""transformers' named special tokens (`SPECIAL_TOKENS_ATTRIBUTES`): the
variables a chat template sees besides the messages."""

EXTRA = "pip install 'xdsl-ane[text]'"


def read_text_files(directory: str | Path) -> dict[str, bytes]:
    """The checkpoint's `TEXT_FILES` that exist, each checked: a `.json`
    file holds a JSON object, the template is UTF-8 text."""
    found: dict[str, bytes] = {}
    for name in TEXT_FILES:
        path = Path(directory) / name
        if not path.exists():
            continue
        try:
            data = path.read_bytes()
        except OSError as e:
            raise XdslAneError(f"{path}: cannot read: {e.strerror or e}") from None
        parse_text_file(path, data)
        found[name] = data
    return found


def checkpoint_tokenizer(
    checkpoint: str | Path, path: str | Path, what: str, instead: str
) -> TextTokenizer:
    """The checkpoint directory's tokenizer, for the text file `path`
    (`what` says what the file is, `instead` where ids need none)."""
    checkpoint = Path(checkpoint)
    files = {n: checkpoint / n for n in TEXT_FILES if (checkpoint / n).is_file()}
    if "tokenizer.json" not in files:
        raise XdslAneError(
            f"{path}: a .txt {what} needs the checkpoint's tokenizer.json, and "
            f"{checkpoint} has none (give token ids as {instead})"
        )
    return TextTokenizer(files, checkpoint)


def parse_text_file(path: Path, data: bytes) -> Any:
    """The JSON object of a `.json` text file, the text of a template; a
    one-line error naming `path` otherwise."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise XdslAneError(f"{path}: not UTF-8 text") from None
    if path.suffix != ".json":
        return text
    try:
        value = json.loads(text)
    except ValueError as e:
        raise XdslAneError(f"{path}: not valid JSON: {first_line(e)}") from None
    if not isinstance(value, dict):
        raise XdslAneError(f"{path}: not a JSON object")
    return value


def eos_token_ids(
    files: dict[str, bytes], config: dict[str, Any], directory: str | Path
) -> list[int]:
    """What transformers' `generate` stops at: `generation_config.json`'s
    `eos_token_id` (an id or a list of ids), else `config.json`'s; [] for
    none."""
    source, value = Path(directory) / "config.json", config.get("eos_token_id")
    if "generation_config.json" in files:
        path = Path(directory) / "generation_config.json"
        generation = parse_text_file(path, files["generation_config.json"])
        if "eos_token_id" in generation:
            source, value = path, generation["eos_token_id"]
    if value is None:
        return []
    ids = value if isinstance(value, list) else [value]
    if not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
        raise XdslAneError(
            f"{source}: eos_token_id {json.dumps(value)}: expected a token id or a "
            "list of them"
        )
    return list(dict.fromkeys(ids))


# --- sampling -----------------------------------------------------------------------


@dataclass(frozen=True)
class Sampling:
    """Sampling as transformers' `generate(do_sample=True, ...)` filters
    the logits: divided by `temperature`, then the `top_k` largest kept (0:
    all), then the smallest set whose probability reaches `top_p` (1.0:
    all); the token is then drawn from the softmax of what is left by
    numpy's `Generator(seed)` (None: a fresh seed)."""

    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int | None = None

    def __post_init__(self):
        if not self.temperature > 0:
            raise XdslAneError(
                f"{option('temperature', self.temperature)}: must be above 0 (greedy "
                "generation is the default: leave the sampling options out)"
            )
        if self.top_k < 0:
            raise XdslAneError(
                f"{option('top_k', self.top_k)}: must be at least 0 (0: off)"
            )
        if not 0 < self.top_p <= 1:
            raise XdslAneError(
                f"{option('top_p', self.top_p)}: must lie in (0, 1] (1: off)"
            )
        if self.seed is not None and self.seed < 0:
            raise XdslAneError(f"{option('seed', self.seed)}: must be at least 0")

    def generator(self) -> np.random.Generator:
        return np.random.default_rng(self.seed)

    def filter(self, logits: np.ndarray) -> np.ndarray:
        """The logits [..., V] after transformers' TemperatureLogitsWarper,
        TopKLogitsWarper and TopPLogitsWarper (in that order, each left
        out at its neutral value): float32, the removed ones -inf."""
        scores = np.asarray(logits, np.float32)
        if self.temperature != 1.0:
            scores = scores / np.float32(self.temperature)
        if self.top_k:
            k = min(self.top_k, scores.shape[-1])
            kth = -np.partition(-scores, k - 1, axis=-1)[..., k - 1 : k]
            scores = np.where(scores < kth, np.float32(-np.inf), scores)
        if self.top_p < 1.0:
            order = np.argsort(scores, axis=-1, kind="stable")
            ascending = np.take_along_axis(scores, order, axis=-1)
            shifted = np.exp(ascending - ascending.max(axis=-1, keepdims=True))
            cumulative = np.cumsum(shifted / shifted.sum(-1, keepdims=True), -1)
            remove_sorted = cumulative <= np.float32(1 - self.top_p)
            remove_sorted[..., -1] = False  # at least one token kept
            remove = np.empty_like(remove_sorted)
            np.put_along_axis(remove, order, remove_sorted, axis=-1)
            scores = np.where(remove, np.float32(-np.inf), scores)
        return scores

    def draw(self, logits: np.ndarray, generator: np.random.Generator) -> int:
        """One token id from the softmax of the filtered logits [V]."""
        scores = self.filter(logits).astype(np.float64)
        probabilities = np.exp(scores - scores.max())
        probabilities /= probabilities.sum()
        return int(generator.choice(len(probabilities), p=probabilities))


# --- the tokenizer ------------------------------------------------------------------


def special_token_text(value: Any) -> str | None:
    """A special token of tokenizer_config.json: a string or an AddedToken
    record ({"content": ...})."""
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) else None


class TextTokenizer:
    """The checkpoint's tokenizer and chat template, from the copies
    `compile-llm` wrote (`files`: the checkpoint's file name to where the
    copy is); see the module docstring for what is read as transformers
    reads it."""

    def __init__(self, files: dict[str, Path], package: str | Path):
        self.package = str(package)
        path = files.get("tokenizer.json")
        if path is None:
            ids = "--prompt-ids" if from_command_line() else "token ids"
            raise XdslAneError(
                f"{package}: no tokenizer beside it (its checkpoint has no "
                f"tokenizer.json): give the prompt as {ids}"
            )
        try:
            from tokenizers import AddedToken, Tokenizer
        except ImportError:
            raise XdslAneError(
                f"{option('tokenizer', flag='--prompt')} needs the tokenizers "
                f"package: {EXTRA}"
            ) from None
        self.config: dict[str, Any] = {}
        config_path = files.get("tokenizer_config.json")
        if config_path is not None:
            self.config = parse_text_file(config_path, read_file(config_path))
        self.template_path = files.get("chat_template.jinja")
        data = read_file(path)
        try:
            self.tokenizer = Tokenizer.from_str(data.decode("utf-8"))
        except Exception as e:  # the Rust side's errors are plain Exceptions
            raise XdslAneError(
                f"{path}: not a tokenizer file the tokenizers package reads: "
                f"{first_line(e)}"
            ) from None
        self.tokenizer.no_truncation()
        self.tokenizer.no_padding()
        self.special = {
            name: text
            for name in SPECIAL_TOKENS
            if (text := special_token_text(self.config.get(name))) is not None
        }
        vocabulary = self.tokenizer.get_vocab(with_added_tokens=True)
        missing = [
            t for t in dict.fromkeys(self.special.values()) if t not in vocabulary
        ]
        if missing:
            self.tokenizer.add_special_tokens(
                [AddedToken(t, special=True, normalized=False) for t in missing]
            )
        self.clean_up = bool(self.config.get("clean_up_tokenization_spaces", False))
        if type(self.tokenizer.model).__name__ == "BPE":
            self.clean_up = bool(
                self.config.get(
                    "clean_up_tokenization_spaces_for_bpe_even_though_it_will_"
                    "corrupt_output",
                    False,
                )
                and self.clean_up
            )

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        """transformers' `tokenizer(text).input_ids`."""
        return list(
            self.tokenizer.encode(text, add_special_tokens=add_special_tokens).ids
        )

    def decode(self, ids: Sequence[int]) -> str:
        """transformers' `tokenizer.decode(ids, skip_special_tokens=True)`."""
        text = self.tokenizer.decode(list(ids), skip_special_tokens=True)
        return clean_up_tokenization(text) if self.clean_up else text

    def chat_template(self) -> str:
        if self.template_path is not None:
            return read_file(self.template_path).decode("utf-8")
        template = self.config.get("chat_template")
        if isinstance(template, list):  # named templates: the default one
            named = {
                t.get("name"): t.get("template")
                for t in template
                if isinstance(t, dict)
            }
            template = named.get("default")
        if not isinstance(template, str):
            raise XdslAneError(
                f"{self.package}: {option('encode_chat', flag='--chat')}: the "
                "checkpoint has no chat template (no "
                "chat_template.jinja, no chat_template in tokenizer_config.json)"
            )
        return template

    def render_chat(self, messages: list[dict[str, str]]) -> str:
        """transformers' `apply_chat_template(messages, tokenize=False,
        add_generation_prompt=True)`."""
        return render_template(
            self.chat_template(),
            self.package,
            messages=messages,
            tools=None,
            documents=None,
            add_generation_prompt=True,
            **self.special,
        )

    def encode_chat(self, messages: list[dict[str, str]]) -> list[int]:
        """transformers' `apply_chat_template(messages,
        add_generation_prompt=True)`: the rendered chat tokenized without
        special tokens added."""
        return self.encode(self.render_chat(messages), add_special_tokens=False)

    def stream(self) -> StreamDecoder:
        return StreamDecoder(self)


class StreamDecoder:
    """The text of the new tokens as they come: each `push` returns what
    decoding all of them adds to what was returned before, holding back a
    trailing U+FFFD (a character whose bytes are not all there yet);
    `finish` returns the rest, so that the pieces join to `decode(ids)`."""

    def __init__(self, tokenizer: TextTokenizer):
        self.tokenizer = tokenizer
        self.ids: list[int] = []
        self.shown = ""

    def push(self, token: int) -> str:
        self.ids.append(token)
        text = self.tokenizer.decode(self.ids).rstrip("\ufffd")
        return self.advance(text)

    def finish(self) -> str:
        return self.advance(self.tokenizer.decode(self.ids))

    def advance(self, text: str) -> str:
        if not text.startswith(self.shown) or len(text) == len(self.shown):
            return ""
        new, self.shown = text[len(self.shown) :], text
        return new


def clean_up_tokenization(text: str) -> str:
    """transformers' `clean_up_tokenization`: spaces before punctuation
    and English contractions removed."""
    for before, after in [
        (" .", "."),
        (" ?", "?"),
        (" !", "!"),
        (" ,", ","),
        (" ' ", "'"),
        (" n't", "n't"),
        (" 'm", "'m"),
        (" 's", "'s"),
        (" 've", "'ve"),
        (" 're", "'re"),
    ]:
        text = text.replace(before, after)
    return text


def read_file(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as e:
        raise XdslAneError(f"{path}: cannot read: {e.strerror or e}") from None


# --- chat templates -----------------------------------------------------------------


def render_template(template: str, where: str, **variables: Any) -> str:
    """`template` rendered with `variables` in the environment of
    transformers' `_compile_jinja_template`: Jinja2's immutable sandbox,
    `trim_blocks` and `lstrip_blocks`, loop controls, `{% generation %}`
    (its body as it is), `tojson` without HTML escaping, and the globals
    `raise_exception`, `strftime_now`, `dict` and `namespace` (whose names
    may not start with an underscore)."""
    try:
        import jinja2
        import jinja2.ext
        from jinja2.sandbox import ImmutableSandboxedEnvironment
    except ImportError:
        raise XdslAneError(
            f"{option('encode_chat', flag='--chat')} needs the jinja2 package: {EXTRA}"
        ) from None

    class Generation(jinja2.ext.Extension):
        """`{% generation %}...{% endgeneration %}`: transformers marks the
        assistant's tokens with it; rendered, it is its body."""

        tags = {"generation"}

        def parse(self, parser):
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
            call = self.call_method("_body")
            return jinja2.nodes.CallBlock(call, [], [], body).set_lineno(lineno)

        def _body(self, caller):
            return caller()

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(
            x,
            ensure_ascii=ensure_ascii,
            indent=indent,
            separators=separators,
            sort_keys=sort_keys,
        )

    def strftime_now(format):
        return datetime.now().strftime(format)

    class TemplateDict:
        def __call__(self, *args, **kwargs):
            return dict(*args, **kwargs)

        def fromkeys(self, *args, **kwargs):
            return dict.fromkeys(*args, **kwargs)

    class TemplateNamespace(jinja2.utils.Namespace):
        def __init__(*args, **kwargs):
            self, args = args[0], args[1:]
            attrs = dict(*args, **kwargs)
            for name in attrs:
                TemplateNamespace.check_name(name)
            jinja2.utils.Namespace.__init__(self, attrs)

        def __setitem__(self, name, value):
            TemplateNamespace.check_name(name)
            jinja2.utils.Namespace.__setitem__(self, name, value)

        @staticmethod
        def check_name(name):
            if isinstance(name, str) and name.startswith("_"):
                raise jinja2.exceptions.SecurityError(
                    f"a namespace attribute may not start with '_': {name!r}"
                )

    environment = ImmutableSandboxedEnvironment(
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=[Generation, jinja2.ext.loopcontrols],
    )
    environment.filters["tojson"] = tojson
    environment.globals.update(
        raise_exception=raise_exception,
        strftime_now=strftime_now,
        dict=TemplateDict(),
        namespace=TemplateNamespace,
    )
    try:
        return environment.from_string(template).render(**variables)
    except jinja2.exceptions.TemplateSyntaxError as e:
        raise XdslAneError(
            f"{where}: the chat template does not parse (line {e.lineno}): "
            f"{first_line(e)}"
        ) from None
    except jinja2.exceptions.TemplateError as e:
        raise XdslAneError(
            f"{where}: the chat template failed: {first_line(e)}"
        ) from None


def stop_reason(tokens: Sequence[int], stop: Iterable[int], limit: int) -> str:
    """Why generation ended: an end-of-sequence token or the limit."""
    if tokens and tokens[-1] in set(stop):
        return f"end of sequence (token {tokens[-1]})"
    return option("max_new_tokens", limit)

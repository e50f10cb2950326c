"""The model interface: one required method, ``respond(request)``, yielding events.

Wire adapters, the scripted fake and text-protocol transports all implement it; the loop knows
nothing else about a model.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from xclaw.core.messages import Message, ReasoningPart, ToolCallPart
from xclaw.core.tooling import ToolSpec


@dataclass(frozen=True, slots=True)
class ModelRequest:
    messages: Sequence[Message]  # the whole conversation, handed over without copying
    tools: Sequence[ToolSpec]
    settings: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ToolCallEvent:
    call: ToolCallPart


@dataclass(frozen=True, slots=True)
class ReasoningEvent:
    """A finished reasoning block; streamed reasoning text may arrive as ReasoningDelta."""

    part: ReasoningPart


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    text: str


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class Finish:
    stop_reason: str = "stop"


ModelEvent = TextDelta | ReasoningDelta | ReasoningEvent | ToolCallEvent | Usage | Finish


class Model(ABC):
    """Anything that answers a request with a stream of events."""

    name: str = "model"

    @abstractmethod
    def respond(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Answer ``request``; an async generator of ``ModelEvent``."""

    def restore(self, messages: Sequence[Message]) -> None:  # noqa: B027 - optional hook
        """Continue after a resume; stateless models need nothing (fakes re-sync here)."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook, not abstract on purpose
        """Release resources (browsers, HTTP clients). Most models hold none."""

"""Model vocabulary shared by every adapter (re-exported from ``xclaw.core.model``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from xclaw.core.messages import ToolCallPart
from xclaw.core.model import (
    Finish,
    Model,
    ModelEvent,
    ModelRequest,
    TextDelta,
    ToolCallEvent,
    Usage,
)

__all__ = [
    "Finish",
    "Model",
    "ModelEvent",
    "ModelRequest",
    "ModelTurn",
    "TextDelta",
    "ToolCallEvent",
    "Usage",
    "turn_events",
]


@dataclass(frozen=True, slots=True)
class ModelTurn:
    """One whole assistant turn, as fakes produce it."""

    text: str = ""
    tool_calls: tuple[ToolCallPart, ...] = ()
    input_tokens: int | None = None
    output_tokens: int | None = None
    stop_reason: str = field(default="")


async def turn_events(turn: ModelTurn) -> AsyncIterator[ModelEvent]:
    if turn.text:
        yield TextDelta(turn.text)
    for call in turn.tool_calls:
        yield ToolCallEvent(call)
    if turn.input_tokens is not None or turn.output_tokens is not None:
        yield Usage(turn.input_tokens, turn.output_tokens)
    yield Finish(turn.stop_reason or ("tool_calls" if turn.tool_calls else "stop"))

"""Provider-agnostic conversation vocabulary: messages made of parts.

Plain frozen dataclasses with slots: the loop builds thousands of them per session and hands
the whole list to the model every turn, so they must be cheap to create and never copied.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True, slots=True)
class ImagePart:
    media_type: str
    data: bytes
    kind: Literal["image"] = "image"


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The outcome of one tool call. Failures carry a stable code and a next step.

    ``images``: pictures the result shows (a screenshot). Adapters send them as image content
    to models that see (beside the result on APIs whose tool results hold only text); a
    text-only model gets a note instead, and the message should say what the image is and
    where it was saved. They are not part of ``to_dict`` (stores keep the text only).
    """

    ok: bool
    message: str
    data: dict[str, Any] = field(default_factory=dict)
    error_code: str | None = None
    retryable: bool = False
    truncated: bool = False
    hint: str = ""
    images: tuple[ImagePart, ...] = ()

    @classmethod
    def success(cls, message: str, truncated: bool = False, **data: Any) -> ToolResult:
        return cls(ok=True, message=message, data=data, truncated=truncated)

    @classmethod
    def failure(
        cls,
        code: str,
        message: str,
        *,
        hint: str = "",
        retryable: bool = False,
        data: dict[str, Any] | None = None,
    ) -> ToolResult:
        return cls(
            ok=False,
            message=message,
            data=data or {},
            error_code=code,
            retryable=retryable,
            hint=hint,
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"ok": self.ok, "message": self.message}
        if self.data:
            out["data"] = self.data
        if self.error_code:
            out["error_code"] = self.error_code
            out["retryable"] = self.retryable
        if self.hint:
            out["hint"] = self.hint
        if self.truncated:
            out["truncated"] = True
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ToolResult:
        """Inverse of ``to_dict`` (for results read back from a store; hot on resume)."""
        get = d.get
        data = get("data")
        return cls(
            get("ok") is True,
            str(get("message", "")),
            data if isinstance(data, dict) else {},
            get("error_code"),
            get("retryable") is True,
            get("truncated") is True,
            str(get("hint", "")),
        )

    def to_model_text(self) -> str:
        """The compact JSON a model reads back."""
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"), default=str)


@dataclass(frozen=True, slots=True)
class TextPart:
    text: str
    kind: Literal["text"] = "text"


@dataclass(frozen=True, slots=True)
class ReasoningPart:
    """Model reasoning ("thinking") kept so it can be sent back to the same provider.

    ``signature`` (Anthropic) or ``encrypted`` (OpenAI Responses) must round-trip unchanged;
    ``redacted`` blocks carry only opaque data. Other providers ignore parts not their own.
    """

    text: str
    provider: str = ""
    signature: str | None = None
    redacted: bool = False
    encrypted: str | None = None
    kind: Literal["reasoning"] = "reasoning"


@dataclass(frozen=True, slots=True)
class ToolCallPart:
    """A call the model asked for. ``repaired``: the model wrote it as JSON in its reply text
    rather than on its tool channel, and ``xclaw.models.repair`` read it from there; that text
    was the call itself, so the assistant message keeps the call and not the text."""

    call_id: str
    name: str
    arguments: dict[str, Any]
    kind: Literal["tool_call"] = "tool_call"
    repaired: bool = False


@dataclass(frozen=True, slots=True)
class ToolResultPart:
    call_id: str
    name: str
    result: ToolResult
    kind: Literal["tool_result"] = "tool_result"


Part = TextPart | ImagePart | ReasoningPart | ToolCallPart | ToolResultPart


@dataclass(frozen=True, slots=True)
class Message:
    role: Role
    parts: tuple[Part, ...]

    @classmethod
    def user(cls, text: str) -> Message:
        return cls("user", (TextPart(text),))

    @classmethod
    def system(cls, text: str) -> Message:
        return cls("system", (TextPart(text),))

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))

    @property
    def tool_calls(self) -> list[ToolCallPart]:
        return [p for p in self.parts if isinstance(p, ToolCallPart)]

    @property
    def tool_results(self) -> list[ToolResultPart]:
        return [p for p in self.parts if isinstance(p, ToolResultPart)]


def starts_with(messages: Sequence[Message], start: Sequence[Message]) -> bool:
    """``messages`` begins with the messages of ``start``: what reads a conversation once
    knows it grew, rather than changed, since it last looked. A list comparison: each pair is
    the same object (checked first, at C speed, a few ns a message: this runs on every model
    call of a long chat) or an equal message, which means the same to every reader."""
    n = len(start)
    if n > len(messages):
        return False
    head = messages[:n]
    if type(head) is not list or type(start) is not list:
        return list(head) == list(start)
    return head == start

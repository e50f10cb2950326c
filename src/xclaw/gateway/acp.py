"""ACP: the frames the gateway and its clients exchange (seed 003 ch. 04), as pydantic models.

Client -> server frames are validated with :func:`parse_client_frame`; server -> client frames
are built with the ``*Frame`` models and sent as ``model_dump(by_alias=True)`` JSON. Every
server frame carries ``type`` and ``sessionId``. :class:`AcpMessage` is the channel-neutral
message the gateway routes (a web frame, a CLI line or a chat-platform message all become one).
"""

from __future__ import annotations

import secrets
import time
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

__all__ = [
    "AcpMessage",
    "ApprovalRequestFrame",
    "ApprovalResponse",
    "ClientFrame",
    "DeltaFrame",
    "ErrorFrame",
    "EventFrame",
    "HistoryFrame",
    "HistoryRequest",
    "MessageFrame",
    "ReplyFrame",
    "ServerFrame",
    "SessionFrame",
    "StopFrame",
    "parse_client_frame",
]

Answer = Literal["once", "task", "deny"]
MAX_CONTENT = 200_000


class _Frame(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True)


# -- client -> server ----------------------------------------------------------------------
class MessageFrame(_Frame):
    type: Literal["message"]
    id: str = Field(default_factory=lambda: secrets.token_hex(8), max_length=200)
    content: str = Field(min_length=1, max_length=MAX_CONTENT)
    session_id: str | None = Field(default=None, alias="sessionId", max_length=200)


class ApprovalResponse(_Frame):
    type: Literal["approval.response"]
    request_id: str = Field(alias="requestId", max_length=200)
    answer: Answer


class StopFrame(_Frame):
    type: Literal["stop"]
    session_id: str | None = Field(default=None, alias="sessionId", max_length=200)


class HistoryRequest(_Frame):
    type: Literal["history"]
    session_id: str | None = Field(default=None, alias="sessionId", max_length=200)


ClientFrame = Annotated[
    MessageFrame | ApprovalResponse | StopFrame | HistoryRequest, Field(discriminator="type")
]
_CLIENT: TypeAdapter[ClientFrame] = TypeAdapter(ClientFrame)


def parse_client_frame(raw: str | bytes) -> ClientFrame:
    """One client frame from its JSON text; raises ``ValueError`` (with a short reason)."""
    try:
        return _CLIENT.validate_json(raw)
    except ValidationError as err:
        first = err.errors()[0] if err.errors() else {"msg": "invalid frame"}
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise ValueError(f"{where}: {first['msg']}" if where else str(first["msg"])) from None


# -- server -> client ----------------------------------------------------------------------
class _ServerFrame(_Frame):
    session_id: str = Field(alias="sessionId")

    def wire(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, mode="json")


class SessionFrame(_ServerFrame):
    type: Literal["session"] = "session"


class DeltaFrame(_ServerFrame):
    type: Literal["delta"] = "delta"
    text: str


class EventFrame(_ServerFrame):
    type: Literal["event"] = "event"
    event: dict[str, Any]  # {"type", "callId", "payload"}


class ApprovalRequestFrame(_ServerFrame):
    type: Literal["approval.request"] = "approval.request"
    request_id: str = Field(alias="requestId")
    summary: str
    risk: str
    grant_offered: bool = Field(alias="grantOffered")


class ReplyFrame(_ServerFrame):
    type: Literal["reply"] = "reply"
    text: str
    status: Literal["completed", "interrupted", "failed"]


class HistoryFrame(_ServerFrame):
    type: Literal["history"] = "history"
    messages: list[dict[str, str]]


class ErrorFrame(_ServerFrame):
    type: Literal["error"] = "error"
    code: str
    message: str


ServerFrame = (
    SessionFrame
    | DeltaFrame
    | EventFrame
    | ApprovalRequestFrame
    | ReplyFrame
    | HistoryFrame
    | ErrorFrame
)


# -- the channel-neutral message -----------------------------------------------------------
class AcpMessage(_Frame):
    """A user message as the gateway routes it, whatever channel it came from."""

    id: str = Field(default_factory=lambda: secrets.token_hex(8))
    session_id: str | None = Field(default=None, alias="sessionId")
    channel: str = Field(min_length=1, max_length=64)
    content: str = Field(min_length=1, max_length=MAX_CONTENT)
    timestamp: float = Field(default_factory=time.time)
    caller: str = Field(min_length=1, max_length=200)  # the peer / connection that sent it
    parent_session_id: str | None = Field(default=None, alias="parentSessionId")

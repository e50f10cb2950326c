"""Chat channels: one small interface between a chat platform and the gateway.

An adapter turns a peer's text into an ACP message on that peer's session and the session's
frames into platform messages: the final reply (split to the platform's size limit), errors,
and approval requests as a message the same peer answers with ``/approve ID``,
``/approve-task ID`` or ``/deny ID``; ``/stop`` cancels the running turn. Deltas are not
relayed: a chat platform shows the finished reply. Sessions are one per peer by default
(``dm_scope="per-peer"``) or one for every direct message (``"shared"``), as OpenClaw offers.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Literal

from xclaw.core.tooling import Answer
from xclaw.gateway.acp import (
    AcpMessage,
    ApprovalRequestFrame,
    ErrorFrame,
    ReplyFrame,
    ServerFrame,
)

if TYPE_CHECKING:
    from xclaw.gateway.gateway import Gateway

log = logging.getLogger(__name__)
DmScope = Literal["per-peer", "shared"]
_ANSWERS: dict[str, Answer] = {"/approve": "once", "/approve-task": "task", "/deny": "deny"}


def split_text(text: str, limit: int) -> list[str]:
    """``text`` in pieces of at most ``limit`` characters, cut at a line end when one is near."""
    pieces: list[str] = []
    while len(text) > limit:
        cut = text.rfind("\n", limit // 2, limit)
        cut = cut + 1 if cut > 0 else limit
        pieces.append(text[:cut])
        text = text[cut:]
    if text or not pieces:
        pieces.append(text)
    return pieces


def render_frame(frame: ServerFrame) -> str | None:
    """What a chat peer is sent for a frame (None: nothing)."""
    match frame:
        case ReplyFrame():
            return frame.text or f"(the turn ended: {frame.status})"
        case ErrorFrame():
            return f"Error {frame.code}: {frame.message}"
        case ApprovalRequestFrame():
            task = f", /approve-task {frame.request_id}" if frame.grant_offered else ""
            return (
                f"Approval needed ({frame.risk}): {frame.summary}\n"
                f"Answer /approve {frame.request_id}{task} or /deny {frame.request_id}"
            )
        case _:
            return None


class PeerChannel:
    """The gateway ``Channel`` of one chat peer: frames are rendered and sent in order."""

    def __init__(self, adapter: ChatAdapter, peer: str) -> None:
        self.name = adapter.name
        self.adapter = adapter
        self.peer = peer
        self._outbox: asyncio.Queue[str] = asyncio.Queue()
        self._sender: asyncio.Task[None] | None = None

    def send(self, frame: ServerFrame) -> None:
        text = render_frame(frame)
        if text is None:
            return
        for piece in split_text(text, self.adapter.limit):
            self._outbox.put_nowait(piece)
        if self._sender is None or self._sender.done():
            self._sender = asyncio.get_running_loop().create_task(self._drain())

    async def _drain(self) -> None:
        while not self._outbox.empty():
            piece = self._outbox.get_nowait()
            try:
                await self.adapter.send_text(self.peer, piece)
            except Exception as err:  # noqa: BLE001 - one failed send must not stop the rest
                log.warning("%s: could not send to a peer: %s", self.name, type(err).__name__)

    async def flushed(self) -> None:
        """Wait until every queued piece was handed to the platform (tests, shutdown)."""
        if self._sender is not None:
            await asyncio.shield(self._sender)


class ChatAdapter(ABC):
    """A chat platform. Subclasses implement ``start``, ``stop`` and ``send_text`` and call
    ``handle_text`` for every text message a peer sends."""

    name: str = "chat"
    limit: int = 4000  # characters per platform message

    def __init__(self, gateway: Gateway, *, dm_scope: DmScope = "per-peer") -> None:
        self.gateway = gateway
        self.dm_scope = dm_scope
        self._peers: dict[str, PeerChannel] = {}
        gateway.register_channel(self.name)

    @abstractmethod
    async def start(self) -> None: ...

    @abstractmethod
    async def stop(self) -> None: ...

    @abstractmethod
    async def send_text(self, peer: str, text: str) -> None:
        """Send one message (already within ``limit``) to ``peer`` on the platform."""

    def channel_for(self, peer: str) -> PeerChannel:
        if peer not in self._peers:
            self._peers[peer] = PeerChannel(self, peer)
        return self._peers[peer]

    def session_for(self, peer: str) -> str:
        who = "dm" if self.dm_scope == "shared" else peer
        return f"{self.name}-{hashlib.sha256(who.encode()).hexdigest()[:16]}"

    def handle_text(self, peer: str, text: str) -> None:
        """A peer's message: a command (/approve, /approve-task, /deny, /stop) or a task."""
        channel = self.channel_for(peer)
        words = text.strip().split()
        if words and words[0] in _ANSWERS and len(words) == 2:
            request_id = words[1].strip(",.;:")  # copied from the prompt's sentence
            if not self.gateway.answer(channel, request_id, _ANSWERS[words[0]]):
                channel.send(_error(self.session_for(peer), "No such open question here."))
            return
        if words == ["/stop"]:
            self.gateway.stop(self.session_for(peer))
            return
        message = AcpMessage(
            channel=self.name,
            caller=f"{self.name}:{peer}",
            content=text,
            session_id=self.session_for(peer),
        )
        self.gateway.submit(message, channel)


def _error(session_id: str, text: str) -> ErrorFrame:
    return ErrorFrame(session_id=session_id, code="APPROVAL_UNKNOWN", message=text)

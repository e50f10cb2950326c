"""One live session in the gateway: its agent, its queue of messages, its subscribers, its
pending approvals. The durable record is the store's session; this is only the running part."""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from xclaw.core.origin import SessionOrigin
from xclaw.core.state import RunControl
from xclaw.core.tooling import Answer, ApprovalRequest
from xclaw.gateway.acp import AcpMessage, ApprovalRequestFrame, ServerFrame
from xclaw.store.locks import session_busy

if TYPE_CHECKING:
    from xclaw.coding.agent import Agent
    from xclaw.store.base import SessionRecord

__all__ = [
    "Channel",
    "ChannelApprover",
    "LiveSession",
    "SessionOrigin",
    "left_waiting",
    "session_messages",
]

APPROVAL_TIMEOUT_S = 300.0


class Channel(Protocol):
    """Where a session's frames go: a WebSocket connection, a terminal, a chat peer."""

    name: str

    def send(self, frame: ServerFrame) -> None:
        """Queue ``frame`` for the peer without blocking (frames keep their order)."""


@dataclass(eq=False)
class LiveSession:
    id: str
    channel: str  # the channel kind that made it: web, cli, ...
    owner: str  # the caller that made it (connection or peer)
    exists: bool = False  # recorded in the store already: later turns continue it
    agent: Agent | None = None
    queue: asyncio.Queue[AcpMessage] = field(default_factory=asyncio.Queue)
    worker: asyncio.Task[None] | None = None
    control: RunControl | None = None
    subscribers: list[Channel] = field(default_factory=list)
    approvals: dict[str, asyncio.Future[Answer]] = field(default_factory=dict)
    offered: bool = False  # checked once for a turn a stopped gateway left waiting

    @property
    def origin(self) -> SessionOrigin:
        return SessionOrigin(self.id, self.channel, self.owner)

    def broadcast(self, frame: ServerFrame) -> None:
        for channel in list(self.subscribers):
            try:
                channel.send(frame)
            except Exception:  # noqa: BLE001 - a gone client must not stop the turn
                self.unsubscribe(channel)

    def subscribe(self, channel: Channel) -> None:
        if channel not in self.subscribers:
            self.subscribers.append(channel)

    def unsubscribe(self, channel: Channel) -> None:
        if channel in self.subscribers:
            self.subscribers.remove(channel)
        if not self.subscribers:  # nobody left to answer: deny what waits
            for fut in self.approvals.values():
                if not fut.done():
                    fut.set_result("deny")

    def answer(self, request_id: str, answer: Answer) -> bool:
        fut = self.approvals.get(request_id)
        if fut is None or fut.done():
            return False
        fut.set_result(answer)
        return True


class ChannelApprover:
    """Asks the session's subscribers; the first answer wins; deny on timeout or when nobody
    is connected. Satisfies :class:`xclaw.core.tooling.Approver`."""

    def __init__(
        self,
        session: LiveSession,
        timeout: float = APPROVAL_TIMEOUT_S,
    ) -> None:
        self.session = session
        self.timeout = timeout

    async def approve(self, request: ApprovalRequest) -> Answer:
        session = self.session
        if not session.subscribers:
            return "deny"
        request_id = secrets.token_hex(8)
        fut: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        session.approvals[request_id] = fut
        frame = ApprovalRequestFrame(
            session_id=session.id,
            request_id=request_id,
            summary=request.summary,
            risk=str(request.decision.risk),
            grant_offered=request.decision.grant is not None,
        )
        try:
            session.broadcast(frame)
            return await asyncio.wait_for(fut, self.timeout)
        except TimeoutError:
            return "deny"
        finally:
            session.approvals.pop(request_id, None)


def left_waiting(record: SessionRecord | None) -> bool:
    """The session waits for someone and no process runs it any more (its run lock is free):
    an approval the gone process asked (still ``running``, phase ``APPROVAL_REQUIRED``), a
    turn a crash cut off (still ``running``), or a pause on a call cut off by a crash. A
    multi-agent tree of ``xclaw agents`` is left to `xclaw resume` of its orchestrator, and a
    child never runs on its own."""
    if record is None or record.parent_session_id is not None:
        return False
    if (record.meta.get("agents") or {}).get("orchestrator"):
        return False
    waiting = record.state == "running" or (record.state == "paused" and bool(record.pending))
    return waiting and not session_busy(record.id)


def session_messages(items: list[dict[str, Any]]) -> list[dict[str, str]]:
    """A transcript as chat lines: user and assistant text only (tool traffic is in steps)."""
    from xclaw.coding.prompt import task_from_message
    from xclaw.store.transcript import items_to_messages

    lines: list[dict[str, str]] = []
    for msg in items_to_messages(items):
        if msg.role in ("user", "assistant") and msg.text.strip():
            text = task_from_message(msg.text) if msg.role == "user" else msg.text
            lines.append({"role": msg.role, "text": text})
    return lines

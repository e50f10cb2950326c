"""The gateway: channels in, sessions behind, one turn at a time per session (seed 003 ch. 04).

Every message names (or gets) a session. A session is the store's durable session: its first
message starts a run of the coding agent with that session id, later messages continue it
(``Agent.follow_up``), so ``xclaw resume``/``xclaw sessions`` see it and a gateway restart loses
nothing. Each live session has its own agent, event bus and approver; loop events go only to the
channels subscribed to that session. Messages queue in order; ``stop`` cancels the running turn.
"""

from __future__ import annotations

import asyncio
import getpass
import hashlib
import json
import logging
import re
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xclaw.core.errors import XclawError
from xclaw.core.events import Event, EventBus
from xclaw.core.state import RunControl, RunResult
from xclaw.core.tooling import Answer, Approver
from xclaw.gateway.acp import (
    AcpMessage,
    DeltaFrame,
    ErrorFrame,
    EventFrame,
    HistoryFrame,
    ReplyFrame,
    ServerFrame,
)
from xclaw.gateway.sessions import Channel, ChannelApprover, LiveSession, session_messages
from xclaw.redact import redact

if TYPE_CHECKING:
    from xclaw.coding.agent import Agent
    from xclaw.store.base import Store

__all__ = ["AgentFactory", "Channel", "Gateway", "GatewayError", "cli_session_id"]

AgentFactory = Callable[[EventBus, Approver], "Agent"]
"""Makes one session's agent from its bus and approver (model, workdir, store, sandbox)."""

log = logging.getLogger(__name__)
_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
_RELAYED = ("tool.", "approval.", "gate.", "model.failover", "model.retry")


class GatewayError(XclawError):
    """A request the gateway refuses (unknown session, bad id)."""


def cli_session_id(root: Path, user: str | None = None) -> str:
    """The fixed CLI session of one project and OS user."""
    who = user or getpass.getuser()
    digest = hashlib.sha256(f"{who}\0{root.resolve()}".encode()).hexdigest()[:12]
    return f"cli-{digest}"


def new_web_session_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S-web-") + secrets.token_hex(3)


class Gateway:
    """Routes ACP messages to sessions; see the module doc."""

    def __init__(
        self,
        make_agent: AgentFactory,
        store: Store,
        *,
        workdir: Path | None = None,
        approval_timeout: float = 300.0,
    ) -> None:
        self.make_agent = make_agent
        self.store = store
        self.workdir = (workdir or Path.cwd()).resolve()
        self.approval_timeout = approval_timeout
        self.channels: set[str] = {"web", "cli"}
        self._live: dict[str, LiveSession] = {}
        self._closing: set[asyncio.Future[None]] = set()

    def register_channel(self, name: str) -> None:
        self.channels.add(name)

    # -- sessions ---------------------------------------------------------------------------
    def open_session(self, channel: str, caller: str, session_id: str | None = None) -> LiveSession:
        """The live session ``session_id`` (loaded from the store if recorded), or a new one."""
        if channel not in self.channels:
            raise GatewayError(f"Unknown channel {channel!r}.", code="CHANNEL_UNKNOWN")
        if session_id is None:
            session_id = new_web_session_id()
        elif not _SESSION_ID.match(session_id):
            raise GatewayError("That is not a session id.", code="SESSION_ID_INVALID")
        live = self._live.get(session_id)
        if live is None:
            exists = self.store.get_session(session_id) is not None
            live = LiveSession(session_id, channel, caller, exists=exists)
            self._live[session_id] = live
        return live

    def find(self, session_id: str) -> LiveSession:
        live = self._live.get(session_id)
        if live is None and _SESSION_ID.match(session_id):
            record = self.store.get_session(session_id)
            if record is not None and Path(record.root).resolve() == self.workdir:
                kind = "cli" if session_id.startswith("cli-") else "web"
                live = self.open_session(kind, "store", session_id)
        if live is None:
            raise GatewayError(f"There is no session {session_id!r}.", code="SESSION_NOT_FOUND")
        return live

    def detach(self, channel: Channel) -> None:
        """A connection is gone: it gets nothing more, its pending approvals are denied, and
        sessions nobody watches or runs are let go (the store keeps them)."""
        for live in list(self._live.values()):
            live.unsubscribe(channel)
            if not live.subscribers and _idle(live):
                del self._live[live.id]
                if live.agent is not None:
                    self._closing.add(asyncio.ensure_future(live.agent.model.aclose()))
                    self._closing = {t for t in self._closing if not t.done()}

    # -- requests ---------------------------------------------------------------------------
    def submit(self, message: AcpMessage, reply_to: Channel) -> LiveSession:
        """Queue ``message`` on its session (in order); the reply goes to its subscribers."""
        if message.session_id is None:
            raise GatewayError("A message needs a session.", code="SESSION_REQUIRED")
        live = self.open_session(message.channel, message.caller, message.session_id)
        live.subscribe(reply_to)
        live.queue.put_nowait(message)
        if live.worker is None or live.worker.done():
            live.worker = asyncio.get_running_loop().create_task(self._work(live))
        return live

    def stop(self, session_id: str) -> bool:
        """Cancel the running turn of a session (queued messages stay queued)."""
        live = self._live.get(session_id)
        if live is None or live.control is None:
            return False
        for fut in live.approvals.values():
            if not fut.done():
                fut.set_result("deny")
        live.control.interrupt()
        live.control.interrupt()
        return True

    def answer(self, channel: Channel, request_id: str, answer: Answer) -> bool:
        """An approval answer, taken only from a channel subscribed to the asking session."""
        for live in self._live.values():
            if request_id in live.approvals and channel in live.subscribers:
                return live.answer(request_id, answer)
        return False

    def history(self, session_id: str) -> HistoryFrame:
        live = self.find(session_id)
        items = [i.payload for i in self.store.load_items(live.id)] if live.exists else []
        return HistoryFrame(session_id=live.id, messages=session_messages(items))

    async def close(self) -> None:
        for live in self._live.values():
            if live.worker is not None:
                live.worker.cancel()
        for live in self._live.values():
            if live.agent is not None:
                await live.agent.model.aclose()

    # -- turns ------------------------------------------------------------------------------
    async def _work(self, live: LiveSession) -> None:
        while not live.queue.empty():
            message = live.queue.get_nowait()
            live.broadcast(await self._turn(live, message))
        if not live.subscribers and self._live.get(live.id) is live:
            del self._live[live.id]  # everyone left during the turn: let it go now
            if live.agent is not None:
                await live.agent.model.aclose()

    async def _turn(self, live: LiveSession, message: AcpMessage) -> ServerFrame:
        try:
            agent = live.agent or self._agent_for(live)
        except XclawError as err:
            return ErrorFrame(session_id=live.id, code=err.code, message=redact(err.message))
        control = RunControl()
        live.control = control
        unsubscribe = agent.bus.subscribe(lambda ev: _relay(live, ev))
        try:
            # its own task: a stop cancels the turn, never this worker
            run = self._start(agent, live, message, control)
            result = await asyncio.get_running_loop().create_task(run)
        except XclawError as err:
            return ErrorFrame(session_id=live.id, code=err.code, message=redact(err.message))
        except Exception as err:  # noqa: BLE001 - one broken turn must not end the session
            log.exception("turn of session %s failed", live.id)
            return ErrorFrame(session_id=live.id, code="TURN_FAILED", message=redact(str(err)))
        finally:
            unsubscribe()
            live.control = None
        return ReplyFrame(session_id=live.id, text=result.reply, status=result.status)

    async def _start(
        self, agent: Agent, live: LiveSession, message: AcpMessage, control: RunControl
    ) -> RunResult:
        if live.exists:
            return await agent.follow_up(live.id, message.content, control=control)
        live.exists = True
        return await agent.run(message.content, control=control, session_id=live.id)

    def _agent_for(self, live: LiveSession) -> Agent:
        approver = ChannelApprover(live, timeout=self.approval_timeout)
        live.agent = self.make_agent(EventBus(), approver)
        return live.agent


def _idle(live: LiveSession) -> bool:
    running = live.worker is not None and not live.worker.done()
    return not running and live.queue.empty()


def _relay(live: LiveSession, event: Event) -> None:
    """A loop event as frames for the session's subscribers (deltas as ``delta``)."""
    if event.type == "model.streaming":
        text = str(event.payload.get("delta") or "")
        if text:
            live.broadcast(DeltaFrame(session_id=live.id, text=text))
        return
    if event.type.startswith(_RELAYED):
        body = {"type": event.type, "callId": event.tool_call_id, "payload": event.payload}
        live.broadcast(EventFrame(session_id=live.id, event=_plain(body)))


def _plain(body: dict[str, Any]) -> dict[str, Any]:
    """JSON-safe (payloads may hold tuples, paths): round-trip through str where needed."""
    plain: dict[str, Any] = json.loads(json.dumps(body, default=str))
    return plain

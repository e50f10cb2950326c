"""The gateway: channels in, sessions behind, one turn at a time per session (seed 003 ch. 04).

Every message names (or gets) a session. A session is the store's durable session: its first
message starts a run of the coding agent with that session id, later messages continue it
(``Agent.follow_up``), so ``xclaw resume``/``xclaw sessions`` see it and a gateway restart loses
nothing. Each live session has its own agent, event bus and approver; loop events go only to the
channels subscribed to that session. Messages queue in order; ``stop`` cancels the running turn.

Several instances (:mod:`xclaw.gateway.fanout`, Redis): messages queue in Redis, the instance
holding a session's lease runs them and publishes the session's frames; the others relay
those frames to their clients and send stops and approval answers to the holder. An instance
that dies mid-turn leaves its message in Redis; whoever claims the lease next resumes the
session from the store (``Agent.resume``: the ledger redoes no completed side effect).
``drain`` (SIGTERM) refuses new messages, lets running turns finish within a timeout, then
interrupts what still runs (recorded, resumable) and lets the leases go.
"""

from __future__ import annotations

import asyncio
import getpass
import hashlib
import json
import logging
import math
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
    ApprovalRequestFrame,
    DeltaFrame,
    ErrorFrame,
    EventFrame,
    HistoryFrame,
    ReplyFrame,
    ServerFrame,
)
from xclaw.gateway.fanout import Fanout, LeaseLost, LocalFanout, Taken
from xclaw.gateway.sessions import (
    Channel,
    ChannelApprover,
    LiveSession,
    SessionOrigin,
    left_waiting,
    session_messages,
)
from xclaw.gateway.takeover import offer_takeovers
from xclaw.redact import redact

if TYPE_CHECKING:
    from xclaw.coding.agent import Agent
    from xclaw.store.base import Store

__all__ = ["AgentFactory", "Channel", "Gateway", "GatewayError", "cli_session_id"]

AgentFactory = Callable[[EventBus, Approver, SessionOrigin], "Agent"]
"""Makes one session's agent from its bus, its approver and where it comes from (the model,
workdir, store and sandbox are the factory's)."""

log = logging.getLogger(__name__)
_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
_RELAYED = (
    "tool.",
    "approval.",
    "gate.",
    "model.failover",
    "model.retry",
    "agents.",
    "browser.takeover_required",  # asked like an approval (xclaw.gateway.takeover)
)


class GatewayError(XclawError):
    """A request the gateway refuses (unknown session, bad id)."""


def cli_session_id(root: Path, user: str | None = None) -> str:
    """The fixed CLI session of one project and OS user."""
    who = user or getpass.getuser()
    digest = hashlib.sha256(f"{who}\0{root.resolve()}".encode()).hexdigest()[:12]
    return f"cli-{digest}"


def new_web_session_id() -> str:
    # 48 random bits: a thousand sessions opened in one second must not share an id
    return time.strftime("%Y%m%d-%H%M%S-web-") + secrets.token_hex(6)


class Gateway:
    """Routes ACP messages to sessions; see the module doc."""

    def __init__(
        self,
        make_agent: AgentFactory,
        store: Store,
        *,
        workdir: Path | None = None,
        approval_timeout: float = 300.0,
        fanout: Fanout | None = None,
    ) -> None:
        self.make_agent = make_agent
        self.store = store
        self.workdir = (workdir or Path.cwd()).resolve()
        self.approval_timeout = approval_timeout
        self.channels: set[str] = {"web", "cli"}
        self._live: dict[str, LiveSession] = {}
        self._watching: dict[int, set[str]] = {}  # id(channel) -> the sessions it watches
        self._closing: set[asyncio.Future[None]] = set()
        self.fanout: Fanout = fanout or LocalFanout()
        self.draining = False
        self._remote = _RemoteChannel(self.fanout)  # the other instances' clients
        self._remote_approvals: dict[str, str] = {}  # request id -> session, asked elsewhere
        self._tasks: set[asyncio.Task[None]] = set()

    def register_channel(self, name: str) -> None:
        self.channels.add(name)

    # -- sessions ---------------------------------------------------------------------------
    def open_session(self, channel: str, caller: str, session_id: str | None = None) -> LiveSession:
        """The live session ``session_id`` (loaded from the store if recorded), or a new one."""
        if channel not in self.channels:
            raise GatewayError(f"Unknown channel {channel!r}.", code="CHANNEL_UNKNOWN")
        if session_id is None:
            return self._new_session(channel, caller)
        if not _SESSION_ID.match(session_id):
            raise GatewayError("That is not a session id.", code="SESSION_ID_INVALID")
        live = self._live.get(session_id)
        if live is None:
            exists = self.store.get_session(session_id) is not None
            live = LiveSession(session_id, channel, caller, exists=exists)
            self._live[session_id] = live
        return live

    def _new_session(self, channel: str, caller: str) -> LiveSession:
        """A fresh id, never one that is live or recorded: a new connection must not land in
        another caller's session."""
        while True:
            session_id = new_web_session_id()
            if session_id not in self._live and self.store.get_session(session_id) is None:
                live = LiveSession(session_id, channel, caller)
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

    def watch(self, live: LiveSession, channel: Channel) -> None:
        """``channel`` gets ``live``'s frames until it is detached."""
        first = not _local(live)
        live.subscribe(channel)
        self._watching.setdefault(id(channel), set()).add(live.id)
        if first:
            self.fanout.watch(live.id)
        if not live.offered:
            live.offered = True
            self._offer_waiting(live)

    def _offer_waiting(self, live: LiveSession) -> None:
        """A turn a stopped gateway left (an approval it had asked, a paused decision, a turn
        a crash cut off) is resumed once someone is there: the prompt comes back, or the turn
        goes on, without a new message (seed 003 ch. 06); a call it had started with effects
        is asked about first. With several instances the lease holder resumes it."""
        if self.fanout.distributed or self.draining or not live.exists:
            return
        if not _idle(live) or live.control is not None:
            return
        if left_waiting(self.store.get_session(live.id)):
            log.info("session %s: asking again what a stopped gateway was waiting for", live.id)
            live.worker = asyncio.get_running_loop().create_task(self._work(live, resume=True))

    def detach(self, channel: Channel) -> None:
        """A connection is gone: it gets nothing more, its pending approvals are denied, and
        sessions nobody watches or runs are let go (the store keeps them). Only the sessions
        it watched are visited: a thousand connections leaving is not a million steps."""
        for session_id in self._watching.pop(id(channel), ()):
            live = self._live.get(session_id)
            if live is None:
                continue
            live.unsubscribe(channel)
            if not _local(live):
                self.fanout.unwatch(live.id)
            if not live.subscribers and _idle(live):
                del self._live[live.id]
                agent = _let_go(live)
                if agent is not None:
                    self._closing.add(asyncio.ensure_future(agent.model.aclose()))
                    self._closing = {t for t in self._closing if not t.done()}

    # -- requests ---------------------------------------------------------------------------
    def submit(self, message: AcpMessage, reply_to: Channel) -> LiveSession:
        """Queue ``message`` on its session (in order); the reply goes to its subscribers."""
        if message.session_id is None:
            raise GatewayError("A message needs a session.", code="SESSION_REQUIRED")
        if self.draining:
            raise GatewayError(
                "The gateway is shutting down; send it again in a moment.",
                code="GATEWAY_DRAINING",
            )
        live = self.open_session(message.channel, message.caller, message.session_id)
        self.watch(live, reply_to)
        if self.fanout.distributed:
            self._spawn(self._enqueue_shared(live, message))
            return live
        live.queue.put_nowait(message)
        if live.worker is None or live.worker.done():
            live.worker = asyncio.get_running_loop().create_task(self._work(live))
        return live

    def stop(self, session_id: str) -> bool:
        """Cancel the running turn of a session (queued messages stay queued)."""
        live = self._live.get(session_id)
        if live is None or live.control is None:
            if self.fanout.distributed and live is not None:
                self.fanout.send_command(session_id, {"type": "stop"})
                return True
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
        session_id = self._remote_approvals.get(request_id)
        remote = self._live.get(session_id) if session_id else None
        if remote is not None and channel in remote.subscribers:
            del self._remote_approvals[request_id]
            command = {"type": "answer", "requestId": request_id, "answer": answer}
            self.fanout.send_command(remote.id, command)
            return True
        return False

    def is_running(self, session_id: str) -> bool:
        """A turn of the session runs, waits for an approval, or is queued in this gateway."""
        live = self._live.get(session_id)
        return live is not None and (not _idle(live) or live.control is not None)

    @property
    def live_count(self) -> int:
        """Sessions held live (connected, or finishing a turn)."""
        return len(self._live)

    def history(self, session_id: str) -> HistoryFrame:
        live = self.find(session_id)
        items = [i.payload for i in self.store.load_items(live.id)] if live.exists else []
        return HistoryFrame(session_id=live.id, messages=session_messages(items))

    async def start(self) -> None:
        """Connect to the other instances (a no-op for one process)."""
        await self.fanout.start(self)

    async def ready(self) -> bool:
        """Taking messages: not draining, the store answers, the fan-out answers."""
        if self.draining:
            return False
        try:
            self.store.get_session("readyz-probe")
        except Exception:  # noqa: BLE001 - any store failure means "not ready"
            log.warning("readiness: the store does not answer", exc_info=True)
            return False
        return await self.fanout.ready()

    async def drain(self, grace: float) -> None:
        """Shutdown: refuse new messages, let running turns finish for ``grace`` seconds,
        then interrupt the rest (recorded, resumable) and let every lease go."""
        self.draining = True
        workers = {w for live in self._live.values() if (w := live.worker) and not w.done()}
        if workers:
            log.info("draining: waiting up to %.0fs for %d turns", grace, len(workers))
            _done, pending = await asyncio.wait(workers, timeout=grace)
            if pending:
                for live in list(self._live.values()):
                    if live.worker in pending:
                        self.stop(live.id)
                # an interrupted turn records its end before it returns
                await asyncio.wait(pending, timeout=10.0)
        for live in list(self._live.values()):
            if self.fanout.distributed:
                await self.fanout.drop(live.id)

    async def close(self) -> None:
        for live in self._live.values():
            if live.worker is not None:
                live.worker.cancel()
        for task in self._tasks:
            task.cancel()
        for live in self._live.values():
            if live.agent is not None:
                await live.agent.model.aclose()
        await self.fanout.close()

    # -- the other instances (FanoutHandler) ------------------------------------------------
    def deliver(self, session_id: str, frame: ServerFrame) -> None:
        """A frame of a session run elsewhere, to this instance's clients only."""
        live = self._live.get(session_id)
        if live is None:
            return
        if isinstance(frame, ApprovalRequestFrame):
            if len(self._remote_approvals) > 10_000:  # answers that never came
                self._remote_approvals.clear()
            self._remote_approvals[frame.request_id] = session_id
        for channel in _local(live):
            try:
                channel.send(frame)
            except Exception:  # noqa: BLE001 - a gone client must not stop the others
                live.unsubscribe(channel)

    def command(self, session_id: str, command: dict[str, Any]) -> None:
        """A stop or an approval answer given on another instance."""
        live = self._live.get(session_id)
        if live is None:
            return
        if command.get("type") == "stop":
            self.stop(session_id)
        elif command.get("type") == "answer":
            answer = command.get("answer")
            if answer in ("once", "task", "deny"):
                live.answer(str(command.get("requestId")), answer)

    def claim(self, session_id: str) -> None:
        """We hold the lease of a session whose holder went away: run what waits."""
        record = self.store.get_session(session_id)
        if self.draining or (record is not None and Path(record.root).resolve() != self.workdir):
            self._spawn(self.fanout.drop(session_id))  # not ours to run
            return
        kind = "cli" if session_id.startswith("cli-") else "web"
        live = self._live.get(session_id) or self.open_session(kind, "fanout", session_id)
        self._own(live)

    def lost(self, session_id: str) -> None:
        """Another instance may run the session now: this one must stop at once."""
        log.warning("lost the lease of session %s: interrupting its turn", session_id)
        live = self._live.get(session_id)
        if live is not None and live.control is not None:
            self.stop(session_id)

    # -- shared queue -----------------------------------------------------------------------
    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _enqueue_shared(self, live: LiveSession, message: AcpMessage) -> None:
        try:
            holder = await self.fanout.enqueue(message)
        except Exception as err:  # noqa: BLE001 - said to the clients, not swallowed
            log.warning("session %s: the message could not be queued", live.id, exc_info=True)
            frame = ErrorFrame(
                session_id=live.id,
                code="FANOUT_UNAVAILABLE",
                message=redact(f"The message could not be queued: {err}"),
            )
            live.broadcast(frame)
            return
        if holder:
            self._own(live, probe=False)  # our message is there: no need to look first

    def _own(self, live: LiveSession, *, probe: bool = True) -> None:
        """This instance holds the session's lease: run its queue; frames go everywhere."""
        live = self._live.setdefault(live.id, live)
        live.subscribe(self._remote)
        worker = live.worker
        if worker is not None and not worker.done():
            # the lease came back while the last worker was ending: run again after it
            worker.add_done_callback(lambda _task: self._own_again(live))
            return
        live.worker = asyncio.get_running_loop().create_task(self._work_shared(live, probe))

    def _counters(self, session_id: str) -> Callable[[], tuple[int, int, int]]:
        return lambda: self.store.counters(session_id)

    def _own_again(self, live: LiveSession) -> None:
        if self.fanout.holds(live.id) and not self.draining:
            self._own(live)

    async def _work_shared(self, live: LiveSession, probe: bool = True) -> None:
        try:
            while not self.draining:
                try:
                    taken = await self.fanout.take(live.id, self._counters(live.id), probe=probe)
                except LeaseLost:
                    break
                probe = False  # from here on a message is known to wait whenever we look
                if taken is None:
                    if await self.fanout.release(live.id):
                        break
                    continue
                live.broadcast(await self._turn(live, taken.message, taken))
                if not await self.fanout.finish(live.id):  # nothing waits: let go
                    break
        except Exception:  # noqa: BLE001 - Redis away: the lease lapses, another resumes
            log.exception("session %s: the shared queue failed", live.id)
        finally:
            if self.draining:
                await self.fanout.drop(live.id)
            if not self.fanout.holds(live.id):  # else claimed again meanwhile: _own reruns
                live.unsubscribe(self._remote)
                if not live.subscribers and self._live.get(live.id) is live:
                    del self._live[live.id]
                    agent = _let_go(live)
                    if agent is not None:
                        await agent.model.aclose()

    # -- turns ------------------------------------------------------------------------------
    async def _work(self, live: LiveSession, *, resume: bool = False) -> None:
        if resume:
            live.broadcast(await self._turn(live, None))
        while not live.queue.empty():
            message = live.queue.get_nowait()
            if self.draining:  # never recorded: the client is told to send it again
                live.broadcast(_draining_error(live.id))
                continue
            live.broadcast(await self._turn(live, message))
        if not live.subscribers and self._live.get(live.id) is live:
            del self._live[live.id]  # everyone left during the turn: let it go now
            agent = _let_go(live)
            if agent is not None:
                await agent.model.aclose()

    async def _turn(
        self, live: LiveSession, message: AcpMessage | None, taken: Taken | None = None
    ) -> ServerFrame:
        """One turn: ``message`` run or continued, or (None) the session resumed."""
        try:
            agent = live.agent or self._agent_for(live)
        except XclawError as err:
            return ErrorFrame(session_id=live.id, code=err.code, message=redact(err.message))
        if taken is not None and not live.exists:  # another instance may have recorded it
            live.exists = self.store.get_session(live.id) is not None
            if taken.recovered and live.exists:
                ended = self._ended_before_crash(live, taken)
                if ended is not None:
                    return ended
        control = RunControl()
        live.control = control
        unsubscribe = agent.bus.subscribe(lambda ev: _relay(live, ev))
        try:
            # its own task: a stop cancels the turn, never this worker
            run = self._start(agent, live, message, control, taken)
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
        self,
        agent: Agent,
        live: LiveSession,
        message: AcpMessage | None,
        control: RunControl,
        taken: Taken | None = None,
    ) -> RunResult:
        if message is None:  # what a stopped gateway left waiting: asked again, here
            return await agent.resume(live.id, control=control, interrupted="ask")
        if taken is not None and taken.recovered and live.exists:
            if self.store.counters(live.id) != taken.counters:
                # the dead holder had started this message: continue where it stopped
                log.info("session %s: resuming a turn another instance left", live.id)
                return await agent.resume(live.id, control=control)
        if live.exists:
            return await agent.follow_up(live.id, message.content, control=control)
        live.exists = True
        return await agent.run(message.content, control=control, session_id=live.id)

    def _ended_before_crash(self, live: LiveSession, taken: Taken) -> ServerFrame | None:
        """A message the dead holder ran to its end (only the bookkeeping was lost): its
        reply, from the store. None when it must still run or resume."""
        record = self.store.get_session(live.id)
        if record is None or record.state == "running":
            return None
        if self.store.counters(live.id) == taken.counters:
            return None  # never started
        lines = session_messages([i.payload for i in self.store.load_items(live.id)])
        text = lines[-1]["text"] if lines and lines[-1]["role"] == "assistant" else ""
        status = "completed" if record.state == "success" else "interrupted"
        return ReplyFrame(session_id=live.id, text=text, status=status)

    def _agent_for(self, live: LiveSession) -> Agent:
        approver = ChannelApprover(live, timeout=self.approval_timeout)
        live.agent = self.make_agent(EventBus(), approver, live.origin)
        offer_takeovers(live, live.agent)
        return live.agent


class _RemoteChannel:
    """The clients of the other instances, as one subscriber of the sessions this instance
    runs: what it is sent is published to them."""

    name = "remote"

    def __init__(self, fanout: Fanout) -> None:
        self.fanout = fanout

    def send(self, frame: ServerFrame) -> None:
        self.fanout.publish(frame.session_id, frame)


def _local(live: LiveSession) -> list[Channel]:
    return [c for c in live.subscribers if not isinstance(c, _RemoteChannel)]


def _draining_error(session_id: str) -> ErrorFrame:
    return ErrorFrame(
        session_id=session_id,
        code="GATEWAY_DRAINING",
        message="The gateway is shutting down; send it again in a moment.",
    )


def _let_go(live: LiveSession) -> Agent | None:
    """The agent of a session let go, taken from it: the two refer to each other (its
    approver asks the session), and left so they would wait for a full garbage collection,
    which walks the whole heap; apart, both are freed now."""
    agent, live.agent = live.agent, None
    return agent


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
    if event.type == "model.message_complete":  # the turn's usage, for the UI's footer
        usage: dict[str, Any] = {"type": event.type, "payload": _usage(live, event.payload)}
        live.broadcast(EventFrame(session_id=live.id, event=_plain(usage)))
        return
    if event.type.startswith(_RELAYED):
        body = {"type": event.type, "callId": event.tool_call_id, "payload": event.payload}
        live.broadcast(EventFrame(session_id=live.id, event=_plain(body)))


def _usage(live: LiveSession, payload: dict[str, Any]) -> dict[str, Any]:
    """One model answer's model, tokens and cost (None when its price is not known); the
    text is left out: the deltas and the reply carry it."""
    tokens_in, tokens_out = payload.get("input_tokens"), payload.get("output_tokens")
    model = live.agent.model if live.agent is not None else None
    cost = None
    if model is not None and (isinstance(tokens_in, int) or isinstance(tokens_out, int)):
        from xclaw.models.info import model_info

        try:
            cost = model_info(model).cost(tokens_in, tokens_out)
        except Exception:  # noqa: BLE001 - a price is a nicety, never a broken turn
            log.debug("no price for model %s", model.name, exc_info=True)
    return {
        "model": model.name if model is not None else None,
        "input_tokens": tokens_in,
        "output_tokens": tokens_out,
        "cost_usd": cost,
        "tool_calls": payload.get("tool_calls"),
    }


def _plain(body: dict[str, Any]) -> dict[str, Any]:
    """JSON-safe (payloads may hold tuples, paths): what ``json.dumps(default=str)`` would
    give back once loaded, made in one walk that copies only what must change (this runs for
    every relayed event; the JSON round trip was a third of the relay's time)."""
    plain: dict[str, Any] = _json_safe(body)
    return plain


def _json_safe(value: Any) -> Any:
    if value is None or type(value) in (str, int, bool):
        return value
    if type(value) is float:
        return value if math.isfinite(value) else str(value)
    if isinstance(value, dict):
        return {_json_key(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    if isinstance(value, str | int | float):  # subclasses (enums): their plain value
        return json.loads(json.dumps(value, default=str))
    return str(value)


def _json_key(key: Any) -> str:
    if isinstance(key, str):
        return key
    return json.dumps(key) if isinstance(key, int | float | bool) or key is None else str(key)

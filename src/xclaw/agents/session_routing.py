"""Routing in a session that has a team (a gateway session): each new message is routed
before the session's model sees it (seed 003 ch. 09: static rules first, then the intent
router; the rest goes to the orchestrator, the session's own model with the team's tools).

- routed to a **worker**: the turn is the worker's — the message goes to that worker's own
  conversation in this session (``agents.ask``: it remembers the earlier ones) and its
  answer is the turn's reply. The turn is still an ordinary turn of the one loop, recorded
  in the session (a tool call and its result), so it shows in the steps, survives a crash and
  the session's model sees it later; only the model of that turn is ``AskWorker``, which
  decides from the request alone (a resumed turn goes on the same way).
- routed to a **team**: the session's model answers, its workers limited to the team's.
- no route: the session's model with every worker.

The decision is emitted as ``agents.routed`` (shown live, kept in the trace). The session's
agent is built by the composition root (``xclaw.compose.routing.RoutingAgent``, a coding
``Agent``), which enters ``SessionRouting.turn`` around each new message.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import AsyncIterator
from typing import Protocol

from xclaw.agents.routing import Router
from xclaw.agents.team import SessionTeam
from xclaw.core.events import EventBus
from xclaw.core.messages import ToolCallPart, ToolResultPart
from xclaw.core.model import Finish, Model, ModelEvent, ModelRequest, TextDelta, ToolCallEvent
from xclaw.models.wrap import ModelWrapper

__all__ = ["AskWorker", "RoutedAgent", "SessionRouting"]


class AskWorker(ModelWrapper):
    """The model of a turn routed to ``worker``: it calls ``agents.ask`` with the message,
    then answers with what the worker said (or why it could not)."""

    def __init__(self, inner: Model, worker: str, message: str) -> None:
        super().__init__(inner)
        self.worker = worker
        self.message = message
        digest = hashlib.sha256(f"{worker}\0{message}".encode()).hexdigest()[:12]
        self.call_id = f"route_{digest}"

    async def respond(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        answered = _result(request, self.call_id)
        if answered is None:
            arguments = {"worker": self.worker, "message": self.message}
            yield ToolCallEvent(ToolCallPart(self.call_id, "agents.ask", arguments))
            yield Finish("tool_calls")
            return
        if answered.result.ok:
            text = answered.result.message
        else:
            code, why = answered.result.error_code, answered.result.message
            text = f"{self.worker} could not answer ({code}): {why}"
        yield TextDelta(text)
        yield Finish()


def _result(request: ModelRequest, call_id: str) -> ToolResultPart | None:
    """The result of ``call_id`` among the request's last messages (this turn's)."""
    for msg in reversed(request.messages):
        for part in msg.parts:
            if isinstance(part, ToolResultPart) and part.call_id == call_id:
                return part
        if msg.role == "user" and not any(isinstance(p, ToolResultPart) for p in msg.parts):
            return None  # back at the turn's own message: not answered yet
    return None


class RoutedAgent(Protocol):
    """What routing changes of the session's agent for one turn: its model; its bus gets the
    ``agents.routed`` event."""

    model: Model
    bus: EventBus


class SessionRouting:
    """The routing of a session that has a team (see the module doc): ``turn`` around each
    new message of the session's agent."""

    def __init__(self, team: SessionTeam, router: Router, *, channel: str, peer: str) -> None:
        self.team = team
        self.router = router
        self.channel = channel
        self.peer = peer

    @contextlib.asynccontextmanager
    async def turn(self, agent: RoutedAgent, text: str, session_id: str) -> AsyncIterator[None]:
        """Route ``text``, then, for the turn inside: a worker's turn is ``AskWorker``'s, a
        team's turn has the team's workers only; both are undone when the turn ends."""
        route = await self.router.route(
            text, channel=self.channel, peer=self.peer, bus=agent.bus, session_id=session_id
        )
        model = agent.model
        if route.kind == "worker" and route.target is not None:
            agent.model = AskWorker(model, route.target, text)
        elif route.kind == "team":
            self.team.team = route.target
        try:
            yield
        finally:
            agent.model = model
            self.team.team = None

"""A gateway session's agent when its team has routes: the coding ``Agent`` routing each new
message first (``xclaw.agents.session_routing``: rules, then the intent router; a worker's
turn, a team's, or the session's own model)."""

from __future__ import annotations

from typing import Any

from xclaw.agents.session_routing import SessionRouting
from xclaw.coding.agent import Agent
from xclaw.core.state import RunControl, RunResult, new_session_id

__all__ = ["RoutingAgent"]


class RoutingAgent(Agent):
    """The session's agent with ``routing`` entered around each new message (its first, or
    one more)."""

    def __init__(self, *args: Any, routing: SessionRouting, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.routing = routing

    async def run(
        self, task: str, *, control: RunControl | None = None, session_id: str | None = None
    ) -> RunResult:
        sid = session_id or new_session_id()
        async with self.routing.turn(self, task, sid):
            return await super().run(task, control=control, session_id=sid)

    async def follow_up(
        self, session_id: str, text: str, *, control: RunControl | None = None
    ) -> RunResult:
        async with self.routing.turn(self, text, session_id):
            return await super().follow_up(session_id, text, control=control)

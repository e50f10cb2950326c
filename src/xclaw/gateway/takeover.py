"""A ChatGPT page that needs a person, offered to the session's web clients (issue 23).

Under ``xclaw serve`` the dedicated browser usually runs headless: nobody has its window. The
web model's takeover (a challenge, a limit or an error with the page's Retry button) is then
asked like an approval: ``browser.takeover_required`` reaches the session's clients with the
plain reason, the page's redacted URL, a masked screenshot and an ``id``; the answer comes back
the way approvals do (``approval.response`` naming that id, ``Gateway.answer``): ``once`` is
Retry (the adapter presses the page's Retry control, or reloads, and the turn goes on), ``deny``
is Stop (the session pauses). With nobody connected nobody can answer: the takeover fails at
once (``WEB_TAKEOVER_HEADLESS``), as in the CLI; everyone leaving denies it, as it does approvals.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, Literal

from xclaw.models.web import relay_of

if TYPE_CHECKING:
    from xclaw.coding.agent import Agent
    from xclaw.core.tooling import Answer
    from xclaw.gateway.sessions import LiveSession

__all__ = ["offer_takeovers"]


def offer_takeovers(live: LiveSession, agent: Agent) -> None:
    """Route a web model's page events to the session's bus and its takeovers to its clients;
    any other model is left alone."""
    relay = relay_of(agent.model)
    if relay is None:
        return
    relay.to_bus(agent.bus, live.id)
    relay.takeover = lambda takeover: _ask(live, takeover)
    relay.remote = True


def _ask(live: LiveSession, takeover: Any) -> Awaitable[Literal["retry", "stop"]] | None:
    """Registered before the event goes out, so an answer can never arrive first."""
    if not live.subscribers:
        return None
    request_id = str(takeover.id)
    fut: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
    live.approvals[request_id] = fut
    return _answered(live, request_id, fut)


async def _answered(
    live: LiveSession, request_id: str, fut: asyncio.Future[Answer]
) -> Literal["retry", "stop"]:
    try:
        return "stop" if await fut == "deny" else "retry"
    finally:
        live.approvals.pop(request_id, None)

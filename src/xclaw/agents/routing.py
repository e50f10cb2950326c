"""Team routing: which team or worker takes a message, decided before the orchestrator runs.

Static rules first (channel, peer, keywords; the first rule that matches wins), then, when
enabled, an intent router: one model call that must answer with a single team or worker name,
checked against the registry (anything else means "no route"). With no route, the whole
team's orchestrator takes the message. The decision is emitted as an ``agents.routed`` event
and kept with the session.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import asdict, dataclass
from typing import Any, Literal

from xclaw.agents.config import RouteRule, TeamConfig
from xclaw.agents.registry import WorkerRegistry
from xclaw.core.errors import ConfigError, ModelError
from xclaw.core.events import Event, EventBus
from xclaw.core.messages import Message
from xclaw.core.model import Model, ModelRequest, TextDelta

INTENT_TIMEOUT_S = 30.0


@dataclass(frozen=True, slots=True)
class Route:
    target: str | None  # a worker or team name; None: the orchestrator with every worker
    kind: Literal["worker", "team", "orchestrator"]
    by: Literal["rule", "intent", "default"]
    rule: int | None = None  # index of the matching static rule
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _intent_prompt(names: dict[str, str], content: str) -> str:
    listed = "\n".join(f"- {name}: {what}" for name, what in names.items())
    return (
        "Choose who should handle the user's request. Answer with exactly one name from the "
        "list, or null when the request needs several steps or none fits. No other words.\n\n"
        f"{listed}\n\nRequest:\n{content}"
    )


class Router:
    def __init__(
        self,
        registry: WorkerRegistry,
        *,
        rules: list[RouteRule] | None = None,
        teams: dict[str, TeamConfig] | None = None,
        intent_model: Model | None = None,
    ) -> None:
        self.registry = registry
        self.rules = list(rules or [])
        self.teams = dict(teams or {})
        self.intent_model = intent_model
        clash = set(self.teams) & set(registry.names())
        if clash:
            raise ConfigError(
                f"{', '.join(sorted(clash))} is both a team and a worker.",
                hint="Give teams names of their own.",
            )
        for i, rule in enumerate(self.rules):
            if self._kind(rule.target) is None:
                raise ConfigError(
                    f"Route {i + 1} targets {rule.target!r}, which is neither a team nor a worker.",
                    hint=self._hint(),
                )
        for name, team in self.teams.items():
            registry.only(team.workers)  # raises for an unknown member
            del name

    def _hint(self) -> str:
        return (
            "Teams: "
            + (", ".join(self.teams) or "none")
            + "; workers: "
            + ", ".join(self.registry.names())
        )

    def _kind(self, name: str) -> Literal["worker", "team"] | None:
        if name in self.teams:
            return "team"
        if name in self.registry:
            return "worker"
        return None

    def match_rules(self, content: str, *, channel: str | None, peer: str | None) -> Route | None:
        lowered = content.lower()
        for i, rule in enumerate(self.rules):
            if rule.channel is not None and rule.channel != channel:
                continue
            if rule.peer is not None and rule.peer != peer:
                continue
            if rule.keywords and not any(k.lower() in lowered for k in rule.keywords):
                continue
            kind = self._kind(rule.target)
            assert kind is not None  # checked in __init__
            return Route(rule.target, kind, "rule", i, f"rule {i + 1}")
        return None

    async def ask_intent(self, content: str) -> Route | None:
        if self.intent_model is None:
            return None
        names = {n: f"team of {', '.join(t.workers)}" for n, t in self.teams.items()}
        names.update({w.name: w.prompt.split(".")[0] for w in self.registry})
        request = ModelRequest([Message.user(_intent_prompt(names, content))], [])
        chunks: list[str] = []
        try:
            async with asyncio.timeout(INTENT_TIMEOUT_S):
                async for ev in self.intent_model.respond(request):
                    if isinstance(ev, TextDelta):
                        chunks.append(ev.text)
        except (ModelError, TimeoutError) as err:
            return Route(None, "orchestrator", "default", None, f"intent router failed: {err}")
        answer = re.sub(r"[^a-z0-9_-]", "", "".join(chunks).strip().lower())
        kind = self._kind(answer)
        if kind is None:
            said = "".join(chunks).strip()[:80]
            return Route(None, "orchestrator", "default", None, f"intent router said {said!r}")
        return Route(answer, kind, "intent", None, "intent router")

    async def route(
        self,
        content: str,
        *,
        channel: str | None = None,
        peer: str | None = None,
        bus: EventBus | None = None,
        session_id: str = "",
    ) -> Route:
        chosen = self.match_rules(content, channel=channel, peer=peer)
        if chosen is None:
            chosen = await self.ask_intent(content)
        if chosen is None:
            chosen = Route(None, "orchestrator", "default", None, "no rule matched")
        if bus is not None and bus.active:
            payload = {**chosen.to_dict(), "channel": channel, "peer": peer}
            bus.emit(Event("agents.routed", session_id, 0, payload))
        return chosen

    def workers_for(self, route: Route) -> WorkerRegistry:
        """The registry the orchestrator gets for a route (a team: its members only)."""
        if route.kind == "team" and route.target is not None:
            return self.registry.only(self.teams[route.target].workers)
        return self.registry

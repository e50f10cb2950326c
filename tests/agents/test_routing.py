"""Team routing (static rules, the intent router) and the agents config section."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from tests.agents.conftest import Scripts, call, deliver, tree

from xclaw.agents.config import RouteRule, TeamConfig, load_agents_config
from xclaw.agents.registry import WorkerRegistry
from xclaw.agents.routing import Router
from xclaw.agents.team import run_routed
from xclaw.config import load_config
from xclaw.core.errors import ConfigError
from xclaw.core.events import Event, EventBus
from xclaw.models.scripted import ScriptedModel
from xclaw.store.sqlite import SqliteStore

RULES = [
    RouteRule(channel="telegram", peer="alice", target="docs"),
    RouteRule(keywords=["Review", "审查"], target="reviewer"),
    RouteRule(channel="telegram", target="skeptic"),
]
TEAMS = {"docs": TeamConfig(workers=["writer", "reviewer"])}


def test_static_rules_first_match_wins(registry: WorkerRegistry) -> None:
    router = Router(registry, rules=RULES, teams=TEAMS)
    seen: list[Event] = []
    bus = EventBus()
    bus.subscribe(seen.append)

    def route(text: str, **kw: str) -> tuple[str | None, str, int | None]:
        r = asyncio.run(router.route(text, bus=bus, **kw))
        return r.target, r.kind, r.rule

    assert route("hello", channel="telegram", peer="alice") == ("docs", "team", 0)
    assert route("please REVIEW this", channel="telegram", peer="bob") == ("reviewer", "worker", 1)
    assert route("帮我审查代码") == ("reviewer", "worker", 1)
    assert route("hi", channel="telegram", peer="bob") == ("skeptic", "worker", 2)
    assert route("hi", channel="web") == (None, "orchestrator", None)
    assert [e.type for e in seen] == ["agents.routed"] * 5
    assert seen[0].payload["target"] == "docs" and seen[0].payload["by"] == "rule"


def test_rules_and_teams_are_checked_against_the_registry(registry: WorkerRegistry) -> None:
    with pytest.raises(ConfigError, match="neither a team nor a worker"):
        Router(registry, rules=[RouteRule(target="nobody")])
    with pytest.raises(ConfigError, match="not a worker"):
        Router(registry, teams={"t": TeamConfig(workers=["coder", "ghost"])})


def test_the_intent_router_answer_is_validated(registry: WorkerRegistry) -> None:
    def routed(answer: str) -> tuple[str | None, str, str]:
        router = Router(registry, teams=TEAMS, intent_model=ScriptedModel([answer]))
        r = asyncio.run(router.route("make the docs nicer"))
        return r.target, r.kind, r.by

    assert routed("writer") == ("writer", "worker", "intent")
    assert routed("  `Docs`.\n") == ("docs", "team", "intent")
    assert routed("null") == (None, "orchestrator", "default")
    assert routed("rm -rf /") == (None, "orchestrator", "default")


def test_a_rule_beats_the_intent_router(registry: WorkerRegistry) -> None:
    model = ScriptedModel(["writer"])
    router = Router(registry, rules=RULES, intent_model=model, teams=TEAMS)
    r = asyncio.run(router.route("review it"))
    assert (r.target, r.by) == ("reviewer", "rule") and model.position == 0


def test_routed_to_a_worker_or_a_team(
    root: Path, store: SqliteStore, registry: WorkerRegistry
) -> None:
    router = Router(registry, rules=RULES, teams=TEAMS)
    workers = Scripts(
        {
            "reviewer": [[deliver("looks fine")]],
            "writer": [[deliver("documented")]],
        }
    )
    orch_model = ScriptedModel(
        [
            call("agents.delegate", worker="coder", task="not in the team"),
            {
                "expect": {"last_contains": ["WORKER_UNKNOWN", "writer, reviewer"]},
                **call("agents.delegate", worker="writer", task="Document it."),
            },
            "documented by the docs team",
        ]
    )
    orch = tree(
        orch_model,
        root,
        store,
        registry,
        model_for=workers,
    )

    route, direct = asyncio.run(run_routed(orch, router, "review app.py", channel="web"))
    assert route.target == "reviewer" and direct.status == "completed"
    session = store.get_session(direct.session_id)
    assert session is not None and session.parent_session_id is None
    assert session.meta["agents"]["worker"] == "reviewer"
    assert session.meta["agents"]["route"]["by"] == "rule"

    route, team = asyncio.run(run_routed(orch, router, "docs", channel="telegram", peer="alice"))
    assert route.kind == "team" and team.status == "completed", team.reason
    meta = store.get_session(team.session_id).meta["agents"]  # type: ignore[union-attr]
    assert meta["team"] == "docs" and meta["route"]["target"] == "docs"
    workers.assert_all_used()


def test_the_agents_section_merges_user_and_project_files(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = Path(str(tmp_path / "cfg"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(user))
    (user / "xclaw").mkdir(parents=True)
    (user / "xclaw" / "xclaw.yaml").write_text(
        "agents:\n  concurrency: 5\n  workers:\n    coder: {max_turns: 4}\n"
    )
    (root / "xclaw.yaml").write_text(
        "agents:\n  workers:\n    translator: {prompt: Translate., tools: [fs.read]}\n"
        "  routes: [{keywords: [translate], target: translator}]\n"
    )
    cfg = load_agents_config(load_config(root))
    assert cfg.concurrency == 5
    assert set(cfg.workers) == {"coder", "translator"}
    assert cfg.routes[0].target == "translator"
    (root / "xclaw.yaml").write_text("agents:\n  workers:\n    coder: {max_turns: 0}\n")
    with pytest.raises(ConfigError, match="max_turns"):
        load_agents_config(load_config(root))

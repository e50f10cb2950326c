"""`xclaw serve` sessions have the team (seed 003 ch. 09): the session's agent is the
orchestrator, with ``agents.*`` tools beside its own; the workers it delegates to are child
sessions of the gateway session, shown in the web UI's step tree (``/api/sessions/ID``
``children``). A SIGKILL of the gateway while a worker runs, then a restart: the client that
reopens the session sees the turn go on (the cut-off command asked about first); nothing
finished runs again and the tree completes.

Real processes, a real WebSocket, scripted models (the lead's and one per worker, set in the
project's xclaw.yaml), the bwrap sandbox (commands run without asking).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from fake_telegram import FakeTelegram
from playwright.async_api import expect
from pydantic import SecretStr
from serve_process import Frame, api, connect_to, frames_until, serve, stop
from test_web_ui import TOKEN, chromium, log_in

from xclaw.compose.assistant import build_assistant
from xclaw.compose.settings import Overrides, resolve_config
from xclaw.gateway.auth import GatewayAuth
from xclaw.gateway.channels.telegram import TelegramAdapter, TelegramSettings
from xclaw.gateway.gateway import Gateway
from xclaw.gateway.server import GatewayServer, create_app
from xclaw.store.sqlite import open_store

pytestmark = pytest.mark.timeout(180)
BOT_TOKEN = "123456789:AAHfakeTelegramBotTokenForTests-0123456"
PEER = 1001


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def _deliver(summary: str) -> dict[str, Any]:
    return _call("deliver", summary=summary)


def _team(root: Path, scripts: Path, lead: list[Any], workers: dict[str, list[Any]]) -> str:
    """The project's xclaw.yaml: each worker's scripted model; the lead's model spec."""
    scripts.mkdir()
    models = {}
    for name, turns in workers.items():
        (scripts / f"{name}.yaml").write_text(yaml.safe_dump(turns))
        models[name] = {"model": f"scripted:{scripts / f'{name}.yaml'}"}
    (root / "xclaw.yaml").write_text(yaml.safe_dump({"agents": {"workers": models}}))
    (scripts / "lead.yaml").write_text(yaml.safe_dump(lead))
    return f"scripted:{scripts / 'lead.yaml'}"


# The conversation, not its last message: a resume after a cut-off call (on record before
# its workers started) adds the resume notice after the call's settled result.
LEAD = [
    _call("agents.delegate", worker="coder", task="Write the greeting."),
    {
        "expect": {"history_contains": ["greeting written"]},
        **_call("agents.delegate", worker="reviewer", task="Review."),
    },
    {"expect": {"history_contains": ["looks right"]}, "text": "Written and reviewed."},
]


def test_a_serve_session_delegates_to_two_workers_and_shows_them(
    root: Path, tmp_path: Path
) -> None:
    lead = _team(
        root,
        tmp_path / "scripts",
        LEAD,
        {"coder": [_deliver("greeting written")], "reviewer": [_deliver("looks right")]},
    )

    async def one_turn(port: int) -> tuple[str, list[Frame]]:
        ws, sid = await connect_to(port)
        await ws.send(json.dumps({"type": "message", "content": "Greet, then review it."}))
        frames = await frames_until(ws, "reply", wait=60)
        await ws.close()
        return sid, frames

    proc, port = serve(root, tmp_path / "serve.log", "-m", lead, "--sandbox", "bwrap")
    try:
        sid, frames = asyncio.run(one_turn(port))
        detail = api(port, f"/api/sessions/{sid}")
    finally:
        stop(proc)
    reply = frames[-1]
    assert (reply["text"], reply["status"]) == ("Written and reviewed.", "completed"), frames
    started = [
        f["event"]["payload"]["worker"]
        for f in frames
        if f["type"] == "event" and f["event"]["type"] == "agents.child_started"
    ]
    assert started == ["coder", "reviewer"]  # the client saw the workers start, live
    children = detail["children"]
    assert [(c["worker"], c["state"]) for c in children] == [
        ("coder", "success"),
        ("reviewer", "success"),
    ]
    step_ids = {s["id"] for s in detail["steps"]}
    for child in children:
        assert child["id"].startswith(f"{sid}.")
        assert child["step"] in step_ids  # hung under the delegate call that started it
        assert any(s["name"] == "deliver" for s in child["steps"])


def test_a_gateway_killed_mid_worker_resumes_the_tree_on_reconnect(
    root: Path, tmp_path: Path
) -> None:
    lead = _team(
        root,
        tmp_path / "scripts",
        LEAD,
        {
            "coder": [
                _call("terminal.exec", program="sh", argv=["-c", "echo once >> journal.txt"]),
                _call("terminal.exec", program="sleep", argv=["30"]),
                _deliver("greeting written"),
            ],
            "reviewer": [_deliver("looks right")],
        },
    )
    log = tmp_path / "serve.log"

    def coder_sleeping(sid: str) -> bool:
        with open_store() as store:
            return any(
                e.name == "terminal.exec" and e.arguments.get("program") == "sleep"
                for child in store.list_children(sid)
                for e in store.load_ledger(child.id)
                if e.phase == "started"
            )

    async def killed_mid_worker(proc: Any, port: int) -> str:
        ws, sid = await connect_to(port)
        await ws.send(json.dumps({"type": "message", "content": "Greet, then review it."}))
        for _ in range(600):
            if coder_sleeping(sid):
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("the coder never reached its sleep")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=15)
        await ws.close()
        return sid

    proc, port = serve(root, log, "-m", lead, "--sandbox", "bwrap")
    try:
        sid = asyncio.run(killed_mid_worker(proc, port))
    finally:
        stop(proc)

    async def reopened(port: int) -> list[Frame]:
        ws, again = await connect_to(port, sid)
        assert again == sid
        # nothing is sent: the cut-off turn goes on, the cut-off sleep asked about first
        asked = await frames_until(ws, "approval.request", wait=60)
        assert "sleep" in asked[-1]["summary"], asked[-1]
        answer = {"type": "approval.response", "requestId": asked[-1]["requestId"]}
        await ws.send(json.dumps({**answer, "answer": "deny"}))  # do not run it again
        done = await frames_until(ws, "reply", wait=60)
        await ws.close()
        return asked + done

    proc, port = serve(root, log, "-m", lead, "--sandbox", "bwrap")
    try:
        frames = asyncio.run(reopened(port))
        detail = api(port, f"/api/sessions/{sid}")
    finally:
        stop(proc)
    replies = [f for f in frames if f["type"] == "reply"]
    assert [(r["text"], r["status"]) for r in replies] == [("Written and reviewed.", "completed")]
    assert (root / "journal.txt").read_text() == "once\n"  # the finished command did not rerun
    assert [(c["worker"], c["state"]) for c in detail["children"]] == [
        ("coder", "success"),
        ("reviewer", "success"),
    ]
    with open_store() as store:
        (coder, reviewer) = store.list_children(sid)
        commands = [e for e in store.load_ledger(coder.id) if e.name == "terminal.exec"]
        assert len(commands) == 2  # the echo and the skipped sleep, each recorded once
        assert len(store.load_ledger(reviewer.id)) == 1  # one deliver: run once
        delegates = [e for e in store.load_ledger(sid) if e.name == "agents.delegate"]
        assert len(delegates) == 2 and all(e.result is not None for e in delegates)
        assert store.get_session(sid).state == "success"  # type: ignore[union-attr]


@contextlib.asynccontextmanager
async def _assistant(root: Path, tmp_path: Path) -> AsyncIterator[tuple[Any, Gateway]]:
    """In this process, the gateway `xclaw serve` builds (the composition root), its
    sessions' lead and workers on the two-delegation script."""
    lead = _team(
        root,
        tmp_path / "scripts",
        LEAD,
        {"coder": [_deliver("greeting written")], "reviewer": [_deliver("looks right")]},
    )
    store = open_store()
    overrides = Overrides(model=lead, sandbox="bwrap")
    assistant = build_assistant(resolve_config(root), root, overrides, store=store)
    gateway = Gateway(assistant.make_agent, store, workdir=root)
    try:
        yield store, gateway
    finally:
        await gateway.close()
        store.close()


async def test_a_chat_peer_gets_the_team_too(root: Path, tmp_path: Path) -> None:
    """The same assistant behind a chat channel (Telegram, against its fake Bot API): built
    by the composition root `xclaw serve` uses, so the channel's sessions have the team."""
    team = _assistant(root, tmp_path)
    async with team as (store, gateway), FakeTelegram(BOT_TOKEN, max_wait=0.5) as fake:
        settings = TelegramSettings(
            bot_token=SecretStr(BOT_TOKEN), base_url=fake.base_url, poll_timeout=5
        )
        adapter = TelegramAdapter(gateway, settings)
        await adapter.start()
        try:
            await fake.user_says(PEER, "Greet, then review it.")
            await fake.wait_for(PEER, "Written and reviewed.", wait=60)
        finally:
            await adapter.stop()
        (session,) = [s for s in store.list_sessions(root=str(root)) if not s.parent_session_id]
        children = store.list_children(session.id)
        workers = [(c.meta["agents"]["worker"], c.state) for c in children]
        assert workers == [("coder", "success"), ("reviewer", "success")]


def test_a_routed_message_goes_to_the_workers_own_conversation(root: Path, tmp_path: Path) -> None:
    """A route rule (keyword) sends a message straight to a worker: the worker answers from
    its own conversation in the session, which it keeps across messages (seed 003 ch. 09's
    resident panel); unrouted messages go to the session's model, the orchestrator."""
    lead = _team(
        root,
        tmp_path / "scripts",
        [_call("agents.delegate", worker="coder", task="Greet."), "The coder greeted."],
        {
            "coder": [_deliver("greeting written")],
            "reviewer": [
                _deliver("first review: fine"),
                {"expect": {"history_contains": ["review the greeting"]}, **_deliver("still fine")},
            ],
        },
    )
    config = yaml.safe_load((root / "xclaw.yaml").read_text())
    config["agents"]["routes"] = [{"keywords": ["review"], "target": "reviewer"}]
    (root / "xclaw.yaml").write_text(yaml.safe_dump(config))

    async def three_turns(port: int) -> tuple[str, list[list[Frame]]]:
        ws, sid = await connect_to(port)
        turns = []
        for text in ("Greet the user.", "Please review the greeting.", "Review it once more."):
            await ws.send(json.dumps({"type": "message", "content": text}))
            turns.append(await frames_until(ws, "reply", wait=60))
        await ws.close()
        return sid, turns

    proc, port = serve(root, tmp_path / "serve.log", "-m", lead, "--sandbox", "bwrap")
    try:
        sid, turns = asyncio.run(three_turns(port))
        detail = api(port, f"/api/sessions/{sid}")
    finally:
        stop(proc)
    assert [t[-1]["text"] for t in turns] == [
        "The coder greeted.",
        "first review: fine",
        "still fine",
    ]
    routes = [
        [f["event"]["payload"] for f in turn if f.get("event", {}).get("type") == "agents.routed"]
        for turn in turns
    ]
    assert [r[0]["kind"] for r in routes] == ["orchestrator", "worker", "worker"]
    assert routes[1][0]["target"] == "reviewer"
    # one conversation of the reviewer (both messages), one delegated coder child
    assert sorted((c["worker"], c["id"]) for c in detail["children"]) == [
        ("coder", next(c["id"] for c in detail["children"] if c["worker"] == "coder")),
        ("reviewer", f"{sid}.reviewer"),
    ]
    with open_store() as store:
        asks = [e for e in store.load_ledger(sid) if e.name == "agents.ask"]
        assert len(asks) == 2 and all(e.result and e.result["ok"] for e in asks)
        delivers = [e for e in store.load_ledger(f"{sid}.reviewer") if e.name == "deliver"]
        assert len(delivers) == 2


async def test_the_web_ui_shows_the_workers_under_the_step_that_started_them(
    root: Path, tmp_path: Path
) -> None:
    """In real Chromium: after the turn, the step tree holds each worker's child session
    (its name, its state, its own steps) inside the delegate step that started it."""
    async with _assistant(root, tmp_path) as (_store, gateway), chromium() as browser:
        server = GatewayServer(create_app(gateway, GatewayAuth(token=TOKEN))).start()
        try:
            page = await browser.new_page()
            await log_in(page, server, TOKEN)
            await expect(page.locator("#conn-status")).to_have_text("connected")
            await page.locator("#composer-input").fill("Greet, then review it.")
            await page.keyboard.press("Enter")
            await expect(page.locator(".msg.final")).to_contain_text("Written and reviewed.")
            await page.locator("#steps summary").click()
            workers = page.locator("[data-child-session]")
            await expect(workers).to_have_count(2)
            await expect(workers.nth(0)).to_contain_text("coder")
            await expect(workers.nth(1)).to_contain_text("reviewer")
            await expect(workers.nth(0)).to_contain_text("success")
            # inside the step of the call that started it, with its own steps below
            parent = workers.nth(0).locator("xpath=ancestor::li[@data-step-id][1]")
            assert await parent.get_attribute("data-step-id")
            await expect(workers.nth(0).locator(".step-name", has_text="deliver")).to_have_count(1)
            # the session list holds the conversation, not its workers' sessions
            await expect(page.locator("#session-list li")).to_have_count(1)
            await page.screenshot(path=str(tmp_path / "step-tree.png"), full_page=True)
        finally:
            server.stop()

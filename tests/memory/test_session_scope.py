"""``memory.save scope=session`` wherever memory is offered: the tools take the session of
the run making the call, so one runtime serves every session of a gateway (concurrently, each
its own scope) and ``xclaw run --memory`` saves to its run's session."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import yaml
from tests.memory.conftest import StoreFactory, memory_agent
from typer.testing import CliRunner

from xclaw.cli.app import app
from xclaw.core.model import ModelRequest
from xclaw.dirs import config_dir
from xclaw.memory.base import MemoryScopes, Scope
from xclaw.memory.runtime import open_memory
from xclaw.memory.settings import MemoryConfig, memory_dir
from xclaw.models.scripted import ScriptedModel
from xclaw.tools.base import ToolContext, Workspace

ALICE = Scope("user", "alice")
A_FACT = "This conversation is about ticket ABC-123: the login page times out."
B_FACT = "This conversation is about ticket XYZ-9: invoices show the wrong currency."
NO_EXTRACT = MemoryConfig.model_validate({"extract": {"enabled": False}})


def _saver(text: str) -> ScriptedModel:
    call = {"name": "memory.save", "arguments": {"text": text, "scope": "session"}}
    return ScriptedModel([{"tool_calls": [call]}, "Saved for this chat."])


async def test_one_runtime_gives_each_session_its_own_scope(
    open_sqlite: StoreFactory, root: Path
) -> None:
    store = open_sqlite()
    # As `xclaw serve` builds it: one runtime, no session scope of its own.
    memory = open_memory(NO_EXTRACT, MemoryScopes(ALICE), store=store, warm_up=False)
    a, b = await asyncio.gather(
        memory_agent(_saver(A_FACT), root, memory).run("note the ticket", session_id="chat-a"),
        memory_agent(_saver(B_FACT), root, memory).run("note the ticket", session_id="chat-b"),
    )
    for result, sid in ((a, "chat-a"), (b, "chat-b")):
        saved = result.tool_calls[0].result
        assert saved.ok, saved
        assert saved.data["scope"] == f"session:{sid}"
    [item] = store.list(scopes=[Scope("session", "chat-a")])
    assert item.text == A_FACT and item.metadata["session_id"] == "chat-a"
    assert store.list(scopes=[ALICE]) == []  # nothing leaked into the user scope

    # The same session later recalls its own note, never the other session's.
    later = ScriptedModel(["ABC-123."])
    await memory_agent(later, root, memory).run(
        "which ticket is this chat about?", session_id="chat-a"
    )
    sent = _system(later.requests[0])
    assert A_FACT in sent and B_FACT not in sent
    elsewhere = ScriptedModel(["None yet."])
    await memory_agent(elsewhere, root, memory).run("which ticket is this chat about?")
    assert A_FACT not in _system(elsewhere.requests[0])


def _system(request: ModelRequest) -> str:
    return request.messages[0].text


def test_run_memory_saves_to_the_runs_session(root: Path, tmp_path: Path) -> None:
    user = config_dir() / "xclaw.yaml"
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text(yaml.safe_dump({"memory": {"extract": {"enabled": False}}}))
    call = {"id": "m1", "name": "memory.save", "arguments": {"text": A_FACT, "scope": "session"}}
    script = tmp_path / "save.yaml"
    script.write_text(yaml.safe_dump([{"tool_calls": [call]}, "Saved."]))
    out = CliRunner().invoke(
        app, ["run", "-C", str(root), "-m", f"scripted:{script}", "--memory", "note the ticket"]
    )
    assert out.exit_code == 0, out.output
    db = sqlite3.connect(memory_dir() / "memory.db")
    try:
        [(scope, kind, metadata)] = db.execute("SELECT scope, kind, metadata FROM memories")
    finally:
        db.close()
    session = json.loads(metadata)["session_id"]
    assert session and scope == f"session:{session}" and kind == "fact"


async def test_the_session_comes_from_the_call_not_from_an_earlier_model_call(
    open_sqlite: StoreFactory, root: Path
) -> None:
    # A resume settles a cut-off ``memory.save`` before any model call of the new process:
    # the call's own context names its session, no hook has to have run first.
    store = open_sqlite()
    memory = open_memory(NO_EXTRACT, MemoryScopes(ALICE), store=store, warm_up=False)
    save = next(t for t in memory.tools() if t.name == "memory.save")
    ctx = ToolContext(Workspace(root), lambda _stream, _text: None, "c1", session_id="chat-z")
    result = await save.fn(ctx, text=A_FACT, scope="session", kind="fact")
    assert result.ok, result
    assert result.data["scope"] == "session:chat-z"
    outside = ToolContext(Workspace(root), lambda _stream, _text: None, "c2")
    refused = await save.fn(outside, text=B_FACT, scope="session", kind="fact")
    assert not refused.ok and refused.error_code == "MEMORY_SCOPE_UNAVAILABLE"

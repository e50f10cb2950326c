"""Acceptance: a fact saved in one scripted session is recalled into the next session's
system prompt (what the model received), in both backends, and never in another user's."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from tests.memory.conftest import StoreFactory

from xclaw.coding.agent import Agent
from xclaw.core.model import ModelRequest
from xclaw.memory.base import MemoryScopes, NewMemory, Scope
from xclaw.memory.recall import RECALL_HEADING
from xclaw.memory.runtime import MemoryRuntime, open_memory
from xclaw.memory.settings import MemoryConfig
from xclaw.models.scripted import FunctionModel, ModelTurn, ScriptedModel

SECRET = "sk-proj-abcdefghijklmnopqrstuvwxyz123456"
FACT = "The user writes TypeScript with 2-space indentation and no semicolons."


def _scopes(user: str, root: Path, session: str) -> MemoryScopes:
    return MemoryScopes(Scope("user", user), Scope("project", str(root)), Scope("session", session))


def _memory(
    store_factory: StoreFactory, scopes: MemoryScopes, model: object = None
) -> MemoryRuntime:
    return open_memory(MemoryConfig(), scopes, model=model, store=store_factory())  # type: ignore[arg-type]


def _agent(model: object, root: Path, memory: MemoryRuntime) -> Agent:
    return Agent(
        model,  # type: ignore[arg-type]
        root,
        tools=memory.tools(),
        hooks=memory.hooks(),
        approval="allow",
        evidence_gate_enabled=False,
    )


def _system(request: ModelRequest) -> str:
    assert request.messages[0].role == "system"
    return request.messages[0].text


async def test_saved_fact_is_recalled_in_the_next_session(
    open_store: StoreFactory, root: Path
) -> None:
    first = ScriptedModel(
        [
            {"tool_calls": [{"name": "memory.save", "arguments": {"text": FACT}}]},
            "Noted: TypeScript, two spaces, no semicolons.",
        ]
    )
    memory = _memory(open_store, _scopes("alice", root, "s1"))
    result = await _agent(first, root, memory).run(
        "I always write TypeScript with two-space indents and no semicolons. Remember that."
    )
    assert result.ok, result.reason
    saved = result.tool_calls[0]
    assert saved.name == "memory.save" and saved.result.ok, saved.result
    first.assert_complete()

    second = ScriptedModel(["Here is the module, in your style."])
    memory = _memory(open_store, _scopes("alice", root, "s2"))
    result = await _agent(second, root, memory).run("Write a TypeScript HTTP client module.")
    assert result.ok, result.reason
    sent = _system(second.requests[0])
    assert sent.rstrip().endswith(FACT)  # at the END of the system prompt
    assert RECALL_HEADING in sent
    assert FACT not in result.messages[0].text  # the stored transcript is untouched

    other = ScriptedModel(["Done."])
    memory = _memory(open_store, _scopes("bob", root, "s3"))
    await _agent(other, root, memory).run("Write a TypeScript HTTP client module.")
    assert FACT not in _system(other.requests[0])


async def test_forget_and_search_tools_stay_in_scope(open_sqlite: StoreFactory, root: Path) -> None:
    store = open_sqlite()
    [bob_id] = store.save([NewMemory("Bob deploys on Fridays", Scope("user", "bob"))])
    model = ScriptedModel(
        [
            {
                "tool_calls": [
                    {"name": "memory.search", "arguments": {"query": "deploys on Fridays"}},
                    {"name": "memory.forget", "arguments": {"id": bob_id}},
                ]
            },
            "Nothing to forget.",
        ]
    )
    memory = open_memory(MemoryConfig(), _scopes("alice", root, "s1"), store=store)
    result = await _agent(model, root, memory).run("Forget what you know about deploys.")
    search, forget = result.tool_calls
    assert search.result.ok and search.result.data["results"] == []
    assert not forget.result.ok and forget.result.error_code == "MEMORY_NOT_FOUND"
    assert store.get(bob_id, scopes=[Scope("user", "bob")]) is not None


async def test_extracted_facts_are_recalled_next_time(
    open_sqlite: StoreFactory, root: Path
) -> None:
    """No tool call: the finished session is distilled in the background by the model."""
    asked: list[ModelRequest] = []

    def answer(messages: object, request: ModelRequest) -> ModelTurn:
        if "long-term memory" in request.messages[0].text:  # the extraction request
            asked.append(request)
            return ModelTurn(text=f"- {FACT}\n- {FACT}\n- none")
        return ModelTurn(text="Sure, here is the code.")

    model = FunctionModel(answer)
    task = "Please write TypeScript for me: two-space indentation, never semicolons. " * 4
    memory = _memory(open_sqlite, _scopes("alice", root, "s1"), model)
    result = await _agent(model, root, memory).run(task)
    assert result.ok
    await memory.drain(30)
    assert len(asked) == 1 and task.strip()[:40] in asked[0].messages[1].text
    assert memory.extractor is not None and memory.extractor.results[0]["ok"] is True
    [item] = memory.store.list(scopes=[Scope("user", "alice")])
    assert item.text == FACT and item.metadata["session_id"] == result.session_id
    assert item.metadata["origin"] == "session"

    # The same facts again are recognised as already known.
    await memory.extractor.extract(result.messages, "s1-again")
    assert len(memory.store.list(scopes=[Scope("user", "alice")])) == 1

    second = ScriptedModel(["ok"])
    memory = _memory(open_sqlite, _scopes("alice", root, "s2"))
    await _agent(second, root, memory).run("Start a new TypeScript file.")
    assert FACT in _system(second.requests[0])


async def test_a_failing_extraction_is_logged_not_raised(
    open_sqlite: StoreFactory, root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    calls = 0

    def answer(messages: object, request: ModelRequest) -> ModelTurn:
        nonlocal calls
        calls += 1
        if calls > 1:
            raise OSError("the model's connection dropped")
        return ModelTurn(text="done")

    model = FunctionModel(answer)
    memory = _memory(open_sqlite, _scopes("alice", root, "s1"), model)
    with caplog.at_level(logging.WARNING, logger="xclaw.memory"):
        result = await _agent(model, root, memory).run("x" * 300)
        await memory.drain(30)
    assert result.ok and result.reply == "done"
    assert memory.extractor is not None and memory.extractor.results[0]["ok"] is False
    assert "connection dropped" in caplog.text


async def test_save_tool_skips_duplicates_and_unknown_scopes(
    open_sqlite: StoreFactory, root: Path
) -> None:
    store = open_sqlite()
    model = ScriptedModel(
        [
            {
                "tool_calls": [
                    {"name": "memory.save", "arguments": {"text": FACT}},
                    {"name": "memory.save", "arguments": {"text": FACT.upper()}},
                    {"name": "memory.save", "arguments": {"text": FACT, "scope": "project"}},
                    {"name": "memory.save", "arguments": {"text": f"Deploy key: {SECRET}"}},
                ]
            },
            "ok",
        ]
    )
    scopes = MemoryScopes(Scope("user", "alice"))  # no project
    memory = open_memory(MemoryConfig(), scopes, store=store)
    result = await _agent(model, root, memory).run("remember my style")
    first, again, project, secret = (c.result for c in result.tool_calls)
    assert first.ok and again.ok and again.data["duplicate"] is True
    assert again.data["id"] == first.data["id"]
    assert not project.ok and project.error_code == "MEMORY_SCOPE_UNAVAILABLE"
    assert secret.ok
    texts = [i.text for i in store.list(scopes=scopes.visible)]
    assert len(texts) == 2 and all(SECRET not in t for t in texts)

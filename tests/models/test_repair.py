"""Tool-call repair for native models (xclaw.models.repair), alone and in the loop.

The replies here are SYNTHETIC: written by hand in the shapes small models (the Qwen2.5-Coder
family above all) put their calls in when the server's tool parser misses them. Replies
recorded from the real local model live in tests/models/fixtures/local_qwen/ and are read by
test_local_qwen_fixtures.py.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from xclaw import Agent, ScriptedModel
from xclaw.coding.toolset import coding_registry
from xclaw.core.errors import ProtocolViolation
from xclaw.core.events import Event, EventBus
from xclaw.core.messages import Message, TextPart, ToolCallPart
from xclaw.core.model import Finish, Model, ModelEvent, ModelRequest, TextDelta, ToolCallEvent
from xclaw.core.tooling import ToolSpec
from xclaw.models.repair import NotExecuted, RepairToolCalls, read_text_call
from xclaw.store.open import open_store

SPECS: list[ToolSpec] = [t.spec for t in coding_registry()]
WRITE = {"path": "hello.py", "content": "print('hello')\n"}


def _call(name: str, arguments: dict[str, Any], **extra: Any) -> str:
    return json.dumps({"name": name, "arguments": arguments, **extra})


REPAIRED = {
    "bare JSON, wire name": (_call("fs_write", WRITE), "fs.write", WRITE),
    "bare JSON, real name": (_call("fs.write", WRITE), "fs.write", WRITE),
    "fenced json": (
        '```json\n{\n  "name": "fs_read",\n  "arguments": {\n    "path": "hello.py"\n  }\n}\n```',
        "fs.read",
        {"path": "hello.py"},
    ),
    "Qwen tool_call tags printed": (
        '<tool_call>\n{"name": "fs_list", "arguments": {"path": "."}}\n</tool_call>',
        "fs.list",
        {"path": "."},
    ),
    "Qwen tool_call tag, closing tag swallowed": (
        '<tool_call>\n{"name": "fs_read", "arguments": {"path": "hello.py"}}',
        "fs.read",
        {"path": "hello.py"},
    ),
    "function and parameters": (
        '{"function": "fs_write", "parameters": ' + json.dumps(WRITE) + "}",
        "fs.write",
        WRITE,
    ),
    "OpenAI item with arguments as a JSON string": (
        json.dumps(
            {
                "type": "function",
                "function": {"name": "fs_read", "arguments": json.dumps({"path": "a.py"})},
            }
        ),
        "fs.read",
        {"path": "a.py"},
    ),
    "a list of one": ("[" + _call("fs_read", {"path": "a.py"}) + "]", "fs.read", {"path": "a.py"}),
    "short lead-in before a fence": (
        "To create the file I will use fs.write:\n```json\n" + _call("fs_write", WRITE) + "\n```",
        "fs.write",
        WRITE,
    ),
    "a call without arguments": (
        '{"name": "project_status", "arguments": {}}',
        "project.status",
        {},
    ),
}


@pytest.mark.parametrize("name", sorted(REPAIRED))
def test_one_valid_call_in_text_is_repaired(name: str) -> None:
    text, tool, arguments = REPAIRED[name]
    call = read_text_call(text, SPECS)
    assert isinstance(call, ToolCallPart), call
    assert call.repaired and call.name == tool and call.arguments == arguments
    assert read_text_call(text, SPECS) == call  # the same reply gets the same id


NOT_EXECUTED = {
    "two calls": (
        _call("fs_read", {"path": "a.py"}) + "\n" + _call("fs_read", {"path": "b.py"}),
        "2 tool calls",
    ),
    "a list of two": (
        "[" + _call("fs_read", {"path": "a"}) + ", " + _call("fs_list", {}) + "]",
        "2 tool calls",
    ),
    "unknown tool": (_call("write_file", WRITE), "'write_file', which is not a tool"),
    "missing argument": (_call("fs_write", {"path": "hello.py"}), "'content' is a required"),
    "wrong type": (_call("fs_read", {"path": "a", "max_lines": "ten"}), "max_lines"),
    "extra argument": (_call("fs_read", {"path": "a", "encoding": "utf8"}), "encoding"),
    "arguments not an object": ('{"name": "fs_read", "arguments": "a.py"}', "JSON object"),
    "prose with a JSON example": (
        "Here is how the project is organised. " * 15
        + "You could read it with "
        + _call("fs_read", {"path": "a.py"})
        + " whenever you like.",
        "inside a longer text",
    ),
}


@pytest.mark.parametrize("name", sorted(NOT_EXECUTED))
def test_call_shaped_text_that_is_not_one_valid_call_is_not_executed(name: str) -> None:
    text, reason = NOT_EXECUTED[name]
    outcome = read_text_call(text, SPECS)
    assert isinstance(outcome, NotExecuted), outcome
    assert reason in outcome.reason
    feedback = outcome.feedback(SPECS)
    assert "NOT executed" in feedback and "nothing ran" in feedback
    assert "tool-calling interface" in feedback and "fs.write" in feedback


@pytest.mark.parametrize(
    "text",
    [
        "Done: hello.py prints hello, and `python3 hello.py` printed hello.",
        'I wrote package.json:\n```json\n{"name": "demo", "version": "1.0.0"}\n```',
        "The list [1, 2, 3] and the set {a, b} are not JSON calls.",
        '{"name": "demo", "scripts": {"build": "vite build"}}',
        "",
    ],
)
def test_text_without_a_call_is_left_alone(text: str) -> None:
    assert read_text_call(text, SPECS) is None


def test_nothing_is_read_when_no_tools_were_offered() -> None:
    assert read_text_call(_call("fs_write", WRITE), []) is None


# -------------------------------------------------------------------------- the wrapper


async def _events(model: RepairToolCalls, tools: list[ToolSpec]) -> list[Any]:
    return [ev async for ev in model.respond(ModelRequest([Message.user("go")], tools))]


async def test_a_call_written_as_text_becomes_the_call_and_is_not_shown_as_text() -> None:
    inner = ScriptedModel([{"text": _call("fs_write", WRITE)}])
    events = await _events(RepairToolCalls(inner), SPECS)
    assert not any(isinstance(e, TextDelta) for e in events)  # held, then it was the call
    assert isinstance(events[0], ToolCallEvent) and events[0].call.repaired
    assert events[-1] == Finish("tool_calls")


async def test_prose_streams_at_once_and_held_json_that_is_no_call_comes_out() -> None:
    class Chunks(Model):
        async def respond(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
            for piece in ("Done", ": hello.py ", "prints hello."):
                written.append(piece)
                yield TextDelta(piece)
            yield Finish("stop")

    written: list[str] = []
    out: list[tuple[Any, list[str]]] = []
    async for ev in RepairToolCalls(Chunks()).respond(ModelRequest([], SPECS)):
        out.append((ev, list(written)))
    assert out[0] == (TextDelta("Done"), ["Done"])  # shown before the rest was written
    assert [e for e, _ in out] == [
        TextDelta("Done"),
        TextDelta(": hello.py "),
        TextDelta("prints hello."),
        Finish("stop"),
    ]
    without_tools = RepairToolCalls(Chunks()).respond(ModelRequest([], []))
    assert [e async for e in without_tools][:3] == [e for e, _ in out][:3]
    answer = '{"name": "demo", "version": "1.0.0"}'
    events = await _events(RepairToolCalls(ScriptedModel([answer])), SPECS)
    assert events[0] == TextDelta(answer) and events[-1] == Finish("stop")


async def test_the_wrapper_leaves_native_calls_and_tool_less_requests_alone() -> None:
    native = ScriptedModel([{"tool_calls": [{"name": "fs.read", "arguments": {"path": "a"}}]}])
    events = await _events(RepairToolCalls(native), SPECS)
    calls = [e for e in events if isinstance(e, ToolCallEvent)]
    assert len(calls) == 1 and not calls[0].call.repaired
    plain = ScriptedModel([{"text": _call("fs_write", WRITE)}])
    events = await _events(RepairToolCalls(plain), [])
    assert not any(isinstance(e, ToolCallEvent) for e in events)


async def test_the_wrapper_raises_a_coded_violation_with_the_corrective_message() -> None:
    inner = ScriptedModel([{"text": _call("shell", {"cmd": "ls"})}])
    with pytest.raises(ProtocolViolation) as info:
        await _events(RepairToolCalls(inner), SPECS)
    assert info.value.code == "TOOL_CALL_AS_TEXT"
    assert "NOT executed" in info.value.feedback
    assert info.value.reply_text == _call("shell", {"cmd": "ls"})


# ----------------------------------------------------------------------------- the loop


async def test_a_repaired_call_runs_and_is_marked_in_events_and_the_stored_step(
    root: Path, tmp_path: Path
) -> None:
    inner = ScriptedModel(
        [
            {"text": "```json\n" + _call("fs_write", WRITE) + "\n```"},
            {"text": "Created hello.py."},
        ]
    )
    events: list[Event] = []
    bus = EventBus()
    bus.subscribe(events.append)
    store = open_store(tmp_path / "x.db")
    agent = Agent(RepairToolCalls(inner), root, bus=bus, store=store)
    result = await agent.run("create hello.py that prints hello")
    assert result.ok, result.reason
    assert (root / "hello.py").read_text() == WRITE["content"]
    assistant = next(m for m in result.messages if m.role == "assistant")
    # The text was the call: the message keeps the call only, marked as repaired.
    assert not any(isinstance(p, TextPart) for p in assistant.parts)
    assert [c.repaired for c in assistant.tool_calls] == [True]
    proposed = [e for e in events if e.type == "tool.proposed"]
    assert proposed[0].payload["repaired"] is True
    complete = [e for e in events if e.type == "model.message_complete"]
    assert complete[0].payload["repaired_tool_calls"] == 1
    steps = [s for s in store.list_steps(result.session_id) if s.kind == "llm_call"]
    assert steps[0].output["tool_calls"][0]["repaired"] is True
    inner.assert_complete()


async def test_call_shaped_text_gets_the_corrective_message_and_nothing_runs(root: Path) -> None:
    two = "[" + _call("fs_write", WRITE) + ", " + _call("fs_read", {"path": "hello.py"}) + "]"
    inner = ScriptedModel(
        [
            {"text": two},
            {
                "expect": {"last_contains": ["NOT executed"]},
                "tool_calls": [{"name": "fs.write", "arguments": WRITE}],
            },
            {"text": "Created hello.py."},
        ]
    )
    events: list[Event] = []
    bus = EventBus()
    bus.subscribe(events.append)
    result = await Agent(RepairToolCalls(inner), root, bus=bus).run("create hello.py")
    assert result.ok, result.reason
    invalid = [e for e in events if e.type == "protocol.invalid"]
    assert [e.payload["code"] for e in invalid] == ["TOOL_CALL_AS_TEXT"]
    assert [r.name for r in result.tool_calls] == ["fs.write"]  # only the native call ran
    inner.assert_complete()


async def test_text_calls_that_never_become_valid_stop_at_the_protocol_limit(root: Path) -> None:
    bad = {"text": _call("write_file", WRITE)}
    inner = ScriptedModel([bad, bad, bad, bad])
    result = await Agent(RepairToolCalls(inner), root).run("create hello.py")
    assert result.status == "interrupted" and "LIMIT_PROTOCOL_ERRORS" in result.reason
    assert not (root / "hello.py").exists()

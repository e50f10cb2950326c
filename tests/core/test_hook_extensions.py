"""Two generic hook abilities faces use: a view of the messages a model is sent, and ending a
run early from a hook (``EndRun``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from xclaw import Agent, FunctionModel, Hooks, ModelTurn, ScriptedModel, tool
from xclaw.core.errors import EndRun
from xclaw.core.messages import Message, ToolResult
from xclaw.core.model import ModelRequest
from xclaw.core.state import RunState


@tool("echo")
def echo(text: str) -> ToolResult:
    """Repeat text.

    Args:
        text: what to repeat
    """
    return ToolResult.success("echoed", text=text)


async def test_without_views_the_model_gets_the_conversation_itself(root: Path) -> None:
    conversations: list[list[Message]] = []
    requests: list[ModelRequest] = []

    def answer(msgs: Sequence[Message], req: ModelRequest) -> ModelTurn:
        requests.append(req)
        return ModelTurn(text="done")

    hooks = Hooks(before_model_call=[lambda state: conversations.append(list(state.messages))])
    agent = Agent(FunctionModel(answer), root, tools=[echo], hooks=hooks)
    agent.hooks.completion_gate.clear()
    await agent.run("t")
    # The coding agent's one view (paths relative to the root) hands over every message that
    # names no path as the same object: nothing is copied.
    sent, kept = requests[0].messages, conversations[0]
    assert len(sent) == len(kept) and all(a is b for a, b in zip(sent, kept, strict=True))


async def test_views_chain_and_leave_the_conversation_untouched(root: Path) -> None:
    def compact(state: RunState, messages: Sequence[Message]) -> Sequence[Message]:
        return [messages[0], Message.user(f"turn {state.turn}: {len(messages)} messages")]

    def shout(state: RunState, messages: Sequence[Message]) -> Sequence[Message]:
        return [*messages[:-1], Message.user(messages[-1].text.upper())]

    sent: list[list[str]] = []

    def answer(msgs: Sequence[Message], req: ModelRequest) -> ModelTurn:
        sent.append([m.text for m in msgs])
        if len(sent) == 1:
            return ModelTurn(tool_calls=(_call("echo", text="x"),))
        return ModelTurn(text="finished")

    hooks = Hooks(request_view=[compact, shout])
    agent = Agent(FunctionModel(answer), root, tools=[echo], hooks=hooks)
    agent.hooks.completion_gate.clear()
    result = await agent.run("the task")
    assert result.ok
    assert [s[1] for s in sent] == ["TURN 1: 2 MESSAGES", "TURN 2: 4 MESSAGES"]
    assert all(len(s) == 2 for s in sent)
    assert [m.role for m in result.messages] == ["system", "user", "assistant", "tool", "assistant"]


def test_merged_hooks_keep_views_in_order() -> None:
    a = Hooks(request_view=[lambda s, m: [*m, Message.user("a")]])
    b = Hooks(request_view=[lambda s, m: [*m, Message.user("b")]])
    state = RunState("s", "t", [Message.user("start")])
    assert [m.text for m in a.merged(b).view_messages(state)] == ["start", "a", "b"]


@pytest.mark.parametrize("status", ["completed", "interrupted"])
async def test_a_hook_ends_the_run_with_its_status_and_reason(root: Path, status: Any) -> None:
    def after(state: RunState, records: Any) -> None:
        raise EndRun("the batch said so", code="FACE_STOP", status=status, reply="bye")

    model = ScriptedModel([{"tool_calls": [{"name": "echo", "arguments": {"text": "x"}}]}])
    agent = Agent(model, root, tools=[echo], hooks=Hooks(after_tools=[after]))
    result = await agent.run("t")
    model.assert_complete()  # no second turn was asked
    assert (result.status, result.reply) == (status, "bye")
    assert result.reason == "FACE_STOP: the batch said so"
    assert [r.name for r in result.tool_calls] == ["echo"]


async def test_end_run_before_the_first_call(root: Path) -> None:
    def before(state: RunState) -> None:
        raise EndRun("nothing to do", code="NOTHING")

    model = ScriptedModel([])
    result = await Agent(model, root, hooks=Hooks(before_model_call=[before])).run("t")
    assert result.status == "interrupted" and result.reason == "NOTHING: nothing to do"
    assert result.metrics.rounds == 0


def _call(name: str, **arguments: Any) -> Any:
    from xclaw.core.messages import ToolCallPart

    return ToolCallPart(f"c_{name}", name, arguments)

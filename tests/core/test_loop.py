"""The one loop, end to end, with fake models and small real tools."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from xclaw import Agent, FunctionModel, Hooks, Limits, ModelTurn, ScriptedModel, tool
from xclaw.core.errors import ProtocolViolation
from xclaw.core.events import EventBus
from xclaw.core.messages import Message, ToolCallPart, ToolResult
from xclaw.core.model import Model, ModelEvent, ModelRequest
from xclaw.core.state import RunControl
from xclaw.core.tooling import Answer, ApprovalRequest, Risk
from xclaw.tools.base import ToolContext


def call(name: str, call_id: str = "", **arguments: Any) -> ToolCallPart:
    return ToolCallPart(call_id or f"id_{name}_{len(arguments)}", name, arguments)


@tool("echo")
def echo(text: str, times: int = 1) -> ToolResult:
    """Repeat text.

    Args:
        text: what to repeat
        times: how often
    """
    return ToolResult.success("echoed", text=text * times)


def _scripted(*turns: dict[str, Any] | str) -> ScriptedModel:
    return ScriptedModel(list(turns))


async def test_plain_answer_completes(root: Path) -> None:
    model = _scripted("hello there")
    result = await Agent(model, root, tools=[echo], evidence_gate_enabled=False).run("say hi")
    assert result.status == "completed" and result.reply == "hello there"
    assert result.metrics.rounds == 1 and result.metrics.tool_calls == 0
    model.assert_complete()


async def test_tool_call_result_is_fed_back(root: Path) -> None:
    model = _scripted(
        {"tool_calls": [{"id": "a", "name": "echo", "arguments": {"text": "ab", "times": 2}}]},
        {"expect": {"last_contains": ["abab"], "last_ok": True}, "text": "done"},
    )
    result = await Agent(model, root, tools=[echo], evidence_gate_enabled=False).run("echo")
    assert result.ok, result.reason
    assert [r.name for r in result.tool_calls] == ["echo"]
    assert result.tool_calls[0].result.data == {"text": "abab"}
    roles = [m.role for m in result.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant"]


@pytest.mark.parametrize(
    "arguments",
    [{"text": "x", "bogus": 1}, {}, {"text": 5}, {"text": "x", "times": "2"}],
)
async def test_bad_arguments_never_run(root: Path, arguments: dict[str, Any]) -> None:
    ran: list[str] = []

    @tool("note")
    def note(text: str, times: int = 1) -> ToolResult:
        """Note."""
        ran.append(text)
        return ToolResult.success("noted")

    model = _scripted({"tool_calls": [{"name": "note", "arguments": arguments}]}, "ok")
    result = await Agent(model, root, tools=[note], evidence_gate_enabled=False).run("t")
    r = result.tool_calls[0].result
    assert (r.ok, r.error_code, r.retryable) == (False, "TOOL_ARGUMENTS_INVALID", True)
    assert ran == []


async def test_unknown_tool_is_a_coded_result(root: Path) -> None:
    model = _scripted({"tool_calls": [{"name": "nope", "arguments": {}}]}, "ok")
    result = await Agent(model, root, tools=[echo], evidence_gate_enabled=False).run("t")
    assert result.tool_calls[0].result.error_code == "TOOL_NOT_FOUND"
    assert result.ok


async def test_crashing_tool_does_not_kill_the_loop(root: Path) -> None:
    @tool("boom")
    def boom() -> ToolResult:
        """Explode."""
        raise ZeroDivisionError("bad luck")

    model = _scripted({"tool_calls": [{"name": "boom", "arguments": {}}]}, "recovered")
    result = await Agent(model, root, tools=[boom], evidence_gate_enabled=False).run("t")
    assert result.tool_calls[0].result.error_code == "TOOL_CRASHED"
    assert result.reply == "recovered"
    assert result.metrics.failed_calls == 1 and result.metrics.success_rate == 0.0


async def test_read_only_calls_run_concurrently(root: Path) -> None:
    a, b = asyncio.Event(), asyncio.Event()

    @tool("wait_a")
    async def wait_a() -> ToolResult:
        """Set a, wait for b."""
        a.set()
        await asyncio.wait_for(b.wait(), 2)
        return ToolResult.success("a")

    @tool("wait_b")
    async def wait_b() -> ToolResult:
        """Set b, wait for a."""
        b.set()
        await asyncio.wait_for(a.wait(), 2)
        return ToolResult.success("b")

    model = _scripted(
        {"tool_calls": [{"name": "wait_a", "arguments": {}}, {"name": "wait_b", "arguments": {}}]},
        "ok",
    )
    result = await Agent(model, root, tools=[wait_a, wait_b], evidence_gate_enabled=False).run("t")
    assert [r.result.ok for r in result.tool_calls] == [True, True]


async def test_writes_run_in_order_one_at_a_time(root: Path) -> None:
    log: list[str] = []

    @tool("step", risk=Risk.WRITE)
    async def step(n: int) -> ToolResult:
        """A write."""
        log.append(f"start {n}")
        await asyncio.sleep(0.01 * (3 - n))
        log.append(f"end {n}")
        return ToolResult.success("ok")

    calls = [{"name": "step", "arguments": {"n": n}} for n in (1, 2, 3)]
    model = _scripted({"tool_calls": calls}, "ok")
    await Agent(model, root, tools=[step], evidence_gate_enabled=False).run("t")
    assert log == ["start 1", "end 1", "start 2", "end 2", "start 3", "end 3"]


async def test_duplicate_call_id_in_one_response_is_rejected(root: Path) -> None:
    model = _scripted(
        {
            "tool_calls": [
                {"id": "same", "name": "echo", "arguments": {"text": "1"}},
                {"id": "same", "name": "echo", "arguments": {"text": "2"}},
            ]
        },
        {"tool_calls": [{"id": "same", "name": "echo", "arguments": {"text": "3"}}]},
        "ok",
    )
    result = await Agent(model, root, tools=[echo], evidence_gate_enabled=False).run("t")
    codes = [r.result.error_code for r in result.tool_calls]
    assert codes == [None, "TOOL_CALL_ID_DUPLICATE", None]  # reuse in a later turn is legal


async def test_repeated_stream_event_of_one_call_runs_once(root: Path) -> None:
    """The same id, name and arguments twice in one response is one call seen twice (a
    retried stream): one side effect, and both get its recorded result."""
    runs: list[str] = []

    @tool("write_once", risk=Risk.WRITE)
    async def write_once(text: str) -> ToolResult:
        """A write."""
        runs.append(text)
        return ToolResult.success(f"wrote {text} as run {len(runs)}")

    same = {"id": "same", "name": "write_once", "arguments": {"text": "1"}}
    model = _scripted({"tool_calls": [same, same]}, "ok")
    result = await Agent(model, root, tools=[write_once], evidence_gate_enabled=False).run("t")
    assert runs == ["1"]
    assert [r.result.message for r in result.tool_calls] == ["wrote 1 as run 1"] * 2


def _looping_model() -> FunctionModel:
    return FunctionModel(
        lambda msgs, req: ModelTurn(
            tool_calls=(ToolCallPart(f"c{len(msgs)}", "echo", {"text": str(len(msgs))}),)
        )
    )


async def test_max_turns_interrupts(root: Path) -> None:
    agent = Agent(_looping_model(), root, tools=[echo], limits=Limits(max_turns=4))
    result = await agent.run("t")
    assert result.status == "interrupted" and "LIMIT_TURNS" in result.reason
    assert result.metrics.rounds == 4


async def test_identical_repeats_interrupt_and_keep_pairs(root: Path) -> None:
    model = FunctionModel(
        lambda msgs, req: ModelTurn(
            tool_calls=(ToolCallPart(f"c{len(msgs)}", "echo", {"text": "same"}),)
        )
    )
    result = await Agent(model, root, tools=[echo], limits=Limits(max_identical_calls=3)).run("t")
    assert result.status == "interrupted" and "LIMIT_REPEATED_CALLS" in result.reason
    calls = [p.call_id for m in result.messages for p in m.tool_calls]
    results = [p.call_id for m in result.messages for p in m.tool_results]
    assert calls == results and len(calls) == 4
    assert result.tool_calls[-1].result.error_code == "REPEATED_CALL"


async def test_turn_timeout_interrupts(root: Path) -> None:
    async def slow(msgs: Sequence[Message], req: ModelRequest) -> ModelTurn:
        await asyncio.sleep(5)
        return ModelTurn(text="late")

    agent = Agent(FunctionModel(slow), root, tools=[echo], limits=Limits(turn_timeout_s=0.05))
    result = await agent.run("t")
    assert result.status == "interrupted" and "LIMIT_TURN_TIMEOUT" in result.reason


async def test_wall_time_and_output_limits(root: Path) -> None:
    agent = Agent(_looping_model(), root, tools=[echo], limits=Limits(wall_time_s=0.0))
    assert "LIMIT_WALL_TIME" in (await agent.run("t")).reason
    big = FunctionModel(
        lambda msgs, req: ModelTurn(
            tool_calls=(
                ToolCallPart(f"c{len(msgs)}", "echo", {"text": "x" * 1000, "times": len(msgs)}),
            )
        )
    )
    agent = Agent(big, root, tools=[echo], limits=Limits(max_output_bytes=5000))
    result = await agent.run("t")
    assert result.status == "interrupted" and "LIMIT_OUTPUT" in result.reason


async def test_tool_time_limit_stops_a_hanging_tool(root: Path) -> None:
    @tool("hang", timeout_s=30)
    async def hang() -> ToolResult:
        """Never ends."""
        await asyncio.sleep(30)
        return ToolResult.success("never")

    model = _scripted({"tool_calls": [{"name": "hang", "arguments": {}}]}, "ok")
    agent = Agent(
        model, root, tools=[hang], limits=Limits(tool_timeout_s=0.05), evidence_gate_enabled=False
    )
    result = await agent.run("t")
    assert result.tool_calls[0].result.error_code == "TOOL_TIMEOUT" and result.ok


class _FlakyProtocolModel(Model):
    def __init__(self, bad_turns: int) -> None:
        self.bad_turns = bad_turns
        self.seen = 0

    async def respond(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:  # type: ignore[override]
        self.seen += 1
        if self.seen <= self.bad_turns:
            raise ProtocolViolation("no root", feedback="please resend", reply_text="garbage")
        from xclaw.core.model import TextDelta

        yield TextDelta("fine")


async def test_protocol_errors_are_fed_back_then_bounded(root: Path) -> None:
    result = await Agent(_FlakyProtocolModel(2), root, tools=[echo]).run("hi")
    assert result.ok and result.reply == "fine"
    texts = [m.text for m in result.messages if m.role == "user"]
    assert texts.count("please resend") == 2
    result = await Agent(
        _FlakyProtocolModel(10), root, tools=[echo], limits=Limits(max_protocol_errors=2)
    ).run("hi")
    assert result.status == "interrupted" and "LIMIT_PROTOCOL_ERRORS" in result.reason


async def test_model_failure_fails_the_run(root: Path) -> None:
    model = _scripted({"tool_calls": [{"name": "echo", "arguments": {"text": "x"}}]})
    result = await Agent(model, root, tools=[echo]).run("t")
    assert result.status == "failed" and "SCRIPT_MISMATCH" in result.reason


@tool("danger", risk=Risk.DESTRUCTIVE)
def danger() -> ToolResult:
    """Something that needs a human."""
    return ToolResult.success("did it")


class _Answers:
    def __init__(self, *answers: Answer) -> None:
        self.answers = list(answers)
        self.asked: list[ApprovalRequest] = []

    async def approve(self, request: ApprovalRequest) -> Answer:
        self.asked.append(request)
        return self.answers.pop(0)


async def test_approval_deny_and_allow(root: Path) -> None:
    turns = [{"tool_calls": [{"name": "danger", "arguments": {}}]}, "ok"]
    denied = await Agent(_scripted(*turns), root, tools=[danger], approval="deny").run("t")
    assert denied.tool_calls[0].result.error_code == "APPROVAL_DENIED"
    allowed = await Agent(_scripted(*turns), root, tools=[danger], approval="allow").run("t")
    assert allowed.tool_calls[0].result.ok
    answers = _Answers("once")
    await Agent(_scripted(*turns), root, tools=[danger], approval=answers).run("t")
    assert len(answers.asked) == 1 and answers.asked[0].tool == "danger"


async def test_completion_gate_refuses_until_verified(root: Path) -> None:
    model = _scripted(
        "I did it",  # refused: nothing changed
        {"tool_calls": [{"name": "fs.write", "arguments": {"path": "a.txt", "content": "x"}}]},
        "done now",  # refused: no build/test after the change
        {"tool_calls": [{"name": "terminal.exec", "arguments": {"program": "true"}}]},
        "verified",
    )
    result = await Agent(model, root).run("Create a.txt and run the tests")
    assert result.ok and result.reply == "verified"
    reminders = [m.text for m in result.messages if m.role == "user"][1:]
    assert len(reminders) == 2 and "changed anything" in reminders[0]
    assert "build, test or verification" in reminders[1]


async def test_completion_gate_gives_up_as_interrupted(root: Path) -> None:
    model = FunctionModel(lambda msgs, req: ModelTurn(text="trust me, it is done"))
    result = await Agent(model, root, limits=Limits(max_gate_refusals=2)).run("fix the bug")
    assert result.status == "interrupted" and "LIMIT_COMPLETION_EVIDENCE" in result.reason


async def test_custom_hooks_extend_the_loop(root: Path) -> None:
    seen: list[int] = []

    def before(state: Any) -> None:
        seen.append(len(state.messages))

    gate_calls: list[str] = []

    def gate(state: Any) -> str | None:
        gate_calls.append(state.reply)
        return None if len(gate_calls) > 1 else "one more thing"

    model = _scripted("first", "second")
    hooks = Hooks(before_model_call=[before], completion_gate=[gate])
    result = await Agent(model, root, tools=[echo], hooks=hooks, evidence_gate_enabled=False).run(
        "t"
    )
    assert result.reply == "second" and seen == [2, 4]


async def test_pause_then_cancel(root: Path) -> None:
    control = RunControl()
    control.interrupt()
    result = await Agent(_looping_model(), root, tools=[echo]).run("t", control=control)
    assert result.status == "interrupted" and "RUN_PAUSED" in result.reason
    assert result.metrics.rounds == 0

    started = asyncio.Event()

    @tool("long", timeout_s=60)
    async def long(ctx: ToolContext) -> ToolResult:
        """Runs long."""
        started.set()
        await asyncio.sleep(60)
        return ToolResult.success("never")

    control = RunControl()
    model = _scripted({"tool_calls": [{"name": "long", "arguments": {}}]}, "unreached")
    task = asyncio.create_task(Agent(model, root, tools=[long]).run("t", control=control))
    await asyncio.wait_for(started.wait(), 5)
    assert control.interrupt() == "pause"
    assert control.interrupt() == "cancel"
    result = await asyncio.wait_for(task, 5)
    assert result.status == "interrupted" and "RUN_CANCELLED" in result.reason


async def test_events_follow_the_run(root: Path) -> None:
    bus = EventBus()
    seen: list[str] = []
    bus.subscribe(lambda ev: seen.append(ev.type))
    model = _scripted({"tool_calls": [{"name": "echo", "arguments": {"text": "x"}}]}, "ok")
    await Agent(model, root, tools=[echo], bus=bus, evidence_gate_enabled=False).run("t")
    assert seen == [
        "run.started",
        "model.message_sent",
        "model.message_complete",
        "tool.proposed",
        "tool.started",
        "tool.completed",
        "model.message_sent",
        "model.streaming",
        "model.message_complete",
        "run.completed",
    ]


async def test_usage_is_summed(root: Path) -> None:
    model = _scripted(
        {
            "tool_calls": [{"name": "echo", "arguments": {"text": "x"}}],
            "usage": {"input_tokens": 10, "output_tokens": 3},
        },
        {"text": "ok", "usage": {"input_tokens": 12, "output_tokens": 2}},
    )
    result = await Agent(model, root, tools=[echo], evidence_gate_enabled=False).run("t")
    assert (result.metrics.input_tokens, result.metrics.output_tokens) == (22, 5)


def test_run_sync(root: Path) -> None:
    result = Agent(_scripted("sync ok"), root, tools=[echo]).run_sync("hello")
    assert result.reply == "sync ok"


async def test_caller_cancellation_propagates(root: Path) -> None:
    started = asyncio.Event()

    @tool("slow", timeout_s=60)
    async def slow() -> ToolResult:
        """Runs long."""
        started.set()
        await asyncio.sleep(60)
        return ToolResult.success("never")

    model = _scripted({"tool_calls": [{"name": "slow", "arguments": {}}]}, "unreached")
    task = asyncio.create_task(Agent(model, root, tools=[slow]).run("t"))
    await asyncio.wait_for(started.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_sandbox_that_cannot_be_made_refuses_the_call_not_the_run(root: Path) -> None:
    """The sandbox is made when a command first needs it, inside the policy's check: a
    failure there is the call's coded result, and the model goes on."""
    from xclaw.core.errors import ConfigError

    def factory() -> Any:
        raise ConfigError("the sandbox went away", code="SANDBOX_UNAVAILABLE", hint="Fix it.")

    call = {
        "tool_calls": [
            {"id": "c1", "name": "terminal.exec", "arguments": {"program": "echo", "argv": ["x"]}}
        ]
    }
    agent = Agent(
        ScriptedModel([call, "could not run it"]),
        root,
        approval="allow",
        sandbox=factory,
        evidence_gate_enabled=False,
    )
    result = await agent.run("run echo")
    assert result.status == "completed", result.reason
    (record,) = result.tool_calls
    assert not record.result.ok and record.result.error_code == "SANDBOX_UNAVAILABLE"
    assert "nothing ran" in record.result.message and record.result.hint == "Fix it."

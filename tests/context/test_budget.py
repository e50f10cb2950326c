"""The context budget: prune, then remove whole turns, then summarise; calls stay paired."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from xclaw import Agent, FunctionModel, Hooks, ModelTurn, tool
from xclaw.context.budget import (
    ContextBudget,
    budget_hook,
    changed_files,
    fit_messages,
    plan_drop,
    pruned_result,
    split_conversation,
)
from xclaw.context.compaction import ContextNote
from xclaw.context.tokens import EstimateCounter, TiktokenCounter, TokenCounter, count_messages
from xclaw.core.errors import ConfigError, LimitExceeded, ModelUnavailable
from xclaw.core.messages import Message, TextPart, ToolCallPart, ToolResult, ToolResultPart
from xclaw.core.model import ModelRequest
from xclaw.core.state import RunState, ToolCallRecord

BIG = 5_000


def assert_paired(messages: Sequence[Message]) -> None:
    """Every call is answered in the next message, and every result answers such a call."""
    for i, msg in enumerate(messages):
        calls = [c.call_id for c in msg.tool_calls]
        if calls:
            assert msg.role == "assistant"
            assert i + 1 < len(messages) and messages[i + 1].role == "tool", i
            assert [r.call_id for r in messages[i + 1].tool_results] == calls, i
        if msg.tool_results:
            assert msg.role == "tool" and i > 0, i
            answered = [c.call_id for c in messages[i - 1].tool_calls]
            assert [r.call_id for r in msg.tool_results] == answered, i


def turn(i: int, size: int = BIG, ok: bool = True) -> list[Message]:
    call = ToolCallPart(f"c{i}", "fs.read", {"path": f"src/f{i}.py"})
    if ok:
        result = ToolResult.success(f"read src/f{i}.py", text=f"# {i}\n" + "y" * size)
    else:
        result = ToolResult.failure("FILE_NOT_FOUND", f"src/f{i}.py is missing " + "z" * size)
    return [
        Message("assistant", (TextPart(f"step {i}"), call)),
        Message("tool", (ToolResultPart(f"c{i}", "fs.read", result),)),
    ]


def conversation(n: int, size: int = BIG) -> list[Message]:
    out = [Message.system("You are xclaw."), Message.user("Task:\nfix the tests")]
    for i in range(n):
        out += turn(i, size)
    return out


def budget(window: int, counter: TokenCounter | None = None, **kw: Any) -> ContextBudget:
    return ContextBudget(
        window,
        reserve_output=kw.pop("reserve_output", 500),
        counter=counter or EstimateCounter(),
        margin=kw.pop("margin", 0.0),
        **kw,
    )


def test_budget_settings_are_checked() -> None:
    b = budget(10_000, margin=0.1, reserve_output=1_000)
    assert b.limit == 8_000 and b.target == 5_600
    with pytest.raises(ConfigError, match="leaves no room"):
        budget(1_000, reserve_output=1_000)
    with pytest.raises(ConfigError, match="out of range"):
        budget(10_000, keep_recent=0)
    with pytest.raises(ConfigError, match="out of range"):
        budget(10_000, trim_to=1.5)


def test_split_keeps_calls_with_their_results() -> None:
    msgs = conversation(2)
    msgs.insert(4, Message.user("reminder"))
    layout = split_conversation(msgs)
    assert layout.head == 2 and layout.note is None
    assert layout.turns == [(2, 4), (4, 5), (5, 7)]
    msgs.insert(2, ContextNote(3).to_message())
    layout = split_conversation(msgs)
    assert layout.note == ContextNote(3) and layout.turns[0] == (3, 5)
    assert split_conversation([Message.system("s")]).head == 1


def test_plan_drop() -> None:
    costs = [100, 100, 100, 100]
    assert plan_drop(costs, fixed=50, target=300, limit=400, floor=1) == 2
    assert plan_drop(costs, fixed=50, target=100, limit=200, floor=2) is None
    assert plan_drop(costs, fixed=50, target=100, limit=300, floor=2) == 2  # all it may
    assert plan_drop(costs, fixed=50, target=500, limit=500, floor=4) is None


async def test_a_conversation_that_fits_is_left_alone() -> None:
    msgs = conversation(3, size=100)
    before = list(msgs)
    report = await fit_messages(msgs, budget(100_000))
    assert not report.changed and all(a is b for a, b in zip(msgs, before, strict=True))
    assert report.tokens_before == report.tokens_after


async def test_old_tool_output_is_pruned_first() -> None:
    msgs = conversation(8)
    msgs += turn(8, ok=False)
    before = list(msgs)
    counter = EstimateCounter()
    # Room for the recent turns in full and the older ones as placeholders.
    b = budget(count_messages(counter, msgs[-8:]) + 2_000, counter, keep_recent=4)
    report = await fit_messages(msgs, b)
    assert report.removed_turns == 0 and report.pruned == 5
    assert len(msgs) == len(before)
    assert all(a is b for a, b in zip(msgs[-8:], before[-8:], strict=True))  # recent intact
    for msg in msgs[3:13:2]:
        (res,) = msg.tool_results
        assert res.result.data["pruned"] is True and res.result.ok
        assert "call fs.read again" in res.result.message
    assert count_messages(counter, msgs) <= b.limit
    assert_paired(msgs)


def test_pruned_result_keeps_outcome_code_and_small_facts() -> None:
    old = ToolResult.failure(
        "EXIT_NONZERO",
        "npm test exited with code 1",
        hint="Read the failing test.",
        data={"exit_code": 1, "stdout": "x" * 9_000, "cwd": "web"},
    )
    new = pruned_result(ToolResultPart("c1", "terminal.exec", old))
    assert (new.ok, new.error_code, new.hint) == (False, "EXIT_NONZERO", "Read the failing test.")
    assert new.data == {"exit_code": 1, "cwd": "web", "pruned": True}
    assert "npm test exited with code 1" in new.message and "terminal.exec" in new.message


async def test_long_call_arguments_are_pruned_too() -> None:
    msgs = conversation(0)
    write = ToolCallPart("w", "fs.write", {"path": "a.py", "content": "q" * 20_000})
    msgs += [
        Message("assistant", (write,)),
        Message("tool", (ToolResultPart("w", "fs.write", ToolResult.success("wrote a.py")),)),
    ]
    for i in range(4):
        msgs += turn(i, size=10)
    await fit_messages(msgs, budget(2_000, keep_recent=4))
    (call,) = msgs[2].tool_calls
    assert call.call_id == "w" and call.arguments["path"] == "a.py"
    assert call.arguments["content"] == "[20000 characters pruned from the context]"


async def test_whole_old_turns_are_removed_after_the_task() -> None:
    msgs = conversation(40, size=2_000)
    system, task = msgs[0], msgs[1]
    b = budget(3_500, keep_recent=2)
    report = await fit_messages(msgs, b)
    assert msgs[0] is system and msgs[1] is task
    note = ContextNote.parse(msgs[2])
    assert note is not None and note.removed_turns == report.removed_turns > 0
    assert msgs[3].role == "assistant"
    assert count_messages(b.counter, msgs) <= b.target  # trimmed below the limit, not to it
    assert msgs[-1].tool_results[0].result.data.get("pruned") is None  # latest intact
    assert_paired(msgs)
    # The next trim extends the same note instead of stacking another.
    for i in range(40, 50):
        msgs += turn(i, size=2_000)
    second = await fit_messages(msgs, b)
    notes = [m for m in msgs if ContextNote.parse(m)]
    assert len(notes) == 1 and notes[0] is msgs[2]
    again = ContextNote.parse(msgs[2])
    assert again is not None
    assert again.removed_turns == report.removed_turns + second.removed_turns
    assert_paired(msgs)


async def test_reminders_between_turns_are_their_own_turns() -> None:
    msgs = conversation(30, size=2_000)
    for at in (40, 20, 6):
        msgs.insert(at, Message.user("The task asks for changes; make them."))
    report = await fit_messages(msgs, budget(3_000, keep_recent=2))
    assert report.removed_turns > 0
    assert ContextNote.parse(msgs[2]) and msgs[3].role != "tool"
    assert_paired(msgs)


async def test_recent_turns_give_way_when_they_alone_are_too_big() -> None:
    msgs = conversation(6, size=4_000)
    latest = msgs[-1]
    b = budget(2_500, keep_recent=4)
    report = await fit_messages(msgs, b)
    assert count_messages(b.counter, msgs) <= b.limit
    # First the recent turns lose their output (all but the latest), nothing is removed yet.
    assert report.removed_turns == 0 and report.pruned == 5 and msgs[-1] is latest
    assert_paired(msgs)

    msgs = conversation(40, size=4_000)
    latest = msgs[-1]
    b = budget(2_500, keep_recent=30)
    report = await fit_messages(msgs, b)
    assert count_messages(b.counter, msgs) <= b.limit
    assert report.removed_turns > 10 and msgs[-1] is latest  # into the kept turns
    assert_paired(msgs)


async def test_an_oversized_latest_result_is_pruned() -> None:
    msgs = conversation(2, size=40_000)
    b = budget(4_000, keep_recent=2)
    await fit_messages(msgs, b)
    assert count_messages(b.counter, msgs) <= b.limit
    assert msgs[-1].tool_results[0].result.data["pruned"] is True
    assert_paired(msgs)


async def test_a_task_larger_than_the_window_stops_the_run() -> None:
    msgs = [Message.system("s"), Message.user("x" * 40_000)] + turn(0, size=10)
    with pytest.raises(LimitExceeded) as info:
        await fit_messages(msgs, budget(4_000))
    assert info.value.code == "LIMIT_CONTEXT_WINDOW"


def summariser(text: str = "GOAL: fix the tests\nOPEN ITEMS:\n- rerun pytest") -> FunctionModel:
    def reply(messages: Sequence[Message], request: ModelRequest) -> ModelTurn:
        return ModelTurn(text=text, input_tokens=900, output_tokens=30)

    return FunctionModel(reply, name="summariser")


def broken() -> FunctionModel:
    def reply(messages: Sequence[Message], request: ModelRequest) -> ModelTurn:
        raise ModelUnavailable("the provider is down")

    return FunctionModel(reply, name="broken")


def run_state(messages: list[Message]) -> RunState:
    return RunState("s1", "fix the tests", messages, turn=7)


async def test_hook_compacts_removed_turns_into_a_checkpoint() -> None:
    state = run_state(conversation(40, size=2_000))
    write = ToolCallRecord(
        "w", "fs.write", {"path": "src/a.py"}, ToolResult.success("ok"), 1, 1, False, "write"
    )
    state.records.append(write)
    b = budget(3_500, keep_recent=2)
    await budget_hook(b, summariser())(state)
    note = ContextNote.parse(state.messages[2])
    assert note is not None and note.summary.startswith("GOAL: fix the tests")
    assert count_messages(b.counter, state.messages) <= b.limit
    assert_paired(state.messages)
    (checkpoint,) = state.extra["checkpoints"]
    assert checkpoint["turn"] == 7 and checkpoint["goal"] == "fix the tests"
    assert checkpoint["modified_files"] == ["src/a.py"]
    assert checkpoint["open_items"] == ["rerun pytest"]
    stats = state.extra["context"]
    assert stats["compactions"] == 1 and stats["removed_turns"] == note.removed_turns
    assert stats["tokens"] == count_messages(b.counter, state.messages)
    assert (state.input_tokens, state.output_tokens) == (900, 30)


async def test_hook_falls_back_to_truncation_when_the_summary_fails() -> None:
    state = run_state(conversation(40, size=2_000))
    b = budget(3_500, keep_recent=2)
    await budget_hook(b, broken())(state)
    assert "could not be made" in state.messages[2].text
    assert count_messages(b.counter, state.messages) <= b.limit
    assert "checkpoints" not in state.extra
    stats = state.extra["context"]
    assert stats["compaction_failures"] == 1
    assert "the provider is down" in stats["last_compaction_error"]
    assert_paired(state.messages)


def test_changed_files_come_from_successful_writes() -> None:
    ok, bad = ToolResult.success("ok"), ToolResult.failure("X", "no")
    records = [
        ToolCallRecord("1", "fs.write", {"path": "a"}, ok, 1, 1, False, "write"),
        ToolCallRecord("2", "fs.read", {"path": "b"}, ok, 1, 1, True, "read"),
        ToolCallRecord("3", "fs.edit", {"path": "c"}, bad, 1, 1, False, "write"),
        ToolCallRecord("4", "fs.edit", {"path": "a"}, ok, 2, 1, False, "write"),
    ]
    assert changed_files(records) == ["a"]


# --- end to end: a run whose history is far larger than the model's window -------------


@tool("big.read")
def big_read(n: int) -> ToolResult:
    """Read a large generated document.

    Args:
        n: which document
    """
    body = "".join(f"line {j} of document {n}: lorem ipsum dolor sit amet\n" for j in range(200))
    return ToolResult.success(f"document {n}", text=body[:BIG])


def windowed_model(b: ContextBudget, calls: int, checks: list[int]) -> FunctionModel:
    """Calls big.read ``calls`` times, then answers; checks every request it is sent."""
    made = 0

    def reply(messages: Sequence[Message], request: ModelRequest) -> ModelTurn:
        nonlocal made
        used = count_messages(b.counter, messages)
        assert used <= b.limit, f"request of {used} tokens exceeds {b.limit}"
        assert_paired(messages)
        assert messages[0].role == "system" and "fix the docs" in messages[1].text
        checks.append(used)
        if made == calls:
            return ModelTurn(text="Read every document.")
        made += 1
        return ModelTurn(tool_calls=(ToolCallPart(f"call_{made}", "big.read", {"n": made}),))

    return FunctionModel(reply)


@pytest.mark.parametrize("compactor", [None, "summariser", "broken"])
async def test_a_run_larger_than_the_window_completes(root: Path, compactor: str | None) -> None:
    counter = TiktokenCounter("o200k_base")
    b = ContextBudget(6_000, reserve_output=1_000, counter=counter, keep_recent=2)
    checks: list[int] = []
    states: list[RunState] = []
    # 60 calls: pruning old results alone cannot hold that many, whatever the prompt's size
    # (with 40, a prompt a few tokens longer got through on pruning alone).
    model = windowed_model(b, calls=60, checks=checks)
    summary_model = {"summariser": summariser(), "broken": broken(), None: None}[compactor]
    hooks = Hooks(before_model_call=[budget_hook(b, summary_model), states.append])
    agent = Agent(model, root, tools=[big_read], hooks=hooks, evidence_gate_enabled=False)
    result = await agent.run("fix the docs")
    assert result.ok, result.reason
    assert len(result.tool_calls) == 60 and len(checks) == 61
    # Without the budget the history would hold 40 results of over 1,000 tokens each.
    assert sum(counter.count_text(r.result.to_model_text()) for r in result.tool_calls) > 40_000
    assert_paired(result.messages)
    assert len([m for m in result.messages if ContextNote.parse(m)]) == 1
    stats = states[-1].extra["context"]
    assert stats["pruned_results"] > 0 and stats["removed_turns"] > 0
    if compactor == "summariser":
        assert stats["compactions"] >= 1 and states[-1].extra["checkpoints"]
    if compactor == "broken":
        assert stats["compaction_failures"] >= 1 and "checkpoints" not in states[-1].extra

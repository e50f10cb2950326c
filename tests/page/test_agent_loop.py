"""WebAgent on the one loop, against an in-memory page: the REMAINING protocol, stops, guards,
dry run, memory, routes, callbacks and metrics."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from page_agent_fakes import (
    FAST,
    FakeDriver,
    call,
    click,
    fill,
    round_text,
    snapshot_in,
)

from xclaw import FunctionModel, ModelTurn, ScriptedModel, tool
from xclaw.core.messages import Message, ToolCallPart, ToolResult
from xclaw.core.model import Model, ModelRequest
from xclaw.page.agent import WebAgent
from xclaw.page.callbacks import WebAgentCallbacks
from xclaw.page.routes import RouteSkill

TASK = '点击按钮 -> 输入框输入 "abc" -> 发送'


def agent_for(model: Model, driver: FakeDriver, **kwargs: Any) -> WebAgent:
    return WebAgent(model, driver, builtin_tools=driver.tools(), settings=FAST, **kwargs)


def page() -> FakeDriver:
    return FakeDriver(b1='[button] "Open"', i1="[input] text", s1='[button] "Send"')


async def test_linear_task_reduces_round_by_round() -> None:
    driver = page()
    model = ScriptedModel(
        [
            {"tool_calls": [click("#b1")], "text": 'REMAINING: 输入框输入 "abc" -> 发送'},
            {"tool_calls": [fill("#i1", "abc")]},  # no REMAINING line: reduced heuristically
            {"tool_calls": [click("#s1")], "text": "Sent.\nREMAINING: DONE"},
        ]
    )
    result = await agent_for(model, driver).chat(TASK)
    model.assert_complete()
    assert result.ok and result.reason.startswith("PAGE_TASK_DONE") and result.reply == "Sent."
    assert driver.page.log == ["click #b1", "fill #i1 abc", "click #s1"]
    sent = [round_text(r.messages) for r in model.requests]
    assert sent[0].startswith(f"## Task\n{TASK}")
    assert '## Current remaining instruction\n输入框输入 "abc" -> 发送' in sent[1]
    assert "## Current remaining instruction\n发送\n" in sent[2]
    assert '1. dom.click #b1\n2. dom.fill #i1 "abc"' in sent[2]
    assert '## Previous round planned task array\n["dom.fill #i1 \\"abc\\""]' in sent[2]
    assert all(len(r.messages) == 2 and r.messages[0].role == "system" for r in model.requests)
    assert result.done_steps == ["dom.click #b1", 'dom.fill #i1 "abc"', "dom.click #s1"]
    m = result.metrics
    assert (m.round_count, m.total_tool_calls, m.successful_tool_calls) == (3, 3, 3)
    assert m.snapshot_read_count == 3  # the first, then one after each acting round but the last
    assert [tc["name"] for tc in result.tool_calls] == ["dom", "dom", "dom"]
    # older snapshots in the returned conversation are outdated; the last one is kept
    texts = [msg.text for msg in result.messages if msg.role == "user"]
    assert sum("SNAPSHOT_START" in t for t in texts) == 1


async def test_a_dom_changing_action_breaks_the_round() -> None:
    driver = page()
    model = ScriptedModel(
        [
            {"tool_calls": [click("#b1"), fill("#i1", "abc")], "text": "REMAINING: 发送"},
            {"tool_calls": [fill("#i1", "abc"), click("#s1")], "text": "REMAINING: DONE"},
        ]
    )
    result = await agent_for(model, driver).chat(TASK)
    assert result.ok
    skipped = result.tool_calls[1]["result"]
    assert skipped.error_code == "SKIPPED_AFTER_DOM_CHANGE"
    assert driver.page.log == ["click #b1", "fill #i1 abc", "click #s1"]
    assert "SKIPPED_AFTER_DOM_CHANGE" in round_text(model.requests[1].messages)


async def test_protocol_violation_round_then_done() -> None:
    driver = page()
    model = ScriptedModel(
        [
            "I can see the page.",  # no tools, work left: not the end
            {"tool_calls": [click("#s1")], "text": "REMAINING: DONE"},
        ]
    )
    result = await agent_for(model, driver).chat("click send")
    assert result.ok and driver.page.log == ["click #s1"]
    second = round_text(model.requests[1].messages)
    assert "## Protocol violation\nYour previous reply had no tool calls" in second
    assert "## Current remaining instruction\nclick send" in second


async def test_repeated_protocol_violations_stop_the_run() -> None:
    model = FunctionModel(lambda msgs, req: ModelTurn(text="Thinking about it."))
    result = await agent_for(model, page()).chat("click send")
    assert result.status == "interrupted" and result.reason.startswith("PAGE_PROTOCOL_VIOLATION")
    assert result.metrics.round_count == 3 and result.remaining == "click send"


async def test_a_final_answer_with_done_completes() -> None:
    model = ScriptedModel(["The title is Home.\nREMAINING: DONE"])
    result = await agent_for(model, page()).chat("what is the title?")
    assert result.ok and result.reply == "The title is Home." and result.metrics.round_count == 1


async def test_page_info_is_intercepted_and_idle_rounds_stop() -> None:
    driver = page()
    model = ScriptedModel(
        [
            {"tool_calls": [call("page_info", action="get_url")]},
            {"tool_calls": [call("page_info", action="snapshot")]},
        ]
    )
    result = await agent_for(model, driver).chat("click send")
    model.assert_complete()
    assert result.status == "interrupted" and result.reason.startswith("PAGE_IDLE_LOOP")
    assert driver.page.log == []  # never ran
    codes = [tc["result"].error_code for tc in result.tool_calls]
    assert codes == ["REDUNDANT_PAGE_INFO_SKIPPED"] * 2
    assert result.metrics.redundant_intercept_count == 2
    assert result.metrics.tool_success_rate == 0.0


async def test_the_same_successful_batch_twice_stops_without_running_again() -> None:
    driver = page()
    batch = {"tool_calls": [fill("#i1", "abc")], "text": "REMAINING: send it"}
    model = ScriptedModel([batch, batch])
    result = await agent_for(model, driver).chat("fill abc then send it")
    assert result.status == "interrupted" and result.reason.startswith("PAGE_REPEATED_BATCH")
    assert driver.page.log == ["fill #i1 abc"]
    assert result.tool_calls[-1]["result"].error_code == "REPEATED_BATCH_SKIPPED"


async def test_dry_run_plans_without_acting() -> None:
    driver = page()
    model = ScriptedModel([{"tool_calls": [click("#b1"), fill("#i1", "abc")], "text": "plan"}])
    agent = agent_for(model, driver, dry_run=True)
    result = await agent.chat(TASK)
    assert result.ok and result.reason.startswith("PAGE_DRY_RUN")
    assert driver.page.log == []
    assert result.reply.splitlines()[:3] == [
        "Dry run: 2 planned tool call(s), none executed.",
        "1. dom.click #b1",
        '2. dom.fill #i1 "abc"',
    ]
    agent.set_dry_run(False)
    assert not agent.get_dry_run()


async def test_element_not_found_recovers_then_gives_up() -> None:
    driver = page()
    recoveries: list[str | None] = []
    callbacks = WebAgentCallbacks(on_before_recovery_snapshot=recoveries.append)
    model = ScriptedModel(
        [
            {"tool_calls": [click("#gone")], "text": "REMAINING: x"},
            {"tool_calls": [click("#gone")], "text": "REMAINING: x"},
            {"tool_calls": [click("#gone")], "text": "REMAINING: x"},
            "It is not there.\nREMAINING: DONE",
        ]
    )
    result = await agent_for(model, driver, callbacks=callbacks).chat("click the gone button")
    codes = [tc["result"].error_code for tc in result.tool_calls]
    assert codes == [
        "ELEMENT_NOT_FOUND_RECOVERY",
        "ELEMENT_NOT_FOUND_RECOVERY",
        "ELEMENT_NOT_FOUND_MAX_RECOVERY_REACHED",
    ]
    assert recoveries == [None, None] and result.metrics.recovery_count == 2
    second, third = (round_text(r.messages) for r in model.requests[1:3])
    assert "## Not-found retry context\nRetry attempt: 1/2" in second
    assert "Retry attempt: 2/2" in third
    assert "Not-found retry context" not in round_text(model.requests[3].messages)
    assert result.ok


async def test_memory_carries_earlier_chats() -> None:
    driver = page()
    seen: list[Sequence[Message]] = []

    def answer(msgs: Sequence[Message], req: ModelRequest) -> ModelTurn:
        seen.append(msgs)
        return ModelTurn(text=f"answer {len(seen)}\nREMAINING: DONE")

    agent = agent_for(FunctionModel(answer), driver, memory=True)
    await agent.chat("first question")
    await agent.chat("second question")
    assert [m.role for m in seen[1]] == ["system", "user", "assistant", "user"]
    assert seen[1][1].text == "first question" and seen[1][2].text.startswith("answer 1")
    assert len(agent.get_history()) == 4
    agent.set_memory(False)
    assert agent.get_history() == [] and not agent.get_memory()
    await agent.chat("third")
    assert len(seen[2]) == 2


async def test_route_skills_switch_prompt_and_tools_on_navigation() -> None:
    driver = page()

    @tool("save_settings")
    def save_settings() -> ToolResult:
        """Save the settings."""
        driver.page.log.append("saved")
        return ToolResult.success("saved")

    urls: list[str | None] = []
    routes = {"/settings": RouteSkill("Settings page: save with save_settings.", [save_settings])}
    model = ScriptedModel(
        [
            {
                "tool_calls": [call("navigate", action="goto", url="http://app.test/settings")],
                "text": "REMAINING: save",
            },
            {"tool_calls": [call("save_settings")], "text": "REMAINING: DONE"},
        ]
    )
    callbacks = WebAgentCallbacks(on_before_recovery_snapshot=urls.append)
    agent = agent_for(model, driver, routes=routes, callbacks=callbacks)
    result = await agent.chat("open settings and save")
    assert result.ok and driver.page.log[-1] == "saved"
    first, second = model.requests
    assert "save_settings" not in {t.name for t in first.tools}
    assert "save_settings" in {t.name for t in second.tools}
    assert "## Current route: /settings" in second.messages[0].text
    assert "Current route" not in first.messages[0].text
    assert urls == ["http://app.test/settings"]
    assert "url=http://app.test/settings" in snapshot_in(second.messages)


async def test_callbacks_and_metrics() -> None:
    driver = page()
    events: list[tuple[str, Any]] = []
    cb = WebAgentCallbacks(
        on_round=lambda r: events.append(("round", r)),
        on_text=lambda t: events.append(("text", t)),
        on_tool_call=lambda n, i: events.append(("call", (n, i["action"]))),
        on_tool_result=lambda n, r: events.append(("result", (n, r.ok))),
        on_snapshot=lambda s: events.append(("snapshot", s.count("#"))),
        on_metrics=lambda m: events.append(("metrics", m.round_count)),
    )
    model = ScriptedModel(
        [
            {
                "tool_calls": [click("#s1")],
                "text": "REMAINING: DONE",
                "usage": {"input_tokens": 120, "output_tokens": 9},
            }
        ]
    )
    result = await agent_for(model, driver, callbacks=cb).chat("click send")
    assert events == [
        ("snapshot", 3),
        ("round", 0),
        ("text", "REMAINING: DONE"),
        ("call", ("dom", "click")),
        ("result", ("dom", True)),
        ("metrics", 1),
    ]
    m = result.metrics
    assert (m.input_tokens, m.output_tokens, m.tool_success_rate) == (120, 9, 1.0)
    assert m.snapshot_read_count == 1 and m.latest_snapshot_size == m.max_snapshot_size > 0


async def test_without_auto_snapshot_round_zero_has_none() -> None:
    driver = page()
    model = ScriptedModel(["Nothing to do.\nREMAINING: DONE"])
    agent = agent_for(model, driver, auto_snapshot=False)
    assert not agent.get_auto_snapshot()
    await agent.chat("nothing")
    assert "SNAPSHOT_START" not in round_text(model.requests[0].messages)
    assert driver.snapshots == 0


def test_tool_and_prompt_management() -> None:
    driver = page()
    agent = agent_for(ScriptedModel([]), driver, system_prompt={"tickets": "only tickets"})

    @tool("create_ticket")
    def create_ticket(title: str) -> ToolResult:
        """Create a ticket.

        Args:
            title: its title
        """
        return ToolResult.success(title)

    agent.register_tool(create_ticket)
    assert agent.has_tool("create_ticket")
    assert agent.get_tool_names() == ["dom", "navigate", "page_info", "create_ticket"]
    assert agent.remove_tool("dom") is False and agent.has_tool("dom")
    assert agent.clear_custom_tools() == ["create_ticket"] and not agent.has_tool("create_ticket")
    assert agent.remove_tool("create_ticket") is False
    agent.set_system_prompt("global rule")
    assert agent.get_system_prompts() == {"tickets": "only tickets", "default": "global rule"}
    assert "## Extra rules (tickets)\nonly tickets" in agent.system_prompt()
    assert agent.keep_only_system_prompt("default")
    agent.clear_system_prompts()
    assert agent.get_system_prompts() == {}


async def test_done_over_a_failed_call_keeps_the_task_open() -> None:
    driver = page()
    model = ScriptedModel(
        [
            {"tool_calls": [click("#b1"), fill("#nope", "abc")], "text": "REMAINING: DONE"},
            {"tool_calls": [click("#s1")], "text": "REMAINING: DONE"},
        ]
    )
    result = await agent_for(model, driver).chat("open, then send")
    assert result.ok and driver.page.log == ["click #b1", "click #s1"]
    second = round_text(model.requests[1].messages)
    assert "## Current remaining instruction\nopen, then send" in second
    assert "SKIPPED_AFTER_DOM_CHANGE" in second


async def test_a_paused_run_stops_at_the_next_boundary() -> None:
    from xclaw.core.state import RunControl

    control = RunControl()
    control.interrupt()  # the first Ctrl+C: pause
    model = ScriptedModel([])
    result = await agent_for(model, page()).chat("click send", control=control)
    assert result.status == "interrupted" and result.reason.startswith("RUN_PAUSED")
    assert result.metrics.round_count == 0


class ChangingDriver(FakeDriver):
    """A page that says whether it changed since a snapshot (as PageDriver does)."""

    def __init__(self, **elements: str) -> None:
        super().__init__(**elements)
        self.dirty = False

    async def snapshot(self, options: Any = None) -> Any:
        self.dirty = False
        return await super().snapshot(options)

    async def changed(self, snapshot: Any = None) -> bool:
        return self.dirty


async def test_rounds_reuse_an_unchanged_page_and_page_info_reads_a_changed_one() -> None:
    driver = ChangingDriver(b1='[button] "Open"')
    snap = call("page_info", action="snapshot")
    seen: list[str] = []

    def answer(messages: Sequence[Message], request: ModelRequest) -> ModelTurn:
        seen.append(snapshot_in(messages))
        turn = len(seen)
        if turn == 1:  # nothing changed yet: the read is refused
            return ModelTurn(text="REMAINING: open", tool_calls=(_part(snap),))
        if turn == 2:  # the page changes on its own (a timer): now the read goes through
            driver.page.elements["#b2"] = '[button] "Later"'
            driver.dirty = True
            return ModelTurn(text="REMAINING: open it", tool_calls=(_part(snap),))
        return ModelTurn(text="REMAINING: DONE")

    result = await agent_for(FunctionModel(answer), driver).chat("open")
    codes = [tc["result"].error_code for tc in result.tool_calls]
    assert codes == ["REDUNDANT_PAGE_INFO_SKIPPED", None]
    assert driver.page.log == ["page_info snapshot"]  # only the second one ran
    assert "Later" not in seen[1] and "Later" in seen[2]  # round 3 read the changed page
    m = result.metrics
    assert (m.snapshot_read_count, m.snapshot_reuse_count) == (2, 1)


def _part(spec: dict[str, Any]) -> ToolCallPart:
    return ToolCallPart("c1", spec["name"], spec["arguments"])

"""WebAgent end to end in real headless Chromium, on fixture pages served over loopback
(``fixtures/agent_*.html``): seed 002's linear example through the REMAINING protocol,
recovery from a re-rendered element, route skills switched by navigation, and a dry run that
leaves the page alone."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from page_agent_fakes import FAST, click, fill, round_text, snapshot_in
from page_server import PageServer
from playwright.async_api import Page

from xclaw import FunctionModel, ModelTurn, ScriptedModel, tool
from xclaw.core.messages import Message, ToolCallPart, ToolResult
from xclaw.core.model import Model, ModelRequest
from xclaw.page.agent import WebAgent
from xclaw.page.callbacks import WebAgentCallbacks
from xclaw.page.driver import PageDriver
from xclaw.page.routes import RouteSkill

pytestmark = pytest.mark.asyncio(loop_scope="module")

LINEAR = '点击按钮 -> 输入框输入 "abc" -> 发送'


async def refs_of(driver: PageDriver) -> dict[str, str]:
    """Visible element name -> ref, from a real snapshot."""
    snap = await driver.snapshot()
    return {r.name: r.ref for r in snap.refs if r.name}


async def test_linear_example_through_the_remaining_protocol(
    page: Page, driver: PageDriver, page_server: PageServer
) -> None:
    # Refs hash the URL and the XPath: learn them on one visit, use them on the next.
    await page.goto(page_server.url("agent_chat.html"))
    open_ref = (await refs_of(driver))["打开"]
    await page.click("#open")
    later = await refs_of(driver)
    msg_ref, send_ref = later["消息"], later["发送"]
    await page.goto(page_server.url("agent_chat.html"))

    model = ScriptedModel(
        [
            {
                "expect": {"last_contains": [f"## Task\n{LINEAR}", open_ref]},
                "tool_calls": [click(open_ref)],
                "text": '打开了。\nREMAINING: 输入框输入 "abc" -> 发送',
            },
            {
                "expect": {"last_contains": [msg_ref, f"1. dom.click {open_ref}"]},
                "tool_calls": [fill(msg_ref, "abc")],
                "text": "REMAINING: 发送",
            },
            {"tool_calls": [click(send_ref)], "text": "已发送。\nREMAINING: DONE"},
        ]
    )
    agent = WebAgent(model, driver, settings=FAST)
    result = await agent.chat(LINEAR)

    model.assert_complete()
    assert result.ok, result.reason
    assert await page.text_content("#out") == "sent:abc"
    assert result.reply == "已发送。" and result.metrics.round_count == 3
    sent = [round_text(r.messages) for r in model.requests]
    assert '## Current remaining instruction\n输入框输入 "abc" -> 发送' in sent[1]
    assert "## Current remaining instruction\n发送" in sent[2]
    assert f'1. dom.click {open_ref}\n2. dom.fill {msg_ref} "abc"' in sent[2]
    assert f'## Previous round planned task array\n["dom.fill {msg_ref} \\"abc\\""]' in sent[2]
    assert msg_ref not in snapshot_in(model.requests[0].messages)  # hidden at first
    assert msg_ref in snapshot_in(model.requests[1].messages)
    m = result.metrics
    assert (m.total_tool_calls, m.successful_tool_calls, m.tool_success_rate) == (3, 3, 1.0)
    assert m.snapshot_read_count == 3 and m.max_snapshot_size >= m.avg_snapshot_size > 0


def _ref_named(messages: Sequence[Message], name: str) -> str:
    for line in snapshot_in(messages).splitlines():
        if f'"{name}"' in line and "#" in line:
            return "#" + line.rsplit("#", 1)[1].split()[0]
    raise AssertionError(f"no {name!r} in the snapshot")


async def test_recovery_after_the_target_is_rerendered(page: Page, page_server: PageServer) -> None:
    await page.goto(page_server.url("agent_rerender.html"))
    seen: list[str] = []

    async def answer(messages: Sequence[Message], request: ModelRequest) -> ModelTurn:
        ref = _ref_named(messages, "Go")
        seen.append(ref)
        text = round_text(messages)
        if len(seen) == 1:
            await page.evaluate("rerender()")  # the page re-renders while the model thinks
        elif "ELEMENT_NOT_FOUND_RECOVERY" not in text:
            raise AssertionError("the recovery result was not shown to the model")
        args = {"action": "click", "selector": ref, "waitMs": 300}
        call = ToolCallPart(f"c{len(seen)}", "dom", args)
        return ModelTurn(text="REMAINING: DONE", tool_calls=(call,))

    recoveries: list[str | None] = []
    callbacks = WebAgentCallbacks(on_before_recovery_snapshot=recoveries.append)
    agent = WebAgent(FunctionModel(answer), page, settings=FAST, callbacks=callbacks)
    result = await agent.chat("click Go")

    assert result.ok, result.reason
    assert await page.text_content("#out") == "clicked"
    assert len(seen) == 2 and seen[0] != seen[1]  # a new ref after the re-render
    first = result.tool_calls[0]["result"]
    assert first.error_code == "ELEMENT_NOT_FOUND_RECOVERY"
    assert first.data["recoveryAttempt"] == 1
    assert result.tool_calls[1]["result"].ok
    assert recoveries == [None] and result.metrics.recovery_count == 1


async def test_route_skills_switch_on_navigation(page: Page, page_server: PageServer) -> None:
    await page.goto(page_server.url("agent_home.html"))
    settings_url = page_server.url("agent_settings.html")

    @tool("save_settings")
    async def save_settings(name: str) -> ToolResult:
        """Save the settings form.

        Args:
            name: the display name
        """
        await page.fill("#name", name)
        await page.evaluate("document.getElementById('status').textContent = 'saved'")
        return ToolResult.success("saved", name=name)

    routes = {
        "/agent_settings.html": RouteSkill("Use save_settings to save this form.", [save_settings])
    }
    model = ScriptedModel(
        [
            {
                "tool_calls": [
                    {
                        "name": "navigate",
                        "arguments": {"action": "goto", "url": settings_url},
                    }
                ],
                "text": "REMAINING: save the name Ada",
            },
            {
                "expect": {"tools_include": ["save_settings"], "last_contains": ["unsaved"]},
                "tool_calls": [{"name": "save_settings", "arguments": {"name": "Ada"}}],
                "text": "REMAINING: DONE",
            },
        ]
    )
    urls: list[str | None] = []
    agent = WebAgent(
        model,
        page,
        routes=routes,
        settings=FAST,
        callbacks=WebAgentCallbacks(on_before_recovery_snapshot=urls.append),
    )
    result = await agent.chat("open settings and save the name Ada")

    assert result.ok, result.reason
    assert await page.text_content("#status") == "saved"
    assert await page.input_value("#name") == "Ada"
    first, second = model.requests
    assert "save_settings" not in {t.name for t in first.tools}
    assert "## Current route: /agent_settings.html" in second.messages[0].text
    assert urls == [settings_url]


async def test_dry_run_leaves_the_page_alone(
    page: Page, driver: PageDriver, page_server: PageServer
) -> None:
    await page.goto(page_server.url("agent_chat.html"))
    open_ref = (await refs_of(driver))["打开"]
    model: Model = ScriptedModel([{"tool_calls": [click(open_ref)], "text": "REMAINING: 发送"}])
    result = await WebAgent(model, driver, dry_run=True).chat(LINEAR)
    assert result.ok and result.reply.startswith("Dry run: 1 planned tool call(s)")
    assert await page.is_hidden("#composer")


async def test_guards_and_memory_on_a_real_page(
    page: Page, driver: PageDriver, page_server: PageServer
) -> None:
    await page.goto(page_server.url("agent_chat.html"))
    open_ref = (await refs_of(driver))["打开"]
    read = [{"name": "page_info", "arguments": {"action": a}} for a in ("get_title", "get_url")]
    model = ScriptedModel(
        [
            "I can see an open button.",  # no tool call, work left: a protocol violation round
            {"expect": {"last_contains": ["## Protocol violation"]}, "tool_calls": read[:1]},
            {"tool_calls": read[1:]},  # a second read-only round without progress: idle stop
            {"tool_calls": [click(open_ref)], "text": "Opened.\nREMAINING: DONE"},
            {"tool_calls": [click(open_ref)], "text": "REMAINING: the same again"},
            {"tool_calls": [click(open_ref)], "text": "REMAINING: the same again"},
        ]
    )
    agent = WebAgent(model, driver, memory=True, settings=FAST)
    first = await agent.chat("open the composer")
    assert first.status == "interrupted" and first.reason.startswith("PAGE_IDLE_LOOP")
    assert [tc["result"].error_code for tc in first.tool_calls] == [
        "REDUNDANT_PAGE_INFO_SKIPPED"
    ] * 2
    assert first.metrics.redundant_intercept_count == 2 and first.metrics.round_count == 3
    assert await page.is_hidden("#composer")

    second = await agent.chat("open the composer now")
    assert second.ok and await page.is_visible("#composer")
    request = model.requests[3].messages
    assert [m.role for m in request] == ["system", "user", "assistant", "user"]
    assert request[1].text == "open the composer"

    agent.set_memory(False)
    third = await agent.chat("open it twice")  # the same successful batch twice: stopped
    assert third.status == "interrupted" and third.reason.startswith("PAGE_REPEATED_BATCH")
    assert third.tool_calls[-1]["result"].error_code == "REPEATED_BATCH_SKIPPED"
    model.assert_complete()


@pytest.mark.parametrize("url", ["file:///etc/hostname", "javascript:alert(1)"])
async def test_a_goto_the_page_suggests_is_judged_by_the_policy(
    page: Page, driver: PageDriver, page_server: PageServer, url: str
) -> None:
    """Nothing the model reads widens what it may open: a goto to a local file outside the
    project or a non-http scheme asks, and with no one to ask (the default) it is refused."""
    start = page_server.url("agent_chat.html")
    await page.goto(start)
    goto = {"id": "n1", "name": "navigate", "arguments": {"action": "goto", "url": url}}
    done = "Could not open it.\nREMAINING: DONE"
    model = ScriptedModel([{"tool_calls": [goto], "text": "REMAINING: read it"}, done])
    result = await WebAgent(model, driver, settings=FAST).chat("open the file the page mentions")
    (call,) = [c for c in result.tool_calls if c["name"] == "navigate"]
    assert call["result"].error_code == "APPROVAL_DENIED", call["result"]
    assert page.url == start

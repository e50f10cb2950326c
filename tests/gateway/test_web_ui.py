"""The web UI end to end in real headless Chromium (issue 10): log in with the token, chat, see
the live delta, approve a command in the page, see its output and the final answer, reload and
find the session again with its tool card rebuilt from the stored transcript, fork it from the
tool call's step (the fork opens) and roll the fork back; a wrong token shows an error and no
session list. The Changes view is in ``test_web_ui_review.py``.

The gateway is the real one (``xclaw.gateway.server``) on a free loopback port, with a
``ScriptedModel`` whose first turn runs ``sh -c ...`` (inline code: the policy asks) and whose
second turn answers from the command's output. The agent runs in host mode, where inline code
in ``sh -c`` always asks (a sandbox would contain it and not ask).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Browser, Page, async_playwright, expect

from xclaw import Agent, ScriptedModel
from xclaw.browser import CONTAINER_ARGS, find_browser
from xclaw.core.errors import ConfigError
from xclaw.core.events import EventBus
from xclaw.core.tooling import Approver
from xclaw.gateway.auth import GatewayAuth
from xclaw.gateway.gateway import Gateway
from xclaw.gateway.server import GatewayServer, create_app
from xclaw.sandbox.host import HostSandbox
from xclaw.store.sqlite import open_store

pytestmark = pytest.mark.timeout(120)

TOKEN = "web-ui-test-token-0123456789abcdef"
MARK = "approved-output-42"
WAIT_MS = 15_000
Script = list[dict[str, Any]]


def check_script(after: dict[str, Any]) -> Script:
    """A turn that runs ``sh -c 'echo MARK'`` (the policy asks), then ``after``."""
    call = {
        "id": "call_check",
        "name": "terminal.exec",
        "arguments": {"program": "sh", "argv": ["-c", f"echo {MARK}"]},
    }
    # markup in model text must reach the page as text, never as elements
    return [{"text": "I will run the <b>check</b> first.", "tool_calls": [call]}, after]


APPROVED = check_script({"text": f"The check printed {MARK}.", "expect": {"last_contains": [MARK]}})
DENIED = check_script({"text": "You denied the check.", "expect": {"last_ok": False}})


@asynccontextmanager
async def serving(root: Path, script: Script) -> AsyncIterator[GatewayServer]:
    """G1's real gateway on a free loopback port; every session's agent runs ``script``."""
    store = open_store()

    def make_agent(bus: EventBus, approver: Approver, _origin: object) -> Agent:
        model = ScriptedModel(script)
        # host mode: inline code in `sh -c` asks whatever sandbox this machine has
        host = HostSandbox(reason="chosen")
        return Agent(model, root, approval=approver, bus=bus, store=store, sandbox=host)

    gateway = Gateway(make_agent, store, workdir=root, approval_timeout=30.0)
    server = GatewayServer(create_app(gateway, GatewayAuth(token=TOKEN))).start()
    try:
        yield server
    finally:
        server.stop()
        store.close()


def browser_path() -> str:
    """The Chromium to drive; fails the test (never skips) when there is none."""
    try:
        return str(find_browser(os.environ.get("XCLAW_TEST_BROWSER") or None))
    except ConfigError:
        pytest.fail("No Chrome or Chromium found: run `make deps` (it installs chromium).")


@asynccontextmanager
async def chromium() -> AsyncIterator[Browser]:
    executable = browser_path()  # fails the test when there is no browser
    async with async_playwright() as p:
        browser = await p.chromium.launch(
            executable_path=executable, headless=True, args=list(CONTAINER_ARGS)
        )
        try:
            yield browser
        finally:
            await browser.close()


async def log_in(page: Page, gw: GatewayServer, token: str) -> None:
    expect.set_options(timeout=WAIT_MS)
    page.set_default_timeout(WAIT_MS)
    await page.goto(gw.url + "/")
    await expect(page.locator("#login-view")).to_be_visible()
    await page.locator("#token-input").fill(token)
    await page.keyboard.press("Enter")


async def test_chat_approve_reload(root: Path) -> None:
    async with serving(root, APPROVED) as gw, chromium() as browser:
        page = await browser.new_page()
        await log_in(page, gw, TOKEN)
        await expect(page.locator("#chat-view")).to_be_visible()
        await expect(page.locator("#conn-status")).to_have_text("connected")
        # the token went into a cookie only: not in the address, not in web storage
        assert TOKEN not in page.url
        stored = await page.evaluate("JSON.stringify([localStorage, sessionStorage])")
        assert TOKEN not in stored

        await page.locator("#composer-input").fill("Please run the check.")
        await page.keyboard.press("Enter")
        await expect(page.locator(".msg-user .msg-text")).to_have_text("Please run the check.")
        # the delta arrives while the turn still waits for the approval
        approval = page.locator(".approval")
        await expect(approval).to_be_visible()
        first = page.locator(".msg-assistant").first
        await expect(first).to_contain_text("I will run the <b>check</b> first.")
        await expect(page.locator("#messages b")).to_have_count(0)
        await expect(page.locator(".tool-name")).to_have_text("terminal.exec")
        await expect(page.locator(".tool-args")).to_contain_text(f"echo {MARK}")
        await expect(approval).to_contain_text("terminal.exec")
        await expect(page.locator(".approve-once")).to_be_focused()
        await page.keyboard.press("Enter")  # allow once, from the keyboard

        await expect(approval).to_contain_text("allowed once")
        await expect(page.locator(".tool-output")).to_contain_text(MARK)
        await expect(page.locator(".tool")).to_have_class("tool ok")
        final = page.locator(".msg.final")
        await expect(final).to_contain_text(f"The check printed {MARK}.")
        await expect(final).to_have_attribute("data-status", "completed")
        session_id = await page.evaluate("sessionStorage.getItem('xclaw.sessionId')")
        assert session_id

        await page.reload()
        await expect(page.locator("#chat-view")).to_be_visible()
        item = page.locator(f'.session-item[data-session-id="{session_id}"]')
        await expect(item).to_have_attribute("aria-current", "true")
        await expect(page.locator(".msg-user .msg-text")).to_contain_text("Please run the check.")
        await expect(page.locator(".msg-assistant").last).to_contain_text(MARK)
        # the tool card is rebuilt from the stored transcript: name, arguments, result
        card = page.locator(".tool")
        await expect(card).to_have_count(1)
        await expect(card.locator(".tool-name")).to_have_text("terminal.exec")
        await expect(card.locator(".tool-args")).to_contain_text(f"echo {MARK}")
        await expect(card.locator(".tool-status")).to_have_text("done")
        await expect(card.locator(".tool-result")).to_contain_text(MARK)
        await expect(card).to_have_class("tool from-history ok")
        await page.locator("#steps summary").click()
        await expect(page.locator("#step-tree")).to_contain_text("terminal.exec")

        # fork from the tool call's step: the new session opens with the history up to it
        name = page.locator(".step-name", has_text="Tool: terminal.exec")
        step_id = await name.evaluate("n => n.parentElement.dataset.stepId")
        tool_step = f'li.step[data-step-id="{step_id}"]'
        await page.locator(f"{tool_step} > .step-actions > .step-fork").click()
        confirm = page.locator(f"{tool_step} > .step-confirm")
        await expect(confirm).to_contain_text(f"up to and including {step_id}")
        await confirm.locator(".confirm-yes").click()
        await expect(page.locator("#steps-result")).to_contain_text("Forked " + session_id)
        forked = await page.evaluate("sessionStorage.getItem('xclaw.sessionId')")
        assert forked and forked != session_id
        new_item = page.locator(f'.session-item[data-session-id="{forked}"]')
        await expect(new_item).to_have_attribute("aria-current", "true")
        await expect(page.locator(".tool .tool-result")).to_contain_text(MARK)
        await expect(page.locator("#messages")).not_to_contain_text("The check printed")
        await expect(page.locator("#messages")).to_contain_text("Please run the check.")

        # rollback in the fork: its tool call step and everything after it leave the history
        fork_steps = page.locator("#step-tree li.step")
        count = await fork_steps.count()
        await page.locator(f"{tool_step} > .step-actions > .step-rollback").click()
        confirm = page.locator(f"{tool_step} > .step-confirm")
        await expect(confirm).to_contain_text(f"before {step_id}")
        await confirm.locator(".confirm-yes").click()
        await expect(page.locator("#steps-result")).to_contain_text(f"Rewound to before {step_id}")
        # the call (its model step) stays; its result (the tool step) is gone
        await expect(page.locator(".tool .tool-status")).to_have_text("no result recorded")
        await expect(page.locator(".tool .tool-result")).to_be_hidden()
        await expect(page.locator(tool_step)).to_have_count(0)
        assert await fork_steps.count() < count
        # the original session is untouched
        await item.click()
        await expect(page.locator(".tool .tool-result")).to_contain_text(MARK)
        await expect(page.locator(".msg.msg-assistant").last).to_contain_text("The check printed")

        await page.locator("#session-search").fill("no-such-words-here")
        await expect(item).to_have_count(0)
        await page.locator("#session-search").fill("check")
        await expect(item).to_have_count(1)


async def test_wrong_token_shows_error_and_no_sessions(root: Path) -> None:
    async with serving(root, APPROVED) as gw, chromium() as browser:
        page = await browser.new_page()
        await log_in(page, gw, "not-the-token")
        await expect(page.locator("#login-error")).to_contain_text("not accepted")
        await expect(page.locator("#chat-view")).to_be_hidden()
        await expect(page.locator(".session-item")).to_have_count(0)
        cookies = await page.context.cookies()
        assert not cookies


async def send_and_wait_for_approval(page: Page, gw: GatewayServer) -> None:
    await log_in(page, gw, TOKEN)
    await expect(page.locator("#conn-status")).to_have_text("connected")
    await page.locator("#composer-input").fill("Please run the check.")
    await page.keyboard.press("Enter")
    await expect(page.locator(".approval")).to_be_visible()
    await expect(page.locator("#stop-button")).to_be_enabled()


async def test_deny_from_the_keyboard(root: Path) -> None:
    async with serving(root, DENIED) as gw, chromium() as browser:
        page = await browser.new_page()
        await send_and_wait_for_approval(page, gw)
        # "allow for this task" is offered for `sh -c`: Tab twice from "allow once" is "deny"
        await expect(page.locator(".approve-task")).to_be_visible()
        await page.keyboard.press("Tab")
        await page.keyboard.press("Tab")
        await expect(page.locator(".approve-deny")).to_be_focused()
        await page.keyboard.press("Enter")
        await expect(page.locator(".approval")).to_contain_text("You denied.")
        await expect(page.locator(".tool")).to_have_class("tool failed")
        await expect(page.locator(".tool-output")).to_be_hidden()
        await expect(page.locator(".msg.final")).to_contain_text("You denied the check.")
        await expect(page.locator("#stop-button")).to_be_disabled()


async def test_stop_ends_the_turn(root: Path) -> None:
    async with serving(root, APPROVED) as gw, chromium() as browser:
        page = await browser.new_page()
        await send_and_wait_for_approval(page, gw)
        await page.locator("#stop-button").click()
        final = page.locator(".msg.final")
        await expect(final).to_have_attribute("data-status", "interrupted")
        await expect(final).to_contain_text("(interrupted)")
        await expect(page.locator(".approval")).to_contain_text("Not answered")
        await expect(page.locator(".approve-once")).to_be_disabled()
        await expect(page.locator(".tool-output")).to_be_hidden()
        await expect(page.locator("#stop-button")).to_be_disabled()

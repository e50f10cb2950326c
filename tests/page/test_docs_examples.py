"""The docs' examples that need a real Chromium (tests/test_docs.py runs the others).

- ``<!-- run with: ticket-page -->`` (docs/page-agent.md): the ``WebAgent`` fragment, top-level
  ``await`` and all, with what it leaves to the reader: ``page``, a Playwright page on a
  ticket form at ``/tickets``; ``create_ticket``, that route's tool; ``model``, a function
  model that reads each round's snapshot and acts as a model would.
- ``<!-- run with: fake-deepseek-page -->`` (README.md): ``xclaw page snapshot`` and ``xclaw
  page run ... --model deepseek:deepseek-chat --headless`` as written, the deepseek preset
  pointed at a local fake (models.yaml) that plays the page model from the snapshots it is
  sent.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from page_agent_fakes import ref_by_label, round_text
from page_server import PageServer
from playwright.async_api import Page, Route
from tests.docs_support.blocks import ROOT, marked
from tests.docs_support.fakes import (
    AnsweringServer,
    Events,
    RecordedRequest,
    chat_reply,
    point_presets,
)
from tests.docs_support.reader import Reader

from xclaw import FunctionModel, ModelTurn, ToolResult, tool
from xclaw.core.messages import Message, ToolCallPart
from xclaw.core.model import ModelRequest

TICKETS = """<!doctype html>
<html><head><title>Tickets</title></head><body><main>
  <h1>Tickets</h1>
  <button id="new" onclick="document.getElementById('form').hidden = false">New ticket</button>
  <form id="form" hidden onsubmit="return false">
    <label>Title <input id="title" name="title"></label>
  </form>
  <p id="status"></p>
</main></body></html>
"""


def _remaining(text: str) -> str:
    """What is left, as the round message says: the task itself in the first round."""
    found = re.search(r"## Current remaining instruction\n(.+)", text)
    return (found or re.search(r"## Task\n(.+)", text) or [""] * 2)[1]


@pytest.mark.asyncio(loop_scope="module")
async def test_the_web_agent_fragment_runs_on_a_ticket_page(
    page: Page, page_server: PageServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reader = Reader.make(tmp_path, monkeypatch)
    url = page_server.url("tickets")

    async def serve(route: Route) -> None:
        await route.fulfill(body=TICKETS, content_type="text/html")

    await page.route(url, serve)
    await page.goto(url)
    saved: list[str] = []

    @tool("create_ticket")
    async def create_ticket(title: str) -> ToolResult:
        """Save the ticket form as a new ticket.

        Args:
            title: the ticket's title
        """
        saved.append(title)
        await page.evaluate("t => document.getElementById('status').textContent = t", title)
        return ToolResult.success(f"Ticket T-1 created: {title}", id="T-1")

    requests: list[ModelRequest] = []

    def answer(messages: Sequence[Message], request: ModelRequest) -> ModelTurn:
        requests.append(request)
        left = _remaining(round_text(messages))
        if left.startswith("open"):
            args = {"action": "click", "selector": ref_by_label(messages, "New ticket")}
            text = 'The form is open.\nREMAINING: fill the title "Login broken" -> save'
            return ModelTurn(text=text, tool_calls=(ToolCallPart("c1", "dom", args),))
        if left.startswith("fill"):
            ref = ref_by_label(messages, "Title")
            args = {"action": "fill", "selector": ref, "value": "Login broken"}
            return ModelTurn(text="REMAINING: save", tool_calls=(ToolCallPart("c2", "dom", args),))
        call = ToolCallPart("c3", "create_ticket", {"title": "Login broken"})
        return ModelTurn(text="Saved as T-1.\nREMAINING: DONE", tool_calls=(call,))

    namespace: dict[str, Any] = {
        "__name__": "__docs__",
        "model": FunctionModel(answer),
        "page": page,
        "create_ticket": create_ticket,
    }
    [block] = marked("ticket-page")
    printed = await reader.arun_python(block, namespace)

    assert printed.startswith("round 1\nround 2\nround 3\ncompleted Saved as T-1."), printed
    assert saved == ["Login broken"] and await page.input_value("#title") == "Login broken"
    assert await page.text_content("#status") == "Login broken"
    last = requests[-1]
    assert "create_ticket" in {spec.name for spec in last.tools}  # the /tickets route's tool
    sent = json.dumps([m.text for m in last.messages], ensure_ascii=False)
    assert "Prefer filters; submit last." in sent and "Never delete anything." in sent


def test_the_page_commands_of_the_readme_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reader = Reader.make(tmp_path, monkeypatch)
    fixture = Path("tests/page/fixtures/agent_chat.html")  # the README's path, from a clone
    (reader.folder / fixture.parent).mkdir(parents=True)
    shutil.copy(ROOT / fixture, reader.folder / fixture)
    asked: list[str] = []

    def answer(request: RecordedRequest) -> Events:
        body = request.body or {}
        asked.append(body["model"])
        text = _content(body["messages"][-1])
        messages = [SimpleNamespace(text=text)]  # what the fakes' snapshot readers read
        left = _remaining(text)
        if left.startswith("点击按钮"):
            click = {"action": "click", "selector": ref_by_label(messages, "打开")}
            return chat_reply('REMAINING: 输入框输入 "abc" -> 发送', [("dom", click)])
        if left.startswith("输入框输入"):
            ref = ref_by_label(messages, "消息")
            fill = {"action": "fill", "selector": ref, "value": "abc"}
            return chat_reply("REMAINING: 发送", [("dom", fill)])
        send = {"action": "click", "selector": ref_by_label(messages, "发送")}
        return chat_reply("已发送。\nREMAINING: DONE", [("dom", send)])

    [block] = marked("fake-deepseek-page")
    with AnsweringServer(answer) as server:
        point_presets(server.url + "/v1", "deepseek")
        reader.setenv("DEEPSEEK_API_KEY", "sk-docs-fake-deepseek-0123456789")
        output = reader.run_bash(block)
    assert '[button] "打开" #' in output  # the snapshot
    assert "3 rounds · 3 tool calls (0 failed, success 100%)" in output, output
    assert asked == ["deepseek-chat"] * 3


def _content(message: dict[str, Any]) -> str:
    content = message.get("content") or ""
    if isinstance(content, list):
        return "\n".join(part.get("text", "") for part in content)
    return str(content)

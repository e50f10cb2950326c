"""ChatGPTWebTransport against the fixture site in real headless Chromium: messages and replies."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import pytest
from fixture_server import DEMO_SCRIPT, FixtureSite, Reply
from web_support import FAST, Events, needs_browser

from xclaw.core.events import Event, EventBus
from xclaw.core.tooling import Risk, ToolSpec
from xclaw.models.chatgpt_web import Takeover
from xclaw.models.scripted import load_script
from xclaw.models.text.model import TextProtocolModel
from xclaw.models.text.protocol_parse import ParsedTurn, parse_reply
from xclaw.models.text.transport import ScriptedTransport, script_to_xml

pytestmark = [needs_browser, pytest.mark.asyncio(loop_scope="module")]

WRITE = ToolSpec(
    "fs.write",
    "Write a file.",
    {
        "type": "object",
        "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
        "required": ["path", "content"],
    },
    read_only=False,
    risk=Risk.WRITE,
)
FENCED = """Here is the next step:

```xml
<agent_response>
  <done>false</done>
  <message>Writing the file.</message>
  <tool_call name="fs.write">
    <args>
      <path>a.txt</path>
      <content><![CDATA[if (a < b && c > d) {}
]]></content>
    </args>
  </tool_call>
</agent_response>
```

Tell me what the tool says."""


async def test_several_turns_round_trip_exactly(site: FixtureSite, make_transport: Any) -> None:
    events, deltas = Events(), []
    transport = make_transport(on_event=events, on_delta=deltas.append)
    long_reply = "A longer reply, streamed in small pieces. " * 8
    site.queue("First reply.", "Second **reply**\n\nin two paragraphs.", Reply(long_reply, chunk=9))
    messages = [
        "hello",
        "line one\nline <two> & three\n\n<![CDATA[x ]]]]><![CDATA[> y]]>\n\ttab  two spaces\nend",
        "ünïcödé ✓ 你好 — the last one",
    ]
    replies = [await transport.send(m) for m in messages]
    assert replies == ["First reply.", "Second **reply**\n\nin two paragraphs.", long_reply]
    assert [p["text"] for p in site.posted] == messages  # typed exactly, newlines included
    (conversation,) = {p["conversation_id"] for p in site.posted}
    assert transport.conversation_url == f"{site.url}c/{conversation}"
    assert events.of("conversation.created") == [{"url": transport.conversation_url}]
    assert transport.last_reply_source == "clipboard"
    assert len(deltas) > 3 and "streamed in small pieces" in "".join(deltas)


@pytest.mark.parametrize("copy", ["clipboard", "execcommand", "broken"])
async def test_a_fenced_reply_in_prose_reaches_the_parser(
    site: FixtureSite, make_transport: Any, copy: str
) -> None:
    site.configure(copy=copy)
    site.queue(FENCED)
    transport = make_transport()
    text = await transport.send("go on")
    assert transport.last_reply_source == ("dom" if copy == "broken" else "clipboard")
    if copy != "broken":
        assert text == FENCED  # the Markdown as the copy button gave it
    parsed = parse_reply(text, [WRITE])
    assert isinstance(parsed, ParsedTurn), parsed
    assert parsed.tool_call is not None
    assert parsed.tool_call.arguments == {"path": "a.txt", "content": "if (a < b && c > d) {}\n"}


async def test_a_thinking_preamble_does_not_end_the_turn(
    site: FixtureSite, make_transport: Any
) -> None:
    # The preamble sits still past the stability window with the stop button gone and an
    # action bar flashing by; only the answer after it may be returned.
    site.queue(Reply("The real answer.", thinking="Thinking about the request..."))
    transport = make_transport()
    assert await transport.send("think first") == "The real answer."


async def test_an_error_banner_pauses_for_a_person_then_the_reply_continues(
    site: FixtureSite, make_transport: Any
) -> None:
    seen: list[Takeover] = []

    async def person(takeover: Takeover) -> None:
        seen.append(takeover)
        await asyncio.sleep(0.2)
        site.clear_banner()  # the person dismissed it (e.g. pressed "try again")

    events = Events()
    transport = make_transport(on_takeover=person, on_event=events)
    answer = "The reply that was interrupted, then finished after the banner was dealt with."
    site.queue(Reply(answer, banner="Etwas ist schiefgelaufen. Bitte erneut versuchen."))
    assert await transport.send("go") == answer
    assert [t.code for t in seen] == ["WEB_BANNER"]
    assert "schiefgelaufen" in seen[0].message
    assert events.of("browser.takeover_required")[0]["code"] == "WEB_BANNER"


async def test_files_go_with_the_next_message(
    site: FixtureSite, make_transport: Any, tmp_path: Path
) -> None:
    upload = tmp_path / "notes.txt"
    upload.write_text("attached")
    site.queue("Got the file.")
    transport = make_transport()
    assert await transport.attach_files([upload]) is True
    assert await transport.send("see attached") == "Got the file."
    assert site.posted[0]["attachments"] == ["notes.txt"]


async def test_the_page_clipboard_is_only_captured_while_reading(
    site: FixtureSite, make_transport: Any
) -> None:
    site.queue("Copied inside the page.")
    transport = make_transport()
    await transport.send("hi")
    page = await transport.manager.page()
    # Not armed any more: the page's own writes go to the real clipboard API, not to us.
    captured = await page.evaluate(
        """async () => {
             const s = window.__xclawClipboard;
             s.text = null;
             await navigator.clipboard.writeText('the user copies').catch(() => {});
             return [s.armed, s.text];
           }"""
    )
    assert captured == [False, None]


async def test_the_demo_script_is_answered_by_the_page_in_xml(
    site: FixtureSite, make_transport: Any, tmp_path: Path
) -> None:
    from xclaw.coding.demo.run import run_demo

    scripted = ScriptedTransport(script_to_xml(load_script(DEMO_SCRIPT)))
    site.use_script(scripted)
    model = TextProtocolModel(make_transport(), name="chatgpt-web (fixture)")
    bus = EventBus()
    calls: list[str] = []

    def watch(ev: Event) -> None:
        if ev.type == "tool.completed":
            calls.append(str(ev.payload.get("name")))

    bus.subscribe(watch)
    directory = tmp_path / "site"
    directory.mkdir()
    result, _ = await run_demo(directory, bus, model)
    assert result.status == "completed", result.reason
    scripted.assert_complete()
    assert len(site.posted) == len(scripted.replies)
    assert "terminal.exec" in calls and (directory / "dist" / "about.html").exists()


async def test_a_reply_that_outlasts_the_wait_is_retried_once_by_reloading_not_resending(
    site: FixtureSite, make_transport: Any
) -> None:
    """Seed 000 §13's one safe retry: the stream is still running in the page when turn_s
    ends; the chat is reloaded, shows the reply the server finished, and it is read whole."""
    answer = "A slow reply that outlasts one short wait. " * 3
    site.queue(Reply(answer, chunk=5, interval_ms=20))
    events = Events()
    transport = make_transport(on_event=events, timeouts=dataclasses.replace(FAST, turn_s=0.3))
    assert await transport.send("once only") == answer
    assert [e["code"] for e in events.of("model.retry")] == ["WEB_TURN_TIMEOUT"]
    assert len(site.posted) == 1


async def test_an_editor_that_flattens_inserted_newlines_gets_the_text_line_by_line(
    site: FixtureSite, make_transport: Any
) -> None:
    site.configure(variant="flat_insert")
    site.queue("Read all four lines.")
    message = "line 1\nline 2\n\nline 4 <tag> & more"
    assert await make_transport().send(message) == "Read all four lines."
    assert site.posted[0]["text"] == message

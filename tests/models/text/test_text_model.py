"""TextProtocolModel through the real loop, policy and tools, driven by ScriptedTransport;
script_to_xml; the XML demo end to end; and the ``xclaw protocol`` CLI."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from typer.testing import CliRunner

from xclaw.cli.protocol_cmd import app as protocol_app
from xclaw.coding.agent import Agent
from xclaw.coding.demo.run import run_demo, script_path
from xclaw.coding.toolset import coding_registry
from xclaw.core.errors import ConfigError, ScriptMismatch
from xclaw.core.events import Event, EventBus
from xclaw.core.limits import Limits
from xclaw.core.messages import Message, TextPart, ToolCallPart, ToolResult, ToolResultPart
from xclaw.core.model import ModelRequest
from xclaw.models.scripted import ScriptTurn
from xclaw.models.text.model import TextProtocolModel, xml_demo_model
from xclaw.models.text.protocol import REMINDER, render_reply
from xclaw.models.text.transport import ScriptedReply, ScriptedTransport, script_to_xml

TAIL = f"<system_reminder>{REMINDER}</system_reminder>"
SPECS = [t.spec for t in coding_registry()]


def _write(path: str, content: str, message: str = "Writing.") -> str:
    return render_reply(False, message, "fs.write", {"path": path, "content": content})


def _read(path: str) -> str:
    return render_reply(False, "", "fs.read", {"path": path})


def _final(message: str = "Done: wrote a.txt and read it back.") -> str:
    return render_reply(True, message)


def _agent(transport: ScriptedTransport, root: Path, **kwargs: object) -> Agent:
    bus = kwargs.pop("bus", None)
    assert bus is None or isinstance(bus, EventBus)
    limits = kwargs.pop("limits", None)
    assert limits is None or isinstance(limits, Limits)
    return Agent(
        TextProtocolModel(transport), root, bus=bus, limits=limits, evidence_gate_enabled=False
    )


def _assert_one_trailing_reminder(text: str) -> None:
    assert text.endswith(TAIL)
    assert text.count("<system_reminder>") == 1


async def test_a_run_in_xml_writes_reads_and_finishes(root: Path) -> None:
    transport = ScriptedTransport(
        [_write("a.txt", "hello <b> & ]]>\n", "Creating a.txt."), _read("a.txt"), _final()]
    )
    result = await _agent(transport, root).run("write a.txt")
    assert result.status == "completed", result.reason
    assert (root / "a.txt").read_text() == "hello <b> & ]]>\n"
    assert result.reply == "Done: wrote a.txt and read it back."
    transport.assert_complete()
    first, second, third = transport.sent
    assert first.startswith("<agent_protocol>") and "Instructions for this task:" in first
    assert "You are xclaw" in first and "Task:\nwrite a.txt" in first
    assert (
        '<tool_result name="fs.write" status="ok">' in second and "<agent_protocol>\n" not in second
    )
    assert '<tool_result name="fs.read" status="ok">' in third and "hello &lt;b&gt;" not in third
    for text in transport.sent:
        _assert_one_trailing_reminder(text)
    said = [m.text for m in result.messages if m.role == "assistant"]
    assert said == ["Creating a.txt.", "", "Done: wrote a.txt and read it back."]
    assert not any("<agent_response>" in m.text for m in result.messages)
    assert [r.call_id for r in result.tool_calls] == [
        c.call_id for m in result.messages for c in m.tool_calls
    ]


async def test_a_broken_reply_gets_feedback_and_the_run_recovers(root: Path) -> None:
    events: list[Event] = []
    bus = EventBus()
    bus.subscribe(events.append)
    transport = ScriptedTransport(
        ["I wrote the file for you!", _write("a.txt", "x"), _final("Wrote a.txt.")]
    )
    result = await _agent(transport, root, bus=bus).run("write a.txt")
    assert result.status == "completed", result.reason
    feedback = transport.sent[1]
    assert feedback.startswith('<protocol_error code="PROTOCOL_NO_ROOT">')
    _assert_one_trailing_reminder(feedback)
    assert "<tool_result" not in feedback
    assert [e.payload["code"] for e in events if e.type == "protocol.invalid"] == [
        "PROTOCOL_NO_ROOT"
    ]
    # The broken reply stays in the transcript as what the model said.
    assert result.messages[2] == Message("assistant", (TextPart("I wrote the file for you!"),))


async def test_unknown_tools_and_bad_arguments_run_nothing(root: Path) -> None:
    transport = ScriptedTransport(
        [
            render_reply(False, "Deleting.", "fs.delete", {"path": "a.txt"}),
            render_reply(False, "", "fs.write", {"path": "a.txt"}),
            _write("a.txt", "ok"),
            _final("Wrote a.txt."),
        ]
    )
    result = await _agent(transport, root).run("write a.txt")
    assert result.status == "completed", result.reason
    assert '<protocol_error code="TOOL_NOT_FOUND">' in transport.sent[1]
    assert '<protocol_error code="TOOL_ARGUMENTS_INVALID">' in transport.sent[2]
    assert "content: is required but missing" in transport.sent[2]
    assert [r.name for r in result.tool_calls] == ["fs.write"]
    assert result.messages[2].text == "Deleting."


async def test_too_many_broken_replies_pause_the_run(root: Path) -> None:
    transport = ScriptedTransport(["nope"] * 3)
    limits = Limits(max_protocol_errors=2)
    result = await _agent(transport, root, limits=limits).run("t")
    assert result.status == "interrupted" and "LIMIT_PROTOCOL_ERRORS" in result.reason
    transport.assert_complete()


async def test_an_empty_reply_still_leaves_a_marker_so_nothing_is_sent_twice(root: Path) -> None:
    transport = ScriptedTransport([_write("a.txt", "x"), "", _final("Wrote a.txt.")])
    result = await _agent(transport, root).run("write a.txt")
    assert result.status == "completed", result.reason
    assert "PROTOCOL_EMPTY_REPLY" in transport.sent[2]
    assert "<tool_result" not in transport.sent[2]  # the result went out once, in sent[1]
    assert any(m.text == "(empty reply)" for m in result.messages)


async def test_a_refused_completion_is_sent_as_text(root: Path) -> None:
    transport = ScriptedTransport(
        [_final("All done."), _write("a.txt", "x"), _final("Wrote a.txt.")]
    )
    agent = Agent(TextProtocolModel(transport), root)  # with the evidence gate
    result = await agent.run("create a.txt")
    assert result.status == "completed", result.reason
    assert transport.sent[1].startswith("The task asks for changes")
    _assert_one_trailing_reminder(transport.sent[1])


def _history() -> list[Message]:
    call = ToolCallPart("x1", "fs.write", {"path": "a.txt", "content": "x"})
    return [
        Message.system("Be careful."),
        Message.user("Task: write a.txt"),
        Message("assistant", (TextPart("Writing."), call)),
        Message("tool", (ToolResultPart("x1", "fs.write", ToolResult.success("Created a.txt.")),)),
    ]


def test_a_resumed_conversation_reopens_with_the_steps_so_far() -> None:
    model = TextProtocolModel(ScriptedTransport([]))
    text = model.outbound(ModelRequest(_history(), SPECS))
    assert text.startswith("<agent_protocol>")
    assert "Instructions for this task:\nBe careful." in text
    assert "Task: write a.txt" in text
    assert 'so far:\n- fs.write {"path":"a.txt","content":"x"} -> result below\n' in text
    assert 'Latest input:\n<tool_result name="fs.write" status="ok">' in text
    _assert_one_trailing_reminder(text)
    longer = [*_history(), Message("assistant", (ToolCallPart("x2", "fs.nope", {}),))]
    again = TextProtocolModel(ScriptedTransport([])).outbound(ModelRequest(longer, SPECS))
    assert "-> ok: Created a.txt.\n- fs.nope {} -> no result\n" in again
    reattached = TextProtocolModel(ScriptedTransport([]), fresh_conversation=False)
    delta = reattached.outbound(ModelRequest(_history(), SPECS))
    assert delta.startswith('<tool_result name="fs.write"') and "<agent_protocol>\n" not in delta


async def test_ids_follow_the_reply_and_its_place_in_the_conversation() -> None:
    reply = render_reply(False, "", "process.list", {})
    ids = []
    for history in (_history(), _history(), [*_history(), *_history()[2:]]):
        model = TextProtocolModel(ScriptedTransport([reply]))
        events = [ev async for ev in model.respond(ModelRequest(history, SPECS))]
        ids.append(next(e.call.call_id for e in events if hasattr(e, "call")))
    assert ids[0] == ids[1] != ids[2]


async def test_aclose_and_assert_complete_reach_the_transport() -> None:
    transport = ScriptedTransport(["x"])
    model = TextProtocolModel(transport)
    with pytest.raises(ScriptMismatch):
        model.assert_complete()
    await model.aclose()
    assert transport.closed


async def test_scripted_transport_checks_expectations_and_runs_out(root: Path) -> None:
    transport = ScriptedTransport(
        [_write("a.txt", "x"), ScriptedReply(_final(), {"last_contains": ["not there"]})]
    )
    result = await _agent(transport, root).run("t")
    assert result.status == "failed" and "lacks 'not there'" in result.reason
    short = ScriptedTransport([_write("a.txt", "x")])
    result = await _agent(short, root).run("t")
    assert result.status == "failed" and "SCRIPT_MISMATCH" in result.reason


def test_script_to_xml_splits_calls_and_rewrites_templates() -> None:
    turns = [
        ScriptTurn(
            text="Two files.",
            tool_calls=(
                {"name": "fs.write", "arguments": {"path": "a", "content": "1"}},
                {"id": "w2", "name": "fs.write", "arguments": {"path": "b", "content": "2"}},
            ),
            expect={"last_contains": ["Task"]},
        ),
        ScriptTurn(raw="not xml {{result:call_1_1.data.path}}"),
        ScriptTurn(text="Done at {{result:w2.data.path}}"),
    ]
    replies = script_to_xml(turns)
    assert len(replies) == 4
    assert "<message>Two files.</message>" in replies[0].text
    assert "<message>" not in replies[1].text
    assert replies[0].expect == {"last_contains": ["Task"]} and replies[1].expect is None
    assert replies[2].text == "not xml {{result:#1.data.path}}"
    assert "{{result:#2.data.path}}" in replies[3].text and "<done>true</done>" in replies[3].text
    with pytest.raises(ConfigError, match="unknown call 'nope'"):
        script_to_xml([ScriptTurn(text="{{result:nope.data.x}}")])


async def test_templates_quote_results_escaped_for_where_they_sit() -> None:
    transport = ScriptedTransport(
        [
            render_reply(False, "", "process.list", {}),
            "<agent_response><done>true</done><message><![CDATA[at {{result:#1.data.u}}]]>"
            "</message><message>{{result:#1.data.u}}</message></agent_response>",
        ]
    )
    await transport.send("opening")
    result = ToolResult.success("ok", u="<a>]]>&")
    from xclaw.models.text.protocol import serialize_tool_result

    reply = await transport.send(serialize_tool_result("process.list", result))
    assert "<![CDATA[at <a>]]]]><![CDATA[>&]]>" in reply
    assert "<message>&lt;a&gt;]]&gt;&amp;</message>" in reply


def _assert_stopped(url: str) -> None:
    try:
        urllib.request.urlopen(url, timeout=2)
    except urllib.error.URLError:
        return
    raise AssertionError("the demo server is still running")


async def test_the_demo_runs_in_xml_through_the_real_parser(tmp_path: Path) -> None:
    directory = tmp_path / "site"
    directory.mkdir()
    served: list[str] = []
    bus = EventBus()

    def watch(ev: Event) -> None:
        if ev.type == "tool.completed" and ev.payload.get("name") == "terminal.exec":
            stdout = str((ev.payload.get("data") or {}).get("stdout", ""))
            if ev.payload.get("ok") and "-> 200" in stdout:
                served.extend(re.findall(r"http://127\.0\.0\.1:\d+/?\S*", stdout))

    bus.subscribe(watch)
    model = xml_demo_model(script_path())
    result, used = await run_demo(directory, bus, model)
    assert used is model
    assert result.status == "completed", result.reason
    model.assert_complete()
    assert served and served[0].rstrip("/") in result.reply
    assert (directory / "dist" / "about.html").read_text().count("</section>") == 1
    transport = model.transport
    assert isinstance(transport, ScriptedTransport)
    assert len(transport.sent) == len(transport.replies) == 17
    _assert_stopped(served[0])  # the server was stopped at the end of the run


# -------------------------------------------------------------------------------- CLI


def test_cli_parse_prints_the_turn(tmp_path: Path) -> None:
    reply = tmp_path / "r.xml"
    reply.write_bytes(_write("a.txt", "x").replace("\n", "\r\n").encode())
    result = CliRunner().invoke(protocol_app, ["parse", str(reply)])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["ok"] is True and out["tool_call"]["name"] == "fs.write"
    assert out["tool_call"]["arguments"] == {"path": "a.txt", "content": "x"}


def test_cli_parse_prints_the_error_and_exits_1(tmp_path: Path) -> None:
    reply = tmp_path / "r.xml"
    reply.write_text(render_reply(False, "", "fs.nope", {}))
    result = CliRunner().invoke(protocol_app, ["parse", str(reply)])
    assert result.exit_code == 1
    assert json.loads(result.stdout)["code"] == "TOOL_NOT_FOUND"
    none = CliRunner().invoke(protocol_app, ["parse", "-", "--tools-from", "none"], input=_final())
    assert none.exit_code == 0 and json.loads(none.stdout)["done"] is True


def test_cli_parse_reports_bad_inputs(tmp_path: Path) -> None:
    missing = CliRunner().invoke(protocol_app, ["parse", str(tmp_path / "nope.xml")])
    assert missing.exit_code == 2 and "FILE_UNREADABLE" in missing.stderr
    unknown = CliRunner().invoke(protocol_app, ["parse", "-", "--tools-from", "web"], input="x")
    assert unknown.exit_code == 2 and "'web' is not one of 'coding', 'none'" in unknown.output


def test_cli_prompt_prints_the_protocol_block() -> None:
    result = CliRunner().invoke(protocol_app, ["prompt"])
    assert result.exit_code == 0
    assert result.stdout.startswith("<agent_protocol>") and "## terminal.exec" in result.stdout


async def test_surfaces_never_see_protocol_text(root: Path) -> None:
    """Seed 003 ch. 04 buffering rule: a reply that is a tool call is never chat text."""
    transport = ScriptedTransport([_write("a.txt", "hello", "Writing a.txt."), _final()])
    bus = EventBus()
    streamed: list[str] = []
    bus.subscribe(
        lambda ev: (
            streamed.append(str(ev.payload.get("delta", "")))
            if ev.type == "model.streaming"
            else None
        )
    )
    result = await _agent(transport, root, bus=bus).run("write a.txt")
    assert result.ok
    assert streamed == ["Writing a.txt.", "Done: wrote a.txt and read it back."]
    assert not any("<" in text for text in streamed)


class _Conversations(ScriptedTransport):
    """A scripted chat that can start a new conversation, like the web page."""

    def __init__(self, replies: list[str]) -> None:
        super().__init__(replies)
        self.started_at: list[int] = []

    async def start_conversation(self) -> None:
        self.started_at.append(len(self.sent))


async def test_a_long_conversation_continues_in_a_new_one_with_the_steps_so_far(
    root: Path,
) -> None:
    transport = _Conversations(
        [_write("a.txt", "x" * 400), _write("b.txt", "y" * 400), _read("a.txt"), _final()]
    )
    model = TextProtocolModel(transport, max_conversation_chars=6_000)
    agent = Agent(model, root, evidence_gate_enabled=False)
    result = await agent.run("write a.txt and b.txt, then read a.txt")
    assert result.status == "completed", result.reason
    assert transport.started_at, "the chat grew past the limit: a new conversation starts"
    restart = transport.sent[transport.started_at[0]]
    assert restart.startswith("<agent_protocol>") and "Steps taken so far:" in restart
    assert '- fs.write {"path":"a.txt"' in restart  # the summary names what was done
    assert (root / "a.txt").read_text() == "x" * 400 and (root / "b.txt").exists()
    assert model.conversations_started == len(transport.started_at)
    transport.assert_complete()


async def test_no_limit_keeps_one_conversation(root: Path) -> None:
    transport = _Conversations([_write("a.txt", "x" * 400), _final()])
    result = await Agent(TextProtocolModel(transport), root, evidence_gate_enabled=False).run(
        "write a.txt"
    )
    assert result.status == "completed" and transport.started_at == []

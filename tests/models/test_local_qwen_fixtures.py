"""Repair and the XML parser on REAL replies of the local Qwen2.5-Coder model.

tests/models/fixtures/local_qwen/ holds what llama.cpp answered (recorded once by its
record.py: 0.5B Q4_K_M, temperature 0, seed 42) when xclaw ran "Create a file hello.py that
prints hello." natively (with repair) and through the XML protocol. What they show:

- natively the model never used the tool channel: every reply is its call as JSON text, once
  fenced, once followed by a tool result it made up; each is exactly one valid fs.write, so
  each is repaired (the model's own mistake, the path ".", then fails in the tool, coded);
- the repaired call went back to the server as a native call, with no text beside it;
- through the XML protocol the model copied the protocol's final example (done=true, a
  made-up summary): it parses, and the completion gate refused it (the next request carries
  the reminder).

No recorded reply lost a closing tag: with ``<xclaw_call>`` none is a special token, and this
model made no XML call. The swallowed-tag tests (text/test_protocol_tags.py) are synthetic.
Replies are replayed over real HTTP (a WireServer) through the real adapter as well.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from wire_server import WireServer

from xclaw.coding.toolset import coding_registry
from xclaw.core.messages import Message, ToolCallPart
from xclaw.core.model import ModelRequest, TextDelta, ToolCallEvent
from xclaw.core.tooling import ToolSpec
from xclaw.models.openai_chat import OpenAIChatModel
from xclaw.models.presets import get_preset
from xclaw.models.repair import RepairToolCalls, read_text_call
from xclaw.models.text.protocol import ParsedTurn, parse_reply

FIXTURES = Path(__file__).parent / "fixtures" / "local_qwen"
MODEL = FIXTURES / "qwen2.5-coder-0.5b"
SPECS: list[ToolSpec] = [t.spec for t in coding_registry()]
WRITE_DOT = {"path": ".", "content": "hello\n", "mode": "overwrite"}
NATIVE = ["native_json", "native_sse"]


def test_the_recorded_replies_are_in_the_repository() -> None:
    """Never skipped when missing: the recordings are committed (record.py re-records them)."""
    assert (MODEL / "native_json" / "meta.json").is_file(), f"no recorded replies in {MODEL}"


def _meta(scenario: str) -> dict[str, Any]:
    return dict(json.loads((MODEL / scenario / "meta.json").read_text("utf-8")))


def _request(scenario: str, n: int) -> dict[str, Any]:
    return dict(json.loads((MODEL / scenario / f"{n:02d}.request.json").read_text("utf-8")))


def _reply_text(scenario: str, n: int) -> str:
    """The assistant text of a recorded reply, from the JSON body or the raw event stream."""
    folder = MODEL / scenario
    whole = folder / f"{n:02d}.response.json"
    if whole.exists():
        body = json.loads(whole.read_text("utf-8"))
        return str(body["choices"][0]["message"]["content"] or "")
    chunks = []
    for line in (folder / f"{n:02d}.response.sse").read_text("utf-8").splitlines():
        if line.startswith("data: ") and line[6:].strip() != "[DONE]":
            for choice in json.loads(line[6:]).get("choices", []):
                chunks.append((choice.get("delta") or {}).get("content") or "")
    return "".join(chunks)


def _recorded(scenario: str) -> list[int]:
    return sorted(int(p.name[:2]) for p in (MODEL / scenario).glob("*.request.json"))


def test_the_recordings_are_what_this_file_describes() -> None:
    for scenario in (*NATIVE, "xml_sse"):
        meta = _meta(scenario)
        assert meta["sha256"].startswith("1d9614638d18") and meta["runtime"].startswith("xllama")
        assert _recorded(scenario) == [1, 2, 3]
        assert meta["outcome"]["status"] == "interrupted" and meta["outcome"]["hello.py"] is None


@pytest.mark.parametrize("scenario", NATIVE)
@pytest.mark.parametrize("n", [1, 2, 3])
def test_every_real_native_reply_is_one_text_call_and_is_repaired(scenario: str, n: int) -> None:
    text = _reply_text(scenario, n)
    assert text.lstrip().startswith(("```json", "{"))  # JSON in the text, not a native call
    call = read_text_call(text, SPECS)
    assert isinstance(call, ToolCallPart), call
    assert call.repaired and call.name == "fs.write" and call.arguments == WRITE_DOT


def test_a_made_up_result_after_the_call_is_not_a_second_call() -> None:
    text = _reply_text("native_json", 2)
    assert '"error_code":"WRITE_FAILED"' in text  # the model invented the tool's answer
    assert isinstance(read_text_call(text, SPECS), ToolCallPart)


@pytest.mark.parametrize("scenario", NATIVE)
def test_the_repaired_call_went_back_as_a_native_call_without_its_text(scenario: str) -> None:
    messages = _request(scenario, 2)["messages"]
    assistant = next(m for m in messages if m["role"] == "assistant")
    assert not assistant.get("content")
    (call,) = assistant["tool_calls"]
    assert call["id"].startswith("call_repaired_") and call["function"]["name"] == "fs_write"
    assert json.loads(call["function"]["arguments"]) == WRITE_DOT
    result = next(m for m in messages if m["role"] == "tool")
    assert (
        result["tool_call_id"] == call["id"] and '"error_code":"WRITE_FAILED"' in result["content"]
    )


@pytest.mark.parametrize("scenario", NATIVE)
async def test_real_replies_replayed_over_http_become_repaired_calls(
    wire: WireServer, scenario: str
) -> None:
    folder = MODEL / scenario
    for n in _recorded(scenario):
        sse = folder / f"{n:02d}.response.sse"
        if sse.exists():
            wire.add_raw(200, sse.read_bytes(), "text/event-stream")
        else:
            wire.add_raw(200, (folder / f"{n:02d}.response.json").read_bytes(), "application/json")
    preset = get_preset("openai-compatible")
    assert preset is not None
    adapter = OpenAIChatModel(
        "qwen", base_url=wire.url, api_key=None, preset=preset, stream=scenario.endswith("sse")
    )
    model = RepairToolCalls(adapter)
    try:
        for _ in _recorded(scenario):
            request = ModelRequest(
                [Message.user("Create a file hello.py that prints hello.")], SPECS
            )
            events = [ev async for ev in model.respond(request)]
            calls = [e.call for e in events if isinstance(e, ToolCallEvent)]
            assert [c.arguments for c in calls] == [WRITE_DOT] and calls[0].repaired
            assert not any(isinstance(e, TextDelta) for e in events)  # never shown as text
    finally:
        await model.aclose()


@pytest.mark.parametrize("n", [1, 2, 3])
def test_real_xml_replies_parse(n: int) -> None:
    request = _request("xml_sse", n)
    assert "tools" not in request  # the XML protocol travels as plain chat text
    text = _reply_text("xml_sse", n)
    turn = parse_reply(text, SPECS)
    assert isinstance(turn, ParsedTurn), turn
    assert turn.done and turn.tool_call is None and turn.closed_tags == ()
    assert turn.message.startswith("Changed: hello.py")  # the protocol's example, copied


def test_the_copied_completion_was_refused_by_the_gate() -> None:
    messages = _request("xml_sse", 2)["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[0]["content"].startswith("<agent_protocol>")
    assert "<xclaw_call" in messages[0]["content"] and "<tool_call" not in messages[0]["content"]
    assert "no tool call has changed anything" in messages[2]["content"]
    assert messages[2]["content"].rstrip().endswith("</system_reminder>")

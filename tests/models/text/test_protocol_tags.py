"""The XML protocol's tag names, and replies whose closing tags a model swallowed.

Qwen2.5 emits ``</tool_call>`` as a special token: the server prints nothing of it and
generation stops there, so a reply in the seed's format ends right after ``</args>``. The
replies below are SYNTHETIC, in that shape; recorded ones are read by
tests/models/test_local_qwen_fixtures.py when tests/models/fixtures/local_qwen/ holds them.
"""

from __future__ import annotations

import pytest

from xclaw.coding.toolset import coding_registry
from xclaw.core.tooling import ToolSpec
from xclaw.models.text.protocol import (
    REMINDER,
    ParsedTurn,
    ProtocolError,
    parse_reply,
    render_protocol,
    render_reply,
)
from xclaw.models.text.protocol_render import CALL_TAG, SEED_CALL_TAG

SPECS: list[ToolSpec] = [t.spec for t in coding_registry()]
# Special tokens and native call markers of common model families (Qwen2.5 / Hermes, Llama 3,
# Mistral, Phi / Granite, Functionary, Claude-style text, DeepSeek).
RESERVED = (
    "<tool_call>",
    "</tool_call>",
    "<|tool_call|>",
    "[TOOL_CALLS]",
    "<function=",
    "<tool_use>",
    "<|python_tag|>",
    "<｜tool▁call▁begin｜>",
    "<tool_response>",
)


def test_nothing_the_runtime_writes_uses_a_reserved_token() -> None:
    texts = [
        render_protocol(SPECS),
        REMINDER,
        render_reply(False, "Reading.", "fs.read", {"path": "a.py"}),
        render_reply(True, "Done."),
    ]
    for text in texts:
        for token in RESERVED:
            assert token not in text, token
    assert f"<{CALL_TAG} " in texts[2] and CALL_TAG == "xclaw_call"


def test_the_seed_call_tag_is_still_read() -> None:
    reply = render_reply(False, "", "fs.read", {"path": "a.py"}).replace(CALL_TAG, SEED_CALL_TAG)
    turn = parse_reply(reply, SPECS)
    assert isinstance(turn, ParsedTurn) and turn.tool_call is not None
    assert turn.tool_call.arguments == {"path": "a.py"} and turn.closed_tags == ()


def _cut_after_args(tag: str) -> str:
    full = render_reply(
        False, "Writing hello.py.", "fs.write", {"path": "hello.py", "content": "x"}
    )
    full = full.replace(CALL_TAG, tag)
    return full[: full.index("</args>") + len("</args>")]


@pytest.mark.parametrize("tag", [CALL_TAG, SEED_CALL_TAG])
@pytest.mark.parametrize("tail", ["", "\n", "\n  ", "\n```"])
def test_a_reply_ending_right_after_args_is_read_as_meant(tag: str, tail: str) -> None:
    text = _cut_after_args(tag) + tail
    if tail == "\n```":  # the fence was opened too: no closing fence either
        text = "```xml\n" + text.removesuffix("\n```")
    turn = parse_reply(text, SPECS)
    assert isinstance(turn, ParsedTurn), turn
    assert turn.tool_call is not None and turn.tool_call.name == "fs.write"
    assert turn.tool_call.arguments == {"path": "hello.py", "content": "x"}
    assert turn.closed_tags == (tag, "agent_response")
    assert parse_reply(text, SPECS) == turn  # the same reply, the same call id


def test_a_final_reply_without_its_root_close_is_read() -> None:
    turn = parse_reply("<agent_response>\n<done>true</done>\n<message>Done.</message>", SPECS)
    assert isinstance(turn, ParsedTurn) and turn.done and turn.message == "Done."
    assert turn.closed_tags == ("agent_response",)


@pytest.mark.parametrize(
    "text",
    [
        # cut inside an argument, a tag, CDATA or <args>: the reply was cut, not closed early
        '<agent_response><done>false</done><xclaw_call name="fs.read"><args><path>a.py',
        '<agent_response><done>false</done><xclaw_call name="fs.read"><args><path>a.py</path>',
        '<agent_response><done>false</done><xclaw_call name="fs.read"><args><path>a.py</pa',
        '<agent_response><done>false</done><xclaw_call name="fs.write"><args><path>a</path>'
        "<content><![CDATA[x]]>",
        "<agent_response><done>true</done><message>Half a sum",
        "<agent_response><done>true</done><message>Done.",
        # a broken element inside stays broken
        '<agent_response><done>false</done><xclaw_call name="fs.read"><args><path>a</args>',
    ],
)
def test_anything_else_left_open_is_still_an_error(text: str) -> None:
    result = parse_reply(text, SPECS)
    assert isinstance(result, ProtocolError), result
    assert result.code == "PROTOCOL_MALFORMED_XML"


def test_closing_an_early_stop_never_hides_another_problem() -> None:
    # Well-formed once closed, but two calls: refused as it would be when complete.
    call = '<xclaw_call name="fs.read"><args><path>a</path></args></xclaw_call>'
    text = "<agent_response><done>false</done>" + call + call
    result = parse_reply(text, SPECS)
    assert isinstance(result, ProtocolError) and result.code == "PROTOCOL_MULTIPLE_TOOL_CALLS"

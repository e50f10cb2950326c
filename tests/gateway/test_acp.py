"""ACP frames: what the gateway accepts from clients and what it sends."""

from __future__ import annotations

import json

import pytest

from xclaw.gateway.acp import (
    AcpMessage,
    ApprovalRequestFrame,
    ApprovalResponse,
    DeltaFrame,
    HistoryRequest,
    MessageFrame,
    ReplyFrame,
    StopFrame,
    parse_client_frame,
)


def test_client_frames_parse() -> None:
    msg = parse_client_frame('{"type":"message","id":"m1","content":"hi","sessionId":null}')
    assert isinstance(msg, MessageFrame) and msg.session_id is None and msg.content == "hi"
    assert isinstance(parse_client_frame('{"type":"message","content":"x"}'), MessageFrame)
    answer = parse_client_frame('{"type":"approval.response","requestId":"r","answer":"task"}')
    assert isinstance(answer, ApprovalResponse) and answer.answer == "task"
    assert isinstance(parse_client_frame('{"type":"stop","sessionId":"s"}'), StopFrame)
    assert isinstance(parse_client_frame('{"type":"history","sessionId":"s"}'), HistoryRequest)


@pytest.mark.parametrize(
    "raw",
    [
        "not json",
        "{}",
        '{"type":"nope"}',
        '{"type":"message","content":""}',  # empty
        '{"type":"message","content":"x","extra":1}',  # unknown field
        '{"type":"approval.response","requestId":"r","answer":"always"}',
        '{"type":"message","content":5}',
    ],
)
def test_bad_client_frames_are_refused(raw: str) -> None:
    with pytest.raises(ValueError):
        parse_client_frame(raw)


def test_server_frames_have_type_and_session() -> None:
    frames = [
        DeltaFrame(sessionId="s", text="a"),
        ReplyFrame(sessionId="s", text="done", status="completed"),
        ApprovalRequestFrame(
            sessionId="s", requestId="r", summary="run ls", risk="execute", grantOffered=True
        ),
    ]
    wire = [f.wire() for f in frames]
    assert all(w["sessionId"] == "s" and w["type"] for w in wire)
    assert wire[2] == {
        "sessionId": "s",
        "type": "approval.request",
        "requestId": "r",
        "summary": "run ls",
        "risk": "execute",
        "grantOffered": True,
    }
    json.dumps(wire)


def test_acp_message_fields() -> None:
    msg = AcpMessage(sessionId="s", channel="web", content="hi", caller="web-1")
    wire = msg.model_dump(by_alias=True)
    assert set(wire) == {
        "id",
        "sessionId",
        "channel",
        "content",
        "timestamp",
        "caller",
        "parentSessionId",
    }
    assert msg.id and msg.timestamp > 0 and msg.parent_session_id is None
    with pytest.raises(ValueError):
        AcpMessage(channel="", content="x", caller="c")


def test_relayed_event_bodies_are_what_a_json_round_trip_gives() -> None:
    """The relay makes event payloads JSON-safe in one walk: the same as
    ``json.loads(json.dumps(body, default=str))``, tuples, paths, enums and odd keys included,
    and a payload already plain comes back equal."""
    import enum
    import json
    from pathlib import Path

    from xclaw.gateway.gateway import _plain

    class Risk(enum.StrEnum):
        READ = "read"

    class Count(enum.IntEnum):
        ONE = 1

    class Opaque:
        def __str__(self) -> str:
            return "opaque"

    body = {
        "type": "tool.completed",
        "payload": {
            "argv": ("ls", "-l"),
            "path": Path("/proj/a.txt"),
            "risk": Risk.READ,
            "count": Count.ONE,
            "ok": True,
            "none": None,
            "ratio": 0.25,
            "nested": [{"deep": (Path("b"), Opaque())}],
            7: "int key",
            None: "none key",
            2.5: "float key",
        },
    }
    assert _plain(body) == json.loads(json.dumps(body, default=str))
    plain = {"type": "x", "payload": {"a": [1, "b", {"c": None}]}}
    assert _plain(plain) == plain

"""The channel-neutral part of chat adapters: splitting, rendering, commands from peers."""

from __future__ import annotations

from xclaw.gateway.acp import ApprovalRequestFrame, DeltaFrame, ReplyFrame
from xclaw.gateway.channels.base import render_frame, split_text


def test_split_text_respects_the_limit_and_prefers_line_ends() -> None:
    text = "\n".join(f"line {i:03d}" for i in range(300))
    pieces = split_text(text, 100)
    assert "".join(pieces) == text
    assert all(len(p) <= 100 for p in pieces)
    assert all(p.endswith("\n") for p in pieces[:-1])  # cut after a line, not inside one
    assert split_text("x" * 250, 100) == ["x" * 100, "x" * 100, "x" * 50]
    assert split_text("", 10) == [""]


def test_render_frame_shows_replies_and_approvals_but_not_deltas() -> None:
    ask = ApprovalRequestFrame(
        session_id="s", request_id="r1", summary="run sh", risk="exec", grant_offered=True
    )
    text = render_frame(ask)
    assert text is not None and "/approve r1" in text and "/approve-task r1" in text
    assert "/deny r1" in text
    assert render_frame(DeltaFrame(session_id="s", text="partial")) is None
    assert render_frame(ReplyFrame(session_id="s", text="done", status="completed")) == "done"

"""The channel-neutral part of chat adapters: splitting, rendering, commands from peers."""

from __future__ import annotations

import unicodedata

from xclaw.gateway.acp import ApprovalRequestFrame, DeltaFrame, ReplyFrame
from xclaw.gateway.channels.base import ChatAdapter, render_frame, split_text, utf16_len


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


def test_split_text_in_utf16_units_keeps_pairs_and_joined_emoji_whole() -> None:
    faces = "😀" * 5  # 10 UTF-16 code units
    assert split_text(faces, 4, utf16=True) == ["😀😀", "😀😀", "😀"]
    assert [utf16_len(p) for p in split_text("a" + faces, 4, utf16=True)] == [3, 4, 4]
    family = "👨\u200d👩\u200d👧"  # one symbol of five characters
    pieces = split_text("ab" + family + "cd", 9, utf16=True)
    assert "".join(pieces) == "ab" + family + "cd"
    assert pieces == ["ab", family + "c", "d"]  # not cut inside the family, which fits
    accent = "e\u0301" * 4  # an e and its combining acute accent, four times
    assert all(not unicodedata.combining(p[0]) for p in split_text(accent, 3))
    assert utf16_len("😀a") == 3 and len("😀a") == 2


def test_a_blank_piece_is_never_sent() -> None:
    class Quiet(ChatAdapter):
        name = "quiet"
        limit = 10

        def __init__(self) -> None:  # no gateway needed to split
            pass

        async def start(self) -> None: ...

        async def stop(self) -> None: ...

        async def send_text(self, peer: str, text: str, reply_to: str | None = None) -> None: ...

    assert Quiet().pieces("abcdefghi\n" + " " * 10 + "\nxyz") == ["abcdefghi\n", "\nxyz"]
    assert Quiet().pieces("") == [""]

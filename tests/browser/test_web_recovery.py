"""The browser killed mid-reply, and a resume in a new process: same profile, same chat."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from fixture_server import FixtureSite, Reply
from web_support import FAST, Events, needs_browser, web_options

from xclaw.core.errors import EndRun
from xclaw.models.chatgpt_web import ChatGPTWebTransport
from xclaw.models.text.model import TextProtocolModel

pytestmark = [
    needs_browser,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
]


def browser_pids(profile: Path) -> list[int]:
    """Main browser processes (not renderers or helpers) running on ``profile``."""
    flag = f"--user-data-dir={profile}"
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if flag in args and not any(a.startswith("--type=") for a in args):
            pids.append(int(entry.name))
    return pids


async def _wait_until(check: object, timeout_s: float = 5.0) -> None:
    assert callable(check)
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.02)


async def test_a_browser_killed_mid_reply_is_relaunched_on_the_same_profile(
    site: FixtureSite, tmp_path: Path
) -> None:
    profile = tmp_path / "profile"
    events = Events()
    transport = ChatGPTWebTransport(web_options(site, profile), on_event=events)
    answer = "This reply streams slowly, so the browser dies while it is still arriving. " * 3
    site.queue(Reply(answer, chunk=4, interval_ms=20))  # about a second of streaming
    try:
        sending = asyncio.create_task(transport.send("a message"))
        await _wait_until(lambda: site.posted and transport.conversation_url is not None)
        (first,) = browser_pids(profile)
        assert not sending.done()
        os.kill(first, signal.SIGKILL)
        assert await sending == answer  # read from the reopened conversation
        assert transport.manager.launches == 2
        (second,) = browser_pids(profile)
        assert second != first
        assert len(site.posted) == 1  # the reply had started: nothing was sent twice
        assert transport.conversation_url == f"{site.url}c/{site.posted[0]['conversation_id']}"
        assert [e["profile"] for e in events.of("browser.started")] == [str(profile)] * 2
    finally:
        await transport.aclose()
    assert browser_pids(profile) == []


async def test_a_resume_reopens_the_saved_conversation(site: FixtureSite, tmp_path: Path) -> None:
    profile = tmp_path / "profile"
    site.queue("First answer.", "Second answer, same chat.")
    first = ChatGPTWebTransport(web_options(site, profile))
    try:
        assert await first.send("first") == "First answer."
        saved = first.conversation_url
    finally:
        await first.aclose()
    assert saved is not None
    resumed = ChatGPTWebTransport(web_options(site, profile))  # a new run, same profile
    try:
        await resumed.open_conversation(saved)
        model = TextProtocolModel(resumed, fresh_conversation=False)
        assert await model.transport.send("second") == "Second answer, same chat."
        assert resumed.conversation_url == saved
        assert site.posted[0]["conversation_id"] == site.posted[1]["conversation_id"]
    finally:
        await resumed.aclose()


async def test_a_message_a_paused_run_posted_is_awaited_by_a_new_process_not_posted_again(
    site: FixtureSite, tmp_path: Path
) -> None:
    """What a resume does (``coding.conversation`` keeps ``posted_unread`` with the session):
    the new transport reopens the chat, is told the message is there, and reads its reply."""
    profile = tmp_path / "profile"
    site.queue(Reply("The slow answer, finished later.", endless=True))
    reported: list[dict[str, Any] | None] = []
    first = ChatGPTWebTransport(web_options(site, profile, timeouts=replace(FAST, turn_s=0.6)))
    first.on_posted = reported.append
    try:
        with pytest.raises(EndRun) as caught:
            await first.send("a message")
        assert caught.value.code == "WEB_TURN_TIMEOUT"
        url = first.conversation_url
    finally:
        await first.aclose()
    assert reported[0] is None  # posted before the site gave the chat a URL
    posted = reported[-1]
    assert posted == {"url": url, "assistant_turns": 0, "user_turns": 0}
    site.finish_streams()
    resumed = ChatGPTWebTransport(web_options(site, profile))
    try:
        assert url is not None and posted is not None
        await resumed.open_conversation(url)
        assert not resumed.expect_posted({**posted, "url": site.url + "c/another"})
        assert not resumed.expect_posted({**posted, "user_turns": True})
        assert not resumed.expect_posted({**posted, "assistant_turns": -1})
        assert resumed.expect_posted(posted)
        assert await resumed.send("the same message, worded anew") == (
            "The slow answer, finished later."
        )
        assert [p["text"] for p in site.posted] == ["a message"]
    finally:
        await resumed.aclose()

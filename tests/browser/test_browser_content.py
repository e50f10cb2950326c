"""``browser.content`` in real headless Chromium on a loopback fixture page: the two readings
(``mode="full"``, ``mode="interactive"``), offset paging in each, and a bad mode refused with a
stable code before anything runs."""

from __future__ import annotations

import re
import threading
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from xclaw.browser import CONTAINER_ARGS, BrowserOptions, find_browser
from xclaw.browser.session import BrowserPool, BrowserSession, BrowserTimeouts
from xclaw.core.errors import ConfigError, ToolError
from xclaw.core.messages import ToolCallPart, ToolResult
from xclaw.tools.base import Workspace
from xclaw.tools.browser_content import content_tool, read_content
from xclaw.tools.registry import ToolRegistry

pytestmark = pytest.mark.asyncio(loop_scope="module")

FAST = BrowserTimeouts(navigation_s=10, action_s=2, settle_s=2, quiet_ms=120)
LINE_ID = re.compile(r"^\[([\d,]+)\] ", re.MULTILINE)  # `[N] ...`, `[N,M] ...` when alike
LINKS = 60  # enough controls that a 500-character page cannot hold them all

PAGE = f"""<!doctype html><html><head><title>Shop</title>
<script>window.__state = {{"token": "abc"}};</script><style>.x {{ color: red }}</style>
</head><body>
<header><a href="/">Home</a></header>
<nav aria-label="Sections">
  {"".join(f'<a href="/section/{i}">Section {i}</a>' for i in range(LINKS))}
</nav>
<main>
  <h1>Checkout</h1>
  <p>Long prose the interactive reading leaves out: lorem ipsum dolor sit amet.</p>
  <form>
    <label for="email">Email</label><input id="email" name="email" value="ada@example.org">
    <label><input type="checkbox" name="gift" checked> Gift wrap</label>
    <input type="radio" name="speed" value="fast" aria-label="Fast delivery">
    <input type="password" name="pw" value="hunter2" aria-label="Password">
    <select name="city"><option>Shanghai</option><option selected>Beijing</option></select>
    <textarea name="note" aria-label="Note">Leave at door</textarea>
    <input type="hidden" name="csrf" value="zzz">
    <button type="submit">Pay now</button>
  </form>
  <h2>Extras</h2>
  <div role="button" tabindex="0">Fancy</div>
  <div contenteditable="true">Edit me</div>
  <button aria-label="Remove item">🗑</button>
  <a href="/story"><img alt="Story" src="data:,"></a><a href="/story">Story</a>
  <div style="display:none"><button>Gone by display</button></div>
  <div style="visibility:hidden"><a href="/x">Gone by visibility</a></div>
  <button hidden>Gone by hidden</button>
</main>
</body></html>"""

# The controls the page shows, by their text or name: each must be in the reading, with an id.
SHOWN = [
    "Home",
    *(f"Section {i}" for i in range(LINKS)),
    "Email",
    "Gift wrap",
    "Fast delivery",
    "Password",
    'name="city"',
    "Note",
    "Pay now",
    "Fancy",
    "Edit me",
    "Remove item",
    "Story",  # an image link and a title link to one story: alike, one line, both ids
    "Story",
]
GONE = ["Gone by display", "Gone by visibility", "Gone by hidden", "csrf", "zzz", "hunter2"]


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        body = PAGE.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/shop"
    server.shutdown()
    server.server_close()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def pool() -> AsyncIterator[BrowserPool]:
    try:
        executable = str(find_browser())
    except ConfigError:  # never skipped: `make deps` installs chromium
        pytest.fail("No Chrome or Chromium found: run `make deps` (it installs chromium).")
    p = BrowserPool(BrowserOptions(executable=executable, headless=True, args=CONTAINER_ARGS))
    yield p
    await p.close()


@pytest_asyncio.fixture(loop_scope="module")
async def session(pool: BrowserPool, url: str) -> AsyncIterator[BrowserSession]:
    s = BrowserSession(pool, timeouts=FAST)
    page = await s.page()
    await page.goto(url, wait_until="load")
    yield s
    await s.close()


def line_ids(text: str) -> list[str]:
    return [i for ids in LINE_ID.findall(text) for i in ids.split(",")]


async def marked(session: BrowserSession) -> dict[str, str]:
    """Every element that carries an agent id in the page: id -> a short description."""
    page = await session.page()
    found: dict[str, str] = await page.evaluate(
        """() => Object.fromEntries([...document.querySelectorAll('[data-agent-id]')].map(
             (el) => [el.getAttribute('data-agent-id'), el.outerHTML.slice(0, 80)]))"""
    )
    return found


async def all_pages(session: BrowserSession, mode: str, max_chars: int) -> list[ToolResult]:
    results = [await read_content(session, 0, max_chars, mode)]
    while (offset := results[-1].data["next_offset"]) is not None:
        results.append(await read_content(session, offset, max_chars, mode))
        assert len(results) < 50
    return results


async def test_interactive_mode_lists_every_control_with_its_id(session: BrowserSession) -> None:
    result = await read_content(session, 0, 50_000, "interactive")
    assert result.ok and result.data["mode"] == "interactive" and result.data["next_offset"] is None
    text = result.message
    ids = line_ids(text)
    assert len(ids) == len(set(ids))  # one line per control
    # every element the page marked (visible and interactive) is listed by its id, and only those
    assert set(ids) == set(await marked(session))
    lines = {line for line in text.splitlines() if LINE_ID.match(line)}
    for name in SHOWN:
        assert any(name in line for line in lines), name
    assert len(ids) == len(SHOWN)
    for gone in GONE:
        assert gone not in text, gone
    # labels, values and state, for planning: the field's label, its value, checked, selected
    for line in (
        'input name="email" value="ada@example.org" aria-label="Email"',
        'input type="checkbox" name="gift" checked aria-label="Gift wrap"',
        'select name="city": Shanghai | *Beijing',
        'textarea name="note" aria-label="Note" value="Leave at door"',
        'div role="button" Fancy',
        "button Remove item",
    ):
        assert re.search(r"^\[\d+\] " + re.escape(line) + "$", text, re.M), line
    assert re.search(r"^\[\d+,\d+\] a Story$", text, re.M)  # two alike, one line
    assert 'value="••••"' in text  # a password's value is never shown
    # context: the landmarks and headings the controls sit under; no prose
    assert '<nav aria-label="Sections">' in text and "</nav>" in text and "<main>" in text
    assert "# Checkout" in text and "## Extras" in text
    assert "lorem ipsum" not in text and "window.__state" not in text
    # the ids are the ones the action tools take (the same as the full reading's)
    full = await read_content(session, 0, 50_000, "full")
    assert set(re.findall(r'data-agent-id="(\d+)"', full.message)) == set(ids)
    assert len(text) < len(full.message) / 2


async def test_interactive_mode_pages_with_offsets(session: BrowserSession) -> None:
    pages = await all_pages(session, "interactive", 500)
    assert len(pages) > 2
    seen: list[str] = []
    for i, part in enumerate(pages):
        assert part.ok and part.data["mode"] == "interactive"
        seen += line_ids(part.message)
        if i < len(pages) - 1:
            assert f'offset={part.data["next_offset"]} mode="interactive"]' in part.message
    assert sorted(seen, key=int) == sorted(set(seen), key=int)  # no control twice
    assert set(seen) == set(await marked(session))  # and none lost between pages
    whole = await read_content(session, 0, 50_000, "interactive")
    assert pages[0].data["total_chars"] == whole.data["total_chars"]


async def test_full_mode_is_the_default_and_pages_keep_every_id(session: BrowserSession) -> None:
    tool = content_tool(session)
    default = await tool.fn()
    assert default.ok and default.data["mode"] == "full" and "lorem ipsum" in default.message
    seen: set[str] = set()
    for part in await all_pages(session, "full", 1_000):
        seen.update(re.findall(r'data-agent-id="(\d+)"', part.message))
    assert seen == set(await marked(session))


async def test_a_bad_mode_is_refused_with_a_stable_code(
    session: BrowserSession, tmp_path: Path
) -> None:
    toolbox = ToolRegistry([content_tool(session)]).bind(Workspace(tmp_path))
    refused = toolbox.prepare(ToolCallPart("c1", "browser.content", {"mode": "everything"}))
    assert isinstance(refused, ToolResult) and not refused.ok
    assert refused.error_code == "TOOL_ARGUMENTS_INVALID" and "mode" in refused.message
    assert refused.data["schema"]["properties"]["mode"]["enum"] == ["full", "interactive"]
    with pytest.raises(ToolError) as err:  # a caller in Python gets the tool's own code
        await read_content(session, 0, 8_000, "everything")
    assert err.value.code == "BROWSER_CONTENT_MODE" and "interactive" in err.value.hint

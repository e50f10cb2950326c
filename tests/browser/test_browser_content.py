"""``browser.content`` in real headless Chromium on a loopback fixture page: the two readings
(``mode="full"``, ``mode="interactive"``), offset paging in each, a bad mode refused with a
stable code before anything runs, and frames: a same-origin iframe read in place, a
cross-origin one (localhost inside 127.0.0.1) read through Playwright with ``f1:N`` ids that
``browser.type``/``browser.click`` act on inside it."""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from xclaw.browser import CONTAINER_ARGS, BrowserOptions, find_browser
from xclaw.browser.session import BrowserPool, BrowserSession, BrowserTimeouts
from xclaw.core.dispatch import run_tool_calls
from xclaw.core.errors import ConfigError, ToolError
from xclaw.core.events import EventBus
from xclaw.core.limits import Limits
from xclaw.core.messages import ToolCallPart, ToolResult
from xclaw.core.state import RunState
from xclaw.policy.engine import PolicyEngine
from xclaw.tools.base import Workspace
from xclaw.tools.browser import browser_registry
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
    assert refused.data["fields"] == [
        {"field": "mode", "expected": "string", "allowed": ["full", "interactive"]}
    ]
    with pytest.raises(ToolError) as err:  # a caller in Python gets the tool's own code
        await read_content(session, 0, 8_000, "everything")
    assert err.value.code == "BROWSER_CONTENT_MODE" and "interactive" in err.value.hint


# ---- frames: a same-origin iframe read in place, a cross-origin one through Playwright ----
INNER = """<!doctype html><html><body><p>Inside the same-origin frame</p>
<button id="inner" onclick="this.textContent = 'Inner pressed'">Inner button</button>
<div class="card" onclick="this.textContent = 'Card chosen'">Pro plan</div>
<ul><li tabindex="0">Focusable item</li><li>Plain item</li></ul>
<span tabindex="0"></span>
</body></html>"""
LOGIN = """<!doctype html><html><body><form id="f">
<label>Username <input name="user"></label>
<label>Password <input name="password" type="password"></label>
<button type="submit">Sign in</button></form><p id="msg"></p>
<script>
document.getElementById('f').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const ok = ev.target.user.value === 'ada' && ev.target.password.value === 'lovelace';
  document.getElementById('msg').textContent = ok ? 'Signed in as ada' : 'Wrong password';
  if (ok) parent.postMessage({user: 'ada'}, '*');
});
</script></body></html>"""


def framed(login_url: str) -> str:
    return f"""<!doctype html><html><head><title>Portal</title></head><body>
<h1>Portal</h1><p id="status">Signed out</p>
<iframe title="Same" src="/inner" width="400" height="120"></iframe>
<iframe title="Login" src="{login_url}" width="400" height="200"></iframe>
<script>window.addEventListener('message', (ev) => {{
  document.getElementById('status').textContent = 'Welcome, ' + ev.data.user; }});</script>
</body></html>"""


class _Routes(BaseHTTPRequestHandler):
    routes: dict[str, str] = {}

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        body = self.routes.get(self.path.split("?")[0], "").encode()
        self.send_response(200 if body else 404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


def _serve(routes: dict[str, str]) -> tuple[ThreadingHTTPServer, int]:
    handler = type("Handler", (_Routes,), {"routes": routes})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.server_address[1]


@dataclass
class _Deps:
    toolbox: Any
    policy: PolicyEngine
    approver: Any
    bus: EventBus = field(default_factory=EventBus)
    limits: Limits = field(default_factory=Limits)


class _Deny:
    async def approve(self, request: Any) -> str:
        return "deny"


@pytest.fixture(scope="module")
def portal() -> Iterator[tuple[str, int, int]]:
    """The portal on 127.0.0.1 embedding a login form from localhost on another port."""
    login, login_port = _serve({"/login": LOGIN})
    routes = {"/inner": INNER}
    site, site_port = _serve(routes)
    routes["/portal"] = framed(f"http://localhost:{login_port}/login")
    yield f"http://127.0.0.1:{site_port}/portal", site_port, login_port
    for server in (site, login):
        server.shutdown()
        server.server_close()


async def test_frames_are_read_in_place_and_operated_by_their_ids(
    pool: BrowserPool, portal: tuple[str, int, int], tmp_path: Path
) -> None:
    address, site_port, login_port = portal
    session = BrowserSession(pool, timeouts=FAST)
    try:
        allowed = [f"127.0.0.1:{site_port}", f"localhost:{login_port}"]
        workspace = Workspace(tmp_path, output_dir=tmp_path / "out")
        toolbox = browser_registry(session, allow_hosts=allowed).bind(workspace)
        deps = _Deps(toolbox, PolicyEngine(workspace), _Deny())

        async def call(name: str, **arguments: Any) -> ToolResult:
            state = RunState("test", name, [])
            records = await run_tool_calls(state, deps, [ToolCallPart("c1", name, arguments)])
            return records[0].result

        opened = await call("browser.navigate", url=address)
        assert opened.ok, opened
        full = (await read_content(session, 0, 50_000, "full")).message
        same = full[full.index('<iframe title="Same">') :]
        inner_id = re.search(r'data-agent-id="(\d+)">Inner button', same)
        assert inner_id, full  # a same-origin frame's controls: this page's own numbering
        # an onclick card and a focusable item with a label are controls; a bare one is not
        assert re.search(r'<div data-agent-id="\d+">Pro plan</div>', same), same
        assert re.search(r'<li data-agent-id="\d+">Focusable item</li>', same), same
        assert "Plain item" in same and not re.search(r'data-agent-id="\d+">Plain', same)
        assert len(re.findall(r"data-agent-id=", same.split("</iframe>")[0])) == 3
        login = full[full.index('<iframe title="Login"') :]
        assert "Username" in login and "</iframe>" in login
        ids = dict(re.findall(r'<input data-agent-id="(f\d+:\d+)"[^>]*name="(\w+)"', login))
        assert set(ids.values()) == {"user", "password"}, login
        by_name = {name: agent for agent, name in ids.items()}
        sign_in = re.search(r'<button data-agent-id="(f\d+:\d+)"[^>]*>Sign in', login)
        assert sign_in, login
        interactive = (await read_content(session, 0, 50_000, "interactive")).message
        assert re.search(r"^\[f\d+:\d+\] input name=\"user\"", interactive, re.M), interactive
        assert f"[{inner_id.group(1)}] button Inner button" in interactive

        for name, text in (("user", "ada"), ("password", "lovelace")):
            typed = await call("browser.type", agent_id=by_name[name], text=text)
            assert typed.ok, typed
        clicked = await call("browser.click", agent_id=sign_in.group(1))
        assert clicked.ok, clicked
        page = await session.page()
        frame = next(f for f in page.frames if f.url.startswith("http://localhost:"))
        assert await frame.text_content("#msg") == "Signed in as ada"
        assert await page.text_content("#status") == "Welcome, ada"
        pressed = await call("browser.click", agent_id=inner_id.group(1))
        assert pressed.ok, pressed
        same_frame = next(f for f in page.frames if f.url.endswith("/inner"))
        assert await same_frame.text_content("#inner") == "Inner pressed"

        shot = await call("browser.screenshot_annotated")
        assert shot.ok, shot
        boxed = {str(b["id"]) for b in shot.data["boxes"]}
        assert set(by_name.values()) <= boxed and inner_id.group(1) in boxed  # frames too
        (image,) = shot.images  # the picture goes to a model that sees, the path to all
        saved = await asyncio.to_thread(Path(shot.data["path"]).read_bytes)
        assert image.media_type == "image/png" and image.data == saved
        assert "Portal — " in shot.message and shot.data["path"] in shot.message
    finally:
        await session.close()

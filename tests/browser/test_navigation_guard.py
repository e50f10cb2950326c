"""Every request of a browser session is judged, not only the first address (real headless
Chromium): redirects, meta refresh, script, link clicks, forms, iframes and subresources that
would reach an address the policy does not allow without approval are stopped, and the next
tool result says so with ``BROWSER_NAVIGATION_BLOCKED``. A site grant, the user config's
``allow_hosts`` and the ports the session's own processes serve are allowed."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from nav_support import FAST, _Server, browser_options, start_servers
from tests.tools.browser_site import Answers, Deps, dispatch

from xclaw.browser.session import BrowserPool, BrowserSession
from xclaw.core.tooling import Grant
from xclaw.policy.engine import PolicyEngine
from xclaw.tools.base import Workspace
from xclaw.tools.browser import browser_registry
from xclaw.tools.browser_guard import BLOCKED_CODE, NavigationRules
from xclaw.tools.process import process_tools
from xclaw.tools.registry import ToolRegistry

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[_Server, _Server]]:
    site, inner = start_servers()
    yield site, inner
    site.stop()
    inner.stop()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def pool() -> AsyncIterator[BrowserPool]:
    p = BrowserPool(browser_options())
    yield p
    await p.close()


@pytest_asyncio.fixture(loop_scope="module")
async def session(pool: BrowserPool) -> AsyncIterator[BrowserSession]:
    s = BrowserSession(pool, timeouts=FAST)
    yield s
    await s.close()


def _deps(session: BrowserSession, site: _Server, root: Path, *tools: Any) -> Deps:
    root.mkdir(exist_ok=True)
    workspace = Workspace(root, output_dir=root.parent / "out")
    registry = browser_registry(session, allow_hosts=[f"127.0.0.1:{site.port}"], extra=tools)
    return Deps(registry.bind(workspace), PolicyEngine(workspace), Answers())


@pytest.fixture
def deps(
    session: BrowserSession, servers: tuple[_Server, _Server], tmp_path: Path
) -> Iterator[Deps]:
    site, inner = servers
    inner.hits.clear()
    yield _deps(session, site, tmp_path / "proj")


def _blocked(result: Any) -> list[dict[str, Any]]:
    return list(result.data.get("navigation_blocked") or [])


async def _page_text(session: BrowserSession) -> str:
    page = await session.page()
    return f"{page.url}\n{await _content(page)}"


async def _content(page: Any) -> str:
    """The page's HTML; a navigation the guard just aborted may still be settling, and
    Playwright refuses to read a page mid-navigation: read it once it has."""
    from playwright.async_api import Error as PlaywrightError

    for _ in range(50):
        try:
            return str(await page.content())
        except PlaywrightError as err:
            if "navigating" not in str(err):
                raise
            await asyncio.sleep(0.1)
    raise AssertionError("the page kept navigating for 5 s")


# --- what the policy judged once is judged again at every request ---------------------------


@pytest.mark.parametrize("path", ["/meta", "/script"])
async def test_a_page_that_moves_itself_to_a_private_address_is_stopped(
    deps: Deps, session: BrowserSession, servers: tuple[_Server, _Server], path: str
) -> None:
    site, inner = servers
    result = await dispatch(deps, "browser.navigate", url=f"{site.url}{path}")
    assert result.error_code == BLOCKED_CODE, result
    [block] = _blocked(result)
    assert block["url"].startswith(f"{inner.url}/secret") and block["main_frame"]
    assert block["kind"] == "navigation" and block["policy_code"] == "BROWSER_PRIVATE_ADDRESS"
    assert "loopback" in block["reason"] and result.hint
    assert inner.hits == []  # aborted before it left the browser
    assert "router admin" not in await _page_text(session)


@pytest.mark.parametrize("path", ["/redirect", "/hop"])
async def test_a_redirect_into_a_private_address_is_stopped(
    deps: Deps, session: BrowserSession, servers: tuple[_Server, _Server], path: str
) -> None:
    """Playwright does not route redirect hops; the guard sees them through
    ``request.redirected_from`` and stops the navigation. The hop itself was already sent
    (a GET) by then: the private page's content never reaches the model."""
    site, inner = servers
    result = await dispatch(deps, "browser.navigate", url=f"{site.url}{path}")
    assert result.error_code == BLOCKED_CODE, result
    [block] = _blocked(result)
    assert block["kind"] == "redirect" and block["stopped"]
    assert f"redirected from {site.url}/redirect" in block["reason"]
    text = await _page_text(session)
    assert "router admin" not in text and (await session.page()).url == "about:blank"


async def test_a_link_click_whose_redirect_leads_inside_is_stopped(
    deps: Deps, session: BrowserSession, servers: tuple[_Server, _Server]
) -> None:
    site, _ = servers
    assert (await dispatch(deps, "browser.navigate", url=f"{site.url}/link")).ok
    result = await dispatch(deps, "browser.click", selector="#go")
    assert result.error_code == BLOCKED_CODE, result
    # The click happened and its navigation's redirect hop was stopped; whether the message
    # leads with the click or the block depends on which the page settles on first.
    assert result.message.startswith(("Clicked", "Blocked")), result.message
    assert any(b["kind"] == "redirect" and b["stopped"] for b in _blocked(result)), result
    assert "router admin" not in await _page_text(session)


async def test_a_form_posting_to_a_private_address_is_stopped(
    deps: Deps, session: BrowserSession, servers: tuple[_Server, _Server]
) -> None:
    site, inner = servers
    assert (await dispatch(deps, "browser.navigate", url=f"{site.url}/form")).ok
    result = await dispatch(deps, "browser.click", selector="#send")
    assert result.error_code == BLOCKED_CODE, result
    assert inner.hits == []


async def test_a_frame_and_a_fetch_into_a_private_address_are_blocked_and_said(
    deps: Deps, session: BrowserSession, servers: tuple[_Server, _Server]
) -> None:
    """The page itself loads (ok), but what it tried is in the result, never silent."""
    site, inner = servers
    framed = await dispatch(deps, "browser.navigate", url=f"{site.url}/frame")
    assert framed.ok and BLOCKED_CODE in framed.message, framed
    [block] = _blocked(framed)
    assert block["kind"] == "navigation" and not block["main_frame"]
    fetched = await dispatch(deps, "browser.navigate", url=f"{site.url}/fetch")
    page = await session.page()
    await page.wait_for_function("document.getElementById('out').textContent !== 'pending'")
    assert await page.inner_text("#out") == "failed"
    later = fetched if _blocked(fetched) else await dispatch(deps, "browser.scroll")
    assert [b["kind"] for b in _blocked(later)] == ["subresource"], later
    assert inner.hits == []


async def test_a_navigation_after_the_call_shows_up_on_the_next_result(
    deps: Deps, session: BrowserSession, servers: tuple[_Server, _Server]
) -> None:
    site, inner = servers
    opened = await dispatch(deps, "browser.navigate", url=f"{site.url}/later")
    assert opened.ok and not _blocked(opened), opened
    await asyncio.sleep(0.8)  # the page's timer fires between two calls
    shot = await dispatch(deps, "browser.scroll")
    assert shot.ok and BLOCKED_CODE in shot.message  # said on the next result, whatever it is
    assert _blocked(shot)[0]["url"].endswith("via=later")
    assert inner.hits == []


async def test_a_file_link_outside_the_project_is_refused(
    deps: Deps, session: BrowserSession, servers: tuple[_Server, _Server], tmp_path: Path
) -> None:
    """From a project file, a page may not wander to a file outside the project."""
    page_file = tmp_path / "proj" / "index.html"
    page_file.write_text(
        "<title>Local</title><a id='out' href='file:///etc/hostname'>out</a>"
        "<a id='in' href='other.html'>in</a>",
        encoding="utf-8",
    )
    (tmp_path / "proj" / "other.html").write_text("<title>Other</title>", encoding="utf-8")
    assert (await dispatch(deps, "browser.navigate", url=page_file.as_uri())).ok
    inside = await dispatch(deps, "browser.click", selector="#in")
    assert inside.ok and inside.data["title"] == "Other", inside
    await dispatch(deps, "browser.navigate", url=page_file.as_uri())
    refused = await dispatch(deps, "browser.click", selector="#out")
    assert refused.error_code == "APPROVAL_DENIED"  # the link is judged as a path: asks
    page = await session.page()
    await page.evaluate("location.href = 'file:///etc/hostname'")  # the page, on its own
    after = await dispatch(deps, "browser.scroll")
    assert [b["policy_code"] for b in _blocked(after)] == ["PATH_OUTSIDE_ROOT"], after
    assert (await session.page()).url == page_file.as_uri()


# --- what may be opened: grants, approvals, the user's hosts, the session's processes --------


async def test_a_site_grant_allows_the_page_to_go_there_afterwards(
    deps: Deps, session: BrowserSession, servers: tuple[_Server, _Server]
) -> None:
    site, inner = servers
    deps.approver.script.append("task")  # "allow for task": a per-site grant
    direct = await dispatch(deps, "browser.navigate", url=f"{inner.url}/secret")
    assert direct.ok, direct
    [asked] = deps.approver.asked
    assert asked.decision.grant == Grant("site", f"http://localhost:{inner.port}")
    moved = await dispatch(deps, "browser.navigate", url=f"{site.url}/script")
    assert moved.ok and moved.data["title"] == "Inner secret", moved
    assert not _blocked(moved)


async def test_an_approved_page_keeps_loading_from_its_own_origin_only(
    deps: Deps, session: BrowserSession, servers: tuple[_Server, _Server]
) -> None:
    """Approved once: the page may load and link within its origin; its redirect to another
    private address is still refused."""
    site, inner = servers
    inner.pages["/hub"] = (
        "<title>Hub</title><a id='own' href='/secret'>own</a>"
        f"<a id='back' href='{site.url}/start'>back</a>"
    )
    deps.approver.script.append("once")
    assert (await dispatch(deps, "browser.navigate", url=f"{inner.url}/hub")).ok
    own = await dispatch(deps, "browser.click", selector="#own")
    assert own.ok and own.data["title"] == "Inner secret", own
    assert len(deps.approver.asked) == 1


async def test_loopback_asks_unless_the_session_serves_it(
    session: BrowserSession, servers: tuple[_Server, _Server], tmp_path: Path
) -> None:
    """A port the session's own process.start serves needs no question; before the process
    runs, the same port asks."""
    site, _ = servers
    root = tmp_path / "proj"
    root.mkdir()
    (root / "index.html").write_text("<title>Served</title><h1>served</h1>", encoding="utf-8")
    deps = _deps(session, site, root, *process_tools())
    server = [
        "-c",
        "import http.server, socketserver, sys\n"
        "s = socketserver.TCPServer(('127.0.0.1', 0), http.server.SimpleHTTPRequestHandler)\n"
        "print(f'Serving on http://127.0.0.1:{s.server_address[1]}/', flush=True)\n"
        "s.serve_forever()\n",
    ]
    deps.approver.script.append("once")  # host sandbox mode may ask for the command
    started = await dispatch(
        deps, "process.start", program=sys.executable, argv=server, wait_for_url_ms=10_000
    )
    assert started.ok, started
    url = started.data["detectedUrls"][0]
    asked_before = len(deps.approver.asked)
    opened = await dispatch(deps, "browser.navigate", url=url)
    assert opened.ok and opened.data["title"] == "Served", opened
    assert len(deps.approver.asked) == asked_before  # no question for the session's own port
    await deps.toolbox.workspace.close()  # the process, then the sandbox's forwarders


async def test_the_rules_without_a_run() -> None:
    """Before a run is attached (no root, no grants), only the user's hosts pass."""
    rules = NavigationRules(allow_hosts=["localhost:3000"])
    assert await rules.verdict("http://127.0.0.1:3000/x") is None
    assert await rules.verdict("https://localhost:3000/") is None
    refused = await rules.verdict("http://127.0.0.1:3001/")
    assert refused is not None and refused.code == "BROWSER_PRIVATE_ADDRESS"
    local = await rules.verdict("file:///tmp/x.html")
    assert local is not None and local.code == "BROWSER_FILE_NEEDS_APPROVAL"


async def test_the_registry_points_the_guard_at_the_run(
    session: BrowserSession, tmp_path: Path
) -> None:
    registry = browser_registry(session, allow_hosts=["localhost:8000"])
    workspace = Workspace(tmp_path)
    registry.bind(workspace)
    assert Grant("site", "http://localhost:8000") in workspace.grants
    assert isinstance(registry, ToolRegistry) and "browser.navigate" in registry.names()


# --- the page agent's tools on the same guard ------------------------------------------------


async def test_the_page_agent_tools_report_what_the_guard_stopped(
    pool: BrowserPool, servers: tuple[_Server, _Server], tmp_path: Path
) -> None:
    """A goto the policy allowed passes; a link whose redirect leads to a private address is
    stopped, and a navigation the page starts later shows up on the next page_info."""
    from xclaw.page.driver import PageDriver
    from xclaw.page.tools import page_tools
    from xclaw.tools.browser_guard import NavigationGuard

    site, inner = servers
    inner.hits.clear()
    rules = NavigationRules(allow_hosts=[f"127.0.0.1:{site.port}"])
    workspace = Workspace(tmp_path)
    rules.attach(workspace)
    context = await pool.new_context()
    try:
        driver = PageDriver(
            await context.new_page(), navigation_timeout_s=10, guard=NavigationGuard(rules)
        )
        toolbox = ToolRegistry(page_tools(driver)).bind(workspace)
        deps = Deps(toolbox, PolicyEngine(workspace), Answers())
        opened = await dispatch(deps, "navigate", action="goto", url=f"{site.url}/link")
        assert opened.ok, opened
        clicked = await dispatch(deps, "dom", action="click", selector="a[id=go]")
        assert clicked.error_code == BLOCKED_CODE, clicked
        assert "router admin" not in await _content(driver.page)
        later = await dispatch(deps, "navigate", action="goto", url=f"{site.url}/later")
        assert later.ok and not _blocked(later), later
        await asyncio.sleep(0.8)
        info = await dispatch(deps, "page_info", action="get_url")
        assert info.ok and _blocked(info)[0]["url"].endswith("via=later"), info
        direct = await dispatch(deps, "navigate", action="goto", url=f"{inner.url}/secret")
        assert direct.error_code == "APPROVAL_DENIED"  # judged by the policy: loopback asks
        assert [h for h in inner.hits if "via=later" in h] == []
    finally:
        await context.close()


async def test_websockets_are_judged_too(
    deps: Deps, session: BrowserSession, servers: tuple[_Server, _Server]
) -> None:
    """A socket to an allowed host talks to its server; one to an untrusted loopback port
    never reaches it."""
    import websockets

    site, inner = servers
    reached: list[str] = []

    async def echo(conn: Any) -> None:
        async for message in conn:
            reached.append(str(message))
            await conn.send(f"echo {message}")

    async with websockets.serve(echo, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        refused = await dispatch(
            deps, "browser.navigate", url=f"{site.url}/socket?to=ws://127.0.0.1:{port}/x"
        )
        page = await session.page()
        await page.wait_for_function("document.getElementById('out').textContent !== 'pending'")
        assert await page.inner_text("#out") == "closed"
        later = refused if _blocked(refused) else await dispatch(deps, "browser.scroll")
        assert [b["url"] for b in _blocked(later)] == [f"ws://127.0.0.1:{port}/x"], later
        assert reached == []
        trusting = browser_registry(
            session, allow_hosts=[f"127.0.0.1:{site.port}", f"localhost:{port}"]
        )
        workspace = deps.toolbox.workspace
        ok_deps = Deps(trusting.bind(workspace), PolicyEngine(workspace), Answers())
        allowed = await dispatch(
            ok_deps, "browser.navigate", url=f"{site.url}/socket?to=ws://127.0.0.1:{port}/"
        )
        page = await session.page()
        await page.wait_for_function("document.getElementById('out').textContent !== 'pending'")
        assert await page.inner_text("#out") == "got echo ping", allowed
        assert reached == ["ping"]

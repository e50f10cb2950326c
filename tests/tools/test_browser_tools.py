"""The browser tools in real headless Chromium against loopback fixture pages: distilled
content with agent ids and paging, actions by agent id, popups, screenshots."""

from __future__ import annotations

import re
import socket
from pathlib import Path

import pytest
from browser_site import (
    FAST,
    Deps,
    Site,
    agent_id,
    dispatch,
    ids_in,
)

from xclaw.browser.session import BrowserPool, BrowserSession, BrowserTimeouts
from xclaw.tools.browser_content import page_slice
from xclaw.tools.browser_shots import png_size

pytestmark = pytest.mark.asyncio(loop_scope="module")


def read(path: Path) -> bytes:
    return path.read_bytes()


async def content(deps: Deps, **args: object) -> str:
    result = await dispatch(deps, "browser.content", **args)
    assert result.ok, result
    return result.message


async def test_the_eight_tools_are_there(deps: Deps) -> None:
    assert [s.name for s in deps.toolbox.specs()] == [
        "browser.navigate",
        "browser.content",
        "browser.click",
        "browser.type",
        "browser.key",
        "browser.scroll",
        "browser.screenshot",
        "browser.screenshot_annotated",
    ]


async def test_content_keeps_every_control_and_drops_the_noise(deps: Deps, site: Site) -> None:
    opened = await dispatch(deps, "browser.navigate", url=f"{site.url}/form")
    assert opened.ok and "Form page" in opened.message and opened.data["status"] == 200
    html = await content(deps)
    for gone in (
        "window.__state",
        "linear-gradient",
        "a comment",
        "<svg",
        "csrf",
        "secret hidden",
        "Invisible button",
        "nav-link",
        'data-x="1"',
        "color: blue",
    ):
        assert gone not in html, gone
    for kept in ("Order form", "Fill in the form.", "Gift wrap", "Edit me", "<title>Form page"):
        assert kept in html, kept
    controls = [
        "Next page",
        'name="name"',
        'name="gift"',
        'name="city"',
        'name="note"',
        "Send",
        "Edit me",
        "Fancy",
        "Count",
        'name="q"',
    ]
    ids = {text: agent_id(html, text) for text in controls}
    assert len(set(ids.values())) == len(controls)  # one id each, no element left out
    assert "<option>Beijing</option>" in html
    # ids are stable within the page version: a second read numbers them the same way
    again = await content(deps)
    assert {text: agent_id(again, text) for text in controls} == ids


async def test_content_pages_with_offsets(deps: Deps, site: Site) -> None:
    await dispatch(deps, "browser.navigate", url=f"{site.url}/long")
    first = await dispatch(deps, "browser.content", max_chars=1500)
    total, nxt = first.data["total_chars"], first.data["next_offset"]
    assert nxt and nxt <= 1500 and f"offset={nxt}]" in first.message
    pieces: list[str] = []
    seen_ids: list[str] = []
    offset = 0
    while offset is not None:
        part = await dispatch(deps, "browser.content", offset=offset, max_chars=1500)
        assert part.ok, part
        body = part.message.split("\n", 2)[2]
        pieces.append(body)
        seen_ids += ids_in(body)
        offset = part.data["next_offset"]
    assert len(pieces) > 3 and sum(len(p) for p in pieces) >= total - len(pieces) * 2
    assert sorted(map(int, seen_ids)) == list(range(1, 41))  # all 40 buttons, once each
    past = await dispatch(deps, "browser.content", offset=total + 10)
    assert (past.ok, past.error_code) == (False, "BROWSER_OFFSET_OUT_OF_RANGE")


async def test_page_slice_cuts_on_a_line_and_names_the_next_offset() -> None:
    text = "\n".join(f"<p>line {i}</p>" for i in range(100))
    chunk, nxt = page_slice(text, 0, 100)
    assert nxt is not None and text[nxt - 1] == "\n" and text[nxt:].startswith("<p>")
    assert chunk.endswith("</p>") and len(chunk) <= 100 and text.startswith(chunk)
    one_line = "<b>" + "x" * 300 + "</b><i>y</i>"
    cut, at = page_slice(one_line, 0, 312)
    assert at == len(cut) and one_line[at] == "<" and cut.endswith("y")
    rest, end = page_slice(text, len(text) - 20, 100)
    assert end is None and rest == text[-20:]


async def test_click_type_key_by_agent_id(deps: Deps, site: Site) -> None:
    await dispatch(deps, "browser.navigate", url=f"{site.url}/form")
    html = await content(deps)
    typed = await dispatch(deps, "browser.type", agent_id=agent_id(html, 'name="name"'), text="Ada")
    assert typed.ok and typed.data["value"] == "Ada", typed
    chosen = await dispatch(
        deps, "browser.type", agent_id=agent_id(html, 'name="city"'), text="Beijing"
    )
    assert chosen.ok and chosen.data["value"] == "Beijing"
    clicked = await dispatch(deps, "browser.click", agent_id=agent_id(html, "Count"))
    assert clicked.ok and "still at" in clicked.message
    assert "Clicked 1" in await content(deps)
    pressed = await dispatch(
        deps, "browser.key", key="Enter", agent_id=agent_id(html, 'name="name"')
    )
    assert pressed.ok, pressed
    assert "submitted: Ada" in await content(deps)
    # typing makes suggestions appear; they get new ids, and old ids stay as they were
    await dispatch(deps, "browser.type", agent_id=agent_id(html, 'name="q"'), text="tea")
    after = await content(deps)
    option = agent_id(after, "tea two")
    assert int(option) > max(map(int, ids_in(html)))
    assert agent_id(after, "Send") == agent_id(html, "Send")
    fancy = await dispatch(deps, "browser.click", selector="#fancy")
    assert fancy.ok and "Fancy pressed" in await content(deps)


async def test_errors_are_coded(deps: Deps, site: Site) -> None:
    await dispatch(deps, "browser.navigate", url=f"{site.url}/form")
    await content(deps)
    missing = await dispatch(deps, "browser.click", agent_id="999")
    assert missing.error_code == "BROWSER_ELEMENT_NOT_FOUND" and missing.hint
    both = await dispatch(deps, "browser.click")
    assert both.error_code == "BROWSER_TARGET_REQUIRED"
    many = await dispatch(deps, "browser.click", selector="button")
    assert many.error_code == "BROWSER_SELECTOR_AMBIGUOUS"
    bad = await dispatch(deps, "browser.key", key="NoSuchKey")
    assert bad.error_code == "BROWSER_KEY_INVALID"
    notes = await dispatch(deps, "browser.type", selector="#counter", text="x")
    assert notes.error_code == "BROWSER_NOT_EDITABLE"
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    deps.approver.script.append("once")  # a loopback port nobody said is trusted asks
    gone = await dispatch(deps, "browser.navigate", url=f"http://127.0.0.1:{port}/")
    assert (
        gone.error_code == "BROWSER_NAVIGATION_FAILED" and "ERR_CONNECTION_REFUSED" in gone.message
    )


async def test_scroll_by_pixels_and_to_an_element(deps: Deps, site: Site) -> None:
    await dispatch(deps, "browser.navigate", url=f"{site.url}/scroll")
    down = await dispatch(deps, "browser.scroll", direction="down", pixels=700)
    assert down.ok and down.data["position"]["y"] == 700 and not down.data["at_bottom"]
    html = await content(deps)
    to = await dispatch(deps, "browser.scroll", agent_id=agent_id(html, "Bottom"))
    assert to.ok and to.data["at_bottom"], to
    up = await dispatch(deps, "browser.scroll", direction="up", pixels=20_000)
    assert up.data["position"]["y"] == 0


async def test_cookie_banner_is_accepted_after_navigation(deps: Deps, site: Site) -> None:
    opened = await dispatch(deps, "browser.navigate", url=f"{site.url}/cookie")
    assert opened.ok and opened.data["dismissed"] == ["accepted Accept all"], opened
    html = await content(deps)
    assert "We use cookies" not in html and "Some article text." in html
    assert deps.session is not None
    page = await deps.session.page()
    assert await page.evaluate("document.cookie") == "consent=yes"


async def test_modal_popup_is_closed_and_the_page_is_usable(deps: Deps, site: Site) -> None:
    opened = await dispatch(deps, "browser.navigate", url=f"{site.url}/modal")
    assert opened.ok and len(opened.data["dismissed"]) == 1, opened
    html = await content(deps)
    assert "newsletter" not in html
    clicked = await dispatch(deps, "browser.click", agent_id=agent_id(html, "Under"))
    assert clicked.ok and "(from script" not in clicked.message
    assert "Under clicked" in await content(deps)
    kept = await dispatch(deps, "browser.navigate", url=f"{site.url}/modal", dismiss_popups=False)
    assert kept.data["dismissed"] == [] and "newsletter" in await content(deps)


async def test_screenshots_are_png_files_of_the_viewport(
    deps: Deps, site: Site, tmp_path: Path
) -> None:
    await dispatch(deps, "browser.navigate", url=f"{site.url}/form")
    shot = await dispatch(deps, "browser.screenshot")
    assert shot.ok, shot
    path = Path(shot.data["path"])
    data = read(path)
    assert path.is_relative_to(tmp_path / "out") and png_size(data) == (1280, 800)
    assert not any((tmp_path / "proj").iterdir())  # nothing lands in the project
    full = await dispatch(deps, "browser.screenshot", full_page=True)
    assert full.data["width"] == 1280 and full.data["height"] >= 300
    html = await content(deps)
    marked = await dispatch(deps, "browser.screenshot_annotated")
    assert marked.ok, marked
    data2 = read(Path(marked.data["path"]))
    assert png_size(data2) == (1280, 800) and data2 != data
    boxed = {b["id"] for b in marked.data["boxes"]}
    assert boxed and boxed <= set(ids_in(html)) and agent_id(html, "Send") in boxed
    assert "__xclaw_annotations" not in await content(deps)  # the overlay is gone again
    inside = await dispatch(deps, "browser.screenshot", path="shots/page.png")
    assert inside.ok and (tmp_path / "proj" / "shots" / "page.png").is_file()
    assert re.search(r"1280x800 PNG", inside.message)


async def test_a_link_opening_a_new_tab_moves_the_tools_there(deps: Deps, site: Site) -> None:
    await dispatch(deps, "browser.navigate", url=f"{site.url}/next")
    html = await content(deps)
    opened = await dispatch(deps, "browser.click", agent_id=agent_id(html, "new tab"))
    assert opened.ok and opened.data["new_tab"] and opened.data["title"] == "Tall", opened
    assert "Top of a tall page" in await content(deps)


async def test_an_element_under_an_overlay_is_clicked_from_script(deps: Deps, site: Site) -> None:
    assert deps.session is not None
    deps.session.timeouts = BrowserTimeouts(navigation_s=10, action_s=0.4, settle_s=1, quiet_ms=100)
    await dispatch(deps, "browser.navigate", url=f"{site.url}/modal", dismiss_popups=False)
    html = await content(deps)
    clicked = await dispatch(deps, "browser.click", agent_id=agent_id(html, "Under"))
    assert clicked.ok and "(from script" in clicked.message, clicked
    assert "Under clicked" in await content(deps)


async def test_each_session_has_its_own_context(deps: Deps, pool: BrowserPool, site: Site) -> None:
    accepted = await dispatch(deps, "browser.navigate", url=f"{site.url}/cookie")
    assert accepted.data["dismissed"], accepted
    assert deps.session is not None
    mine = await deps.session.page()
    async with BrowserSession(pool, timeouts=FAST) as other:
        theirs = await other.page()
        await theirs.goto(f"{site.url}/next")
        assert await theirs.evaluate("document.cookie") == ""
        assert other.context is not deps.session.context
    assert await mine.evaluate("document.cookie") == "consent=yes"

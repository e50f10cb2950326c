"""What the browser tools do to a live page: install the content helper, find a target by agent
id or CSS selector, read its facts for the policy, wait until the page settles, dismiss popups.

Every failure is a ``ToolError`` with a stable ``BROWSER_*`` code, a sentence and a next step.
"""

from __future__ import annotations

import asyncio
import time
from functools import cache
from importlib.resources import files
from typing import Any

from playwright.async_api import ElementHandle, Frame, Page
from playwright.async_api import Error as PlaywrightError

from xclaw.browser.session import BrowserSession
from xclaw.core.errors import ToolError
from xclaw.core.tooling import PageElement
from xclaw.tools.browser_frames import frame_for, in_own_frame

FIND_HINT = "Call browser.content to see the current agent ids, then use one of those."


@cache
def content_script() -> str:
    return files("xclaw.browser").joinpath("content.js").read_text(encoding="utf-8")


async def live_page(session: BrowserSession) -> Page:
    """The session's page with the content helper installed (also in pages opened later)."""
    if content_script() not in session.init_scripts:
        session.init_scripts.append(content_script())
    page = await session.page()
    await install(page)
    return page


async def install(page: Page) -> None:
    await install_in(page.main_frame)


async def install_in(frame: Frame) -> None:
    try:
        if not await frame.evaluate("() => !!window.__xclawContent"):
            await frame.evaluate(content_script())
    except PlaywrightError as err:
        raise page_error(err, "reading the page") from None


def page_error(err: PlaywrightError, doing: str) -> ToolError:
    text = (str(err).strip().splitlines() or ["no detail"])[0]
    if "Timeout" in type(err).__name__ or "Timeout" in text:
        return ToolError(
            f"The page did not respond in time while {doing}.",
            code="BROWSER_TIMEOUT",
            hint="Wait a moment and try again, or reload with browser.navigate.",
            retryable=True,
        )
    if "Execution context was destroyed" in text or "navigat" in text.lower():
        return ToolError(
            f"The page navigated away while {doing}.",
            code="BROWSER_PAGE_CHANGED",
            hint="Call browser.content to see the new page.",
            retryable=True,
        )
    return ToolError(
        f"The browser failed while {doing}: {text[:200]}",
        code="BROWSER_ACTION_FAILED",
        hint="Call browser.content to see the page as it is now.",
        retryable=True,
    )


async def resolve_target(page: Page, agent_id: str | None, selector: str | None) -> ElementHandle:
    """The one element an agent id or CSS selector names; BROWSER_ELEMENT_NOT_FOUND else."""
    if bool(agent_id) == bool(selector):
        raise ToolError(
            "Name the element with exactly one of agent_id or selector.",
            code="BROWSER_TARGET_REQUIRED",
            hint='Pass agent_id (e.g. "12", from browser.content), or a CSS selector.',
            retryable=True,
        )
    await install(page)
    try:
        if agent_id:
            ident = agent_id.strip()
            home = frame_for(page, ident)  # "f1:3": a cross-origin frame's own numbering
            if home is not None:
                await install_in(home)
            handle = await (home or page).evaluate_handle(
                "id => window.__xclawContent.find(id)", ident
            )
            element = handle.as_element()
            if element is not None:
                element = await in_own_frame(page, element, ident, content_script())
            what = f"agent id {agent_id}"
        else:
            assert selector is not None
            found = await page.query_selector_all(selector)
            if len(found) > 1:
                raise ToolError(
                    f"The selector {selector!r} matches {len(found)} elements.",
                    code="BROWSER_SELECTOR_AMBIGUOUS",
                    hint="Use the element's agent id from browser.content instead.",
                    retryable=True,
                )
            element = found[0] if found else None
            what = f"selector {selector!r}"
    except PlaywrightError as err:
        if selector and ("selector" in str(err).lower() or "syntax" in str(err).lower()):
            raise ToolError(
                f"{selector!r} is not a valid CSS selector.",
                code="BROWSER_SELECTOR_INVALID",
                hint=FIND_HINT,
                retryable=True,
            ) from None
        raise page_error(err, "finding the element") from None
    if element is None:
        raise ToolError(
            f"No element on the page has {what}; the page may have changed.",
            code="BROWSER_ELEMENT_NOT_FOUND",
            hint=FIND_HINT,
            retryable=True,
        )
    return element


async def element_facts(element: ElementHandle, action: str) -> dict[str, Any]:
    try:
        facts: dict[str, Any] = await element.evaluate(
            "(el, action) => window.__xclawContent.facts(el, action)", action
        )
    except PlaywrightError as err:
        raise page_error(err, "reading the element") from None
    return facts


async def focused_facts(page: Page, action: str) -> dict[str, Any] | None:
    try:
        facts: dict[str, Any] | None = await page.evaluate(
            "action => { const c = window.__xclawContent; const el = c.deepActive();"
            " return el ? c.facts(el, action) : null; }",
            action,
        )
    except PlaywrightError as err:
        raise page_error(err, "reading the focused element") from None
    return facts


def as_page_element(facts: dict[str, Any]) -> PageElement:
    return PageElement(
        action=str(facts.get("action", "")),
        tag=str(facts.get("tag", "")),
        text=str(facts.get("text", "")),
        label=str(facts.get("label", "")),
        role=str(facts.get("role", "")),
        href=str(facts.get("href", "")),
        submits_form=bool(facts.get("submits_form")),
        form_fields=tuple(str(f) for f in facts.get("form_fields") or ()),
        page_url=str(facts.get("page_url", "")),
    )


def describe(facts: dict[str, Any]) -> str:
    """``<button #5 "Save">`` for results the model reads."""
    name = facts.get("text") or facts.get("label") or ""
    ident = f" #{facts['id']}" if facts.get("id") else ""
    shown = f' "{name[:60]}"' if name else ""
    return f"<{facts.get('tag', '?')}{ident}{shown}>"


async def settle(session: BrowserSession, page: Page) -> bool:
    """Wait until the page is quiet: loaded, no fresh requests, DOM unchanged for a moment.
    Bounded by the session's ``settle_s``; True when it got quiet in time."""
    t = session.timeouts
    deadline = time.monotonic() + t.settle_s
    while (left := deadline - time.monotonic()) > 0:
        try:
            await page.wait_for_load_state("domcontentloaded", timeout=left * 1000)
            await install(page)
            left = max(deadline - time.monotonic(), 0.05)
            dom_quiet = await page.evaluate(
                "([q, m]) => window.__xclawContent.quiet(q, m)", [t.quiet_ms, left * 1000]
            )
        except (PlaywrightError, ToolError):
            await asyncio.sleep(0.05)  # navigated meanwhile: wait for the new document
            continue
        if not session.traffic.busy():
            return bool(dom_quiet)
        await asyncio.sleep(0.05)
    return False


async def dismiss_popups(page: Page) -> list[str]:
    """Click away cookie banners and modal overlays (exact, benign answers only)."""
    try:
        done: list[str] = await page.evaluate("() => window.__xclawContent.dismiss()")
    except PlaywrightError:
        return []  # navigated meanwhile; nothing to dismiss on a page that is gone
    return done


async def mark(page: Page) -> int:
    try:
        count: int = await page.evaluate("() => window.__xclawContent.mark()")
    except PlaywrightError as err:
        raise page_error(err, "numbering the elements") from None
    return count


async def after_action(session: BrowserSession, url_before: str) -> tuple[Page, dict[str, Any]]:
    """Settle, follow a new tab, dismiss popups after a navigation, renumber elements."""
    session.version += 1
    page = await live_page(session)
    quiet = await settle(session, page)  # a tab the action opened has announced itself by now
    new_tab = session.take_new_tab()
    if new_tab:
        page = await live_page(session)
        quiet = await settle(session, page)
    navigated = new_tab or page.url != url_before
    dismissed = await dismiss_popups(page) if navigated else []
    if dismissed:
        await settle(session, page)
    count = await mark(page)
    try:
        title = await page.title()
    except PlaywrightError:
        title = ""
    details = {
        "url": page.url,
        "title": title,
        "navigated": navigated,
        "new_tab": new_tab,
        "settled": quiet,
        "dismissed": dismissed,
        "interactive": count,
    }
    return page, details


def summary(details: dict[str, Any]) -> str:
    parts = []
    if details["new_tab"]:
        parts.append("a new tab opened and is now current")
    if details["navigated"]:
        parts.append(f"now at {details['title']} — {details['url']}")
    else:
        parts.append(f"still at {details['url']}")
    if details["dismissed"]:
        parts.append("dismissed: " + "; ".join(details["dismissed"]))
    if not details["settled"]:
        parts.append("the page was still busy when the wait ended")
    return "; ".join(parts)

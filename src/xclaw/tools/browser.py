"""The assistant's browser tools (seed 003 ch. 07): ``browser.navigate``, ``browser.content``,
``browser.click``, ``browser.type``, ``browser.key``, ``browser.scroll``,
``browser.screenshot`` and ``browser.screenshot_annotated``, on one ``BrowserSession`` (one
``BrowserContext``) per session.

Safety is the policy's (``policy/browsing.py``): before a navigation the tool's inspector
resolves the host; before a click or an activating key press it reads the target element from
the live page (text, label, link, form fields). The policy asks a human for non-web schemes,
``file:`` outside the project, private addresses and destructive elements. At run time the
tool checks the element still looks as it did when judged, else it refuses to act
(``BROWSER_TARGET_CHANGED``). What the page then does on its own (redirects, scripts, forms,
frames, subresources) is judged request by request by ``browser_guard.NavigationGuard``;
what it refused is reported by the next browser tool result (``BROWSER_NAVIGATION_BLOCKED``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from typing import Annotated, Any, Literal

from playwright.async_api import ElementHandle, Page
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeout
from pydantic import Field

from xclaw.browser.session import BrowserSession
from xclaw.core.errors import ToolError
from xclaw.core.messages import ToolResult
from xclaw.core.state import RunControl
from xclaw.core.tooling import NO_ACCESS, Access, Risk, WebAddress
from xclaw.tools.base import Tool, Workspace, tool
from xclaw.tools.browser_content import content_tool
from xclaw.tools.browser_guard import NavigationGuard, NavigationRules, reporting
from xclaw.tools.browser_judge import (
    check_unchanged,
    judged_element,
    judged_opens,
    normalize_url,
    target_key,
    web_address,
)
from xclaw.tools.browser_page import (
    after_action,
    describe,
    dismiss_popups,
    element_facts,
    focused_facts,
    live_page,
    mark,
    page_error,
    resolve_target,
    settle,
    summary,
)
from xclaw.tools.browser_shots import screenshot_tools
from xclaw.tools.registry import BoundToolbox, ToolRegistry

_ACTIVATING_KEYS = {
    "Enter": "key:Enter",
    "NumpadEnter": "key:Enter",
    " ": "click",
    "Space": "click",
}

AgentId = Annotated[str | None, Field(max_length=12)]
Selector = Annotated[str | None, Field(max_length=500)]


def _navigate_tool(session: BrowserSession) -> Tool:
    async def inspect(args: Any) -> Access:
        guard_of(session).rules.sync_grants()  # ports a process started since then
        return Access(opens=(await web_address(normalize_url(args.url), session.resolver),))

    @tool(
        "browser.navigate",
        risk=Risk.READ,
        read_only=False,
        timeout_s=90,
        access=lambda a: Access(opens=(WebAddress(normalize_url(a.url)),)),
        inspector=inspect,
    )
    async def navigate(
        url: Annotated[str, Field(min_length=1)], dismiss_popups: bool = True
    ) -> ToolResult:
        """Open a web address in this session's browser tab and wait until the page settles.
        Cookie banners and popups are dismissed.

        Args:
            url: an http(s) address; other schemes and private addresses need approval
            dismiss_popups: click away cookie banners and modal popups after loading
        """
        target = normalize_url(url)
        guard = guard_of(session)
        await guard.approve(target)  # the policy (or a human) allowed this address
        with guard.during():
            return await _open(session, target, dismiss_popups)

    return navigate


async def _open(session: BrowserSession, url: str, dismiss: bool) -> ToolResult:
    page = await live_page(session)
    session.version += 1
    try:
        response = await page.goto(
            url, wait_until="domcontentloaded", timeout=session.timeouts.navigation_s * 1000
        )
    except PlaywrightTimeout:
        raise ToolError(
            f"{url} did not load within {session.timeouts.navigation_s:g}s.",
            code="BROWSER_TIMEOUT",
            hint="Try again later, or a lighter page.",
            retryable=True,
        ) from None
    except PlaywrightError as err:
        detail = (str(err).strip().splitlines() or ["no detail"])[0]
        raise ToolError(
            f"Could not open {url}: {detail[:200]}",
            code="BROWSER_NAVIGATION_FAILED",
            hint="Check the address; use a full http(s) URL.",
            retryable=True,
        ) from None
    quiet = await settle(session, page)
    dismissed = await dismiss_popups(page) if dismiss else []
    if dismissed:
        await settle(session, page)
    count = await mark(page)
    status = response.status if response is not None else None
    title = await page.title()
    text = f"Opened {title or '(untitled)'} — {page.url}"
    text += f" (HTTP {status})" if status is not None else ""
    if dismissed:
        text += "; dismissed: " + "; ".join(dismissed)
    text += f". {count} interactive elements; read them with browser.content."
    return ToolResult.success(
        text, url=page.url, title=title, status=status, dismissed=dismissed, settled=quiet
    )


def _click_tool(session: BrowserSession) -> Tool:
    async def inspect(args: Any) -> Access:
        page = await live_page(session)
        element = await resolve_target(page, args.agent_id, args.selector)
        facts = await element_facts(element, "click")
        key = target_key("click", args.agent_id, args.selector)
        guard_of(session).rules.sync_grants()
        return await judged_element(session, page, key, facts)

    @tool("browser.click", risk=Risk.WRITE, timeout_s=60, inspector=inspect)
    async def click(agent_id: AgentId = None, selector: Selector = None) -> ToolResult:
        """Click an element (by agent id from browser.content, or a CSS selector), then wait
        for the page to settle. Clicks that delete, pay or buy need the user's approval.

        Args:
            agent_id: the element's data-agent-id from browser.content
            selector: a CSS selector matching exactly one element (when there is no agent id)
        """
        page = await live_page(session)
        element = await resolve_target(page, agent_id, selector)
        facts = await element_facts(element, "click")
        check_unchanged(session, target_key("click", agent_id, selector), facts)
        if facts.get("disabled"):  # auto-waiting, as Playwright does: it may be enabled soon
            facts = await _until_enabled(session, element, facts)
        url_before = page.url
        guard = guard_of(session)
        opens = judged_opens(session, target_key("click", agent_id, selector))
        if opens:
            await guard.approve(opens)
        with guard.during():
            how = await _click(session, element)
            _, details = await after_action(session, url_before)
        text = f"Clicked {describe(facts)}{how}; {summary(details)}."
        return ToolResult.success(text, **details)

    return click


async def _until_enabled(
    session: BrowserSession, element: ElementHandle, facts: dict[str, Any]
) -> dict[str, Any]:
    """Wait (up to the action timeout) for a disabled target to be enabled: Playwright's
    ``enabled`` state, then the helper's own reading (``aria-disabled`` too)."""
    timeout = session.timeouts.action_s * 1000
    try:
        await element.wait_for_element_state("enabled", timeout=timeout)
        for _ in range(int(timeout // 50) + 1):
            facts = await element_facts(element, "click")
            if not facts.get("disabled"):
                return facts
            await asyncio.sleep(0.05)
    except PlaywrightError:
        pass  # still disabled when the wait ran out, or gone
    raise ToolError(
        f"{describe(facts)} is disabled (waited {session.timeouts.action_s:g}s).",
        code="BROWSER_ELEMENT_DISABLED",
        hint="Fill in what the form needs first, then call browser.content again.",
        retryable=True,
    )


async def _click(session: BrowserSession, element: ElementHandle) -> str:
    try:
        await element.click(timeout=session.timeouts.action_s * 1000)
        return ""
    except PlaywrightError as err:
        if "not attached" in str(err) or "detached" in str(err).lower():
            raise ToolError(
                "The element was removed from the page before it could be clicked.",
                code="BROWSER_ELEMENT_NOT_FOUND",
                hint="Call browser.content to see the page as it is now.",
                retryable=True,
            ) from None
    try:  # covered by an overlay, or never "stable": click it from script (seed 003)
        await element.evaluate("el => el.click()")
    except PlaywrightError as err:
        raise page_error(err, "clicking") from None
    return " (from script: something covered it or it kept moving)"


def _type_tool(session: BrowserSession) -> Tool:
    @tool("browser.type", risk=Risk.WRITE, timeout_s=60)
    async def type_text(
        text: Annotated[str, Field(max_length=20_000)],
        agent_id: AgentId = None,
        selector: Selector = None,
        clear: bool = True,
    ) -> ToolResult:
        """Type text into a field (input, textarea, contenteditable) or choose a select
        option by its label or value. Press keys with browser.key afterwards if needed.

        Args:
            text: what to type (or the option to choose)
            agent_id: the field's data-agent-id from browser.content
            selector: a CSS selector matching exactly one field (when there is no agent id)
            clear: replace what the field holds (false: type after it)
        """
        page = await live_page(session)
        element = await resolve_target(page, agent_id, selector)
        facts = await element_facts(element, "type")
        if facts.get("disabled") and facts.get("editable"):  # it may be enabled soon: wait
            try:
                timeout = session.timeouts.action_s * 1000
                await element.wait_for_element_state("editable", timeout=timeout)
                facts = await element_facts(element, "type")
            except PlaywrightError:
                pass  # still disabled: refused below
        if facts.get("disabled") or not facts.get("editable"):
            raise ToolError(
                f"{describe(facts)} does not take typing"
                + (" (it is disabled)." if facts.get("disabled") else "."),
                code="BROWSER_NOT_EDITABLE",
                hint="Pick an input, textarea or select from browser.content.",
                retryable=True,
            )
        await _fill(session, page, element, facts, text, clear)
        value = await _value(element)
        _, details = await after_action(session, page.url)
        return ToolResult.success(
            f"Typed into {describe(facts)}; it now holds {value[:200]!r}; {summary(details)}.",
            value=value,
            **details,
        )

    return type_text


async def _fill(
    session: BrowserSession,
    page: Page,
    element: ElementHandle,
    facts: dict[str, Any],
    text: str,
    clear: bool,
) -> None:
    timeout = session.timeouts.action_s * 1000
    try:
        if facts.get("tag") == "select":
            chosen = await element.select_option(label=text, timeout=timeout)
            if not chosen:
                await element.select_option(value=text, timeout=timeout)
        elif clear:
            await element.fill(text, timeout=timeout)
        else:
            await element.focus()
            await page.keyboard.press("End")
            await page.keyboard.type(text)
    except PlaywrightError as err:
        raise page_error(err, "typing") from None


async def _value(element: ElementHandle) -> str:
    try:
        value: str = await element.evaluate(
            "el => el.isContentEditable ? el.innerText : "
            "(el.type === 'password' ? '••••' : String(el.value ?? ''))"
        )
    except PlaywrightError:
        return ""
    return value


def _key_tool(session: BrowserSession) -> Tool:
    async def inspect(args: Any) -> Access:
        action = _ACTIVATING_KEYS.get(args.key)
        if action is None:
            return NO_ACCESS  # moving focus or a caret activates nothing
        page = await live_page(session)
        if args.agent_id or args.selector:
            element = await resolve_target(page, args.agent_id, args.selector)
            facts: dict[str, Any] | None = await element_facts(element, action)
        else:
            facts = await focused_facts(page, action)
        if facts is None:
            return NO_ACCESS
        key = target_key(action, args.agent_id, args.selector)
        guard_of(session).rules.sync_grants()
        return await judged_element(session, page, key, facts)

    @tool("browser.key", risk=Risk.WRITE, timeout_s=60, inspector=inspect)
    async def key(
        key: Annotated[str, Field(min_length=1, max_length=40)],
        agent_id: AgentId = None,
        selector: Selector = None,
    ) -> ToolResult:
        """Press a key (Enter, Escape, Tab, ArrowDown, Control+A, ...) in the focused element,
        or in the element given, then wait for the page to settle.

        Args:
            key: a key name as Playwright spells it, combos with +
            agent_id: focus this element first (data-agent-id from browser.content)
            selector: focus the element this CSS selector matches first
        """
        page = await live_page(session)
        action = _ACTIVATING_KEYS.get(key)
        element = None
        if agent_id or selector:
            element = await resolve_target(page, agent_id, selector)
        if action is not None:
            facts = await (
                element_facts(element, action) if element else focused_facts(page, action)
            )
            if facts is not None:
                check_unchanged(session, target_key(action, agent_id, selector), facts)
        url_before = page.url
        guard = guard_of(session)
        opens = judged_opens(session, target_key(action, agent_id, selector)) if action else None
        if opens:
            await guard.approve(opens)
        with guard.during():
            await _press(page, element, key)
            _, details = await after_action(session, url_before)
        return ToolResult.success(f"Pressed {key}; {summary(details)}.", **details)

    return key


async def _press(page: Page, element: ElementHandle | None, key: str) -> None:
    try:
        if element is not None:
            await element.focus()
        await page.keyboard.press(key)
    except PlaywrightError as err:
        if "Unknown key" in str(err):
            raise ToolError(
                f"{key!r} is not a key name.",
                code="BROWSER_KEY_INVALID",
                hint="Use names like Enter, Escape, Tab, ArrowDown, PageDown, Control+A.",
                retryable=True,
            ) from None
        raise page_error(err, f"pressing {key}") from None


def _scroll_tool(session: BrowserSession) -> Tool:
    @tool("browser.scroll", risk=Risk.READ, read_only=False, timeout_s=30)
    async def scroll(
        direction: Literal["down", "up", "left", "right"] = "down",
        pixels: Annotated[int, Field(ge=1, le=20_000)] = 600,
        agent_id: AgentId = None,
        selector: Selector = None,
    ) -> ToolResult:
        """Scroll the page (or its main scrolling area) by some pixels, or bring an element
        into view when agent_id or selector is given.

        Args:
            direction: which way to scroll the page
            pixels: how far to scroll the page
            agent_id: scroll this element into view instead (data-agent-id)
            selector: scroll the element this CSS selector matches into view instead
        """
        page = await live_page(session)
        try:
            if agent_id or selector:
                element = await resolve_target(page, agent_id, selector)
                await element.scroll_into_view_if_needed(timeout=session.timeouts.action_s * 1000)
                moved = await page.evaluate("() => window.__xclawContent.scroll(0, 0)")
            else:
                dx = {"left": -pixels, "right": pixels}.get(direction, 0)
                dy = {"up": -pixels, "down": pixels}.get(direction, 0)
                moved = await page.evaluate(
                    "([x, y]) => window.__xclawContent.scroll(x, y)", [dx, dy]
                )
        except PlaywrightError as err:
            raise page_error(err, "scrolling") from None
        _, details = await after_action(session, page.url)
        bottom = moved["y"] + moved["viewport"] >= moved["height"] - 2
        text = (
            f"Scrolled {moved['target']}: y={moved['y']} of {moved['height']} "
            f"(viewport {moved['viewport']}){'; at the bottom' if bottom else ''}."
        )
        return ToolResult.success(text, position=moved, at_bottom=bottom, **details)

    return scroll


def guard_of(session: BrowserSession) -> NavigationGuard:
    """The session's navigation guard, made (without a run attached yet) when missing."""
    if not isinstance(session.guard, NavigationGuard):
        session.guard = NavigationGuard(NavigationRules(resolver=session.resolver))
    return session.guard


def browser_tools(session: BrowserSession, *, allow_hosts: Sequence[str] = ()) -> list[Tool]:
    """The eight browser tools on ``session`` (its own BrowserContext), each reporting what
    the session's navigation guard refused since the previous call. ``allow_hosts``: the user
    config's ``browsing.allow_hosts``."""
    guard = guard_of(session)
    guard.rules.allow_hosts = tuple(allow_hosts)
    tools = [
        _navigate_tool(session),
        content_tool(session),
        _click_tool(session),
        _type_tool(session),
        _key_tool(session),
        _scroll_tool(session),
        *screenshot_tools(session),
    ]
    return [_reporting(t, guard) for t in tools]


class BrowserToolRegistry(ToolRegistry):
    """A registry holding browser tools: binding it to a run's workspace points the session's
    guard at that run (its root, its grants, the processes it starts)."""

    def __init__(self, tools: Iterable[Tool], session: BrowserSession) -> None:
        super().__init__(tools)
        self.session = session

    def bind(
        self, workspace: Workspace, *, session_id: str = "", control: RunControl | None = None
    ) -> BoundToolbox:
        guard_of(self.session).rules.attach(workspace)
        return super().bind(workspace, session_id=session_id, control=control)


def browser_registry(
    session: BrowserSession, *, allow_hosts: Sequence[str] = (), extra: Iterable[Tool] = ()
) -> BrowserToolRegistry:
    """``extra`` tools (e.g. the coding tools) plus the browser tools on ``session``."""
    return BrowserToolRegistry([*extra, *browser_tools(session, allow_hosts=allow_hosts)], session)


_NAVIGATING = frozenset({"browser.navigate", "browser.click", "browser.key", "browser.type"})


def _reporting(t: Tool, guard: NavigationGuard) -> Tool:
    return reporting(t, guard, navigating=t.name in _NAVIGATING)

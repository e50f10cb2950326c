"""What the browser tools tell the policy before a call runs, and the check after.

Before: the address a navigation or a link opens, with what its host resolves to, and the
facts of the element a click or an activating key press would hit (``Access.opens``,
``Access.element``). After: at run time the element must still look as it did when the policy
judged it (``BROWSER_TARGET_CHANGED`` otherwise), so a page cannot swap a harmless button for
a destructive one between the check and the click.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any
from urllib.parse import urlsplit

from playwright.async_api import Page

from xclaw.browser.session import BrowserSession, Resolver, resolve_host
from xclaw.core.errors import ToolError
from xclaw.core.tooling import Access, WebAddress
from xclaw.policy.reach import is_loopback_host, non_public_kind
from xclaw.tools.browser_page import as_page_element

_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:(?!\d)")
_CHECKED = "checked"  # session memo: what the policy judged, per target
_OPENS = "opens"  # session memo: the address the policy judged a target to open, per target


def normalize_url(raw: str) -> str:
    """``example.com/x`` and ``//example.com/x`` → ``https://example.com/x``;
    ``localhost:8000`` → ``http://localhost:8000``."""
    url = raw.strip()
    if _SCHEME.match(url):
        return url
    url = url.removeprefix("//")  # a protocol-relative link as browser.content shows it
    host = urlsplit(f"http://{url}").hostname or ""
    return f"{'http' if is_loopback_host(host) else 'https'}://{url}"


async def web_address(url: str, resolver: Resolver = resolve_host) -> WebAddress:
    """The address with what its host resolves to (names only; IPs and loopback need none).
    Every tool that opens a page (browser.*, the page agent's navigate) asks the policy so."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.scheme.lower() not in ("http", "https") or not host:
        return WebAddress(url)
    if is_loopback_host(host) or non_public_kind(host) is not None or _is_ip(host):
        return WebAddress(url)
    return WebAddress(url, await resolver(host))


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


def target_key(action: str, agent_id: str | None, selector: str | None) -> str:
    return f"{action}|{agent_id or ''}|{selector or ''}"


async def judged_element(
    session: BrowserSession, page: Page, key: str, facts: dict[str, Any]
) -> Access:
    """The Access for activating an element; links also open their address. What the policy
    judged is kept under ``key`` for the check at run time."""
    session.memo.setdefault(_CHECKED, {})[key] = as_page_element(facts)
    session.memo.setdefault(_OPENS, {}).pop(key, None)
    href = str(facts.get("href") or "")
    opens: tuple[WebAddress, ...] = ()
    if href and not href.lower().startswith("javascript:"):
        here, there = urlsplit(page.url), urlsplit(href)
        # file: URLs share no origin worth the name: every one is judged as a path.
        same_origin = there[:2] == here[:2] and there.scheme.lower() in ("http", "https")
        if not same_origin:
            opens = (await web_address(href, session.resolver),)
            session.memo[_OPENS][key] = href
    return Access(opens=opens, element=as_page_element(facts))


def judged_opens(session: BrowserSession, key: str) -> str | None:
    """The address the policy judged (and allowed) activating the target under ``key`` to
    open, so the navigation guard lets exactly that through."""
    found = session.memo.get(_OPENS, {}).get(key)
    return found if isinstance(found, str) else None


def check_unchanged(session: BrowserSession, key: str, facts: dict[str, Any]) -> None:
    """Refuse to act when the element is not the one the policy judged."""
    judged = session.memo.get(_CHECKED, {}).get(key)
    if judged != as_page_element(facts):
        raise ToolError(
            "The element changed after it was checked, so it was not touched.",
            code="BROWSER_TARGET_CHANGED",
            hint="Call browser.content to see the page as it is now, then try again.",
            retryable=True,
        )

"""What state the page is in: signed in or out, a verification challenge, a banner.

Sign-in comes from the site's own session endpoint, fetched by the page (its cookies, its
browser), then from the URL (an auth host or path) and login buttons. Challenges come as
strong evidence (challenge markup, challenge URLs: act at once) or weak evidence (English
wording: act only when it lasts a grace period, since auto-passing checks clear by themselves).
Banners are the page's alert/error elements; they too must last a grace period. All of it,
and the turns the completion gate watches, comes from one script per poll (``probe``).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Literal
from urllib.parse import urljoin, urlsplit

from playwright.async_api import Page

from xclaw.models.chatgpt_web.completion import TurnSnapshot
from xclaw.models.chatgpt_web.dom import find, in_page
from xclaw.models.chatgpt_web.locators import (
    ASSISTANT_TURN,
    AUTH_HOSTS,
    AUTH_PATH_PREFIXES,
    AUTH_SESSION_PATH,
    BANNER,
    CHALLENGE_PATH_PREFIXES,
    CHALLENGE_SELECTORS,
    CHALLENGE_TEXT,
    FINISHED_TURN,
    LOGIN_BUTTON,
    STOP_BUTTON,
)
from xclaw.models.chatgpt_web.scripts import PAGE_PROBE, SESSION_PROBE
from xclaw.redact import redact

_BANNER_CHARS = 300


class AuthState(StrEnum):
    LOGGED_IN = "logged_in"
    LOGGED_OUT = "logged_out"
    CHALLENGE = "challenge"  # a verification page stands in the way; a person must pass it
    UNKNOWN = "unknown"  # still loading, or the site did not say


@dataclass(frozen=True, slots=True)
class Evidence:
    """One look at the page for anything that stops the conversation."""

    challenge_strong: bool = False
    challenge_weak: bool = False
    banner: str | None = None  # the banner's text (redacted, shortened)
    auth_page: bool = False  # the page is a sign-in page

    @property
    def any(self) -> bool:
        return self.challenge_strong or self.challenge_weak or bool(self.banner) or self.auth_page


@dataclass(frozen=True, slots=True)
class Takeover:
    """Why a person is needed at the browser window; passed to the ``on_takeover`` hook."""

    code: Literal["WEB_CHALLENGE", "WEB_BANNER", "WEB_MANUAL"]
    message: str  # a plain sentence for the user
    url: str  # redacted
    id: str = field(default_factory=lambda: secrets.token_hex(8))  # an answer names it

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message, "url": self.url, "id": self.id}

    def __str__(self) -> str:  # what a surface prints: never the dataclass repr
        return f"[{self.code}] {self.message}"


def same_origin(url: str, base_url: str) -> bool:
    a, b = urlsplit(url), urlsplit(base_url)
    return (a.scheme, a.netloc) == (b.scheme, b.netloc)


def is_auth_url(url: str, base_url: str) -> bool:
    parts = urlsplit(url)
    if parts.hostname in AUTH_HOSTS:
        return True
    return same_origin(url, base_url) and parts.path.startswith(AUTH_PATH_PREFIXES)


@dataclass(frozen=True, slots=True)
class PageLook:
    """One poll of the page (one ``page.evaluate``): what stops the conversation and, when
    asked for, the completion gate's snapshot of the turns."""

    evidence: Evidence
    turns: TurnSnapshot | None = None
    turn_strategy: int = -1  # which ASSISTANT_TURN strategy found them (dom.nth_match)


_BLOCKERS = {
    "challenge": list(CHALLENGE_SELECTORS),
    "prefixes": list(CHALLENGE_PATH_PREFIXES),
    "pattern": CHALLENGE_TEXT.pattern,
    "banner": in_page(BANNER),
}
_TURNS = {
    **_BLOCKERS,
    "turns": in_page(ASSISTANT_TURN),
    "stop": in_page(STOP_BUTTON),
    "finished": in_page(FINISHED_TURN),
}


async def probe(page: Page, base_url: str, *, turns: bool = False) -> PageLook:
    """Challenges, banners and sign-in pages, and with ``turns`` the turns, in one pass."""
    empty = TurnSnapshot(0, "", False, False, False) if turns else None
    if is_auth_url(page.url, base_url):
        return PageLook(Evidence(auth_page=True), empty)
    if not page.url.startswith(("http://", "https://")):
        return PageLook(Evidence(), empty)
    seen = await page.evaluate(PAGE_PROBE, _TURNS if turns else _BLOCKERS)
    banner = redact(" ".join(" ".join(seen["banners"]).split()))[:_BANNER_CHARS] or None
    evidence = Evidence(bool(seen["strong"]), bool(seen["weak"]), banner)
    if not turns:
        return PageLook(evidence)
    snapshot = TurnSnapshot(
        int(seen["count"]), str(seen["text"]), bool(seen["generating"]), bool(seen["bar"]),
        evidence.any,
    )  # fmt: skip
    return PageLook(evidence, snapshot, int(seen["strategy"]))


async def look(page: Page, base_url: str) -> Evidence:
    """The evidence of challenges, banners and sign-in pages (see ``probe``)."""
    return (await probe(page, base_url)).evidence


async def session_state(page: Page, base_url: str) -> AuthState:
    """Signed in or out according to the session endpoint, the URL and login buttons; an
    endpoint refused with a page instead of JSON is taken as a challenge."""
    if is_auth_url(page.url, base_url):
        return AuthState.LOGGED_OUT
    if not same_origin(page.url, base_url):
        return AuthState.UNKNOWN
    probe = await page.evaluate(SESSION_PROBE, urljoin(base_url, AUTH_SESSION_PATH))
    if probe["json"] and probe["status"] == 200:
        return AuthState.LOGGED_IN if probe["user"] else AuthState.LOGGED_OUT
    if probe["status"] == 403 and not probe["json"]:
        return AuthState.CHALLENGE  # a challenge answering for the endpoint; the page may follow
    if await find(page, LOGIN_BUTTON) is not None:
        return AuthState.LOGGED_OUT
    return AuthState.UNKNOWN

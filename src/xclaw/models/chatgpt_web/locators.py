"""Every selector the ChatGPT web adapter uses, in one place, with the adapter version.

Each locator is an ordered list of fallbacks (seed 000 §4.3): accessible role and stable text
first, then ``data-testid`` and other stable attributes, then DOM structure, CSS classes last.
The first strategy that matches wins. Role names in English only help on an English page, so
every locator also carries language-independent fallbacks after them.

When ChatGPT's page changes, this file (and ``ADAPTER_VERSION``) is what changes; a required
locator that matches nothing makes the adapter report ``WEB_ADAPTER_OUTDATED`` with a
diagnostic bundle instead of blaming the model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

ADAPTER_VERSION = "1.1"  # 1.1: the 2026 page (section turns, composer pill, effort controls)

Tier = Literal["role", "attribute", "structure", "class"]


@dataclass(frozen=True, slots=True)
class Strategy:
    tier: Tier
    selector: str  # a Playwright selector


@dataclass(frozen=True, slots=True)
class Locator:
    name: str  # said in errors and diagnostics: "the composer was not found"
    strategies: tuple[Strategy, ...]
    visible: bool = False  # only visible elements count (things a person would click)


def _role(selector: str) -> Strategy:
    return Strategy("role", selector)


def _attr(selector: str) -> Strategy:
    return Strategy("attribute", selector)


def _structure(selector: str) -> Strategy:
    return Strategy("structure", selector)


def _class(selector: str) -> Strategy:
    return Strategy("class", selector)


COMPOSER = Locator(
    "composer",
    (
        _role("form >> role=textbox"),
        _attr("#prompt-textarea"),
        _attr('textarea[name="prompt-textarea"]'),
        _attr('[data-testid="composer-input"]'),
        _structure('form [contenteditable="true"]'),
        _structure("form textarea"),
        _class(".ProseMirror"),
    ),
    visible=True,
)
SEND_BUTTON = Locator(
    "send button",
    (
        _role("form >> role=button[name=/^send/i]"),
        _attr('[data-testid="send-button"]'),
        _attr("#composer-submit-button"),
        _structure('form button[type="submit"]'),
    ),
    visible=True,
)
STOP_BUTTON = Locator(
    "stop button",
    (
        _role("form >> role=button[name=/^stop/i]"),
        _attr('[data-testid="stop-button"]'),
        _attr('form [data-testid$="stop-button"]'),
        _class("button.stop-button"),
    ),
    visible=True,
)
_ASSISTANT = '[data-message-author-role="assistant"]'
# 2025: <article data-testid="conversation-turn-N">; 2026: <section> with the same test id and
# data-turn="assistant" (the inner author-role element may be missing, e.g. deep research).
ASSISTANT_TURN = Locator(
    "assistant turn",
    (
        _attr(f'article[data-testid^="conversation-turn"]:has({_ASSISTANT})'),
        _attr('[data-testid^="conversation-turn"][data-turn="assistant"]'),
        _attr(f'section[data-testid^="conversation-turn"]:has({_ASSISTANT})'),
        _attr('[data-turn="assistant"]'),
        _structure(f"main article:has({_ASSISTANT})"),
        _structure(_ASSISTANT),
    ),
)
# The same for the person's turns: a reload tells from them whether a message arrived.
USER_TURN = Locator(
    "user turn",
    (
        _attr('article[data-testid^="conversation-turn"]:has([data-message-author-role="user"])'),
        _attr('[data-testid^="conversation-turn"][data-turn="user"]'),
        _attr('[data-turn="user"]'),
        _structure('[data-message-author-role="user"]'),
    ),
)
# Inside the last assistant turn: the finished-turn action bar's copy button.
COPY_BUTTON = Locator(
    "finished-turn copy button",
    (
        _role("role=button[name=/^copy$/i]"),
        _attr('[data-testid="copy-turn-action-button"]'),
    ),
)
# Inside the last assistant turn: anything only a finished turn carries (its action bar). The
# copy button is one of them, not the only one: reading never hinges on it.
FINISHED_TURN = Locator(
    "finished-turn action bar",
    (
        *COPY_BUTTON.strategies,
        _attr('[data-testid$="-turn-action-button"]'),
    ),
)
# Inside the last assistant turn: the reply itself, read as DOM text when copying fails.
REPLY_CONTENT = Locator(
    "reply content",
    (
        _attr(f"{_ASSISTANT} .markdown"),
        _attr(_ASSISTANT),
        _class(".markdown"),
    ),
)
# The model menu's opener: the 2025 header button, or the 2026 composer pill.
MODEL_SWITCHER = Locator(
    "model switcher",
    (
        _attr('[data-testid="model-switcher-dropdown-button"]'),
        _class('button.__composer-pill[aria-haspopup="menu"]'),
        _structure('header button[aria-haspopup="menu"]'),
    ),
    visible=True,
)
MODE_TESTID_PREFIX = "model-switcher-"
# Candidates only: scripts.MENU_ITEMS keeps the rows (models) and drops the controls inside or
# beside them (2026: per-row effort buttons whose test ids also start with the prefix).
MODE_ITEMS = Locator(
    "mode menu items",
    (
        _role('role=menu >> [data-testid^="model-switcher-"]'),
        _attr('[data-radix-menu-content] [data-testid^="model-switcher-"]'),
        _structure('[role="menu"] [role^="menuitem"]'),
    ),
    visible=True,
)
# Transient notices (Radix toasts): a usage limit is announced there. Read, never clicked.
TOAST = Locator(
    "toast",
    (
        _attr('[role="region"] li[role="status"]'),
        _attr('[data-testid^="toast"]'),
        _class(".toast-root"),
    ),
    visible=True,
)
FILE_INPUT = Locator(
    "file upload input",
    (
        _attr("#upload-files"),
        _structure('input[type="file"]'),
    ),
)
LOGIN_BUTTON = Locator(
    "login button",
    (
        _role("role=button[name=/^(log in|sign in)$/i]"),
        _attr('[data-testid="login-button"]'),
    ),
    visible=True,
)
# The page's own way out of a failed reply: the 2026 in-turn error's button, else a button in
# the error banner (2025). Pressed only when the person answers "Retry" (a takeover).
RETRY_BUTTON = Locator(
    "retry button",
    (
        _role("role=button[name=/^(retry|try again|regenerate)$/i]"),
        _attr('[data-testid="regenerate-thread-error-button"]'),
        _structure('[data-testid$="error-banner"] button'),
        _class(".text-token-text-error button"),
    ),
    visible=True,
)
BANNER = Locator(
    "error or limit banner",
    (
        _role("role=alert"),
        _attr('[data-testid$="error-banner"]'),
        _class(".text-token-text-error"),
    ),
    visible=True,
)

# -- challenges and auth, read by one in-page probe or from the URL ---------------------------
# Strong evidence: markup only a verification challenge has.
CHALLENGE_SELECTORS = (
    "#challenge-form",
    "#challenge-running",
    "#cf-challenge-running",
    '[name="cf-turnstile-response"]',
    'iframe[src*="challenges.cloudflare.com"]',
    'iframe[src*="/cdn-cgi/challenge-platform/"]',
    'script[src*="/cdn-cgi/challenge-platform/"]',
)
CHALLENGE_PATH_PREFIXES = ("/cdn-cgi/challenge-platform", "/cdn-cgi/l/chk_")
# Weak evidence (English wording; ordinary pages can say these): waited out for a grace period.
CHALLENGE_TEXT = re.compile(
    r"just a moment|attention required|verify you are human|checking your browser"
    r"|checking if the site connection is secure",
    re.IGNORECASE,
)
AUTH_SESSION_PATH = "api/auth/session"  # relative to the base URL
AUTH_HOSTS = ("auth.openai.com", "auth0.openai.com", "login.openai.com")
AUTH_PATH_PREFIXES = ("/auth/login", "/auth/", "/log-in", "/login")
CONVERSATION_PATH = re.compile(r"/c/[A-Za-z0-9_-]+/?$")

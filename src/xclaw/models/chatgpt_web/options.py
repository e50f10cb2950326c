"""Settings of the ChatGPT web transport, apart from its run state."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, fields, replace
from typing import Literal

from xclaw.browser.manager import BrowserOptions
from xclaw.core.errors import ConfigError
from xclaw.models.chatgpt_web.page_state import Takeover

DEFAULT_BASE_URL = "https://chatgpt.com/"

# Called when a person must act in the browser window (a challenge, a limit or error
# banner). It may wait for the person (async) or just tell them; either way the transport
# then waits for the page to clear, up to ``WebTimeouts.takeover_s``. A surface that asks the
# person elsewhere (the gateway's web UI) returns their answer instead: "retry" (the page's
# Retry control is pressed, or the page reloaded, and the turn goes on) or "stop" (the session
# pauses, ``WEB_TAKEOVER_STOPPED``). A headless browser has no window, so there the takeover
# fails at once (``WEB_TAKEOVER_HEADLESS``) unless a surface answers remotely
# (``ChatGPTWebTransport(remote_takeover=...)``) or ``headless_takeover`` is "wait".
TakeoverAnswer = Literal["retry", "stop"]
TakeoverHook = Callable[[Takeover], Awaitable[TakeoverAnswer | None] | None]
# Called with each new piece of reply text while it streams (raw text, not yet parsed).
DeltaHook = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class WebTimeouts:
    """Seconds (and poll counts). The defaults suit the live site; tests shorten them."""

    poll_s: float = 0.1
    # With the finished-turn action bar showing, the text must also stay unchanged for this
    # long and over ``finished_polls`` polls in a row: the bar is the page's own "done" and
    # appears once streaming has stopped, so a long window only adds delay (1.5 s was 80% of
    # the transport's time per turn in bench/web_transport.py).
    stable_window_s: float = 0.3
    finished_polls: int = 3  # action bar present, text unchanged, this many polls in a row
    page_load_s: float = 45.0  # a page opening and signing in
    controls_s: float = 5.0  # the page loaded: its composer must show this soon (else outdated)
    action_s: float = 10.0  # one click or keystroke
    new_turn_s: float = 90.0  # a reply must start this soon after sending
    turn_s: float = 1800.0  # and finish this soon (long-thinking modes take minutes), twice
    quiet_s: float = 4.0  # a quiet turn without an action bar we know is finished after this
    copy_s: float = 3.0  # the copy button delivering the Markdown
    menu_s: float = 1.5  # the mode menu rendering its items
    challenge_grace_s: float = 8.0  # weak challenge evidence must last this long
    banner_grace_s: float = 2.0  # a banner must last this long
    takeover_s: float = 900.0  # a person clearing a challenge or banner
    login_s: float = 600.0  # a person signing in (``wait_for_manual_login``)


TIMEOUTS_ENV = "XCLAW_WEB_TIMEOUTS"


def timeouts_from(text: str, base: WebTimeouts | None = None) -> WebTimeouts:
    """``"turn_s=120,page_load_s=20"`` (the ``XCLAW_WEB_TIMEOUTS`` variable) over ``base``."""
    base = base or WebTimeouts()
    names = {f.name: f.type for f in fields(WebTimeouts)}
    changes: dict[str, float | int] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, _, raw = item.partition("=")
        name = name.strip()
        try:
            if name not in names:
                raise ValueError(name)
            value = int(raw) if names[name] in ("int", int) else float(raw)
            if value <= 0:
                raise ValueError(raw)
        except ValueError:
            raise ConfigError(
                f"{TIMEOUTS_ENV}: {item!r} is not NAME=SECONDS with a known name and a positive "
                "number.",
                code="CONFIG_INVALID",
                hint=f"Known names: {', '.join(names)}.",
            ) from None
        changes[name] = value
    return replace(base, **changes)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class ChatGPTWebOptions:
    base_url: str = DEFAULT_BASE_URL  # a test site stands in here
    mode: str | None = None  # e.g. "pro", "thinking"; matched on stable attributes
    mode_strict: bool = False  # the mode or WEB_MODE_UNAVAILABLE, never a fallback
    headless_takeover: Literal["fail", "wait"] = "fail"  # see TakeoverHook
    browser: BrowserOptions = field(default_factory=lambda: BrowserOptions(site="chatgpt"))
    timeouts: WebTimeouts = field(default_factory=WebTimeouts)

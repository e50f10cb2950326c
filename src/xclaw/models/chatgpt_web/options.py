"""Settings of the ChatGPT web transport, apart from its run state."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from xclaw.browser.manager import BrowserOptions
from xclaw.models.chatgpt_web.page_state import Takeover

DEFAULT_BASE_URL = "https://chatgpt.com/"

# Called when a person must act in the browser window (a challenge, a limit or error
# banner). It may wait for the person (async) or just tell them; either way the transport
# then waits for the page to clear, up to ``WebTimeouts.takeover_s``.
TakeoverHook = Callable[[Takeover], Awaitable[None] | None]
# Called with each new piece of reply text while it streams (raw text, not yet parsed).
DeltaHook = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class WebTimeouts:
    """Seconds (and poll counts). The defaults suit the live site; tests shorten them."""

    poll_s: float = 0.25
    stable_window_s: float = 1.5  # reply text unchanged this long
    finished_polls: int = 3  # action bar present this many polls in a row
    page_load_s: float = 45.0  # a page opening, signing in, showing its composer
    action_s: float = 10.0  # one click or keystroke
    new_turn_s: float = 90.0  # a reply must start this soon after sending
    turn_s: float = 1800.0  # and finish this soon (long-thinking modes take minutes)
    action_bar_grace_s: float = 60.0  # a quiet turn without an action bar: adapter outdated
    copy_s: float = 3.0  # the copy button delivering the Markdown
    menu_s: float = 1.5  # the mode menu rendering its items
    challenge_grace_s: float = 8.0  # weak challenge evidence must last this long
    banner_grace_s: float = 2.0  # a banner must last this long
    takeover_s: float = 900.0  # a person clearing a challenge or banner
    login_s: float = 600.0  # a person signing in (``wait_for_manual_login``)


@dataclass(frozen=True, slots=True)
class ChatGPTWebOptions:
    base_url: str = DEFAULT_BASE_URL  # a test site stands in here
    mode: str | None = None  # e.g. "pro", "thinking"; matched on stable attributes
    browser: BrowserOptions = field(default_factory=lambda: BrowserOptions(site="chatgpt"))
    timeouts: WebTimeouts = field(default_factory=WebTimeouts)

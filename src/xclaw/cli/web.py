"""What the CLI adds for a browser-backed model: flags, the live view of the page's events,
and a person's takeover when the page needs one."""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlsplit

from rich.markup import escape

from xclaw.cli.common import console
from xclaw.core.events import EventBus
from xclaw.redact import redact


def browser_flags(headless: bool, browser: str | None) -> None:
    """``--headless`` and ``--browser`` reach the browser layer through its variables."""
    if headless:
        os.environ["XCLAW_BROWSER_HEADLESS"] = "1"
    if browser:
        os.environ["XCLAW_BROWSER"] = browser


def attach_web_relay(model: Any, bus: EventBus) -> None:
    """Route a web model's page events to the live view, and ask for a person when needed."""
    from xclaw.models.web import relay_of

    relay = relay_of(model)
    if relay is None:
        return
    relay.to_bus(bus)
    relay.takeover = show_takeover


def show_takeover(takeover: Any) -> None:
    """The page needs a person (a challenge, a limit, an error banner): say so plainly; the
    transport keeps the window shown and carries on by itself once the page is clear."""
    reason = getattr(takeover, "reason", None) or str(takeover)
    console.print(
        f"[bold yellow]the ChatGPT page needs you:[/] {escape(redact(str(reason)))}. "
        "Handle it in the browser window; the run continues by itself when the page is clear "
        "(Ctrl+C pauses it)."
    )


def saved_web_base_url(spec: Any, meta: dict[str, Any]) -> str | None:
    """On a resume of a chatgpt-web session, the site of its saved conversation."""
    url = meta.get("conversation_url")
    if not isinstance(spec, str) or not spec.startswith("chatgpt-web") or not url:
        return None
    parts = urlsplit(str(url))
    return f"{parts.scheme}://{parts.netloc}/" if parts.scheme and parts.netloc else None

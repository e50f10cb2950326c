"""``chatgpt-web[:MODE[!]]``: the ChatGPT web page as a model, in the XML text protocol.

``MODE!`` asks for the mode strictly (``WEB_MODE_UNAVAILABLE`` instead of a fallback);
``XCLAW_WEB_TIMEOUTS=turn_s=600,page_load_s=20`` changes the page's timeouts.

The browser is the dedicated one of ``xclaw.browser`` (profile ``browser/chatgpt/`` in the data
dir); ``--headless`` / ``XCLAW_BROWSER_HEADLESS=1`` and ``--browser PATH`` / ``XCLAW_BROWSER``
choose how it runs, ``XCLAW_BROWSER_ARGS`` adds Chromium flags. Surfaces learn about the page
(mode chosen, a challenge that needs a person) through ``WebRelay``, which they fill in after
the model is built: the CLI prints a takeover, the gateway asks its web clients (``remote``).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from xclaw.core.errors import ConfigError
from xclaw.core.events import EVENT_TYPES, Event, EventBus
from xclaw.core.extras import require

if TYPE_CHECKING:
    from xclaw.models.text.model import TextProtocolModel

PROVIDER = "chatgpt-web"
DEFAULT_MAX_CONVERSATION_CHARS = 400_000
"""Characters a page conversation carries before the next message opens a new one with a
summary (seed 000 §11); ``XCLAW_WEB_MAX_CONVERSATION_CHARS`` changes it."""


@dataclass(slots=True)
class WebRelay:
    """Where the transport's events and takeover requests go; set by the surface.

    ``takeover`` may return the person's answer ("retry" or "stop", awaitable); ``remote``
    says a surface answers from elsewhere (the gateway's web UI), so a headless browser waits
    for that answer instead of failing at once."""

    event: Callable[[str, dict[str, Any]], None] | None = None
    takeover: Callable[[Any], Awaitable[Any] | None] | None = None
    remote: bool = False

    def on_event(self, kind: Any, payload: dict[str, Any]) -> None:
        if self.event is not None:
            self.event(str(kind), payload)

    def on_takeover(self, takeover: Any) -> Awaitable[Any] | None:
        return self.takeover(takeover) if self.takeover is not None else None

    def answers_remotely(self) -> bool:
        return self.remote and self.takeover is not None

    def to_bus(self, bus: EventBus, session_id: str = "") -> None:
        """The page's events go to ``bus`` as loop events of ``session_id``."""

        def event(kind: str, payload: dict[str, Any]) -> None:
            if kind in EVENT_TYPES:
                bus.emit(Event(kind, session_id, 0, dict(payload)))  # type: ignore[arg-type]

        self.event = event


def chatgpt_web_model(mode: str | None, *, base_url: str | None = None) -> TextProtocolModel:
    """A ``TextProtocolModel`` over a ``ChatGPTWebTransport``; nothing is launched yet."""
    require("browser", "the chatgpt-web model")
    from xclaw.models.chatgpt_web import ChatGPTWebOptions, ChatGPTWebTransport
    from xclaw.models.chatgpt_web.modes import split_mode
    from xclaw.models.chatgpt_web.options import TIMEOUTS_ENV, timeouts_from
    from xclaw.models.text.model import TextProtocolModel

    wanted, strict = split_mode(mode)  # "pro!": that mode or an error, never a fallback
    timeouts = timeouts_from(os.environ.get(TIMEOUTS_ENV, ""))
    options = ChatGPTWebOptions(mode=wanted, mode_strict=strict, timeouts=timeouts)
    if base_url:
        options = replace(options, base_url=base_url)
    extra = shlex.split(os.environ.get("XCLAW_BROWSER_ARGS", ""))
    if extra:  # e.g. a proxy, or quiet flags on a closed network
        options = replace(options, browser=replace(options.browser, args=tuple(extra)))
    relay = WebRelay()
    transport = ChatGPTWebTransport(
        options,
        on_takeover=relay.on_takeover,
        on_event=relay.on_event,
        remote_takeover=relay.answers_remotely,
    )
    transport.relay = relay  # type: ignore[attr-defined]
    transport.browser_backed = True  # type: ignore[attr-defined]  # the bridge serialises it
    name = f"{PROVIDER}:{mode}" if mode else PROVIDER
    return TextProtocolModel(transport, name=name, max_conversation_chars=_max_chars())


def _max_chars() -> int:
    raw = os.environ.get("XCLAW_WEB_MAX_CONVERSATION_CHARS", "").strip()
    if not raw:
        return DEFAULT_MAX_CONVERSATION_CHARS
    if not raw.isdigit() or int(raw) < 10_000:
        raise ConfigError(
            f"XCLAW_WEB_MAX_CONVERSATION_CHARS={raw!r} is not a number of at least 10000.",
            code="CONFIG_INVALID",
            hint="Unset it, or give the number of characters a page conversation may carry.",
        )
    return int(raw)


def relay_of(model: Any) -> WebRelay | None:
    """The relay of a web model (also inside a failover chain), else None."""
    for candidate in [model, *getattr(model, "models", ())]:
        relay = getattr(getattr(candidate, "transport", None), "relay", None)
        if isinstance(relay, WebRelay):
            return relay
    return None

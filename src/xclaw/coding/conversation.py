"""A model that lives in a web conversation (the ChatGPT page): keep its URL with the session,
reopen it on a resume, and start a fresh one when it grows too long (seed 000 §9.3, §11).

Duck-typed on purpose: a transport that has ``conversation_url`` (and ``open_conversation``,
``start_conversation``) takes part; every other model is left alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from xclaw.core.errors import XclawError
from xclaw.core.hooks import BeforeModelCall

if TYPE_CHECKING:
    from xclaw.core.state import RunState

META_KEY = "conversation_url"


def web_model(model: Any) -> Any | None:
    """The text-protocol model inside ``model`` (a failover chain included) whose transport
    is a web conversation; None for any other model."""
    for candidate in [model, *getattr(model, "models", ())]:
        transport = getattr(candidate, "transport", None)
        if transport is not None and hasattr(transport, "conversation_url"):
            return candidate
    return None


def conversation_hook(model: Any) -> BeforeModelCall | None:
    """Before each model call, the conversation URL the previous call produced is noted in
    the session (it reaches the store at that same durability barrier)."""
    web = web_model(model)
    if web is None:
        return None

    def note(state: RunState) -> None:
        url = web.transport.conversation_url
        if url:
            state.recorder.note(META_KEY, url)

    return note


async def reopen_conversation(model: Any, meta: dict[str, Any]) -> str | None:
    """On a resume: reopen the saved conversation so the chat continues where it was.

    Returns a note for the live view. When it cannot be reopened the model starts a fresh
    conversation that opens with the steps so far (nothing is lost, only the chat history).
    """
    web = web_model(model)
    url = meta.get(META_KEY)
    if web is None or not isinstance(url, str) or not url:
        return None
    try:
        await web.transport.open_conversation(url)
    except XclawError as err:
        web.opened = False
        return f"could not reopen {url} ({err.code}); a new conversation starts with a summary"
    web.opened = True  # the chat already holds the protocol and the task
    return f"reopened the conversation {url}"

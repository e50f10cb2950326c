"""A model that lives in a web conversation (the ChatGPT page): keep its URL with the session,
reopen it on a resume, and start a fresh one when it grows too long (seed 000 §9.3, §11).

A message the page was sent but whose reply was not read yet (a pause mid-reply) is kept with
the session as soon as the transport says where it is (``on_posted``), so a resume in another
process waits for that reply in the reopened chat instead of posting the message again.

Duck-typed on purpose: a transport that has ``conversation_url`` (and ``open_conversation``,
``start_conversation``, ``on_posted``/``expect_posted``) takes part; every other model is left
alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from xclaw.core.errors import XclawError
from xclaw.core.hooks import BeforeModelCall

if TYPE_CHECKING:
    from xclaw.core.state import RunState

META_KEY = "conversation_url"
POSTED_KEY = "conversation_posted"  # the transport's ``posted_unread``, or None


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
        transport = web.transport
        url = transport.conversation_url
        if url:
            state.recorder.note(META_KEY, url)
        if hasattr(transport, "on_posted"):  # noted the moment it is known, mid-call
            transport.on_posted = lambda posted: _note_posted(state, posted)

    return note


def _note_posted(state: RunState, posted: dict[str, Any] | None) -> None:
    if posted is not None:  # the chat's URL may be new (the first message opened it)
        state.recorder.note(META_KEY, posted["url"])
    state.recorder.note(POSTED_KEY, posted)


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
    posted = meta.get(POSTED_KEY)
    expect = getattr(web.transport, "expect_posted", None)
    if isinstance(posted, dict) and expect is not None and expect(posted):
        return (
            f"reopened the conversation {url}; the reply to the message already posted there "
            "is awaited (the message is not sent again)"
        )
    return f"reopened the conversation {url}"

"""The session a memory tool call belongs to.

A tool's ``ToolContext`` names the workspace, not the session, and one memory runtime may
serve every session of a gateway. So the memory hooks bind the run's session id to a context
variable before each model call; that turn's tool calls run in the same task (or in tasks it
starts, which copy the context) and read it back. Concurrent sessions never see each other's.
"""

from __future__ import annotations

from contextvars import ContextVar

from xclaw.core.state import RunState

_SESSION: ContextVar[str | None] = ContextVar("xclaw_memory_session", default=None)


def bind_session(state: RunState) -> None:
    """A ``before_model_call`` hook: this run's tool calls belong to ``state.session_id``."""
    _SESSION.set(state.session_id)


def current_session_id() -> str | None:
    """The session of the run this call is part of, None outside a run."""
    return _SESSION.get()

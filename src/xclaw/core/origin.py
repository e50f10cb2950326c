"""Where a session comes from: what a surface (the gateway) tells the builder of a session's
agent, so routing rules can see the channel and the peer."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SessionOrigin"]


@dataclass(frozen=True, slots=True)
class SessionOrigin:
    """A session's id, the channel kind that made it (web, cli, telegram...) and the peer
    (a connection or a chat user) that did."""

    session_id: str
    channel: str
    peer: str

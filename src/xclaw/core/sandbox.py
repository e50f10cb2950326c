"""What a sandbox is to every layer that holds one without starting programs in it.

A session's sandbox has a mode and is closed when the session ends (a bwrap sandbox owns the
session's network, a remote one its machine). The backends live in ``xclaw.sandbox``
(``bwrap``, ``host``, ``full``); the command tools narrow a ``Sandbox`` to what they start
programs with (``xclaw.sandbox.base``: a ``LocalSandbox`` launches, a ``RemoteSandbox`` runs).
Faces, the composition root and surfaces pass one along, or a ``SandboxFactory`` making a new
one per session, without importing a backend.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, Protocol, TypeAlias, TypeGuard, cast, runtime_checkable

__all__ = ["Mode", "Sandbox", "SandboxFactory", "SandboxSource", "sandbox_from"]

Mode = Literal["bwrap", "host", "full"]


@runtime_checkable
class Sandbox(Protocol):
    """One session's sandbox, implemented by every backend of ``xclaw.sandbox``."""

    @property
    def mode(self) -> Mode: ...

    async def close(self) -> None:
        """Release what the session's sandbox holds; idempotent."""
        ...


SandboxFactory: TypeAlias = Callable[[], Sandbox]
# What an agent is given: one sandbox for every run, a factory making each run's own, or
# None (the workspace chooses on first use, from the user's configuration).
SandboxSource: TypeAlias = Sandbox | SandboxFactory | None


def sandbox_from(source: SandboxSource) -> Sandbox | None:
    """The sandbox ``source`` gives one session: itself, a new one from the factory, or None."""
    if source is None or _is_sandbox(source):
        return source
    return cast(SandboxFactory, source)()


_SANDBOX_TYPES: dict[type, bool] = {}


def _is_sandbox(source: object) -> TypeGuard[Sandbox]:
    """``isinstance(source, Sandbox)``, remembered per class that defines the members itself
    (a protocol check walks every member each time, and this runs once a turn); an object
    holding them as its own attributes is checked each time."""
    kind = type(source)
    known = _SANDBOX_TYPES.get(kind)
    if known is None:
        known = isinstance(source, Sandbox)
        if hasattr(kind, "mode") and hasattr(kind, "close"):
            _SANDBOX_TYPES[kind] = known
    return known

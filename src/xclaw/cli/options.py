"""One spelling per concept across the command line: the shared options and their choices,
and the one state vocabulary users see.

- The project directory is ``-C/--project`` on every command that takes one. The spellings of
  earlier releases (``--directory``, ``--dir``) still work: ``OLD_SPELLINGS`` maps them when
  options are parsed (``normalize_option``, the app's ``token_normalize_func``), and help shows
  only the new one.
- Every option with a fixed set of values is a ``Literal``: help lists the values and a wrong
  one is refused before the command runs, always the same way (``USAGE_INVALID`` naming the
  option and its choices).
- Sessions are stored with ``init | running | paused | success | failed`` and a phase
  (``COMPLETED``, ``WAITING_MODEL``, ...); a run ends ``completed | interrupted | failed``.
  Users see the run's words: ``shown_state`` and ``shown_phase`` map at the rendering edge,
  and ``stored_state`` maps a ``--state`` filter back. Stored data never changes.

This module is imported by command modules only: it stays light (typer, pathlib).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer

__all__ = [
    "OLD_SPELLINGS",
    "ApprovalChoice",
    "ApprovalOption",
    "ProjectFilterOption",
    "ProjectOption",
    "ProtocolChoice",
    "SandboxChoice",
    "SandboxOption",
    "ShownState",
    "TraceChoice",
    "existing_project",
    "normalize_option",
    "shown_phase",
    "shown_state",
    "stored_state",
]

ApprovalChoice = Literal["ask", "deny", "allow"]
SandboxChoice = Literal["auto", "bwrap", "host", "full"]
ProtocolChoice = Literal["native", "xml", "auto"]
TraceChoice = Literal["console", "json"]

# Option names of earlier releases, without their dashes, and the name they mean now.
OLD_SPELLINGS = {"directory": "project", "dir": "project"}


def normalize_option(name: str) -> str:
    """click's ``token_normalize_func``: applied to every option name, declared and given."""
    return OLD_SPELLINGS.get(name, name)


def existing_project(value: Path | None) -> Path | None:
    """``-C``'s check, run while the options are parsed: a missing directory is reported
    first, before any other work (the sandbox line, the model, the store)."""
    if value is not None and not value.is_dir():
        from xclaw.cli.common import fail
        from xclaw.core.errors import ConfigError

        what = "is not a directory" if value.exists() else "does not exist"
        fail(
            ConfigError(
                f"The project directory {value} {what}.",
                code="PROJECT_NOT_FOUND",
                hint="Pass an existing directory with -C/--project (default: the current one).",
            )
        )
    return value


ProjectOption = Annotated[
    Path,
    typer.Option(
        "-C",
        "--project",
        help="The project directory (default: the current one).",
        callback=existing_project,
    ),
]
ProjectFilterOption = Annotated[
    Path | None, typer.Option("-C", "--project", help="Only this project's sessions.")
]
ApprovalOption = Annotated[
    ApprovalChoice | None,
    typer.Option(
        "--approval",
        help="Risky calls: ask you (default on a terminal), deny (default otherwise) or allow.",
    ),
]
SandboxOption = Annotated[
    SandboxChoice | None,
    typer.Option(
        "--sandbox",
        help="Where commands run: auto (bwrap when it works, else the host), bwrap, host or "
        "full (a remote sandbox). Default: sandbox.mode in xclaw.yaml, else auto.",
    ),
]

# -- the state vocabulary --------------------------------------------------------------------

ShownState = Literal["init", "running", "interrupted", "completed", "failed"]
_SHOWN = {"success": "completed", "paused": "interrupted"}
_STORED = {shown: stored for stored, shown in _SHOWN.items()}
# Phases that only restate the state: shown as nothing.
_RESTATED = frozenset({"COMPLETED", "PAUSED", "FAILED", "RUNNING"})


def shown_state(stored: str) -> str:
    """A session's stored state as users read it: ``success`` is ``completed``, ``paused``
    is ``interrupted`` (the words a run ends with)."""
    return _SHOWN.get(stored, stored)


def stored_state(shown: str) -> str:
    """The stored state a ``--state`` filter means."""
    return _STORED.get(shown, shown)


def shown_phase(phase: str) -> str:
    """``WAITING_MODEL`` as ``waiting model``; a phase that restates the state as ''."""
    return "" if phase in _RESTATED else phase.lower().replace("_", " ")

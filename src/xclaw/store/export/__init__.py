"""Session exports: one stored session as JSONL another tool can read.

``codex``: a Codex CLI rollout. ``claude-code``: a Claude Code session transcript. ``jsonl``:
xclaw's own plain format. Every format leaves out the system prompt, the tool catalogue,
reasoning signatures and any protocol text a text-protocol transport added, and every string
passes through ``xclaw.redact.redact``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import PurePosixPath
from typing import Literal, get_args

from xclaw.core.errors import ConfigError
from xclaw.store.base import SessionRecord, TranscriptItem
from xclaw.store.export._common import session_uuid
from xclaw.store.export.claude_code import export_claude_code
from xclaw.store.export.codex import export_codex, rollout_path
from xclaw.store.export.jsonl import export_jsonl

ExportFormat = Literal["codex", "claude-code", "jsonl"]
FORMATS: tuple[str, ...] = get_args(ExportFormat)

_EXPORTERS: dict[str, Callable[[SessionRecord, list[TranscriptItem]], list[str]]] = {
    "codex": export_codex,
    "claude-code": export_claude_code,
    "jsonl": export_jsonl,
}


def export_session(
    fmt: ExportFormat, session: SessionRecord, items: list[TranscriptItem]
) -> list[str]:
    """The session as JSONL lines (no trailing newlines) in format ``fmt``."""
    exporter = _EXPORTERS.get(fmt)
    if exporter is None:
        raise ConfigError(
            f"Unknown export format {fmt!r}.",
            code="EXPORT_FORMAT_UNKNOWN",
            hint=f"Choose one of: {', '.join(FORMATS)}.",
        )
    return exporter(session, items)


def export_name(fmt: ExportFormat, session: SessionRecord) -> PurePosixPath:
    """The file name (under a directory) each format's own tool looks for: a Codex rollout's
    dated path, Claude Code's ``<session uuid>.jsonl``, ``<session id>.jsonl`` for ours."""
    if fmt == "codex":
        return rollout_path(session)
    if fmt == "claude-code":
        return PurePosixPath(f"{session_uuid(session.id)}.jsonl")
    return PurePosixPath(f"{session.id}.jsonl")


__all__ = ["FORMATS", "ExportFormat", "export_name", "export_session", "rollout_path"]

"""Apply a validated diff to the worktree in memory first, then write it all or nothing.

Written here instead of starting ``git apply``: starting a process costs more than a whole
typical apply, the tool already holds the parsed hunks, and no library applies git diffs
byte-exactly with git's anchoring rules. The rules are those of ``git apply`` without options:
every line of a hunk's old side must match exactly (no fuzz, no whitespace leniency); a hunk
stated at line 0 or 1 matches only at the top, one without trailing context only at the end;
otherwise the match nearest the stated line wins. A deletion must remove the whole file.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from xclaw.patch.diffparse import FilePatch, Hunk
from xclaw.tools.atomic import atomic_write_bytes


def split_lines(data: bytes) -> list[bytes]:
    """Lines with their ``\\n``; a last line without one stays as it is."""
    parts = data.split(b"\n")
    lines = [p + b"\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _candidates(h: Hunk, last: int) -> Iterator[int]:
    """Where the hunk may start, nearest its stated line first (lazily: the first usually fits)."""
    at_top, at_end = h.old_start <= 1, h.trailing == 0
    if at_top:
        if not at_end or last == 0:
            yield 0
        return
    if at_end:
        yield last
        return
    guess = min(max(h.new_start - 1, 0), last)
    yield guess
    for step in range(1, max(guess, last - guess) + 1):
        if guess - step >= 0:
            yield guess - step
        if guess + step <= last:
            yield guess + step


def _find(lines: list[bytes], h: Hunk) -> int | None:
    last = len(lines) - len(h.old)
    if last < 0:
        return None
    want = list(h.old)
    first = want[0] if want else None
    for pos in _candidates(h, last):
        if (first is None or lines[pos] == first) and lines[pos : pos + len(want)] == want:
            return pos
    return None


def apply_hunks(data: bytes, hunks: Sequence[Hunk]) -> tuple[bytes | None, int]:
    """``(new content, 0)``, or ``(None, n)`` when hunk ``n`` (1-based) does not match."""
    lines = split_lines(data)
    for n, h in enumerate(hunks, 1):
        pos = _find(lines, h)
        if pos is None:
            return None, n
        lines[pos : pos + len(h.old)] = h.new
    return b"".join(lines), 0


@dataclass(frozen=True, slots=True)
class FileChange:
    rel: str
    path: Path
    before: bytes | None  # None: the file does not exist yet
    after: bytes | None  # None: the file is deleted


def plan_change(fp: FilePatch, rel: str, path: Path) -> FileChange | str:
    """What one file section does to ``path``, or why it cannot apply (a plain reason)."""
    before = None if fp.kind == "create" else path.read_bytes()
    after, bad = apply_hunks(before or b"", fp.hunks)
    if after is None:
        return f"hunk {bad} of {rel} does not match the current file"
    if fp.kind == "delete":
        if after:
            return f"the deletion of {rel} does not remove all of its lines"
        return FileChange(rel, path, before, None)
    return FileChange(rel, path, before, after)


def write_all(root: Path, changes: Sequence[FileChange]) -> None:
    """Write every change; on an error, put back what was written and re-raise.

    The worktree is scratch space a crash discards, so the writes skip fsync (still atomic).
    """
    done: list[FileChange] = []
    try:
        for change in changes:
            _write_one(root, change)
            done.append(change)
    except OSError:
        for change in reversed(done):
            _write_one(root, FileChange(change.rel, change.path, change.after, change.before))
        raise


def _write_one(root: Path, change: FileChange) -> None:
    if change.after is None:
        change.path.unlink(missing_ok=True)
        _remove_empty_parents(root, change.path.parent)
        return
    change.path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(change.path, change.after, durable=False)


def _remove_empty_parents(root: Path, folder: Path) -> None:
    """As ``git apply`` does after a deletion: folders left empty go too, up to the root."""
    while folder != root and root in folder.parents:
        try:
            os.rmdir(folder)
        except OSError:
            return
        folder = folder.parent

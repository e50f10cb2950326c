"""Apply a validated diff to the worktree in memory first, then write it all or nothing.

Written here instead of starting ``git apply``: starting a process costs more than a whole
typical apply, the tool already holds the parsed hunks, and no library applies git diffs
byte-exactly with git's placement rules. The rules are those of plain ``git apply`` (apply.c's
``find_pos`` and ``match_fragment``; tests/patch/test_hunks.py compares the two on generated
edits):

- every line of a hunk's old side must match exactly: no fuzz, no whitespace leniency;
- a hunk stated at line 0 or 1 matches only at the top, one without trailing context only at
  the end; any other starts at the line its ``+`` side names and tries that line, then one
  line later, one earlier, two later, two earlier, ...: the first match wins;
- a hunk never matches lines an earlier hunk of the file produced (its new and context lines);
- a deletion must remove the whole file; renames and copies read the file as it was before
  the patch; a mode the patch does not state is the file's own.

One addition for line ends, where plain ``git apply`` can only refuse: hunks with no CR in
their lines whose old lines end in a plain LF, applied to a file whose every line ends in
CRLF, match the file read with LF ends and the result is written back with CRLF — what
``git apply`` does to that file under ``core.autocrlf=true``. So a diff written with plain
newlines edits a Windows file and keeps it Windows; everything else is bytes as they are.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from xclaw.patch.diffparse import EXECUTABLE, FilePatch, Hunk
from xclaw.tools.atomic import atomic_write_bytes


def split_lines(data: bytes) -> list[bytes]:
    """Lines with their ``\\n``; a last line without one stays as it is."""
    parts = data.split(b"\n")
    lines = [p + b"\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _candidates(h: Hunk, count: int, last: int) -> Iterator[int]:
    """Where the hunk may start, in git's order (lazily: the first one usually fits)."""
    at_top, at_end = h.old_start <= 1, h.trailing == 0
    if at_top:
        if not at_end or last == 0:
            yield 0
        return
    if at_end:
        yield last
        return
    start = min(max(h.new_start - 1, 0), count)
    if start > last:  # git walks down from past the end; only the lines above can fit
        yield from range(last, -1, -1)
        return
    yield start
    for step in range(1, max(start, last - start) + 1):
        if start + step <= last:
            yield start + step
        if start - step >= 0:
            yield start - step


def _find(lines: list[bytes], patched: list[bool], h: Hunk) -> int | None:
    last = len(lines) - len(h.old)
    if last < 0:
        return None
    want = list(h.old)
    first = want[0] if want else None
    end = len(want)
    for pos in _candidates(h, len(lines), last):
        if first is not None and lines[pos] != first:
            continue
        if lines[pos : pos + end] == want and not any(patched[pos : pos + end]):
            return pos
    return None


def apply_hunks(data: bytes, hunks: Sequence[Hunk]) -> tuple[bytes | None, int]:
    """``(new content, 0)``, or ``(None, n)`` when hunk ``n`` (1-based) does not match."""
    lines = split_lines(data)
    patched = [False] * len(lines)  # lines a hunk produced: later hunks may not match them
    for n, h in enumerate(hunks, 1):
        pos = _find(lines, patched, h)
        if pos is None:
            return None, n
        lines[pos : pos + len(h.old)] = h.new
        patched[pos : pos + len(h.old)] = [True] * len(h.new)
    return b"".join(lines), 0


def uniform_crlf(data: bytes) -> bool:
    """Every line of ``data`` ends in CRLF (a last line may have no end) and no CR stands alone."""
    pairs = data.count(b"\r\n")
    return pairs > 0 and data.count(b"\n") == pairs and data.count(b"\r") == pairs


def lf_hunks_on_crlf(data: bytes, hunks: Sequence[Hunk]) -> bool:
    """The CRLF rule of the module docstring holds: the file's lines all end in CRLF, the
    hunks hold no CR, and one of their old lines ends in a plain LF — so plain ``git apply``
    cannot match it byte for byte and reading with LF ends changes no outcome it would have."""
    lines = [line for h in hunks for line in (*h.old, *h.new)]
    return (
        uniform_crlf(data)
        and not any(b"\r" in line for line in lines)
        and any(line.endswith(b"\n") for h in hunks for line in h.old)
    )


def patch_content(data: bytes, hunks: Sequence[Hunk]) -> tuple[bytes | None, int]:
    """``apply_hunks``, or the same on LF ends written back as CRLF when
    ``lf_hunks_on_crlf``."""
    if not lf_hunks_on_crlf(data, hunks):
        return apply_hunks(data, hunks)
    result, bad = apply_hunks(data.replace(b"\r\n", b"\n"), hunks)
    return (None if result is None else result.replace(b"\n", b"\r\n")), bad


@dataclass(frozen=True, slots=True)
class FileChange:
    """One path's content and executable bit before and after (None: no file there)."""

    rel: str
    path: Path
    before: bytes | None
    after: bytes | None
    before_exec: bool = False
    after_exec: bool = False

    def undone(self) -> FileChange:
        return FileChange(
            self.rel, self.path, self.after, self.before, self.after_exec, self.before_exec
        )


def path_conflict(files: Sequence[FilePatch]) -> str:
    """Why the sections cannot all apply side by side, or "". A path is written by at most one
    section and changed in place, deleted or renamed away by at most one; a path one section
    frees may be taken by another (``git diff`` writes swaps and type changes so). A section
    never edits what an earlier one wrote: ``git apply`` would chain them, which we refuse."""
    written: set[str] = set()
    consumed: set[str] = set()
    for f in files:
        if f.kind in ("update", "delete") and f.old_path in written:
            return f"{f.old_path} is changed again after an earlier section wrote it"
        if f.kind in ("update", "delete", "rename"):
            assert f.old_path is not None
            if f.old_path in consumed:
                return f"{f.old_path} is changed, deleted or renamed by two sections"
            consumed.add(f.old_path)
        if f.new_path is not None:
            if f.new_path in written:
                return f"{f.new_path} is written by two sections"
            written.add(f.new_path)
    return ""


def _is_exec(path: Path) -> bool:
    return bool(os.stat(path).st_mode & stat.S_IXUSR)


def _section_result(root: Path, f: FilePatch) -> tuple[bytes, bool] | None | str:
    """What a section leaves at its new path ((content, executable); None for a deletion), or
    why it does not apply. The tool has checked the paths; this re-checks what git would."""
    old = None if f.old_path is None else root / f.old_path
    if old is not None and not (old.is_file() and not old.is_symlink()):
        return f"{f.old_path} is not an existing regular file"
    before = b"" if old is None else old.read_bytes()
    after, bad = patch_content(before, f.hunks)
    if after is None:
        return f"hunk {bad} of {f.path} does not match the current file"
    if f.kind == "delete":
        return f"the deletion of {f.path} does not remove all of its lines" if after else None
    if f.new_mode is not None:
        return after, f.new_mode == EXECUTABLE
    return after, old is not None and _is_exec(old)


def plan_patch(root: Path, files: Sequence[FilePatch]) -> list[FileChange] | str:
    """Every path the patch changes with its content before and after, computed in memory;
    or the first reason it cannot apply (a plain sentence)."""
    conflict = path_conflict(files)
    if conflict:
        return conflict
    freed = {f.old_path for f in files if f.kind in ("delete", "rename") and f.old_path}
    outcome: dict[str, tuple[bytes, bool] | None] = dict.fromkeys(freed)
    for f in files:
        if f.kind in ("create", "rename", "copy"):
            assert f.new_path is not None
            if os.path.lexists(root / f.new_path) and f.new_path not in freed:
                return f"{f.new_path} already exists"
        result = _section_result(root, f)
        if isinstance(result, str):
            return result
        if f.new_path is not None:
            outcome[f.new_path] = result
    return [_change(root, rel, after) for rel, after in outcome.items()]


def _change(root: Path, rel: str, after: tuple[bytes, bool] | None) -> FileChange:
    path = root / rel
    exists = path.is_file() and not path.is_symlink()
    before = path.read_bytes() if exists else None
    before_exec = exists and _is_exec(path)
    if after is None:
        return FileChange(rel, path, before, None, before_exec, False)
    return FileChange(rel, path, before, after[0], before_exec, after[1])


def write_all(root: Path, changes: Sequence[FileChange]) -> None:
    """Write every change, removals first; on an error, put back what was written and re-raise.

    The worktree is scratch space a crash discards, so the writes skip fsync (still atomic).
    """
    done: list[FileChange] = []
    ordered = sorted(changes, key=lambda c: c.after is not None)  # a swap frees before it takes
    try:
        for change in ordered:
            done.append(change)  # first: a change that fails halfway is put back too
            _write_one(root, change)
    except OSError:
        for change in reversed(done):
            _write_one(root, change.undone())
        raise


def _write_one(root: Path, change: FileChange) -> None:
    if change.after is None:
        if change.before is not None:
            change.path.unlink(missing_ok=True)
            _remove_empty_parents(root, change.path.parent)
        return
    if change.after != change.before:
        change.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(change.path, change.after, durable=False)
    _set_exec(change.path, change.after_exec)


def _set_exec(path: Path, executable: bool) -> None:
    """As ``chmod +x`` (execute wherever read is allowed) or ``chmod -x``."""
    bits = stat.S_IMODE(os.stat(path).st_mode)
    want = bits | (bits & 0o444) >> 2 if executable else bits & ~0o111
    if want != bits:
        os.chmod(path, want)


def _remove_empty_parents(root: Path, folder: Path) -> None:
    """As ``git apply`` does after a deletion: folders left empty go too, up to the root."""
    while folder != root and root in folder.parents:
        try:
            os.rmdir(folder)
        except OSError:
            return
        folder = folder.parent

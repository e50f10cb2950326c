"""Validate a model's patch as a canonical unified git diff before it touches the worktree.

Only ``diff --git`` sections with matching ---/+++ headers and well-formed ``@@`` hunks pass;
fences, prose, shell text, ``*** Begin Patch`` wrappers, renames, copies, mode changes and
binary patches are refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from xclaw.core.errors import ToolError

Kind = Literal["create", "update", "delete"]
_HEADER = re.compile(r"^diff --git a/(\S+) b/(\S+)$")
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(?: .*)?$")
_NO_EOL = "\\ No newline at end of file"
_INDEX = re.compile(r"^index [0-9a-f]{4,64}\.\.[0-9a-f]{4,64}(?: 100644)?$")


@dataclass(frozen=True, slots=True)
class Hunk:
    """One ``@@`` block: the lines it expects (``old``) and the lines it leaves (``new``), as
    bytes with their line ends; ``trailing`` counts the context lines after the last change."""

    old_start: int
    new_start: int
    old: tuple[bytes, ...]
    new: tuple[bytes, ...]
    trailing: int


@dataclass(frozen=True, slots=True)
class FilePatch:
    path: str
    kind: Kind
    hunks: tuple[Hunk, ...] = ()


def rejected(reason: str) -> ToolError:
    return ToolError(
        f"The patch was rejected: {reason}.",
        code="PATCH_REJECTED",
        hint="Send a raw canonical unified git diff (diff --git a/P b/P, --- a/P, +++ b/P, @@ "
        "hunks) with a new call id; for a small edit of an existing file use replace_text.",
        retryable=True,
    )


def parse_patch(text: str) -> list[FilePatch]:
    """The files a canonical diff touches, in order; raises ``PATCH_REJECTED`` otherwise."""
    if "\r" in text:
        raise rejected("it contains carriage returns")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines or not lines[0].startswith("diff --git "):
        raise rejected("it must start with a 'diff --git' line (no fences, prose or wrappers)")
    files: list[FilePatch] = []
    i = 0
    while i < len(lines):
        fp, i = _file_section(lines, i)
        if any(f.path == fp.path for f in files):
            raise rejected(f"{fp.path} appears twice")
        files.append(fp)
    return files


def _file_section(lines: list[str], i: int) -> tuple[FilePatch, int]:
    m = _HEADER.match(lines[i])
    if m is None or m.group(1) != m.group(2):
        raise rejected(f"line {i + 1} is not a 'diff --git a/P b/P' header for one path")
    path = m.group(1)
    i += 1
    kind: Kind = "update"
    while i < len(lines) and not lines[i].startswith(("--- ", "diff --git ")):
        kind = _extended_header(lines[i], kind, i)
        i += 1
    if i + 1 >= len(lines) or not lines[i].startswith("--- "):
        raise rejected(f"{path} has no ---/+++ file headers")
    old, new = lines[i][4:], lines[i + 1][4:] if lines[i + 1].startswith("+++ ") else None
    expect_old = "/dev/null" if kind == "create" else f"a/{path}"
    expect_new = "/dev/null" if kind == "delete" else f"b/{path}"
    if old != expect_old or new != expect_new:
        raise rejected(f"the ---/+++ headers of {path} do not match its diff --git line")
    hunks, i = _hunks(lines, i + 2, path)
    return FilePatch(path, kind, tuple(hunks)), i


def _extended_header(line: str, kind: Kind, i: int) -> Kind:
    if line == "new file mode 100644" and kind == "update":
        return "create"
    if line == "deleted file mode 100644" and kind == "update":
        return "delete"
    if _INDEX.match(line):
        return kind
    raise rejected(f"line {i + 1} ({line[:40]!r}) is not allowed: no renames, modes or binaries")


def _hunks(lines: list[str], i: int, path: str) -> tuple[list[Hunk], int]:
    if i >= len(lines) or not lines[i].startswith("@@"):
        raise rejected(f"{path} has no @@ hunk")
    hunks: list[Hunk] = []
    while i < len(lines) and lines[i].startswith("@@"):
        hunk, i = _hunk_body(lines, i, path)
        hunks.append(hunk)
    if i < len(lines) and not lines[i].startswith("diff --git "):
        raise rejected(f"line {i + 1} is text outside any file section")
    return hunks, i


class _Sides:
    """The two sides of a hunk being read; a no-newline marker trims the line before it."""

    __slots__ = ("old", "new", "last", "trailing")

    def __init__(self) -> None:
        self.old: list[bytes] = []
        self.new: list[bytes] = []
        self.last = ""
        self.trailing = 0

    def add(self, tag: str, body: str) -> None:
        line = body.encode("utf-8") + b"\n"
        if tag in (" ", "-"):
            self.old.append(line)
        if tag in (" ", "+"):
            self.new.append(line)
        self.trailing = self.trailing + 1 if tag == " " else 0
        self.last = tag

    def no_newline(self) -> None:
        if self.last in (" ", "-"):
            self.old[-1] = self.old[-1][:-1]
        if self.last in (" ", "+"):
            self.new[-1] = self.new[-1][:-1]
        self.last = ""


def _hunk_body(lines: list[str], i: int, path: str) -> tuple[Hunk, int]:
    m = _HUNK.match(lines[i])
    if m is None:
        raise rejected(f"line {i + 1} is not a valid @@ hunk header")
    old_left = int(m.group(2) or "1")
    new_left = int(m.group(4) or "1")
    sides = _Sides()
    i += 1
    while old_left > 0 or new_left > 0:
        if i >= len(lines):
            raise rejected(f"a hunk of {path} ends early")
        tag = lines[i][:1]
        if tag in (" ", "-"):
            old_left -= 1
        if tag in (" ", "+"):
            new_left -= 1
        if tag in (" ", "-", "+"):
            sides.add(tag, lines[i][1:])
        elif lines[i] == _NO_EOL and sides.last:
            sides.no_newline()
        else:
            raise rejected(f"line {i + 1} does not belong to a hunk")
        i += 1
        if old_left < 0 or new_left < 0:
            raise rejected(f"a hunk of {path} has more lines than its header says")
    if i < len(lines) and lines[i] == _NO_EOL and sides.last:
        sides.no_newline()
        i += 1
    hunk = Hunk(
        int(m.group(1)), int(m.group(3)), tuple(sides.old), tuple(sides.new), sides.trailing
    )
    return hunk, i

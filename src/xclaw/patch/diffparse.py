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
class FilePatch:
    path: str
    kind: Kind


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
    i = _hunks(lines, i + 2, path)
    return FilePatch(path, kind), i


def _extended_header(line: str, kind: Kind, i: int) -> Kind:
    if line == "new file mode 100644" and kind == "update":
        return "create"
    if line == "deleted file mode 100644" and kind == "update":
        return "delete"
    if _INDEX.match(line):
        return kind
    raise rejected(f"line {i + 1} ({line[:40]!r}) is not allowed: no renames, modes or binaries")


def _hunks(lines: list[str], i: int, path: str) -> int:
    if i >= len(lines) or not lines[i].startswith("@@"):
        raise rejected(f"{path} has no @@ hunk")
    while i < len(lines) and lines[i].startswith("@@"):
        i = _hunk_body(lines, i, path)
    if i < len(lines) and not lines[i].startswith("diff --git "):
        raise rejected(f"line {i + 1} is text outside any file section")
    return i


def _hunk_body(lines: list[str], i: int, path: str) -> int:
    m = _HUNK.match(lines[i])
    if m is None:
        raise rejected(f"line {i + 1} is not a valid @@ hunk header")
    old_left = int(m.group(2) or "1")
    new_left = int(m.group(4) or "1")
    i += 1
    while old_left > 0 or new_left > 0:
        if i >= len(lines):
            raise rejected(f"a hunk of {path} ends early")
        tag = lines[i][:1]
        if tag in (" ", "-"):
            old_left -= 1
        if tag in (" ", "+"):
            new_left -= 1
        if tag not in (" ", "-", "+") and lines[i] != _NO_EOL:
            raise rejected(f"line {i + 1} does not belong to a hunk")
        i += 1
        if old_left < 0 or new_left < 0:
            raise rejected(f"a hunk of {path} has more lines than its header says")
    if i < len(lines) and lines[i] == _NO_EOL:
        i += 1
    return i

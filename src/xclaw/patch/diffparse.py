"""Validate a model's patch as a git diff before it touches the worktree.

Taken: ``diff --git`` sections as ``git diff`` writes them — ``@@`` hunks (lines may hold a CR,
``\\ No newline at end of file`` on either side, an empty line is an empty context line),
``old mode``/``new mode``, ``new file mode``/``deleted file mode`` (100644 or 100755),
``rename from/to`` and ``copy from/to`` with their similarity lines, ``index`` lines with or
without a mode, and C-quoted names. Refused with ``PATCH_REJECTED``: fences, prose, shell
text, ``*** Begin Patch`` wrappers, text outside a section, symlinks and submodules; binary
patches get ``PATCH_BINARY_UNSUPPORTED`` (a change job only ever carries text files).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from xclaw.core.errors import ToolError

Kind = Literal["create", "update", "delete", "rename", "copy"]
REGULAR, EXECUTABLE = 0o100644, 0o100755
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(?: .*)?$")
_INDEX = re.compile(r"^index [0-9a-f]{1,64}\.\.[0-9a-f]{1,64}(?: ([0-7]{6}))?$")
_SIMILARITY = re.compile(r"^(?:dis)?similarity index \d{1,3}%$")
_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}
_SECTION_END = ("--- ", "@@ ", "diff --git ")


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
    """One file section. ``old_path`` is the file it reads (None: a new file), ``new_path`` the
    file it leaves (None: a deletion); modes as the patch states them (None: not stated)."""

    kind: Kind
    old_path: str | None
    new_path: str | None
    hunks: tuple[Hunk, ...] = ()
    old_mode: int | None = None
    new_mode: int | None = None

    @property
    def path(self) -> str:
        """The file the section leaves, or the one it deletes."""
        path = self.new_path if self.new_path is not None else self.old_path
        assert path is not None  # the parser never builds a section without a name
        return path

    def describe(self) -> str:
        if self.kind in ("rename", "copy"):
            return f"{self.kind} {self.old_path} -> {self.new_path}"
        return f"{self.kind} {self.path}"


def rejected(reason: str) -> ToolError:
    return ToolError(
        f"The patch was rejected: {reason}.",
        code="PATCH_REJECTED",
        hint="Send a raw canonical unified git diff (diff --git a/P b/P, --- a/P, +++ b/P, @@ "
        "hunks) with a new call id; for a small edit of an existing file use replace_text.",
        retryable=True,
    )


def binary_unsupported(path: str) -> ToolError:
    return ToolError(
        f"The patch changes {path} as a binary file, which a change job cannot carry.",
        code="PATCH_BINARY_UNSUPPORTED",
        hint="Change text files only, with @@ hunks; leave binary files as they are.",
        retryable=True,
    )


def parse_patch(text: str) -> list[FilePatch]:
    """The file sections of a git diff, in order; raises ``PATCH_REJECTED`` otherwise."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines or not lines[0].startswith("diff --git "):
        raise rejected("it must start with a 'diff --git' line (no fences, prose or wrappers)")
    files: list[FilePatch] = []
    i = 0
    while i < len(lines):
        fp, i = _file_section(lines, i)
        files.append(fp)
    return files


def _file_section(lines: list[str], i: int) -> tuple[FilePatch, int]:
    head = _Header(_header_names(lines[i], i))
    i += 1
    while i < len(lines) and not lines[i].startswith(_SECTION_END):
        if _only_blank(lines, i):
            i = len(lines)  # blank lines closing a patch that ends on a header-only section
            break
        head.read(lines[i], i)
        i += 1
    head.check_names()
    hunks: list[Hunk] = []
    if i < len(lines) and lines[i].startswith("@@ "):
        raise rejected(f"line {i + 1}: a hunk needs '--- a/P' and '+++ b/P' lines before it")
    if i < len(lines) and lines[i].startswith("--- "):
        head.check_file_lines(lines, i)
        hunks, i = _hunks(lines, i + 2, head.display())
    return head.finish(tuple(hunks)), i


def _header_names(line: str, i: int) -> tuple[str, str] | None:
    """The a/ and b/ names of a ``diff --git`` line, prefixes removed; None when unquoted names
    with spaces cannot be told apart (a rename or copy then names them in its own lines)."""
    if "\r" in line:
        raise rejected(f"line {i + 1} ends in CR: send the patch with LF line ends")
    rest = line[len("diff --git ") :]
    if rest.startswith('"'):
        first, after = _unquote(rest, i)
        if not after.startswith(" "):
            raise rejected(f"line {i + 1} is not a 'diff --git a/P b/P' header")
        second = after[1:]
        pair = first, (_unquote_whole(second, i) if second.startswith('"') else second)
    elif rest.endswith('"') and ' "' in rest:
        cut = rest.index(' "')
        pair = rest[:cut], _unquote_whole(rest[cut + 1 :], i)
    else:
        found = _split_unquoted(rest)
        if found is None:
            return None
        pair = found
    if not (pair[0].startswith("a/") and pair[1].startswith("b/")):
        raise rejected(f"line {i + 1} is not a 'diff --git a/P b/P' header")
    return pair[0][2:], pair[1][2:]


def _split_unquoted(rest: str) -> tuple[str, str] | None:
    half = (len(rest) - 1) // 2
    if len(rest) % 2 == 1 and rest[half] == " " and rest[2:half] == rest[half + 3 :]:
        return rest[:half], rest[half + 1 :]
    if rest.count(" b/") == 1:
        cut = rest.index(" b/")
        return rest[:cut], rest[cut + 1 :]
    return None


def _unquote(text: str, i: int) -> tuple[str, str]:
    """A C-quoted name as git writes it (``core.quotePath``) and the text after its quote."""
    out = bytearray()
    k = 1
    while k < len(text) and text[k] != '"':
        if text[k] != "\\":
            out += text[k].encode("utf-8")
            k += 1
        elif text[k + 1 : k + 2] in _ESCAPES:
            out.append(_ESCAPES[text[k + 1]])
            k += 2
        elif re.match(r"[0-3][0-7]{2}", text[k + 1 : k + 4]):
            out.append(int(text[k + 1 : k + 4], 8))
            k += 4
        else:
            raise rejected(f"line {i + 1} has a badly quoted file name")
    if k >= len(text):
        raise rejected(f"line {i + 1} has an unterminated quoted file name")
    try:
        return out.decode("utf-8"), text[k + 1 :]
    except UnicodeDecodeError:
        raise rejected(f"line {i + 1} names a file that is not UTF-8") from None


def _unquote_whole(text: str, i: int) -> str:
    name, after = _unquote(text, i)
    if after:
        raise rejected(f"line {i + 1} has text after a quoted file name")
    return name


def _plain_name(text: str, i: int) -> str:
    """A name on a ---/+++ or rename/copy line: quoted, or up to the tab git adds after a name
    with a space."""
    if text.startswith('"'):
        return _unquote(text, i)[0]
    return text.split("\t", 1)[0]


def _mode(text: str, i: int) -> int:
    if text in ("120000", "160000"):
        raise rejected(f"line {i + 1}: symlinks and submodules cannot be written by a patch")
    if text not in ("100644", "100755"):
        raise rejected(f"line {i + 1}: file mode {text[:10]!r} is not 100644 or 100755")
    return int(text, 8)


@dataclass(slots=True)
class _Header:
    """What a section's extended header lines say, checked as they come."""

    names: tuple[str, str] | None
    kind: Kind = "update"
    old_mode: int | None = None
    new_mode: int | None = None
    moved: dict[str, str] = field(default_factory=dict)  # "rename from" → name, ...
    seen: set[str] = field(default_factory=set)

    def read(self, line: str, i: int) -> None:
        if "\r" in line:
            raise rejected(f"line {i + 1} ends in CR: send the patch with LF line ends")
        if line == "GIT binary patch" or (
            line.startswith("Binary files ") and line.endswith(" differ")
        ):
            raise binary_unsupported(self.display())
        if _SIMILARITY.match(line):
            return
        index = _INDEX.match(line)
        if index:
            self._once("index", i)
            if index.group(1) and self.old_mode is None:
                self.old_mode = _mode(index.group(1), i)
            return
        for key in ("rename from ", "rename to ", "copy from ", "copy to "):
            if line.startswith(key):
                self._once(key, i)
                self._set_kind("rename" if key[0] == "r" else "copy", i)
                self.moved[key.strip()] = _plain_name(line[len(key) :], i)
                return
        self._mode_line(line, i)

    def _mode_line(self, line: str, i: int) -> None:
        key, _, value = line.rpartition(" ")
        if key in ("old mode", "new mode", "new file mode", "deleted file mode"):
            self._once(key, i)
            mode = _mode(value, i)
            if key == "new file mode":
                self._set_kind("create", i)
            elif key == "deleted file mode":
                self._set_kind("delete", i)
            if key in ("old mode", "deleted file mode"):
                self.old_mode = mode
            else:
                self.new_mode = mode
            return
        raise rejected(f"line {i + 1} ({line[:40]!r}) is not a git diff header line")

    def _once(self, key: str, i: int) -> None:
        if key in self.seen:
            raise rejected(f"line {i + 1} repeats '{key.strip()}'")
        self.seen.add(key)

    def _set_kind(self, kind: Kind, i: int) -> None:
        if self.kind not in ("update", kind):
            raise rejected(f"line {i + 1}: a section is one of new, deleted, renamed or copied")
        self.kind = kind

    def old_name(self) -> str | None:
        if self.kind == "create":
            return None
        moved = self.moved.get(f"{self.kind} from")
        return moved if moved is not None else (self.names[0] if self.names else None)

    def new_name(self) -> str | None:
        if self.kind == "delete":
            return None
        moved = self.moved.get(f"{self.kind} to")
        return moved if moved is not None else (self.names[1] if self.names else None)

    def display(self) -> str:
        return self.new_name() or self.old_name() or "a file"

    def check_file_lines(self, lines: list[str], i: int) -> None:
        """``--- a/OLD`` and ``+++ b/NEW`` (``/dev/null`` for a missing side) as the section
        names them."""
        if i + 1 >= len(lines) or not lines[i + 1].startswith("+++ "):
            raise rejected(f"line {i + 2} should be the '+++ b/P' line")
        old, new = self.old_name(), self.new_name()
        want_old = "/dev/null" if old is None else f"a/{old}"
        want_new = "/dev/null" if new is None else f"b/{new}"
        got_old = _plain_name(lines[i][4:], i)
        got_new = _plain_name(lines[i + 1][4:], i + 1)
        if (got_old, got_new) != (want_old, want_new):
            raise rejected(f"the ---/+++ lines of {self.display()} do not match its header")

    def finish(self, hunks: tuple[Hunk, ...]) -> FilePatch:
        old, new = self.old_name(), self.new_name()
        if self.kind == "create" and any(h.old for h in hunks):
            raise rejected(f"the new file {new} has hunks that expect old lines")
        if self.kind == "delete" and any(h.new for h in hunks):
            raise rejected(f"the deletion of {old} has hunks that leave lines")
        if ("old mode" in self.seen) != ("new mode" in self.seen):
            raise rejected(f"{self.display()}: 'old mode' and 'new mode' come as a pair")
        mode_change = "new mode" in self.seen and self.old_mode != self.new_mode
        if not hunks and self.kind == "update" and not mode_change:
            raise rejected(f"the section of {self.display()} changes nothing")
        return FilePatch(self.kind, old, new, hunks, self.old_mode, self.new_mode)

    def check_names(self) -> None:
        """Both names known and consistent: one path twice unless the section moves a file."""
        if self.kind not in ("rename", "copy"):
            if self.names is None or self.names[0] != self.names[1]:
                raise rejected(
                    "a 'diff --git a/P b/P' line must name one path twice (quote names with "
                    "spaces); a rename or copy says so in its own lines"
                )
            return
        if len(self.moved) != 2:
            raise rejected(f"a {self.kind} needs both '{self.kind} from' and '{self.kind} to'")
        if self.names is not None and self.names != (self.old_name(), self.new_name()):
            raise rejected(f"the {self.kind} lines do not match the 'diff --git' line")


def _hunks(lines: list[str], i: int, path: str) -> tuple[list[Hunk], int]:
    if i >= len(lines) or not lines[i].startswith("@@"):
        raise rejected(f"{path} has no @@ hunk")
    hunks: list[Hunk] = []
    while i < len(lines) and lines[i].startswith("@@"):
        hunk, i = _hunk_body(lines, i, path)
        hunks.append(hunk)
    if _only_blank(lines, i):
        i = len(lines)  # blank lines after the last hunk of the patch
    if i < len(lines) and not lines[i].startswith("diff --git "):
        raise rejected(f"line {i + 1} is text outside any file section")
    return hunks, i


def _only_blank(lines: list[str], i: int) -> bool:
    """Only empty lines from ``i`` on (stops at the first other one, copying nothing)."""
    return all(lines[k] == "" for k in range(i, len(lines)))


def _is_marker(line: str) -> bool:
    """``\\ No newline at end of file`` in any language: git takes a "\\ " line of 12+ bytes."""
    return line.startswith("\\ ") and len(line) >= 11


class _Sides:
    """The two sides of a hunk being read; a no-newline marker trims the line before it."""

    __slots__ = ("old", "new", "last", "trailing", "changes")

    def __init__(self) -> None:
        self.old: list[bytes] = []
        self.new: list[bytes] = []
        self.last = ""
        self.trailing = 0
        self.changes = 0

    def add(self, tag: str, body: str) -> None:
        line = body.encode("utf-8") + b"\n"
        if tag in (" ", "-"):
            self.old.append(line)
        if tag in (" ", "+"):
            self.new.append(line)
        self.trailing = self.trailing + 1 if tag == " " else 0
        self.changes += tag != " "
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
        line = lines[i] or " "  # git reads an empty line as an empty context line
        tag = line[:1]
        if tag in (" ", "-"):
            old_left -= 1
        if tag in (" ", "+"):
            new_left -= 1
        if tag in (" ", "-", "+"):
            sides.add(tag, line[1:])
        elif _is_marker(line) and sides.last:
            sides.no_newline()
        else:
            raise rejected(f"line {i + 1} does not belong to a hunk")
        i += 1
        if old_left < 0 or new_left < 0:
            raise rejected(f"a hunk of {path} has more lines than its header says")
    if i < len(lines) and _is_marker(lines[i]) and sides.last:
        sides.no_newline()
        i += 1
    if not sides.changes:
        raise rejected(f"a hunk of {path} changes no line")
    hunk = Hunk(
        int(m.group(1)), int(m.group(3)), tuple(sides.old), tuple(sides.new), sides.trailing
    )
    return hunk, i

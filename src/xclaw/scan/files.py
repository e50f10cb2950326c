"""Walking the folder without following links, within limits, and telling binaries apart by
their first bytes (never reading one whole)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

HEAD_BYTES = 8192
SKIPPED_DIRS = frozenset({".git", ".hg", ".svn"})  # VCS metadata is never installed or run

_EXECUTABLE_MAGIC = [
    (b"\x7fELF", "an ELF executable or library"),
    (b"\xfe\xed\xfa\xce", "a Mach-O binary"),
    (b"\xfe\xed\xfa\xcf", "a Mach-O binary"),
    (b"\xce\xfa\xed\xfe", "a Mach-O binary"),
    (b"\xcf\xfa\xed\xfe", "a Mach-O binary"),
    (b"\xca\xfe\xba\xbe", "a Mach-O universal binary or Java class"),
    (b"\x00asm", "a WebAssembly module"),
]
_EXECUTABLE_SUFFIXES = {
    ".so",
    ".dll",
    ".exe",
    ".dylib",
    ".node",
    ".pyd",
    ".sys",
    ".scr",
    ".msi",
    ".com",
    ".class",
    ".o",
    ".a",
    ".pyc",
    ".pyo",
    ".bin",
    ".elf",
    ".wasm",
}
_ARCHIVE_MAGIC = [
    b"PK\x03\x04",
    b"\x1f\x8b",
    b"BZh",
    b"\xfd7zXZ\x00",
    b"7z\xbc\xaf\x27\x1c",
    b"Rar!\x1a\x07",
]
_MEDIA_MAGIC = [
    b"\x89PNG",
    b"\xff\xd8\xff",
    b"GIF8",
    b"%PDF",
    b"\x00\x00\x01\x00",
    b"wOFF",
    b"wOF2",
    b"\x00\x01\x00\x00",
    b"OTTO",
    b"ID3",
    b"fLaC",
    b"OggS",
    b"BM",
]


@dataclass(frozen=True)
class Entry:
    rel: str
    path: Path
    kind: str  # "file" | "symlink" | "special"
    size: int = 0
    mode: int = 0
    link_target: str = ""


def walk(root: Path) -> Iterator[Entry]:
    """Every entry under ``root`` in a stable order; directories are entered, links never."""
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        subdirs = []
        for e in entries:
            rel = PurePosixPath(Path(e.path).relative_to(root).as_posix()).as_posix()
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                yield Entry(rel, Path(e.path), "special")  # vanished or unreadable
                continue
            if stat.S_ISLNK(st.st_mode):
                try:
                    target = os.readlink(e.path)
                except OSError:
                    target = "?"
                yield Entry(rel, Path(e.path), "symlink", link_target=target)
            elif stat.S_ISDIR(st.st_mode):
                if e.name not in SKIPPED_DIRS:
                    subdirs.append(Path(e.path))
            elif stat.S_ISREG(st.st_mode):
                yield Entry(rel, Path(e.path), "file", size=st.st_size, mode=st.st_mode)
            else:
                yield Entry(rel, Path(e.path), "special")
        stack.extend(reversed(subdirs))


def link_leaves(root: Path, entry: Entry) -> bool:
    """Whether a symbolic link resolves outside ``root`` (resolved without opening it)."""
    target = Path(os.path.realpath(entry.path))
    return target != root and root not in target.parents


def read_head(path: Path) -> bytes:
    """The first bytes of a regular file, opened without following a link swapped in since."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as fh:
        return fh.read(HEAD_BYTES)


def read_text_bytes(path: Path, limit: int) -> bytes:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as fh:
        return fh.read(limit)


def looks_binary(head: bytes) -> bool:
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return False  # UTF-16 text
    return b"\x00" in head


def classify_binary(rel: str, head: bytes, mode: int) -> tuple[str, str] | None:
    """``(rule, message)`` for a binary file, or None for known media (images, fonts, pdf)."""
    suffix = PurePosixPath(rel).suffix.lower()
    for magic, what in _EXECUTABLE_MAGIC:
        if head.startswith(magic):
            return "binary.executable", f"The file is {what}; machine code cannot be reviewed."
    if head.startswith(b"MZ") or suffix in _EXECUTABLE_SUFFIXES:
        what = "compiled Python bytecode" if suffix in {".pyc", ".pyo"} else "a compiled binary"
        return (
            "binary.executable",
            f"The file is {what} ({suffix or 'MZ header'}); it cannot be reviewed as source.",
        )
    if any(head.startswith(m) for m in _ARCHIVE_MAGIC) or head[257:262] == b"ustar":
        return "binary.archive", "The file is an archive; its contents were not scanned."
    if any(head.startswith(m) for m in _MEDIA_MAGIC) or head[8:12] in {b"WEBP", b"WAVE"}:
        return None
    if mode & (stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH):
        return "binary.executable", "An executable file holds binary data and no source."
    return "binary.opaque", "A binary file of unknown type is shipped; it was not scanned."

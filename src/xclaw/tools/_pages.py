"""fs.read pages: numbered lines of one page of a text file, or the sha256 of a binary one.

Small files are read in one piece; large ones stream, decoding only the page they show.
"""

from __future__ import annotations

import codecs
import hashlib
import io
import os

LINE_CAP = 2_000  # characters kept of one line
PAGE_CAP = 64_000  # characters of numbered text in one fs.read page

_SNIFF = 8192
_WHOLE_FILE = 1 << 20  # below this, one read() + split beats streaming line by line
_PREFIXES: list[str] = []  # "     1\t", "     2\t", ... built on demand
_PREFIX_CACHE_LINES = 20_000
Page = tuple[list[str], int]  # numbered lines shown, total lines in the file


def read_page(fd: int, size: int, start: int, max_lines: int) -> Page | str:
    """Numbered lines of one page and the line count, or the sha256 of a binary file."""
    if size > _WHOLE_FILE:
        with open(fd, "rb", closefd=False) as f:
            return _stream_page(f, start, max_lines)
    data = os.read(fd, size + 1)  # a regular file reads short only at its end
    while len(data) > size and (more := os.read(fd, 1 << 16)):
        data += more  # it grew since fstat
    if b"\0" in data[:_SNIFF]:
        return hashlib.sha256(data).hexdigest()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return hashlib.sha256(data).hexdigest()
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    all_lines = text.split("\n")
    if all_lines[-1] == "":
        all_lines.pop()  # a final newline ends the last line; it does not start a new one
    return _number(all_lines[start - 1 : start - 1 + max_lines], start), len(all_lines)


def _stream_page(f: io.BufferedReader, start: int, max_lines: int) -> Page | str:
    """Large files: decode only the page, count the other lines as bytes."""
    head = f.read(_SNIFF)
    try:
        if b"\0" in head:
            raise ValueError("NUL byte")
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except ValueError:  # UnicodeDecodeError is one
        f.seek(0)
        return hashlib.file_digest(f, "sha256").hexdigest()
    f.seek(0)
    wanted: list[str] = []
    n = 0
    for raw in f:
        n += 1
        if n >= start:
            wanted.append(raw.decode("utf-8", "replace").rstrip("\r\n"))
            if len(wanted) == max_lines:
                n += _count_rest(f)
                break
    return _number(wanted, start), n


def _count_rest(f: io.BufferedReader) -> int:
    count, last = 0, b"\n"
    while chunk := f.read(1 << 20):
        count += chunk.count(b"\n")
        last = chunk[-1:]
    return count + (last != b"\n")


def _number(lines: list[str], start: int) -> list[str]:
    """Prefix line numbers; the usual page (short lines, under the cap) takes the fast path."""
    chars = sum(map(len, lines))
    fits = chars + 8 * len(lines) <= PAGE_CAP
    if fits and (chars <= LINE_CAP or max(map(len, lines)) <= LINE_CAP):
        end = start + len(lines)
        if end <= _PREFIX_CACHE_LINES:
            return [p + line for p, line in zip(_prefixes(end)[start:end], lines, strict=True)]
        return [f"{n:>6}\t{line}" for n, line in enumerate(lines, start)]
    return _number_capped(lines, start)


def _prefixes(end: int) -> list[str]:
    """Line-number prefixes, formatted once: formatting them per read was the costliest step."""
    if len(_PREFIXES) < end:
        _PREFIXES.extend(f"{n:>6}\t" for n in range(len(_PREFIXES), max(end, 1024)))
    return _PREFIXES


def _number_capped(lines: list[str], start: int) -> list[str]:
    """Cut long lines and stop once the page is full."""
    out: list[str] = []
    used = 0
    for n, line in enumerate(lines, start):
        if len(line) > LINE_CAP:
            line = f"{line[:LINE_CAP]}… [{len(line) - LINE_CAP} more characters on this line]"
        entry = f"{n:>6}\t{line}"
        used += len(entry) + 1
        if used > PAGE_CAP and out:
            break
        out.append(entry)
    return out

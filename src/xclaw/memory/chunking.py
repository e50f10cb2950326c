"""Sliding-window chunking with overlap, cut at sentence ends in Chinese and English.

Sizes are counted in approximate tokens, so a Chinese chunk and an English chunk carry about
the same amount of meaning: one CJK character counts as one token, other text as one token
per four characters (the usual BPE average). A page start is always a cut. Otherwise a window
is cut at a heading inside its second half, else at the last paragraph break, else at the last
sentence end (``。！？；`` or ``. ! ?`` followed by a space or a line break), else at the last
space, else where the budget runs out. The next window starts ``overlap`` tokens before the
cut, moved to a heading or a sentence start inside the overlap when there is one.

Every chunk keeps its character range in the document text; ``Locator`` turns that into line
numbers, the PDF page and the heading path above it (``Guide › Install › Linux``).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

DEFAULT_SIZE = 200  # approximate tokens per chunk
DEFAULT_OVERLAP = 40

# CJK ideographs, kana, hangul, fullwidth forms: one token each.
_WIDE = re.compile(r"[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\u3000-\u303f]")
# A boundary is the position just after the match.
_PARAGRAPH = re.compile(r"\n[ \t]*\n")
_SENTENCE = re.compile(r"[。！？；!?]+[」』”’）)]*|[.!?]+[\"')\]]*(?=\s)|\n")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class Span:
    """One chunk: ``text`` is ``document[start:end]`` with outer whitespace trimmed."""

    text: str
    start: int
    end: int


def token_weight(text: str) -> float:
    """Approximate token count: CJK characters count one each, other text one per four."""
    wide = len(_WIDE.findall(text))
    return wide + (len(text) - wide) / 4


def _weights(text: str) -> list[float]:
    """Cumulative token weight before each character (len(text) + 1 entries)."""
    out = [0.0]
    acc = 0.0
    for ch in text:
        acc += 1.0 if _WIDE.match(ch) else 0.25
        out.append(acc)
    return out


def _boundaries(text: str, pattern: re.Pattern[str]) -> list[int]:
    return [m.end() for m in pattern.finditer(text)]


def _last_before(points: Sequence[int], lo: int, hi: int) -> int | None:
    """The largest point p with lo < p <= hi."""
    i = bisect.bisect_right(points, hi) - 1
    if i >= 0 and points[i] > lo:
        return points[i]
    return None


def _first_after(points: Sequence[int], lo: int, hi: int) -> int | None:
    """The smallest point p with lo <= p < hi."""
    i = bisect.bisect_left(points, lo)
    if i < len(points) and points[i] < hi:
        return points[i]
    return None


class _Cutter:
    def __init__(self, text: str, sections: Sequence[int] = (), breaks: Sequence[int] = ()) -> None:
        self.text = text
        self.breaks = sorted(set(breaks))
        self.sections = sorted(set(sections) | set(breaks))
        self.cum = _weights(text)
        self.paragraphs = _boundaries(text, _PARAGRAPH)
        self.sentences = _boundaries(text, _SENTENCE)
        self.spaces = [m.start() for m in _SPACE.finditer(text)]

    def reach(self, start: int, budget: float) -> int:
        """The furthest end whose text from ``start`` weighs at most ``budget``."""
        return max(start + 1, bisect.bisect_right(self.cum, self.cum[start] + budget) - 1)

    def cut(self, start: int, limit: int) -> int:
        end = min(limit, len(self.text))
        hard = _first_after(self.breaks, start + 1, end)
        if hard is not None:
            return hard
        half = start + (end - start) // 2
        section = _last_before(self.sections, half, end - 1)
        if section is not None:
            return section
        if limit >= len(self.text):
            return len(self.text)
        for points in (self.paragraphs, self.sentences, self.spaces):
            p = _last_before(points, half, limit)
            if p is not None:
                return p
        return limit

    def next_start(self, start: int, end: int, overlap: float) -> int:
        back = bisect.bisect_left(self.cum, self.cum[end] - overlap)
        back = max(back, start + 1)
        # A section that starts inside the overlap starts the next chunk: no text of the
        # previous section is carried under a new heading.
        h = _last_before(self.sections, back - 1, end)
        if h is not None:
            return h
        # Start on a sentence when one begins inside the overlap, so no chunk opens mid-word.
        p = _first_after(self.sentences, back, end)
        return p if p is not None and p < end else back


def chunk_text(
    text: str,
    *,
    size: int = DEFAULT_SIZE,
    overlap: int = DEFAULT_OVERLAP,
    sections: Sequence[int] = (),
    breaks: Sequence[int] = (),
) -> list[Span]:
    """Split ``text`` into overlapping chunks of about ``size`` tokens each.

    ``sections`` are offsets where a section (a heading) begins: preferred cut points, and
    the overlap never reaches back across one. ``breaks`` (page starts) are always cut at.
    """
    if size <= 0 or not 0 <= overlap < size:
        raise ValueError("chunk size must be positive and overlap in [0, size)")
    cutter = _Cutter(text, sections, breaks)
    spans: list[Span] = []
    start = 0
    while start < len(text):
        end = cutter.cut(start, cutter.reach(start, size))
        piece = text[start:end]
        stripped = piece.strip()
        if stripped:
            lead = len(piece) - len(piece.lstrip())
            spans.append(Span(stripped, start + lead, start + lead + len(stripped)))
        if end >= len(text):
            break
        start = cutter.next_start(start, end, overlap)
    return spans


class Heading(NamedTuple):
    """A heading at ``offset`` of the document text: level 1-6, its HTML id if any."""

    offset: int
    text: str
    anchor: str | None = None
    level: int = 1


@dataclass(frozen=True, slots=True)
class Location:
    line_start: int | None
    line_end: int | None
    page: int | None
    heading: str | None
    anchor: str | None
    heading_path: tuple[str, ...] = ()  # outermost first, ``heading`` last


def heading_paths(headings: Sequence[Heading]) -> list[tuple[tuple[str, ...], str | None]]:
    """For each heading: its path (the enclosing headings, outermost first, then itself)
    and the anchor of the deepest heading on that path that has one."""
    stack: list[Heading] = []
    out: list[tuple[tuple[str, ...], str | None]] = []
    for h in headings:
        while stack and stack[-1].level >= h.level:
            stack.pop()
        stack.append(h)
        anchor = next((s.anchor for s in reversed(stack) if s.anchor), None)
        out.append((tuple(s.text for s in stack), anchor))
    return out


def _line_end(text: str, offset: int) -> int:
    end = text.find("\n", offset)
    return len(text) if end < 0 else end


class Locator:
    """Maps character offsets of a document's text to lines, pages and headings.

    ``headings`` and ``pages`` are sorted by offset; ``lines=False`` for text that does not
    follow the file's lines (extracted HTML or PDF text).
    """

    def __init__(
        self,
        text: str,
        *,
        headings: Sequence[Heading] = (),
        pages: Sequence[tuple[int, int]] = (),
        lines: bool = True,
    ) -> None:
        self._newlines = [i for i, ch in enumerate(text) if ch == "\n"] if lines else None
        self._heading_at = [h.offset for h in headings]
        self._paths = heading_paths(headings)
        # A heading directly followed by the next one (``# API`` then ``## Limits``).
        self._bare = [
            not text[_line_end(text, h.offset) : nxt.offset].strip()
            for h, nxt in zip(headings, headings[1:], strict=False)
        ]
        self._page_at = [p[0] for p in pages]
        self._pages = [p[1] for p in pages]

    def line_of(self, offset: int) -> int | None:
        if self._newlines is None:
            return None
        return bisect.bisect_left(self._newlines, offset) + 1

    def locate(self, span: Span) -> Location:
        page = None
        if self._pages:
            i = bisect.bisect_right(self._page_at, span.start) - 1
            page = self._pages[max(i, 0)]
        path: tuple[str, ...] = ()
        anchor = None
        # A heading that opens the chunk names it, as does the last one above it; headings
        # stacked at its top with no text between them name it by the innermost.
        i = bisect.bisect_right(self._heading_at, span.start + 1) - 1
        while 0 <= i < len(self._bare) and self._bare[i] and self._heading_at[i + 1] < span.end:
            i += 1
        if i >= 0:
            path, anchor = self._paths[i]
        end_line = self.line_of(max(span.start, span.end - 1))
        heading = path[-1] if path else None
        return Location(self.line_of(span.start), end_line, page, heading, anchor, path)

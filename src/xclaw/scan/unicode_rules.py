"""Hidden and bidirectional Unicode (Trojan Source, CVE-2021-42574), invisible tag and
variation-selector smuggling, and look-alike letters in identifiers.

Hand-written: the character classes are the Unicode ranges themselves; the exemptions (emoji
ZWJ sequences, subdivision flags, joiners inside Indic/Persian words) are ours to decide.
"""

from __future__ import annotations

import re
import unicodedata

from xclaw.scan.context import FileContext
from xclaw.scan.report import Severity

_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")
_TAGS = re.compile("[\U000e0000-\U000e007f]+")
_VARIATION_RUN = re.compile("[\ufe00-\ufe0f\U000e0100-\U000e01ef]{4,}")
_ZERO_WIDTH = re.compile("[\u200b-\u200f\u2060-\u2064\ufeff\u180e\u115f\u1160\u3164\uffa0]+")
_JOINERS = {"\u200c", "\u200d"}
# ZWSP, ZWNJ, ZWJ, WORD JOINER, BOM: what splits "ig\u200bnore" past a reader and a rule.
_SPLITTERS = frozenset("\u200b\u200c\u200d\u2060\ufeff")
_HIDDEN_RUN = 8  # a run this long of invisible characters encodes data, not typography

# Cyrillic and Greek letters that render like Latin ones (a subset of Unicode's confusables).
_CONFUSABLE = set("аеорсухіјѕԁɡһԛԝьАВЕКМНОРСТХІЈЅοαντρκιΑΒΕΖΗΙΚΜΝΟΡΤΥΧ")
_WORD = re.compile(r"[^\W\d_][\w]{2,}")


def scan_unicode(ctx: FileContext) -> None:
    if ctx.text.isascii():
        return
    for n, line in enumerate(ctx.lines, start=1):
        if line.isascii():
            continue
        _bidi(ctx, n, line)
        _tags(ctx, n, line)
        m = _VARIATION_RUN.search(line)
        if m:
            ctx.emit(
                "unicode.variation_smuggling",
                n,
                m.start() + 1,
                message=f"A run of {len(m.group())} variation selectors hides data.",
            )
        _zero_width(ctx, n, line)
        _homoglyphs(ctx, n, line)


def _bidi(ctx: FileContext, n: int, line: str) -> None:
    found = _BIDI.findall(line)
    if found:
        m = _BIDI.search(line)
        assert m is not None
        names = ", ".join(sorted({f"U+{ord(c):04X}" for c in found}))
        ctx.emit(
            "unicode.bidi",
            n,
            m.start() + 1,
            message=f"Bidirectional control characters ({names}) can reorder what a reader "
            "sees (Trojan Source).",
        )


def _tags(ctx: FileContext, n: int, line: str) -> None:
    for m in _TAGS.finditer(line):
        run = m.group()
        # An emoji subdivision flag: U+1F3F4, tag letters, then CANCEL TAG (U+E007F).
        if m.start() > 0 and line[m.start() - 1] == "\U0001f3f4" and run.endswith("\U000e007f"):
            continue
        hidden = "".join(chr(ord(c) - 0xE0000) for c in run if 0x20 <= ord(c) - 0xE0000 < 0x7F)
        ctx.emit(
            "unicode.tag_chars",
            n,
            m.start() + 1,
            message=f"{len(run)} invisible tag characters hide text ({hidden[:40]!r}).",
        )
        return


def _zero_width(ctx: FileContext, n: int, line: str) -> None:
    hiding, count, first, longest = False, 0, -1, 0
    for m in _ZERO_WIDTH.finditer(line):
        run = m.group()
        if m.start() == 0 and n == 1 and run == "\ufeff":
            continue  # a byte-order mark at the start of the file
        if run in _JOINERS and _joins_letters(line, m.start(), m.end()):
            continue  # emoji ZWJ sequences, joiners inside Indic or Persian words
        if run in {"\u200e", "\u200f"} and _has_rtl(line):
            continue  # direction marks in Arabic or Hebrew text
        count += len(run)
        longest = max(longest, len(run))
        if first < 0:
            first = m.start()
        if not hiding and not _SPLITTERS.isdisjoint(run):
            hiding = _splits_text(ctx, line, m)
    if count:
        ctx.emit(
            "unicode.zero_width",
            n,
            first + 1,
            severity=None if hiding or longest >= _HIDDEN_RUN else Severity.MEDIUM,
            message=_zero_width_message(count, longest, hiding),
        )


def _zero_width_message(count: int, longest: int, hiding: bool) -> str:
    what = f"{count} zero-width or invisible characters"
    if longest >= _HIDDEN_RUN:
        return f"{what} (a run of {longest} encodes hidden data)."
    if hiding:
        return f"{what} split or hide text."
    return f"{what} (at a line end or a space, in a script written without spaces, or quoted)."


def _splits_text(ctx: FileContext, line: str, m: re.Match[str]) -> bool:
    """Whether the run sits inside a word or between two visible characters ("ig\u200bnore",
    "end.\ufeffAlways"). Not: at the end of a line or beside a space (a stray paste, which
    hides nothing), a word break inside Thai, Khmer or CJK text (written without spaces), or
    a literal of invisible characters in code (text-cleaning code holds them in quotes)."""
    before = line[m.start() - 1] if m.start() else ""
    after = line[m.end()] if m.end() < len(line) else ""
    if not before.strip() or not after.strip():
        return False
    if ctx.is_code and {before, after} & {"'", '"', "`"}:
        return False
    return not all(not c.isascii() and unicodedata.category(c)[0] in "LM" for c in (before, after))


def _joins_letters(line: str, start: int, end: int) -> bool:
    if start == 0 or end >= len(line):
        return False
    before, after = line[start - 1], line[end]
    return not (before.isascii() or after.isascii()) and (
        unicodedata.category(before)[0] in "LMS" and unicodedata.category(after)[0] in "LMS"
    )


def _has_rtl(line: str) -> bool:
    return any(unicodedata.bidirectional(c) in {"R", "AL"} for c in line)


def _homoglyphs(ctx: FileContext, n: int, line: str) -> None:
    for m in _WORD.finditer(line):
        word = m.group()
        if word.isascii():
            continue
        looks = sum(c in _CONFUSABLE for c in word)
        latin = sum(c.isascii() and c.isalpha() for c in word)
        mixed = looks and latin
        all_lookalike = ctx.is_code and looks == len(word)
        if mixed or all_lookalike:
            ctx.emit(
                "unicode.homoglyph",
                n,
                m.start() + 1,
                message=f"The identifier {word!r} mixes Latin with look-alike Cyrillic or "
                f"Greek letters ({looks} of {len(word)}).",
            )
            return

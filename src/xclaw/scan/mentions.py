"""Where a line of a document sits: inside a fenced code block (a command meant to run) or in
prose, and whether that prose only names a pattern, as a reviewer's checklist does."""

from __future__ import annotations

import re

from xclaw.scan.context import FileContext

_FENCE = re.compile(r"^\s*(?:```|~~~)")
# Words that turn "curl -d $(env)" from an instruction into a description of one. Kept to
# negations and a reviewer's nouns: "for example, run ..." still reads as an instruction.
_MENTION = re.compile(
    r"\b(?:never|not|don'?t|must\s+not|avoid|refuse|flag|flags|detect|attacks?|attackers?"
    r"|malicious|malware|suspicious|patterns?)\b",
    re.IGNORECASE,
)
_PARAGRAPH_LINES = 3  # a sentence that names the pattern may have started this many lines up


def fenced_lines(ctx: FileContext) -> frozenset[int]:
    """1-based numbers of the lines inside fenced code blocks (empty for anything but docs)."""
    if not ctx.is_doc:
        return frozenset()
    inside, out = False, set()
    for n, line in enumerate(ctx.lines, start=1):
        if _FENCE.match(line):
            inside = not inside
        elif inside:
            out.add(n)
    return frozenset(out)


def is_prose_mention(
    ctx: FileContext, fenced: frozenset[int], n: int, line: str, start: int
) -> bool:
    """A document's prose that names the pattern after a negation or a reviewer's word
    ("flag", "never", "malicious"), in the same paragraph: worth a look, not a refusal."""
    if not ctx.is_doc or n in fenced:
        return False
    before = [line[:start]]
    for prev in reversed(ctx.lines[max(0, n - 1 - _PARAGRAPH_LINES) : n - 1]):
        if not prev.strip() or prev.lstrip().startswith(("#", "```", "~~~")):
            break  # the paragraph starts after a blank line, a heading or a fence
        before.append(prev)
    return any(_MENTION.search(text) for text in before)

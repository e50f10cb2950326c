"""The REMAINING protocol (seed 002 §2): each reply ends with ``REMAINING: <what is left>`` or
``REMAINING: DONE``; when a reply that acted leaves the line out, the instruction is reduced
linearly (one step per successful action), never left to be redone whole.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_LINE = re.compile(
    r"^[ \t>*_`-]*REMAINING[*_`]*[ \t]*[:：][*_`]*[ \t]*(?P<value>.*?)[ \t*_`]*$",
    re.IGNORECASE | re.MULTILINE,
)
_DONE_WORDS = frozenset({"done", "none", "nothing", "(none)", "无", "完成", "已完成", "-", ""})
# Step separators of a linear instruction: arrows, "then", sentence and list breaks.
_STEP_SPLIT = re.compile(
    r"\s*(?:->|=>|→|⇒|;|；|\n+|，?然后|，再|,?\s+and then\s+|,?\s+then\s+|(?<=\.)\s+)\s*",
    re.IGNORECASE,
)
_NUMBERING = re.compile(r"^\s*(?:\d+[.)、]|[-*•])\s*")


@dataclass(frozen=True, slots=True)
class Remaining:
    """What a reply said is left: ``value`` is None when it had no REMAINING line."""

    value: str | None

    @property
    def given(self) -> bool:
        return self.value is not None

    @property
    def done(self) -> bool:
        return self.value is not None and is_done(self.value)


def is_done(instruction: str) -> bool:
    """True when nothing is left to do."""
    return instruction.strip().strip(".。!！").strip().lower() in _DONE_WORDS


def parse_remaining(text: str) -> Remaining:
    """The last REMAINING line of a reply (models sometimes restate it; the last one counts)."""
    matches = list(_LINE.finditer(text or ""))
    if not matches:
        return Remaining(None)
    return Remaining(matches[-1].group("value").strip())


def strip_remaining(text: str) -> str:
    """The reply without its REMAINING lines."""
    return _LINE.sub("", text or "").strip()


def split_steps(instruction: str) -> list[str]:
    """A linear instruction cut into its steps, in order."""
    steps = []
    for piece in _STEP_SPLIT.split(instruction.strip()):
        step = _NUMBERING.sub("", piece).strip(" ,，.。")
        if step:
            steps.append(step)
    return steps


def join_steps(steps: list[str]) -> str:
    return " -> ".join(steps)


def reduce_heuristically(remaining: str, actions: int) -> str:
    """Drop the first ``actions`` steps: every successful action is taken to finish one step.

    Returns "" when no step is left. With no action the instruction is kept as it is.
    """
    if actions <= 0:
        return remaining
    steps = split_steps(remaining)
    return join_steps(steps[actions:])

"""What the model is sent names the project root as ``.``, never by its absolute path.

Tools report paths relative to the root, but programs do not: a traceback, ``pwd``, a started
process's ``cwd``, ``project.status``'s root. The absolute path says who the user is and where
they keep their work, and a web model (the ChatGPT page) keeps whatever it is sent. So one
``request_view`` hook rewrites every text the model receives, tool results included:
``/home/me/shop/src/app.py`` becomes ``src/app.py`` and ``/home/me/shop`` alone becomes ``.``.
The run's own records (transcript, events, what the user sees) keep the real paths.
Reasoning parts are left alone: providers sign them and check the signature.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xclaw.core.hooks import RequestView
from xclaw.core.messages import Message, Part, TextPart, ToolCallPart, ToolResult, ToolResultPart

if TYPE_CHECKING:
    from xclaw.core.state import RunState

_NAME_CHAR = r"[\w.\-]"


class RootRewriter:
    """Replaces the project root, as a whole path component, in text and JSON-like values."""

    def __init__(self, roots: Iterable[Path]) -> None:
        paths = {r for root in roots for r in (root, Path(os.path.realpath(root)))}
        # A filesystem root (/, C:\\) is in every path: nothing to hide there.
        spellings = {str(p).rstrip("/\\") for p in paths if p.parent != p}
        alternatives = "|".join(re.escape(s) for s in sorted(spellings, key=len, reverse=True))
        # Not the tail of a longer path, nor the head of a sibling (/home/me/shop-old).
        self._pattern = (
            re.compile(
                rf"(?<![\w./\\-])(?:{alternatives})"
                rf"(?:(?P<sep>[/\\])(?={_NAME_CHAR})|(?!{_NAME_CHAR}))"
            )
            if spellings
            else None
        )

    def text(self, value: str) -> str:
        if self._pattern is None:
            return value
        return self._pattern.sub(lambda m: "" if m.group("sep") else ".", value)

    def value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {k: self.value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return type(value)(self.value(v) for v in value)
        return value

    def result(self, result: ToolResult) -> ToolResult:
        return replace(
            result,
            message=self.text(result.message),
            hint=self.text(result.hint),
            data=self.value(result.data),
        )

    def part(self, part: Part) -> Part:
        match part:
            case TextPart():
                return replace(part, text=self.text(part.text))
            case ToolResultPart():
                return replace(part, result=self.result(part.result))
            case ToolCallPart():
                return replace(part, arguments=self.value(part.arguments))
            case _:
                return part  # images, and reasoning (signed by its provider)

    def message(self, message: Message) -> Message:
        parts = tuple(self.part(p) for p in message.parts)
        return message if parts == message.parts else replace(message, parts=parts)


def relative_paths_view(roots: Iterable[Path]) -> RequestView:
    """A ``request_view`` hook: every message as the model should see it. Messages never
    change once in the conversation, so each is rewritten once and remembered."""
    rewriter = RootRewriter(roots)
    seen: dict[int, tuple[Message, Message]] = {}

    def view(state: RunState, messages: Sequence[Message]) -> Sequence[Message]:
        out: list[Message] = []
        kept: dict[int, tuple[Message, Message]] = {}
        for message in messages:
            known = seen.get(id(message))
            shown = known[1] if known is not None and known[0] is message else None
            if shown is None:
                shown = rewriter.message(message)
            kept[id(message)] = (message, shown)
            out.append(shown)
        seen.clear()
        seen.update(kept)
        return out

    return view

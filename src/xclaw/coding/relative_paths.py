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
from xclaw.core.messages import (
    Message,
    Part,
    TextPart,
    ToolCallPart,
    ToolResult,
    ToolResultPart,
    starts_with,
)

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

    # Unchanged input comes back as the same object, so a message without the root (nearly
    # all of them) is neither copied nor compared field by field: this runs on every request.
    def text(self, value: str) -> str:
        if self._pattern is None or self._pattern.search(value) is None:
            return value
        return self._pattern.sub(lambda m: "" if m.group("sep") else ".", value)

    def value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            items = {k: self.value(v) for k, v in value.items()}
            same = all(items[k] is v for k, v in value.items())
            return value if same else items
        if isinstance(value, list | tuple):
            out = [self.value(v) for v in value]
            return (
                value if all(a is b for a, b in zip(out, value, strict=True)) else type(value)(out)
            )
        return value

    def result(self, result: ToolResult) -> ToolResult:
        message, hint, data = (
            self.text(result.message),
            self.text(result.hint),
            self.value(result.data),
        )
        if message is result.message and hint is result.hint and data is result.data:
            return result
        return replace(result, message=message, hint=hint, data=data)

    def part(self, part: Part) -> Part:
        match part:
            case TextPart():
                text = self.text(part.text)
                return part if text is part.text else replace(part, text=text)
            case ToolResultPart():
                result = self.result(part.result)
                return part if result is part.result else replace(part, result=result)
            case ToolCallPart():
                arguments = self.value(part.arguments)
                return part if arguments is part.arguments else replace(part, arguments=arguments)
            case _:
                return part  # images, and reasoning (signed by its provider)

    def message(self, message: Message) -> Message:
        parts = tuple(self.part(p) for p in message.parts)
        same = all(a is b for a, b in zip(parts, message.parts, strict=True))
        return message if same else replace(message, parts=parts)


def relative_paths_view(roots: Iterable[Path]) -> RequestView:
    """A ``request_view`` hook: every message as the model should see it. Messages never
    change once in the conversation, so each is rewritten once and remembered."""
    rewriter = RootRewriter(roots)
    seen: dict[int, tuple[Message, Message]] = {}
    last: list[Sequence[Message]] = [(), ()]  # the last call's messages, and its view

    def view(state: RunState, messages: Sequence[Message]) -> Sequence[Message]:
        before, shown_before = last
        # The usual call: the conversation so far, grown by a few messages
        known = len(before) if starts_with(messages, before) else 0
        out: list[Message] = list(shown_before[:known])
        for message in messages[known:]:
            hit = seen.get(id(message))
            if hit is not None and hit[0] is message:
                out.append(hit[1])
                continue
            shown = rewriter.message(message)
            seen[id(message)] = (message, shown)  # the message is held: its id stays its own
            out.append(shown)
        if len(seen) > 2 * len(messages) + 64:  # dropped by a compaction or a rollback
            current = {id(m) for m in messages}
            for key in [k for k in seen if k not in current]:
                del seen[key]
        last[:] = [list(messages), out]
        return out

    return view

"""``stop`` for every model: the answer's text is cut at the first stop sequence.

As with OpenAI's ``stop``, the sequence itself is not returned and nothing after it is either
(text or tool calls); the answer finishes with ``stop``. The model may go on writing, so the
rest of its answer is read and dropped, all but its token counts. Text that could be the
start of a stop sequence is held back until the next piece of text decides it.
"""

from __future__ import annotations

from collections.abc import Sequence

from xclaw.core.model import Finish, ModelEvent, TextDelta, ToolCallEvent, Usage

__all__ = ["MAX_STOPS", "StopCut"]

MAX_STOPS = 4  # as OpenAI allows


class StopCut:
    """Feed it a model's events; it returns the ones the client gets."""

    def __init__(self, stops: Sequence[str] = ()) -> None:
        self.stops = tuple(s for s in stops if s)
        self.cut = False
        self._held = ""

    def feed(self, event: ModelEvent) -> list[ModelEvent]:
        if not self.stops:
            return [event]
        if self.cut:
            return [event] if isinstance(event, Usage) else []
        if isinstance(event, TextDelta):
            return self._text(event.text)
        if isinstance(event, ToolCallEvent | Finish):
            return [*self.flush(), event]
        return [event]

    def flush(self) -> list[ModelEvent]:
        """What is still held back, at the end of the answer."""
        held, self._held = self._held, ""
        return [TextDelta(held)] if held else []

    def _text(self, piece: str) -> list[ModelEvent]:
        text = self._held + piece
        found = [at for stop in self.stops if (at := text.find(stop)) >= 0]
        if found:
            self.cut, self._held = True, ""
            head = text[: min(found)]
            return [TextDelta(head)] if head else []
        keep = self._partial_stop_at_end(text)
        self._held = text[len(text) - keep :]
        out = text[: len(text) - keep]
        return [TextDelta(out)] if out else []

    def _partial_stop_at_end(self, text: str) -> int:
        """The length of the longest end of ``text`` that begins a stop sequence."""
        longest = 0
        for stop in self.stops:
            for size in range(min(len(stop) - 1, len(text)), longest, -1):
                if text.endswith(stop[:size]):
                    longest = size
                    break
        return longest

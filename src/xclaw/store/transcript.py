"""The canonical transcript: messages as OpenAI Responses items, and back.

Only conversation content is recorded — never transport details (XML protocol text, DOM) and
never the system prompt or tool catalogue (those live in the session's meta).
Items: ``message`` (user/assistant), ``function_call``, ``function_call_output``,
``reasoning``. Tool names are the real ones (``fs.read``); exports map them to wire names.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic_core import from_json

from xclaw.core.messages import (
    ImagePart,
    Message,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResult,
    ToolResultPart,
)


def message_to_items(msg: Message) -> list[dict[str, Any]]:
    """One message → its Responses items (system messages are not transcript items)."""
    if msg.role == "system":
        return []
    items: list[dict[str, Any]] = []
    text_type = "output_text" if msg.role == "assistant" else "input_text"
    for part in msg.parts:
        if isinstance(part, TextPart):
            items.append(
                {
                    "type": "message",
                    "role": msg.role if msg.role != "tool" else "user",
                    "content": [{"type": text_type, "text": part.text}],
                }
            )
        elif isinstance(part, ReasoningPart):
            item: dict[str, Any] = {
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": part.text}] if part.text else [],
            }
            if part.encrypted or part.signature:
                item["encrypted_content"] = part.encrypted or part.signature
            item["provider"] = part.provider
            if part.signature:
                item["signature"] = part.signature
            if part.redacted:
                item["redacted"] = True
            items.append(item)
        elif isinstance(part, ToolCallPart):
            items.append(
                {
                    "type": "function_call",
                    "call_id": part.call_id,
                    "name": part.name,
                    "arguments": json.dumps(part.arguments, ensure_ascii=False),
                }
            )
        elif isinstance(part, ToolResultPart):
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": part.call_id,
                    "output": part.result.to_model_text(),
                }
            )
        elif isinstance(part, ImagePart):
            items.append(
                {
                    "type": "message",
                    "role": "user",
                    "content": [
                        {
                            "type": "input_image",
                            "media_type": part.media_type,
                            "bytes": len(part.data),
                        }
                    ],
                }
            )
    return items


def items_to_messages(items: Iterable[dict[str, Any]]) -> list[Message]:
    """Rebuild loop messages: consecutive assistant items form one assistant message,
    consecutive outputs one tool message, each user text one user message.

    Hot on resume (a 10,000-step session has 20,000 items): one plain loop, no helpers per item.
    """
    rebuilt = TranscriptMessages()
    rebuilt.extend(items)
    return rebuilt.messages()


class TranscriptMessages:
    """``items_to_messages`` kept up to date as items are added: ``messages()`` after any
    sequence of ``extend`` calls is ``items_to_messages`` of all their items, in order (an item
    may continue the last message: a tool output after another is the same tool message).

    What a live session keeps between its turns instead of reading its transcript again."""

    __slots__ = ("_done", "_names", "_pending", "_role", "_tail", "count")

    def __init__(self) -> None:
        self._done: list[Message] = []  # closed messages: nothing more joins them
        self._names: dict[str, str] = {}  # call id -> tool name, for the outputs
        self._pending: list[Part] = []  # the open message's parts
        self._role = ""
        self._tail: Message | None = None  # the open message, built once per change
        self.count = 0  # items seen

    def extend(self, items: Iterable[dict[str, Any]]) -> None:
        done, names, pending, role = self._done, self._names, self._pending, self._role
        tail, count = self._tail, self.count
        for item in items:
            count += 1
            item_role, part = _item_to_part(item, names)
            if part is None:
                continue
            if item_role != role or item_role == "user":
                if pending:  # the open message is complete (the same object if handed out)
                    closed = Message(role, tuple(pending)) if tail is None else tail  # type: ignore[arg-type]
                    done.append(closed)
                pending, role = [part], item_role
            else:
                pending.append(part)
            tail = None
        self._pending, self._role, self._tail, self.count = pending, role, tail, count

    def adopt(self, own: Sequence[Message]) -> int:
        """Hold the caller's own message objects where they equal the last messages here
        (aligned at the end, up to the first that differs or is already the same object);
        returns how many were taken.

        A run's messages come back from the store as new, equal objects. What reads a
        conversation once (the relative-paths view, the scan of earlier calls) knows it again
        next turn with ``starts_with``: the same objects at C speed, equal ones field by field
        and, as keys of its caches, not at all. Only an equal message is replaced, so
        ``messages()`` means what it meant."""
        taken, i = 0, len(own) - 1
        if self._pending and i >= 0:
            tail = self.messages()[-1]
            if tail is not own[i] and tail == own[i]:
                self._tail, taken = own[i], 1
            elif tail is not own[i]:
                return 0
            i -= 1
        done = self._done
        j = len(done) - 1
        while i >= 0 and j >= 0 and done[j] is not own[i] and done[j] == own[i]:
            done[j] = own[i]
            taken, i, j = taken + 1, i - 1, j - 1
        return taken

    def messages(self) -> list[Message]:
        """A new list (the caller may append to it); the messages themselves are shared."""
        if not self._pending:
            return list(self._done)
        if self._tail is None:
            self._tail = Message(self._role, tuple(self._pending))  # type: ignore[arg-type]
        return [*self._done, self._tail]


def _item_to_part(item: dict[str, Any], names: dict[str, str]) -> tuple[str, Part | None]:
    kind = item.get("type")
    if kind == "message":
        text = "".join(c.get("text", "") for c in item.get("content", []) if "text" in c)
        return str(item.get("role", "user")), TextPart(text)
    if kind == "function_call":
        names[item["call_id"]] = item["name"]
        # pydantic-core's parser: resuming a long session parses every call and result.
        args = from_json(item.get("arguments") or "{}", cache_strings="keys")
        return "assistant", ToolCallPart(item["call_id"], item["name"], args)
    if kind == "function_call_output":
        call_id = item["call_id"]
        try:
            result = ToolResult.from_dict(
                from_json(item.get("output") or "{}", cache_strings="keys")
            )
        except (ValueError, AttributeError):  # not a ToolResult's JSON: keep it as text
            result = ToolResult.success(str(item.get("output", "")))
        return "tool", ToolResultPart(call_id, names.get(call_id, ""), result)
    if kind == "reasoning":
        text = "".join(s.get("text", "") for s in item.get("summary", []))
        return "assistant", ReasoningPart(
            text,
            provider=str(item.get("provider", "")),
            signature=item.get("signature"),
            redacted=bool(item.get("redacted", False)),
            encrypted=None if item.get("signature") else item.get("encrypted_content"),
        )
    return "", None

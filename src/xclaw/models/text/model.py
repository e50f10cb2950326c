"""``TextProtocolModel``: a chat model reached as plain text, speaking the XML protocol.

Each ``respond`` sends one message and reads one reply. What to send is derived from the
conversation alone, so nothing but "has this conversation been opened" lives on the model and
a resumed run rebuilds it from its messages:

- the first message opens the conversation: the ``<agent_protocol>`` block, the system
  prompt's text (as ordinary instructions, not a fake system channel) and the task; on a resume
  it also lists the steps already taken;
- later messages carry whatever followed the last assistant message: the ``<tool_result>``s
  of a tool message, and the text of user messages (completion reminders, protocol-error
  feedback written by ``serialize_error``).

Every outbound message goes through ``with_reminder``. A valid reply becomes a ``TextDelta``
with its ``<message>`` (never raw XML) and at most one ``ToolCallEvent``; a broken one raises
``ProtocolViolation`` so the loop sends the feedback and asks again, a bounded number of times.
A transport that knows the reply's token usage (``last_usage``, as ``ChatTextTransport`` for
API models) has it reported as a ``Usage`` event.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from xclaw.core.errors import ProtocolViolation
from xclaw.core.messages import Message, ToolCallPart, ToolResultPart
from xclaw.core.model import (
    Finish,
    Model,
    ModelEvent,
    ModelRequest,
    TextDelta,
    ToolCallEvent,
    Usage,
)
from xclaw.core.tooling import ToolSpec
from xclaw.models.scripted import load_script
from xclaw.models.text.protocol import (
    ProtocolError,
    parse_reply,
    render_protocol,
    serialize_error,
    serialize_tool_result,
    with_reminder,
)
from xclaw.models.text.transport import ScriptedTransport, TextTransport, script_to_xml

_HISTORY_STEPS = 40
_HISTORY_LINE = 240


@dataclass(frozen=True, slots=True)
class HeldChat:
    """A chat a transport can reopen, and how much text it carries (``switch_chat``)."""

    url: str
    chars: int


class TextProtocolModel(Model):
    """A ``Model`` over a ``TextTransport``; see the module docstring."""

    # Generation settings it keeps (the bridge refuses the rest): the protocol allows one
    # tool call per reply, so parallel_tool_calls=false holds by itself.
    honoured_settings = frozenset({"parallel_tool_calls"})

    def __init__(
        self,
        transport: TextTransport,
        *,
        name: str = "text",
        fresh_conversation: bool = True,
        max_conversation_chars: int | None = None,
    ) -> None:
        """``fresh_conversation=False`` when the transport reattaches to a chat that already
        holds the protocol (the first message then carries only what is new).

        ``max_conversation_chars``: when the chat has carried this much text and the
        transport can ``start_conversation()``, the next message opens a new conversation
        with the protocol, the task and a summary of the steps so far (seed 000 §11), so a
        web page never grows past what it handles well."""
        self.transport = transport
        self.name = name
        self.opened = not fresh_conversation
        self.max_conversation_chars = max_conversation_chars
        self.conversation_chars = 0
        self.conversations_started = 0

    async def respond(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        outbound = self.outbound(request)
        if self._too_long(len(outbound)):
            await self.transport.start_conversation()  # type: ignore[attr-defined]
            self.opened, self.conversation_chars = False, 0
            self.conversations_started += 1
            outbound = self.outbound(request)
        reply = await self.transport.send(outbound)
        self.conversation_chars += len(outbound) + len(reply)
        self.opened = True
        identity = str(sum(1 for m in request.messages if m.role == "assistant"))
        parsed = parse_reply(reply, request.tools, identity=identity)
        if isinstance(parsed, ProtocolError):
            raise ProtocolViolation(
                parsed.message,
                code=parsed.code,
                feedback=serialize_error(parsed),
                reply_text=parsed.reply_message or reply.strip() or "(empty reply)",
            )
        if parsed.message:
            yield TextDelta(parsed.message)
        if parsed.tool_call is not None:
            yield ToolCallEvent(parsed.tool_call)
        usage = getattr(self.transport, "last_usage", None)
        if isinstance(usage, Usage):
            yield usage
        yield Finish("tool_calls" if parsed.tool_call is not None else "stop")

    def _too_long(self, adding: int) -> bool:
        limit = self.max_conversation_chars
        return (
            limit is not None
            and self.opened
            and self.conversation_chars + adding > limit
            and hasattr(self.transport, "start_conversation")
        )

    def outbound(self, request: ModelRequest) -> str:
        """The next message to send, always ending with one ``<system_reminder>``."""
        messages = request.messages
        last = _last_assistant(messages)
        new = render_new_input(messages[last + 1 :])
        if self.opened:
            return with_reminder(new or "Continue with the task.")
        return with_reminder(opening_message(request.tools, messages, last, new))

    def current_chat(self) -> HeldChat | None:
        """The open chat, for ``switch_chat`` to come back to; None when the transport cannot
        reopen chats (``conversation_url`` / ``open_conversation``) or none is open yet."""
        url = getattr(self.transport, "conversation_url", None)
        if not self.opened or not isinstance(url, str) or not url:
            return None
        if not hasattr(self.transport, "open_conversation"):
            return None
        return HeldChat(url, self.conversation_chars)

    async def switch_chat(self, chat: HeldChat | None) -> None:
        """Send the next message to ``chat`` (one server, several conversations: the bridge),
        or with None to a new chat, which opens with the protocol, the tools and the steps."""
        if chat is not None:
            await self.transport.open_conversation(chat.url)  # type: ignore[attr-defined]
            self.opened, self.conversation_chars = True, chat.chars
            return
        start = getattr(self.transport, "start_conversation", None)
        if start is not None:
            await start()
        self.opened, self.conversation_chars = False, 0

    async def aclose(self) -> None:
        close = getattr(self.transport, "aclose", None)
        if close is not None:
            await close()

    def assert_complete(self) -> None:
        """For scripted transports: every scripted reply was used."""
        check = getattr(self.transport, "assert_complete", None)
        if check is not None:
            check()


def _last_assistant(messages: Sequence[Message]) -> int:
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role == "assistant":
            return i
    return -1


def render_new_input(messages: Sequence[Message]) -> str:
    """Tool results and user text that arrived after the last reply."""
    chunks: list[str] = []
    for msg in messages:
        if msg.role == "tool":
            chunks += [serialize_tool_result(p.name, p.result) for p in msg.tool_results]
        elif msg.text.strip():
            chunks.append(msg.text.strip())
    return "\n\n".join(chunks)


def opening_message(
    tools: Sequence[ToolSpec], messages: Sequence[Message], last: int, new: str
) -> str:
    """Protocol, instructions and task; on a resume, the steps so far and the latest input."""
    first_reply = next((i for i, m in enumerate(messages) if m.role == "assistant"), len(messages))
    system = [m.text.strip() for m in messages if m.role == "system" and m.text.strip()]
    task = [m.text.strip() for m in messages[:first_reply] if m.role == "user" and m.text.strip()]
    parts = [render_protocol(tools)]
    if system:
        parts.append("Instructions for this task:\n" + "\n\n".join(system))
    parts.append("\n\n".join(task) or "(no task was given)")
    if last >= 0:
        parts.append(
            "This conversation continues an earlier session whose chat is not available. "
            "Steps taken so far:\n" + steps_so_far(messages[: last + 1], messages[last + 1 :])
        )
        if new:
            parts.append("Latest input:\n" + new)
    return "\n\n".join(parts)


def steps_so_far(messages: Sequence[Message], later: Sequence[Message] = ()) -> str:
    """One line per earlier tool call with its outcome (the most recent ones); a call whose
    result is in ``later`` (about to be sent) points there."""
    results: dict[str, ToolResultPart] = {
        p.call_id: p for m in messages if m.role == "tool" for p in m.tool_results
    }
    pending = {p.call_id for m in later for p in m.tool_results}
    lines = [
        _step_line(call, results.get(call.call_id), call.call_id in pending)
        for m in messages
        if m.role == "assistant"
        for call in m.tool_calls
    ]
    skipped = len(lines) - _HISTORY_STEPS
    head = [f"({skipped} earlier steps omitted)"] if skipped > 0 else []
    return "\n".join(head + lines[-_HISTORY_STEPS:]) or "(none)"


def _step_line(call: ToolCallPart, result: ToolResultPart | None, pending: bool) -> str:
    args = json.dumps(call.arguments, ensure_ascii=False, separators=(",", ":"), default=str)
    if result is None:
        outcome = "result below" if pending else "no result"
    else:
        outcome = ("ok: " if result.result.ok else "error: ") + " ".join(
            result.result.message.split()
        )
    line = f"- {call.name} {args} -> {outcome}"
    return line if len(line) <= _HISTORY_LINE else line[: _HISTORY_LINE - 3] + "..."


def xml_demo_model(script_path: Path) -> TextProtocolModel:
    """The demo's scripted model, answering in XML text through the real parser."""
    transport = ScriptedTransport(script_to_xml(load_script(script_path)))
    return TextProtocolModel(transport, name="scripted demo (xml protocol)")

"""OpenAI chat messages and function tools into xclaw ``Message``s and ``ToolSpec``s.

- ``system`` and ``developer`` messages become system messages; ``user`` messages user ones;
- an ``assistant`` message keeps its text and its ``tool_calls`` (arguments parsed from their
  JSON string into a mapping, as xclaw holds them);
- consecutive ``tool`` messages become one xclaw tool message (as the loop writes them), each
  result named after the call it answers and carried as a successful ``ToolResult`` whose
  message is the content: the client ran the tool, and only it knows whether it failed;
- function tools become ``ToolSpec``s with risk ``external`` (the client runs them, the bridge
  never does). ``tool_choice: "none"`` offers no tools.

Content may be a string or a list of ``text`` parts; any other part is refused (400).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, assert_never

from xclaw.bridge.errors import BridgeError
from xclaw.bridge.schema import (
    AssistantMessage,
    ChatCompletionRequest,
    ChatMessage,
    Content,
    SystemMessage,
    ToolMessage,
    UserMessage,
    WireTool,
)
from xclaw.core.messages import Message, Part, TextPart, ToolCallPart, ToolResult, ToolResultPart
from xclaw.core.model import ModelRequest
from xclaw.core.tooling import Risk, ToolSpec

__all__ = ["function_specs", "parse_arguments", "to_messages", "to_model_request", "to_tool_specs"]


def to_model_request(body: ChatCompletionRequest, settings: dict[str, Any]) -> ModelRequest:
    """``settings``: what the served model keeps of the client's (``params.model_settings``)."""
    tools = to_tool_specs(body.tools or []) if body.tool_choice != "none" else []
    return ModelRequest(to_messages(body.messages), tools, settings)


def to_tool_specs(tools: Sequence[WireTool]) -> list[ToolSpec]:
    return function_specs(
        (t.function.name, t.function.description, t.function.parameters) for t in tools
    )


def function_specs(functions: Iterable[tuple[str, str, dict[str, Any]]]) -> list[ToolSpec]:
    """(name, description, JSON schema) of each client function, as ``ToolSpec``s."""
    specs: dict[str, ToolSpec] = {}
    for name, description, schema in functions:
        if name in specs:
            raise _invalid(f"Tool {name!r} is defined twice.", "Give each tool its own name.")
        parameters = schema or {"type": "object", "properties": {}}
        if parameters.get("type", "object") != "object":
            raise _invalid(
                f"Tool {name!r} has parameters of type {parameters.get('type')!r}.",
                "Function parameters must be a JSON schema of type object.",
            )
        specs[name] = ToolSpec(name, description, parameters, False, Risk.EXTERNAL)
    return list(specs.values())


def to_messages(items: Sequence[ChatMessage]) -> list[Message]:
    out: list[Message] = []
    names: dict[str, str] = {}  # call id -> tool name, from the assistant messages seen so far
    for position, item in enumerate(items):
        where = f"messages[{position}]"
        match item:
            case SystemMessage():
                out.append(Message("system", (TextPart(_text(item.content, where)),)))
            case UserMessage():
                out.append(Message("user", (TextPart(_text(item.content, where)),)))
            case AssistantMessage():
                message = _assistant(item, where)
                names.update((call.call_id, call.name) for call in message.tool_calls)
                out.append(message)
            case ToolMessage():
                part = _tool_result(item, names, where)
                if out and out[-1].role == "tool":
                    out[-1] = Message("tool", (*out[-1].parts, part))
                else:
                    out.append(Message("tool", (part,)))
            case _:
                assert_never(item)
    return out


def _assistant(item: AssistantMessage, where: str) -> Message:
    parts: list[Part] = []
    text = _text(item.content, where) if item.content is not None else ""
    if text:
        parts.append(TextPart(text))
    for i, call in enumerate(item.tool_calls or []):
        arguments = parse_arguments(
            call.function.arguments, f"{where}.tool_calls[{i}].function.arguments"
        )
        parts.append(ToolCallPart(call.id, call.function.name, arguments))
    return Message("assistant", tuple(parts))


def _tool_result(item: ToolMessage, names: dict[str, str], where: str) -> ToolResultPart:
    name = names.get(item.tool_call_id)
    if name is None:
        raise _invalid(
            f"{where} answers tool call {item.tool_call_id!r}, which no earlier assistant "
            "message made.",
            "Send the assistant message with its tool_calls before the tool results.",
        )
    text = _text(item.content, where)
    return ToolResultPart(item.tool_call_id, name, ToolResult(ok=True, message=text))


def parse_arguments(raw: str, where: str) -> dict[str, Any]:
    """A call's JSON arguments string as a mapping; ``where`` names the field in errors."""
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = None
    if not isinstance(value, dict):
        raise _invalid(
            f"{where} is not a JSON object.",
            'Send the arguments as a JSON object in a string, e.g. "{\\"path\\": \\"a.txt\\"}".',
        )
    return value


def _text(content: Content, where: str) -> str:
    if isinstance(content, str):
        return content
    chunks: list[str] = []
    for i, part in enumerate(content):
        if part.type != "text" or part.text is None:
            raise _invalid(
                f"{where}.content[{i}] is a {part.type!r} part; the bridge accepts text only.",
                "Send content as a string or a list of {type: text, text: ...} parts.",
            )
        chunks.append(part.text)
    return "".join(chunks)


def _invalid(message: str, hint: str) -> BridgeError:
    return BridgeError(400, "BRIDGE_REQUEST_INVALID", message, hint=hint)

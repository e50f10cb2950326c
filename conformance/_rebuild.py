"""Recorded request bodies → xclaw ``ModelRequest``s, and a skeleton to compare requests by.

A recorded request was written by another client (pydantic-ai), so the rebuilt request keeps
what xclaw can express (messages, tool calls and results, reasoning, function tools, a few
settings) and says what it dropped. ``request_differences`` compares what xclaw sent with what
was recorded on that common ground: roles, texts, call ids, tool names and arguments — not on
tool-result wording (xclaw sends its own JSON envelope) or fields it never sends.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from xclaw.core.messages import (
    Message,
    Part,
    ReasoningPart,
    Role,
    TextPart,
    ToolCallPart,
    ToolResult,
    ToolResultPart,
)
from xclaw.core.model import ModelRequest
from xclaw.core.tooling import Risk, ToolSpec

__all__ = ["rebuild_request", "request_differences"]

# Request fields each rebuild understands; anything else is reported as not reproduced.
_CHAT_SETTINGS = ("temperature", "top_p", "seed", "parallel_tool_calls", "reasoning_effort")
_RESPONSES_SETTINGS = ("temperature", "top_p", "parallel_tool_calls")
_MESSAGES_SETTINGS = ("temperature", "top_p")
_HANDLED = {
    "chat_completions": {
        *("model", "messages", "tools", "stream", "stream_options"),
        *("max_tokens", "max_completion_tokens", *_CHAT_SETTINGS),
    },
    "responses": {
        *("model", "input", "instructions", "tools", "stream", "include", "store"),
        *("max_output_tokens", *_RESPONSES_SETTINGS),
    },
    "messages": {
        *("model", "messages", "system", "tools", "stream", "max_tokens", "thinking"),
        *_MESSAGES_SETTINGS,
    },
}
_ROLES: dict[str, Role] = {
    "system": "system",
    "user": "user",
    "assistant": "assistant",
    "tool": "tool",
}


class _Conversation:
    """Collects parts into messages; ``merge`` joins a part to a message of the same role."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.call_names: dict[str, str] = {}  # call id -> tool name, for results

    def add(self, role: str, parts: list[Part], *, merge: bool = False) -> None:
        if not parts:
            return
        if role not in _ROLES:
            raise ValueError(f"recorded message role {role!r} has no xclaw equivalent")
        last = self.messages[-1] if self.messages else None
        if merge and last is not None and last.role == role:
            self.messages[-1] = Message(last.role, last.parts + tuple(parts))
            return
        self.messages.append(Message(_ROLES[role], tuple(parts)))

    def call(self, call_id: str, name: str, arguments: Any) -> ToolCallPart:
        self.call_names[call_id] = name
        args = json.loads(arguments) if isinstance(arguments, str) and arguments else arguments
        return ToolCallPart(call_id, name, args if isinstance(args, dict) else {})

    def result(self, call_id: str, content: Any, *, error: bool = False) -> ToolResultPart:
        text = _text(content)
        result = ToolResult.failure("TOOL_ERROR", text) if error else ToolResult.success(text)
        return ToolResultPart(call_id, self.call_names.get(call_id, ""), result)


def _text(content: Any) -> str:
    """Text of a string, a list of text blocks, or a list of strings."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(_text(c.get("text", "") if isinstance(c, dict) else c) for c in content)
    return ""


def _spec(name: str, description: Any, parameters: Any) -> ToolSpec:
    schema = parameters if isinstance(parameters, dict) else {"type": "object", "properties": {}}
    return ToolSpec(name, description or "", schema, read_only=False, risk=Risk.READ)


def rebuild_request(api: str, body: dict[str, Any], label: str) -> tuple[ModelRequest, list[str]]:
    """The xclaw request for a recorded body, and notes on what could not be reproduced.

    ``label`` is the provider name reasoning parts carry (an adapter echoes only its own)."""
    notes = [f"field {key!r} not reproduced" for key in sorted(set(body) - _HANDLED[api])]
    conv = _Conversation()
    if api == "chat_completions":
        tools = _chat_conversation(body, conv, label, notes)
        settings = {k: body[k] for k in _CHAT_SETTINGS if k in body}
        limit = body.get("max_completion_tokens", body.get("max_tokens"))
    elif api == "responses":
        tools = _responses_conversation(body, conv, notes)
        settings = {k: body[k] for k in _RESPONSES_SETTINGS if k in body}
        limit = body.get("max_output_tokens")
        effort = (body.get("reasoning") or {}).get("effort")
        if effort:  # the rest of ``reasoning`` (summary, context) is the adapter's choice
            settings["reasoning_effort"] = effort
            notes.remove("field 'reasoning' not reproduced")
    else:
        tools = _messages_conversation(body, conv, notes)
        settings = {k: body[k] for k in _MESSAGES_SETTINGS if k in body}
        limit = body.get("max_tokens")
        budget = (body.get("thinking") or {}).get("budget_tokens")
        if budget:
            settings["thinking_budget"] = budget
    if limit is not None:
        settings["max_tokens"] = limit
    return ModelRequest(conv.messages, tools, settings), notes


# -- chat completions -----------------------------------------------------------------------


def _chat_conversation(
    body: dict[str, Any], conv: _Conversation, label: str, notes: list[str]
) -> list[ToolSpec]:
    for msg in body.get("messages", []):
        role = msg.get("role")
        if role in ("system", "developer"):
            conv.add("system", [TextPart(_text(msg.get("content")))])
        elif role == "user":
            conv.add("user", [TextPart(_text(msg.get("content")))])
        elif role == "assistant":
            parts: list[Part] = []
            thought = msg.get("reasoning_content") or msg.get("reasoning")
            if thought:
                parts.append(ReasoningPart(thought, provider=label))
            if _text(msg.get("content")):
                parts.append(TextPart(_text(msg.get("content"))))
            for call in msg.get("tool_calls") or []:
                fn = call.get("function", {})
                parts.append(conv.call(call.get("id", ""), fn.get("name", ""), fn.get("arguments")))
            conv.add("assistant", parts or [TextPart("")])
        elif role == "tool":
            result = conv.result(msg.get("tool_call_id", ""), msg.get("content"))
            conv.add("tool", [result], merge=True)
        else:
            notes.append(f"message role {role!r} not reproduced")
    tools: list[ToolSpec] = []
    for tool in body.get("tools") or []:
        fn = tool.get("function")
        if tool.get("type") == "function" and isinstance(fn, dict):
            tools.append(_spec(fn["name"], fn.get("description"), fn.get("parameters")))
        else:
            notes.append(f"tool of type {tool.get('type')!r} not reproduced")
    return tools


# -- responses ------------------------------------------------------------------------------


def _responses_conversation(
    body: dict[str, Any], conv: _Conversation, notes: list[str]
) -> list[ToolSpec]:
    if body.get("instructions"):
        conv.add("system", [TextPart(body["instructions"])])
    for item in body.get("input") or []:
        kind = item.get("type", "message")
        if kind == "message" and item.get("role") == "assistant":
            conv.add("assistant", [TextPart(_text(item.get("content")))], merge=True)
        elif kind == "message" and item.get("role") in ("system", "developer"):
            conv.add("system", [TextPart(_text(item.get("content")))])
        elif kind == "message":
            conv.add("user", [TextPart(_text(item.get("content")))])
        elif kind == "function_call":
            call = conv.call(item.get("call_id", ""), item.get("name", ""), item.get("arguments"))
            conv.add("assistant", [call], merge=True)
        elif kind == "function_call_output":
            result = conv.result(item.get("call_id", ""), item.get("output"))
            conv.add("tool", [result], merge=True)
        elif kind == "reasoning":
            conv.add("assistant", [_responses_reasoning(item)], merge=True)
        else:
            notes.append(f"input item of type {kind!r} not reproduced")
    tools: list[ToolSpec] = []
    for tool in body.get("tools") or []:
        if tool.get("type") == "function":
            tools.append(_spec(tool["name"], tool.get("description"), tool.get("parameters")))
        else:
            notes.append(f"tool of type {tool.get('type')!r} not reproduced")
    return tools


def _responses_reasoning(item: dict[str, Any]) -> ReasoningPart:
    summary = "\n\n".join(s.get("text", "") for s in item.get("summary") or [])
    text = summary or _text(item.get("content"))
    # The adapter keeps the reasoning item id in ``signature`` (see openai_responses.py).
    return ReasoningPart(
        text, provider="openai", signature=item.get("id"), encrypted=item.get("encrypted_content")
    )


# -- anthropic messages ---------------------------------------------------------------------


def _messages_conversation(
    body: dict[str, Any], conv: _Conversation, notes: list[str]
) -> list[ToolSpec]:
    if body.get("system"):
        conv.add("system", [TextPart(_text(body["system"]))])
    for msg in body.get("messages") or []:
        content = msg.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for role, part in _anthropic_parts(msg.get("role"), blocks or [], conv, notes):
            conv.add(role, [part], merge=True)
    tools: list[ToolSpec] = []
    for tool in body.get("tools") or []:
        if tool.get("type") in (None, "custom"):
            tools.append(_spec(tool["name"], tool.get("description"), tool.get("input_schema")))
        else:
            notes.append(f"tool of type {tool.get('type')!r} not reproduced")
    return tools


def _anthropic_parts(
    role: str, blocks: list[dict[str, Any]], conv: _Conversation, notes: list[str]
) -> Iterator[tuple[str, Part]]:
    """(xclaw role, part) per block: tool results live in ``tool`` messages in xclaw."""
    for block in blocks:
        kind = block.get("type")
        if kind == "text":
            yield role, TextPart(block.get("text", ""))
        elif kind == "tool_use":
            yield role, conv.call(block["id"], block["name"], block.get("input") or {})
        elif kind == "tool_result":
            error = bool(block.get("is_error"))
            yield "tool", conv.result(block["tool_use_id"], block.get("content"), error=error)
        elif kind == "thinking":
            signature = block.get("signature")
            yield role, ReasoningPart(block.get("thinking", ""), "anthropic", signature)
        elif kind == "redacted_thinking":
            data = block.get("data")
            yield role, ReasoningPart("", provider="anthropic", redacted=True, encrypted=data)
        else:
            notes.append(f"content block of type {kind!r} not reproduced")


# -- request skeletons ----------------------------------------------------------------------


def _args(arguments: Any) -> str:
    value = json.loads(arguments) if isinstance(arguments, str) and arguments else arguments
    return json.dumps(value or {}, sort_keys=True)


def _chat_skeleton(body: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for msg in body.get("messages") or []:
        role = msg.get("role")
        if role == "tool":
            out.append(f"tool result {msg.get('tool_call_id')}")
            continue
        if _text(msg.get("content")):
            out.append(f"{role} text {_text(msg.get('content'))!r}")
        if msg.get("reasoning_content") or msg.get("reasoning"):
            out.append(f"{role} reasoning")
        for call in msg.get("tool_calls") or []:
            fn = call.get("function", {})
            out.append(f"call {call.get('id')} {fn.get('name')} {_args(fn.get('arguments'))}")
    return out


def _responses_skeleton(body: dict[str, Any]) -> list[str]:
    out = [f"system text {body['instructions']!r}"] if body.get("instructions") else []
    for item in body.get("input") or []:
        kind = item.get("type", "message")
        if kind == "message":
            role = "system" if item.get("role") == "developer" else item.get("role")
            out.append(f"{role} text {_text(item.get('content'))!r}")
        elif kind == "function_call":
            out.append(f"call {item.get('call_id')} {item.get('name')} {_args(item['arguments'])}")
        elif kind == "function_call_output":
            out.append(f"tool result {item.get('call_id')}")
        else:
            out.append(f"item {kind} {item.get('id', '')}")
    return out


def _messages_skeleton(body: dict[str, Any]) -> list[str]:
    out = [f"system text {_text(body['system'])!r}"] if body.get("system") else []
    for msg in body.get("messages") or []:
        content = msg.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for block in blocks or []:
            kind = block.get("type")
            if kind == "text":
                out.append(f"{msg.get('role')} text {block.get('text')!r}")
            elif kind == "tool_use":
                out.append(f"call {block['id']} {block['name']} {_args(block.get('input'))}")
            elif kind == "tool_result":
                out.append(f"tool result {block.get('tool_use_id')}")
            elif kind == "thinking":
                out.append(f"thinking {str(block.get('signature'))[:16]}")
            else:
                out.append(f"block {kind}")
    return out


_SKELETONS = {
    "chat_completions": _chat_skeleton,
    "responses": _responses_skeleton,
    "messages": _messages_skeleton,
}


def _tool_names(api: str, body: dict[str, Any]) -> list[str]:
    names = []
    for tool in body.get("tools") or []:
        fn = tool.get("function") if api == "chat_completions" else tool
        if isinstance(fn, dict) and tool.get("type") in (None, "function", "custom"):
            names.append(str(fn.get("name")))
    return names


def _settings_view(api: str, body: dict[str, Any]) -> dict[str, Any]:
    """The sampling and limit settings a request carries, named as on the wire."""
    if api == "chat_completions":
        keys: tuple[str, ...] = ("max_tokens", "max_completion_tokens", *_CHAT_SETTINGS)
        return {k: body[k] for k in keys if k in body}
    if api == "responses":
        view = {k: body[k] for k in ("max_output_tokens", *_RESPONSES_SETTINGS) if k in body}
        effort = (body.get("reasoning") or {}).get("effort")
        return {**view, "reasoning.effort": effort} if effort else view
    return {k: body[k] for k in ("max_tokens", "thinking", *_MESSAGES_SETTINGS) if k in body}


def request_differences(api: str, recorded: dict[str, Any], sent: Any) -> list[str]:
    """Where the request xclaw sent differs from the recorded one, on common ground."""
    if not isinstance(sent, dict):
        return ["no JSON request body was sent"]
    diffs: list[str] = []
    if recorded.get("model") != sent.get("model"):
        diffs.append(f"model: recorded {recorded.get('model')!r}, sent {sent.get('model')!r}")
    if bool(recorded.get("stream")) != bool(sent.get("stream")):
        diffs.append(f"stream: recorded {recorded.get('stream')!r}, sent {sent.get('stream')!r}")
    if _tool_names(api, recorded) != _tool_names(api, sent):
        diffs.append(f"tools: recorded {_tool_names(api, recorded)}, sent {_tool_names(api, sent)}")
    want_settings, sent_settings = _settings_view(api, recorded), _settings_view(api, sent)
    if want_settings != sent_settings:
        diffs.append(f"settings: recorded {want_settings}, sent {sent_settings}")
    want, got = _SKELETONS[api](recorded), _SKELETONS[api](sent)
    for i, (a, b) in enumerate(zip(want, got, strict=False)):
        if a != b:
            diffs.append(f"conversation entry {i}: recorded {a[:90]}, sent {b[:90]}")
            break
    else:
        if len(want) != len(got):
            diffs.append(f"conversation: recorded {len(want)} entries, sent {len(got)}")
    return diffs

"""Transports carry text to a chat model and bring its reply back; nothing more.

``TextTransport`` has one required method, ``send``; a transport that holds resources may add
``async def aclose()`` and ``TextProtocolModel`` calls it when present. The ChatGPT web adapter
implements it later; ``ScriptedTransport`` is the fake that ships in the package.

``script_to_xml`` turns a native ``ScriptedModel`` script into replies written in the XML
protocol, one tool call per reply: a native turn with N calls becomes N replies, and the
turn's text and ``expect`` checks go with the first of them. A turn without calls becomes the
final ``done=true`` reply; ``raw`` turns are sent as they are.

Templates still resolve. ``{{result:ID.PATH}}`` names a native call id, which the XML protocol
does not have, so ``script_to_xml`` rewrites it to ``{{result:#N.PATH}}``: the result of the
call made in reply N (1-based). ``ScriptedTransport`` reads each ``<tool_result>`` it is sent
back into ``ToolResult.to_dict()`` form (stdout/stderr return to ``data``), so ``PATH`` means
the same as for ``ScriptedModel``. Values are escaped for where the template sits (inside
CDATA or not).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from xclaw.core.errors import ConfigError, ScriptMismatch
from xclaw.models.scripted import ScriptTurn
from xclaw.models.text.protocol_render import cdata, escape_text, render_reply
from xclaw.models.text.protocol_xml import CDATA_CLOSE, CDATA_OPEN, Node, parse_element

_NATIVE_TEMPLATE = re.compile(r"\{\{result:([A-Za-z0-9_.-]+?)\.([A-Za-z0-9_.]+)\}\}")
_REPLY_TEMPLATE = re.compile(r"\{\{result:#(\d+)\.([A-Za-z0-9_.]+)\}\}")
_RESULT_START = re.compile(r"<tool_result(?=[\s>])")
_STATUS = re.compile(r'<tool_result\b[^>]*\bstatus="(ok|error)"')


class TextTransport(Protocol):
    async def send(self, text: str) -> str:
        """Send one whole message and return the model's whole reply."""
        ...


@dataclass(frozen=True, slots=True)
class ScriptedReply:
    text: str
    expect: Mapping[str, Any] | None = None  # checks on the message that asked for this reply


class ScriptedTransport:
    """Returns scripted replies in order and records every message it was sent."""

    def __init__(self, replies: Sequence[str | ScriptedReply]) -> None:
        self.replies = [r if isinstance(r, ScriptedReply) else ScriptedReply(r) for r in replies]
        self.sent: list[str] = []
        self.position = 0
        self.results: dict[int, dict[str, Any]] = {}  # reply number -> the result it earned
        self.closed = False

    async def send(self, text: str) -> str:
        if self.sent:
            first = read_tool_results(text)
            if first:
                self.results[len(self.sent)] = first[0]
        self.sent.append(text)
        if self.position >= len(self.replies):
            raise ScriptMismatch(
                f"the script has {len(self.replies)} replies and reply {self.position + 1} "
                "was asked for",
                hint="Add replies to the script, or check why the run did not finish.",
            )
        reply = self.replies[self.position]
        self.position += 1
        if reply.expect:
            self._check(reply.expect, text)
        return _REPLY_TEMPLATE.sub(lambda m: self._quote(m, reply.text), reply.text)

    async def aclose(self) -> None:
        self.closed = True

    def assert_complete(self) -> None:
        if self.position != len(self.replies):
            raise ScriptMismatch(
                f"only {self.position} of {len(self.replies)} scripted replies were used"
            )

    def _quote(self, match: re.Match[str], text: str) -> str:
        number, path = int(match.group(1)), match.group(2)
        if number not in self.results:
            raise ScriptMismatch(f"reply {number} has no tool result to quote (yet)")
        value = str(_walk(self.results[number], path, number))
        start = match.start()
        in_cdata = text.rfind(CDATA_OPEN, 0, start) > text.rfind(CDATA_CLOSE, 0, start)
        return cdata(value)[len(CDATA_OPEN) : -len(CDATA_CLOSE)] if in_cdata else escape_text(value)

    def _check(self, expect: Mapping[str, Any], text: str) -> None:
        where = f"reply {self.position}"
        for needle in expect.get("last_contains", []):
            if needle not in text:
                raise ScriptMismatch(f"{where}: the message it answers lacks {needle!r}")
        if "last_ok" in expect:
            statuses = _STATUS.findall(text)
            if not statuses or all(s == "ok" for s in statuses) != bool(expect["last_ok"]):
                raise ScriptMismatch(f"{where}: expected tool results ok={expect['last_ok']}")
        for name in expect.get("tools_include", []):
            if name not in self.sent[0]:
                raise ScriptMismatch(f"{where}: tool {name!r} was not offered")


def _walk(value: Any, path: str, number: int) -> Any:
    for key in path.split("."):
        if isinstance(value, list) and key.isdigit() and int(key) < len(value):
            value = value[int(key)]
        elif isinstance(value, dict) and key in value:
            value = value[key]
        else:
            raise ScriptMismatch(f"the result of reply {number} has nothing at {path!r}")
    return value


def read_tool_results(text: str) -> list[dict[str, Any]]:
    """The ``<tool_result>`` blocks in an outbound message, as ``ToolResult.to_dict()``s."""
    out: list[dict[str, Any]] = []
    pos = 0
    while (found := _RESULT_START.search(text, pos)) is not None:
        parsed = parse_element(text, found.start())
        if not isinstance(parsed, tuple):
            break
        node, pos = parsed
        out.append(_result_dict(node))
    return out


def _result_dict(node: Node) -> dict[str, Any]:
    fields = {child.tag: child.value() for child in node.children}
    try:
        loaded = json.loads(fields.get("data", "{}"))
    except json.JSONDecodeError:
        loaded = {"data": fields["data"]}
    data: dict[str, Any] = loaded if isinstance(loaded, dict) else {"data": loaded}
    for stream in ("stdout", "stderr"):
        if stream in fields:
            data[stream] = fields[stream]
    out: dict[str, Any] = {
        "ok": node.attrs.get("status") == "ok",
        "message": fields.get("message", ""),
    }
    if data:
        out["data"] = data
    if "code" in node.attrs:
        out["error_code"] = node.attrs["code"]
        out["retryable"] = node.attrs.get("retryable") == "true"
    if "hint" in fields:
        out["hint"] = fields["hint"]
    return out


def script_to_xml(turns: Sequence[ScriptTurn]) -> list[ScriptedReply]:
    """A native script as XML-protocol replies (see the module docstring)."""
    numbers = _reply_numbers(turns)
    replies: list[ScriptedReply] = []
    for position, turn in enumerate(turns, start=1):

        def rewrite(value: Any, position: int = position) -> Any:
            return _rewrite(value, numbers, position)

        if turn.raw is not None:
            replies.append(ScriptedReply(rewrite(turn.raw), turn.expect))
        elif not turn.tool_calls:
            replies.append(ScriptedReply(render_reply(True, rewrite(turn.text)), turn.expect))
        for i, call in enumerate(turn.tool_calls if turn.raw is None else ()):
            text = render_reply(
                False,
                rewrite(turn.text) if i == 0 else "",
                str(call["name"]),
                rewrite(call.get("arguments") or {}),
            )
            replies.append(ScriptedReply(text, turn.expect if i == 0 else None))
    return replies


def _reply_numbers(turns: Sequence[ScriptTurn]) -> dict[str, int]:
    """Native call id (explicit, or ScriptedModel's default ``call_P_I``) -> reply number."""
    numbers: dict[str, int] = {}
    reply = 0
    for position, turn in enumerate(turns, start=1):
        if turn.raw is not None or not turn.tool_calls:
            reply += 1
            continue
        for i, call in enumerate(turn.tool_calls, start=1):
            reply += 1
            numbers[f"call_{position}_{i}"] = reply
            if call.get("id"):
                numbers[str(call["id"])] = reply
    return numbers


def _rewrite(value: Any, numbers: Mapping[str, int], position: int) -> Any:
    if isinstance(value, str):

        def swap(m: re.Match[str]) -> str:
            if m.group(1) not in numbers:
                raise ConfigError(
                    f"script turn {position} quotes the result of unknown call {m.group(1)!r}"
                )
            return f"{{{{result:#{numbers[m.group(1)]}.{m.group(2)}}}}}"

        return _NATIVE_TEMPLATE.sub(swap, value)
    if isinstance(value, list | tuple):
        return [_rewrite(v, numbers, position) for v in value]
    if isinstance(value, dict):
        return {k: _rewrite(v, numbers, position) for k, v in value.items()}
    return value

"""``parse_reply``: one assistant reply → a ``ParsedTurn`` or a structured ``ProtocolError``.

Seed 000 §5.4, in order: strip surrounding whitespace and one Markdown code fence, refuse
DTDs / entities / processing instructions, locate the single ``<agent_response>`` root, parse
it (defused, CDATA-aware), check ``done`` / ``message`` / ``xclaw_call``, look the tool up and
convert ``<args>`` by its JSON schema. Nothing runs here, and no input raises: every failure is
a ``ProtocolError`` with a stable code, a plain sentence and feedback for the model.

Text before or after the root is tolerated and reported in ``ParsedTurn.ignored_text``
(models often say a word before the XML); a call or a second root out there is an error, since
acting on it or dropping it silently would both be guesses. The call is ``<xclaw_call>``; the
seed's ``<tool_call>`` is read too (see ``protocol_render`` for why the name changed).

A reply whose closing tags were swallowed is accepted when nothing else is wrong: models that
emit a closing tag as a special token stop generating there, and the server prints nothing of
it, so the reply ends right after ``</args>``. When the reply ends with a complete tag and only
``<agent_response>`` and the call are still open, they are closed and the reply parsed as it
would have been; ``ParsedTurn.closed_tags`` names what was added. Anything still open inside
them (an argument, a CDATA section, ``<message>``) means the reply was cut, and stays an error.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from xclaw.core.messages import ToolCallPart
from xclaw.core.tooling import ToolSpec
from xclaw.models.text.protocol_args import ArgumentProblems, convert_arguments
from xclaw.models.text.protocol_render import CALL_TAG, SEED_CALL_TAG, render_tool
from xclaw.models.text.protocol_xml import Node, XmlFailure, line_col, outside_cdata, parse_element

MAX_REPLY_CHARS = 8_000_000
_FENCE = re.compile(r"\A(```|~~~)[^\n`]*\n(?P<body>.*)\n[ \t]*\1\Z", re.DOTALL)
_ROOT = re.compile(r"<agent_response(?=[\s/>])")
_TOOL_CALL = re.compile(rf"<(?:{CALL_TAG}|{SEED_CALL_TAG})(?=[\s/>])")
_CALL_TAGS = (CALL_TAG, SEED_CALL_TAG)
_CLOSABLE = frozenset({"agent_response", *_CALL_TAGS})  # may lose their closing tags
_UNSAFE = re.compile(r"<!DOCTYPE|<!ENTITY|<\?(?!xml\s[^>]*\?>)")
_Where = Callable[[int], tuple[int, int]]
_CDATA_HINT = "Put code, commands and any text with <, & or ]]> inside <![CDATA[ ... ]]>."
_RESEND = "Nothing ran. Resend your whole reply as exactly one <agent_response>."


@dataclass(frozen=True, slots=True)
class ParsedTurn:
    done: bool
    message: str
    tool_call: ToolCallPart | None = None
    ignored_text: str = ""  # text around the root, kept for diagnostics only
    closed_tags: tuple[str, ...] = ()  # closing tags the reply lacked, added by the parser

    def to_dict(self) -> dict[str, Any]:
        call = self.tool_call
        return {
            "ok": True,
            "done": self.done,
            "message": self.message,
            "tool_call": (
                {"id": call.call_id, "name": call.name, "arguments": call.arguments}
                if call
                else None
            ),
            "ignored_text": self.ignored_text,
            "closed_tags": list(self.closed_tags),
        }


@dataclass(frozen=True, slots=True)
class ProtocolError:
    code: str
    message: str
    feedback: str  # what the model should do next, sent back to it
    line: int | None = None
    column: int | None = None
    reply_message: str = ""  # the reply's <message>, when it could be read

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "ok": False,
            "code": self.code,
            "message": self.message,
            "feedback": self.feedback,
        }
        if self.line is not None:
            out["line"], out["column"] = self.line, self.column
        return out


def parse_reply(
    text: str, tools: Sequence[ToolSpec], *, identity: str = ""
) -> ParsedTurn | ProtocolError:
    """Parse one complete reply. ``identity`` names the assistant message (its position in
    the conversation) so the same reply read again yields the same tool-call id."""
    try:
        return _parse(text, tools, identity)
    except Exception as err:  # noqa: BLE001 - the contract is: no input raises
        return ProtocolError(
            "PROTOCOL_INTERNAL",
            f"The reply could not be read ({type(err).__name__}).",
            _RESEND,
        )


def unwrap_reply(text: str) -> tuple[int, str]:
    """The deterministic repairs: drop surrounding whitespace and one Markdown code fence.
    Returns where the remaining body starts in ``text``, and the body."""
    base = len(text) - len(text.lstrip())
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        inner = fenced.group("body")
        base += fenced.start("body") + len(inner) - len(inner.lstrip())
        body = inner.strip()
    return base, body


def normalize_reply(text: str) -> str:
    """The reply as its identity: unwrapped, with CRLF line ends made LF."""
    return unwrap_reply(text)[1].replace("\r\n", "\n")


def _parse(text: str, tools: Sequence[ToolSpec], identity: str) -> ParsedTurn | ProtocolError:
    if len(text) > MAX_REPLY_CHARS:
        return ProtocolError(
            "PROTOCOL_REPLY_TOO_LARGE",
            f"The reply has {len(text)} characters; the limit is {MAX_REPLY_CHARS}.",
            "Nothing ran. Send smaller steps, e.g. write a big file in several calls.",
        )
    base, body = unwrap_reply(text)

    def where(offset: int) -> tuple[int, int]:
        return line_col(text, base + offset)

    if not body:
        return ProtocolError(
            "PROTOCOL_EMPTY_REPLY", "The reply was empty.", "Reply with one <agent_response>."
        )
    unsafe = _find_unsafe(body, where)
    if unsafe is not None:
        return unsafe
    root_at = _ROOT.search(body)
    if root_at is None:
        return ProtocolError(
            "PROTOCOL_NO_ROOT",
            "The reply has no <agent_response> element.",
            f"{_RESEND} Use the format in <agent_protocol>; plain prose is not read.",
        )
    parsed = parse_element(body, root_at.start())
    closers = _swallowed_closers(parsed, body)
    if closers:
        body += "".join(f"</{tag}>" for tag in closers)
        parsed = parse_element(body, root_at.start())
    if isinstance(parsed, XmlFailure):
        return _xml_failure(parsed, where)
    root, end = parsed
    outside = "\n".join(p for p in (body[: root_at.start()].strip(), body[end:].strip()) if p)
    misplaced = _check_outside(body[end:], outside)
    if misplaced is not None:
        return misplaced
    turn = _read_turn(root, tools, outside, body.replace("\r\n", "\n"), identity)
    if closers and isinstance(turn, ParsedTurn):
        turn = replace(turn, closed_tags=closers)
    return turn


def _swallowed_closers(parsed: tuple[Node, int] | XmlFailure, body: str) -> tuple[str, ...]:
    """The closing tags to add when the reply ends right after a complete tag while only the
    root and the call are open (innermost first); () when the reply is anything else."""
    if not isinstance(parsed, XmlFailure) or parsed.unsafe or not parsed.open_tags:
        return ()
    if parsed.detail != "no element found" or not body.rstrip().endswith(">"):
        return ()
    if not set(parsed.open_tags) <= _CLOSABLE:
        return ()
    return tuple(reversed(parsed.open_tags))


def _find_unsafe(body: str, where: _Where) -> ProtocolError | None:
    for offset, part in outside_cdata(body):
        found = _UNSAFE.search(part)
        if found:
            what = found.group(0)
            line, col = where(offset + found.start())
            return ProtocolError(
                "PROTOCOL_UNSAFE_XML",
                f"The reply contains {what!r}: DTDs, entity declarations and processing "
                "instructions are refused.",
                f"{_RESEND} Leave out <!DOCTYPE>, <!ENTITY> and <?...?>; file content that "
                "contains them goes inside CDATA.",
                line,
                col,
            )
    return None


def _xml_failure(failure: XmlFailure, where: _Where) -> ProtocolError:
    line, col = where(failure.offset)
    if failure.unsafe:
        return ProtocolError(
            "PROTOCOL_UNSAFE_XML",
            f"The reply contains {failure.detail}, which is refused.",
            f"{_RESEND} Leave out DTDs, entities and processing instructions.",
            line,
            col,
        )
    return ProtocolError(
        "PROTOCOL_MALFORMED_XML",
        f"The reply is not well-formed XML: {failure.detail} at line {line}, column {col}.",
        f"{_RESEND} {_CDATA_HINT}",
        line,
        col,
    )


def _check_outside(after: str, outside: str) -> ProtocolError | None:
    if any(_ROOT.search(part) for _, part in outside_cdata(after)):
        return ProtocolError(
            "PROTOCOL_MULTIPLE_ROOTS",
            "The reply contains more than one <agent_response>.",
            "Nothing ran. Send exactly one <agent_response> per reply, with at most one "
            "tool call, and wait for its result.",
        )
    if _TOOL_CALL.search(outside):
        return ProtocolError(
            "PROTOCOL_TOOL_CALL_OUTSIDE_ROOT",
            f"A <{CALL_TAG}> appears outside <agent_response>.",
            f"{_RESEND} The tool call goes inside it.",
        )
    return None


def _problem(code: str, message: str, feedback: str, said: str = "") -> ProtocolError:
    return ProtocolError(code, message, feedback, reply_message=said)


@dataclass(slots=True)
class _Fields:
    done: list[Node]
    message: list[Node]
    calls: list[Node]


def _collect(root: Node) -> _Fields | ProtocolError:
    if root.tag != "agent_response":
        return _problem(
            "PROTOCOL_UNEXPECTED_ELEMENT",
            f"The root element is <{root.tag}>, not <agent_response>.",
            f"{_RESEND} Without namespaces or prefixes.",
        )
    fields = _Fields([], [], [])
    slots = {"done": fields.done, "message": fields.message}
    slots.update(dict.fromkeys(_CALL_TAGS, fields.calls))
    for child in root.children:
        slot = slots.get(child.tag)
        if slot is None:
            return _problem(
                "PROTOCOL_UNEXPECTED_ELEMENT",
                f"<agent_response> contains <{child.tag}>.",
                f"{_RESEND} It may contain only <done>, <message> and one <{CALL_TAG}>.",
            )
        slot.append(child)
    if root.has_text():
        return _problem(
            "PROTOCOL_UNEXPECTED_TEXT",
            "<agent_response> contains text outside its elements.",
            f"{_RESEND} Put what you want to say inside <message>.",
        )
    for name, nodes in (("done", fields.done), ("message", fields.message)):
        if len(nodes) > 1:
            return _problem(
                "PROTOCOL_DUPLICATE_ELEMENT",
                f"<{name}> appears {len(nodes)} times.",
                f"{_RESEND} Give <{name}> once.",
            )
    return fields


def _read_done(fields: _Fields, said: str) -> bool | ProtocolError:
    if not fields.done:
        return _problem(
            "PROTOCOL_MISSING_DONE",
            "<agent_response> has no <done> element.",
            f"{_RESEND} Include <done>false</done> with a tool call, or <done>true</done> "
            "with a final summary.",
            said,
        )
    node = fields.done[0]
    word = node.value().strip().lower()
    if node.children or word not in ("true", "false"):
        return _problem(
            "PROTOCOL_BAD_DONE",
            f"<done> must be true or false, not {node.value().strip()[:40]!r}.",
            f"{_RESEND} Write <done>true</done> or <done>false</done>.",
            said,
        )
    return word == "true"


def _read_message(fields: _Fields) -> str | ProtocolError:
    if not fields.message:
        return ""
    node = fields.message[0]
    if node.children:
        return _problem(
            "PROTOCOL_MESSAGE_NOT_TEXT",
            f"<message> contains the element <{node.children[0].tag}>.",
            f"{_RESEND} <message> holds text only. {_CDATA_HINT}",
        )
    return node.value().strip()


def _check_combination(done: bool, said: str, calls: list[Node]) -> ProtocolError | None:
    if len(calls) > 1:
        return _problem(
            "PROTOCOL_MULTIPLE_TOOL_CALLS",
            f"The reply has {len(calls)} <{CALL_TAG}> elements; at most one is allowed.",
            "Nothing ran. Send one tool call per reply and wait for its <tool_result> before "
            "the next.",
            said,
        )
    if done and calls:
        return _problem(
            "PROTOCOL_DONE_WITH_TOOL_CALL",
            f"done=true cannot come with a <{CALL_TAG}>.",
            "Nothing ran. If you still need the tool, send <done>false</done> with the call; "
            "finish with <done>true</done> and no tool call once its result is in.",
            said,
        )
    if not done and not calls:
        return _problem(
            "PROTOCOL_NO_TOOL_CALL",
            f"done=false, but the reply has no <{CALL_TAG}>.",
            f"Continue with one <{CALL_TAG}>, or, if the task is finished and verified, reply "
            "with <done>true</done> and a summary in <message>.",
            said,
        )
    if done and not said:
        return _problem(
            "PROTOCOL_MISSING_MESSAGE",
            "done=true needs a <message> with the summary.",
            "Reply with <done>true</done> and a <message> that lists the changes, the "
            "verification you ran and its outcome, and any local URL.",
        )
    return None


def _read_turn(
    root: Node, tools: Sequence[ToolSpec], outside: str, body: str, identity: str
) -> ParsedTurn | ProtocolError:
    fields = _collect(root)
    if isinstance(fields, ProtocolError):
        return fields
    said = _read_message(fields)
    if isinstance(said, ProtocolError):
        return said
    done = _read_done(fields, said)
    if isinstance(done, ProtocolError):
        return done
    wrong = _check_combination(done, said, fields.calls)
    if wrong is not None:
        return wrong
    if not fields.calls:
        return ParsedTurn(done, said, None, outside)
    call = _read_call(fields.calls[0], tools, said)
    if isinstance(call, ProtocolError):
        return call
    name, arguments = call
    return ParsedTurn(
        done, said, ToolCallPart(call_id(body, name, arguments, identity), name, arguments), outside
    )


def _read_call(
    node: Node, tools: Sequence[ToolSpec], said: str
) -> tuple[str, dict[str, Any]] | ProtocolError:
    name = node.attrs.get("name", "").strip()
    args = [c for c in node.children if c.tag == "args"]
    what = _call_shape_problem(node, name, len(args))
    if what:
        return _problem(
            "PROTOCOL_BAD_TOOL_CALL",
            f"The <{CALL_TAG}> {what}.",
            f'{_RESEND} Write <{CALL_TAG} name="TOOL"><args>...</args></{CALL_TAG}>, each '
            "argument an element inside <args>.",
            said,
        )
    spec = next((t for t in tools if t.name == name), None)
    if spec is None:
        names = ", ".join(t.name for t in tools) or "none"
        return _problem(
            "TOOL_NOT_FOUND",
            f"There is no tool named {name!r}.",
            f"Nothing ran. Use one of: {names}.",
            said,
        )
    try:
        arguments = convert_arguments(args[0] if args else None, spec.parameters)
    except ArgumentProblems as err:
        return _problem(
            "TOOL_ARGUMENTS_INVALID",
            f"Arguments for {name} are invalid: {'; '.join(err.problems)}.",
            "Nothing ran. Send the call again with arguments that match the tool:\n"
            + render_tool(spec),
            said,
        )
    return name, arguments


def _call_shape_problem(node: Node, name: str, args: int) -> str:
    others = [c.tag for c in node.children if c.tag != "args"]
    if not name:
        return "has no name attribute"
    if others:
        return f"contains <{others[0]}> outside <args>"
    if args > 1:
        return "has more than one <args>"
    if node.has_text():
        return "contains text outside <args>"
    return ""


def call_id(body: str, name: str, arguments: dict[str, Any], identity: str) -> str:
    """Deterministic: the same reply at the same place in a conversation gets the same id."""
    call = json.dumps(
        {"name": name, "arguments": arguments},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
        default=str,
    )
    digest = hashlib.sha256("\n\x00".join((identity, body, call)).encode("utf-8", "surrogatepass"))
    return "x" + digest.hexdigest()[:16]

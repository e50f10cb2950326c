"""Tool-call repair for native models: a call written as JSON in the reply text.

Small and local models often answer a tool-calling request with the call as text (Qwen2.5
does it by design when the server's template parser misses it). ``RepairToolCalls`` looks at
a turn that offered tools and came back with text and no native call:

- the text holds **exactly one** call, naming an offered tool with arguments that validate
  against its JSON schema, with at most a short lead-in around it: the turn becomes that
  call, with ``ToolCallPart.repaired`` set (the loop then keeps the call and not its text;
  ``tool.proposed`` events and stored ``llm_call`` steps carry ``repaired: true``);
- the text holds something call-shaped that is anything else (two calls, an unknown tool,
  invalid arguments, a call inside longer prose): ``ProtocolViolation``
  (``TOOL_CALL_AS_TEXT``), whose feedback tells the model plainly that the text was NOT
  executed and how to call a tool; the loop sends it and asks again, bounded by
  ``max_protocol_errors``;
- no call-shaped JSON at all: the turn passes unchanged (a final answer, JSON in an answer).

Call shapes read (``call_fields``): ``{"name", "arguments"|"parameters"|"args"|"input"}``,
``{"function": NAME, "parameters"|"arguments"}``, ``{"function": {"name", "arguments"}}``
(OpenAI's own item, ``type`` optional), ``{"tool"|"tool_name", ...}``, ``{"tool_calls": [...]}``,
and a list of them; ``arguments`` may itself be a JSON string. The JSON may be the whole
reply, fenced (```json), inside Qwen/Hermes ``<tool_call>...</tool_call>`` text (when the
server prints it; the closing tag may be missing) or inline in a sentence. Tool names are
matched as offered or in their wire form (``fs_read`` for ``fs.read``). JSON that is not
call-shaped counts as prose: the recorded 0.5B Qwen wrote its call and then the tool result
it expected (tests/models/fixtures/local_qwen/), and that is still one call. Nothing is
guessed: no Python-literal or half-JSON parsing, no fuzzy names.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from xclaw.core.errors import ProtocolViolation
from xclaw.core.messages import ToolCallPart
from xclaw.core.model import Finish, ModelEvent, ModelRequest, TextDelta, ToolCallEvent
from xclaw.core.tooling import ToolSpec, wire_tool_name
from xclaw.models.wrap import ModelWrapper

__all__ = ["NotExecuted", "RepairToolCalls", "find_calls", "read_text_call"]

CODE = "TOOL_CALL_AS_TEXT"
MAX_TEXT_CHARS = 200_000  # longer replies are never scanned for calls
MAX_LEAD_IN_CHARS = 400  # prose around a call beyond this makes it an example, not a call
_MAX_DECODE_ATTEMPTS = 400
_NAME_KEYS = ("name", "function", "tool", "tool_name")
_ARG_KEYS = ("arguments", "parameters", "args", "input")
# Fences and the tool-call markers models print around a call are not prose.
_MARKUP = re.compile(r"```[A-Za-z0-9_-]*|~~~[A-Za-z0-9_-]*|</?\|?tool_call\|?>|\[TOOL_CALLS\]")
_DECODER = json.JSONDecoder()


@dataclass(frozen=True, slots=True)
class NotExecuted:
    """Call-shaped text that is not one valid call: what to tell the model."""

    reason: str

    def feedback(self, tools: Sequence[ToolSpec]) -> str:
        names = ", ".join(t.name for t in tools)
        return (
            f"Your last reply was NOT executed: {self.reason} Tool calls written in the reply "
            "text are never run, so nothing ran and nothing changed. To use a tool, call it "
            "through the tool-calling interface (a function call, not text in your message), "
            "one call at a time, with arguments that match the tool's schema; you will get "
            f"its result back. Tools: {names}. If the task is finished, reply with a plain "
            "summary that contains no tool call."
        )


def find_calls(text: str) -> tuple[list[dict[str, Any]], int]:
    """Every call-shaped JSON value in ``text`` (in order) and how many characters of the
    text are neither those values nor markup around them (fences, ``<tool_call>`` tags)."""
    calls: list[dict[str, Any]] = []
    rest: list[str] = []
    pos = attempts = 0
    while pos < len(text):
        start = _next_json_start(text, pos)
        if start < 0 or attempts >= _MAX_DECODE_ATTEMPTS:
            rest.append(text[pos:])
            break
        attempts += 1
        try:
            value, end = _DECODER.raw_decode(text, start)
        except ValueError:
            rest.append(text[pos : start + 1])
            pos = start + 1
            continue
        found = _calls_in(value)
        rest.append(text[pos:start] if found else text[pos:end])
        calls += found
        pos = end
    prose = _MARKUP.sub(" ", "".join(rest))
    return calls, len("".join(prose.split()))


def _next_json_start(text: str, pos: int) -> int:
    brace, bracket = text.find("{", pos), text.find("[", pos)
    found = [i for i in (brace, bracket) if i >= 0]
    return min(found) if found else -1


def _calls_in(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, list):
        inner = [_calls_in(v) for v in value]
        return [c for group in inner for c in group] if all(inner) and inner else []
    if not isinstance(value, dict):
        return []
    if isinstance(value.get("tool_calls"), list):
        return _calls_in(value["tool_calls"])
    return [value] if call_fields(value) is not None else []


def call_fields(value: dict[str, Any]) -> tuple[str, Any] | None:
    """(name, raw arguments) when ``value`` is shaped like a tool call, else None."""
    function = value.get("function")
    if isinstance(function, dict) and isinstance(function.get("name"), str):
        return function["name"], _first_present(function, _ARG_KEYS)
    name = next((value[k] for k in _NAME_KEYS if isinstance(value.get(k), str)), None)
    if name is None or not any(k in value for k in _ARG_KEYS):
        return None
    return name, _first_present(value, _ARG_KEYS)


def _first_present(value: dict[str, Any], keys: Sequence[str]) -> Any:
    return next((value[k] for k in keys if k in value), {})


def read_text_call(
    text: str, tools: Sequence[ToolSpec], *, identity: str = ""
) -> ToolCallPart | NotExecuted | None:
    """The one valid call in ``text``; ``NotExecuted`` for call-shaped text that is not one;
    None when the text holds no call-shaped JSON (see the module docstring)."""
    if not tools or len(text) > MAX_TEXT_CHARS or ("{" not in text and "[" not in text):
        return None
    calls, prose = find_calls(text)
    if not calls:
        return None
    if len(calls) > 1:
        return NotExecuted(f"it held {len(calls)} tool calls written as JSON text.")
    fields = call_fields(calls[0])
    assert fields is not None
    name, raw = fields
    spec = _offered(name, tools)
    if spec is None:
        return NotExecuted(f"it named {name!r}, which is not a tool here.")
    if prose > MAX_LEAD_IN_CHARS:
        return NotExecuted(
            f"it held a {spec.name} call as JSON inside a longer text, and a call inside "
            "prose is only an example."
        )
    arguments = _arguments(raw)
    problems = _problems(arguments, spec)
    if problems:
        return NotExecuted(
            f"it held a {spec.name} call as JSON text whose arguments do not match the "
            f"tool ({'; '.join(problems)})."
        )
    assert isinstance(arguments, dict)
    digest = hashlib.sha256(f"{identity}\x00{text}".encode("utf-8", "surrogatepass")).hexdigest()
    return ToolCallPart(f"call_repaired_{digest[:16]}", spec.name, arguments, repaired=True)


def _offered(name: str, tools: Sequence[ToolSpec]) -> ToolSpec | None:
    wanted = name.strip()
    for spec in tools:
        if wanted in (spec.name, wire_tool_name(spec.name)):
            return spec
    return None


def _arguments(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw) if raw.strip() else {}
        except ValueError:
            return raw
    return {} if raw is None else raw


def _problems(arguments: Any, spec: ToolSpec) -> list[str]:
    if not isinstance(arguments, dict):
        return ["the arguments must be a JSON object"]
    try:
        validator = Draft202012Validator(spec.parameters)
        errors = sorted(validator.iter_errors(arguments), key=lambda e: list(e.path))
    except SchemaError:
        return []  # a schema the validator cannot read: the tool's own validation decides
    return [
        f"{'.'.join(str(p) for p in err.path) or 'arguments'}: {err.message}"[:200]
        for err in errors[:3]
    ]


class RepairToolCalls(ModelWrapper):
    """Events pass through live, except text that opens like a call (``{``, ``[``, a fence,
    a ``<tool_call>`` tag): that is held until the turn ends, so a call written as text is
    never shown as an answer first, and a bridge client can still be asked again. Prose
    streams at once. See the module docstring for what happens at the end."""

    async def respond(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        text: list[str] = []
        held: list[TextDelta] | None = [] if request.tools else None
        deciding = True  # until the reply's first characters tell prose from a call
        native = False
        finish: Finish | None = None
        async for ev in self.inner.respond(request):
            if isinstance(ev, Finish):
                finish = ev  # held: a repaired call comes before it
                continue
            if isinstance(ev, TextDelta):
                text.append(ev.text)
                if held is None:
                    yield ev
                    continue
                held.append(ev)
                if deciding:
                    start = "".join(text).lstrip()[:_OPENER_CHARS]
                    if _may_open_a_call(start):
                        deciding = len(start) < _OPENER_CHARS
                        continue
                    for delta in held:  # prose after all: stream from here on
                        yield delta
                    held = None
                continue
            if isinstance(ev, ToolCallEvent):
                native = True
            yield ev
        outcome = None if native or not text else _text_call("".join(text), request)
        if outcome is not None:  # the text was the call: it is not shown as an answer
            yield ToolCallEvent(outcome)
            finish = Finish("tool_calls")
        else:
            for delta in held or ():
                yield delta
        if finish is not None:
            yield finish


def _text_call(reply: str, request: ModelRequest) -> ToolCallPart | None:
    """The repaired call in ``reply``, None for an answer; raises for anything else."""
    if not request.tools:
        return None
    identity = str(sum(1 for m in request.messages if m.role == "assistant"))
    outcome = read_text_call(reply, request.tools, identity=identity)
    if isinstance(outcome, NotExecuted):
        raise ProtocolViolation(
            f"the reply wrote a tool call as text: {outcome.reason}",
            code=CODE,
            feedback=outcome.feedback(request.tools),
            reply_text=reply,
        )
    return outcome


_CALL_OPENERS = ("{", "[", "```", "~~~", "<tool_call", "<|tool_call", "[TOOL_CALLS]")
_OPENER_CHARS = max(len(o) for o in _CALL_OPENERS)


def _may_open_a_call(start: str) -> bool:
    """Whether a reply beginning with ``start`` may still turn out to be a call as text."""
    return not start or any(o.startswith(start) or start.startswith(o) for o in _CALL_OPENERS)

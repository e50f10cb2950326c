"""Fakes that ship in the package: ``ScriptedModel`` and ``FunctionModel``.

A script is a list of assistant turns (JSONL or YAML). Each turn has ``text`` and/or
``tool_calls`` (``{id?, name, arguments}``), or ``raw`` text for text-protocol transports, and
optional ``expect`` checks on what the model was sent:

    - expect: {last_contains: ["exit code 1"], last_ok: false, tools_include: ["fs.read"],
               history_contains: ["an earlier message"],
               system_contains: ["Relevant memories"]}
      tool_calls: [{name: fs.read, arguments: {path: src/main.js}}]

Strings may quote an earlier tool result the model has seen: ``{{result:CALL_ID.PATH}}``
(``PATH`` is dotted, e.g. ``data.detectedUrls.0``). The lookup uses only the messages handed to
the model, so a script can react to real output without seeing anything a model could not.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from xclaw.core.errors import ConfigError, ScriptMismatch
from xclaw.core.messages import Message, ToolCallPart
from xclaw.models.base import Model, ModelEvent, ModelRequest, ModelTurn, turn_events

_TEMPLATE = re.compile(r"\{\{result:([A-Za-z0-9_.-]+?)\.([A-Za-z0-9_.]+)\}\}")


@dataclass(frozen=True, slots=True)
class ScriptTurn:
    text: str = ""
    tool_calls: tuple[dict[str, Any], ...] = ()
    raw: str | None = None
    expect: dict[str, Any] | None = None
    usage: dict[str, int] | None = None

    @classmethod
    def parse(cls, item: Any, index: int) -> ScriptTurn:
        if isinstance(item, str):
            return cls(text=item)
        if not isinstance(item, dict):
            raise ConfigError(f"script turn {index} must be a mapping or a string")
        unknown = set(item) - {"text", "tool_calls", "raw", "expect", "usage"}
        if unknown:
            raise ConfigError(f"script turn {index} has unknown keys: {sorted(unknown)}")
        calls = item.get("tool_calls") or []
        for c in calls:
            if not isinstance(c, dict) or "name" not in c:
                raise ConfigError(f"script turn {index}: each tool call needs a name")
        return cls(
            text=str(item.get("text") or ""),
            tool_calls=tuple(calls),
            raw=item.get("raw"),
            expect=item.get("expect"),
            usage=item.get("usage"),
        )


def load_script(path: Path) -> list[ScriptTurn]:
    """Read a JSONL or YAML script file into turns."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise ConfigError(
            f"cannot read script {path}: {err.strerror}", hint="Check the path after 'scripted:'."
        ) from None
    try:
        if path.suffix == ".jsonl":
            items: Any = [json.loads(line) for line in text.splitlines() if line.strip()]
        else:
            items = yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as err:
        raise ConfigError(f"script {path} is not valid: {err}") from None
    if isinstance(items, dict):
        items = items.get("turns")
    if not isinstance(items, list):
        raise ConfigError(f"script {path} must be a list of turns (or a mapping with 'turns')")
    return [ScriptTurn.parse(it, i) for i, it in enumerate(items)]


class ScriptedModel(Model):
    """Plays a fixed list of assistant turns; ``assert_complete()`` checks all were used."""

    def __init__(self, turns: Sequence[ScriptTurn | dict[str, Any] | str], name: str = "scripted"):
        self.turns = [
            t if isinstance(t, ScriptTurn) else ScriptTurn.parse(t, i) for i, t in enumerate(turns)
        ]
        self.name = name
        self.position = 0
        self.requests: list[ModelRequest] = []

    @classmethod
    def from_file(cls, path: str | Path) -> ScriptedModel:
        p = Path(path)
        return cls(load_script(p), name=f"scripted:{p.name}")

    def respond(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        if self.position >= len(self.turns):
            raise ScriptMismatch(
                f"the script has {len(self.turns)} turns and a turn {self.position + 1} was asked",
                hint="Add turns to the script, or check why the run did not finish.",
            )
        turn = self.turns[self.position]
        self.position += 1
        self.requests.append(request)
        if turn.expect:
            check_expectations(turn.expect, request, self.position)
        return turn_events(self.render(turn, request.messages))

    def render(self, turn: ScriptTurn, messages: Sequence[Message]) -> ModelTurn:
        calls = tuple(
            ToolCallPart(
                str(c.get("id") or f"call_{self.position}_{i + 1}"),
                str(c["name"]),
                _substitute(c.get("arguments") or {}, messages),
            )
            for i, c in enumerate(turn.tool_calls)
        )
        text = turn.raw if turn.raw is not None else turn.text
        usage = turn.usage or {}
        return ModelTurn(
            _substitute(text, messages),
            calls,
            usage.get("input_tokens"),
            usage.get("output_tokens"),
        )

    def restore(self, messages: Sequence[Message]) -> None:
        """One script turn was consumed per recorded assistant message."""
        self.position = sum(1 for m in messages if m.role == "assistant")

    def assert_complete(self) -> None:
        if self.position != len(self.turns):
            raise ScriptMismatch(
                f"only {self.position} of {len(self.turns)} scripted turns were used"
            )


def _lookup(messages: Sequence[Message], call_id: str, path: str) -> Any:
    for msg in reversed(messages):
        for part in msg.tool_results:
            if part.call_id == call_id:
                value: Any = part.result.to_dict()
                for key in path.split("."):
                    if isinstance(value, list) and key.isdigit() and int(key) < len(value):
                        value = value[int(key)]
                    elif isinstance(value, dict) and key in value:
                        value = value[key]
                    else:
                        raise ScriptMismatch(f"result {call_id} has nothing at {path!r}")
                return value
    raise ScriptMismatch(f"the model was never shown a result for call {call_id!r}")


def _substitute(value: Any, messages: Sequence[Message]) -> Any:
    if isinstance(value, str):
        if "{{" not in value:
            return value
        return _TEMPLATE.sub(lambda m: str(_lookup(messages, m.group(1), m.group(2))), value)
    if isinstance(value, list):
        return [_substitute(v, messages) for v in value]
    if isinstance(value, dict):
        return {k: _substitute(v, messages) for k, v in value.items()}
    return value


def check_expectations(expect: dict[str, Any], request: ModelRequest, position: int) -> None:
    """Check what the model was sent against a turn's ``expect`` mapping."""
    last = request.messages[-1] if request.messages else None
    last_text = _message_text(last) if last else ""
    for needle in expect.get("last_contains", []):
        if needle not in last_text:
            raise ScriptMismatch(f"turn {position}: last message lacks {needle!r}")
    if "last_ok" in expect:
        oks = [p.result.ok for p in last.tool_results] if last else []
        if not oks or all(oks) != bool(expect["last_ok"]):
            raise ScriptMismatch(
                f"turn {position}: expected last tool results ok={expect['last_ok']}"
            )
    history = "\n".join(_message_text(m) for m in request.messages if m.role != "system")
    for needle in expect.get("history_contains", []):
        if needle not in history:
            raise ScriptMismatch(f"turn {position}: the conversation lacks {needle!r}")
    system = "\n".join(m.text for m in request.messages if m.role == "system")
    for needle in expect.get("system_contains", []):
        if needle not in system:
            raise ScriptMismatch(f"turn {position}: the system prompt lacks {needle!r}")
    names = {t.name for t in request.tools}
    for name in expect.get("tools_include", []):
        if name not in names:
            raise ScriptMismatch(f"turn {position}: tool {name!r} was not offered")


def _message_text(msg: Message) -> str:
    chunks = [msg.text]
    chunks += [p.result.to_model_text() for p in msg.tool_results]
    return "\n".join(chunks)


TurnFunction = Callable[[Sequence[Message], ModelRequest], ModelTurn | Awaitable[ModelTurn]]


class FunctionModel(Model):
    """A model whose every turn is computed by a function of the conversation (for tests)."""

    def __init__(self, fn: TurnFunction, name: str = "function") -> None:
        self.fn = fn
        self.name = name

    async def respond(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        out = self.fn(request.messages, request)
        turn = out if isinstance(out, ModelTurn) else await out
        async for ev in turn_events(turn):
            yield ev

"""Local stand-ins for the providers the docs' examples name.

A preset is pointed at a loopback fake the documented way, in the reader's
``~/.config/xclaw/models.yaml`` (a packaged preset is changed key by key there: another
``base_url``), so ``--model openai:gpt-4.1-mini`` or ``deepseek:deepseek-chat`` is spelled as
the docs spell it. The fake is tests/models' ``WireServer`` (a real HTTP server on
127.0.0.1): queued answers, or ``AnsweringServer``'s answers computed from each request.
The wire events come from the adapter tests' helpers.
"""

from __future__ import annotations

import itertools
import json
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

_MODELS_TESTS = str(Path(__file__).resolve().parents[1] / "models")
if _MODELS_TESTS not in sys.path:
    sys.path.insert(0, _MODELS_TESTS)

from test_openai_chat import call_fragment, chunk  # noqa: E402
from test_openai_responses import call_stream, text_stream, usage  # noqa: E402
from wire_server import RecordedRequest, WireServer, _Json, _Scripted, _Sse  # noqa: E402

from xclaw.models.presets import user_presets_file  # noqa: E402

__all__ = [
    "Answer",
    "AnsweringServer",
    "Events",
    "RecordedRequest",
    "WireServer",
    "call_stream",
    "chat_reply",
    "held",
    "point_presets",
    "refused",
    "responses_reply",
    "results_in",
    "text_stream",
    "usage",
]

Events = list[str | bytes | dict[str, Any]]
Answer = Events | _Scripted  # a stream's events, or any scripted answer (held, refused)


def point_presets(url: str, *names: str) -> Path:
    """Send the presets ``names`` to ``url`` in the user's models.yaml (kept: other keys)."""
    path = user_presets_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    mine = yaml.safe_load(path.read_text()) if path.exists() else {}
    for name in names:
        mine.setdefault(name, {})["base_url"] = url
    path.write_text(yaml.safe_dump(mine))
    return path


def chat_reply(text: str = "", calls: Sequence[tuple[str, dict[str, Any]]] = ()) -> Events:
    """A streamed Chat Completions answer: ``text``, then ``calls`` as (wire name, arguments)."""
    events: Events = [chunk({"role": "assistant", "content": text})]
    for index, (name, arguments) in enumerate(calls):
        fragment = call_fragment(index, id=f"call_{index}", name=name, args=json.dumps(arguments))
        events.append(chunk(fragment))
    events.append(chunk({}, "tool_calls" if calls else "stop"))
    use = {"prompt_tokens": 40, "completion_tokens": 8, "total_tokens": 48}
    events += [chunk(None, usage=use), "data: [DONE]"]
    return events


_call_ids = itertools.count(1)


def responses_reply(text: str = "", calls: Sequence[tuple[str, dict[str, Any]]] = ()) -> Events:
    """A streamed Responses API answer: ``calls`` as (wire name, arguments) when there are
    any, else ``text``. Call ids are unique, as a provider's are."""
    if not calls:
        return text_stream(text, use=usage(60, 8))
    numbered = [(next(_call_ids), name, arguments) for name, arguments in calls]
    return call_stream([(f"fc_{n}", f"call_{n}", name, [json.dumps(a)]) for n, name, a in numbered])


def results_in(request: RecordedRequest) -> int:
    """How many tool results a Responses API request sends back (the turn it is at)."""
    items = (request.body or {}).get("input") or []
    return sum(1 for item in items if item.get("type") == "function_call_output")


def refused(status: int, body: dict[str, Any], **headers: str) -> _Json:
    """An error answer: ``status`` with a JSON ``body``."""
    return _Json(status, body, {k.replace("_", "-"): v for k, v in headers.items()})


def held(events: Events) -> _Sse:
    """``events``, sent once the server's ``release()`` is called: a reply the model is still
    writing (a process can be killed while it waits for it)."""
    return _Sse(list(events), gate_after=0)


class AnsweringServer(WireServer):
    """A ``WireServer`` that answers every request with ``answer(request)``: a stream's events
    (or any scripted answer: a ``held`` stream, an error)."""

    def __init__(self, answer: Callable[[RecordedRequest], Answer]) -> None:
        super().__init__()
        self.answer = answer
        self._answering = threading.Lock()  # one answer at a time: ``answer`` may keep state

    def _next(self, request: RecordedRequest) -> _Scripted | None:
        with self._answering:
            super()._next(request)  # records it
            reply = self.answer(request)
            return _Sse(reply) if isinstance(reply, list) else reply

"""Local stand-ins for the providers the docs' examples name.

A preset is pointed at a loopback fake the documented way, in the reader's
``~/.config/xclaw/models.yaml`` (a packaged preset is changed key by key there: another
``base_url``), so ``--model openai:gpt-4.1-mini`` or ``deepseek:deepseek-chat`` is spelled as
the docs spell it. The fake is tests/models' ``WireServer`` (a real HTTP server on
127.0.0.1): queued answers, or ``AnsweringServer``'s answers computed from each request.
The wire events come from the adapter tests' helpers.
"""

from __future__ import annotations

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
from wire_server import RecordedRequest, WireServer, _Scripted, _Sse  # noqa: E402

from xclaw.models.presets import user_presets_file  # noqa: E402

__all__ = [
    "AnsweringServer",
    "Events",
    "RecordedRequest",
    "WireServer",
    "call_stream",
    "chat_reply",
    "point_presets",
    "text_stream",
    "usage",
]

Events = list[str | bytes | dict[str, Any]]


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


class AnsweringServer(WireServer):
    """A ``WireServer`` that answers every request with ``answer(request)``, a stream."""

    def __init__(self, answer: Callable[[RecordedRequest], Events]) -> None:
        super().__init__()
        self.answer = answer
        self._answering = threading.Lock()  # one answer at a time: ``answer`` may keep state

    def _next(self, request: RecordedRequest) -> _Scripted | None:
        with self._answering:
            super()._next(request)  # records it
            return _Sse(self.answer(request))

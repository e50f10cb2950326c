"""``protocol: auto``: ask a model once whether its tool channel works, and remember it.

The probe is one tiny request offering one tool (``probe.echo``) and asking for a call of it:
a reply that carries a native tool call means ``native``; text alone (a model that writes its
calls as JSON text, or a server without tool support in its template) means ``xml``. A
failed request is an error, never an answer, so nothing is cached then.

Answers live in ``<data dir>/models/protocols.json``, keyed by provider, model and base URL
(``ProbeKey``), with when they were found; ``xclaw models probe`` shows and refreshes them,
and deleting the file forgets them all.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from xclaw.core.messages import Message
from xclaw.core.model import Model, ModelRequest, TextDelta, ToolCallEvent
from xclaw.core.tooling import Risk, ToolSpec
from xclaw.dirs import data_dir

__all__ = [
    "PROBE_TOOL",
    "Detected",
    "PROBE_VALUE",
    "ProbeCache",
    "ProbeKey",
    "detect_protocol",
]

Detected = Literal["native", "xml"]

PROBE_VALUE = "xclaw-probe-4729"
PROBE_TOOL = ToolSpec(
    "probe.echo",
    "Echo a value back. Call it exactly as instructed.",
    {
        "type": "object",
        "properties": {"value": {"type": "string", "description": "The value"}},
        "required": ["value"],
        "additionalProperties": False,
    },
    True,
    Risk.READ,
)
_ASK = f"Call the tool probe.echo with value {PROBE_VALUE!r}. Do not answer in text."


@dataclass(frozen=True, slots=True)
class ProbeKey:
    provider: str
    model: str
    base_url: str

    def __str__(self) -> str:
        return f"{self.provider}:{self.model}@{self.base_url}"


async def detect_protocol(model: Model) -> tuple[Detected, dict[str, Any]]:
    """Probe ``model`` (an adapter, unwrapped by repair): its protocol and what it said."""
    calls: list[str] = []
    text: list[str] = []
    async for ev in model.respond(ModelRequest([Message.user(_ASK)], [PROBE_TOOL])):
        if isinstance(ev, ToolCallEvent):
            calls.append(ev.call.name)
        elif isinstance(ev, TextDelta):
            text.append(ev.text)
    detected: Detected = "native" if PROBE_TOOL.name in calls else "xml"
    return detected, {"tool_calls": calls, "text": "".join(text)[:200]}


class ProbeCache:
    """The probe answers on disk (see the module docstring); reads never raise."""

    def __init__(self, path: Path | None = None) -> None:
        self._path = path

    @property
    def path(self) -> Path:
        return self._path or data_dir() / "models" / "protocols.json"

    def _load(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def get(self, key: ProbeKey) -> dict[str, Any] | None:
        entry = self._load().get(str(key))
        ok = isinstance(entry, dict) and entry.get("protocol") in ("native", "xml")
        return entry if ok else None

    def put(self, key: ProbeKey, protocol: Detected, **details: Any) -> dict[str, Any]:
        entry = {"protocol": protocol, "probed_at": round(time.time()), **details}
        data = self._load()
        data[str(key)] = entry
        path = self.path
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".protocols-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(data, out, indent=1, sort_keys=True)
            os.replace(tmp, path)  # whole or not at all, also with two runs at once
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return entry

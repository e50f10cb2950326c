"""What a case's run did, gathered from its event bus (so a timed-out run still reports it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from xclaw.core.events import Event


@dataclass(slots=True)
class CaseObserver:
    """Subscribe to an agent's bus: tools the model called, their outcomes, token usage."""

    proposed: list[str] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)
    input_tokens: int | None = None
    output_tokens: int | None = None
    turns: int = 0

    def __call__(self, event: Event) -> None:
        p = event.payload
        if event.type == "tool.proposed":
            self.proposed.append(str(p.get("name", "")))
        elif event.type == "tool.completed":
            self.calls.append(
                {
                    "name": str(p.get("name", "")),
                    "ok": bool(p.get("ok")),
                    "error_code": p.get("error_code"),
                    "duration_ms": p.get("duration_ms"),
                }
            )
        elif event.type == "model.message_complete":
            self.turns += 1
            self.input_tokens = _add(self.input_tokens, p.get("input_tokens"))
            self.output_tokens = _add(self.output_tokens, p.get("output_tokens"))


def _add(total: int | None, more: Any) -> int | None:
    if isinstance(more, int):
        return (total or 0) + more
    return total

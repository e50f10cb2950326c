"""What the loop tells a durable store, as an interface (``NullRecorder`` records nothing).

Call order for one tool call: ``prepared`` → ``started`` → ``completed`` → ``results``.
Implementations must make ``started`` durable before returning when the call has side
effects: state lands before the side effect (seed 003 ch. 06, seed 000 §9.2).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from xclaw.core.messages import Message, ToolCallPart, ToolResult
from xclaw.core.tooling import PreparedCall

if TYPE_CHECKING:
    from xclaw.core.events import Event
    from xclaw.core.state import RunState, ToolCallRecord

MessageKind = Literal["user_input", "llm_call", "system_alert", "protocol"]
"""``protocol``: a transport-level exchange (a malformed reply and the request to resend).
It is traced, but never enters the canonical transcript."""


@dataclass(frozen=True, slots=True)
class PriorCall:
    """What the ledger knows about a call from an earlier process."""

    phase: str
    read_only: bool
    result: ToolResult | None


def call_key(turn: int, call_id: str) -> str:
    """Idempotency key within a session: the same id in a later turn is a new call."""
    return f"{turn}:{call_id}"


class Recorder(Protocol):
    def message(
        self,
        state: RunState,
        msg: Message,
        kind: MessageKind,
        *,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        duration_ms: float | None = None,
    ) -> None: ...

    def prior(self, key: str) -> PriorCall | None: ...

    def prepared(
        self, state: RunState, prepared: PreparedCall, *, awaiting_approval: bool
    ) -> None: ...

    def started(self, state: RunState, prepared: PreparedCall) -> None: ...

    def completed(
        self, state: RunState, call: ToolCallPart, result: ToolResult, read_only: bool
    ) -> None: ...

    def results(self, state: RunState, msg: Message, records: list[ToolCallRecord]) -> None: ...

    def before_model_call(self, state: RunState) -> None: ...

    def event(self, ev: Event) -> None: ...

    def checkpoint(self, state: RunState, data: dict[str, Any]) -> None: ...

    def finished(self, state: RunState, *, pending: dict[str, Any] | None = None) -> None:
        """The run's outcome, made durable: its last commit (the run's end ``event`` is given
        just before it; events sent afterwards are not recorded)."""
        ...

    def note(self, key: str, value: Any) -> None:
        """Keep a fact about the session (e.g. its web conversation URL) for a resume."""
        ...


class NullRecorder:
    """Records nothing: for in-memory runs and tests."""

    def message(
        self,
        state: RunState,
        msg: Message,
        kind: MessageKind,
        *,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        duration_ms: float | None = None,
    ) -> None:
        pass

    def prior(self, key: str) -> PriorCall | None:
        return None

    def prepared(self, state: RunState, prepared: PreparedCall, *, awaiting_approval: bool) -> None:
        pass

    def started(self, state: RunState, prepared: PreparedCall) -> None:
        pass

    def completed(
        self, state: RunState, call: ToolCallPart, result: ToolResult, read_only: bool
    ) -> None:
        pass

    def results(self, state: RunState, msg: Message, records: list[ToolCallRecord]) -> None:
        pass

    def before_model_call(self, state: RunState) -> None:
        pass

    def event(self, ev: Event) -> None:
        pass

    def checkpoint(self, state: RunState, data: dict[str, Any]) -> None:
        pass

    def finished(self, state: RunState, *, pending: dict[str, Any] | None = None) -> None:
        pass

    def note(self, key: str, value: Any) -> None:
        pass


NULL_RECORDER = NullRecorder()

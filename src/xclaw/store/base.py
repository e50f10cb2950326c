"""The store interface: sessions, the canonical transcript, trace steps, the tool ledger,
events and checkpoints. SQLite is the embedded implementation; PostgreSQL shares the schema.

Writes arrive as one ``WriteBatch`` per durability barrier and land in one transaction, so a
crash leaves either all of a batch or none of it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Literal

SessionState = Literal["init", "running", "paused", "success", "failed"]
StepKind = Literal["user_input", "llm_call", "tool_call", "system_alert"]
StepStatus = Literal["running", "completed", "failed"]
LedgerPhase = Literal["prepared", "started", "completed", "result_sent"]

LEDGER_ORDER: dict[str, int] = {"prepared": 0, "started": 1, "completed": 2, "result_sent": 3}


@dataclass(slots=True)
class SessionRecord:
    id: str
    root: str
    task: str
    model: str
    state: SessionState = "init"
    phase: str = "INITIALIZING"  # seed 000 §6.1 run phase
    created_at: float = 0.0
    updated_at: float = 0.0
    parent_id: str | None = None
    fork_step: str | None = None
    title: str = ""
    meta: dict[str, Any] = field(default_factory=dict)  # system prompt, settings, last reason
    pending: dict[str, Any] | None = None  # the decision a Paused session waits for
    # A child session of a multi-agent run: the session that started it, and who sent its
    # task ("user" or "agent", as in ACP). ``parent_id`` is the session a fork copied from.
    parent_session_id: str | None = None
    caller: str | None = None


@dataclass(slots=True)
class TranscriptItem:
    """One OpenAI Responses item: message / function_call / function_call_output / reasoning."""

    seq: int
    step_id: str
    turn: int
    payload: dict[str, Any]
    created_at: float


@dataclass(slots=True)
class StepRecord:
    step_id: str  # s0001, s0002, ... per session, stable across restarts
    kind: StepKind
    name: str
    status: StepStatus
    turn: int
    started_at: float
    parent_step_id: str | None = None
    ended_at: float | None = None
    input: dict[str, Any] | None = None
    output: dict[str, Any] | None = None
    error: str | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None

    @property
    def number(self) -> int:
        return int(self.step_id[1:])


@dataclass(slots=True)
class LedgerEntry:
    """Exactly-once bookkeeping for one tool call: state lands before the side effect."""

    key: str  # "<turn>:<call id>" — unique within a session
    turn: int
    call_id: str
    name: str
    arguments: dict[str, Any]
    read_only: bool
    phase: LedgerPhase
    step_id: str
    risk: str = "read"
    result: dict[str, Any] | None = None  # ToolResult.to_dict() once completed
    updated_at: float = 0.0


@dataclass(slots=True)
class EventRecord:
    seq: int
    type: str
    turn: int
    payload: dict[str, Any]
    ts: float
    call_id: str | None = None


@dataclass(slots=True)
class Checkpoint:
    """Seed 000 §11: enough to resume in a fresh model context."""

    turn: int
    created_at: float
    goal: str
    modified_files: list[str]
    verification: list[dict[str, Any]]
    open_items: list[str]


@dataclass(slots=True)
class WriteBatch:
    """Everything one durability barrier commits, in one transaction."""

    session_id: str
    create: SessionRecord | None = None
    session_updates: dict[str, Any] = field(default_factory=dict)  # SessionRecord field → value
    items: list[TranscriptItem] = field(default_factory=list)
    steps: list[StepRecord] = field(default_factory=list)  # upserted by step_id
    ledger: list[LedgerEntry] = field(default_factory=list)  # upserted by key
    events: list[EventRecord] = field(default_factory=list)
    checkpoints: list[Checkpoint] = field(default_factory=list)

    def empty(self) -> bool:
        return not (
            self.create
            or self.session_updates
            or self.items
            or self.steps
            or self.ledger
            or self.events
            or self.checkpoints
        )


@dataclass(slots=True)
class RollbackReport:
    session_id: str
    step_id: str
    removed_steps: int
    removed_items: int
    irreversible: list[LedgerEntry]  # side effects that happened and cannot be undone


class Store(ABC):
    """Durable session storage. Implementations must make ``commit`` atomic."""

    @abstractmethod
    def commit(self, batch: WriteBatch) -> None:
        """Apply the whole batch in one transaction (or none of it)."""

    @abstractmethod
    def get_session(self, session_id: str) -> SessionRecord | None: ...

    @abstractmethod
    def list_sessions(
        self,
        *,
        state: SessionState | None = None,
        root: str | None = None,
        text: str | None = None,
        limit: int = 50,
    ) -> list[SessionRecord]:
        """Newest first; ``text`` matches the task or title."""

    @abstractmethod
    def list_children(self, session_id: str) -> list[SessionRecord]:
        """Sessions whose ``parent_session_id`` is ``session_id``, oldest first."""

    @abstractmethod
    def load_items(self, session_id: str) -> list[TranscriptItem]:
        """The whole transcript in order."""

    @abstractmethod
    def list_steps(self, session_id: str) -> list[StepRecord]:
        """All steps in step order."""

    @abstractmethod
    def load_ledger(self, session_id: str) -> list[LedgerEntry]: ...

    @abstractmethod
    def list_events(self, session_id: str, *, after_seq: int = 0) -> list[EventRecord]: ...

    @abstractmethod
    def latest_checkpoint(self, session_id: str) -> Checkpoint | None: ...

    @abstractmethod
    def counters(self, session_id: str) -> tuple[int, int, int]:
        """(last step number, last transcript seq, last event seq); zeros for a new session."""

    @abstractmethod
    def rollback(self, session_id: str, step_id: str) -> RollbackReport:
        """Delete the step and everything after it (steps, transcript items, ledger rows).

        Events are kept (they are the audit log). The session becomes ``paused`` so that
        ``resume`` continues from the rewound point. Raises KeyError for an unknown step.
        """

    @abstractmethod
    def fork(self, session_id: str, step_id: str, new_session_id: str) -> SessionRecord:
        """A new session (``parent_id`` set, state ``init``) holding copies of the steps,
        items and ledger rows up to and including ``step_id``. The original is untouched."""

    def close(self) -> None:  # noqa: B027 - optional
        """Release connections."""

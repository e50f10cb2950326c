"""``SessionRecorder``: the durable ``Recorder`` over a ``Store``.

Writes are buffered in a ``WriteBatch`` and committed at durability barriers:
- before every model call (the transcript so far, results sent);
- before a call with side effects starts, and right after it completes;
- before an approval is asked (a crash while waiting means "re-approve, then run");
- when the run finishes.
Read-only calls need no barrier of their own: losing their record only means they run again.
Traces and events are redacted; the transcript is kept as the model saw it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from xclaw.core.messages import Message, ToolCallPart, ToolResult, ToolResultPart
from xclaw.core.recorder import MessageKind, PriorCall, call_key
from xclaw.core.tooling import PreparedCall, Risk
from xclaw.redact import redact, redact_json
from xclaw.store.base import (
    LEDGER_ORDER,
    Checkpoint,
    EventRecord,
    LedgerEntry,
    LedgerPhase,
    SessionRecord,
    StepKind,
    StepRecord,
    Store,
    TranscriptItem,
    WriteBatch,
)
from xclaw.store.transcript import TranscriptMessages, message_to_items

if TYPE_CHECKING:
    from xclaw.core.events import Event
    from xclaw.core.state import RunState, ToolCallRecord

_SKIPPED_EVENTS = frozenset({"model.streaming", "tool.output"})
_FINAL_STATE = {
    "completed": ("success", "COMPLETED"),
    "interrupted": ("paused", "PAUSED"),
    "failed": ("failed", "FAILED"),
}


class LiveTranscript:
    """A session's transcript as the store holds it, kept by the process writing it, so that
    its next turn need not read it all again: the messages (``items_to_messages`` of every
    item), the step of the last model item and the last turn, and the store's ``counters``
    with the session's ``created_at`` when it was last written. It stands for the store only
    while those still match: any write by anyone else adds a step, an item or an event (a
    rollback removes the highest step, and step numbers are never handed out again), and a
    session deleted and made again has another ``created_at``."""

    __slots__ = ("counters", "created_at", "llm_step", "messages", "session_id", "turn")

    def __init__(
        self,
        session: SessionRecord,
        counters: tuple[int, int, int],
        items: Sequence[TranscriptItem],
    ) -> None:
        self.session_id = session.id
        self.created_at = session.created_at
        self.counters = counters
        self.messages = TranscriptMessages()
        self.llm_step: str | None = None
        self.turn = 0
        self.add(items, counters)

    def add(self, items: Sequence[TranscriptItem], counters: tuple[int, int, int]) -> None:
        """Items just committed, and the counters the store has now."""
        if items:
            self.messages.extend(i.payload for i in items)
            self.turn = max(self.turn, max(i.turn for i in items))
            for item in reversed(items):
                if _from_model(item.payload):
                    self.llm_step = item.step_id
                    break
        self.counters = counters

    def matches(self, session: SessionRecord, counters: tuple[int, int, int]) -> bool:
        """Still the store's transcript of ``session`` (its record and counters just read)."""
        return (
            session.id == self.session_id
            and session.created_at == self.created_at
            and counters == self.counters
        )


def _from_model(payload: dict[str, Any]) -> bool:
    """An item the model produced: the steps of a continued session chain on from it."""
    return payload.get("type") in ("function_call", "reasoning") or (
        payload.get("role") == "assistant"
    )


class SessionRecorder:
    def __init__(
        self,
        store: Store,
        session: SessionRecord,
        *,
        new: bool,
        counters: tuple[int, int, int] | None = None,
        transcript: LiveTranscript | None = None,
    ) -> None:
        """``counters``: the store's, when the caller has just read them. ``transcript`` is
        kept up to date with every batch committed (and dropped when a commit fails)."""
        self.store = store
        self.session = session
        self.sid = session.id
        self.batch = WriteBatch(self.sid, create=session if new else None)
        if new:
            counters = (0, 0, 0)
        elif counters is None:
            counters = store.counters(self.sid)
        steps, items, events = counters
        self.committed = counters  # the store's counters, as far as this recorder knows
        self.transcript = transcript
        # After a rollback the numbering continues past the removed steps (never reused).
        high_water = int(session.meta.get("step_high_water", 0) or 0)
        self.step_no, self.item_seq, self.event_seq = max(steps, high_water), items, events
        self.last_step: str | None = f"s{steps:04d}" if steps else None
        self.llm_step: str | None = None
        self.tool_steps: dict[str, StepRecord] = {}  # ledger key → its tool_call step
        self.entries: dict[str, LedgerEntry] = {}  # this process's ledger rows
        self._prior: dict[str, LedgerEntry] | None = None
        self._finished = False  # the run's last commit is made (see finished)

    # -- barriers -------------------------------------------------------------------------
    def flush(self) -> None:
        if self.batch.empty():
            return
        batch, self.batch = self.batch, WriteBatch(self.sid)
        try:
            self.store.commit(batch)
        except BaseException:
            self.transcript = None  # what the store holds now is not known here
            raise
        steps, items, events = self.committed
        if batch.steps:
            steps = max(steps, max(s.number for s in batch.steps))
        if batch.items:
            items = max(items, batch.items[-1].seq)
        if batch.events:
            events = max(events, batch.events[-1].seq)
        self.committed = (steps, items, events)
        if self.transcript is not None:
            self.transcript.add(batch.items, self.committed)

    def _phase(self, phase: str) -> None:
        self.batch.session_updates["phase"] = phase

    # -- transcript and steps -------------------------------------------------------------
    def _new_step(
        self, kind: StepKind, name: str, turn: int, parent: str | None, **fields: Any
    ) -> StepRecord:
        self.step_no += 1
        now = time.time()
        step = StepRecord(
            f"s{self.step_no:04d}",
            kind,
            name,
            fields.pop("status", "completed"),
            turn,
            now,
            parent,
            fields.pop("ended_at", now),
            **fields,
        )
        self.batch.steps.append(step)
        return step

    def _items(self, msg: Message, step_id: str, turn: int) -> None:
        now = time.time()
        for payload in message_to_items(msg):
            self.item_seq += 1
            self.batch.items.append(TranscriptItem(self.item_seq, step_id, turn, payload, now))

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
        if kind == "llm_call":
            calls: list[dict[str, Any]] = [
                {"name": c.name, "arguments": c.arguments} for c in msg.tool_calls
            ]
            for call, part in zip(calls, msg.tool_calls, strict=True):
                if part.repaired:  # written as JSON text and read from there (models.repair)
                    call["repaired"] = True
            step = self._new_step(
                kind,
                self.session.model,
                state.turn,
                self.last_step,
                output=redact_json({"text": msg.text, "tool_calls": calls}),
                tokens_in=input_tokens,
                tokens_out=output_tokens,
                ended_at=time.time(),
            )
            if duration_ms is not None:
                step.started_at = step.ended_at - duration_ms / 1000  # type: ignore[operator]
            self.llm_step = step.step_id
        elif kind == "protocol":  # traced only: transport details never enter the transcript
            step = self._new_step(
                "system_alert",
                "protocol",
                state.turn,
                self.last_step,
                input={"role": msg.role, "text": redact(msg.text)},
            )
            self.last_step = step.step_id
            return
        else:
            name = "user" if kind == "user_input" else "system"
            step = self._new_step(
                kind, name, state.turn, self.last_step, input={"text": redact(msg.text)}
            )
        self._items(msg, step.step_id, state.turn)
        self.last_step = step.step_id

    # -- the ledger -------------------------------------------------------------------------
    def prior(self, key: str) -> PriorCall | None:
        if self._prior is None:
            self._prior = {e.key: e for e in self.store.load_ledger(self.sid)}
        e = self._prior.get(key)
        if e is None:
            return None
        # Adopt the row so this process's updates (completed, result_sent) continue it.
        self.entries[key] = e
        self.tool_steps.setdefault(
            key,
            StepRecord(
                e.step_id,
                "tool_call",
                e.name,
                "running",
                e.turn,
                e.updated_at,
                self.llm_step,
                None,
                redact_json({"arguments": e.arguments}),
            ),
        )
        result = ToolResult.from_dict(e.result) if e.result is not None else None
        return PriorCall(e.phase, e.read_only, result)

    def _tool_step(self, state: RunState, call: ToolCallPart, key: str) -> StepRecord:
        step = self.tool_steps.get(key)
        if step is None:
            step = self._new_step(
                "tool_call",
                call.name,
                state.turn,
                self.llm_step,
                status="running",
                ended_at=None,
                input=redact_json({"arguments": call.arguments}),
            )
            self.tool_steps[key] = step
        return step

    def _queue_step(self, step: StepRecord) -> None:
        """Upserted at the next commit, once: a step queued already is written as it is then."""
        if not any(queued is step for queued in self.batch.steps):
            self.batch.steps.append(step)

    def _ledger(self, key: str, phase: LedgerPhase, **changes: Any) -> None:
        entry = self.entries[key]
        entry.phase = phase
        entry.updated_at = time.time()
        for name, value in changes.items():
            setattr(entry, name, value)
        row = LedgerEntry(**{f: getattr(entry, f) for f in _LEDGER_FIELDS})
        batch = self.batch.ledger
        for i, queued in enumerate(batch):
            if queued.key == key:  # one row per call and commit: the one the upserts would keep
                if LEDGER_ORDER[row.phase] >= LEDGER_ORDER[queued.phase]:
                    batch[i] = row
                return
        batch.append(row)

    def prepared(self, state: RunState, prepared: PreparedCall, *, awaiting_approval: bool) -> None:
        call = prepared.call
        key = call_key(state.turn, call.call_id)
        step = self._tool_step(state, call, key)
        self.entries[key] = LedgerEntry(
            key,
            state.turn,
            call.call_id,
            call.name,
            call.arguments,
            prepared.spec.read_only,
            "prepared",
            step.step_id,
            str(prepared.spec.risk),
            None,
            time.time(),
        )
        self._ledger(key, "prepared")
        if awaiting_approval:
            self._phase("APPROVAL_REQUIRED")
            self.flush()

    def started(self, state: RunState, prepared: PreparedCall) -> None:
        key = call_key(state.turn, prepared.call.call_id)
        self._ledger(key, "started")
        # On record before it starts: a call with effects, and one that starts work of its own
        # (agents.* make child sessions: read-only for the caller's files, but a resume must
        # find the call, to continue its children rather than have the model call anew).
        if not prepared.spec.read_only or prepared.spec.risk == Risk.EXECUTE:
            self._phase("EXECUTING")
            self.flush()

    def completed(
        self, state: RunState, call: ToolCallPart, result: ToolResult, read_only: bool
    ) -> None:
        key = call_key(state.turn, call.call_id)
        self._ledger(key, "completed", result=result.to_dict())
        step = self.tool_steps[key]
        step.status = "completed" if result.ok else "failed"
        step.ended_at = time.time()
        step.output = redact_json(
            {
                "ok": result.ok,
                "message": result.message,
                "error_code": result.error_code,
            }
        )
        step.error = None if result.ok else redact(result.message)
        self._queue_step(step)
        if not read_only:
            self.flush()

    def results(self, state: RunState, msg: Message, records: list[ToolCallRecord]) -> None:
        self._phase("SENDING_RESULT")
        for part, rec in zip(msg.parts, records, strict=True):
            assert isinstance(part, ToolResultPart)
            key = call_key(state.turn, part.call_id)
            call = ToolCallPart(part.call_id, part.name, rec.input)
            step = self._tool_step(state, call, key)
            if step.status == "running" and key not in self.entries:  # refused before prepare
                step.status, step.ended_at = "failed", time.time()
                step.output = {"ok": False, "error_code": part.result.error_code}
                step.error = redact(part.result.message)
                self._queue_step(step)
            self._items(Message("tool", (part,)), step.step_id, state.turn)
            if key in self.entries:
                self._ledger(key, "result_sent")
            self.last_step = step.step_id

    def before_model_call(self, state: RunState) -> None:
        self._phase("WAITING_MODEL")
        self.flush()

    # -- events, checkpoints, the end -------------------------------------------------------
    def event(self, ev: Event) -> None:
        if ev.type in _SKIPPED_EVENTS or self._finished:
            return  # after the last commit nothing would land: not even redacted
        # The log says what happened; contents live once, in the transcript and the ledger.
        # Redacted before clipping, so a cut can never leave part of a key behind.
        payload = {k: _clip(redact_json(v)) for k, v in ev.payload.items() if k != "data"}
        self.event_seq += 1
        self.batch.events.append(
            EventRecord(
                self.event_seq,
                ev.type,
                ev.turn,
                payload,
                ev.timestamp,
                ev.tool_call_id,
            )
        )

    def checkpoint(self, state: RunState, data: dict[str, Any]) -> None:
        clean = redact_json(data)
        self.batch.checkpoints.append(
            Checkpoint(
                state.turn,
                time.time(),
                str(clean.get("goal", redact(state.task))),
                list(clean.get("modified_files", [])),
                list(clean.get("verification", [])),
                list(clean.get("open_items", [])),
            )
        )

    def resume_from(self, items: list[TranscriptItem]) -> None:
        """Continue a recorded session: steps chain on from its last assistant turn."""
        for item in reversed(items):
            if _from_model(item.payload):
                self.llm_step = item.step_id
                break

    def begin(self) -> None:
        """A run (first or resumed) starts: the session is Running."""
        self.batch.session_updates.update(state="running", phase="RUNNING", pending=None)

    def note(self, key: str, value: Any) -> None:
        """Stored with the session at the next durability barrier (before the next model
        call at the latest)."""
        if self.session.meta.get(key) == value:
            return
        self.session.meta[key] = value
        self.batch.session_updates["meta"] = dict(self.session.meta)

    def finished(self, state: RunState, *, pending: dict[str, Any] | None = None) -> None:
        session_state, phase = _FINAL_STATE.get(state.status, ("failed", "FAILED"))
        meta = dict(self.session.meta)
        meta["last_reason"] = redact(state.reason)
        meta["last_reply"] = redact(state.reply)
        self.batch.session_updates.update(
            state=session_state, phase=phase, meta=meta, pending=pending
        )
        self._finished = True
        self.flush()


_LEDGER_FIELDS = tuple(LedgerEntry.__dataclass_fields__)
_EVENT_STRING_CAP = 500


def _clip(value: Any) -> Any:
    """Long strings in an event payload shortened (recursively), so the log stays small."""
    if isinstance(value, str) and len(value) > _EVENT_STRING_CAP:
        return value[:_EVENT_STRING_CAP] + f"…[{len(value) - _EVENT_STRING_CAP} more]"
    if isinstance(value, dict):
        return {k: _clip(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clip(v) for v in value]
    return value

"""``Agent``: settings for the coding face. Each ``run`` builds its own state and tools.

With a ``store`` every run is a durable session: ``resume`` continues it after any crash
without redoing completed side effects.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import inspect
import os
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from xclaw.coding.checkpoints import checkpoint_hook, checkpoint_text
from xclaw.coding.conversation import conversation_hook, reopen_conversation
from xclaw.coding.gate import evidence_gate
from xclaw.coding.history import RecordScan
from xclaw.coding.prompt import SYSTEM_PROMPT, task_message
from xclaw.coding.relative_paths import relative_paths_view
from xclaw.coding.toolset import coding_registry
from xclaw.context.budget import ContextBudget, budget_hook
from xclaw.context.tokens import counter_for_model
from xclaw.core.dispatch import emit
from xclaw.core.errors import ConfigError
from xclaw.core.events import Event, EventBus, EventType
from xclaw.core.hooks import BeforeModelCall, Hooks, RequestView
from xclaw.core.limits import Limits
from xclaw.core.loop import LoopDeps, finish, run_loop
from xclaw.core.messages import Message
from xclaw.core.model import Model
from xclaw.core.recorder import NULL_RECORDER, Recorder
from xclaw.core.resume import RESUME_REMINDER, InterruptedChoice, settle_pending
from xclaw.core.sandbox import SandboxSource
from xclaw.core.state import RunControl, RunResult, RunState, ToolCallRecord, new_session_id
from xclaw.core.tooling import Approver
from xclaw.dirs import run_output_dir
from xclaw.models.compact import compact_specs, is_small_window, schema_chars
from xclaw.models.fallback import FallbackModel, OnEvent
from xclaw.models.info import window_info
from xclaw.policy.approval import ModeApprover
from xclaw.policy.engine import PolicyEngine
from xclaw.store.base import SessionRecord, Store, TranscriptItem
from xclaw.store.locks import session_lock
from xclaw.store.recorder import LiveTranscript, SessionRecorder
from xclaw.tools.base import Tool, Workspace
from xclaw.tools.registry import ToolRegistry

KeepProcesses = Callable[[list[dict[str, Any]]], bool | Awaitable[bool]]

# Between turns an agent keeps the transcripts of its last few sessions (a gateway's agent
# runs one): the next turn checks them against the store instead of reading them again.
KEPT_SESSIONS = 4
KEPT_ITEMS = 20_000


class Agent:
    """A coding agent: a model, a project root, tools, a policy and an approver."""

    def __init__(
        self,
        model: Model,
        workdir: str | Path,
        tools: ToolRegistry | Iterable[Tool] | None = None,
        *,
        approval: Literal["deny", "allow"] | Approver = "deny",
        limits: Limits | None = None,
        hooks: Hooks | None = None,
        bus: EventBus | None = None,
        store: Store | None = None,
        system_prompt: str = SYSTEM_PROMPT,
        evidence_gate_enabled: bool = True,
        checkpoint_every: int = 10,
        keep_processes: KeepProcesses | None = None,
        model_spec: str | None = None,
        model_protocol: str | None = None,
        context_budget: bool = True,
        prompt_reserve: int = 0,
        sandbox: SandboxSource = None,
        parent_session_id: str | None = None,
        caller: str | None = None,
        session_meta: dict[str, Any] | None = None,
    ) -> None:
        root = Path(workdir).expanduser()
        if not root.is_dir():
            raise ConfigError(
                f"Project directory {root} does not exist.",
                hint="Create it or pass an existing directory with -C.",
            )
        self.model = model
        self.workdir = root.resolve()
        if tools is None:
            self.registry = coding_registry()
        elif isinstance(tools, ToolRegistry):
            self.registry = tools
        else:
            self.registry = ToolRegistry(tools)
        self.approver: Approver = ModeApprover(approval) if isinstance(approval, str) else approval
        self.limits = limits or Limits()
        gate = Hooks(completion_gate=[evidence_gate]) if evidence_gate_enabled else Hooks()
        self.hooks = gate.merged(hooks) if hooks else gate
        self.bus = bus or EventBus()
        self.store = store
        self.system_prompt = system_prompt
        self.checkpoint_every = checkpoint_every
        self.keep_processes = keep_processes
        self.model_spec = model_spec
        self.model_protocol = model_protocol  # a --protocol choice, kept for a resume
        self.context_budget = context_budget
        # Tokens hooks add to each request after the budget fits the conversation (recalled
        # memories, a loaded skill): kept free in the window.
        self.prompt_reserve = max(0, prompt_reserve)
        # Each run's sandbox: one for all runs, a factory, or None (the workspace's default).
        self.sandbox_factory: SandboxSource = sandbox
        # A new session's place in a multi-agent tree (the session that started it, who sent
        # its task: "user" or "agent") and what else its meta holds (the tree's ``agents``).
        self.parent_session_id = parent_session_id
        self.caller = caller
        self.session_meta = dict(session_meta or {})
        self._transcripts: dict[str, LiveTranscript] = {}  # see _continue
        self._checkpointed: dict[str, int] = {}  # session -> turn of its last checkpoint
        self._scans: dict[str, RecordScan] = {}  # session -> its earlier calls, read once
        self._system_message: Message | None = None  # see _system
        self._view: tuple[tuple[Path, Path], RequestView] | None = None  # see _relative_paths

    async def run(
        self, task: str, *, control: RunControl | None = None, session_id: str | None = None
    ) -> RunResult:
        sid = session_id or new_session_id()
        with self._exclusive(sid):
            return await self._run(task, control, sid)

    async def _run(self, task: str, control: RunControl | None, sid: str) -> RunResult:
        now = time.time()
        session = SessionRecord(
            sid,
            str(self.workdir),
            task,
            self.model.name,
            "init",
            "INITIALIZING",
            now,
            now,
            title=task.strip().splitlines()[0][:80] if task.strip() else "",
            meta={
                "system_prompt": self.system_prompt,
                "tools": self.registry.names(),
                "model_spec": self.model_spec,
                **({"protocol": self.model_protocol} if self.model_protocol else {}),
            },
        )
        recorder = self._recorder(session, new=True)
        self._remember_checkpoint(sid, 0)  # a new session: nothing to read back next turn
        state = RunState(
            sid,
            task,
            [self._system(self.system_prompt)],
            control=control or RunControl(),
            recorder=recorder,
        )
        state.append(Message.user(task_message(task)), "user_input")
        result = await self._drive(state, self._workspace(sid))
        self._keep(recorder, state)
        return result

    async def resume(
        self,
        session_id: str,
        *,
        control: RunControl | None = None,
        interrupted: InterruptedChoice | None = None,
        fresh_context: bool = False,
    ) -> RunResult:
        """Continue a recorded session after a crash, a stop or a pause.

        The result's tool calls and metrics cover the whole session, earlier runs included.
        """
        with self._exclusive(session_id):
            return await self._resume(session_id, control, interrupted, fresh_context)

    async def _resume(
        self,
        session_id: str,
        control: RunControl | None,
        interrupted: InterruptedChoice | None,
        fresh_context: bool,
    ) -> RunResult:
        store = self._require_store()
        session = self._resumable_session(store, session_id)
        recorder, history, turn = self._continue(store, session)
        prompt = str(session.meta.get("system_prompt") or self.system_prompt)
        messages = [self._system(prompt), *history]
        state = RunState(
            session_id,
            session.task,
            messages,
            control=control or RunControl(),
            recorder=recorder,
            turn=turn,
        )
        recorder.begin()
        # From the whole history: a fresh context must not make a fake replay its script.
        self.model.restore(state.messages)
        if len(messages) == 1:  # rewound to before the task itself
            state.append(Message.user(task_message(session.task)), "user_input")
        workspace = self._workspace(session_id)
        self._restore_evidence(state, workspace)
        # Interrupted calls are settled on the full history even when the model then
        # continues in a fresh context: nothing is dropped or silently run again.
        restart = (lambda: self._fresh_context(state, store, session)) if fresh_context else None
        if not fresh_context:
            note = await reopen_conversation(self.model, session.meta)
            if note:
                self.bus.emit(Event("conversation.created", session_id, state.turn, {"note": note}))
        result = await self._drive(
            state, workspace, settle=interrupted, resuming=True, fresh_context=restart
        )
        self._keep(recorder, state)
        return result

    async def follow_up(
        self, session_id: str, text: str, *, control: RunControl | None = None
    ) -> RunResult:
        """One more user message in a recorded session (a chat turn), finished or not.

        The gateway's turns: the history is loaded from the store, a call a stop cut off is
        settled as skipped (never run again), the message is appended and the loop runs until
        the model answers again.
        """
        with self._exclusive(session_id):
            return await self._follow_up(session_id, text, control)

    async def _follow_up(self, session_id: str, text: str, control: RunControl | None) -> RunResult:
        store = self._require_store()
        session = store.get_session(session_id)
        if session is None:
            raise ConfigError(f"There is no session {session_id!r}.", code="SESSION_NOT_FOUND")
        if session.pending:  # a paused decision belongs to `xclaw resume`
            raise ConfigError(_paused_reason(session.pending), code="SESSION_PAUSED")
        recorder, history, turn = self._continue(store, session)
        prompt = str(session.meta.get("system_prompt") or self.system_prompt)
        state = RunState(
            session_id,
            text,
            [self._system(prompt), *history],
            control=control or RunControl(),
            recorder=recorder,
            turn=turn,
        )
        recorder.begin()
        self.model.restore(state.messages)
        workspace = self._workspace(session_id)
        self._restore_evidence(state, workspace)
        # After the cut-off calls are settled (in order), the user's message comes next.
        result = await self._drive(
            state,
            workspace,
            settle="skip",
            resuming=True,
            fresh_context=lambda: state.append(Message.user(text), "user_input"),
        )
        self._keep(recorder, state)
        return result

    def _restore_evidence(self, state: RunState, workspace: Workspace) -> None:
        """Earlier runs' tool calls count for the completion gate, checkpoints and metrics;
        they are rebuilt when first needed, not before the model is asked to continue."""
        messages = list(state.messages)
        scan = self._scans.pop(state.session_id, None) or RecordScan(self.registry)
        self._scans[state.session_id] = scan  # the most recent last
        while len(self._scans) > KEPT_SESSIONS:
            del self._scans[next(iter(self._scans))]

        def earlier() -> tuple[list[ToolCallRecord], int]:
            enabled = gc.isenabled()
            gc.disable()  # thousands of small acyclic objects: no collections meanwhile
            try:
                records = scan.records(messages)
            finally:
                if enabled:
                    gc.enable()
            for path in scan.written:
                workspace.note_change(path)
            return records, scan.failed

        state.history = earlier

    def _workspace(self, session_id: str) -> Workspace:
        """A run's workspace; its sandbox is new for the session (one network, one pool),
        made when a tool first needs it."""
        return Workspace(
            self.workdir,
            output_dir=run_output_dir(session_id),
            sandbox_source=self.sandbox_factory,
        )

    def run_sync(self, task: str, **kwargs: Any) -> RunResult:
        return asyncio.run(self.run(task, **kwargs))

    # -- internals ------------------------------------------------------------------------
    def _exclusive(self, session_id: str) -> contextlib.AbstractContextManager[None]:
        """One run of a recorded session at a time, across processes (``SESSION_BUSY``)."""
        if self.store is None:  # nothing recorded: nothing two runs could corrupt
            return contextlib.nullcontext()
        return session_lock(session_id)

    def _require_store(self) -> Store:
        if self.store is None:
            raise ConfigError(
                "Resuming needs a session store.",
                code="STORE_REQUIRED",
                hint="Create the Agent with store=open_store().",
            )
        return self.store

    def _resumable_session(self, store: Store, session_id: str) -> SessionRecord:
        session = store.get_session(session_id)
        if session is None:
            raise ConfigError(
                f"There is no session {session_id!r}.",
                code="SESSION_NOT_FOUND",
                hint="List sessions with `xclaw sessions`.",
            )
        if session.state == "success":
            raise ConfigError(
                f"Session {session_id} already finished.",
                code="SESSION_FINISHED",
                hint="Fork it (`xclaw fork`) or start a new run.",
            )
        if os.path.realpath(session.root) != str(self.workdir):
            raise ConfigError(
                f"Session {session_id} belongs to {session.root}.",
                code="SESSION_ROOT_MISMATCH",
                hint=f"Use -C {session.root}.",
            )
        return session

    def _recorder(self, session: SessionRecord, *, new: bool) -> Recorder:
        if new:  # set before the session row is first written: the link lands in its commit
            session.parent_session_id = self.parent_session_id
            session.caller = self.caller
            session.meta.update(self.session_meta)
        if self.store is None:
            return NULL_RECORDER
        live = LiveTranscript(session, (0, 0, 0), []) if new else None
        recorder = SessionRecorder(self.store, session, new=new, transcript=live)
        recorder.begin()
        return recorder

    def _continue(
        self, store: Store, session: SessionRecord
    ) -> tuple[SessionRecorder, list[Message], int]:
        """The recorder continuing ``session``, its history and its last turn: what this
        agent kept from its last run of it, if the store holds nothing else since (checked
        by its counters, one small query), else the transcript read from the store."""
        live = self._transcripts.pop(session.id, None)
        if live is not None:
            counters = store.counters(session.id)
            if live.matches(session, counters):
                recorder = SessionRecorder(
                    store, session, new=False, counters=counters, transcript=live
                )
                recorder.llm_step = live.llm_step
                return recorder, live.messages.messages(), live.turn
        items, live = _load_history(store, session)
        recorder = SessionRecorder(store, session, new=False, transcript=live)  # counters now
        last_seq = items[-1].seq if items else 0
        if recorder.committed[1] == last_seq:
            live.counters = recorder.committed
        else:  # written to between the two reads: used for this run, not kept
            recorder.transcript = None
        recorder.llm_step = live.llm_step
        return recorder, live.messages.messages(), live.turn

    def _keep(self, recorder: Recorder, state: RunState) -> None:
        """After a run: its session's transcript, as committed, for the next turn (the most
        recent few sessions, none longer than ``KEPT_ITEMS`` items), holding the run's own
        message objects where they are the same messages (``TranscriptMessages.adopt``)."""
        if not isinstance(recorder, SessionRecorder) or recorder.transcript is None:
            return
        live = recorder.transcript
        if live.messages.count > KEPT_ITEMS:
            return
        live.messages.adopt(state.messages)
        self._transcripts.pop(live.session_id, None)
        self._transcripts[live.session_id] = live
        while len(self._transcripts) > KEPT_SESSIONS:
            del self._transcripts[next(iter(self._transcripts))]

    def _fresh_context(self, state: RunState, store: Store, session: SessionRecord) -> None:
        """Restart the model context from the latest checkpoint instead of the history."""
        cp = store.latest_checkpoint(session.id)
        summary = checkpoint_text(cp) if cp else f"Goal: {session.task}"
        del state.messages[1:]
        state.messages.append(Message.user(task_message(session.task)))
        state.append(Message.user(f"{summary}\n\n{RESUME_REMINDER}"), "system_alert")

    async def _drive(
        self,
        state: RunState,
        workspace: Workspace,
        *,
        settle: InterruptedChoice | None = None,
        resuming: bool = False,
        fresh_context: Callable[[], None] | None = None,
    ) -> RunResult:
        hooks = self.hooks.merged(
            Hooks(
                before_model_call=self._context_hooks() + self._conversation_hooks(),
                after_tools=[
                    checkpoint_hook(
                        workspace,
                        self.checkpoint_every,
                        since=self._since(state),
                        on_checkpoint=lambda turn: self._remember_checkpoint(
                            state.session_id, turn
                        ),
                    )
                ],
                # last, so what other views add (memories, skills) is covered too
                request_view=[self._relative_paths(workspace)],
            )
        )
        deps = LoopDeps(
            self.model,
            self.registry.bind(workspace, session_id=state.session_id, control=state.control),
            PolicyEngine(workspace),
            self.approver,
            self.bus,
            self.limits,
            hooks,
        )
        recorder = state.recorder
        previous_listener = self._listen_to_failovers(deps, state)
        unsubscribe = self.bus.subscribe(recorder.event) if recorder is not NULL_RECORDER else None
        state.control.attach(asyncio.current_task())
        try:
            if resuming:
                pending = await settle_pending(state, deps, settle)
                if pending is not None:
                    state.extra["pending"] = pending
                    return finish(state, deps, "interrupted", "", reason=_paused_reason(pending))
                if fresh_context is not None:
                    fresh_context()
                else:
                    state.append(Message.user(RESUME_REMINDER), "system_alert")
            result = await run_loop(state, deps)
        finally:
            state.control.attach(None)
            if isinstance(self.model, FallbackModel):
                self.model.on_event = previous_listener
            if unsubscribe is not None:
                unsubscribe()
            kept = await self._settle_processes(workspace)
            if workspace.sandbox is not None and not kept:
                await workspace.sandbox.close()
        return replace(result, changed_files=list(workspace.changed_files), kept_processes=kept)

    def _system(self, prompt: str) -> Message:
        """The system message of ``prompt``: the same object run after run, so that what reads
        a conversation once (the paths view, earlier calls) knows it again next turn."""
        if self._system_message is None or self._system_message.text != prompt:
            self._system_message = Message.system(prompt)
        return self._system_message

    def _since(self, state: RunState) -> int:
        """The turn of the session's last checkpoint (0 for a new session), where the count of
        ``checkpoint_every`` goes on from: as this agent last wrote it, else from the store."""
        if self.store is None or state.turn == 0:
            return 0
        known = self._checkpointed.get(state.session_id)
        if known is None:
            cp = self.store.latest_checkpoint(state.session_id)
            known = cp.turn if cp is not None else 0
            self._remember_checkpoint(state.session_id, known)
        return min(known, state.turn)  # a rollback may have gone back before it

    def _remember_checkpoint(self, session_id: str, turn: int) -> None:
        if session_id not in self._checkpointed and len(self._checkpointed) >= 4 * KEPT_SESSIONS:
            self._checkpointed.clear()
        self._checkpointed[session_id] = turn

    def _relative_paths(self, workspace: Workspace) -> RequestView:
        """The relative-paths view, kept across runs: a message of the kept history is
        rewritten once, not once a turn. Its roots are the workdir and its realpath as the
        workspace resolved it just now, so a root that moved gets a view of its own."""
        roots = (workspace.root, self.workdir)
        if self._view is None or self._view[0] != roots:
            self._view = (roots, relative_paths_view(roots))
        return self._view[1]

    def _listen_to_failovers(self, deps: LoopDeps, state: RunState) -> OnEvent | None:
        """Retries and failovers of a model chain become run events (the caller's listener
        keeps working); returns the listener to restore afterwards."""
        if not isinstance(self.model, FallbackModel):
            return None
        previous = self.model.on_event

        def listener(rec: dict[str, Any]) -> None:
            if previous is not None:
                previous(rec)
            kind: EventType = (
                "model.failover" if rec.get("type") == "model.failover" else ("model.retry")
            )
            emit(deps, state, kind, **{k: v for k, v in rec.items() if k != "type"})

        self.model.on_event = listener
        return previous

    def _conversation_hooks(self) -> list[BeforeModelCall]:
        """A web conversation's URL is kept with the session, for a resume."""
        hook = conversation_hook(self.model)
        return [hook] if hook is not None else []

    def _context_hooks(self) -> list[BeforeModelCall]:
        """Keep the conversation inside the model's window (known from its preset); a
        failover chain's is its smallest (``window_info``)."""
        if not self.context_budget:
            return []
        info = window_info(self.model)
        if info.profile is None:
            return []
        window = info.profile.context_window
        reserve = min(info.profile.max_output_tokens or 8_192, window // 4)
        budget = ContextBudget(
            window,
            # the tool schemas travel with every request, and what hooks add to it
            reserve_output=reserve + self._schema_tokens(window) + self.prompt_reserve,
            counter=counter_for_model(info.name),
        )
        return [budget_hook(budget, self.model)]

    def _schema_tokens(self, window: int) -> int:
        """Tokens the tool schemas take in each request, as the model's setup sends them
        (compact for small windows), estimated high at 3 characters a token; at least the
        4,000 kept before for windows that are not small."""
        specs = [t.spec for t in self.registry]
        if not is_small_window(window):
            return max(4_000, schema_chars(specs) // 3 + 200)
        return schema_chars(compact_specs(specs)) // 3 + 200

    async def _settle_processes(self, workspace: Workspace) -> list[dict[str, Any]]:
        """Stop what the run started, unless the user chose to keep it running."""
        manager = workspace.processes
        if manager is None:
            return []
        running = [p for p in manager.list() if p.get("status") == "running"]
        if not running:
            await manager.stop_all()  # reaps those that exited by themselves (no zombie left)
            return []
        keep = False
        # A sandboxed process dies with xclaw (its namespace does): it cannot be kept.
        if self.keep_processes is not None and workspace.sandbox_mode == "host":
            answer = self.keep_processes(running)
            keep = bool(await answer) if inspect.isawaitable(answer) else bool(answer)
        if keep:
            manager.detach_all()
            return running
        await manager.stop_all()
        return []


def _load_history(
    store: Store, session: SessionRecord
) -> tuple[list[TranscriptItem], LiveTranscript]:
    """A session's transcript, and its messages (counters not known yet).

    The cyclic GC is paused meanwhile: tens of thousands of new, acyclic objects would set off
    repeated collections, a quarter of the time of resuming a 10,000-step session.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        items = store.load_items(session.id)
        return items, LiveTranscript(session, (-1, -1, -1), items)
    finally:
        if enabled:
            gc.enable()


def _paused_reason(pending: dict[str, Any]) -> str:
    return (
        f"SESSION_PAUSED: {pending['name']} was running when xclaw stopped and may have had "
        "an effect; decide with `xclaw resume ID --retry-interrupted` or `--skip-interrupted`."
    )

"""``PatchJob``: one change job on the one loop, in an isolated worktree (seed 001).

create (health, lock, worktree, baseline) → ``run_loop`` with the patch tools → changeset
rules → checks → review; then apply/revert on request, or automatically when every gate holds.
"""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xclaw.config import CheckConfig, XclawConfig, load_config
from xclaw.core.events import Event, EventBus
from xclaw.core.hooks import Hooks
from xclaw.core.limits import Limits
from xclaw.core.loop import LoopDeps, run_loop
from xclaw.core.messages import Message
from xclaw.core.model import Model
from xclaw.core.state import RunResult, RunState
from xclaw.patch.apply import apply_record, revert_record
from xclaw.patch.changeset import CarriedPaths, Changeset, collect, invalid
from xclaw.patch.checks import changeset_digest, require_checks_passed
from xclaw.patch.conventions import conventions_message
from xclaw.patch.health import check_health, real_path, require_usable
from xclaw.patch.job import (
    JobRecord,
    JobSpec,
    JobStore,
    Mode,
    PatchLimits,
    Target,
    new_job_id,
    require_mode_allowed,
)
from xclaw.patch.prompt import SYSTEM_PROMPT, job_message
from xclaw.patch.session import PatchSession
from xclaw.patch.tools import patch_registry, run_session_check
from xclaw.patch.worktree import (
    create_worktree,
    remove_leftovers,
    remove_worktree,
    seed_local_changes,
    worktrees_dir,
)
from xclaw.policy.approval import ModeApprover
from xclaw.policy.engine import PolicyEngine
from xclaw.sandbox.base import LocalSandbox
from xclaw.tools.base import Workspace
from xclaw.worktree.baseline import commit_baseline
from xclaw.worktree.gitio import PatchError


@dataclass(slots=True)
class PatchJob:
    """Settings of the patch face; ``run`` creates one job and returns its record."""

    model: Model
    root: Path
    targets: tuple[Target, ...]
    mode: Mode = "review"
    include_local_changes: bool = False
    consent: bool = False
    checks: dict[str, CheckConfig] = field(default_factory=dict)
    limits: PatchLimits = field(default_factory=PatchLimits)
    store: JobStore = field(default_factory=JobStore)
    # Where checks and git run; None: chosen from the user's configuration (``xclaw patch``
    # passes the one of its resolved configuration, see ``xclaw.compose.patch``).
    sandbox: LocalSandbox | None = None
    bus: EventBus = field(default_factory=EventBus)
    session_id: str = field(default_factory=lambda: secrets.token_hex(8))
    allowed_modes: tuple[str, ...] = ()  # the user config's patch.allow_modes

    async def run(self) -> JobRecord:
        spec = await self._freeze()
        record = JobRecord(spec)
        owner = self.store.lock_path(spec.git_root).stem
        lock = self.store.project_lock(spec.git_root, spec.job_id)
        with lock, self.store.settled_on_escape(record):  # never left "running" by a stop
            self.store.save(record)
            repo = Path(spec.git_root)
            await remove_leftovers(repo, owner)
            wt = await create_worktree(repo, spec.head, owner, spec.job_id)
            try:
                await self._produce(record, wt)
            except PatchError as err:
                record.status, record.reason = "failed", f"{err.code}: {err.message}"
            finally:
                await remove_worktree(repo, wt)
            self.store.save(record)
        if record.status == "review" and self._may_apply_unattended(record):
            await self.apply(record)
        return record

    async def apply(self, record: JobRecord) -> JobRecord:
        return await apply_job(record, self.store)

    async def revert(self, record: JobRecord) -> JobRecord:
        return await revert_job(record, self.store)

    def run_sync(self) -> JobRecord:
        return asyncio.run(self.run())

    async def _freeze(self) -> JobSpec:
        """Validate the request and read the repository once: the job's frozen input."""
        _check_request(self)
        root = real_path(self.root)
        report = await check_health(root, self.limits)
        include = self.include_local_changes or self.mode == "trusted-auto"
        require_usable(report, include_local=include, consent=self.consent)
        required = tuple(cid for cid, c in self.checks.items() if c.required)
        return JobSpec(
            job_id=new_job_id(),
            session_id=self.session_id,
            targets=self.targets,
            model=self.model.name,
            git_root=str(root),
            head=report.head,
            health_digest=report.digest,
            mode=self.mode,
            health="include-local-changes" if report.state == "dirty" else "require-clean",
            consent=self.consent,
            check_ids=() if self.mode == "trusted-auto" else required,
            limits=self.limits,
        )

    async def _produce(self, record: JobRecord, wt: Path) -> None:
        spec = record.spec
        report = await check_health(Path(spec.git_root), spec.limits)
        if report.digest != spec.health_digest:
            raise PatchError(
                "The working tree changed after the job was created.",
                code="PATCH_SNAPSHOT_RACED",
            )
        # Also when clean: a converting checkout (CRLF) holds other bytes than the commit.
        await seed_local_changes(Path(spec.git_root), wt, report, spec.limits)
        baseline = await commit_baseline(wt)
        session = PatchSession(wt, spec.limits, self.checks, self._sandbox())
        result = await self._drive(spec, session)
        if result.status != "completed":
            raise PatchError(f"The model run stopped: {result.reason}", code="PATCH_RUN_FAILED")
        if not result.tool_calls:
            raise PatchError(
                "The model answered without calling a tool.",
                code="MODEL_TOOL_CALL_UNSUPPORTED",
                hint="Choose a model that supports tool calls.",
            )
        changes = await collect(wt, baseline, spec.limits)
        record.checks = await self._final_checks(spec, session, changes, baseline)
        record.diff, record.summary, record.deletes = changes.diff, changes.summary, changes.deletes
        record.baseline_hashes, record.result_hashes = changes.baseline, changes.result
        record.status = "review" if changes.result else "failed"
        record.reason = (
            result.reply if changes.result else "PATCH_NO_CHANGES: the model changed nothing"
        )
        record.manifests = changes.manifests
        record.made_executable = changes.made_executable

    async def _drive(self, spec: JobSpec, session: PatchSession) -> RunResult:
        known = await CarriedPaths.read(session.worktree)  # before the loop: tools stay quick
        registry = patch_registry(session, known, with_checks=spec.mode != "trusted-auto")
        workspace = Workspace(session.worktree, sandbox=session.sandbox)
        deps = LoopDeps(
            self.model,
            registry.bind(workspace),
            PolicyEngine(workspace),
            ModeApprover("deny"),  # the patch tools never ask: their own rules decide
            self.bus,
            Limits(max_turns=spec.limits.max_turns),
            Hooks(after_tools=[session.after_tools]),
        )
        state = RunState(
            spec.session_id, spec.targets[0].instruction, [Message.system(SYSTEM_PROMPT)]
        )
        context = conventions_message(session.worktree, spec.targets)
        text = job_message(spec.targets) + (f"\n\n{context}" if context else "")
        state.append(Message.user(text), "user_input")
        return await run_loop(state, deps)

    async def _final_checks(
        self, spec: JobSpec, session: PatchSession, changes: Changeset, baseline: str
    ) -> list[dict[str, Any]]:
        """Required checks in configured order, reusing results of this change version; each
        result names the final change it ran on, which apply's gate requires."""
        if not spec.check_ids:
            return []
        final = changeset_digest(changes.result)
        results = []
        for cid in spec.check_ids:
            if session.fresh_check(cid) is None:
                self.bus.emit(Event("tool.started", spec.session_id, 0, {"name": f"check {cid}"}))
            result = await run_session_check(session, cid)
            results.append({**result.to_dict(), "changeset": final})
        again = await collect(session.worktree, baseline, spec.limits)
        if again.diff != changes.diff:
            raise invalid("a check changed files in the worktree")
        return results

    def _may_apply_unattended(self, record: JobRecord) -> bool:
        spec = record.spec
        if spec.mode == "trusted-auto":
            return spec.consent
        if spec.mode != "auto":
            return False
        checks_ok = all(c["ok"] for c in record.checks)
        held = record.deletes or record.manifests or record.made_executable
        return checks_ok and not held

    def _sandbox(self) -> LocalSandbox:
        return self.sandbox if self.sandbox is not None else job_sandbox(load_config(self.root))


def job_sandbox(config: XclawConfig) -> LocalSandbox:
    """The sandbox of a change job's checks and git, from the resolved configuration: they run
    here on this machine (``full`` becomes ``auto``), and the worktree in the data dir stays
    visible."""
    from xclaw.sandbox.resolve import local_sandbox

    return local_sandbox(config, visible=worktrees_dir())


async def apply_job(record: JobRecord, store: JobStore) -> JobRecord:
    """Apply a reviewed job under the project lock; the record is saved either way. Every
    face applies through here, so the required checks gate the CLI, the web UI and auto."""
    require_checks_passed(record)
    with store.project_lock(record.spec.git_root, record.spec.job_id):
        await apply_record(record)
        store.save(record)
    return record


async def revert_job(record: JobRecord, store: JobStore) -> JobRecord:
    with store.project_lock(record.spec.git_root, record.spec.job_id):
        await revert_record(record)
        store.save(record)
    return record


def _check_request(job: PatchJob) -> None:
    require_mode_allowed(job.mode, job.allowed_modes)
    limits = job.limits
    problems = []
    if not job.targets or len(job.targets) > limits.max_targets:
        problems.append(f"give 1 to {limits.max_targets} targets")
    if any(
        not t.instruction.strip() or len(t.instruction) > limits.max_instruction_chars
        for t in job.targets
    ):
        problems.append(f"each instruction needs 1 to {limits.max_instruction_chars} characters")
    if job.mode == "trusted-auto" and not job.consent:
        problems.append("trusted-auto needs explicit consent")
    if problems:
        raise PatchError(
            "The job request is invalid: " + "; ".join(problems) + ".",
            code="INVALID_REQUEST",
            hint="Fix the request and start again.",
        )

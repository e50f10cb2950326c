"""The patch face, assembled: the change job of ``xclaw patch run`` (seed 001) from the
resolved configuration.

    job = build_patch(config, directory, Overrides(model=spec), JobRequest(targets))
    record = await job.run()

The chain: model (``--model`` or ``model:``, with ``models:``) → the user's checks
(``checks:``) → limits (``patch.editable_lockfiles``) → the modes the user allows
(``patch.allow_modes``) → the sandbox of checks and git (``sandbox:``; always on this
machine) → the job store.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xclaw.compose.coding import face_model
from xclaw.compose.settings import Overrides
from xclaw.config import XclawConfig

if TYPE_CHECKING:
    from xclaw.core.events import EventBus
    from xclaw.core.model import Model
    from xclaw.patch import JobStore, PatchJob, Target
    from xclaw.patch.job import Mode
    from xclaw.sandbox.base import LocalSandbox

__all__ = ["JobRequest", "build_patch", "describe_patch"]


@dataclass(frozen=True, slots=True)
class JobRequest:
    """What ``xclaw patch run`` asks for: the targets, the mode and the user's consent to
    carry local changes (``--include-local-changes``; ``trusted-auto`` implies it)."""

    targets: tuple[Target, ...]
    mode: Mode = "review"
    include_local_changes: bool = False

    @property
    def consent(self) -> bool:
        return self.include_local_changes or self.mode == "trusted-auto"


def build_patch(
    config: XclawConfig,
    directory: Path,
    overrides: Overrides | None,
    request: JobRequest,
    *,
    bus: EventBus | None = None,
    store: JobStore | None = None,
    model: Model | None = None,
    sandbox: LocalSandbox | None = None,
) -> PatchJob:
    """The change job of ``directory`` from the resolved ``config``. ``model``: a model
    object instead of ``--model``/``model:``; ``sandbox``: where its checks and git run
    (default: the configuration's, made now)."""
    from xclaw.core.events import EventBus
    from xclaw.patch import JobStore, PatchJob
    from xclaw.patch.engine import job_sandbox
    from xclaw.patch.job import PatchLimits
    from xclaw.patch.paths import editable_lockfiles

    if model is None:
        model, _spec = face_model(config, directory, overrides or Overrides())
    lockfiles = editable_lockfiles(config.patch.editable_lockfiles)
    return PatchJob(
        model,
        directory,
        request.targets,
        mode=request.mode,
        include_local_changes=request.include_local_changes,
        consent=request.consent,
        checks=dict(config.checks),
        limits=PatchLimits(editable_lockfiles=lockfiles),
        store=store if store is not None else JobStore(),
        sandbox=sandbox if sandbox is not None else job_sandbox(config),
        bus=bus if bus is not None else EventBus(),
        allowed_modes=tuple(config.patch.allow_modes),
    )


def describe_patch(job: PatchJob) -> dict[str, Any]:
    """What was assembled, comparable across surfaces: tools, limits, model, sandbox and
    policy (mode, consent, the modes allowed, the checks that gate apply)."""
    from xclaw.patch.changeset import CarriedPaths
    from xclaw.patch.session import PatchSession
    from xclaw.patch.tools import patch_registry

    if job.sandbox is None:
        raise ValueError("describe_patch describes a job of build_patch (its sandbox is set)")
    # The job's tools are made per worktree; the same set, on the project, names them.
    session = PatchSession(job.root, job.limits, job.checks, job.sandbox)
    known = CarriedPaths(job.root, frozenset(), frozenset())
    tools = patch_registry(session, known, with_checks=job.mode != "trusted-auto")
    return {
        "tools": sorted(tools.names()),
        "limits": asdict(job.limits),
        "model": job.model.name,
        "sandbox": job.sandbox.mode,
        "policy": {
            "mode": job.mode,
            "consent": job.consent,
            "allowed_modes": list(job.allowed_modes),
            "checks": {cid: c.required for cid, c in job.checks.items()},
        },
    }

"""The web UI's review endpoints: rewind or fork a session at a step, and review change jobs.

Routes (every one behind the gateway's auth; state changes are POSTs that also need the
gateway's own ``Origin`` when they come with the browser cookie alone)::

    POST /api/sessions/{id}/rollback  {"step": "s0003"}  -> what was removed
    POST /api/sessions/{id}/fork      {"step": "s0003"}  -> {"sessionId": NEW, ...}
    GET  /api/jobs                                       -> this project's change jobs
    GET  /api/jobs/{id}                                  -> diff, files with hashes, checks
    POST /api/jobs/{id}/apply | /revert                  -> the job after the patch engine ran

Rollback and fork are the store's (as ``xclaw sessions rollback/fork``) and are refused while
the session runs a turn. Apply and revert are the patch engine's (as ``xclaw patch
apply/revert``): same project lock, same hash checks, same refusals. A refusal is
``{"code", "message", "next"}`` with a 4xx status.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, HTTPException, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, ValidationError

from xclaw.core.errors import XclawError
from xclaw.patch.engine import apply_job, revert_job
from xclaw.patch.job import JobRecord, JobStore
from xclaw.patch.worktree import file_hash
from xclaw.redact import redact, redact_json
from xclaw.store.base import WriteBatch
from xclaw.worktree.gitio import PatchError

if TYPE_CHECKING:
    from xclaw.gateway.auth import GatewayAuth
    from xclaw.gateway.gateway import Gateway
    from xclaw.store.base import SessionRecord

__all__ = ["ReviewError", "fork_title", "review_router", "session_running"]

_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$")
_STEP_ID = re.compile(r"^s[0-9]{1,9}$")
_JOB_ID = re.compile(r"^[0-9a-f][0-9a-f-]{0,63}$")
_BODY_LIMIT = 4096
Action = Callable[[JobRecord, JobStore], Awaitable[JobRecord]]
# Refusals that mean "no such thing" (404); every other patch refusal is a conflict (409).
_NOT_FOUND = {"PATCH_JOB_NOT_FOUND", "SESSION_NOT_FOUND", "STEP_NOT_FOUND", "JOB_NOT_FOUND"}


class ReviewError(Exception):
    """A refusal with a stable code, a plain sentence and a next step."""

    def __init__(self, status: int, code: str, message: str, next_step: str = "") -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.next_step = status, code, message, next_step

    def response(self) -> JSONResponse:
        body = {"code": self.code, "message": redact(self.message), "next": self.next_step}
        return JSONResponse(body, status_code=self.status)


class StepBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    step: str


def session_running(gateway: Gateway, session_id: str) -> bool:
    """A turn of the session runs or waits in this gateway."""
    return gateway.is_running(session_id)


def review_router(gateway: Gateway, auth: GatewayAuth, jobs: JobStore | None = None) -> APIRouter:
    """The routes above for ``gateway``; ``jobs`` defaults to the user's job store."""
    router = APIRouter()
    store_of_jobs = _lazy_jobs(jobs)

    def require(request: Request, *, changes: bool) -> None:
        # A state change taken on the cookie alone must carry our Origin, as a WebSocket
        # must (``websocket=True`` asks exactly that); a bearer token needs none.
        verdict = auth.check(request.headers, request.cookies, websocket=changes)
        if verdict != "ok":
            raise HTTPException(403 if verdict == "forbidden" else 401)

    @router.post("/api/sessions/{session_id}/rollback")
    async def rollback(request: Request, session_id: str) -> Response:
        require(request, changes=True)
        try:
            return _rollback(gateway, session_id, await _step(request))
        except ReviewError as err:
            return err.response()

    @router.post("/api/sessions/{session_id}/fork")
    async def fork(request: Request, session_id: str) -> Response:
        require(request, changes=True)
        try:
            return _fork(gateway, session_id, await _step(request))
        except ReviewError as err:
            return err.response()

    @router.get("/api/jobs")
    async def list_jobs(request: Request) -> Response:
        require(request, changes=False)
        found = [r for r in store_of_jobs().list() if _in_project(gateway, r)]
        found.sort(key=lambda r: r.created, reverse=True)
        return JSONResponse([_job_summary(r) for r in found])

    @router.get("/api/jobs/{job_id}")
    async def show_job(request: Request, job_id: str) -> Response:
        require(request, changes=False)
        return await _act(gateway, store_of_jobs(), job_id, action=None)

    @router.post("/api/jobs/{job_id}/apply")
    async def apply(request: Request, job_id: str) -> Response:
        require(request, changes=True)
        return await _act(gateway, store_of_jobs(), job_id, action=apply_job)

    @router.post("/api/jobs/{job_id}/revert")
    async def revert(request: Request, job_id: str) -> Response:
        require(request, changes=True)
        return await _act(gateway, store_of_jobs(), job_id, action=revert_job)

    return router


def _rollback(gateway: Gateway, session_id: str, step: str) -> Response:
    """``xclaw sessions rollback`` for the UI. No await between the running check and the
    store's write: no turn can start in between on this event loop."""
    record = _own_session(gateway, session_id)
    _not_running(gateway, record.id)
    try:
        report = gateway.store.rollback(record.id, step)
    except KeyError:
        raise _no_step(record.id, step) from None
    irreversible = [
        {"step": e.step_id, "name": e.name, "arguments": redact_json(e.arguments)}
        for e in report.irreversible
    ]
    return JSONResponse(
        {
            "sessionId": record.id,
            "step": step,
            "removedSteps": report.removed_steps,
            "removedItems": report.removed_items,
            "irreversible": irreversible,
        }
    )


def _fork(gateway: Gateway, session_id: str, step: str) -> Response:
    """``xclaw sessions fork`` for the UI; the new session is a web session of this project."""
    from xclaw.gateway.gateway import new_web_session_id

    record = _own_session(gateway, session_id)
    _not_running(gateway, record.id)
    try:
        new = gateway.store.fork(record.id, step, new_web_session_id())
    except KeyError:
        raise _no_step(record.id, step) from None
    title = fork_title(record, step)
    gateway.store.commit(WriteBatch(new.id, session_updates={"title": title}))
    return JSONResponse({"sessionId": new.id, "parentId": record.id, "step": step, "title": title})


def fork_title(record: SessionRecord, step: str) -> str:
    """A fork's name, told apart from its original: "Fork of TITLE at STEP"."""
    first = (record.title or record.task).strip().splitlines()
    title = redact(first[0] if first else record.id)
    if len(title) > 60:
        title = title[:59] + "…"
    return f"Fork of {title} at {step}"


def _lazy_jobs(jobs: JobStore | None) -> Callable[[], JobStore]:
    """The job store, made on first use (that makes its folder)."""
    made: list[JobStore] = [jobs] if jobs is not None else []

    def get() -> JobStore:
        if not made:
            made.append(JobStore())
        return made[0]

    return get


async def _step(request: Request) -> str:
    raw = await request.body()
    if len(raw) > _BODY_LIMIT:
        raise ReviewError(413, "REQUEST_TOO_LARGE", "The request body is too large.")
    try:
        body = StepBody.model_validate_json(raw or b"{}")
    except ValidationError:
        raise ReviewError(
            400,
            "INVALID_REQUEST",
            'The request needs a JSON body {"step": "s0001"}.',
            "Send the id of one of the session's steps.",
        ) from None
    if not _STEP_ID.match(body.step):
        raise ReviewError(
            400, "STEP_ID_INVALID", "That is not a step id.", "Step ids look like s0003."
        )
    return body.step


def _own_session(gateway: Gateway, session_id: str) -> SessionRecord:
    """The session, when it is this gateway's project's; otherwise not found."""
    record = gateway.store.get_session(session_id) if _SESSION_ID.match(session_id) else None
    if record is None or Path(record.root).resolve() != gateway.workdir:
        raise ReviewError(
            404,
            "SESSION_NOT_FOUND",
            "There is no such session in this project.",
            "Pick a session from the list.",
        )
    return record


def _not_running(gateway: Gateway, session_id: str) -> None:
    if session_running(gateway, session_id):
        raise ReviewError(
            409,
            "SESSION_RUNNING",
            "The session is running a turn; its history cannot change under it.",
            "Wait for the reply or press Stop, then try again.",
        )
    record = gateway.store.get_session(session_id)
    if record is not None and record.state == "running":
        raise ReviewError(
            409,
            "SESSION_RUNNING",
            "The session is recorded as running (by another xclaw process, or one that ended "
            "without finishing it).",
            "Wait for that run to end; if no xclaw process runs it, use `xclaw "
            "rollback` or `xclaw fork` in a terminal.",
        )


def _no_step(session_id: str, step: str) -> ReviewError:
    return ReviewError(
        404,
        "STEP_NOT_FOUND",
        f"Session {session_id} has no step {step}.",
        "Reload the session: its step tree may have changed.",
    )


def _in_project(gateway: Gateway, record: JobRecord) -> bool:
    """A job of this gateway's project: its repository is the project or holds it."""
    try:
        repo = Path(record.spec.git_root).resolve()
    except (OSError, RuntimeError):
        return False
    return gateway.workdir == repo or gateway.workdir.is_relative_to(repo)


def _own_job(gateway: Gateway, store: JobStore, job_id: str) -> JobRecord:
    missing = ReviewError(
        404, "JOB_NOT_FOUND", "There is no such change job in this project.", "Reload the list."
    )
    if not _JOB_ID.match(job_id):
        raise missing
    try:
        record = store.load(job_id)
    except XclawError as err:
        if err.code == "PATCH_RECORD_TAMPERED":  # say so: never show or apply it, never hide it
            raise ReviewError(409, err.code, err.message, err.hint) from None
        raise missing from None
    if not _in_project(gateway, record):
        raise missing
    return record


async def _act(
    gateway: Gateway, store: JobStore, job_id: str, *, action: Action | None
) -> Response:
    """The job (after the patch engine's apply or revert, refused exactly as ``xclaw patch
    apply/revert`` refuses)."""
    try:
        record = _own_job(gateway, store, job_id)
        try:
            if action is not None:
                await action(record, store)
        except PatchError as err:
            status = 404 if err.code in _NOT_FOUND else 409
            raise ReviewError(status, err.code, err.message, err.hint) from None
    except ReviewError as err:
        return err.response()
    return JSONResponse(_job_detail(record))


def _job_summary(record: JobRecord) -> dict[str, Any]:
    spec = record.spec
    return {
        "id": spec.job_id,
        "status": record.status,
        "summary": redact(record.summary),
        "instruction": redact(spec.targets[0].instruction) if spec.targets else "",
        "mode": spec.mode,
        "created": record.created,
        "updated": record.updated,
        "files": len(record.baseline_hashes),
    }


def _job_detail(record: JobRecord) -> dict[str, Any]:
    """The job as the UI reviews it: each touched file's hashes and what it holds now."""
    root = Path(record.spec.git_root)
    files = []
    for rel in sorted(record.baseline_hashes):
        try:
            now: str | None = file_hash(root, rel)
        except OSError:  # a path component became a file, or unreadable: matches no hash
            now = "unreadable"
        result = record.result_hashes.get(rel)
        files.append(
            {
                "path": rel,
                "baseline": record.baseline_hashes[rel],
                "result": result,
                "applied": record.applied_hashes.get(rel),
                "current": now,
                "holds": _holds(now, record.baseline_hashes[rel], result),
            }
        )
    return {
        **_job_summary(record),
        "reason": redact(record.reason),
        "diff": redact(record.diff),
        "head": record.spec.head,
        "targets": [
            {"file": t.file, "line": t.line, "instruction": redact(t.instruction)}
            for t in record.spec.targets
        ],
        "checks": [
            {"id": c.get("check_id"), "ok": c.get("ok"), "status": c.get("status")}
            for c in record.checks
        ],
        "deletes": record.deletes,
        "manifests": record.manifests,
        "fileStates": files,
    }


def _holds(now: str | None, baseline: str | None, result: str | None) -> str:
    if now == result:
        return "result"
    if now == baseline:
        return "baseline"
    return "other"

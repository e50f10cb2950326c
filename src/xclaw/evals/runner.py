"""Run a dataset's cases against a model: each in its own copy of its fixture, with its own
store, sandbox and approver, several at once (``jobs``), never sharing a file.

One case: copy the fixture → ``setup`` → the coding ``Agent`` on the task (under
``timeout_s``) → tools called, reply and files judged → ``checks`` copied over → command
assertions. Whatever goes wrong is a failed case with a coded reason, never a crashed eval.
"""

from __future__ import annotations

import asyncio
import secrets
import shutil
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from xclaw.compose.coding import CodingFace, Surface, build_coding
from xclaw.compose.sandbox import plan_sandbox
from xclaw.compose.settings import Overrides, resolve_config
from xclaw.config import XclawConfig
from xclaw.core.errors import XclawError
from xclaw.core.events import EventBus
from xclaw.core.limits import Limits
from xclaw.core.model import Model
from xclaw.core.state import RunResult
from xclaw.evals.approval import ApprovalMode, CaseApprover
from xclaw.evals.checks import Failure, check_files, check_reply, check_tools, overlay
from xclaw.evals.commands import describe_failure, run_command
from xclaw.evals.dataset import Case, LoadedDataset
from xclaw.evals.observe import CaseObserver
from xclaw.evals.results import CaseResult, EvalReport
from xclaw.models.info import model_info
from xclaw.models.resolve import resolve_model
from xclaw.store.sqlite import open_store

if TYPE_CHECKING:
    from xclaw.sandbox import Backend


@dataclass(frozen=True, slots=True)
class EvalOptions:
    model: str | None = None  # any --model spec; a case's scripted model wins
    jobs: int = 1
    approval: ApprovalMode = "deny"
    sandbox: str | None = None  # auto | bwrap | host (None: XCLAW_SANDBOX, then auto)
    keep: bool = False  # keep each case's folder (copy, store, outputs) for inspection
    base_url: str | None = None
    work_root: Path | None = None  # where the case folders are made (default: the temp dir)
    protocol: str | None = None  # native | xml | auto for --model (models.setup)
    # The configuration of the dataset's folder, resolved once for the whole eval (None:
    # resolved by run_dataset); every case's model, sandbox and commands follow it.
    config: XclawConfig | None = None


async def run_dataset(loaded: LoadedDataset, options: EvalOptions) -> EvalReport:
    """All cases of ``loaded``, at most ``options.jobs`` at a time, results in dataset order."""
    started = time.monotonic()
    if options.config is None:
        options = replace(options, config=resolve_config(loaded.root))
    gate = asyncio.Semaphore(max(1, options.jobs))

    async def one(case: Case) -> CaseResult:
        async with gate:
            return await run_case(loaded, case, options)

    results = await asyncio.gather(*(one(c) for c in loaded.cases))
    return EvalReport(
        loaded.dataset.name,
        str(loaded.path),
        options.model,
        list(results),
        time.monotonic() - started,
    )


async def run_case(loaded: LoadedDataset, case: Case, options: EvalOptions) -> CaseResult:
    started = time.monotonic()
    result = CaseResult(case.id, list(case.tags), case.model or options.model or "")
    result.started_at = time.time()
    missing = [p for p in case.requires if shutil.which(p) is None]
    if missing:
        result.status = "skipped"
        result.reason = f"needs {', '.join(missing)} on PATH"
        result.finished_at = result.started_at
        return result
    base = Path(tempfile.mkdtemp(prefix=f"xclaw-eval-{case.id}-", dir=options.work_root))
    try:
        await _run_in(loaded, case, options, base, result)
    except XclawError as err:  # bad script path, model spec, sandbox: this case fails
        result.fail(Failure(err.code, err.message + (f" {err.hint}" if err.hint else "")))
    except Exception as err:  # noqa: BLE001 - one broken case must not end the others
        result.fail(Failure("EVAL_CASE_CRASHED", f"{type(err).__name__}: {err}"))
    finally:
        result.duration_s = time.monotonic() - started
        result.finished_at = time.time()
        if options.keep:
            result.workdir = str(base)
        else:
            await asyncio.to_thread(shutil.rmtree, base, True)
    if result.status != "failed":
        result.status = "passed"
    return result


async def _run_in(
    loaded: LoadedDataset, case: Case, options: EvalOptions, base: Path, result: CaseResult
) -> None:
    fixture = loaded.resolve(case.fixture, what="fixture", folder=True)
    project = base / "project"
    await asyncio.to_thread(shutil.copytree, fixture, project, symlinks=True)
    approver = CaseApprover(options.approval, case.allow)
    for argv in case.setup:
        done = await run_command(
            project, argv, approver=approver, sandbox=_sandbox(options), output_dir=base / "out"
        )
        if not done.ok:
            result.fail(Failure("EVAL_SETUP_FAILED", describe_failure(argv, done)))
            return
    run = await _run_agent(loaded, case, options, project, base, approver, result)
    if run is None:
        return
    result.fail(*check_tools(case, result.tools_called))
    result.fail(*check_reply(case.assertions.reply, run.reply))
    result.fail(*check_files(loaded, case, project, fixture))
    await _run_checks(loaded, case, options, project, base, approver, result)


async def run_static_checks(
    loaded: LoadedDataset, case: Case, project: Path, options: EvalOptions
) -> list[Failure]:
    """File and command assertions on ``project`` (no agent): the dataset sanity check."""
    fixture = loaded.resolve(case.fixture, what="fixture", folder=True)
    result = CaseResult(case.id, [], "")
    result.fail(*check_files(loaded, case, project, fixture))
    approver = CaseApprover(options.approval, case.allow)
    await _run_checks(loaded, case, options, project, project.parent, approver, result)
    return result.failures


async def _run_checks(
    loaded: LoadedDataset,
    case: Case,
    options: EvalOptions,
    project: Path,
    base: Path,
    approver: CaseApprover,
    result: CaseResult,
) -> None:
    if case.checks is not None:
        source = loaded.resolve(case.checks, what="checks", folder=True)
        await asyncio.to_thread(overlay, source, project)
    for cmd in case.assertions.commands:
        done = await run_command(
            project,
            cmd.argv,
            approver=approver,
            sandbox=_sandbox(options),
            output_dir=base / "out",
            cwd=cmd.cwd,
            timeout_s=cmd.timeout_s,
        )
        if not done.ok:
            result.fail(Failure("COMMAND_ASSERTION_FAILED", describe_failure(cmd.argv, done)))


async def _run_agent(
    loaded: LoadedDataset,
    case: Case,
    options: EvalOptions,
    project: Path,
    base: Path,
    approver: CaseApprover,
    result: CaseResult,
) -> RunResult | None:
    """The agent on the case's task; ``None`` when it timed out (recorded as a failure)."""
    model = _model(loaded, case, options)
    observer = CaseObserver()
    bus = EventBus()
    bus.subscribe(observer)
    session = f"eval-{case.id}-{secrets.token_hex(3)}"
    run: RunResult | None = None
    store = None
    try:
        store = open_store(base / "store" / "xclaw.db")  # the case's own, outside its copy
        # The built-in coding tools only: a dataset's score must not depend on which
        # plugins or MCP servers the person running it has installed.
        agent = build_coding(
            _config(options),
            project,
            Overrides(sandbox=options.sandbox),
            model=model,
            model_spec=result.model,
            surface=Surface(approver=approver, bus=bus, store=store, observe=False),
            face=CodingFace(
                limits=Limits(max_turns=case.max_turns, wall_time_s=case.timeout_s),
                plugins=False,
                mcp=False,
            ),
            sandbox=plan_sandbox(_config(options), options.sandbox),
        ).agent
        async with asyncio.timeout(case.timeout_s):
            run = await agent.run(case.task, session_id=session)
    except TimeoutError:
        result.fail(Failure("EVAL_CASE_TIMEOUT", f"the case ran longer than {case.timeout_s:g}s"))
    finally:
        await model.aclose()
        if store is not None:
            store.close()
        _record_usage(result, observer, model, session, approver)
    if run is not None:
        result.run_status = run.status
        result.reply = run.reply
        result.reason = run.reason
        if run.status != "completed":
            result.fail(
                Failure("EVAL_RUN_NOT_COMPLETED", f"the run ended {run.status}: {run.reason}")
            )
    return run


def _record_usage(
    result: CaseResult, observer: CaseObserver, model: Model, session: str, approver: CaseApprover
) -> None:
    result.session_id = session
    result.tools_called = list(observer.proposed)
    result.tool_calls = list(observer.calls)
    result.turns = observer.turns
    result.input_tokens = observer.input_tokens
    result.output_tokens = observer.output_tokens
    result.cost_usd = model_info(model).cost(observer.input_tokens, observer.output_tokens)
    result.approvals_denied = list(approver.denied)


def _model(loaded: LoadedDataset, case: Case, options: EvalOptions) -> Model:
    if case.model is not None:
        script = loaded.resolve(case.model.removeprefix("scripted:"), what="script", folder=False)
        return resolve_model(f"scripted:{script}", model_settings=_config(options).models)
    return resolve_model(
        options.model,
        base_url=options.base_url,
        project=loaded.root,
        protocol=options.protocol,
        model_settings=_config(options).models,
    )


def _config(options: EvalOptions) -> XclawConfig:
    return options.config if options.config is not None else resolve_config()  # run_case alone


def _sandbox(options: EvalOptions) -> Backend:
    """A new sandbox for one dataset command: the user's settings."""
    from xclaw.sandbox.resolve import session_sandbox

    return session_sandbox(_config(options), options.sandbox).sandbox

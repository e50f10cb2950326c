"""``full`` sandbox mode: each session gets its own remote sandbox, through the ``e2b`` SDK.

The sandbox is a microVM behind an E2B-compatible API (E2B itself, or a self-hosted service
such as CubeSandbox that ``E2B_API_URL`` points at). It is created on a session's first
command, reused for every later one (files and installed packages persist) and killed by
``close()``; ``SandboxPool.close_all()`` kills every one on shutdown or Ctrl+C.

Commands never fall back to this machine: when the service cannot be reached or the sandbox
breaks, the command fails with SANDBOX_UNAVAILABLE or SANDBOX_FAILED. The project is synced
around every command by ``remote_sync.WorkingCopy`` (see there for what is never copied back).
"""

from __future__ import annotations

import asyncio
import os
import secrets
import shlex
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import httpx
from e2b import (
    AsyncSandbox,
    AuthenticationException,
    CommandExitException,
    NotFoundException,
    SandboxNotFoundException,
    SandboxNotRunningException,
    TimeoutException,
)
from e2b.connection_config import ApiParams
from e2b.sandbox_async.commands.command_handle import AsyncCommandHandle

from xclaw.core.errors import ToolError
from xclaw.core.sandbox import Mode
from xclaw.redact import MASK, redact
from xclaw.sandbox.base import CommandRequest, OutputCallback, RemoteOutcome
from xclaw.sandbox.remote_sync import SyncReport, WorkingCopy

UNAVAILABLE = "SANDBOX_UNAVAILABLE"  # no sandbox could be had: service, key, template
FAILED = "SANDBOX_FAILED"  # the sandbox existed but broke, or syncing with it failed
DEFAULT_WORKDIR = "/home/user/project"
DEFAULT_LIFETIME_S = 3600
_KILL_GRACE_S = 5.0
_STREAM_GRACE_S = 30.0  # the SDK's own stream deadline only backs up ours


@dataclass(frozen=True, slots=True)
class E2BSettings:
    """How to reach the sandbox service; ``from_env`` reads what the SDK's users set."""

    template: str
    api_key: str = field(repr=False)
    api_url: str | None = None  # E2B_API_URL; None: https://api.<domain>
    domain: str | None = None  # E2B_DOMAIN; None: the SDK's default (e2b.app)
    sandbox_url: str | None = None  # E2B_SANDBOX_URL: one fixed envd address (self-hosted, tests)
    workdir: str = DEFAULT_WORKDIR
    lifetime_s: int = DEFAULT_LIFETIME_S  # the service kills an idle sandbox after this
    request_timeout_s: float = 60.0

    def __post_init__(self) -> None:
        clean = os.path.normpath(self.workdir)
        if not self.workdir.startswith("/") or clean != self.workdir or clean == "/":
            raise ToolError(
                f"The sandbox working copy path must be an absolute folder, not {self.workdir!r}.",
                code=UNAVAILABLE,
                hint=f"Use a path such as {DEFAULT_WORKDIR}.",
            )

    @classmethod
    def from_env(
        cls,
        env: Mapping[str, str] | None = None,
        *,
        template: str | None = None,
        workdir: str | None = None,
        lifetime_s: int | None = None,
    ) -> E2BSettings:
        """Settings from the environment; ``template``/``workdir`` from config win."""
        env = os.environ if env is None else env
        key = env.get("E2B_API_KEY", "").strip()
        if not key:
            raise ToolError(
                "Sandbox mode 'full' needs an API key for the sandbox service.",
                code=UNAVAILABLE,
                hint="Set E2B_API_KEY (and E2B_API_URL for a self-hosted service).",
            )
        template = template or env.get("E2B_TEMPLATE_ID") or env.get("CUBE_TEMPLATE_ID")
        if not template:
            raise ToolError(
                "Sandbox mode 'full' needs the id of the sandbox template to start.",
                code=UNAVAILABLE,
                hint="Set E2B_TEMPLATE_ID (or CUBE_TEMPLATE_ID), or sandbox.template in "
                "xclaw.yaml.",
            )
        return cls(
            template=template,
            api_key=key,
            api_url=env.get("E2B_API_URL") or None,
            domain=env.get("E2B_DOMAIN") or None,
            sandbox_url=env.get("E2B_SANDBOX_URL") or None,
            workdir=workdir or DEFAULT_WORKDIR,
            lifetime_s=lifetime_s or DEFAULT_LIFETIME_S,
        )

    def api_params(self) -> ApiParams:
        params = ApiParams(api_key=self.api_key, request_timeout=self.request_timeout_s)
        if self.api_url:
            params["api_url"] = self.api_url
        if self.domain:
            params["domain"] = self.domain
        if self.sandbox_url:
            params["sandbox_url"] = self.sandbox_url
        return params

    def where(self) -> str:
        """The API address for messages, without any credentials in it."""
        url = urlsplit(self.api_url or f"https://api.{self.domain or 'e2b.app'}")
        return f"{url.scheme}://{url.hostname or ''}" + (f":{url.port}" if url.port else "")

    def clean(self, err: BaseException) -> str:
        """An SDK error as one line that never carries the API key."""
        text = " ".join((str(err) or type(err).__name__).split())
        if self.api_key:
            text = text.replace(self.api_key, MASK)
        return redact(text)[:400]


class E2BSandbox:
    """One session's remote sandbox (``RemoteSandbox``); commands run one at a time."""

    mode: Mode = "full"

    def __init__(self, settings: E2BSettings, *, session_id: str) -> None:
        self.settings = settings
        self.session_id = session_id
        self._sbx: AsyncSandbox | None = None
        self._copy: WorkingCopy | None = None
        self._lock = asyncio.Lock()  # the sync diff assumes no other command runs meanwhile
        self._closed = False
        self._lost = False
        self._renewed_at = 0.0

    @property
    def sandbox_id(self) -> str | None:
        return self._sbx.sandbox_id if self._sbx is not None else None

    async def run(
        self,
        request: CommandRequest,
        *,
        stdin: str | None,
        timeout_s: float,
        on_output: OutputCallback,
    ) -> RemoteOutcome:
        async with self._lock:
            started = time.monotonic()
            report = SyncReport()
            sbx = await self._ensure(report)
            copy = self._working_copy(request.root)
            try:
                await self._renew(sbx)
                await copy.push(sbx, report)
                before = await copy.listing(sbx)
                code, timed_out = await self._execute(
                    sbx, copy, request, stdin, timeout_s, on_output, report
                )
                after = await copy.listing(sbx)
                await copy.pull(sbx, before, after, report)
            except ToolError:
                raise
            except Exception as err:
                raise await self._broken(sbx, err) from None
            elapsed = int((time.monotonic() - started) * 1000)
            return RemoteOutcome(code, timed_out, elapsed, notes=report.notes())

    async def close(self) -> None:
        """Kill the sandbox (idempotent). Raises SANDBOX_FAILED when the service refused."""
        self._closed = True
        sbx, self._sbx, self._copy = self._sbx, None, None
        if sbx is None:
            return
        try:
            await sbx.kill()
        except Exception as err:
            raise ToolError(
                f"Could not kill remote sandbox {sbx.sandbox_id}: {self.settings.clean(err)}",
                code=FAILED,
                hint=f"It stops by itself within {self.settings.lifetime_s} s; or kill it "
                "in the sandbox service.",
            ) from None

    # -- lifecycle -----------------------------------------------------------------------

    async def _ensure(self, report: SyncReport) -> AsyncSandbox:
        if self._closed:
            raise ToolError(
                "This session's remote sandbox was already shut down.",
                code=FAILED,
                hint="Start a new session to run more commands.",
            )
        if self._sbx is not None:
            return self._sbx
        s = self.settings
        try:
            sbx = await AsyncSandbox.create(
                template=s.template,
                timeout=s.lifetime_s,
                metadata={"xclaw_session": self.session_id},
                **s.api_params(),
            )
        except Exception as err:
            raise self._unavailable(err) from None
        try:
            if self._closed:  # close() ran while the service was starting it
                raise ToolError("The session ended while its sandbox was starting.", code=FAILED)
            await sbx.files.make_dir(s.workdir)
        except BaseException as err:
            await asyncio.shield(_kill_quietly(sbx))
            if isinstance(err, Exception) and not isinstance(err, ToolError):
                raise self._unavailable(err) from None
            raise
        if self._lost:
            report.say("A new remote sandbox was started: files only in the old one are gone.")
        report.say(
            f"Started remote sandbox {sbx.sandbox_id} (template {s.template}); "
            f"the project is copied to {s.workdir}."
        )
        self._sbx, self._renewed_at = sbx, time.monotonic()
        return sbx

    async def _renew(self, sbx: AsyncSandbox) -> None:
        # The service kills a sandbox `lifetime_s` after creation unless told otherwise.
        if time.monotonic() - self._renewed_at > self.settings.lifetime_s / 2:
            await sbx.set_timeout(self.settings.lifetime_s)
            self._renewed_at = time.monotonic()

    def _working_copy(self, root: Path) -> WorkingCopy:
        if self._copy is None:
            self._copy = WorkingCopy(root, self.settings.workdir)
        elif self._copy.root != root:
            raise ToolError(
                f"This session's sandbox holds a copy of {self._copy.root}, not {root}.",
                code=FAILED,
                hint="Use one project root per session.",
            )
        return self._copy

    async def _broken(self, sbx: AsyncSandbox, err: Exception) -> ToolError:
        sid = sbx.sandbox_id
        if isinstance(err, SandboxNotRunningException | SandboxNotFoundException):
            self._sbx, self._copy, self._lost = None, None, True
            await _kill_quietly(sbx)
            return ToolError(
                f"Remote sandbox {sid} is gone (killed, crashed or out of time); "
                "files and processes that were only inside it are lost.",
                code=FAILED,
                hint="Run the command again: a new sandbox starts and the project is "
                "uploaded again.",
            )
        return ToolError(
            f"Remote sandbox {sid} failed: {self.settings.clean(err)}",
            code=FAILED,
            hint=f"Retry; if it keeps failing, check the sandbox service at "
            f"{self.settings.where()}.",
        )

    def _unavailable(self, err: BaseException) -> ToolError:
        s = self.settings
        where = s.where()
        if isinstance(err, AuthenticationException):
            return ToolError(
                f"The sandbox service at {where} refused the API key (401 Unauthorized).",
                code=UNAVAILABLE,
                hint="Check E2B_API_KEY: it must be a key issued by this service (E2B_API_URL).",
            )
        if getattr(err, "status_code", None) == 404:
            return ToolError(
                f"The sandbox service at {where} has no template {s.template!r}.",
                code=UNAVAILABLE,
                hint="Set E2B_TEMPLATE_ID (or CUBE_TEMPLATE_ID, or sandbox.template in "
                "xclaw.yaml) to a template that exists there.",
            )
        if isinstance(err, httpx.TransportError | OSError | TimeoutException):
            return ToolError(
                f"Cannot reach the sandbox service at {where}: {s.clean(err)}",
                code=UNAVAILABLE,
                hint="Check E2B_API_URL (or E2B_DOMAIN) and that the service is running. "
                "Commands are never run on this machine instead.",
            )
        return ToolError(
            f"The sandbox service at {where} could not start a sandbox: {s.clean(err)}",
            code=UNAVAILABLE,
            hint="Check the service's status and quota, then retry.",
        )

    # -- one command ---------------------------------------------------------------------

    async def _execute(
        self,
        sbx: AsyncSandbox,
        copy: WorkingCopy,
        request: CommandRequest,
        stdin: str | None,
        timeout_s: float,
        on_output: OutputCallback,
        report: SyncReport,
    ) -> tuple[int | None, bool]:
        try:
            cwd = copy.remote_path(request.cwd)
        except ValueError:
            raise ToolError(
                f"The working folder {request.cwd} is outside the project root {copy.root}.",
                code=FAILED,
                hint="Run commands from inside the project root.",
            ) from None
        if cwd != copy.workdir:
            await sbx.files.make_dir(cwd)  # an empty local folder is not uploaded
        # `exec` so the program replaces envd's `bash -l -c` and a kill reaches it directly.
        handle = await sbx.commands.run(
            "exec " + shlex.join([request.program, *request.argv]),
            background=True,
            envs=dict(request.env),
            cwd=cwd,
            stdin=True if stdin is not None else None,
            timeout=timeout_s + _STREAM_GRACE_S,
            retain_output=False,
            on_stdout=lambda text: on_output("stdout", text.encode()),
            on_stderr=lambda text: on_output("stderr", text.encode()),
        )
        # The SDK reads the stream in its own task; cancelling a wait on it would cancel
        # that task too, so we wait on a shielded copy and stop the stream ourselves.
        waiter = asyncio.ensure_future(_exit_code(handle))
        deadline = asyncio.timeout(timeout_s)
        try:
            async with deadline:
                if stdin is not None:
                    await _feed(handle, stdin)
                return await asyncio.shield(waiter), False
        except TimeoutError:
            if not deadline.expired():
                raise
            await self._stop(handle, waiter, report)
            return None, True
        except BaseException:  # Ctrl+C (cancellation) or a broken stream
            await asyncio.shield(self._stop(handle, waiter, report))
            raise

    async def _stop(
        self, handle: AsyncCommandHandle[None], waiter: asyncio.Future[int], report: SyncReport
    ) -> None:
        try:
            async with asyncio.timeout(_KILL_GRACE_S):
                if not waiter.done():
                    await handle.kill()
                await asyncio.wait([waiter])  # output that raced the kill still arrives
        except Exception:
            report.say(f"The remote process {handle.pid} could not be confirmed killed.")
        finally:
            await handle.disconnect()
            if waiter.done() and not waiter.cancelled():
                waiter.exception()  # retrieved: it is only the killed process's exit
            waiter.cancel()


def sandbox_from_environment(
    env: Mapping[str, str] | None = None,
    *,
    session_id: str | None = None,
    template: str | None = None,
    workdir: str | None = None,
) -> E2BSandbox:
    """One session's sandbox from ``E2B_*`` variables (raises SANDBOX_UNAVAILABLE if unset).

    Nothing is contacted yet: the remote sandbox starts with the session's first command.
    """
    settings = E2BSettings.from_env(env, template=template, workdir=workdir)
    return E2BSandbox(settings, session_id=session_id or secrets.token_hex(8))


class SandboxPool:
    """Every session's sandbox, by session id; ``close_all()`` kills them all."""

    def __init__(self, settings: E2BSettings) -> None:
        self.settings = settings
        self._by_session: dict[str, E2BSandbox] = {}

    def __len__(self) -> int:
        return len(self._by_session)

    def get_or_create(self, session_id: str) -> E2BSandbox:
        """The session's sandbox; the remote one is only started by its first command."""
        box = self._by_session.get(session_id)
        if box is None:
            box = self._by_session[session_id] = E2BSandbox(self.settings, session_id=session_id)
        return box

    async def close(self, session_id: str) -> None:
        """End of one session: kill its sandbox."""
        box = self._by_session.pop(session_id, None)
        if box is not None:
            await box.close()

    async def close_all(self) -> list[ToolError]:
        """Kill every sandbox; the errors of those the service would not kill, for display."""
        boxes, self._by_session = list(self._by_session.values()), {}
        results = await asyncio.gather(*(b.close() for b in boxes), return_exceptions=True)
        errors: list[ToolError] = []
        for result in results:
            if isinstance(result, ToolError):
                errors.append(result)
            elif isinstance(result, BaseException):
                raise result
        return errors

    async def __aenter__(self) -> SandboxPool:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close_all()


async def _feed(handle: AsyncCommandHandle[None], data: str) -> None:
    try:
        if data:
            await handle.send_stdin(data)
        await handle.close_stdin()
    except NotFoundException:
        pass  # the program exited before reading all of its input


async def _exit_code(handle: AsyncCommandHandle[None]) -> int:
    try:
        result = await handle.wait()
    except CommandExitException as done:  # the SDK raises for any non-zero exit
        return done.exit_code
    return result.exit_code


async def _kill_quietly(sbx: AsyncSandbox) -> None:
    try:
        async with asyncio.timeout(_KILL_GRACE_S):
            await sbx.kill()
    except Exception:
        pass  # best effort: it is unusable either way and expires on its own

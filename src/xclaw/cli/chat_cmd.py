"""``xclaw chat``: a terminal client of the gateway over WebSocket.

The server never reads the terminal, so approvals never fight it for stdin: this client shows
the model's reply (rendered as Markdown with rich, streamed while it is written on a terminal)
and tool events, and asks approvals here: ``y`` allows once, ``t`` for the rest of the task
(when offered), ``n`` denies; anything else asks again. ``you>`` is the prompt: one line is one
message, the next line is read once the reply came. Ctrl+C during a turn sends ``stop``;
Ctrl+D (end of input) quits.

Commands: ``/steps`` (the session's steps), ``/rollback STEP`` (rewind to before it),
``/fork STEP`` (a new session with the history up to it; the chat goes on there), ``/new``
(a new session), ``/help``; a line starting with ``//`` is sent as a message starting with
``/``. Steps, rollback and fork are the gateway's own endpoints, the ones the web UI uses
(``GET /api/sessions/{id}``, ``POST /api/sessions/{id}/rollback|fork``, with the same token):
the same checks and refusals as ``xclaw rollback``/``xclaw fork``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import sys
import threading
from collections.abc import Awaitable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TextIO
from urllib.parse import quote, urlsplit

import typer

from xclaw.cli.common import fail
from xclaw.core.errors import ConfigError, XclawError

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.live import Live
    from websockets.asyncio.client import ClientConnection

    from xclaw.redact import LineRedactor

__all__ = ["chat", "run_chat"]

TOKEN_ENV = "XCLAW_GATEWAY_TOKEN"
_COMMAND = re.compile(r"^/[a-z]+$")
_HELP = """commands:
  /steps            the steps of this session (their ids go with /rollback and /fork)
  /rollback STEP    rewind this session to just before STEP (side effects stay done)
  /fork STEP        a new session with the history up to and including STEP; chat there
  /new              a new session
  //text            send a message that starts with "/"
approvals: y = allow once, t = allow for this task (when offered), n = deny
Ctrl+C stops a running turn, Ctrl+D quits"""


def _client_token(token_file: Path | None) -> str:
    from xclaw.gateway.auth import gateway_token_path, load_gateway_token

    if os.environ.get(TOKEN_ENV):
        return os.environ[TOKEN_ENV].strip()
    path = token_file or gateway_token_path()
    if not path.exists():
        raise ConfigError(
            "No gateway token found.",
            code="GATEWAY_TOKEN_MISSING",
            hint=f"Start `xclaw serve` first, or set {TOKEN_ENV}, or pass --token-file.",
        )
    return load_gateway_token(path)[0]


class _Lines:
    """Lines of ``stream`` read by a daemon thread (so Ctrl+C never waits on a blocked read),
    handed out in order as they are asked for."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.queue: asyncio.Queue[str | None] = asyncio.Queue()
        self.back: list[str | None] = []  # lines put back, read before the queue
        self.thread: threading.Thread | None = None

    def _pump(self, loop: asyncio.AbstractEventLoop) -> None:
        for line in iter(self.stream.readline, ""):
            loop.call_soon_threadsafe(self.queue.put_nowait, line.rstrip("\n"))
        loop.call_soon_threadsafe(self.queue.put_nowait, None)

    async def next(self) -> str | None:
        """The next line; None at the end of input (and at every call after it)."""
        if self.back:
            return self.back.pop(0)
        if self.thread is None:
            loop = asyncio.get_running_loop()
            self.thread = threading.Thread(target=self._pump, args=(loop,), daemon=True)
            self.thread.start()
        line = await self.queue.get()
        if line is None:
            self.queue.put_nowait(None)
        return line


class _Link:
    """One WebSocket to the gateway: its frames read into a queue as they come (so waiting
    for a line and for a frame at once loses neither)."""

    def __init__(self, ws: ClientConnection, session_id: str) -> None:
        self.ws = ws
        self.sid = session_id
        self.frames: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self.back: list[dict[str, Any]] = []  # frames put back, read before the queue
        self.reader = asyncio.get_running_loop().create_task(self._read())

    @classmethod
    async def open(cls, url: str, token: str, query: str) -> _Link:
        from websockets.asyncio.client import connect

        ws = await connect(url + query, additional_headers={"Authorization": f"Bearer {token}"})
        first = json.loads(await asyncio.wait_for(ws.recv(), 15))
        if first.get("type") != "session":
            await ws.close()
            raise ConfigError(
                f"The gateway refused the session: {first.get('message')}",
                code=str(first.get("code") or "GATEWAY_REFUSED"),
            )
        return cls(ws, str(first["sessionId"]))

    async def _read(self) -> None:
        from websockets.exceptions import ConnectionClosed

        try:
            async for raw in self.ws:
                try:
                    frame = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(frame, dict):
                    self.frames.put_nowait(frame)
        except ConnectionClosed:
            pass
        finally:
            self.frames.put_nowait(None)

    async def next(self) -> dict[str, Any]:
        frame = self.back.pop(0) if self.back else await self.frames.get()
        if frame is None:
            self.frames.put_nowait(None)  # closed for every later read too
            raise ConfigError("The gateway closed the connection.", code="GATEWAY_CLOSED")
        return frame

    async def send(self, frame: dict[str, Any]) -> None:
        await self.ws.send(json.dumps(frame))

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.ws.close()
        self.reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self.reader


async def _race(lines: _Lines, link: _Link) -> tuple[str | None, dict[str, Any] | None]:
    """The next line typed or the next frame, whichever comes first: ``(line, None)`` or
    ``(None, frame)``; end of input is ``(None, None)``."""
    if link.back:
        return None, await link.next()
    line_task = asyncio.ensure_future(lines.next())
    frame_task = asyncio.ensure_future(link.next())
    done, pending = await asyncio.wait({line_task, frame_task}, return_when="FIRST_COMPLETED")
    for task in pending:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, XclawError):
            await task
    if frame_task in done:
        if line_task in done:  # both at once: the line is the next one read
            lines.back.insert(0, line_task.result())
        return None, frame_task.result()
    return line_task.result(), None


class _Screen:
    """What the user sees: rich on a terminal (colour, the reply redrawn as it streams),
    plain text otherwise (the reply rendered once it is complete)."""

    def __init__(self, out: TextIO, *, echo: bool) -> None:
        from rich.console import Console

        self.console: Console = Console(file=out, highlight=False, emoji=False)
        self.echo_input = echo  # input is not a terminal: show what was read
        self.text = ""  # the model's text since the last tool event
        self.streamed = False  # this turn's text came as deltas
        self.live: Live | None = None
        self.tool_text: dict[tuple[str, str], LineRedactor] = {}

    # -- the reply --------------------------------------------------------------------------
    def delta(self, text: str) -> None:
        self.text += text
        self.streamed = True
        if not self.console.is_terminal:
            return
        from rich.live import Live

        if self.live is None:
            self.live = Live(console=self.console, refresh_per_second=8, transient=True)
            self.live.start()
        self.live.update(self._markdown(_tail(self.text, self.console.height - 2)))

    def flush(self) -> None:
        """The text so far, rendered whole (it replaces the streamed draft)."""
        if self.live is not None:
            self.live.stop()
            self.live = None
        text, self.text = self.text, ""
        if text.strip():
            self._render(self._markdown(text))

    def _markdown(self, text: str) -> RenderableType:
        from rich.markdown import Markdown

        from xclaw.redact import redact

        return Markdown(redact(text))

    # -- lines of our own -------------------------------------------------------------------
    def prompt(self, text: str = "you> ") -> None:
        self.flush()
        self.console.print(text, style="bold cyan", end="", markup=False)
        self.console.file.flush()

    def echo(self, line: str) -> None:
        if self.echo_input:
            self.console.print(line, markup=False)

    def note(self, text: str, style: str = "dim") -> None:
        self.flush()
        self.console.print(text, style=style, markup=False)

    def error(self, code: object, message: object) -> None:
        from xclaw.redact import redact

        self.flush()
        self.console.print(f"error {code}: {redact(str(message))}", style="red", markup=False)

    def print(self, renderable: RenderableType) -> None:
        self.flush()
        self._render(renderable)

    def _render(self, renderable: RenderableType) -> None:
        """``renderable`` as rich lays it out; off a terminal without the padding to the
        full width that rich adds."""
        if self.console.is_terminal:
            self.console.print(renderable)
            return
        with self.console.capture() as captured:
            self.console.print(renderable)
        plain = "\n".join(line.rstrip() for line in captured.get().splitlines())
        self.console.file.write(plain + "\n")
        self.console.file.flush()

    # -- frames -----------------------------------------------------------------------------
    def event(self, event: dict[str, Any]) -> None:
        from xclaw.cli.render import summarize_args
        from xclaw.redact import LineRedactor

        kind, payload = event.get("type"), event.get("payload") or {}
        call = str(event.get("callId") or "")
        if kind == "tool.proposed":
            args = payload.get("arguments")
            shown = summarize_args(args) if isinstance(args, dict) else ""
            self.note(f"[tool] {payload.get('name')} {shown}", style="cyan")
        elif kind == "tool.output":
            stream = str(payload.get("stream", "stdout"))
            redactor = self.tool_text.setdefault((call, stream), LineRedactor())
            self._output(stream, redactor.feed(str(payload.get("text", ""))))
        elif kind == "tool.completed":
            for key in [k for k in self.tool_text if k[0] == call]:
                self._output(key[1], self.tool_text.pop(key).flush())
            code = f"{payload['error_code']}: " if payload.get("error_code") else ""
            mark, style = ("✓", "green") if payload.get("ok", not code) else ("✗", "red")
            self.note(f"{mark} {payload.get('name')}: {code}{payload.get('message', '')}", style)
        elif kind in ("model.failover", "model.retry"):
            self.note(f"({kind}: {payload.get('reason') or payload.get('to') or ''})")

    def _output(self, stream: str, lines: list[str]) -> None:
        style = "red" if stream == "stderr" else "dim"
        for line in lines:
            self.note(f"  │ {line}", style)

    def reply(self, frame: dict[str, Any]) -> None:
        if not self.streamed and str(frame.get("text") or "").strip():
            self.text = str(frame["text"])  # a reply that came without deltas
        self.flush()
        self.streamed = False
        status = frame.get("status")
        self.note(f"[{status}]", "dim" if status == "completed" else "yellow")


def _tail(text: str, height: int) -> str:
    """The end of ``text`` that fits ``height`` lines (a draft while it streams), with an
    opening code fence put back when the cut fell inside a code block."""
    rows = text.split("\n")
    if len(rows) <= max(height, 3):
        return text
    head, tail = rows[: -max(height, 3)], rows[-max(height, 3) :]
    fence = "```\n" if sum(r.lstrip().startswith("```") for r in head) % 2 else ""
    return fence + "\n".join(tail)


class _Api:
    """The gateway's HTTP endpoints the web UI uses, for the session commands."""

    def __init__(self, ws_url: str, token: str) -> None:
        parts = urlsplit(ws_url)
        scheme = "https" if parts.scheme == "wss" else "http"
        path = parts.path.removesuffix("/ws").rstrip("/")
        self.base = f"{scheme}://{parts.netloc}{path}"
        self.headers = {"Authorization": f"Bearer {token}"}

    async def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        import httpx

        async with httpx.AsyncClient(base_url=self.base, timeout=15.0) as http:
            response = await http.request(method, path, json=body, headers=self.headers)
        try:
            return response.status_code, response.json()
        except ValueError:
            return response.status_code, None


class _Chat:
    def __init__(self, url: str, token: str, screen: _Screen, lines: _Lines, link: _Link) -> None:
        self.url, self.token = url, token
        self.screen, self.lines, self.link = screen, lines, link
        self.api = _Api(url, token)

    async def run(self) -> None:
        while True:
            self.screen.prompt()
            line, frame = await _race(self.lines, self.link)
            if frame is not None:  # someone else's turn in this session, or a resumed one
                self.screen.console.print()
                await self.turn(frame)
                continue
            if line is None:
                self.screen.console.print()
                return
            self.screen.echo(line)
            text = line.strip()
            if not text:
                continue
            if _COMMAND.match(text.split()[0]):
                await self.command(text.split())
                continue
            if text.startswith("//"):
                text = text[1:]
            message = {"type": "message", "content": text, "sessionId": self.link.sid}
            await self.link.send(message)
            with _stop_on_interrupt(self.link, self.screen):
                await self.turn()

    # -- a turn -----------------------------------------------------------------------------
    async def turn(self, frame: dict[str, Any] | None = None) -> None:
        """Frames until the reply (or an error that ends the turn)."""
        asked_for: str | None = None  # the call the next approval request is about
        while True:
            frame = frame or await self.link.next()
            kind = frame.get("type")
            if kind == "delta":
                self.screen.delta(str(frame.get("text", "")))
            elif kind == "event":
                event = frame.get("event") or {}
                if event.get("type") == "approval.required":
                    asked_for = str(event.get("callId") or "")
                self.screen.event(event)
            elif kind == "approval.request":
                answer = await self.ask(frame, asked_for)
                if answer is not None:
                    reply = {"type": "approval.response", "requestId": frame.get("requestId")}
                    await self.link.send({**reply, "answer": answer})
            elif kind == "reply":
                self.screen.reply(frame)
                return
            elif kind == "error":
                self.screen.error(frame.get("code"), frame.get("message"))
                if frame.get("code") != "APPROVAL_UNKNOWN":  # a late answer ends nothing
                    return
            frame = None

    async def ask(self, request: dict[str, Any], call: str | None) -> str | None:
        """``y``/``t``/``n`` for an approval; None when it was settled meanwhile (answered
        elsewhere, timed out, the turn stopped)."""
        grant = bool(request.get("grantOffered"))
        self.screen.note(
            f"approve? {request.get('summary')} [{request.get('risk')}]", style="bold yellow"
        )
        choices = "y = allow once, t = for this task, n = deny" if grant else "y = once, n = deny"
        self.screen.note(f"  {choices}")
        later: list[dict[str, Any]] = []
        try:
            while True:
                self.screen.prompt("approve [y/t/n]? " if grant else "approve [y/n]? ")
                line, frame = await _race(self.lines, self.link)
                if frame is not None:
                    self.screen.console.print()
                    if _settles(frame, call):
                        later.append(frame)
                        self.screen.note("(the question was settled elsewhere)")
                        return None
                    later.append(frame)  # shown once this question is answered
                    continue
                if line is None:
                    self.screen.note("no answer (end of input): denied")
                    return "deny"
                self.screen.echo(line)
                answer = {"y": "once", "yes": "once", "n": "deny", "no": "deny"}.get(
                    line.strip().lower()
                )
                if answer is None and grant and line.strip().lower() in ("t", "task"):
                    answer = "task"
                if answer is not None:
                    return answer
                self.screen.note(
                    "Please answer y, t or n."
                    if grant
                    else "Please answer y or n (t is not offered for this call).",
                    style="yellow",
                )
        finally:
            self.link.back[:0] = later

    # -- commands ---------------------------------------------------------------------------
    async def command(self, words: list[str]) -> None:
        import httpx
        from websockets.exceptions import WebSocketException

        name, args = words[0], words[1:]
        try:
            if name == "/help":
                self.screen.note(_HELP, style="")
            elif name == "/steps" and not args:
                await self.steps()
            elif name in ("/rollback", "/fork") and len(args) == 1:
                await (self.rollback(args[0]) if name == "/rollback" else self.fork(args[0]))
            elif name == "/new" and not args:
                await self.switch("", "a new session")
            elif name in ("/steps", "/new", "/rollback", "/fork"):
                usage = {"/rollback": " STEP", "/fork": " STEP"}.get(name, "")
                self.screen.note(f"usage: {name}{usage}", style="yellow")
            else:
                self.screen.note(
                    f"unknown command {name}: /help lists them (// sends a line starting with /)",
                    style="yellow",
                )
        except httpx.HTTPError as err:
            self.screen.error("GATEWAY_UNREACHABLE", f"the gateway did not answer: {err}")
        except XclawError as err:  # the session to go to was refused: this one goes on
            self.screen.error(err.code, err.message)
        except (OSError, WebSocketException) as err:
            self.screen.error("GATEWAY_UNREACHABLE", f"no new connection: {err}")

    async def steps(self) -> None:
        from rich.table import Table

        status, body = await self.api.call("GET", f"/api/sessions/{quote(self.link.sid)}")
        if status == 404:
            self.screen.note("no steps yet: the session has no recorded turn")
            return
        if status != 200 or not isinstance(body, dict):
            self.screen.error(f"HTTP_{status}", "the gateway did not list the steps")
            return
        steps = [s for s in body.get("steps") or [] if isinstance(s, dict)]
        if not steps:
            self.screen.note("no steps yet")
            return
        table = Table("step", "turn", "kind", "name", "status")
        _step_rows(table, steps, body.get("children"), "")
        self.screen.print(table)

    async def rollback(self, step: str) -> None:
        path = f"/api/sessions/{quote(self.link.sid)}/rollback"
        status, body = await self.api.call("POST", path, {"step": step})
        if not self._ok(status, body):
            return
        self.screen.note(
            f"rewound {self.link.sid} to before {step}: removed {body.get('removedSteps')} "
            f"steps and {body.get('removedItems')} transcript items",
            style="",
        )
        effects = [e for e in body.get("irreversible") or [] if isinstance(e, dict)]
        if effects:
            self.screen.note("these side effects happened and were not undone:", "yellow")
            for effect in effects:
                args = json.dumps(effect.get("arguments"), ensure_ascii=False)[:100]
                self.screen.note(f"  {effect.get('step')} {effect.get('name')} {args}", "yellow")

    async def fork(self, step: str) -> None:
        path = f"/api/sessions/{quote(self.link.sid)}/fork"
        status, body = await self.api.call("POST", path, {"step": step})
        if not self._ok(status, body):
            return
        old = self.link.sid
        await self.switch(
            f"?session={quote(str(body.get('sessionId')))}", f"forked {old} at {step}"
        )

    async def switch(self, query: str, what: str) -> None:
        """This chat goes on in another session (a fork, a new one)."""
        link = await _Link.open(self.url, self.token, query)
        await self.link.close()
        self.link = link
        self.screen.note(f"{what}: now in session {link.sid}", style="bold")

    def _ok(self, status: int, body: Any) -> bool:
        if status == 200 and isinstance(body, dict):
            return True
        if isinstance(body, dict) and body.get("code"):
            nxt = f" ({body['next']})" if body.get("next") else ""
            self.screen.error(body["code"], f"{body.get('message')}{nxt}")
        else:
            self.screen.error(f"HTTP_{status}", "the gateway refused it")
        return False


def _settles(frame: dict[str, Any], call: str | None) -> bool:
    """``frame`` means the open approval needs no answer from here any more."""
    kind = frame.get("type")
    if kind == "reply" or (kind == "error" and frame.get("code") != "APPROVAL_UNKNOWN"):
        return True
    event = frame.get("event") or {}
    resolved = kind == "event" and event.get("type") == "approval.resolved"
    return resolved and (call is None or event.get("callId") == call)


async def run_chat(url: str, token: str, session: str | None, stdin: TextIO, out: TextIO) -> str:
    """Chat until end of input; returns the session id it ended in."""
    screen = _Screen(out, echo=not _isatty(stdin))
    query = f"?session={quote(session)}" if session else "?channel=cli"
    link = await _Link.open(url, token, query)
    chat = _Chat(url, token, screen, _Lines(stdin), link)
    screen.note(f"session {link.sid} (/help lists commands; Ctrl+C stops a turn, Ctrl+D quits)", "")
    try:
        await chat.run()
    finally:
        screen.flush()
        await chat.link.close()
    return chat.link.sid


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (ValueError, OSError):
        return False


@contextlib.contextmanager
def _stop_on_interrupt(link: _Link, screen: _Screen) -> Iterator[None]:
    """During a turn, Ctrl+C asks the gateway to stop it (at the prompt it quits)."""
    loop = asyncio.get_running_loop()
    pending: set[asyncio.Task[None]] = set()

    def stop() -> None:
        screen.note("[stopping]", style="yellow")
        sent: Awaitable[None] = link.send({"type": "stop", "sessionId": link.sid})
        pending.add(loop.create_task(_quiet(sent)))

    try:
        loop.add_signal_handler(signal.SIGINT, stop)
    except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, Windows
        yield
        return
    try:
        yield
    finally:
        loop.remove_signal_handler(signal.SIGINT)


async def _quiet(work: Awaitable[None]) -> None:
    with contextlib.suppress(Exception):
        await work


def chat(
    url: Annotated[str, typer.Option("--url", help="The gateway's WebSocket.")] = (
        "ws://127.0.0.1:8787/ws"
    ),
    session: Annotated[
        str | None,
        typer.Option("--session", help="Continue this session (default: the project's CLI one)."),
    ] = None,
    token_file: Annotated[Path | None, typer.Option("--token-file")] = None,
) -> None:
    """Chat with a running `xclaw serve` from this terminal (approvals are asked here)."""
    from websockets.exceptions import InvalidStatus, WebSocketException

    try:
        token = _client_token(token_file)
        sid = asyncio.run(run_chat(url, token, session, sys.stdin, sys.stdout))
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    except XclawError as err:
        fail(err)
    except (OSError, InvalidStatus, WebSocketException) as err:
        fail(ConfigError(f"Cannot talk to the gateway at {url}: {err}", code="GATEWAY_UNREACHABLE"))
    sys.stdout.write(f"continue with: xclaw chat --session {sid}\n")


def _step_rows(table: Any, steps: list[dict[str, Any]], children: Any, indent: str) -> None:
    """Steps, each worker's child session right under the step that started it (its own
    steps indented below it), as ``xclaw steps`` shows them."""
    from rich.text import Text

    workers = [c for c in children or [] if isinstance(c, dict)]
    for step in steps:
        cells = [step.get(k) for k in ("id", "turn", "kind", "name", "status")]
        cells[0] = indent + str(cells[0])
        table.add_row(*(Text("" if c is None else str(c)) for c in cells))  # no markup
        for child in (c for c in workers if c.get("step") == step.get("id")):
            short = str(child.get("id", "")).rsplit(".", 1)[-1]
            row = [f"{indent}└ {short}", "", "worker", child.get("worker"), child.get("state")]
            table.add_row(*(Text("" if c is None else str(c)) for c in row))
            inner = [s for s in child.get("steps") or [] if isinstance(s, dict)]
            _step_rows(table, inner, child.get("children"), indent + "  ")

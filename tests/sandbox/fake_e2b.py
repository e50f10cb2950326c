"""A local stand-in for an E2B-compatible sandbox service, on 127.0.0.1 only.

It speaks what the installed ``e2b`` SDK sends (read from its source, e2b 2.x):

* the REST API: ``POST /v2/sandboxes`` (``X-API-KEY``, JSON ``NewSandboxV2`` -> 201
  ``Sandbox``), ``DELETE /sandboxes/{id}`` (204/404), ``POST /sandboxes/{id}/timeout`` (204);
* envd's HTTP API: ``GET /health``, ``GET /files?path=`` (bytes), ``POST /files`` (multipart
  ``file`` parts named by their path, or an octet-stream body with ``?path=``);
* envd's Connect RPC with the JSON codec: unary calls are ``POST /<service>/<Method>`` with
  ``application/json`` bodies (errors: HTTP status + ``{"code","message"}``); the server
  stream ``/process.Process/Start`` answers ``application/connect+json``: frames of one flag
  byte and a big-endian u32 length, the last one flagged ``0x02`` (end of stream).

Every sandbox is a temporary directory that plays the microVM's filesystem: ``/home/user/...``
maps to ``<vm>/home/user/...``. Commands really run on this machine (``/bin/bash -l -c``), with
``/home/user`` in their arguments rewritten to the directory, so tests see real exit codes,
output, stdin and files. It is not a security boundary.
"""

from __future__ import annotations

import base64
import json
import os
import queue
import secrets
import signal
import struct
import subprocess
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

ENVD_VERSION = "0.5.7"
_UNARY = "application/json"
_STREAM = "application/connect+json"
_CONNECT_CODES = {404: "not_found", 400: "invalid_argument", 401: "unauthenticated"}


@dataclass
class Call:
    method: str
    path: str
    sandbox_id: str | None
    body: Any = None


@dataclass
class FakeSandbox:
    sandbox_id: str
    template: str
    vm: Path
    token: str
    metadata: dict[str, str]
    timeout_s: int | None
    alive: bool = True
    procs: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict)

    def host(self, path: str) -> Path:
        """The host path behind a sandbox path (``..`` is clamped at the VM's ``/``)."""
        full = os.path.normpath(os.path.join("/home/user", path))
        return self.vm / full.lstrip("/")

    def guest(self, host: Path) -> str:
        return "/" + host.relative_to(self.vm).as_posix()

    def kill_all(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait()
            if proc.stdin:
                proc.stdin.close()


class FakeE2B:
    """The fake service; ``url`` serves both the REST API and envd (``E2B_SANDBOX_URL``)."""

    def __init__(
        self, base: Path, *, api_key: str, templates: tuple[str, ...] = ("xclaw",)
    ) -> None:
        self.base = base
        self.api_key = api_key
        self.templates = set(templates)
        self.calls: list[Call] = []
        self.sandboxes: dict[str, FakeSandbox] = {}
        # ListDir entries appended verbatim once the next command started, as a sandbox
        # taken over by that command might answer; see plant().
        self.extra_entries: list[dict[str, Any]] = []
        self._planted: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._server.fake = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> FakeE2B:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        for sbx in self.sandboxes.values():
            sbx.kill_all()

    def calls_to(self, method: str, path: str) -> list[Call]:
        """Calls to ``path`` exactly, or below it when it ends with a slash."""
        with self._lock:
            return [
                c
                for c in self.calls
                if c.method == method
                and (c.path == path or (path.endswith("/") and c.path.startswith(path)))
            ]

    def plant(self, entries: list[dict[str, Any]]) -> None:
        """Make ListDir answer ``entries`` too, from the next command's start on."""
        self._planted = entries

    def command_started(self) -> None:
        self.extra_entries, self._planted = self.extra_entries + self._planted, []

    def expire(self, sandbox_id: str) -> None:
        """What the service does when a sandbox dies or reaches its timeout."""
        sbx = self.sandboxes[sandbox_id]
        sbx.alive = False
        sbx.kill_all()

    def record(self, call: Call) -> None:
        with self._lock:
            self.calls.append(call)

    def create(self, body: dict[str, Any]) -> FakeSandbox:
        sid = "sbx" + secrets.token_hex(6)
        vm = self.base / sid
        (vm / "home" / "user").mkdir(parents=True)
        sbx = FakeSandbox(
            sid,
            body["templateID"],
            vm,
            secrets.token_hex(8),
            body.get("metadata") or {},
            body.get("timeout"),
        )
        with self._lock:
            self.sandboxes[sid] = sbx
        return sbx


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet test output
        return

    @property
    def fake(self) -> FakeE2B:
        return self.server.fake  # type: ignore[attr-defined,no-any-return]

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    # -- plumbing ------------------------------------------------------------------------

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    self.rfile.readline()
                    return bytes(out)
                out += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _send(self, status: int, body: bytes = b"", ctype: str = _UNARY) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, value: Any) -> None:
        self._send(status, json.dumps(value).encode())

    def _rpc_error(self, status: int, message: str) -> None:
        self._json(status, {"code": _CONNECT_CODES.get(status, "internal"), "message": message})

    def _dispatch(self, method: str) -> None:
        url = urlsplit(self.path)
        body = self._body()
        sid = self.headers.get("E2b-Sandbox-Id")
        parsed: Any = None
        if body and self.headers.get("Content-Type", "").startswith(_UNARY):
            parsed = json.loads(body)
        elif body and self.headers.get("Content-Type", "").startswith(_STREAM):
            parsed = _unframe(body)
        self.fake.record(Call(method, url.path, sid, parsed))
        if url.path.startswith(("/v2/sandboxes", "/sandboxes")):
            self._api(method, url.path, parsed)
        else:
            self._envd(method, url.path, parse_qs(url.query), body, sid)

    # -- REST API ------------------------------------------------------------------------

    def _api(self, method: str, path: str, body: Any) -> None:
        if self.headers.get("X-API-KEY") != self.fake.api_key:
            return self._json(401, {"code": 401, "message": "Invalid API key"})
        parts = path.strip("/").split("/")
        if method == "POST" and path == "/v2/sandboxes":
            if body["templateID"] not in self.fake.templates:
                msg = f"template '{body['templateID']}' not found"
                return self._json(404, {"code": 404, "message": msg})
            sbx = self.fake.create(body)
            return self._json(
                201,
                {
                    "templateID": sbx.template,
                    "sandboxID": sbx.sandbox_id,
                    "clientID": "fake",
                    "envdVersion": ENVD_VERSION,
                    "envdAccessToken": sbx.token,
                },
            )
        sbx = self.fake.sandboxes.get(parts[1]) if len(parts) > 1 else None
        if sbx is None or not sbx.alive:
            return self._json(404, {"code": 404, "message": "sandbox not found"})
        if method == "DELETE" and len(parts) == 2:
            self.fake.expire(sbx.sandbox_id)
            return self._send(204)
        if method == "POST" and parts[2:] == ["timeout"]:
            sbx.timeout_s = body["timeout"]
            return self._send(204)
        self._json(404, {"code": 404, "message": f"no route {method} {path}"})

    # -- envd ----------------------------------------------------------------------------

    def _envd(
        self, method: str, path: str, query: dict[str, list[str]], body: bytes, sid: str | None
    ) -> None:
        sbx = self.fake.sandboxes.get(sid or "")
        if sbx is None or not sbx.alive:
            # What the edge proxy in front of envd answers for a gone sandbox.
            return self._json(502, {"code": 502, "message": f"The sandbox {sid} was not found"})
        if self.headers.get("X-Access-Token") != sbx.token:
            return self._json(401, {"code": 401, "message": "invalid access token"})
        if path == "/health":
            return self._send(204)
        if path == "/files":
            return self._files(method, sbx, query, body)
        if path == "/process.Process/Start":
            self.fake.command_started()
            return _ProcessStream(self, sbx).run(_unframe(body))
        request = json.loads(body or b"{}")
        handler = _UNARY_RPCS.get(path)
        if handler is None:
            return self._rpc_error(404, f"unimplemented {path}")
        try:
            self._json(200, handler(self.fake, sbx, request))
        except FileNotFoundError as e:
            self._rpc_error(404, str(e))
        except ProcessLookupError as e:
            self._rpc_error(404, f"process not found: {e}")

    def _files(
        self, method: str, sbx: FakeSandbox, query: dict[str, list[str]], body: bytes
    ) -> None:
        if method == "GET":
            target = sbx.host(query["path"][0])
            if not target.is_file():
                return self._json(404, {"code": 404, "message": "path not found"})
            return self._send(200, target.read_bytes(), "application/octet-stream")
        ctype = self.headers.get("Content-Type", "")
        if ctype.startswith("multipart/form-data"):
            parts = _multipart(body, ctype.split("boundary=", 1)[1].strip('"'))
            if "path" in query and len(parts) == 1:
                parts = [(query["path"][0], parts[0][1])]
        else:
            parts = [(query["path"][0], body)]
        written = []
        for guest_path, data in parts:
            target = sbx.host(guest_path)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            written.append({"name": target.name, "type": "file", "path": sbx.guest(target)})
        self._json(200, written)


def _multipart(body: bytes, boundary: str) -> list[tuple[str, bytes]]:
    """(filename, content) of each part, the filename taken verbatim as httpx writes it."""
    out = []
    for chunk in body.split(b"--" + boundary.encode())[1:]:
        if chunk.startswith(b"--"):
            break
        head, _, data = chunk[2:].partition(b"\r\n\r\n")
        disposition = next(
            h for h in head.decode().split("\r\n") if h.lower().startswith("content-disposition")
        )
        name = disposition.split('filename="', 1)[1].rsplit('"', 1)[0]
        out.append((name, data[:-2]))  # the part ends with CRLF before the next boundary
    return out


def _frame(value: Any, flags: int = 0) -> bytes:
    data = json.dumps(value).encode()
    return struct.pack(">BI", flags, len(data)) + data


def _unframe(body: bytes) -> Any:
    flags, length = struct.unpack(">BI", body[:5])
    return json.loads(body[5 : 5 + length])


def _entry(sbx: FakeSandbox, p: Path) -> dict[str, Any]:
    st = p.lstat()
    is_link = p.is_symlink()
    kind = "FILE_TYPE_DIRECTORY" if p.is_dir() else "FILE_TYPE_FILE"
    entry: dict[str, Any] = {
        "name": p.name,
        "type": kind,
        "path": sbx.guest(p),
        "size": str(st.st_size),
        "mode": st.st_mode & 0o777,
        "permissions": "",
        "owner": "user",
        "group": "user",
        "modifiedTime": datetime.fromtimestamp(st.st_mtime_ns // 10**9, UTC).strftime(
            "%Y-%m-%dT%H:%M:%S"
        )
        + f".{st.st_mtime_ns % 10**9:09d}Z",
    }
    if is_link:
        entry.update(isSymlink=True, symlinkTarget=os.readlink(p))
        if not p.exists():
            entry["type"] = "FILE_TYPE_SYMLINK"
    return entry


def _list_dir(fake: FakeE2B, sbx: FakeSandbox, req: dict[str, Any]) -> dict[str, Any]:
    top = sbx.host(req["path"])
    if not top.is_dir():
        raise FileNotFoundError(req["path"])
    depth = req.get("depth") or 1
    entries = []
    for current, dirs, files in os.walk(top):
        level = len(Path(current).relative_to(top).parts) + 1
        for name in sorted(dirs + files):
            entries.append(_entry(sbx, Path(current) / name))
        if level >= depth:
            dirs.clear()
    return {"entries": entries + list(fake.extra_entries)}


def _make_dir(fake: FakeE2B, sbx: FakeSandbox, req: dict[str, Any]) -> dict[str, Any]:
    sbx.host(req["path"]).mkdir(parents=True, exist_ok=True)
    return {"entry": _entry(sbx, sbx.host(req["path"]))}


def _remove(fake: FakeE2B, sbx: FakeSandbox, req: dict[str, Any]) -> dict[str, Any]:
    target = sbx.host(req["path"])
    if not target.exists() and not target.is_symlink():
        raise FileNotFoundError(req["path"])
    target.unlink()
    return {}


def _proc(sbx: FakeSandbox, req: dict[str, Any]) -> subprocess.Popen[bytes]:
    proc = sbx.procs.get(int(req["process"]["pid"]))
    if proc is None or proc.poll() is not None:
        raise ProcessLookupError(req["process"]["pid"])
    return proc


def _send_input(fake: FakeE2B, sbx: FakeSandbox, req: dict[str, Any]) -> dict[str, Any]:
    stdin = _proc(sbx, req).stdin
    assert stdin is not None
    stdin.write(base64.b64decode(req["input"]["stdin"]))
    stdin.flush()
    return {}


def _close_stdin(fake: FakeE2B, sbx: FakeSandbox, req: dict[str, Any]) -> dict[str, Any]:
    stdin = _proc(sbx, req).stdin
    assert stdin is not None
    stdin.close()
    return {}


def _send_signal(fake: FakeE2B, sbx: FakeSandbox, req: dict[str, Any]) -> dict[str, Any]:
    proc = _proc(sbx, req)
    sig = signal.SIGKILL if req["signal"] == "SIGNAL_SIGKILL" else signal.SIGTERM
    os.killpg(proc.pid, sig)
    return {}


_UNARY_RPCS = {
    "/filesystem.Filesystem/ListDir": _list_dir,
    "/filesystem.Filesystem/MakeDir": _make_dir,
    "/filesystem.Filesystem/Remove": _remove,
    "/process.Process/SendInput": _send_input,
    "/process.Process/CloseStdin": _close_stdin,
    "/process.Process/SendSignal": _send_signal,
}


class _ProcessStream:
    """``/process.Process/Start``: a real process, streamed as Connect frames (chunked)."""

    def __init__(self, handler: _Handler, sbx: FakeSandbox) -> None:
        self.h = handler
        self.sbx = sbx

    def _chunk(self, data: bytes) -> None:
        self.h.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.h.wfile.flush()

    def _spawn(self, req: dict[str, Any]) -> subprocess.Popen[bytes]:
        cfg = req["process"]
        vm_home = str(self.sbx.host("/home/user"))
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": vm_home, "USER": "user"}
        env.update(cfg.get("envs") or {})
        args = [a.replace("/home/user", vm_home) for a in cfg.get("args", [])]
        return subprocess.Popen(
            [cfg["cmd"], *args],
            cwd=self.sbx.host(cfg.get("cwd") or "/home/user"),
            env=env,
            stdin=subprocess.PIPE if req.get("stdin") else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )

    def run(self, req: dict[str, Any]) -> None:
        proc = self._spawn(req)
        self.sbx.procs[proc.pid] = proc
        self.h.send_response(200)
        self.h.send_header("Content-Type", _STREAM)
        self.h.send_header("Transfer-Encoding", "chunked")
        self.h.end_headers()
        events: queue.Queue[tuple[str, bytes]] = queue.Queue()
        for name, pipe in (("stdout", proc.stdout), ("stderr", proc.stderr)):
            threading.Thread(target=_pump, args=(name, pipe, events), daemon=True).start()
        try:
            self._chunk(_frame({"event": {"start": {"pid": proc.pid}}}))
            open_pipes = 2
            while open_pipes:
                name, data = events.get()
                if not data:
                    open_pipes -= 1
                    continue
                out = {name: base64.b64encode(data).decode()}
                self._chunk(_frame({"event": {"data": out}}))
            code = proc.wait()
            if proc.stdin:
                proc.stdin.close()
            end = {
                "exitCode": code if code >= 0 else -1,
                "exited": code >= 0,
                "status": f"exit status {code}" if code >= 0 else "signal: killed",
            }
            self._chunk(_frame({"event": {"end": end}}))
            self._chunk(_frame({}, flags=0x02))
            self._chunk(b"")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client went away; like envd, the process keeps running


def _pump(name: str, pipe: Any, events: queue.Queue[tuple[str, bytes]]) -> None:
    with pipe:  # closed here at EOF, so no pipe is left for the garbage collector
        while data := os.read(pipe.fileno(), 65536):
            events.put((name, data))
    events.put((name, b""))

"""A real local HTTP server that plays scripted provider responses, for every adapter test.

It listens on 127.0.0.1 (an ephemeral port), speaks HTTP/1.1, records every request and answers
each one with the next scripted response from a FIFO queue, whatever the path:

    with WireServer() as server:
        server.add_sse([{"choices": [...]}, "data: [DONE]"])
        model = OpenAIChatModel("m", base_url=server.url, ...)
        ...
        assert server.requests[0].body["stream"] is True

Streams really stream: each SSE event is its own chunk of a chunked body, flushed at once, so a
test can see deltas before the stream ends (``gate_after`` holds the stream until ``release()``).
``cut_after`` drops the connection mid-body (no terminating chunk), the way a dying proxy does.
When the queue is empty the server answers 418 with a JSON error that says so.
"""

from __future__ import annotations

import json
import socket
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["RecordedRequest", "WireServer", "unused_url"]

SSE_CONTENT_TYPE = "text/event-stream; charset=utf-8"


@dataclass
class RecordedRequest:
    method: str
    path: str  # path plus query string, as sent
    headers: dict[str, str]  # names lowercased
    body: Any  # parsed JSON, or None when the body was empty or not JSON
    raw: bytes = b""

    @property
    def json(self) -> Any:
        return self.body


@dataclass
class _Json:
    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class _Raw:
    status: int
    body: bytes
    content_type: str
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class _Sse:
    events: list[str | bytes | dict[str, Any]]
    headers: dict[str, str] = field(default_factory=dict)
    cut_after: int | None = None
    delay_s: float = 0.0
    status: int = 200
    gate_after: int | None = None


@dataclass
class _Hang:
    seconds: float


_Scripted = _Json | _Raw | _Sse | _Hang


def encode_event(event: str | bytes | dict[str, Any]) -> bytes:
    """A dict becomes ``data: <json>\\n\\n``; bytes go out verbatim; a string goes out verbatim,
    with ``\\n\\n`` appended when it does not already end in a newline."""
    if isinstance(event, dict):
        return b"data: " + json.dumps(event).encode() + b"\n\n"
    if isinstance(event, bytes):
        return event
    return (event if event.endswith("\n") else event + "\n\n").encode()


class WireServer:
    """Scripted HTTP server; use as a context manager (or the ``wire`` fixture)."""

    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self._queue: deque[_Scripted] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._gate = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.port: int = self._httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"

    # -- scripting -------------------------------------------------------------------------

    def add_json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> WireServer:
        self._push(_Json(status, body, dict(headers or {})))
        return self

    def add_sse(
        self,
        events: list[str | bytes | dict[str, Any]],
        headers: dict[str, str] | None = None,
        cut_after: int | None = None,
        delay_s: float = 0.0,
        *,
        status: int = 200,
        gate_after: int | None = None,
    ) -> WireServer:
        """Queue a stream. ``cut_after=N``: send N events then drop the connection.
        ``gate_after=N``: send N events, then wait for ``release()`` before the rest."""
        self._push(_Sse(list(events), dict(headers or {}), cut_after, delay_s, status, gate_after))
        return self

    def add_raw(
        self,
        status: int,
        body: bytes,
        content_type: str,
        headers: dict[str, str] | None = None,
    ) -> WireServer:
        self._push(_Raw(status, body, content_type, dict(headers or {})))
        return self

    def add_hang(self, seconds: float) -> WireServer:
        """Read the request, answer nothing for ``seconds``, then close the connection."""
        self._push(_Hang(seconds))
        return self

    def release(self) -> None:
        """Let streams waiting at their ``gate_after`` point continue."""
        self._gate.set()

    @property
    def pending(self) -> int:
        """Scripted responses not used yet."""
        with self._lock:
            return len(self._queue)

    def assert_all_used(self) -> None:
        assert self.pending == 0, f"{self.pending} scripted responses were never requested"

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> WireServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._gate.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> WireServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- internals -------------------------------------------------------------------------

    def _push(self, item: _Scripted) -> None:
        with self._lock:
            self._queue.append(item)

    def _next(self, request: RecordedRequest) -> _Scripted | None:
        with self._lock:
            self.requests.append(request)
            return self._queue.popleft() if self._queue else None


def unused_url() -> str:
    """A loopback URL nobody listens on: connecting to it is refused."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def _make_handler(server: WireServer) -> type[BaseHTTPRequestHandler]:
    class Handler(_Handler):
        wire = server

    return Handler


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # small SSE chunks must leave at once
    timeout = 30  # idle keep-alive connections end on their own
    wire: WireServer

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep pytest output clean

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def do_PUT(self) -> None:
        self._serve()

    def do_DELETE(self) -> None:
        self._serve()

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        headers = {k.lower(): v for k, v in self.headers.items()}
        item = self.wire._next(RecordedRequest(self.command, self.path, headers, body, raw))
        match item:
            case None:
                err = {"error": {"message": "wire server: no scripted response left"}}
                self._send_whole(418, json.dumps(err).encode(), "application/json", {})
            case _Json(status, payload, extra):
                self._send_whole(status, json.dumps(payload).encode(), "application/json", extra)
            case _Raw(status, payload, content_type, extra):
                self._send_whole(status, payload, content_type, extra)
            case _Sse():
                self._send_stream(item)
            case _Hang(seconds):
                self.wire._stopping.wait(seconds)
                self._drop()

    def _send_whole(
        self, status: int, payload: bytes, content_type: str, extra: dict[str, str]
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        for k, v in extra.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()

    def _send_stream(self, sse: _Sse) -> None:
        self.send_response(sse.status)
        extra = dict(sse.headers)
        if not any(k.lower() == "content-type" for k in extra):
            extra["Content-Type"] = SSE_CONTENT_TYPE
        extra.setdefault("Cache-Control", "no-cache")
        extra["Transfer-Encoding"] = "chunked"
        for k, v in extra.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.flush()
        for i, event in enumerate(sse.events):
            if sse.cut_after is not None and i >= sse.cut_after:
                self._drop()
                return
            if sse.gate_after is not None and i == sse.gate_after:
                self.wire._gate.wait(30)
            if sse.delay_s and i:
                self.wire._stopping.wait(sse.delay_s)
            if not self._write_chunk(encode_event(event)):
                return
        if sse.cut_after is not None and sse.cut_after <= len(sse.events):
            self._drop()
            return
        self._write_raw(b"0\r\n\r\n")

    def _write_chunk(self, data: bytes) -> bool:
        return self._write_raw(f"{len(data):x}\r\n".encode() + data + b"\r\n")

    def _write_raw(self, data: bytes) -> bool:
        try:
            self.wfile.write(data)
            self.wfile.flush()
        except OSError:  # the client went away; nothing left to do
            self.close_connection = True
            return False
        return True

    def _drop(self) -> None:
        """Close the socket abruptly, mid-response."""
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

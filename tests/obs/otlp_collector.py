"""A real OTLP/HTTP collector on a free loopback port: POST /v1/traces with protobuf bodies,
decoded with opentelemetry-proto, spans kept for the test to read."""

from __future__ import annotations

import gzip
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue


def _plain(v: AnyValue) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [_plain(x) for x in v.array_value.values]
    return getattr(v, kind) if kind else None


def _attrs(kvs: Any) -> dict[str, Any]:
    return {a.key: _plain(a.value) for a in kvs}


@dataclass
class ReceivedSpan:
    name: str
    trace_id: str
    span_id: str
    parent_id: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    status_code: int
    service: str


@dataclass
class Collector:
    spans: list[ReceivedSpan] = field(default_factory=list)
    requests: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def take(self, body: bytes) -> None:
        req = ExportTraceServiceRequest()
        req.ParseFromString(body)
        with self.lock:
            self.requests += 1
            for rs in req.resource_spans:
                res = {a.key: _plain(a.value) for a in rs.resource.attributes}
                for ss in rs.scope_spans:
                    for s in ss.spans:
                        self.spans.append(
                            ReceivedSpan(
                                s.name,
                                s.trace_id.hex(),
                                s.span_id.hex(),
                                s.parent_span_id.hex(),
                                s.start_time_unix_nano,
                                s.end_time_unix_nano,
                                {a.key: _plain(a.value) for a in s.attributes},
                                [(e.name, _attrs(e.attributes)) for e in s.events],
                                s.status.code,
                                str(res.get("service.name", "")),
                            )
                        )

    def named(self, name: str) -> list[ReceivedSpan]:
        return [s for s in self.spans if s.name == name]


def start_collector() -> tuple[ThreadingHTTPServer, Collector, str]:
    """(server, collector, base URL); stop with ``server.shutdown(); server.server_close()``."""
    collector = Collector()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the http.server name
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if self.path != "/v1/traces":
                self.send_error(404)
                return
            if self.headers.get("Content-Type") != "application/x-protobuf":
                self.send_error(415)
                return
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            collector.take(body)
            out = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    return server, collector, f"http://127.0.0.1:{server.server_address[1]}"

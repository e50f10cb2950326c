"""OpenTelemetry tracing of runs: exporters chosen by config, spans built from loop events.

    tracing = Tracing.from_config(cfg.observability, local="json")   # None: nothing configured
    if tracing is not None:
        tracing.attach(agent)          # its bus feeds a SpanBuilder; prices from its model
        ...
        tracing.shutdown()             # flushes every exporter

Exporters: OTLP over HTTP/protobuf (``otlp_endpoint`` or ``OTEL_EXPORTER_OTLP_ENDPOINT``, the
collector's base URL), spans on stderr (``console``; ``xclaw run --trace console``), and JSON
lines (``json_file``; ``--trace json`` writes them to stderr). The provider is ours, never the
process-global one, so two gateways or tests in one process do not share spans.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Literal

from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SimpleSpanProcessor,
    SpanExporter,
)

from xclaw.core.errors import ConfigError
from xclaw.obs.pricing import PriceBook
from xclaw.obs.spans import SpanBuilder
from xclaw.obs.wanted import ENDPOINT_ENV as ENDPOINT_ENV
from xclaw.obs.wanted import otlp_endpoint, tracing_wanted
from xclaw.obs.wiring import Observed

if TYPE_CHECKING:
    from xclaw.config import ObservabilityConfig

__all__ = ["LocalTrace", "Tracing", "otlp_traces_url"]

LocalTrace = Literal["console", "json"]


def otlp_traces_url(base: str) -> str:
    """The traces path under a collector's base URL (as the OTLP spec builds it from the
    ``OTEL_EXPORTER_OTLP_ENDPOINT`` variable); a URL already ending in it is kept."""
    base = base.strip()
    return base if base.rstrip("/").endswith("/v1/traces") else base.rstrip("/") + "/v1/traces"


def _json_line(span: ReadableSpan) -> str:
    return str(span.to_json(indent=None)) + "\n"


class Tracing:
    def __init__(self, service_name: str = "xclaw") -> None:
        self.provider = TracerProvider(resource=Resource.create({SERVICE_NAME: service_name}))
        self.tracer = self.provider.get_tracer("xclaw")
        self.prices = PriceBook()
        self.builder = SpanBuilder(self.tracer, self.prices.cost)
        self._files: list[IO[str]] = []

    # -- exporters -------------------------------------------------------------------------
    def export_otlp(self, endpoint: str, timeout_s: float = 10.0) -> Tracing:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter(endpoint=otlp_traces_url(endpoint), timeout=timeout_s)
        self.provider.add_span_processor(BatchSpanProcessor(exporter))
        return self

    def export_console(self, out: IO[str] | None = None) -> Tracing:
        return self._simple(ConsoleSpanExporter(out=out or sys.stderr))

    def export_json_lines(self, out: IO[str] | Path) -> Tracing:
        if isinstance(out, Path):
            try:
                out.parent.mkdir(parents=True, exist_ok=True)
                out = out.open("a", encoding="utf-8", buffering=1)
            except OSError as err:
                raise ConfigError(
                    f"Cannot open the trace file {out}: {err}",
                    code="TRACE_FILE_UNWRITABLE",
                    hint="Point observability.json_file at a writable file.",
                ) from None
            self._files.append(out)
        return self._simple(ConsoleSpanExporter(out=out, formatter=_json_line))

    def _simple(self, exporter: SpanExporter) -> Tracing:
        # Local exporters write as each span ends: a run cut off still shows what it did.
        self.provider.add_span_processor(SimpleSpanProcessor(exporter))
        return self

    @classmethod
    def from_config(
        cls,
        cfg: ObservabilityConfig,
        local: LocalTrace | None = None,
        env: dict[str, str] | None = None,
    ) -> Tracing | None:
        """The tracing ``cfg`` asks for (plus ``local``, the ``--trace`` flag), or None when
        nothing is to be exported. ``OTEL_EXPORTER_OTLP_ENDPOINT`` stands in for
        ``otlp_endpoint``."""
        if not tracing_wanted(cfg, local, env):
            return None
        endpoint = otlp_endpoint(cfg, env)
        tracing = cls(cfg.service_name)
        if endpoint:
            tracing.export_otlp(endpoint)
        if cfg.console or local == "console":
            tracing.export_console()
        if local == "json":
            tracing.export_json_lines(sys.stderr)
        if cfg.json_file:
            tracing.export_json_lines(Path(cfg.json_file).expanduser())
        return tracing

    # -- wiring ----------------------------------------------------------------------------
    def attach(self, agent: Observed) -> Callable[[], None]:
        """Trace ``agent``'s runs; returns the unsubscribe function."""
        self.prices.learn(agent.model)
        return agent.bus.subscribe(self.builder)

    def flush(self, timeout_ms: int = 10_000) -> bool:
        return self.provider.force_flush(timeout_ms)

    def shutdown(self) -> None:
        self.provider.shutdown()
        for f in self._files:
            f.close()
        self._files.clear()

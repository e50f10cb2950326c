"""Whether a run is traced, decided without the OpenTelemetry SDK (the observability extra):
a run that exports nothing never imports it."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from xclaw.config import ObservabilityConfig

__all__ = ["ENDPOINT_ENV", "TRACING_FEATURE", "otlp_endpoint", "tracing_wanted"]

ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_ENDPOINT"
TRACING_FEATURE = "tracing (--trace, observability: in xclaw.yaml, $OTEL_EXPORTER_OTLP_ENDPOINT)"


def otlp_endpoint(cfg: ObservabilityConfig, env: Mapping[str, str] | None = None) -> str | None:
    """The collector: ``otlp_endpoint``, else ``$OTEL_EXPORTER_OTLP_ENDPOINT``, else None."""
    environ = os.environ if env is None else env
    return cfg.otlp_endpoint or environ.get(ENDPOINT_ENV, "").strip() or None


def tracing_wanted(
    cfg: ObservabilityConfig, local: str | None = None, env: Mapping[str, str] | None = None
) -> bool:
    """Whether ``cfg`` (or ``local``, the ``--trace`` flag) exports any span."""
    return bool(otlp_endpoint(cfg, env) or cfg.console or cfg.json_file or local)

"""Observability (seed 003 ch. 12): traces, metrics and structured logs, all fed from what
the runtime already says (loop events, log records), never by changing the loop.

- :mod:`xclaw.obs.tracing`: OpenTelemetry spans of runs (``agent.run`` > ``llm.call``,
  ``tool.exec``, ``approval.wait``), exported over OTLP, to stderr or as JSON lines.
- :mod:`xclaw.obs.metrics`: Prometheus counters, gauges and histograms (``GET /metrics`` on
  the gateway).
- :mod:`xclaw.obs.logs`: text or JSON log lines on stderr.
- :mod:`xclaw.obs.serverlog`: uvicorn's loggers (the access log's request lines) redacted.

Everything that leaves through them is redacted (:mod:`xclaw.redact`). Nothing is imported
here: the gateway loads metrics without the OpenTelemetry SDK, a run without tracing neither.
"""

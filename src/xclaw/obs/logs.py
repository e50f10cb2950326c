"""Logs on stderr, as text or as one JSON object a line, redacted either way.

``xclaw serve --log-format json`` (or ``XCLAW_LOG_FORMAT=json``) gives lines like::

    {"time": "2026-11-30T23:50:01.123Z", "level": "info", "logger": "uvicorn.access",
     "message": "127.0.0.1:5170 - \\"GET /metrics HTTP/1.1\\" 200"}

Hand-written (a few fields through ``json.dumps``) because every field must pass the redactor
before it is encoded, which a generic JSON formatter does not do.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from typing import IO, Literal, cast

from xclaw.core.errors import ConfigError
from xclaw.redact import redact, redact_json

__all__ = [
    "LOG_FORMAT_ENV",
    "JsonFormatter",
    "LogFormat",
    "TextFormatter",
    "configure_logging",
    "log_format",
    "stderr_handler",
]

LogFormat = Literal["text", "json"]
LOG_FORMAT_ENV = "XCLAW_LOG_FORMAT"
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# What every LogRecord has; anything else on a record came from ``extra=`` and is logged too.
# ``color_message`` is uvicorn's copy of the message with terminal colours.
_RECORD_FIELDS = frozenset(vars(logging.makeLogRecord({}))) | {
    "message",
    "asctime",
    "color_message",
}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "time": _utc(record.created),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": redact(record.getMessage()),
        }
        for key, value in vars(record).items():
            if key not in _RECORD_FIELDS and not key.startswith("_"):
                entry[key] = redact_json(_plain(value))
        if record.exc_info:
            entry["exception"] = redact(self.formatException(record.exc_info))
        if record.stack_info:
            entry["stack"] = redact(self.formatStack(record.stack_info))
        return json.dumps(entry, ensure_ascii=False, default=str)


def _utc(created: float) -> str:
    millis = int(created % 1 * 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(created)) + f".{millis:03d}Z"


def _plain(value: object) -> object:
    """JSON-like as it is; anything else (paths, objects) as its text."""
    if value is None or isinstance(value, str | int | float | bool | list | dict):
        return value
    return str(value)


def log_format(flag: str | None = None, env: dict[str, str] | None = None) -> LogFormat:
    """The flag, else ``XCLAW_LOG_FORMAT``, else text."""
    chosen = flag or (os.environ if env is None else env).get(LOG_FORMAT_ENV, "") or "text"
    chosen = chosen.strip().lower()
    if chosen not in ("text", "json"):
        raise ConfigError(
            f"Unknown log format {chosen!r}.",
            code="LOG_FORMAT_INVALID",
            hint=f"Use --log-format text or json (or set {LOG_FORMAT_ENV}).",
        )
    return cast(LogFormat, chosen)


class TextFormatter(logging.Formatter):
    """The classic line, redacted as a whole (message, exception and stack alike)."""

    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT)

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


def stderr_handler(fmt: LogFormat, stream: IO[str] | None = None) -> logging.Handler:
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    return handler


def configure_logging(fmt: LogFormat, level: int = logging.INFO) -> None:
    """The root logger writes to stderr in ``fmt`` (replacing its handlers)."""
    logging.basicConfig(level=level, handlers=[stderr_handler(fmt)], force=True)

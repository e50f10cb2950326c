"""uvicorn's logs, redacted: the access log holds request lines, and a request line can hold
a credential (``GET /v1/models?api_key=...``).

Two layers, both through :func:`xclaw.redact.redact`: ``RedactingFilter`` on uvicorn's
loggers rewrites every record before any handler sees it (whoever configured the handlers),
and ``uvicorn_log_config`` is uvicorn's own logging setup with formatters that redact the
finished line, for servers that keep uvicorn's handlers (``xclaw bridge``).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterable
from typing import Any

import uvicorn.config
from uvicorn.logging import AccessFormatter, DefaultFormatter

from xclaw.redact import redact

__all__ = [
    "SERVER_LOGGERS",
    "RedactingAccessFormatter",
    "RedactingDefaultFormatter",
    "RedactingFilter",
    "install_log_redaction",
    "uvicorn_log_config",
]

SERVER_LOGGERS = ("uvicorn", "uvicorn.error", "uvicorn.access")


class RedactingFilter(logging.Filter):
    """Rewrites a record's message through :func:`xclaw.redact.redact` (tokens, keys)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name == "uvicorn.access" and isinstance(record.args, tuple):
            # uvicorn's AccessFormatter reads (client, method, path, version, status) back
            # from the arguments: each is redacted in place, the shape kept.
            record.args = tuple(redact(a) if isinstance(a, str) else a for a in record.args)
            return True
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a broken record is logged as it is
            return True
        record.msg = redact(message)
        record.args = None
        record.__dict__.pop("color_message", None)  # uvicorn's unredacted coloured copy
        return True


def install_log_redaction(names: Iterable[str] = SERVER_LOGGERS) -> None:
    """Redact the server's own loggers (the access log holds request lines)."""
    for name in names:
        logger = logging.getLogger(name)
        if not any(isinstance(f, RedactingFilter) for f in logger.filters):
            logger.addFilter(RedactingFilter())


class RedactingAccessFormatter(AccessFormatter):
    """uvicorn's access line, redacted whole."""

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


class RedactingDefaultFormatter(DefaultFormatter):
    """uvicorn's other lines (startup, errors with tracebacks), redacted whole."""

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


_FORMATTERS = {
    "uvicorn.logging.AccessFormatter": f"{__name__}.RedactingAccessFormatter",
    "uvicorn.logging.DefaultFormatter": f"{__name__}.RedactingDefaultFormatter",
}


def uvicorn_log_config() -> dict[str, Any]:
    """uvicorn's default ``log_config`` with every formatter swapped for a redacting one."""
    config: dict[str, Any] = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)
    for formatter in config["formatters"].values():
        factory = formatter.get("()")
        formatter["()"] = _FORMATTERS.get(factory, factory)
    return config

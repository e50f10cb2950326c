"""Errors the bridge answers with, in OpenAI's shape: ``{"error": {message, type, param, code}}``.

``code`` is a stable xclaw code (``BRIDGE_*`` for the bridge's own refusals, the model error's
own code otherwise); ``type`` is OpenAI's category, which clients map to exception classes.
Every message is redacted: a provider's reply may quote a key.

    status  type                    when
    400     invalid_request_error   malformed request (BRIDGE_REQUEST_INVALID), or the
                                    provider rejected the request itself
    401     authentication_error    missing or wrong bearer token (BRIDGE_TOKEN_INVALID)
    404     invalid_request_error   unknown model (BRIDGE_MODEL_UNKNOWN) or route
    429     rate_limit_error        queue full (BRIDGE_QUEUE_FULL) or the provider's 429
    502     server_error            the model failed (unavailable, refused our credentials,
                                    broke the tool protocol)
    500     server_error            anything unexpected (details only in the server log)
"""

from __future__ import annotations

import logging
import math
from typing import Any

from starlette.responses import JSONResponse

from xclaw.core.errors import (
    ModelError,
    ModelRequestRejected,
    ModelUnavailable,
    XclawError,
)
from xclaw.redact import redact

__all__ = ["BridgeError", "error_body", "from_exception"]

log = logging.getLogger("xclaw.bridge")


class BridgeError(Exception):
    """An HTTP error answer: status, stable code, a sentence and what to do next."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        hint: str = "",
        kind: str = "invalid_request_error",
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.hint = hint
        self.kind = kind
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        return error_body(
            self.message + (f" {self.hint}" if self.hint else ""), self.kind, self.code
        )

    def response(self) -> JSONResponse:
        return JSONResponse(self.body(), status_code=self.status, headers=self.headers)


def error_body(message: str, kind: str, code: str) -> dict[str, Any]:
    return {"error": {"message": redact(message), "type": kind, "param": None, "code": code}}


def from_exception(err: BaseException) -> BridgeError:
    """The HTTP answer for an exception raised while a model was answering."""
    if isinstance(err, BridgeError):
        return err
    if isinstance(err, ModelUnavailable):
        return _unavailable(err)
    if isinstance(err, ModelRequestRejected) and err.status in (400, 413, 422):
        return BridgeError(400, err.code, f"The provider rejected the request: {err.message}")
    if isinstance(err, ModelRequestRejected):
        return BridgeError(
            502,
            err.code,
            f"The provider refused the bridge's request ({err.status}): {err.message}",
            hint="Check the model name and the provider key the bridge was started with.",
            kind="server_error",
        )
    if isinstance(err, ModelError):
        return BridgeError(502, err.code, f"The model failed: {err.message}", kind="server_error")
    if isinstance(err, XclawError):
        return BridgeError(500, err.code, err.message, hint=err.hint, kind="server_error")
    log.error("bridge: unexpected %s: %s", type(err).__name__, redact(str(err)))
    return BridgeError(
        500,
        "BRIDGE_INTERNAL",
        f"The bridge failed unexpectedly ({type(err).__name__}).",
        hint="See the bridge's log.",
        kind="server_error",
    )


def _unavailable(err: ModelUnavailable) -> BridgeError:
    if err.status == 429:
        wait = max(1, math.ceil(err.retry_after_s or 1))
        return BridgeError(
            429,
            err.code,
            f"The provider is rate limiting: {err.message}",
            hint=f"Retry in {wait} s.",
            kind="rate_limit_error",
            headers={"Retry-After": str(wait)},
        )
    return BridgeError(
        502,
        err.code,
        f"The model is unavailable: {err.message}",
        hint=err.hint or "Retry later.",
        kind="server_error",
    )

"""Errors the bridge answers with, in OpenAI's shape: ``{"error": {message, type, param, code}}``.

``code`` is a stable xclaw code (``BRIDGE_*`` for the bridge's own refusals, the model error's
own code otherwise); ``type`` is OpenAI's category, which clients map to exception classes.
Every message is redacted: a provider's reply may quote a key.

    status  type                    when
    400     invalid_request_error   malformed request (BRIDGE_REQUEST_INVALID), a parameter
                                    the bridge or the model cannot honour
                                    (BRIDGE_PARAMETER_UNSUPPORTED, ``param`` names it), or
                                    the provider rejected the request itself
    401     authentication_error    missing or wrong bearer token (BRIDGE_TOKEN_INVALID)
    404     invalid_request_error   unknown model (BRIDGE_MODEL_UNKNOWN) or route
    429     rate_limit_error        queue full (BRIDGE_QUEUE_FULL) or the provider's 429
    502     server_error            the model failed (unavailable, refused our credentials,
                                    could not start, broke the tool protocol)
    500     server_error            anything unexpected (details only in the server log)
"""

from __future__ import annotations

import logging
import math
import os
import sys
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
        param: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.hint = hint
        self.kind = kind
        self.headers = headers or {}
        self.param = param

    def body(self) -> dict[str, Any]:
        sentence = self.message if self.message.endswith((".", "!", "?")) else self.message + "."
        return error_body(
            sentence + (f" {self.hint}" if self.hint else ""),
            self.kind,
            self.code,
            param=self.param,
        )

    def response(self) -> JSONResponse:
        return JSONResponse(self.body(), status_code=self.status, headers=self.headers)


def error_body(message: str, kind: str, code: str, *, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": redact(message), "type": kind, "param": param, "code": code}}


def from_exception(err: BaseException) -> BridgeError:
    """The HTTP answer for an exception raised while a model was answering."""
    if isinstance(err, BridgeError):
        return err
    if isinstance(err, ModelUnavailable):
        return _unavailable(err)
    if isinstance(err, ModelRequestRejected) and err.status in (400, 413, 422):
        return BridgeError(400, err.code, f"The provider rejected the request: {err.message}")
    if isinstance(err, ModelRequestRejected) and err.status is not None:
        return BridgeError(
            502,
            err.code,
            f"The provider refused the bridge's request ({err.status}): {err.message}",
            hint=err.hint
            or "Check the model name and the provider key the bridge was started with.",
            kind="server_error",
        )
    if isinstance(err, ModelRequestRejected):  # no HTTP answer: the model could not start or act
        return BridgeError(
            502,
            err.code,
            f"The model cannot answer: {err.message}",
            hint=_headless_hint(err) or err.hint,
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


def _headless_hint(err: ModelError) -> str:
    """A browser that needs a window where there is no display: say so, not the generic hint."""
    from xclaw.browser.manager import headless_from_env

    if err.code != "BROWSER_LAUNCH_FAILED" or headless_from_env() or sys.platform != "linux":
        return ""
    if os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"):
        return ""
    return (
        "There is no display for the browser window here: start the bridge with --headless "
        "(the page must be signed in already: run `xclaw login` where there is a screen)."
    )

"""The one exception tree of xclaw.

Every error a user can see carries a stable ``code``, a plain sentence and a next step.

    XclawError                      code, message, hint
    ├── ConfigError                 CONFIG_INVALID, MODEL_NOT_CONFIGURED, ...
    ├── ModelError                  a model or transport failed
    │   ├── ModelUnavailable        429, 5xx, timeout, dropped stream: retry / fail over
    │   ├── ModelRequestRejected    400, 401, 403, 404: the request itself is wrong
    │   ├── ScriptMismatch          a ScriptedModel saw something it did not expect
    │   └── ProtocolViolation       a reply broke the tool protocol (resend, bounded)
    ├── ToolError                   raised inside a tool; becomes a failed ToolResult
    │   ├── ToolArgumentsInvalid    TOOL_ARGUMENTS_INVALID (retryable)
    │   └── PolicyDenied            PATH_*, COMMAND_DENIED, APPROVAL_DENIED, ...
    ├── RunStopped                  the run ended before success
    │   ├── LimitExceeded           LIMIT_* (interrupted)
    │   └── RunCancelled            RUN_CANCELLED (Ctrl+C twice)
    └── EndRun                      a hook ends the run early: completed or interrupted

A tool never lets an exception escape into the loop: the dispatcher turns ``ToolError`` and
any unexpected exception into a ``ToolResult`` with ``ok=False``.
"""

from __future__ import annotations

from typing import Literal


class XclawError(Exception):
    """Base of every xclaw error: a stable code, a sentence, and what to do next."""

    code: str = "XCLAW_ERROR"

    def __init__(self, message: str, *, code: str | None = None, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.hint = hint

    def __str__(self) -> str:
        tail = f" Next: {self.hint}" if self.hint else ""
        return f"[{self.code}] {self.message}{tail}"


class ConfigError(XclawError):
    code = "CONFIG_INVALID"


class ModelError(XclawError):
    code = "MODEL_ERROR"


class ScriptMismatch(ModelError):
    code = "SCRIPT_MISMATCH"


class ModelUnavailable(ModelError):
    """Worth retrying or failing over: 429, 5xx, timeouts, dropped connections or streams."""

    code = "MODEL_UNAVAILABLE"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        hint: str = "",
        status: int | None = None,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(message, code=code, hint=hint)
        self.status = status
        self.retry_after_s = retry_after_s


class ModelRequestRejected(ModelError):
    """The provider refused the request itself (400, 401, 403, 404): retrying cannot help."""

    code = "MODEL_REQUEST_REJECTED"

    def __init__(
        self, message: str, *, code: str | None = None, hint: str = "", status: int | None = None
    ) -> None:
        super().__init__(message, code=code, hint=hint)
        self.status = status


class ProtocolViolation(ModelError):
    """A reply that broke the tool protocol; the loop sends ``feedback`` and asks again."""

    code = "PROTOCOL_INVALID"

    def __init__(
        self, message: str, *, code: str | None = None, feedback: str = "", reply_text: str = ""
    ) -> None:
        super().__init__(message, code=code, hint="The model is asked to resend.")
        self.feedback = feedback
        self.reply_text = reply_text


class ToolError(XclawError):
    code = "TOOL_FAILED"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        hint: str = "",
        retryable: bool = False,
        data: dict[str, object] | None = None,
    ) -> None:
        super().__init__(message, code=code, hint=hint)
        self.retryable = retryable
        self.data = data or {}


class ToolArgumentsInvalid(ToolError):
    code = "TOOL_ARGUMENTS_INVALID"

    def __init__(self, message: str, *, hint: str = "") -> None:
        super().__init__(message, hint=hint, retryable=True)


class PolicyDenied(ToolError):
    code = "POLICY_DENIED"


class RunStopped(XclawError):
    code = "RUN_STOPPED"


class LimitExceeded(RunStopped):
    code = "LIMIT_EXCEEDED"


class RunCancelled(RunStopped):
    code = "RUN_CANCELLED"


class EndRun(XclawError):
    """Raised by a loop hook to end the run now, as ``completed`` (with ``reply``) or
    ``interrupted``; the run's reason is ``CODE: message``."""

    code = "RUN_ENDED"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        status: Literal["completed", "interrupted"] = "interrupted",
        reply: str = "",
    ) -> None:
        super().__init__(message, code=code)
        self.status = status
        self.reply = reply

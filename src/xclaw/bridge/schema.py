"""What a client may send to ``POST /v1/chat/completions``, as pydantic models.

Only the parts of OpenAI's request the bridge can honour are typed, and values it cannot keep
(``n > 1``, a forced ``tool_choice``, a JSON ``response_format``) fail validation with a 400.
Any other top-level parameter lands in ``model_extra`` and ``xclaw.bridge.params`` decides:
accepted when it changes nothing, refused with a 400 naming it otherwise. Inside messages and
tools, unknown fields are ignored (clients echo whole objects back).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from xclaw.bridge.stops import MAX_STOPS
from xclaw.models.openai_chat import PASSED_SETTINGS  # the settings a model accepts

__all__ = [
    "AssistantMessage",
    "ChatCompletionRequest",
    "ChatMessage",
    "ContentPart",
    "SystemMessage",
    "ToolMessage",
    "UserMessage",
    "WireTool",
]


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore")


class ContentPart(_Wire):
    """One part of a list content; only ``text`` parts are accepted by the converter."""

    type: str
    text: str | None = None


Content = str | list[ContentPart]


class FunctionCall(_Wire):
    name: str = Field(min_length=1)
    arguments: str = ""  # a JSON object, as a string (OpenAI's wire format)


class WireToolCall(_Wire):
    id: str = Field(min_length=1)
    type: Literal["function"] = "function"
    function: FunctionCall


class SystemMessage(_Wire):
    role: Literal["system", "developer"]
    content: Content


class UserMessage(_Wire):
    role: Literal["user"]
    content: Content


class AssistantMessage(_Wire):
    role: Literal["assistant"]
    content: Content | None = None
    tool_calls: list[WireToolCall] | None = None


class ToolMessage(_Wire):
    role: Literal["tool"]
    tool_call_id: str = Field(min_length=1)
    content: Content


ChatMessage = Annotated[
    SystemMessage | UserMessage | AssistantMessage | ToolMessage, Field(discriminator="role")
]


class FunctionDefinition(_Wire):
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


class WireTool(_Wire):
    type: Literal["function"]
    function: FunctionDefinition


class _Parameters(BaseModel):
    """A request's top level: unknown parameters are kept for ``params`` to judge."""

    model_config = ConfigDict(extra="allow")


class StreamOptions(_Parameters):
    include_usage: bool = False


class ResponseFormat(_Wire):
    type: Literal["text"]


Stop = Annotated[str, Field(min_length=1)]


class ChatCompletionRequest(_Parameters):
    model: str = Field(min_length=1)
    messages: list[ChatMessage] = Field(min_length=1)
    tools: list[WireTool] | None = None
    tool_choice: Literal["auto", "none"] | None = None
    stream: bool = False
    stream_options: StreamOptions | None = None
    n: Literal[1] | None = None
    response_format: ResponseFormat | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, ge=0, le=1)
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    seed: int | None = None
    parallel_tool_calls: bool | None = None
    reasoning_effort: str | None = None
    stop: Stop | Annotated[list[Stop], Field(max_length=MAX_STOPS)] | None = None

    def settings(self) -> dict[str, Any]:
        """The generation settings the client set, for ``ModelRequest.settings``."""
        values = {key: getattr(self, key) for key in PASSED_SETTINGS}
        return {key: value for key, value in values.items() if value is not None}

    def stops(self) -> list[str]:
        return [self.stop] if isinstance(self.stop, str) else list(self.stop or [])

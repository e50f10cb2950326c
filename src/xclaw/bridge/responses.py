"""What a client may send to ``POST /v1/responses``, and how it becomes a ``ModelRequest``.

The bridge keeps no state between requests: every request carries the whole conversation in
``input``, as xclaw's own Responses adapter sends it (``store: false``). So a parameter that
needs stored responses (``previous_response_id``, ``conversation``, ``store: true``,
``background``) is refused like every other one the bridge cannot honour (``params``).

    input                   a string (one user message) or a list of items:
      message               role user | system | developer | assistant; content a string or
                            ``input_text`` / ``output_text`` parts (any other part: 400)
      function_call         a call the model made earlier (``call_id``, ``name``, ``arguments``)
      function_call_output  the client's result for one of them (``call_id``, ``output``)
    instructions            the first system message
    tools                   function tools only; ``tool_choice`` auto or none
    max_output_tokens       the ``max_tokens`` setting; ``reasoning.effort`` the
                            ``reasoning_effort`` one; both, like temperature and top_p, go to
                            a model that honours them and are refused (400) for any other

An assistant message followed by function calls becomes one xclaw assistant message, as the
answer the bridge gave was one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal, assert_never

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag

from xclaw.bridge.convert import function_specs, parse_arguments
from xclaw.bridge.errors import BridgeError
from xclaw.bridge.schema import StreamOptions
from xclaw.core.messages import (
    Message,
    Role,
    TextPart,
    ToolCallPart,
    ToolResult,
    ToolResultPart,
)
from xclaw.core.model import ModelRequest

__all__ = ["WIRE_NAMES", "ResponsesRequest", "to_model_request"]

# Settings under the names a Responses client uses, for errors that name its parameter.
WIRE_NAMES = {"max_tokens": "max_output_tokens", "reasoning_effort": "reasoning.effort"}


class _Item(BaseModel):
    model_config = ConfigDict(extra="ignore")  # clients echo whole output items back


class _Parameters(BaseModel):
    model_config = ConfigDict(extra="allow")  # judged by ``params``


class TextBlock(_Item):
    type: str
    text: str | None = None


Text = str | list[TextBlock]


class InputMessage(_Item):
    type: Literal["message"] = "message"
    role: Literal["user", "system", "developer", "assistant"]
    content: Text


class FunctionCallItem(_Item):
    type: Literal["function_call"]
    call_id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    arguments: str = ""


class FunctionCallOutputItem(_Item):
    type: Literal["function_call_output"]
    call_id: str = Field(min_length=1)
    output: Text


def _item_type(value: Any) -> str:
    found = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    return str(found or "message")  # a message may leave its type out


InputItem = Annotated[
    Annotated[InputMessage, Tag("message")]
    | Annotated[FunctionCallItem, Tag("function_call")]
    | Annotated[FunctionCallOutputItem, Tag("function_call_output")],
    Discriminator(
        _item_type,
        custom_error_type="input_item_type",
        custom_error_message="an input item is a message, a function_call or a "
        "function_call_output",
    ),
]


class FunctionTool(_Item):
    type: Literal["function"]
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class ReasoningOptions(_Parameters):
    effort: str | None = None


class TextFormat(_Item):
    type: Literal["text"]


class TextOptions(_Parameters):
    format: TextFormat | None = None


class ResponsesRequest(_Parameters):
    model: str = Field(min_length=1)
    input: str | list[InputItem]
    instructions: str | None = None
    tools: list[FunctionTool] | None = None
    tool_choice: Literal["auto", "none"] | None = None
    stream: bool = False
    stream_options: StreamOptions | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, ge=0, le=1)
    max_output_tokens: int | None = Field(default=None, ge=1)
    parallel_tool_calls: bool | None = None
    reasoning: ReasoningOptions | None = None
    text: TextOptions | None = None

    def settings(self) -> dict[str, Any]:
        """The generation settings the client set, under xclaw's names."""
        values = {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_output_tokens,
            "parallel_tool_calls": self.parallel_tool_calls,
            "reasoning_effort": self.reasoning.effort if self.reasoning else None,
        }
        return {key: value for key, value in values.items() if value is not None}

    def nested_parameters(self) -> list[tuple[str, dict[str, Any] | None]]:
        """(prefix, unknown fields) of each options object, for ``params`` to judge."""
        nested: list[tuple[str, BaseModel | None]] = [
            ("stream_options.", self.stream_options),
            ("reasoning.", self.reasoning),
            ("text.", self.text),
        ]
        return [(prefix, part.model_extra if part else None) for prefix, part in nested]


_ROLES: dict[str, Role] = {
    "user": "user",
    "system": "system",
    "developer": "system",
    "assistant": "assistant",
}


def to_model_request(body: ResponsesRequest, settings: dict[str, Any]) -> ModelRequest:
    tools = (body.tools or []) if body.tool_choice != "none" else []
    specs = function_specs((t.name, t.description or "", t.parameters or {}) for t in tools)
    return ModelRequest(to_messages(body), specs, settings)


def to_messages(body: ResponsesRequest) -> list[Message]:
    out: list[Message] = [Message.system(body.instructions)] if body.instructions else []
    items: Sequence[InputMessage | FunctionCallItem | FunctionCallOutputItem] = (
        [InputMessage(role="user", content=body.input)]
        if isinstance(body.input, str)
        else body.input
    )
    names: dict[str, str] = {}  # call id -> tool name, from the calls seen so far
    for position, item in enumerate(items):
        where = f"input[{position}]"
        match item:
            case InputMessage():
                text = _text(item.content, f"{where}.content")
                out.append(Message(_ROLES[item.role], (TextPart(text),)))
            case FunctionCallItem():
                args = parse_arguments(item.arguments, f"{where}.arguments")
                names[item.call_id] = item.name
                _append(out, "assistant", ToolCallPart(item.call_id, item.name, args))
            case FunctionCallOutputItem():
                _append(out, "tool", _result(item, names, where))
            case _:
                assert_never(item)
    return out


def _append(out: list[Message], role: Literal["assistant", "tool"], part: Any) -> None:
    """A call joins the assistant message before it, a result the tool message before it."""
    if out and out[-1].role == role:
        out[-1] = Message(role, (*out[-1].parts, part))
    else:
        out.append(Message(role, (part,)))


def _result(item: FunctionCallOutputItem, names: dict[str, str], where: str) -> ToolResultPart:
    name = names.get(item.call_id)
    if name is None:
        raise _invalid(
            f"{where} answers call {item.call_id!r}, which no earlier function_call item made.",
            "Send the function_call item before its function_call_output.",
        )
    text = _text(item.output, f"{where}.output")
    return ToolResultPart(item.call_id, name, ToolResult(ok=True, message=text))


def _text(content: Text, where: str) -> str:
    if isinstance(content, str):
        return content
    chunks: list[str] = []
    for i, block in enumerate(content):
        if block.type not in ("input_text", "output_text") or block.text is None:
            raise _invalid(
                f"{where}[{i}] is a {block.type!r} part; the bridge accepts text only.",
                "Send text as a string or as input_text / output_text parts.",
            )
        chunks.append(block.text)
    return "".join(chunks)


def _invalid(message: str, hint: str) -> BridgeError:
    return BridgeError(400, "BRIDGE_REQUEST_INVALID", message, hint=hint)

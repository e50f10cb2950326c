"""``xclaw bridge`` end to end: the app under a real uvicorn on a free loopback port, driven by
the official ``openai`` client (and raw httpx where the wire format itself is the point).

Models are the package fakes: ``ScriptedModel``, ``FunctionModel``, and a ``TextProtocolModel``
over a ``ScriptedTransport`` answering in XML, which proves OpenAI tools travel through the
text protocol. ``PausingModel`` (below) is the one test-only model: it streams a first piece,
then waits for the test, which ``FunctionModel`` (whole turns only) cannot do.
"""

from __future__ import annotations

import asyncio
import json
import stat
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import openai
import pytest
from bridge_support import TOKEN, serving
from typer.testing import CliRunner

from xclaw.bridge import load_or_create_token, needs_serial
from xclaw.bridge.server import is_loopback
from xclaw.cli.app import app as cli_app
from xclaw.cli.bridge_cmd import announce_token, parse_model_specs
from xclaw.core.errors import ConfigError, ModelUnavailable
from xclaw.core.messages import Message, ToolCallPart
from xclaw.core.model import Model, ModelEvent, ModelRequest, TextDelta
from xclaw.models.base import ModelTurn
from xclaw.models.fallback import FallbackModel
from xclaw.models.scripted import FunctionModel, ScriptedModel
from xclaw.models.text.model import TextProtocolModel
from xclaw.models.text.protocol import render_reply
from xclaw.models.text.transport import ScriptedTransport

WEATHER_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "City name"}},
            "required": ["city"],
        },
    },
}
QUESTION = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
]


def weather(messages: Sequence[Message], request: ModelRequest) -> ModelTurn:
    """Calls get_weather for a question, answers from the tool's result."""
    last = messages[-1]
    if last.role == "tool":
        result = last.tool_results[0]
        return ModelTurn(f"{result.name}: {result.result.message}", (), 30, 7)
    assert [t.name for t in request.tools] == ["get_weather"]
    call = ToolCallPart("call_w1", "get_weather", {"city": "Paris"})
    return ModelTurn("Let me check.", (call,), 12, 4)


class PausingModel(Model):
    """Streams "first", waits for ``go``, then streams "second" (or raises ``fail``)."""

    def __init__(self, fail: Exception | None = None, *, serialize: bool = False) -> None:
        self.go = asyncio.Event()
        self.fail = fail
        self.serialize = serialize
        self.calls = 0

    async def respond(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self.calls += 1
        yield TextDelta("first")
        await self.go.wait()
        if self.fail is not None:
            raise self.fail
        yield TextDelta(" second")


async def until(condition: Any) -> None:
    """Wait for state the server changes in its own tasks (nothing there to await)."""
    async with asyncio.timeout(5):
        while not condition():  # noqa: ASYNC110 - polling another component's state
            await asyncio.sleep(0.005)


def error_of(err: openai.APIStatusError) -> dict[str, Any]:
    body = err.response.json()
    assert set(body) == {"error"} and {"message", "type", "code"} <= set(body["error"])
    return dict(body["error"])


# -- models, text and usage -----------------------------------------------------------------------


async def test_models_list_and_retrieve() -> None:
    models: dict[str, Model] = {"alpha": ScriptedModel([]), "beta": ScriptedModel([])}
    async with serving(models) as bridge:
        listed = await bridge.client.models.list()
        assert [m.id for m in listed.data] == ["alpha", "beta"]
        assert all(m.object == "model" and m.owned_by == "xclaw" for m in listed.data)
        assert (await bridge.client.models.retrieve("beta")).id == "beta"
        with pytest.raises(openai.NotFoundError):
            await bridge.client.models.retrieve("gamma")


async def test_plain_completion_with_usage() -> None:
    scripted = ScriptedModel(
        [{"text": "Hello there.", "usage": {"input_tokens": 9, "output_tokens": 3}}]
    )
    scripted.honoured_settings = frozenset({"temperature"})  # type: ignore[attr-defined]
    async with serving({"s": scripted}) as bridge:
        reply = await bridge.client.chat.completions.create(
            model="s", messages=[{"role": "user", "content": "Hi"}], temperature=0.2
        )
    assert reply.id.startswith("chatcmpl-") and reply.object == "chat.completion"
    assert reply.model == "s" and reply.created > 0
    choice = reply.choices[0]
    assert choice.message.content == "Hello there." and choice.message.tool_calls is None
    assert choice.finish_reason == "stop"
    assert reply.usage is not None
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (9, 3)
    assert reply.usage.total_tokens == 12
    sent = scripted.requests[0]
    assert [m.text for m in sent.messages] == ["Hi"] and sent.settings == {"temperature": 0.2}
    scripted.assert_complete()


async def test_streaming_wire_format_is_openai_sse() -> None:
    scripted = ScriptedModel(
        [{"text": "Streamed.", "usage": {"input_tokens": 5, "output_tokens": 2}}]
    )
    async with serving({"s": scripted}) as bridge, bridge.http() as http:
        body = {
            "model": "s",
            "stream": True,
            "stream_options": {"include_usage": True},
            "messages": [{"role": "user", "content": "Go"}],
        }
        async with http.stream("POST", "/chat/completions", json=body) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            raw = (await response.aread()).decode()
    events = [block for block in raw.split("\n\n") if block]
    assert all(e.startswith("data: ") for e in events) and events[-1] == "data: [DONE]"
    chunks = [json.loads(e[len("data: ") :]) for e in events[:-1]]
    assert len({c["id"] for c in chunks}) == 1
    assert all(c["object"] == "chat.completion.chunk" and c["model"] == "s" for c in chunks)
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert chunks[1]["choices"][0]["delta"] == {"content": "Streamed."}
    assert chunks[2]["choices"][0] == {
        "index": 0,
        "delta": {},
        "logprobs": None,
        "finish_reason": "stop",
    }
    assert chunks[3]["choices"] == []
    assert chunks[3]["usage"] == {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}


async def test_streaming_with_the_openai_client() -> None:
    async with serving({"s": ScriptedModel(["One answer."])}) as bridge:
        stream = await bridge.client.chat.completions.create(
            model="s", messages=[{"role": "user", "content": "Hi"}], stream=True
        )
        chunks = [chunk async for chunk in stream]
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "One answer."
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert all(c.usage is None for c in chunks)  # not asked for with include_usage


# -- tools ----------------------------------------------------------------------------------------


async def test_tool_call_then_follow_up_with_the_result() -> None:
    model = FunctionModel(weather)
    async with serving({"fn": model}) as bridge:
        first = await bridge.client.chat.completions.create(
            model="fn", messages=QUESTION, tools=[WEATHER_TOOL]
        )
        choice = first.choices[0]
        assert choice.finish_reason == "tool_calls"
        assert choice.message.content == "Let me check."
        (call,) = choice.message.tool_calls or []
        assert (call.id, call.type, call.function.name) == ("call_w1", "function", "get_weather")
        assert json.loads(call.function.arguments) == {"city": "Paris"}
        follow_up = [
            *QUESTION,
            choice.message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": "18 C, sunny"},
        ]
        second = await bridge.client.chat.completions.create(
            model="fn", messages=follow_up, tools=[WEATHER_TOOL]
        )
    assert second.choices[0].message.content == "get_weather: 18 C, sunny"
    assert second.choices[0].finish_reason == "stop"


async def test_tool_call_streams_as_indexed_deltas() -> None:
    calls = (
        ToolCallPart("call_a", "get_weather", {"city": "Oslo"}),
        ToolCallPart("call_b", "get_weather", {"city": "Rome"}),
    )
    scripted = ScriptedModel(
        [
            {
                "tool_calls": [
                    {"id": c.call_id, "name": c.name, "arguments": c.arguments} for c in calls
                ]
            }
        ]
    )
    async with serving({"s": scripted}) as bridge:
        stream = await bridge.client.chat.completions.create(
            model="s", messages=QUESTION, tools=[WEATHER_TOOL], stream=True
        )
        chunks = [chunk async for chunk in stream]
    deltas = [tc for c in chunks if c.choices for tc in c.choices[0].delta.tool_calls or []]
    assert [(d.index, d.id, d.type) for d in deltas] == [
        (0, "call_a", "function"),
        (1, "call_b", "function"),
    ]
    assert [d.function.name for d in deltas if d.function] == ["get_weather", "get_weather"]
    args = [json.loads(d.function.arguments or "") for d in deltas if d.function]
    assert args == [{"city": "Oslo"}, {"city": "Rome"}]
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


async def test_tools_travel_through_the_xml_protocol() -> None:
    transport = ScriptedTransport(
        [
            render_reply(False, "Checking.", "get_weather", {"city": "Paris"}),
            render_reply(True, "Sunny in Paris."),
            render_reply(True, "Hello again."),
        ]
    )
    async with serving({"xml": TextProtocolModel(transport, name="xml")}) as bridge:
        first = await bridge.client.chat.completions.create(
            model="xml", messages=QUESTION, tools=[WEATHER_TOOL]
        )
        message = first.choices[0].message
        (call,) = message.tool_calls or []
        assert first.choices[0].finish_reason == "tool_calls" and message.content == "Checking."
        assert call.function.name == "get_weather"
        assert json.loads(call.function.arguments) == {"city": "Paris"}
        follow_up = [
            *QUESTION,
            message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": "22 C and sunny"},
        ]
        second = await bridge.client.chat.completions.create(
            model="xml", messages=follow_up, tools=[WEATHER_TOOL], stream=True
        )
        text = "".join([c.choices[0].delta.content or "" async for c in second if c.choices])
        assert text == "Sunny in Paris."
        # A different conversation: the chat must be opened afresh, protocol included.
        third = await bridge.client.chat.completions.create(
            model="xml", messages=[{"role": "user", "content": "Hi"}]
        )
        assert third.choices[0].message.content == "Hello again."
    opening, continuation, reopening = transport.sent
    assert "</agent_protocol>" in opening and "## get_weather (external)" in opening
    assert "Be brief." in opening and "Weather in Paris?" in opening
    assert "</agent_protocol>" not in continuation  # the same chat goes on: only what is new
    assert '<tool_result name="get_weather" status="ok">' in continuation
    assert "22 C and sunny" in continuation
    assert "</agent_protocol>" in reopening and "Hi" in reopening
    transport.assert_complete()
    assert transport.closed  # the app's shutdown closed the model


async def test_broken_xml_reply_is_resent_with_feedback() -> None:
    transport = ScriptedTransport(["no xml at all", render_reply(True, "Fixed.")])
    async with serving({"xml": TextProtocolModel(transport)}) as bridge:
        reply = await bridge.client.chat.completions.create(
            model="xml", messages=[{"role": "user", "content": "Hi"}]
        )
    assert reply.choices[0].message.content == "Fixed."
    assert "<protocol_error" in transport.sent[1]


# -- auth, validation, errors ---------------------------------------------------------------------


async def test_missing_or_wrong_token_is_401() -> None:
    scripted = ScriptedModel(["never"])
    hi = [{"role": "user", "content": "Hi"}]
    async with serving({"s": scripted}) as bridge:
        async with bridge.client_with("wrong-token-0123456789") as wrong:
            with pytest.raises(openai.AuthenticationError) as caught:
                await wrong.chat.completions.create(model="s", messages=hi)
            with pytest.raises(openai.AuthenticationError):
                await wrong.models.list()
        async with bridge.http(token=None) as anonymous:
            missing = await anonymous.post("/chat/completions", json={"model": "s", "messages": hi})
            unknown_route = await anonymous.get("/no/such/route")
        async with bridge.http(token=TOKEN + "x") as longer:
            near_miss = await longer.get("/models")
    error = error_of(caught.value)
    assert error["code"] == "BRIDGE_TOKEN_INVALID" and error["type"] == "authentication_error"
    assert [r.status_code for r in (missing, unknown_route, near_miss)] == [401, 401, 401]
    assert missing.json()["error"]["code"] == "BRIDGE_TOKEN_INVALID"
    assert unknown_route.headers["www-authenticate"] == "Bearer"
    assert scripted.requests == []


async def test_unknown_model_is_404_in_openai_shape() -> None:
    async with serving({"s": ScriptedModel([])}) as bridge:
        with pytest.raises(openai.NotFoundError) as caught:
            await bridge.client.chat.completions.create(
                model="gpt-nope", messages=[{"role": "user", "content": "Hi"}]
            )
    error = error_of(caught.value)
    assert error["code"] == "BRIDGE_MODEL_UNKNOWN" and "'gpt-nope'" in error["message"]
    assert error["type"] == "invalid_request_error"


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        (b"{not json", "not valid JSON"),
        (b'{"model": "s"}', "messages"),
        (b'{"model": "s", "messages": [{"role": "robot", "content": "x"}]}', "messages.0"),
        (b'{"model": "s", "messages": [{"role": "user", "content": "x"}], "n": 2}', "n:"),
        (
            b'{"model": "s", "messages": [{"role": "user", "content": '
            b'[{"type": "image_url", "image_url": {"url": "x"}}]}]}',
            "text only",
        ),
        (
            b'{"model": "s", "messages": [{"role": "assistant", "tool_calls": [{"id": "c1", '
            b'"type": "function", "function": {"name": "f", "arguments": "{oops"}}]}]}',
            "not a JSON object",
        ),
        (
            b'{"model": "s", "messages": [{"role": "tool", "tool_call_id": "c9", "content": "r"}]}',
            "which no earlier assistant message made",
        ),
    ],
)
async def test_malformed_requests_are_400(body: bytes, needle: str) -> None:
    scripted = ScriptedModel([])
    async with serving({"s": scripted}) as bridge, bridge.http() as http:
        response = await http.post(
            "/chat/completions", content=body, headers={"Content-Type": "application/json"}
        )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error" and error["code"] == "BRIDGE_REQUEST_INVALID"
    assert needle in error["message"]
    assert scripted.requests == []  # nothing reached the model


async def test_openai_client_sees_400_as_bad_request() -> None:
    async with serving({"s": ScriptedModel([])}) as bridge:
        with pytest.raises(openai.BadRequestError):
            await bridge.client.chat.completions.create(model="s", messages=[])


async def test_model_errors_map_to_status_and_are_redacted() -> None:
    secret = "sk-proj-" + "A1b2C3d4E5f6G7h8J9k0"

    def limited(messages: Sequence[Message], request: ModelRequest) -> ModelTurn:
        raise ModelUnavailable("provider said slow down", status=429, retry_after_s=3)

    def down(messages: Sequence[Message], request: ModelRequest) -> ModelTurn:
        raise ModelUnavailable(f"upstream 503 (key {secret})", status=503)

    models: dict[str, Model] = {"limited": FunctionModel(limited), "down": FunctionModel(down)}
    hi = [{"role": "user", "content": "Hi"}]
    async with serving(models) as bridge:
        with pytest.raises(openai.RateLimitError) as limited_err:
            await bridge.client.chat.completions.create(model="limited", messages=hi)
        with pytest.raises(openai.InternalServerError) as down_err:
            await bridge.client.chat.completions.create(model="down", messages=hi, stream=True)
    assert limited_err.value.response.headers["retry-after"] == "3"
    assert down_err.value.status_code == 502
    error = error_of(down_err.value)
    assert error["code"] == "MODEL_UNAVAILABLE" and "upstream 503" in error["message"]
    assert secret not in down_err.value.response.text and "[REDACTED]" in error["message"]


async def test_failure_mid_stream_arrives_as_an_error_event() -> None:
    model = PausingModel(fail=ModelUnavailable("connection dropped", status=None))
    async with serving({"p": model}) as bridge:
        stream = await bridge.client.chat.completions.create(
            model="p", messages=[{"role": "user", "content": "Hi"}], stream=True
        )
        pieces: list[str] = []
        with pytest.raises(openai.APIError, match="connection dropped"):
            async for chunk in stream:
                pieces.append(chunk.choices[0].delta.content or "")
                model.go.set()
    assert "".join(pieces) == "first"


# -- serialisation --------------------------------------------------------------------------------


async def test_serialized_model_queue_full_is_429_while_others_answer() -> None:
    release = asyncio.Event()
    running = 0
    peak = 0

    async def slow(messages: Sequence[Message], request: ModelRequest) -> ModelTurn:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await release.wait()
        running -= 1
        return ModelTurn("done")

    serial = FunctionModel(slow)
    serial.serialize = True  # type: ignore[attr-defined]
    models: dict[str, Model] = {"serial": serial, "free": ScriptedModel(["free answer"])}
    hi = [{"role": "user", "content": "Hi"}]
    async with serving(models, queue=1) as bridge:
        gate = bridge.app.state.served["serial"].gate
        first = asyncio.create_task(
            bridge.client.chat.completions.create(model="serial", messages=hi)
        )
        await until(lambda: running == 1)
        second = asyncio.create_task(
            bridge.client.chat.completions.create(model="serial", messages=hi)
        )
        await until(lambda: gate.waiting == 1)
        with pytest.raises(openai.RateLimitError) as caught:
            await bridge.client.chat.completions.create(model="serial", messages=hi, stream=True)
        free = await bridge.client.chat.completions.create(model="free", messages=hi)
        release.set()
        answers = await asyncio.gather(first, second)
    assert int(caught.value.response.headers["retry-after"]) >= 1
    error = error_of(caught.value)
    assert error["code"] == "BRIDGE_QUEUE_FULL" and "--queue" in error["message"]
    assert free.choices[0].message.content == "free answer"
    assert [a.choices[0].message.content for a in answers] == ["done", "done"]
    assert peak == 1


async def test_abandoned_stream_frees_the_serialized_model() -> None:
    model = PausingModel(serialize=True)
    async with serving({"p": model}, queue=0) as bridge, bridge.http() as http:
        body = {"model": "p", "stream": True, "messages": [{"role": "user", "content": "Hi"}]}
        async with http.stream("POST", "/chat/completions", json=body) as response:
            async for line in response.aiter_lines():
                if "first" in line:
                    break  # the client walks away mid-answer
        gate = bridge.app.state.served["p"].gate
        await until(lambda: not gate.busy)
        model.go.set()
        again = await bridge.client.chat.completions.create(
            model="p", messages=[{"role": "user", "content": "Hi"}]
        )
    assert again.choices[0].message.content == "first second"
    assert model.calls == 2


def test_which_models_are_serialized() -> None:
    class BrowserTransport(ScriptedTransport):
        browser_backed = True

    browser = TextProtocolModel(BrowserTransport([]))
    assert needs_serial(browser)
    assert needs_serial(FallbackModel([ScriptedModel([]), browser]))
    assert not needs_serial(TextProtocolModel(ScriptedTransport([])))
    assert not needs_serial(ScriptedModel([]))


# -- token and command line -----------------------------------------------------------------------


def test_token_file_is_private_and_printed_only_once(capsys: pytest.CaptureFixture[str]) -> None:
    first = announce_token(None)
    shown = capsys.readouterr().out
    second = announce_token(None)
    later = capsys.readouterr().out
    assert first.created and not second.created and first.value == second.value
    assert first.value in shown and str(first.path) in shown
    assert first.value not in later and str(first.path) in later and "not shown" in later
    assert stat.S_IMODE(first.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(first.path.parent.stat().st_mode) == 0o700
    assert first.path.parts[-2:] == ("bridge", "token")
    assert first.value not in repr(first)


def test_token_file_override_must_be_private(tmp_path: Path) -> None:
    path = tmp_path / "keys" / "bridge.token"
    made = load_or_create_token(path)
    assert made.created and len(made.value) >= 32
    assert load_or_create_token(path).value == made.value
    path.chmod(0o644)
    with pytest.raises(ConfigError) as caught:
        load_or_create_token(path)
    assert caught.value.code == "BRIDGE_TOKEN_FILE_OPEN" and "chmod 600" in caught.value.hint


def test_model_specs_repeat_comma_and_names() -> None:
    specs = parse_model_specs(["openai:gpt-4.1,deepseek:deepseek-chat", "fast=ollama:qwen2.5"])
    assert specs == {
        "openai:gpt-4.1": "openai:gpt-4.1",
        "deepseek:deepseek-chat": "deepseek:deepseek-chat",
        "fast": "ollama:qwen2.5",
    }
    assert parse_model_specs(["demo=scripted:/tmp/a,b.yaml"]) == {"demo": "scripted:/tmp/a,b.yaml"}
    with pytest.raises(ConfigError, match="given twice"):
        parse_model_specs(["openai:gpt-4.1", "openai:gpt-4.1"])


def test_cli_refuses_a_remote_host_without_allow_remote(tmp_path: Path) -> None:
    script = tmp_path / "s.yaml"
    script.write_text("- hello\n")
    args = ["bridge", "--model", f"scripted:{script}", "--host", "0.0.0.0", "--port", "1"]
    result = CliRunner().invoke(cli_app, args)
    assert result.exit_code == 2
    assert "BRIDGE_REMOTE_REFUSED" in result.output and "--allow-remote" in result.output
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("example.org")


async def test_request_abandoned_in_the_queue_never_reaches_the_model() -> None:
    release = asyncio.Event()
    calls = 0

    async def slow(messages: Sequence[Message], request: ModelRequest) -> ModelTurn:
        nonlocal calls
        calls += 1
        await release.wait()
        return ModelTurn("done")

    serial = FunctionModel(slow)
    serial.serialize = True  # type: ignore[attr-defined]
    hi = [{"role": "user", "content": "Hi"}]
    async with serving({"serial": serial}) as bridge:
        gate = bridge.app.state.served["serial"].gate
        first = asyncio.create_task(
            bridge.client.chat.completions.create(model="serial", messages=hi)
        )
        await until(lambda: calls == 1)
        for stream in (False, True):
            waiting = asyncio.create_task(
                bridge.client.chat.completions.create(model="serial", messages=hi, stream=stream)
            )
            await until(lambda: gate.waiting == 1)
            waiting.cancel()  # the client gives up while queued
            await asyncio.gather(waiting, return_exceptions=True)
            await asyncio.sleep(0.05)  # let the server see the connection close
        release.set()
        assert (await first).choices[0].message.content == "done"
        await until(lambda: gate.waiting == 0 and not gate.busy)
    assert calls == 1

"""``POST /v1/responses``: text and function tools, whole and streamed, with the official
``openai`` client (its plain event stream and its ``responses.stream`` helper, which rebuilds
the response from the events and so checks their order and shapes)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import openai
import pytest
from bridge_support import serving

from xclaw.core.errors import ModelUnavailable
from xclaw.core.model import Model, ModelEvent, ModelRequest, TextDelta
from xclaw.models.fallback import FallbackModel
from xclaw.models.scripted import ScriptedModel
from xclaw.models.text.model import TextProtocolModel
from xclaw.models.text.protocol import render_reply
from xclaw.models.text.transport import ScriptedTransport

WEATHER: dict[str, Any] = {
    "type": "function",
    "name": "get_weather",
    "description": "Current weather for a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}
ASK = [{"role": "user", "content": "Weather in Paris?"}]


class BreaksAfterText(Model):
    """Streams a first piece of text, then fails as a dropped connection would."""

    async def respond(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        yield TextDelta("partial")
        raise ModelUnavailable("connection dropped", status=None)


def xml_model(*replies: str) -> tuple[TextProtocolModel, ScriptedTransport]:
    transport = ScriptedTransport(list(replies))
    return TextProtocolModel(transport, name="xml"), transport


async def test_text_answer_is_a_response_object_with_usage() -> None:
    scripted = ScriptedModel(
        [{"text": "Hello there.", "usage": {"input_tokens": 8, "output_tokens": 3}}]
    )
    async with serving({"s": scripted}) as bridge:
        reply = await bridge.client.responses.create(
            model="s", input="Hi", instructions="Be brief.", store=False, metadata={"k": "v"}
        )
    assert reply.id.startswith("resp_") and reply.object == "response"
    assert reply.status == "completed" and reply.model == "s" and reply.error is None
    assert reply.output_text == "Hello there."
    (item,) = reply.output
    assert item.type == "message" and item.role == "assistant" and item.status == "completed"
    assert reply.usage is not None
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (8, 3)
    assert reply.usage.total_tokens == 11
    sent = scripted.requests[0].messages
    assert [(m.role, m.text) for m in sent] == [("system", "Be brief."), ("user", "Hi")]


async def test_function_tools_through_the_xml_protocol_continue_the_same_chat() -> None:
    model, transport = xml_model(
        render_reply(False, "Checking.", "get_weather", {"city": "Paris"}),
        render_reply(True, "Sunny in Paris."),
    )
    async with serving({"xml": FallbackModel([model])}) as bridge:
        first = await bridge.client.responses.create(model="xml", input=ASK, tools=[WEATHER])
        message, call = first.output
        assert message.type == "message" and first.output_text == "Checking."
        assert call.type == "function_call" and call.name == "get_weather"
        assert json.loads(call.arguments) == {"city": "Paris"} and call.call_id
        follow = [
            *ASK,
            *[item.model_dump(exclude_none=True) for item in first.output],
            {"type": "function_call_output", "call_id": call.call_id, "output": "22 C, sunny"},
        ]
        second = await bridge.client.responses.create(model="xml", input=follow, tools=[WEATHER])
    assert second.output_text == "Sunny in Paris." and second.status == "completed"
    opening, continuation = transport.sent
    assert "</agent_protocol>" in opening and "## get_weather (external)" in opening
    assert "</agent_protocol>" not in continuation and "22 C, sunny" in continuation


async def test_streamed_text_with_the_stream_helper() -> None:
    async with serving({"s": ScriptedModel(["Streamed words."])}) as bridge:
        async with bridge.client.responses.stream(model="s", input="Go") as stream:
            kinds = [event.type async for event in stream]
            final = await stream.get_final_response()
    assert kinds == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert final.output_text == "Streamed words." and final.status == "completed"
    assert final.usage is not None and final.usage.output_tokens > 0


async def test_streamed_tool_call_events() -> None:
    model, _ = xml_model(render_reply(False, "", "get_weather", {"city": "Rome"}))
    async with serving({"xml": model}) as bridge:
        stream = await bridge.client.responses.create(
            model="xml", input=ASK, tools=[WEATHER], stream=True
        )
        events = [event async for event in stream]
    kinds = [e.type for e in events]
    assert kinds[2:6] == [
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
    ]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    done = events[-1]
    assert done.type == "response.completed"
    (call,) = done.response.output
    assert call.type == "function_call" and json.loads(call.arguments) == {"city": "Rome"}
    added = events[2]
    assert added.type == "response.output_item.added" and added.item.id == call.id


async def test_the_wire_events_name_their_type_twice() -> None:
    async with serving({"s": ScriptedModel(["Hi."])}) as bridge, bridge.http() as http:
        body = {"model": "s", "input": "Hello", "stream": True}
        async with http.stream("POST", "/responses", json=body) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            raw = (await response.aread()).decode()
    blocks = [b for b in raw.split("\n\n") if b]
    for block in blocks:
        event_line, data_line = block.split("\n")
        payload = json.loads(data_line.removeprefix("data: "))
        assert event_line == f"event: {payload['type']}"
    completed = json.loads(blocks[-1].split("\n")[1].removeprefix("data: "))
    assert completed["response"]["output"][0]["content"][0]["text"] == "Hi."


async def test_a_failure_mid_stream_ends_with_response_failed() -> None:
    async with serving({"b": BreaksAfterText()}) as bridge:
        stream = await bridge.client.responses.create(model="b", input="Hi", stream=True)
        events = [event async for event in stream]
    assert events[-1].type == "response.failed"
    failed = events[-1].response
    assert failed.status == "failed" and failed.error is not None
    assert failed.error.code == "MODEL_UNAVAILABLE" and "connection dropped" in failed.error.message


@pytest.mark.parametrize(
    ("extra", "param"),
    [
        ({"previous_response_id": "resp_1"}, "previous_response_id"),
        ({"store": True}, "store"),
        ({"background": True}, "background"),
        ({"conversation": "conv_1"}, "conversation"),
        ({"max_output_tokens": 20}, "max_output_tokens"),
        ({"temperature": 0.2}, "temperature"),
        ({"reasoning": {"effort": "low"}}, "reasoning.effort"),
        ({"reasoning": {"summary": "auto"}}, "reasoning.summary"),
        ({"text": {"format": {"type": "text"}, "verbosity": "low"}}, "text.verbosity"),
        ({"include": ["reasoning.encrypted_content"]}, "include"),
    ],
)
async def test_unsupported_responses_parameters_are_refused(
    extra: dict[str, Any], param: str
) -> None:
    model, transport = xml_model()
    async with serving({"xml": model}) as bridge:
        with pytest.raises(openai.BadRequestError) as caught:
            await bridge.client.responses.create(model="xml", input="Hi", extra_body=extra)
    error = caught.value.response.json()["error"]
    assert error["code"] == "BRIDGE_PARAMETER_UNSUPPORTED" and error["param"] == param
    assert repr(param) in error["message"] and transport.sent == []


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ({"input": [{"role": "user", "content": [{"type": "input_image"}]}]}, "text only"),
        ({"input": "Hi", "tools": [{"type": "web_search"}]}, "tools.0"),
        ({"input": [{"type": "reasoning", "summary": []}]}, "input.0"),
        (
            {"input": [{"type": "function_call_output", "call_id": "c9", "output": "x"}]},
            "no earlier function_call",
        ),
        ({"input": "Hi", "tool_choice": "required"}, "tool_choice"),
    ],
)
async def test_malformed_responses_requests_are_400(body: dict[str, Any], needle: str) -> None:
    scripted = ScriptedModel([])
    async with serving({"s": scripted}) as bridge, bridge.http() as http:
        response = await http.post("/responses", json={"model": "s", **body})
    assert response.status_code == 400
    assert needle in response.json()["error"]["message"]
    assert scripted.requests == []

"""Request parameters: ``stop`` is applied for every model, settings reach a model that keeps
them, and any parameter that would be ignored is a 400 naming it (``param`` and message)."""

from __future__ import annotations

from typing import Any

import openai
import pytest
from bridge_support import serving

from xclaw.bridge.params import HONOURED_BY_API, SETTINGS, honoured_settings, model_settings
from xclaw.bridge.stops import StopCut
from xclaw.core.messages import Message, ToolCallPart
from xclaw.core.model import Finish, ModelEvent, ModelRequest, TextDelta, ToolCallEvent, Usage
from xclaw.models._http import ToolNames
from xclaw.models.fallback import FallbackModel
from xclaw.models.resolve import resolve_one
from xclaw.models.scripted import ScriptedModel
from xclaw.models.text.model import TextProtocolModel
from xclaw.models.text.protocol import render_reply
from xclaw.models.text.transport import ScriptedTransport

HI = [{"role": "user", "content": "Hi"}]
WEATHER: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


def text_model(*replies: str) -> TextProtocolModel:
    return TextProtocolModel(ScriptedTransport(list(replies)), name="text")


def refusal(err: openai.BadRequestError) -> dict[str, Any]:
    error = dict(err.response.json()["error"])
    assert (
        error["code"] == "BRIDGE_PARAMETER_UNSUPPORTED" and error["type"] == "invalid_request_error"
    )
    return error


# -- stop -----------------------------------------------------------------------------------------


def test_stop_cut_holds_back_a_sequence_split_across_pieces() -> None:
    cut = StopCut(["<END>", "##"])
    events: list[ModelEvent] = [
        TextDelta("one two <E"),
        TextDelta("N"),
        TextDelta("D> three"),
        ToolCallEvent(ToolCallPart("c1", "f", {})),
        Usage(5, 6),
        Finish("tool_calls"),
    ]
    out = [kept for event in events for kept in cut.feed(event)] + cut.flush()
    assert out == [TextDelta("one two "), Usage(5, 6)]
    near_miss = StopCut(["<END>"])
    kept = near_miss.feed(TextDelta("a <EN")) + near_miss.feed(TextDelta("x")) + near_miss.flush()
    assert "".join(e.text for e in kept if isinstance(e, TextDelta)) == "a <ENx"


async def test_stop_applies_to_a_text_only_model_and_drops_what_follows() -> None:
    model = text_model(
        render_reply(True, "First line.\nSecond line."),
        render_reply(False, "Checking END now", "get_weather", {"city": "Oslo"}),
    )
    async with serving({"text": model}) as bridge:
        whole = await bridge.client.chat.completions.create(model="text", messages=HI, stop="\n")
        stream = await bridge.client.chat.completions.create(
            model="text", messages=HI, stop=["END", "zzz"], tools=[WEATHER], stream=True
        )
        chunks = [chunk async for chunk in stream]
    assert whole.choices[0].message.content == "First line."
    assert whole.choices[0].finish_reason == "stop"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Checking "
    assert not any(c.choices and c.choices[0].delta.tool_calls for c in chunks)
    assert chunks[-1].choices[0].finish_reason == "stop"


async def test_more_than_four_stop_sequences_are_refused() -> None:
    async with serving({"text": text_model()}) as bridge:
        with pytest.raises(openai.BadRequestError, match="stop"):
            await bridge.client.chat.completions.create(
                model="text", messages=HI, stop=["a", "b", "c", "d", "e"]
            )


# -- settings a model cannot keep ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("asked", "param"),
    [
        ({"temperature": 0.3}, "temperature"),
        ({"top_p": 0.5}, "top_p"),
        ({"max_tokens": 50}, "max_tokens"),
        ({"max_completion_tokens": 50}, "max_completion_tokens"),
        ({"seed": 7}, "seed"),
        ({"reasoning_effort": "low"}, "reasoning_effort"),
    ],
)
async def test_a_text_only_model_refuses_what_it_would_ignore(
    asked: dict[str, Any], param: str
) -> None:
    transport = ScriptedTransport([])
    model = FallbackModel([TextProtocolModel(transport, name="web")])  # as the CLI builds it
    async with serving({"web": model}) as bridge:
        with pytest.raises(openai.BadRequestError) as caught:
            await bridge.client.chat.completions.create(model="web", messages=HI, **asked)
    error = refusal(caught.value)
    assert error["param"] == param and repr(param) in error["message"]
    assert "'web'" in error["message"]
    assert transport.sent == []  # nothing reached the page


async def test_a_text_only_model_keeps_a_single_tool_call_and_neutral_values() -> None:
    model = text_model(render_reply(True, "fine"))
    async with serving({"text": model}) as bridge:
        reply = await bridge.client.chat.completions.create(
            model="text",
            messages=HI,
            parallel_tool_calls=False,  # the XML protocol makes one call per reply anyway
            frequency_penalty=0,
            presence_penalty=0,
            logprobs=False,
            store=False,
            user="someone",
            metadata={"run": "7"},
            n=1,
            stream_options=None,
        )
    assert reply.choices[0].message.content == "fine"


@pytest.mark.parametrize(
    ("extra", "param"),
    [
        ({"logprobs": True}, "logprobs"),
        ({"frequency_penalty": 0.5}, "frequency_penalty"),
        ({"logit_bias": {"50256": -100}}, "logit_bias"),
        ({"store": True}, "store"),
        ({"modalities": ["text", "audio"]}, "modalities"),
        ({"prediction": {"type": "content", "content": "x"}}, "prediction"),
        ({"web_search_options": {}}, "web_search_options"),
        ({"made_up_option": 1}, "made_up_option"),
        (
            {"stream": True, "stream_options": {"include_usage": True, "odd": 1}},
            "stream_options.odd",
        ),
    ],
)
async def test_parameters_the_bridge_cannot_honour_are_refused(
    extra: dict[str, Any], param: str
) -> None:
    scripted = ScriptedModel([])
    async with serving({"s": scripted}) as bridge:
        with pytest.raises(openai.BadRequestError) as caught:
            await bridge.client.chat.completions.create(model="s", messages=HI, extra_body=extra)
    error = refusal(caught.value)
    assert error["param"] == param and repr(param) in error["message"]
    assert scripted.requests == []


async def test_a_model_that_honours_settings_gets_them() -> None:
    scripted = ScriptedModel(["ok"])
    scripted.honoured_settings = frozenset(SETTINGS)  # type: ignore[attr-defined]
    chain = FallbackModel([scripted])
    async with serving({"s": chain}) as bridge:
        await bridge.client.chat.completions.create(
            model="s", messages=HI, temperature=0.1, top_p=0.9, seed=4, max_completion_tokens=9
        )
    assert scripted.requests[0].settings == {
        "temperature": 0.1,
        "top_p": 0.9,
        "seed": 4,
        "max_completion_tokens": 9,
    }


# -- which settings the adapters keep --------------------------------------------------------------

SAMPLES: dict[str, Any] = {
    "temperature": 0.5,
    "top_p": 0.5,
    "max_tokens": 77,
    "max_completion_tokens": 78,
    "seed": 3,
    "parallel_tool_calls": False,
    "reasoning_effort": "low",
}
KEYS = {"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k", "DEEPSEEK_API_KEY": "k"}


@pytest.mark.parametrize(
    "spec",
    [
        "openai-chat:gpt-4.1",
        "deepseek:deepseek-chat",
        "openai:gpt-5",
        "openai:gpt-4.1",
        "anthropic:claude-sonnet-4-5",
        "anthropic:claude-3-5-haiku",
    ],
)
async def test_the_settings_table_matches_what_each_adapter_sends(spec: str) -> None:
    """A setting is honoured exactly when it changes the adapter's request body."""
    assert set(SAMPLES) == set(SETTINGS)
    model = resolve_one(spec, env=KEYS)
    names = ToolNames([])

    def body(settings: dict[str, Any]) -> Any:
        request = ModelRequest([Message.user("hi")], [], settings)
        return model.request_body(request, names)  # type: ignore[attr-defined]

    try:
        plain = body({})
        changes = {name for name, value in SAMPLES.items() if body({name: value}) != plain}
        assert honoured_settings(model) == changes
        assert honoured_settings(FallbackModel([model])) == changes
        assert honoured_settings(model) <= HONOURED_BY_API[model.preset.api]  # type: ignore[attr-defined]
    finally:
        await model.aclose()


def test_max_completion_tokens_goes_out_as_max_tokens_where_only_that_is_kept() -> None:
    kept = frozenset({"max_tokens"})
    assert model_settings({"max_completion_tokens": 9}, kept, "m") == {"max_tokens": 9}
    assert model_settings({"parallel_tool_calls": True}, frozenset(), "m") == {}
    assert honoured_settings(FallbackModel([ScriptedModel([]), text_model()])) == frozenset()

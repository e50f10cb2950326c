"""``usage`` in every whole answer, and as OpenAI's final chunk (``choices: []``) in a stream
that asks for it; estimated offline for a model that reports no token counts (a web page)."""

from __future__ import annotations

import json

from bridge_support import serving

from xclaw.context.tokens import EstimateCounter, count_messages
from xclaw.core.messages import Message, TextPart
from xclaw.models.scripted import ScriptedModel
from xclaw.models.text.model import TextProtocolModel
from xclaw.models.text.protocol import render_reply
from xclaw.models.text.transport import ScriptedTransport

ASK = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Name a colour."}]
ASKED = [Message.system("Be brief."), Message.user("Name a colour.")]


def web_like(*answers: str) -> TextProtocolModel:
    replies = [render_reply(True, a) for a in answers]
    return TextProtocolModel(ScriptedTransport(replies), name="chatgpt-web")


async def test_a_model_without_counts_gets_an_estimate_in_a_whole_answer() -> None:
    async with serving({"web": web_like("Teal, a blue-green.")}) as bridge:
        reply = await bridge.client.chat.completions.create(model="web", messages=ASK)
    usage = reply.usage
    assert usage is not None
    counter = EstimateCounter()
    assert usage.prompt_tokens == count_messages(counter, ASKED)
    answer = Message("assistant", (TextPart("Teal, a blue-green."),))
    assert usage.completion_tokens == counter.count_message(answer)
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens


async def test_the_stream_ends_with_a_usage_chunk_when_asked() -> None:
    async with serving({"web": web_like("Red.", "Red.")}) as bridge:
        stream = await bridge.client.chat.completions.create(
            model="web", messages=ASK, stream=True, stream_options={"include_usage": True}
        )
        chunks = [chunk async for chunk in stream]
        quiet = await bridge.client.chat.completions.create(model="web", messages=ASK, stream=True)
        unasked = [chunk async for chunk in quiet]
    *body, last = chunks
    assert last.choices == [] and last.usage is not None
    assert last.usage.prompt_tokens > 0 and last.usage.completion_tokens > 0
    assert all(c.usage is None for c in body) and body[-1].choices[0].finish_reason == "stop"
    assert all(c.usage is None for c in unasked) and all(c.choices for c in unasked)


async def test_reported_counts_win_and_a_missing_one_is_estimated() -> None:
    scripted = ScriptedModel(
        [
            {"text": "Blue.", "usage": {"input_tokens": 11, "output_tokens": 2}},
            {"text": "Green.", "usage": {"output_tokens": 3}},
        ]
    )
    async with serving({"s": scripted}) as bridge, bridge.http() as http:
        body = {"model": "s", "messages": ASK, "stream": True}
        body["stream_options"] = {"include_usage": True}
        async with http.stream("POST", "/chat/completions", json=body) as response:
            raw = (await response.aread()).decode()
        second = await bridge.client.chat.completions.create(model="s", messages=ASK)
    chunks = [json.loads(e[len("data: ") :]) for e in raw.split("\n\n") if e and "[DONE]" not in e]
    assert chunks[-1] == {**chunks[-1], "choices": [], "object": "chat.completion.chunk"}
    assert chunks[-1]["usage"] == {"prompt_tokens": 11, "completion_tokens": 2, "total_tokens": 13}
    assert second.usage is not None and second.usage.completion_tokens == 3
    assert second.usage.prompt_tokens == count_messages(EstimateCounter(), ASKED)

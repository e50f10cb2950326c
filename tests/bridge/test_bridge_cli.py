"""``xclaw bridge`` as a process: ``--headless`` reaches the page's browser (as ``xclaw run
--headless`` does), and a model that cannot start says why instead of blaming the model name
or a key."""

from __future__ import annotations

import json
from pathlib import Path

import openai
import pytest
from bridge_support import browser_env, start_cli_bridge
from fixture_server import FixtureSite
from web_support import needs_browser

from xclaw.bridge.errors import from_exception
from xclaw.core.errors import ModelRequestRejected
from xclaw.models.text.protocol import render_reply

WEATHER = {
    "type": "function",
    "name": "get_weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}


@needs_browser
def test_headless_bridge_answers_the_responses_api_from_the_page(
    either_site: FixtureSite, tmp_path: Path
) -> None:
    site = either_site  # the 2025 and the 2026 page
    site.queue(
        render_reply(False, "Checking.", "get_weather", {"city": "Lyon"}),
        render_reply(True, "Mild in Lyon."),
    )
    args = ["--model", "chatgpt-web", "--base-url", site.url, "--headless"]
    bridge = start_cli_bridge(args, tmp_path, env=browser_env(headless=False))  # no display
    try:
        with bridge.client(timeout=120) as client:
            ask = [{"role": "user", "content": "Weather in Lyon?"}]
            first = client.responses.create(model="chatgpt-web", input=ask, tools=[WEATHER])
            message, call = first.output
            assert call.type == "function_call" and json.loads(call.arguments) == {"city": "Lyon"}
            follow = [
                *ask,
                *[item.model_dump(exclude_none=True) for item in first.output],
                {"type": "function_call_output", "call_id": call.call_id, "output": "17 C"},
            ]
            with client.responses.stream(
                model="chatgpt-web", input=follow, tools=[WEATHER]
            ) as stream:
                final = stream.get_final_response()
    finally:
        bridge.stop()
    assert first.output_text == "Checking." and final.output_text == "Mild in Lyon."
    assert final.usage is not None and final.usage.input_tokens > 0
    first_post, second_post = site.posted
    assert "## get_weather (external)" in first_post["text"] and "17 C" in second_post["text"]
    assert second_post["conversation_id"] == first_post["conversation_id"]


@needs_browser
def test_a_browser_that_cannot_open_a_window_says_so(site: FixtureSite, tmp_path: Path) -> None:
    args = ["--model", "chatgpt-web", "--base-url", site.url]  # no --headless, no display
    bridge = start_cli_bridge(args, tmp_path, env=browser_env(headless=False))
    try:
        with (
            bridge.client(timeout=120) as client,
            pytest.raises(openai.InternalServerError) as caught,
        ):
            client.chat.completions.create(
                model="chatgpt-web", messages=[{"role": "user", "content": "Hi"}]
            )
    finally:
        bridge.stop()
    error = caught.value.response.json()["error"]
    assert caught.value.status_code == 502 and error["code"] == "BROWSER_LAUNCH_FAILED"
    assert "did not start" in error["message"] and "--headless" in error["message"]
    assert "model name" not in error["message"] and "key" not in error["message"]
    assert site.posted == []


def test_a_model_refusal_without_an_http_status_keeps_its_own_advice() -> None:
    lost = ModelRequestRejected(
        "The browser is not signed in to ChatGPT.",
        code="WEB_LOGIN_REQUIRED",
        hint="Run `xclaw login` and sign in in the browser window it opens.",
    )
    answer = from_exception(lost)
    assert answer.status == 502 and answer.code == "WEB_LOGIN_REQUIRED"
    assert "xclaw login" in answer.hint and "model name" not in answer.hint
    keyed = from_exception(ModelRequestRejected("bad key", code="MODEL_AUTH", status=401))
    assert "(401)" in keyed.message and "key" in keyed.hint

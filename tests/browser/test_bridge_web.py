"""`xclaw bridge --model chatgpt-web`: the fixture page behind the OpenAI API, tools carried
through the XML protocol, used with the official openai client."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import openai
from fixture_server import FixtureSite
from web_support import TEST_ARGS, needs_browser

from xclaw.models.text.protocol import render_reply

pytestmark = needs_browser

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start_bridge(url: str, token_file: Path, port: int) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "xclaw", "bridge", "--model", "chatgpt-web"]
    argv += ["--base-url", url, "--port", str(port), "--token-file", str(token_file)]
    env = {
        **os.environ,
        "XCLAW_BROWSER_HEADLESS": "1",
        "XCLAW_BROWSER_ARGS": " ".join(TEST_ARGS),
        "COLUMNS": "200",
    }
    return subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    )


def _wait_ready(port: int, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()[0]
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise AssertionError("the bridge did not start")


def test_the_page_answers_openai_clients_with_tool_calls(site: FixtureSite, tmp_path: Path) -> None:
    site.queue(
        render_reply(False, "Checking the weather.", "get_weather", {"city": "Paris"}),
        render_reply(True, "It is sunny in Paris."),
        render_reply(True, "Hello from the page."),
    )
    port = _free_port()
    proc = _start_bridge(site.url, tmp_path / "token", port)
    try:
        _wait_ready(port, proc)
        token = (tmp_path / "token").read_text().strip()
        client = openai.OpenAI(
            base_url=f"http://127.0.0.1:{port}/v1", api_key=token, max_retries=0, timeout=120
        )
        ask = [{"role": "user", "content": "Weather in Paris?"}]
        first = client.chat.completions.create(model="chatgpt-web", messages=ask, tools=[WEATHER])
        [call] = first.choices[0].message.tool_calls or []
        assert first.choices[0].finish_reason == "tool_calls"
        assert call.function.name == "get_weather" and '"Paris"' in call.function.arguments
        follow = [
            *ask,
            first.choices[0].message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": "sunny, 21 C"},
        ]
        second = client.chat.completions.create(
            model="chatgpt-web", messages=follow, tools=[WEATHER]
        )
        assert second.choices[0].message.content == "It is sunny in Paris."
        assert "sunny, 21 C" in site.posted[1]["text"]  # the tool result reached the page
        streamed = client.chat.completions.create(
            model="chatgpt-web", messages=[{"role": "user", "content": "hi"}], stream=True
        )
        text = "".join(chunk.choices[0].delta.content or "" for chunk in streamed if chunk.choices)
        assert text == "Hello from the page."
        bad = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="wrong", max_retries=0)
        try:
            bad.models.list()
            raise AssertionError("a wrong token was accepted")
        except openai.AuthenticationError:
            pass
    finally:
        proc.terminate()
        proc.communicate(timeout=30)

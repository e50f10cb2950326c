"""`xclaw models list|probe`, and the run summary naming a failover and the cost."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner
from wire_server import WireServer, unused_url

from xclaw import Agent
from xclaw.cli.app import app
from xclaw.cli.render import print_summary
from xclaw.models.fallback import FallbackModel
from xclaw.models.openai_chat import OpenAIChatModel
from xclaw.models.presets import get_preset


def _chat(payload: dict[str, Any], finish: str) -> list[str | dict[str, Any]]:
    return [
        {"choices": [{"index": 0, "delta": payload, "finish_reason": None}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
        {"choices": [], "usage": {"prompt_tokens": 1000, "completion_tokens": 100}},
        "data: [DONE]",
    ]


def _tool_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "tool_calls": [
            {
                "index": 0,
                "id": "c1",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
        ]
    }


def test_models_list_shows_presets() -> None:
    out = CliRunner().invoke(app, ["models", "list"], env={"COLUMNS": "200"})
    assert out.exit_code == 0
    for name in ("openai", "anthropic", "deepseek", "ollama", "openrouter", "copilot"):
        assert name in out.stdout


@pytest.mark.parametrize("good", [True, False])
def test_probe_reports_a_tool_round_trip(
    wire: WireServer, good: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XCLAW_API_KEY", "test-key")
    value = "xclaw-probe-4729" if good else "something else"
    wire.add_sse(_chat(_tool_call("probe_echo", {"value": value}), "tool_calls"))
    if good:
        wire.add_sse(_chat({"content": "done"}, "stop"))
    out = CliRunner().invoke(
        app, ["models", "probe", "openai-compatible:m", "--base-url", wire.url]
    )
    report = json.loads(out.stdout)
    assert report["strict_tool_call"] is good and report["result_continuation"] is good
    assert out.exit_code == (0 if good else 1)
    if good:  # the second request carried the tool result back
        body = wire.requests[1].body
        assert body is not None and body["messages"][-1]["role"] == "tool"


async def test_summary_shows_failover_and_cost(root: Path, wire: WireServer) -> None:
    preset = get_preset("openai-chat")
    assert preset is not None
    dead = OpenAIChatModel("gpt-4o", base_url=unused_url(), api_key="k", preset=preset, timeout_s=5)
    live = OpenAIChatModel("gpt-4o", base_url=wire.url, api_key="k", preset=preset, timeout_s=5)
    wire.add_sse(_chat({"content": "hello"}, "stop"))
    model = FallbackModel([dead, live], retries=0)
    try:
        result = await Agent(model, root, evidence_gate_enabled=False).run("say hello")
    finally:
        await model.aclose()
    assert result.ok and result.reply == "hello"
    console = Console(record=True, width=200)
    print_summary(console, result, model)
    text = console.export_text()
    assert "failover:" in text and "≈$" in text

"""The shipped fakes: ScriptedModel (files, expectations, templates) and FunctionModel."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from xclaw import Agent, ScriptedModel, ToolResult, tool
from xclaw.core.errors import ConfigError, ScriptMismatch
from xclaw.models.scripted import load_script


@tool("url")
def url() -> ToolResult:
    """Give a URL."""
    return ToolResult.success("started", detectedUrls=["http://127.0.0.1:9999/"])


def test_loads_jsonl_and_yaml(tmp_path: Path) -> None:
    j = tmp_path / "s.jsonl"
    j.write_text(
        json.dumps({"text": "a"})
        + "\n\n"
        + json.dumps({"tool_calls": [{"name": "x", "arguments": {}}]})
        + "\n"
    )
    y = tmp_path / "s.yaml"
    y.write_text("turns:\n  - text: a\n  - tool_calls: [{name: x, arguments: {}}]\n")
    assert load_script(j) == load_script(y)


@pytest.mark.parametrize(
    "content", ["turns: 5", "- {text: a, bogus: 1}", "- {tool_calls: [{arguments: {}}]}", "[: bad"]
)
def test_bad_scripts_are_config_errors(tmp_path: Path, content: str) -> None:
    p = tmp_path / "bad.yaml"
    p.write_text(content)
    with pytest.raises(ConfigError):
        load_script(p)


async def test_templates_quote_results_the_model_saw(root: Path) -> None:
    model = ScriptedModel(
        [
            {"tool_calls": [{"id": "u", "name": "url", "arguments": {}}]},
            {"text": "serving at {{result:u.data.detectedUrls.0}}"},
        ]
    )
    result = await Agent(model, root, tools=[url], evidence_gate_enabled=False).run("t")
    assert result.reply == "serving at http://127.0.0.1:9999/"


async def test_template_for_unseen_result_fails_the_run(root: Path) -> None:
    model = ScriptedModel([{"text": "{{result:nope.data.x}}"}])
    result = await Agent(model, root, tools=[url]).run("t")
    assert result.status == "failed" and "SCRIPT_MISMATCH" in result.reason


async def test_expectations_are_checked(root: Path) -> None:
    model = ScriptedModel(
        [
            {"tool_calls": [{"name": "url", "arguments": {}}]},
            {"expect": {"last_contains": ["not there"]}, "text": "x"},
        ]
    )
    result = await Agent(model, root, tools=[url]).run("t")
    assert result.status == "failed" and "lacks" in result.reason
    model = ScriptedModel([{"expect": {"tools_include": ["fs.read"]}, "text": "x"}])
    assert (await Agent(model, root, tools=[url]).run("t")).status == "failed"


def test_assert_complete() -> None:
    model = ScriptedModel(["a", "b"])
    with pytest.raises(ScriptMismatch):
        model.assert_complete()

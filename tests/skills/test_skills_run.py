"""Skills through a real run: the model is sent names and descriptions first; a skill's body
after the task matches it (or after ``skills.load``); its script runs through the normal
terminal tool, policy and sandbox included."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from xclaw.coding.agent import Agent
from xclaw.coding.prompt import SYSTEM_PROMPT
from xclaw.core.messages import Message, ToolCallPart
from xclaw.models.base import ModelRequest, ModelTurn
from xclaw.models.scripted import FunctionModel, ScriptedModel
from xclaw.plugins.extensions import Extensions, load_extensions
from xclaw.plugins.state import PluginState

SYSINFO_BODY = "Run the bundled script; do not guess values."
CSV_BODY = "The report template the script fills is"


def _agent(model: object, root: Path) -> tuple[Agent, Extensions]:
    ext = load_extensions(root, state=PluginState())
    agent = Agent(
        model,  # type: ignore[arg-type]
        root,
        ext.registry,
        hooks=ext.hooks,
        system_prompt=ext.system_prompt(SYSTEM_PROMPT),
        approval="allow",
    )
    return agent, ext


def _system(request: ModelRequest) -> str:
    return request.messages[0].text


async def test_a_matching_task_gets_the_body_and_runs_the_script(
    root: Path, project_skills: Path
) -> None:
    sent: list[ModelRequest] = []

    def model(messages: Sequence[Message], request: ModelRequest) -> ModelTurn:
        sent.append(request)
        if len(sent) == 1:  # run what the skill body says, as a model would
            script = re.search(r"python3 (\S+/scripts/sysinfo\.py) all", _system(request))
            assert script is not None, "the skill body was not sent"
            call = ToolCallPart(
                "c1", "terminal.exec", {"program": "python3", "argv": [script[1], "memory"]}
            )
            return ModelTurn(tool_calls=(call,))
        return ModelTurn(text="Memory figures reported.")

    agent, _ext = _agent(FunctionModel(model), root)
    result = await agent.run("How much memory and disk space is free on this machine?")
    assert result.ok, result.reason
    first = _system(sent[0])
    assert "- sysinfo: Query CPU load, memory usage" in first  # the index
    assert SYSINFO_BODY in first and "Folder: .claude/skills/sysinfo" in first
    assert CSV_BODY not in first  # only the matched skill's body
    record = result.tool_calls[0]
    assert record.name == "terminal.exec" and record.result.ok, record.result
    assert "mem_total:" in str(record.result.data)
    # The transcript keeps the plain prompt: the body was only in the view sent.
    assert "- sysinfo:" in result.messages[0].text
    assert SYSINFO_BODY not in result.messages[0].text


async def test_an_unmatched_task_sees_only_the_index_until_the_model_loads_a_skill(
    root: Path, project_skills: Path
) -> None:
    (root / "sales.csv").write_text("region,amount\nnorth,10\nsouth,30\n")
    script = project_skills / "csv-summary" / "scripts" / "summarize.py"
    model = ScriptedModel(
        [
            {
                "expect": {"tools_include": ["skills.load", "skills.read"]},
                "tool_calls": [
                    {"id": "l", "name": "skills.load", "arguments": {"name": "csv-summary"}}
                ],
            },
            {
                "expect": {"last_contains": [CSV_BODY, "assets/report.md.tmpl"]},
                "tool_calls": [
                    {
                        "id": "r",
                        "name": "skills.read",
                        "arguments": {"name": "csv-summary", "path": "assets/report.md.tmpl"},
                    },
                    {
                        "id": "x",
                        "name": "terminal.exec",
                        "arguments": {"program": "python3", "argv": [str(script), "sales.csv"]},
                    },
                ],
            },
            {
                "expect": {"last_contains": ["rows: 2", "amount: min 10, mean 20, max 30"]},
                "text": "ok",
            },
        ]
    )
    agent, _ext = _agent(model, root)
    result = await agent.run("Give me an overview of sales.csv")
    model.assert_complete()
    assert result.ok, result.reason
    first = _system(model.requests[0])
    assert "- csv-summary: Summarize a CSV spreadsheet" in first
    assert CSV_BODY not in first and SYSINFO_BODY not in first
    assert all(CSV_BODY not in _system(r) for r in model.requests)  # not re-sent by the view
    read = next(r for r in result.tool_calls if r.name == "skills.read")
    assert read.result.message.startswith("rows: {rows}")


async def test_a_task_no_skill_fits_never_sees_a_body(root: Path, project_skills: Path) -> None:
    model = ScriptedModel([{"text": "renamed"}])
    agent, _ext = _agent(model, root)
    await agent.run("rename the variable x to count in main.py")
    system = _system(model.requests[0])
    assert "## Skills" in system and "- weather: Current weather and short forecasts" in system
    assert "## Skills in use" not in system


async def test_slash_invocation_loads_the_body(root: Path, project_skills: Path) -> None:
    model = ScriptedModel([{"text": "done"}])
    agent, _ext = _agent(model, root)
    await agent.run("/changelog 1.4.0")
    assert "Add entries under `## [Unreleased]`" in _system(model.requests[0])


async def test_without_skills_the_prompt_and_tools_are_unchanged(root: Path) -> None:
    model = ScriptedModel([{"text": "done"}])
    agent, ext = _agent(model, root)
    await agent.run("anything")
    assert _system(model.requests[0]) == SYSTEM_PROMPT
    assert "skills.load" not in ext.registry.names()


async def test_a_skill_removed_mid_session_is_reported_not_fatal(
    root: Path, project_skills: Path
) -> None:
    model = ScriptedModel(
        [
            {"tool_calls": [{"id": "l", "name": "skills.load", "arguments": {"name": "pdf"}}]},
            {"expect": {"last_contains": ["SKILL_UNREADABLE"]}, "text": "told the user"},
        ]
    )
    agent, _ext = _agent(model, root)
    (project_skills / "changelog" / "SKILL.md").unlink()
    (project_skills / "pdf" / "SKILL.md").unlink()
    result = await agent.run("/changelog for 1.4.0")
    model.assert_complete()
    assert result.ok
    assert "### Skill: changelog\n(unavailable: cannot read" in _system(model.requests[0])

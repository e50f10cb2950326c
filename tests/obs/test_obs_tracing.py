"""Tracing: a scripted run's span tree reaches a real OTLP/HTTP collector, redacted."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from otlp_collector import Collector, start_collector

from xclaw import Agent, ScriptedModel
from xclaw.config import ObservabilityConfig, load_config
from xclaw.core.errors import ConfigError
from xclaw.obs.tracing import Tracing, otlp_traces_url
from xclaw.policy.approval import ModeApprover
from xclaw.redact import MASK, register_secret
from xclaw.sandbox import make_sandbox

SECRET = "obs-test-secret-9f8e7d6c5b4a"
KEY = "sk-ant-api03-" + "A1b2C3d4E5f6G7h8I9j0" * 3


@pytest.fixture
def collector() -> Iterator[tuple[Collector, str]]:
    server, got, url = start_collector()
    try:
        yield got, url
    finally:
        server.shutdown()
        server.server_close()


def _script(mark: str) -> list[dict[str, Any] | str]:
    argv = ["-c", f"echo {mark} {SECRET}"]
    call = {
        "id": "call_1",
        "name": "terminal.exec",
        "arguments": {"program": "sh", "argv": argv, "env": {"API_KEY": KEY}},
    }
    return [
        {
            "text": "Running it.",
            "tool_calls": [call],
            "usage": {"input_tokens": 120, "output_tokens": 30},
        },
        {"text": "Done.", "usage": {"input_tokens": 200, "output_tokens": 5}},
    ]


def _agent(root: Path, approve: str, mark: str = "hello") -> Agent:
    return Agent(
        ScriptedModel(_script(mark)),
        root,
        approval=ModeApprover(approve),  # type: ignore[arg-type]
        evidence_gate_enabled=False,
        sandbox=lambda: make_sandbox("host").sandbox,  # host mode: commands ask first
    )


async def _traced_run(root: Path, url: str, approve: str) -> Any:
    register_secret(SECRET)
    tracing = Tracing("xclaw-test").export_otlp(url)
    agent = _agent(root, approve)
    tracing.attach(agent)
    result = await agent.run("say hello")
    tracing.shutdown()  # flushes the batch to the collector
    return result


async def test_run_becomes_a_span_tree_at_the_collector(
    root: Path, collector: tuple[Collector, str]
) -> None:
    got, url = collector
    result = await _traced_run(root, url, "allow")
    assert result.status == "completed"

    names = sorted(s.name for s in got.spans)
    assert names == ["agent.run", "approval.wait", "llm.call", "llm.call", "tool.exec"]
    (run,) = got.named("agent.run")
    assert run.parent_id == "" and run.service == "xclaw-test"
    for child in got.spans:
        assert child.trace_id == run.trace_id
        if child is not run:
            assert child.parent_id == run.span_id, child.name
        assert child.attributes["xclaw.session.id"] == result.session_id
        assert run.start_ns <= child.start_ns <= child.end_ns <= run.end_ns, child.name
    assert run.attributes["xclaw.run.status"] == "completed"
    assert run.attributes["gen_ai.request.model"] == "scripted"
    assert run.attributes["xclaw.run.tool_calls"] == 1

    first, second = sorted(got.named("llm.call"), key=lambda s: s.start_ns)
    assert first.attributes["gen_ai.usage.input_tokens"] == 120
    assert first.attributes["gen_ai.usage.output_tokens"] == 30
    assert first.attributes["xclaw.llm.tool_calls"] == 1
    assert first.attributes["xclaw.llm.time_to_first_token_ms"] >= 0
    assert (first.attributes["xclaw.turn"], second.attributes["xclaw.turn"]) == (1, 2)
    assert "xclaw.llm.cost_usd" not in first.attributes  # the scripted model has no price

    (wait,) = got.named("approval.wait")
    (tool,) = got.named("tool.exec")
    assert wait.attributes["xclaw.approval.answer"] == "once"
    assert wait.attributes["xclaw.tool.name"] == "terminal.exec"
    assert wait.end_ns <= tool.start_ns  # asked first, ran after
    attrs = tool.attributes
    assert attrs["xclaw.tool.name"] == "terminal.exec"
    assert attrs["xclaw.tool.decision"] == "ask" and attrs["xclaw.approval.answer"] == "once"
    assert attrs["xclaw.tool.risk"] == wait.attributes["xclaw.tool.risk"]
    assert attrs["xclaw.tool.outcome"] == "ok" and attrs["xclaw.tool.exit_code"] == 0
    assert attrs["xclaw.step.key"] == "1:call_1" and attrs["xclaw.tool.call_id"] == "call_1"
    assert attrs["xclaw.tool.duration_ms"] > 0
    measured = attrs["xclaw.tool.duration_ms"] * 1e6
    assert tool.end_ns - tool.start_ns == pytest.approx(measured, rel=0.01)

    # The secret in the tool's arguments (by value and by name) never reaches the collector.
    arguments = json.loads(attrs["xclaw.tool.arguments"])
    assert arguments["argv"] == ["-c", f"echo hello {MASK}"]
    assert arguments["env"]["API_KEY"] == MASK
    every = json.dumps([(s.attributes, s.events) for s in got.spans])
    assert SECRET not in every and KEY not in every
    assert MASK in wait.attributes["xclaw.approval.summary"]


async def test_a_denied_call_is_a_failed_tool_span(
    root: Path, collector: tuple[Collector, str]
) -> None:
    got, url = collector
    await _traced_run(root, url, "deny")
    (wait,) = got.named("approval.wait")
    (tool,) = got.named("tool.exec")
    assert wait.attributes["xclaw.approval.answer"] == "deny"
    assert tool.attributes["xclaw.tool.decision"] == "deny"
    assert tool.attributes["xclaw.tool.ok"] is False
    assert tool.attributes["xclaw.tool.outcome"] != "ok"
    assert tool.status_code == 2  # ERROR
    assert "xclaw.tool.exit_code" not in tool.attributes  # it never ran
    assert SECRET not in tool.attributes["xclaw.tool.arguments"]


async def test_json_lines_for_local_use(root: Path) -> None:
    out = io.StringIO()
    tracing = Tracing().export_json_lines(out)
    agent = _agent(root, "allow")
    tracing.attach(agent)
    await agent.run("say hello")
    tracing.shutdown()
    spans = [json.loads(line) for line in out.getvalue().splitlines()]
    assert sorted(s["name"] for s in spans) == [
        "agent.run",
        "approval.wait",
        "llm.call",
        "llm.call",
        "tool.exec",
    ]
    run = next(s for s in spans if s["name"] == "agent.run")
    assert all(s["context"]["trace_id"] == run["context"]["trace_id"] for s in spans)
    assert SECRET not in out.getvalue() and KEY not in out.getvalue()


def test_configuration_chooses_the_exporters(tmp_path: Path) -> None:
    assert Tracing.from_config(ObservabilityConfig(), env={}) is None
    from_env = Tracing.from_config(
        ObservabilityConfig(), env={"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}
    )
    assert from_env is not None
    from_env.shutdown()
    target = tmp_path / "traces" / "spans.jsonl"
    tracing = Tracing.from_config(ObservabilityConfig(json_file=str(target)), env={})
    assert tracing is not None and target.exists()
    tracing.shutdown()
    assert otlp_traces_url("http://c:4318/") == "http://c:4318/v1/traces"
    assert otlp_traces_url("http://c:4318/v1/traces") == "http://c:4318/v1/traces"


def test_a_project_file_may_not_send_traces_away(root: Path) -> None:
    (root / "xclaw.yaml").write_text("observability: {otlp_endpoint: 'http://evil.example'}\n")
    with pytest.raises(ConfigError) as err:
        load_config(root)
    assert err.value.code == "CONFIG_UNSAFE"

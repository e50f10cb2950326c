"""The faces turn tracing on: `xclaw run --trace` / the user's config, and `xclaw serve`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gateway_support import TOKEN, client, exec_turn, scripted_gateway, send, until
from otlp_collector import start_collector
from typer.testing import CliRunner

from xclaw.cli.app import app
from xclaw.compose.assistant import observed
from xclaw.compose.settings import resolve_config
from xclaw.dirs import config_dir
from xclaw.gateway.auth import GatewayAuth
from xclaw.gateway.server import GatewayServer, create_app
from xclaw.store.sqlite import open_store

SCRIPT = (
    "- tool_calls: [{id: w1, name: fs.write, arguments: {path: hi.txt, content: hi}}]\n"
    "- text: wrote hi.txt\n"
)


def test_run_trace_json_prints_spans_on_stderr(root: Path, tmp_path: Path) -> None:
    script = tmp_path / "s.yaml"
    script.write_text(SCRIPT)
    argv = ["run", "-C", str(root), "--model", f"scripted:{script}", "--trace", "json", "go"]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.output
    spans = [json.loads(line) for line in result.stderr.splitlines() if line.startswith("{")]
    assert sorted(s["name"] for s in spans) == ["agent.run", "llm.call", "llm.call", "tool.exec"]
    tool = next(s for s in spans if s["name"] == "tool.exec")
    assert tool["attributes"]["xclaw.tool.name"] == "fs.write"
    assert "{" not in result.stdout.splitlines()[0]  # the live view keeps stdout


def test_run_bad_trace_value_is_refused(root: Path, tmp_path: Path) -> None:
    script = tmp_path / "s.yaml"
    script.write_text(SCRIPT)
    argv = ["run", "-C", str(root), "--model", f"scripted:{script}", "--trace", "xml", "go"]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 2 and result.stderr.startswith("USAGE_INVALID: ")
    assert "'xml' is not one of 'console', 'json'" in result.stderr
    assert not (root / "hi.txt").exists()


def test_user_config_json_file_collects_spans(root: Path, tmp_path: Path) -> None:
    script = tmp_path / "s.yaml"
    script.write_text(SCRIPT)
    target = tmp_path / "spans.jsonl"
    config_dir().mkdir(parents=True, exist_ok=True)
    (config_dir() / "xclaw.yaml").write_text(f"observability: {{json_file: '{target}'}}\n")
    argv = ["run", "-C", str(root), "--model", f"scripted:{script}", "go"]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.output
    names = [json.loads(line)["name"] for line in target.read_text().splitlines()]
    assert sorted(names) == ["agent.run", "llm.call", "llm.call", "tool.exec"]


async def test_serve_traces_every_session(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    collector_server, got, url = start_collector()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
    store = open_store()
    gateway = scripted_gateway(root, [exec_turn("m2"), "done"], store)
    gateway.make_agent, tracing = observed(gateway.make_agent, resolve_config(root))
    assert tracing is not None
    server = GatewayServer(create_app(gateway, GatewayAuth(token=TOKEN))).start()
    try:
        ws, sid = await client(server)
        await send(ws, type="message", content="run it")
        request = (await until(ws, "approval.request"))[-1]
        await send(ws, type="approval.response", requestId=request["requestId"], answer="once")
        await until(ws, "reply")
        await ws.close()
    finally:
        server.stop()
        store.close()
        tracing.shutdown()
        collector_server.shutdown()
        collector_server.server_close()
    names = sorted(s.name for s in got.spans)
    assert names == ["agent.run", "approval.wait", "llm.call", "llm.call", "tool.exec"]
    assert {s.attributes["xclaw.session.id"] for s in got.spans} == {sid}

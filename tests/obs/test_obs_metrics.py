"""GET /metrics on a real gateway: token-protected, and the counters move with a turn."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from gateway_support import AUTH, TOKEN, client, exec_turn, scripted_gateway, send, until
from prometheus_client.parser import text_string_to_metric_families

from xclaw.core.events import Event
from xclaw.gateway.auth import GatewayAuth
from xclaw.gateway.server import GatewayServer, create_app
from xclaw.obs.metrics import MAX_LABEL_VALUES, RunMetrics
from xclaw.store.sqlite import open_store

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


@contextmanager
def metered(root: Path, script: list[dict[str, object] | str]) -> Iterator[GatewayServer]:
    store = open_store()
    gateway = scripted_gateway(root, script, store)
    app = create_app(gateway, GatewayAuth(token=TOKEN), metrics=RunMetrics())
    server = GatewayServer(app).start()
    try:
        yield server
    finally:
        server.stop()
        store.close()


async def scrape(server: GatewayServer) -> Samples:
    async with httpx.AsyncClient() as http:
        response = await http.get(server.url + "/metrics", headers=AUTH)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


async def test_metrics_need_the_token(root: Path) -> None:
    with metered(root, ["hi"]) as server:
        async with httpx.AsyncClient() as http:
            bare = await http.get(server.url + "/metrics")
            wrong = await http.get(
                server.url + "/metrics", headers={"Authorization": "Bearer not-the-token"}
            )
            foreign = await http.get(
                server.url + "/metrics", headers={**AUTH, "Origin": "http://evil.example"}
            )
    assert (bare.status_code, wrong.status_code, foreign.status_code) == (401, 401, 403)
    assert "xclaw_runs" not in bare.text


async def test_a_turn_moves_the_counters(root: Path) -> None:
    script = [
        {**exec_turn("m1"), "usage": {"input_tokens": 100, "output_tokens": 20}},
        {"text": "done", "usage": {"input_tokens": 150, "output_tokens": 3}},
    ]
    with metered(root, script) as server:
        before = await scrape(server)
        ws, _ = await client(server)
        await send(ws, type="message", content="run it")
        request = (await until(ws, "approval.request"))[-1]
        during = await scrape(server)
        await send(ws, type="approval.response", requestId=request["requestId"], answer="once")
        reply = (await until(ws, "reply"))[-1]
        after = await scrape(server)
        await ws.close()
    assert reply["status"] == "completed"
    assert value(before, "xclaw_runs_total", status="completed") == 0
    assert value(before, "xclaw_gateway_connections") == 0
    assert value(during, "xclaw_gateway_connections") == 1
    assert value(during, "xclaw_gateway_sessions") == 1
    assert value(during, "xclaw_runs_active") == 1

    assert value(after, "xclaw_runs_total", status="completed") == 1
    assert value(after, "xclaw_runs_active") == 0
    assert value(after, "xclaw_tool_calls_total", tool="terminal.exec", outcome="ok") == 1
    assert value(after, "xclaw_approvals_total", decision="once") == 1
    assert value(after, "xclaw_llm_tokens_total", model="scripted", direction="input") == 250
    assert value(after, "xclaw_llm_tokens_total", model="scripted", direction="output") == 23
    assert value(after, "xclaw_llm_call_duration_seconds_count", model="scripted") == 2
    assert value(after, "xclaw_tool_duration_seconds_count", tool="terminal.exec") == 1
    assert value(after, "xclaw_tool_duration_seconds_sum", tool="terminal.exec") > 0
    assert value(after, "xclaw_run_duration_seconds_count", status="completed") == 1


def test_labels_chosen_by_the_model_are_bounded() -> None:
    metrics = RunMetrics()
    for i in range(MAX_LABEL_VALUES + 50):
        payload = {"name": f"made.up{i}", "ok": False, "error_code": "TOOL_NOT_FOUND"}
        metrics(Event("tool.completed", "s1", 1, payload, f"c{i}"))
    text = metrics.exposition().decode()
    series = [line for line in text.splitlines() if line.startswith("xclaw_tool_calls_total{")]
    assert len(series) == MAX_LABEL_VALUES + 1  # the first 200 names, then "other"
    assert 'tool="other"' in text

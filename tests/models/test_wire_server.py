"""The shared wire server itself: it records, streams, cuts, hangs and refuses as promised."""

from __future__ import annotations

import time

import httpx
import pytest
from wire_server import WireServer, unused_url


def test_json_answer_and_recorded_request(wire: WireServer) -> None:
    wire.add_json(200, {"a": 1}, headers={"x-y": "z"})
    r = httpx.post(
        wire.url + "/chat/completions", json={"q": 1}, headers={"Authorization": "Bearer k"}
    )
    assert r.json() == {"a": 1}
    assert r.headers["x-y"] == "z"
    seen = wire.requests[0]
    assert (seen.method, seen.path, seen.body) == ("POST", "/chat/completions", {"q": 1})
    assert seen.headers["authorization"] == "Bearer k"


def test_empty_queue_answers_418(wire: WireServer) -> None:
    assert httpx.get(wire.url + "/x").status_code == 418


def test_sse_streams_before_the_end(wire: WireServer) -> None:
    wire.add_sse([{"n": 1}, "event: foo\ndata: {}", "data: [DONE]"], gate_after=1)
    with httpx.stream("POST", wire.url + "/s", json={}) as r:
        lines = r.iter_lines()
        # the first event arrives while the server still holds the rest back
        assert next(lines) == 'data: {"n": 1}'
        wire.release()
        rest = list(lines)
    assert rest == ["", "event: foo", "data: {}", "", "data: [DONE]", ""]


def test_cut_after_drops_the_connection_mid_body(wire: WireServer) -> None:
    wire.add_sse([{"n": 1}, {"n": 2}, {"n": 3}], cut_after=2)
    seen: list[str] = []
    with pytest.raises(httpx.RemoteProtocolError):
        with httpx.stream("POST", wire.url + "/s", json={}) as r:
            seen.extend(line for line in r.iter_lines() if line)
    assert seen == ['data: {"n": 1}', 'data: {"n": 2}']


def test_hang_times_the_client_out(wire: WireServer) -> None:
    wire.add_hang(5)
    started = time.monotonic()
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(wire.url, timeout=0.3)
    assert time.monotonic() - started < 2


def test_unused_url_refuses() -> None:
    with pytest.raises(httpx.ConnectError):
        httpx.get(unused_url())


def test_raw_body_and_keep_alive(wire: WireServer) -> None:
    wire.add_raw(400, b'{"error":"x"}', "application/octet-stream")
    wire.add_json(200, {})
    with httpx.Client() as client:
        first = client.post(wire.url)
        assert (first.status_code, first.content) == (400, b'{"error":"x"}')
        assert client.post(wire.url).status_code == 200
    wire.assert_all_used()

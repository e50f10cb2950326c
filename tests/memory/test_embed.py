"""Embedders: the local multilingual model, the SQLite cache, and the OpenAI wire format
against a real HTTP server on loopback."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.memory.conftest import CountingEmbedder

from xclaw.memory.embed import CachedEmbedder, EmbeddingError, OpenAIEmbedder
from xclaw.memory.embed import UseMultilingualEmbedder as Local


def test_local_model_is_multilingual(local_embedder: Local) -> None:
    v = local_embedder.embed(
        ["苹果手机", "iPhone", "the database backup runs nightly", "用户喜欢两个空格缩进"]
    )
    assert v.shape == (4, 512) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert v[0] @ v[1] > v[0] @ v[2] + 0.3  # a translation is nearer than an unrelated text
    assert local_embedder.embed([]).shape == (0, 512)


def test_cache_embeds_each_text_once_per_model(local_embedder: Local, tmp_path: Path) -> None:
    inner = CountingEmbedder(local_embedder)
    cache = CachedEmbedder(inner, tmp_path / "cache.db")
    first = cache.embed(["alpha", "beta", "alpha"])
    assert inner.texts == ["alpha", "beta"]
    again = CachedEmbedder(inner, tmp_path / "cache.db").embed(["beta", "gamma", "alpha"])
    assert inner.texts == ["alpha", "beta", "gamma"]
    assert np.array_equal(again[0], first[1]) and np.array_equal(again[2], first[0])
    renamed = CountingEmbedder(local_embedder, name="other-model")
    CachedEmbedder(renamed, tmp_path / "cache.db").embed(["alpha"])
    assert renamed.texts == ["alpha"]  # the key includes the model


class _Server:
    """An OpenAI-compatible /v1/embeddings endpoint: deterministic vectors, answers shuffled."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.status = 200
        self.dim = 8
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(
                    {"path": self.path, "auth": self.headers.get("Authorization"), **body}
                )
                if outer.status != 200:
                    payload: dict[str, Any] = {
                        "error": {"message": "invalid api key sk-abcdef1234567890abcdef"}
                    }
                else:
                    data = [
                        {
                            "object": "embedding",
                            "index": i,
                            "embedding": [float(len(t)), 1.0] + [0.0] * (outer.dim - 2),
                        }
                        for i, t in enumerate(body["input"])
                    ]
                    payload = {"object": "list", "data": data[::-1], "model": body["model"]}
                raw = json.dumps(payload).encode()
                self.send_response(outer.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"


@pytest.fixture
def server() -> Iterator[_Server]:
    s = _Server()
    thread = threading.Thread(target=s.httpd.serve_forever, daemon=True)
    thread.start()
    yield s
    s.httpd.shutdown()
    s.httpd.server_close()


def test_openai_embedder_batches_and_orders(
    server: _Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEST_EMBED_KEY", "sk-test-123")
    emb = OpenAIEmbedder(server.url, "bge-m3", "TEST_EMBED_KEY", dim=8, batch_size=2)
    texts = ["a", "bb", "ccc", "dddd", "eeeee"]
    v = emb.embed(texts)
    assert [len(r["input"]) for r in server.requests] == [2, 2, 1]
    assert server.requests[0]["path"] == "/v1/embeddings"
    assert (
        server.requests[0]["model"] == "bge-m3"
        and server.requests[0]["auth"] == "Bearer sk-test-123"
    )
    expected = np.array([[len(t), 1.0] for t in texts]) / np.linalg.norm(
        [[len(t), 1.0] for t in texts], axis=1, keepdims=True
    )
    assert np.allclose(
        v[:, :2], expected, atol=1e-6
    )  # rows in input order despite shuffled answers
    emb.close()


def test_openai_embedder_errors_are_plain_and_redacted(server: _Server) -> None:
    emb = OpenAIEmbedder(server.url, "m", None, dim=8)
    server.status = 401
    with pytest.raises(EmbeddingError) as err:
        emb.embed(["x"])
    assert "401" in err.value.message and "abcdef1234567890abcdef" not in str(err.value)
    assert server.requests[0]["auth"] is None  # no key variable: no header
    server.status = 200
    with pytest.raises(EmbeddingError, match="dimensions"):
        OpenAIEmbedder(server.url, "m", None, dim=16).embed(["x"])
    server.httpd.shutdown()
    server.httpd.server_close()
    with pytest.raises(EmbeddingError, match="could not be reached"):
        emb.embed(["x"])

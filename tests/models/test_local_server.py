"""The llama.cpp server lifecycle with the real 0.5B model (``make deps`` pulls it).

Start, ready, one short completion, stop, and no process left: also when several models share
the server, when the start fails, and when the xclaw process is interrupted or killed.
"""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import httpx
import pytest
from local_support import MODEL, alive, real_model, server_processes

from xclaw.core.errors import ConfigError
from xclaw.core.messages import Message
from xclaw.core.model import Finish, ModelRequest, TextDelta, Usage
from xclaw.models.local import server as server_module
from xclaw.models.local.catalog import LocalTarget
from xclaw.models.local.model import LocalModel
from xclaw.models.local.server import LlamaServer, LocalServerError, ServerPool, ServerSettings
from xclaw.models.resolve import resolve_model

pytestmark = pytest.mark.timeout(300)


class Reporter:
    def __init__(self) -> None:
        self.stages: list[str] = []
        self.ready_at: str | None = None
        self.failures = 0

    def update(self, stage: str, elapsed_s: float) -> None:
        if not self.stages or self.stages[-1] != stage:
            self.stages.append(stage)

    def ready(self, url: str, elapsed_s: float) -> None:
        self.ready_at = url

    def failed(self) -> None:
        self.failures += 1


def settings() -> ServerSettings:
    return ServerSettings(real_model(), n_ctx=2048)


def port_open(url: str) -> bool:
    host, port = url.removeprefix("http://").split(":")
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex((host, int(port))) == 0


async def test_start_ready_complete_stop() -> None:
    reporter = Reporter()
    server = LlamaServer(settings(), reporter=reporter)
    try:
        url = await server.start()
        assert url.startswith("http://127.0.0.1:") and not url.endswith(":0")
        assert reporter.ready_at == url and "loading the model file" in reporter.stages
        pid = server.pid
        assert pid is not None and alive(pid)
        async with httpx.AsyncClient(timeout=120) as client:
            health = await client.get(f"{url}/health")
            reply = await client.post(
                f"{url}/v1/chat/completions",
                json={"messages": [{"role": "user", "content": "Say OK."}], "max_tokens": 4},
            )
        assert health.status_code == 200
        body = reply.json()
        assert body["choices"][0]["message"]["role"] == "assistant"
        assert 0 < body["usage"]["completion_tokens"] <= 4
    finally:
        server.stop()
    assert not alive(pid) and not port_open(url)
    assert server.base_url is None and not server.running


async def test_local_model_through_resolve_and_the_chat_adapter(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real_model()
    monkeypatch.setattr(server_module, "_DEFAULT", ServerPool(linger_s=0))
    model = resolve_model(f"local:{MODEL}")
    before = server_processes()
    events = []
    try:
        request = ModelRequest([Message.user("Say OK.")], [], {"max_tokens": 4})
        async for event in model.respond(request):
            events.append(event)
        assert len(server_processes() - before) == 1
    finally:
        await model.aclose()
    assert "".join(e.text for e in events if isinstance(e, TextDelta))
    assert any(isinstance(e, Usage) and e.output_tokens for e in events)
    assert isinstance(events[-1], Finish)
    assert server_processes() - before == set()


async def test_models_of_one_file_share_one_server() -> None:
    path = real_model()
    pool = ServerPool(linger_s=0)
    target = LocalTarget(name=MODEL, path=path, context_window=2048)
    first, second = LocalModel(target, pool=pool), LocalModel(target, pool=pool)
    request = ModelRequest([Message.user("Say OK.")], [], {"max_tokens": 2})

    async def answer(model: LocalModel) -> None:
        async for _ in model.respond(request):
            pass

    try:
        await asyncio.gather(answer(first), answer(second))
        assert first.server is second.server is not None
        pid = first.server.pid
        assert pid is not None
        await first.aclose()
        assert alive(pid)  # the second still holds it
    finally:
        await first.aclose()
        await second.aclose()
    assert not alive(pid) and pool.running() == []


def test_bad_specs_are_coded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text_file = tmp_path / "notes.gguf"
    text_file.write_text("not a model")
    cases = {
        f"local:{tmp_path / 'missing.gguf'}": "LOCAL_MODEL_NOT_FOUND",
        f"local:{text_file}": "LOCAL_MODEL_INVALID",
        f"local:{tmp_path}": "LOCAL_MODEL_NOT_FOUND",  # a folder
        "local:no-such-model": "LOCAL_MODEL_UNKNOWN",
    }
    for spec, code in cases.items():
        with pytest.raises(ConfigError) as caught:
            resolve_model(spec)
        assert caught.value.code == code, spec
    monkeypatch.setenv("XCLAW_MODELS_DIR", str(tmp_path / "empty"))
    with pytest.raises(ConfigError) as caught:
        resolve_model(f"local:{MODEL}")
    assert caught.value.code == "LOCAL_MODEL_NOT_PULLED"
    assert f"xclaw models pull {MODEL}" in caught.value.hint


async def test_a_broken_model_file_fails_coded_and_leaves_no_process(tmp_path: Path) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\x03\x00\x00\x00" + b"\xff" * 4096)
    before = server_processes()
    reporter = Reporter()
    server = LlamaServer(ServerSettings(broken, n_ctx=512), reporter=reporter)
    with pytest.raises(LocalServerError) as caught:
        await server.start(timeout_s=120)
    assert caught.value.code == "LOCAL_SERVER_FAILED"
    assert str(broken) in caught.value.message
    assert reporter.failures == 1 and reporter.ready_at is None
    assert server_processes() - before == set()


_HOLDER = """
import asyncio, sys
from pathlib import Path
from xclaw.models.local.server import default_pool, ServerSettings

async def main():
    server = await default_pool().acquire(ServerSettings(Path(sys.argv[1]), n_ctx=1024))
    print(server.pid, flush=True)
    await asyncio.sleep(120)

asyncio.run(main())
"""


def _start_holder(tmp_path: Path) -> tuple[subprocess.Popen[str], int]:
    script = tmp_path / "holder.py"
    script.write_text(textwrap.dedent(_HOLDER))
    holder = subprocess.Popen(
        [sys.executable, str(script), str(real_model())],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert holder.stdout is not None
    line = holder.stdout.readline()
    assert line.strip().isdigit(), f"holder printed {line!r}"
    return holder, int(line)


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.2)
    return False


@pytest.mark.parametrize("how", ["ctrl-c", "killed"])
def test_no_server_outlives_xclaw(tmp_path: Path, how: str) -> None:
    holder, pid = _start_holder(tmp_path)
    try:
        assert alive(pid)
        holder.send_signal(signal.SIGINT if how == "ctrl-c" else signal.SIGKILL)
        holder.wait(timeout=30)
        assert _gone_within(pid, 15), f"server {pid} still running after xclaw was {how}"
    finally:
        holder.kill()
        holder.wait()
        assert holder.stdout is not None
        holder.stdout.close()


def test_settings_reach_the_child_as_json() -> None:
    settings = ServerSettings(Path("/m.gguf"), n_ctx=4096, max_tokens=256, threads=2)
    payload = json.loads(settings.as_json())
    assert payload == {
        "model": "/m.gguf",
        "n_ctx": 4096,
        "max_tokens": 256,
        "threads": 2,
        "temperature": 0.0,
        "seed": 42,
    }

"""The environments ``<!-- run with: NAME -->`` names (those without a browser; the page ones
live in tests/page/test_docs_examples.py).

Each is a context manager on the ``Reader``: it sets up what the block's reader would have
(a provider answering, a running bridge, a recorded session), may give placeholder words
their values (``reader.words``), and checks afterwards that the block really used it.
"""

from __future__ import annotations

import contextlib
import json
import shlex
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import yaml
from tests.bridge.bridge_support import free_port
from tests.docs_support.blocks import ROOT, blocks
from tests.docs_support.fakes import (
    AnsweringServer,
    Events,
    RecordedRequest,
    WireServer,
    call_stream,
    chat_reply,
    point_presets,
    text_stream,
    usage,
)
from tests.docs_support.reader import Reader

Environment = Callable[[Reader], AbstractContextManager[None]]


@contextlib.contextmanager
def fake_openai(reader: Reader) -> Iterator[None]:
    """``openai:gpt-4.1-mini`` answered by a local Responses API fake, with a key; ./proj has a
    failing test, and the fake fixes it as a model would: write greet.py, run the test, say so.
    """
    proj = reader.folder / "proj"
    (proj / "greet.py").write_text('def greet():\n    return "hello"\n')
    test = 'from greet import greet\n\nassert greet() == "hi", greet()\nprint("test_greet: ok")\n'
    (proj / "test_greet.py").write_text(test)
    fixed = {"path": "greet.py", "content": 'def greet():\n    return "hi"\n'}
    run_test = {"program": "python3", "argv": ["test_greet.py"]}
    with WireServer() as server:
        server.add_sse(call_stream([("fc_1", "call_1", "fs_write", [json.dumps(fixed)])]))
        server.add_sse(call_stream([("fc_2", "call_2", "terminal_exec", [json.dumps(run_test)])]))
        server.add_sse(text_stream("greet() returns hi: test_greet.py passes.", use=usage(90, 9)))
        point_presets(server.url + "/v1", "openai")
        reader.setenv("OPENAI_API_KEY", "sk-docs-fake-key-0123456789")
        yield
        asked = server.requests
    assert [(r.path, r.body["model"]) for r in asked] == [("/v1/responses", "gpt-4.1-mini")] * 3
    assert "test_greet: ok" in json.dumps(asked[-1].body)  # the test's output reached the model
    assert (proj / "greet.py").read_text() == fixed["content"]


def _bridge_command() -> list[str]:
    """The ``xclaw bridge`` line of docs/bridge.md's console block, as the reader types it."""
    for block in blocks(ROOT / "docs" / "bridge.md"):
        for line in block.code.splitlines():
            if block.lang == "console" and line.startswith("$ xclaw bridge "):
                return shlex.split(line[2:])
    raise AssertionError("docs/bridge.md shows no `xclaw bridge` command")


@contextlib.contextmanager
def bridge(reader: Reader) -> Iterator[None]:
    """``xclaw bridge`` started as docs/bridge.md starts it (its own token in the default place,
    ``~/.local/share/xclaw/bridge/token``), on a free port instead of 8765, in front of a local
    fake that plays deepseek and ollama."""
    answered: list[str] = []

    def answer(request: RecordedRequest) -> Events:
        answered.append(str((request.body or {}).get("model")))
        return chat_reply("Hello from the local model.")

    port = free_port()
    with AnsweringServer(answer) as server:
        point_presets(server.url + "/v1", "deepseek", "ollama")
        reader.setenv("DEEPSEEK_API_KEY", "sk-docs-fake-deepseek-0123456789")
        proc = subprocess.Popen(
            [*_bridge_command(), "--port", str(port)],
            cwd=reader.folder,
            env=reader.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        token = reader.home / ".local/share/xclaw/bridge/token"
        try:
            _wait_listening(proc, port, token)
            reader.words["127.0.0.1:8765"] = f"127.0.0.1:{port}"
            yield
        finally:
            proc.terminate()
            output = proc.communicate(timeout=30)[0]
    assert f"Bridge token (shown this once; saved in {token}):" in output, output
    assert f"xclaw bridge on http://127.0.0.1:{port}/v1 serving: deepseek" in output, output
    assert answered and set(answered) == {"qwen2.5-coder"}, answered  # `local` is ollama's


def _wait_listening(proc: subprocess.Popen[str], port: int, token: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the bridge exited: {proc.communicate()[0]}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            if token.exists():
                return
        time.sleep(0.05)
    raise AssertionError("the bridge did not start listening")


@contextlib.contextmanager
def scripted_session(reader: Reader) -> Iterator[None]:
    """A recorded session of ./proj (the README's scripted run); ``ID`` is its id."""
    from xclaw import ScriptedModel, build_agent

    write = {"path": "hello.py", "content": "print('hello')\n"}
    run = {"program": "python3", "argv": ["hello.py"]}
    model = ScriptedModel(
        [
            {"tool_calls": [{"id": "c1", "name": "fs.write", "arguments": write}]},
            {"tool_calls": [{"id": "c2", "name": "terminal.exec", "arguments": run}]},
            "hello.py prints hello.",
        ]
    )
    result = build_agent("proj", model=model).run_sync("create hello.py and run it")
    assert result.status == "completed", result
    reader.words["ID"] = result.session_id
    yield
    assert (reader.folder / "rollout.jsonl").stat().st_size > 0  # the export of that session


@contextlib.contextmanager
def scripted_model(reader: Reader) -> Iterator[None]:
    """A configured model (``XCLAW_MODEL``): a script that answers every run in one turn."""
    script = reader.home / "quiet.yaml"
    script.write_text(yaml.safe_dump([{"text": "Looked around; nothing to change."}]))
    reader.setenv("XCLAW_MODEL", f"scripted:{script}")
    yield


@contextlib.contextmanager
def chronos_job(reader: Reader) -> Iterator[None]:
    """docs/chronos.md's configuration in the user's xclaw.yaml, with a scripted model (all
    is well) and the ``ops`` target on stdout instead of Feishu; its secrets in the
    environment, as the page says."""
    [yaml_block] = [b for b in blocks(ROOT / "docs" / "chronos.md") if b.lang == "yaml"]
    config = yaml.safe_load(yaml_block.code)
    script = reader.home / "disk-ok.yaml"
    script.write_text(yaml.safe_dump([{"text": "All filesystems are below 90%."}]))
    config["model"] = f"scripted:{script}"
    config["chronos"]["targets"]["ops"] = {"type": "stdout"}
    folder = reader.home / ".config" / "xclaw"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "xclaw.yaml").write_text(yaml.safe_dump(config))
    reader.setenv("GITHUB_WEBHOOK_SECRET", "docs-webhook-secret")
    yield


ENVIRONMENTS: dict[str, Environment] = {
    "fake-openai": fake_openai,
    "bridge": bridge,
    "scripted-session": scripted_session,
    "scripted-model": scripted_model,
    "chronos-job": chronos_job,
}

"""The environments ``<!-- run with: NAME -->`` names (those without a browser; the page ones
live in tests/page/test_docs_examples.py).

Each is a context manager on the ``Reader``: it sets up what the block's reader would have
(a provider answering, a running bridge, a recorded session, a session a crash left
unfinished, a server in the foreground of another terminal), may give placeholder words their
values (``reader.words``), says which lines the reader runs in another terminal
(``reader.elsewhere``) and what they type (``reader.stdin``), and checks afterwards that the
block really used it.
"""

from __future__ import annotations

import contextlib
import json
import shlex
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import yaml
from tests.bridge.bridge_support import free_port
from tests.docs_support.blocks import ROOT, blocks, marked
from tests.docs_support.fakes import (
    Answer,
    AnsweringServer,
    Events,
    RecordedRequest,
    WireServer,
    call_stream,
    chat_reply,
    held,
    point_presets,
    refused,
    responses_reply,
    results_in,
    text_stream,
    usage,
)
from tests.docs_support.processes import Background, crash
from tests.docs_support.reader import Reader

from xclaw.store.base import SessionRecord

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


EXTRACTING = "You keep an assistant's long-term memory"  # memory/extract.py's instruction


def _said(request: RecordedRequest, text: str) -> bool:
    return text in json.dumps(request.body, ensure_ascii=False)


def _store_sessions() -> list[SessionRecord]:
    """Every session of the reader's store."""
    from xclaw.store.sqlite import open_store

    store = open_store()
    try:
        return store.list_sessions()
    finally:
        store.close()


KEY = "sk-docs-fake-key-0123456789"
BUILD = """from pathlib import Path

Path("dist").mkdir(exist_ok=True)
Path("dist/index.html").write_text(Path("index.html").read_text())
print("built dist/index.html")
"""


def _site(done: int) -> Events:
    """A model building ./proj's site on the Responses API, at its ``done``-th answer."""
    if done == 0:
        page = {"path": "index.html", "content": "<h1>Hello</h1>\n"}
        build = {"path": "build.py", "content": BUILD}
        return responses_reply(calls=[("fs_write", page), ("fs_write", build)])
    if done == 2:
        return responses_reply(
            calls=[("terminal_exec", {"program": "python3", "argv": ["build.py"]})]
        )
    return responses_reply("Built the site: dist/index.html.")


@contextlib.contextmanager
def fake_openai_crashed(reader: Reader) -> Iterator[None]:
    """``openai:gpt-4.1`` answered by a local Responses API fake that builds a site as a model
    would (index.html and build.py, then ``python3 build.py``); ``ID`` is a session of ./proj
    that a crash left unfinished: a real ``xclaw run`` SIGKILLed while the model was writing
    its second answer (its first call, writing README.md, done)."""
    crashing = True

    def answer(request: RecordedRequest) -> Answer:
        assert request.body["model"] == "gpt-4.1", request.body["model"]
        done = results_in(request)
        if _said(request, "write a README"):
            if done == 0:
                readme = {"path": "README.md", "content": "# proj\n\nA small site.\n"}
                return responses_reply(calls=[("fs_write", readme)])
            reply = responses_reply("README.md describes the site.")
            return held(reply) if crashing else reply
        return _site(done)

    proj = reader.folder / "proj"
    with AnsweringServer(answer) as server:
        point_presets(server.url + "/v1", "openai")
        reader.setenv("OPENAI_API_KEY", KEY)
        reader.words["OPENAI_API_KEY=..."] = f"OPENAI_API_KEY={KEY}"  # `...`: your key
        argv = ["xclaw", "run", "-C", "./proj", "--model", "openai:gpt-4.1", "write a README"]
        crash(argv, reader, lambda: len(server.requests) == 2, "crashed-run")
        crashing = False
        server.release()
        [left] = _store_sessions()
        assert left.state == "running", left  # unfinished: nothing recorded its end
        assert (proj / "README.md").exists()
        reader.words["ID"] = left.id
        yield
        asked = len(server.requests)
    assert left.id in reader.printed  # `xclaw sessions` lists it
    states = {s.id: s.state for s in _store_sessions()}
    assert states[left.id] == "success" and list(states.values()) == ["success"] * 2, states
    assert (proj / "dist" / "index.html").read_text() == "<h1>Hello</h1>\n"
    assert asked == 2 + 3 + 1, asked  # the crashed run's 2, the site's 3, the resumed 1


def _line(environment: str, start: str) -> str:
    """The line starting with ``start`` of the blocks run in ``environment``, as written (one
    line: blocks written twice must say the same)."""
    found = {
        line
        for block in marked(environment)
        for line in block.code.splitlines()
        if line.startswith(start)
    }
    assert len(found) == 1, f"the {environment} blocks have {found or 'no'} lines {start!r}..."
    return found.pop()


def _argv(reader: Reader, line: str, *extra: str) -> list[str]:
    """A line of a block as the reader types it (its words replaced, its comment dropped)."""
    return [*shlex.split(reader.code_of_line(line), comments=True), *extra]


def _ready(url: str) -> Callable[[], bool]:
    import httpx

    def ready() -> bool:
        try:
            return httpx.get(url, timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    return ready


def _browser_chat(port: int, message: str) -> str:
    """A session started in the web UI, as its page does it: the token traded for the cookie
    (``POST /auth/session``), the WebSocket opened with it from the gateway's own origin, one
    message, its reply. The session's id."""
    import httpx
    from websockets.sync.client import connect

    from xclaw.gateway.auth import gateway_token_path

    origin = f"http://127.0.0.1:{port}"
    token = gateway_token_path().read_text().strip()
    headers = {"Authorization": f"Bearer {token}", "Origin": origin}
    login = httpx.post(f"{origin}/auth/session", headers=headers)
    assert login.status_code == 204, login.text
    cookie = f"xclaw_session={login.cookies['xclaw_session']}"
    with connect(
        f"ws://127.0.0.1:{port}/ws", origin=origin, additional_headers={"Cookie": cookie}
    ) as ws:
        first = json.loads(ws.recv(timeout=15))
        assert first["type"] == "session", first
        ws.send(
            json.dumps({"type": "message", "content": message, "sessionId": first["sessionId"]})
        )
        while (frame := json.loads(ws.recv(timeout=30)))["type"] != "reply":
            assert frame["type"] != "error", frame
    assert frame.get("status") == "completed", frame
    return str(first["sessionId"])


@contextlib.contextmanager
def serve_and_chat(reader: Reader) -> Iterator[None]:
    """``xclaw serve`` in the foreground of a terminal of its own, as the block's first line
    starts it (``--model`` given: ``openai:gpt-4.1-mini``, answered by a local Responses API
    fake), on a free port instead of 8787 (``xclaw chat`` told so); ``ID`` a session started
    in the web UI; what the reader types into ``xclaw chat``: one message (then end of input,
    Ctrl+D). The gateway stops on Ctrl+C (SIGINT), cleanly."""
    said: list[str] = []

    def answer(request: RecordedRequest) -> Events:
        assert request.body["model"] == "gpt-4.1-mini", request.body["model"]
        if _said(request, EXTRACTING):
            return responses_reply("- none")  # memory extraction: nothing worth keeping
        last = [i for i in request.body["input"] if i.get("role") == "user"][-1]
        text = json.dumps(last["content"], ensure_ascii=False)
        said.append("browser" if "browser" in text else "terminal")
        return responses_reply(f"Hello, {said[-1]}.")

    (reader.folder / "path" / "to" / "project").mkdir(parents=True)
    port = free_port()
    serve = _line("serve-and-chat", "xclaw serve ")
    reader.words["[--model provider:model]"] = "--model openai:gpt-4.1-mini"  # the option, given
    reader.words["127.0.0.1:8787"] = f"127.0.0.1:{port}"
    with AnsweringServer(answer) as fake:
        point_presets(fake.url + "/v1", "openai")
        reader.setenv("OPENAI_API_KEY", KEY)
        with Background.running(
            _argv(reader, serve, "--port", str(port)), reader, "serve"
        ) as gateway:
            gateway.wait_for(_ready(f"http://127.0.0.1:{port}/readyz"), "ready")
            reader.words["ID"] = sid = _browser_chat(port, "Hi from the browser")
            reader.words["xclaw chat"] = f"xclaw chat --url ws://127.0.0.1:{port}/ws"
            reader.elsewhere.append(serve)
            reader.stdin = "Hi from the terminal\n"
            yield
            assert gateway.stop(signal.SIGINT) == 0, gateway.output()
            output = gateway.output()
    token = reader.home / ".local/share/xclaw/gateway/token"
    assert f"Gateway token (shown this once; saved in {token}):" in output, output
    assert f"xclaw gateway on http://127.0.0.1:{port}/" in output, output
    assert output.rstrip().endswith("gateway stopped"), output
    assert said == ["browser", "terminal"], said
    chats = reader.printed.split("continue with: ")
    assert "Hello, terminal." in chats[0] and "session cli-" in chats[0], reader.printed
    assert f"session {sid}" in chats[1], reader.printed


@contextlib.contextmanager
def chronos_serving(reader: Reader) -> Iterator[None]:
    """docs/chronos.md's configuration (``chronos-job``), and each of the block's two lines in
    the foreground of a terminal of its own, one after the other: started as written (the
    gateway on a free port instead of 8787), up until it says it serves, then stopped with
    SIGTERM; each must end cleanly, saying so."""
    import httpx

    serve = _line("chronos-serving", "xclaw serve ")
    scheduler = _line("chronos-serving", "xclaw chronos run ")
    reader.elsewhere += [serve, scheduler]
    with chronos_job(reader):
        port = free_port()
        with Background.running(
            _argv(reader, serve, "--port", str(port)), reader, "serve"
        ) as gateway:
            gateway.wait_for(_ready(f"http://127.0.0.1:{port}/readyz"), "ready")
            hook = httpx.post(f"http://127.0.0.1:{port}/hooks/github", content=b"{}")
            assert hook.status_code == 401, hook.text  # served here, unsigned: refused
            assert gateway.stop() == 0, gateway.output()
            served = gateway.output()
        with Background.running(_argv(reader, scheduler), reader, "chronos") as alone:
            alone.wait_for("chronos: 1 job(s) scheduled; SIGTERM or Ctrl+C stops.")
            assert alone.stop() == 0, alone.output()
            scheduled = alone.output()
        yield
    assert f"xclaw gateway on http://127.0.0.1:{port}/" in served, served
    assert served.rstrip().endswith("gateway stopped"), served
    assert "chronos: stopping (up to 30s for running jobs)" in scheduled, scheduled
    assert scheduled.rstrip().endswith("chronos stopped"), scheduled


VALIDATED = """def {name}(email: str, password: str) -> dict[str, str]:
    if "@" not in email:
        raise ValueError("email: an address with @")
    if len(password) < 8:
        raise ValueError("password: at least 8 characters")
    return {{"email": email}}
"""


@contextlib.contextmanager
def fake_openai_team(reader: Reader) -> Iterator[None]:
    """``openai:gpt-4.1`` the configured model (``XCLAW_MODEL``, with a key), answered by a
    local Responses API fake that plays each role as a model would: the orchestrator runs a
    pipeline (coder, then reviewer), the coder writes the validation into ./proj, the
    reviewer delivers its review. ``PARENT_ID`` is an orchestrator session a crash left
    unfinished: a real ``xclaw agents run`` SIGKILLed mid-child (its coder had written
    login.py and was waiting for its model's next answer)."""
    crashing, waiting = True, threading.Event()
    models: dict[str, set[str]] = {}

    def answer(request: RecordedRequest) -> Answer:
        form = "login" if _said(request, "login") else "signup"
        done, tools = results_in(request), {t["name"] for t in request.body.get("tools", [])}
        if {"deliver", "fs_write"} <= tools:
            role = "coder"
            if done == 0:
                code = VALIDATED.format(name=form)
                reply = responses_reply(
                    calls=[("fs_write", {"path": f"{form}.py", "content": code})]
                )
            else:
                summary = f"{form}() now refuses an email without @ and a short password."
                reply = responses_reply(calls=[("deliver", {"summary": summary})])
                if crashing:
                    waiting.set()
                    reply = held(reply)
        elif "deliver" in tools:
            role = "reviewer"
            review = {
                "summary": f"{form}.py: the checks look right.",
                "summary_data": {"issues": []},
            }
            reply = responses_reply(calls=[("deliver", review)])
        else:
            assert "agents_pipeline" in tools, tools
            role = "orchestrator"
            if done == 0:
                steps = [
                    {"worker": "coder", "task": f"Add input validation to {form}() in {form}.py."},
                    {"worker": "reviewer", "task": f"Review {form}.py: {{{{input}}}}"},
                ]
                reply = responses_reply(calls=[("agents_pipeline", {"steps": steps})])
            else:
                reply = responses_reply(f"The {form} form validates its input, reviewed.")
        models.setdefault(f"{form} {role}", set()).add(request.body["model"])
        return reply

    (reader.folder / "proj" / "signup.py").write_text(
        'def signup(email: str, password: str) -> dict[str, str]:\n    return {"email": email}\n'
    )
    with AnsweringServer(answer) as server:
        point_presets(server.url + "/v1", "openai")
        reader.setenv("OPENAI_API_KEY", KEY)
        reader.setenv("XCLAW_MODEL", "openai:gpt-4.1")
        argv = ["xclaw", "agents", "run", "-C", "./proj", "Add input validation to the login form"]
        crash(argv, reader, waiting.is_set, "crashed-team")
        crashing = False
        server.release()
        [parent] = [s for s in _store_sessions() if s.parent_session_id is None]
        assert parent.state == "running", parent
        reader.words["PARENT_ID"] = parent.id
        yield
    sessions = _store_sessions()
    # the coder the crash cut off was continued, not left behind for a new call's coder
    assert [s.id for s in sessions if s.state == "running"] == [], sessions
    assert len(sessions) == 6 and {s.state for s in sessions} == {"success"}, sessions
    for form in ("login", "signup"):
        assert (reader.folder / "proj" / f"{form}.py").read_text() == VALIDATED.format(name=form)
    assert models == {
        "login orchestrator": {"gpt-4.1"},
        "login coder": {"gpt-4.1"},
        "login reviewer": {"gpt-4.1"},
        "signup orchestrator": {"gpt-4.1"},
        "signup coder": {"gpt-4.1"},
        "signup reviewer": {"gpt-4.1-mini"},  # --worker-model
    }, models
    assert "reviewer" in reader.printed and "coder" in reader.printed  # `xclaw agents workers`


def _readme_turns() -> str:
    """The README's ``turns.yaml``, as its transcript shows it (``$ cat turns.yaml``)."""
    for block in blocks(ROOT / "README.md"):
        if block.lang == "console" and "$ cat turns.yaml\n" in block.code:
            shown = block.code.split("$ cat turns.yaml\n", 1)[1]
            return shown.split("\n$ ", 1)[0] + "\n"
    raise AssertionError("README.md shows no turns.yaml")


LISTED = "proj holds hello.txt and README.md."
REPLY_XML = """<agent_response>
  <done>true</done>
  <message>Nothing to change.</message>
</agent_response>
"""


@contextlib.contextmanager
def fake_providers(reader: Reader) -> Iterator[None]:
    """Every provider docs/coding.md names, a local fake speaking its wire: OpenAI's
    Responses API (``openai``, the configured model for the run that names none), Anthropic's
    Messages API (overloaded, and not soon: the chain fails over to openai at once), Chat
    Completions for ollama and the ``openai-compatible`` gateway (``--base-url``: the fake's
    address instead of host:8000; ``XCLAW_BASE_URL`` where the line gives none), natively
    and in the XML text protocol. The task ``...`` stands for is "list the files" (one
    ``fs.list``, then the answer); the README's turns.yaml, a README.md in ./proj and an
    ``<agent_response>`` in reply.xml are there for the lines that read them."""
    from xclaw.models.text.protocol import render_reply

    asked: list[tuple[str, str]] = []

    def answer(request: RecordedRequest) -> Answer:
        body = request.body
        asked.append((request.path, body["model"]))
        if request.path == "/v1/messages":  # anthropic: busy for the next hour
            error = {"type": "error", "error": {"type": "rate_limit_error", "message": "busy"}}
            return refused(429, error, retry_after="3600")
        tools = {t.get("name") or t["function"]["name"] for t in body.get("tools", [])}
        if request.path == "/v1/responses":
            if tools == {"probe_echo"}:  # the probe's round trip: the call, then its answer
                if results_in(request) == 0:
                    return responses_reply(calls=[("probe_echo", {"value": "xclaw-probe-4729"})])
                return responses_reply("The tool echoed xclaw-probe-4729.")
            if _said(request, "create a site and build it"):
                return _site(results_in(request))
            if results_in(request) == 0:
                return responses_reply(calls=[("fs_list", {"path": "."})])
            return responses_reply(LISTED)
        messages = body["messages"]
        if not tools:  # the XML text protocol: calls and results travel as text
            done = sum(str(m.get("content")).startswith("<tool_result") for m in messages)
            if done == 0:
                return chat_reply(render_reply(False, "", "fs.list", {"path": "."}))
            return chat_reply(render_reply(True, LISTED))
        if not any(m["role"] == "tool" for m in messages):
            return chat_reply(calls=[("fs_list", {"path": "."})])
        return chat_reply(LISTED)

    (reader.folder / "turns.yaml").write_text(_readme_turns())
    (reader.folder / "reply.xml").write_text(REPLY_XML)
    (reader.folder / "proj" / "README.md").write_text("# proj\n")
    with AnsweringServer(answer) as fake:
        point_presets(fake.url + "/v1", "openai", "ollama")
        point_presets(fake.url, "anthropic")  # its SDK adds /v1
        reader.setenv("ANTHROPIC_API_KEY", "sk-ant-docs-fake-0123456789")
        reader.setenv("XCLAW_MODEL", "openai:gpt-4.1")
        reader.setenv("XCLAW_BASE_URL", fake.url + "/v1")
        reader.words["OPENAI_API_KEY=..."] = f"OPENAI_API_KEY={KEY}"  # `...`: your key
        reader.words['"..."'] = '"list the files"'
        reader.words["..."] = '"list the files"'  # the task, after --sandbox host
        reader.words["host:8000"] = f"127.0.0.1:{fake.port}"
        yield
    printed = reader.printed
    assert (reader.folder / "proj" / "dist" / "index.html").exists()
    runs = printed.split("▶ run ")[1:]
    assert len(runs) == 7, printed
    for run in runs[1:5] + runs[6:]:  # each listed the files, with the tool, then said so
        assert "→ fs.list path=." in run and run.count(LISTED) == 2, run
    assert "! failover anthropic:claude-sonnet-4-5 → openai:gpt-4.1" in runs[1], runs[1]
    assert "model openai-compatible:my-model (xml)" in runs[4], runs[4]
    assert "hello.py prints hello." in runs[5], runs[5]  # the README's script
    assert '"detected": "native"' in printed, printed  # the probe's answer
    assert '"content": "     1\\t# proj"' in printed, printed  # tools call fs.read README.md
    models = [m for _, m in asked]
    assert models.count("claude-sonnet-4-5") == 2, asked  # once a turn: failed over at once
    assert models.count("qwen2.5-coder") == 2 and models.count("my-model") == 4, asked


def _remembering(request: RecordedRequest) -> Events:
    """A model that saves what it is asked to remember (``memory.save``), then says so; asked
    to extract facts from a finished run, it finds nothing more worth keeping."""
    if _said(request, EXTRACTING):
        return responses_reply("- none")
    if results_in(request):
        return responses_reply("Saved: I will keep that in mind.")
    asked = json.dumps(request.body["input"][-1]["content"], ensure_ascii=False)
    fact = asked.split("remember: ", 1)[1].split('"', 1)[0]  # "deploys go ..." -> "Deploys go ..."
    fact = fact[0].upper() + fact[1:] + "."
    return responses_reply(calls=[("memory_save", {"text": fact, "kind": "fact"})])


@contextlib.contextmanager
def fake_openai_memory(reader: Reader) -> Iterator[None]:
    """A configured model (``XCLAW_MODEL``: ``openai:gpt-4.1``, answered by a local Responses
    API fake that saves what it is told to remember); ``ID`` one of the reader's memories,
    saved by an earlier ``xclaw run --memory``; their notes in ~/notes (a refund process, in
    Chinese), docs/ (api.md and old.md) and manual.pdf (two pages)."""
    from tests.memory.test_kb import tiny_pdf

    notes = reader.home / "notes"
    notes.mkdir()
    (notes / "refunds.md").write_text(
        "# 退款流程\n\n退款申请需在收货后七天内提交，审核通过后三个工作日内退回原支付方式。\n"
    )
    docs = reader.folder / "docs"
    docs.mkdir()
    (docs / "api.md").write_text(
        "# API reference\n\n## Rate limits\n\nAt most 60 requests a minute.\n"
    )
    (docs / "old.md").write_text("# Old notes\n\nThe deploy script used to live in tools/.\n")
    pages = ["Chapter one covers installation.", "Chapter two covers upgrades."]
    (reader.folder / "manual.pdf").write_bytes(tiny_pdf(pages))
    with AnsweringServer(_remembering) as fake:
        point_presets(fake.url + "/v1", "openai")
        reader.setenv("OPENAI_API_KEY", KEY)
        reader.setenv("XCLAW_MODEL", "openai:gpt-4.1")
        earlier = [
            "xclaw",
            "run",
            "-C",
            "./proj",
            "--memory",
            "remember: releases are tagged on Fridays",
        ]
        kept = subprocess.run(
            earlier, cwd=reader.folder, env=reader.env, capture_output=True, text=True
        )
        assert kept.returncode == 0, kept.stdout + kept.stderr
        listed = subprocess.run(
            ["xclaw", "memory", "list", "--json"],
            cwd=reader.folder,
            env=reader.env,
            capture_output=True,
            text=True,
        )
        [old] = json.loads(listed.stdout)
        assert old["text"] == "Releases are tagged on Fridays.", old
        reader.words["ID"] = old["id"]
        yield
    printed = reader.printed
    assert "→ memory.save text=Deploys go through the staging branch." in printed, printed
    assert "✓ Saved fact " in printed, printed
    table = printed.split("┏", 2)  # the list, then the search
    assert table[1].index("Deploys go") < table[1].index("Releases are"), table[1]  # newest first
    assert table[2].index("Deploys go") < table[2].index("Releases are"), table[2]  # nearest
    assert "Forgot 1 of 1 memories." in printed, printed
    exported = (reader.folder / "memories.jsonl").read_text().splitlines()
    texts = [json.loads(line)["text"] for line in exported]
    assert texts == ["Deploys go through the staging branch."], texts  # ID was forgotten
    assert "4 added" in printed and "manual.pdf  2 chunks" in printed, printed
    first = printed.split("[1] ", 1)[1]
    assert first.startswith(f"{notes / 'refunds.md'}:1-3 — 退款流程"), first  # a citation
    assert f"removed {docs / 'old.md'} (1 chunks)" in printed, printed


ENVIRONMENTS: dict[str, Environment] = {
    "fake-openai": fake_openai,
    "bridge": bridge,
    "scripted-session": scripted_session,
    "scripted-model": scripted_model,
    "chronos-job": chronos_job,
    "fake-openai-crashed": fake_openai_crashed,
    "serve-and-chat": serve_and_chat,
    "chronos-serving": chronos_serving,
    "fake-openai-team": fake_openai_team,
    "fake-providers": fake_providers,
    "fake-openai-memory": fake_openai_memory,
}

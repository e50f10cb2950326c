"""One redactor for every value xclaw loaded (issue 20, item 6).

A key read from a project's ``.env`` (not from the environment) is masked like an environment
key: in a real bridge's 502 body and logs, with the provider a local server that fails and
quotes the key back. Credentials in query strings are masked in text and in every access log
(``xclaw bridge``, the gateway of ``xclaw serve``). The keys used here match no well-known
format, so only registration (or the query-string rule) can hide them.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import secrets
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from tests.gateway.gateway_support import TOKEN as GATEWAY_TOKEN
from tests.gateway.gateway_support import serving as serving_gateway

from xclaw.bridge import create_app, load_or_create_token
from xclaw.bridge.server import bind, make_server
from xclaw.mcp.settings import expand, parse_server
from xclaw.memory.embed import EmbeddingError, OpenAIEmbedder
from xclaw.models.presets import get_preset, load_dotenv, lookup_key
from xclaw.models.resolve import resolve_model
from xclaw.obs.logs import stderr_handler
from xclaw.obs.serverlog import RedactingAccessFormatter, RedactingFilter
from xclaw.redact import MASK, load_environment_secrets, redact, redact_json


def fresh(label: str) -> str:
    """A credential-looking value no pattern knows (masked only if registered)."""
    return f"{label}-{secrets.token_hex(10)}"


# -- query-string credentials ----------------------------------------------------------------
QUERY_ATTACKS = [
    pytest.param("GET /v1/models?api_key={v} HTTP/1.1", id="api_key"),
    pytest.param("GET /ws?token={v}&x=1 HTTP/1.1", id="token"),
    pytest.param("https://example.test/cb?state=ok&access_token={v}", id="access_token"),
    pytest.param("https://maps.example.test/api/js?key={v}&callback=init", id="google-key"),
    pytest.param("https://acct.blob.example.test/c/b?sv=2022-11-02&se=2030&sig={v}", id="sas-sig"),
    pytest.param("https://s3.example.test/o?X-Amz-Date=2020&X-Amz-Signature={v}", id="amz-sig"),
    pytest.param("https://cdn.example.test/f?Expires=1&Signature={v}&Key-Pair-Id=K", id="cf-sig"),
    pytest.param("/login?next=%2Fapi%3Ftoken%3D{v}%26page%3D2", id="percent-encoded"),
    pytest.param("/r?u=https%253A%252F%252Fh%252Fp%253Fapi_key%253D{v}", id="double-encoded"),
    pytest.param('<a href="/dl?a=1&amp;token={v}&amp;b=2">', id="html-escaped"),
    pytest.param("/p?apiKey={v}", id="camel-case"),
    pytest.param("/oauth/token?client_id=app&client_secret={v}", id="client_secret"),
    pytest.param("/db?user=bob&password={v}", id="password"),
    pytest.param("/hook?hub.mode=subscribe&hub.verify_token={v}", id="dotted-name"),
    pytest.param("/x?X-Goog-Credential={v}", id="goog-credential"),
    pytest.param("/ws?auth={v}", id="auth"),
]


@pytest.mark.parametrize("template", QUERY_ATTACKS)
def test_query_string_credentials_are_masked(template: str) -> None:
    value = fresh("qs")
    out = redact(template.format(v=value))
    assert value not in out and MASK in out


@pytest.mark.parametrize("template", QUERY_ATTACKS[:6])
def test_query_credentials_inside_json_are_masked(template: str) -> None:
    value = fresh("qs")
    text = json.dumps({"url": template.format(v=value)})
    assert value not in redact(text)
    assert value not in json.dumps(redact_json(json.loads(text)))
    json.loads(redact(text))  # still JSON: nothing but the value was replaced


@pytest.mark.parametrize(
    "text",
    [
        "/search?q=key&lang=en&page=2",
        "/items?sort=name&order=desc",
        "/p?token=<token>",
        "/p?key=${MAPS_KEY}",
        "/docs?topic=signature-verification",
    ],
)
def test_ordinary_query_strings_are_untouched(text: str) -> None:
    assert redact(text) == text


# -- values loaded from files and configuration ----------------------------------------------
def test_dotenv_secret_values_are_registered_when_read(tmp_path: Path) -> None:
    load_environment_secrets()
    key, bot, plain = fresh("dotenv-key"), fresh("dotenv-bot"), fresh("app-name")
    (tmp_path / ".env").write_text(
        f"SERVICE_API_KEY={key}\nexport TELEGRAM_BOT_TOKEN='{bot}'\nAPP_NAME={plain}\n"
        "REF_SECRET=${OTHER_SECRET}\n",
        encoding="utf-8",
    )
    assert redact(f"{key} {bot}") == f"{key} {bot}"  # unknown before the file is read
    load_dotenv(tmp_path / ".env")
    out = redact(f"failed with {key}; bot {bot}; app {plain}; see ${{OTHER_SECRET}}")
    assert key not in out and bot not in out
    assert plain in out and "${OTHER_SECRET}" in out  # not secret-named / a reference


def test_a_key_handed_out_by_lookup_is_registered_whatever_its_source(tmp_path: Path) -> None:
    preset = get_preset("openai")
    assert preset is not None
    from_env = fresh("explicit-env")
    assert lookup_key(preset, env={"OPENAI_API_KEY": from_env}, project=tmp_path) == from_env
    assert from_env not in redact(f"provider said: bad key {from_env}")


def test_mcp_definitions_register_their_credentials() -> None:
    literal, expanded = fresh("mcp-literal"), fresh("mcp-expanded")
    parse_server(
        "remote",
        {"url": "https://mcp.example.test/", "headers": {"Authorization": f"Bearer {literal}"}},
        "xclaw.yaml",
    )
    assert expand("Bearer ${REMOTE_TOKEN}", {"REMOTE_TOKEN": expanded}) == f"Bearer {expanded}"
    out = redact(f"server quoted {literal} and {expanded}")
    assert literal not in out and expanded not in out


def test_embedder_key_set_after_start_is_masked_in_its_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    load_environment_secrets()  # the redactor read the environment before the key was set
    key = fresh("embed")
    monkeypatch.setenv("XCLAW_TEST_EMBED_API_KEY", key)

    def echo(request: httpx.Request) -> httpx.Response:
        said = request.headers["authorization"].removeprefix("Bearer ")
        return httpx.Response(401, json={"error": {"message": f"invalid key {said}"}})

    embedder = OpenAIEmbedder(
        "http://127.0.0.1:9/v1", "m", "XCLAW_TEST_EMBED_API_KEY", 4, transport=_transport(echo)
    )
    with pytest.raises(EmbeddingError) as caught:
        embedder.embed(["hello"])
    assert key not in str(caught.value)


def _transport(handler: object) -> httpx.MockTransport:
    return httpx.MockTransport(handler)  # type: ignore[arg-type]


# -- the bridge, over real HTTP --------------------------------------------------------------
@asynccontextmanager
async def failing_provider(status: int = 401) -> AsyncIterator[tuple[str, list[str]]]:
    """An OpenAI-compatible server that refuses every request and quotes the key back."""
    seen: list[str] = []

    async def refuse(request: Request) -> JSONResponse:
        key = request.headers.get("authorization", "").removeprefix("Bearer ")
        seen.append(key)
        message = f"Incorrect API key provided: {key}. Find your key in your account."
        body = {"error": {"message": message, "type": "invalid_request_error", "code": "bad"}}
        return JSONResponse(body, status_code=status)

    app = Starlette(routes=[Route("/v1/{rest:path}", refuse, methods=["GET", "POST"])])
    sock = bind("127.0.0.1", 0)
    config = uvicorn.Config(app, log_config=None, http="h11", lifespan="off", log_level="error")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        await _started(server, task)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1", seen
    finally:
        server.should_exit = True
        await task
        sock.close()


async def _started(server: uvicorn.Server, task: asyncio.Task[None]) -> None:
    async with asyncio.timeout(5):
        while not server.started:
            if task.done():
                task.result()
            await asyncio.sleep(0.005)


_BRIDGE_LOGGERS = {"uvicorn", "xclaw", "openai", "starlette", "fastapi"}


@asynccontextmanager
async def bridge_on(app: object) -> AsyncIterator[str]:
    sock = bind("127.0.0.1", 0)
    server = make_server(app, log_level="info")  # type: ignore[arg-type]
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        await _started(server, task)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        await task
        sock.close()


async def test_bridge_502_and_logs_hold_no_key_from_the_project_dotenv(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)  # what the bridge's own stack logs (not this test's client)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    load_environment_secrets()
    key = fresh("provider-key")
    project = tmp_path / "project"
    project.mkdir()
    (project / ".env").write_text(f"OPENAI_API_KEY={key}\n", encoding="utf-8")
    monkeypatch.chdir(project)  # `xclaw bridge` reads the .env of the folder it runs in
    token = load_or_create_token(tmp_path / "bridge-token")
    in_url = fresh("in-url")
    async with failing_provider() as (provider_url, seen):
        model = resolve_model("openai:gpt-4.1-mini", base_url=provider_url)
        async with bridge_on(create_app({"gpt": model}, token.value)) as url:
            async with httpx.AsyncClient(base_url=url, timeout=10) as http:
                answer = await http.post(
                    "/v1/chat/completions",
                    headers={"Authorization": f"Bearer {token.value}"},
                    json={"model": "gpt", "messages": [{"role": "user", "content": "hi"}]},
                )
                refused = await http.get(f"/v1/models?api_key={token.value}")
                await http.get(f"/v1/models?key={in_url}&page=1")
        await model.aclose()
    assert seen == [key]  # the provider got the key from .env, and quoted it back
    assert answer.status_code == 502
    assert answer.json()["error"]["code"] == "MODEL_AUTH_FAILED"
    assert key not in answer.text and "Incorrect API key provided" in answer.text
    assert refused.status_code == 401 and token.value not in refused.text
    printed = capsys.readouterr()
    server_side = [r for r in caplog.records if r.name.split(".")[0] in _BRIDGE_LOGGERS]
    logs = printed.out + printed.err + "\n".join(r.getMessage() for r in server_side)
    assert "GET /v1/models?api_key=" in logs  # the access log is on, and masked
    for secret in (key, token.value, in_url):
        assert secret not in logs


def test_redaction_filter_keeps_uvicorn_access_records_formattable() -> None:
    value = fresh("filter")
    record = logging.LogRecord(
        "uvicorn.access",
        logging.INFO,
        __file__,
        1,
        '%s - "%s %s HTTP/%s" %d',
        ("127.0.0.1:5000", "GET", f"/x?access_token={value}", "1.1", 200),
        None,
    )
    assert RedactingFilter().filter(record)
    line = RedactingAccessFormatter(
        '%(client_addr)s - "%(request_line)s" %(status_code)s', use_colors=False
    ).format(record)
    assert value not in line and f"/x?access_token={MASK}" in line and "200 OK" in line


# -- the gateway of `xclaw serve` ---------------------------------------------------------------
@contextmanager
def root_log(fmt: str) -> Iterator[io.StringIO]:
    """The root handler `xclaw serve` installs (text or JSON), into a buffer."""
    stream = io.StringIO()
    handler = stderr_handler(fmt, stream)  # type: ignore[arg-type]
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        yield stream
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_gateway_access_log_masks_query_credentials(root: Path, fmt: str) -> None:
    in_url = fresh("gw-url")
    with root_log(fmt) as stream, serving_gateway(root, [], log_level="info") as server:
        with httpx.Client(base_url=server.url, timeout=10) as http:
            assert http.get(f"/healthz?api_key={in_url}").status_code == 200
            http.get(f"/api/sessions?token={GATEWAY_TOKEN}")
            http.get(f"/api/sessions?x=1&sig={in_url}")
    logs = stream.getvalue()
    assert "/healthz?api_key=" in logs and "/api/sessions?token=" in logs
    assert in_url not in logs and GATEWAY_TOKEN not in logs

"""Presets, key lookup, model specs and the Copilot token exchange."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from wire_server import WireServer

from xclaw.core.errors import ConfigError, ModelRequestRejected
from xclaw.core.messages import Message
from xclaw.core.model import Finish, ModelRequest, TextDelta
from xclaw.models.copilot import CopilotToken
from xclaw.models.fallback import FallbackModel
from xclaw.models.openai_chat import OpenAIChatModel
from xclaw.models.presets import Capabilities, get_preset, list_presets, load_dotenv, lookup_key
from xclaw.models.resolve import resolve_chain, resolve_model
from xclaw.models.scripted import ScriptedModel
from xclaw.models.wrap import innermost

CLASS_FOR_API = {
    "openai_chat": "OpenAIChatModel",
    "openai_responses": "OpenAIResponsesModel",
    "anthropic": "AnthropicModel",
}
EXPECTED_URLS = {
    "openai": "https://api.openai.com/v1",
    "openai-chat": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
    "deepseek": "https://api.deepseek.com/v1",
    "ollama": "http://127.0.0.1:11434/v1",
    "vllm": "http://127.0.0.1:8000/v1",
    "lmstudio": "http://127.0.0.1:1234/v1",
    "llamacpp": "http://127.0.0.1:8080/v1",
    "openrouter": "https://openrouter.ai/api/v1",
    "qwen": "https://dashscope.aliyuncs.com/compatible-mode/v1",
    "glm": "https://open.bigmodel.cn/api/paas/v4",
    "moonshot": "https://api.moonshot.cn/v1",
    "copilot": "https://api.githubcopilot.com",
}
EXPECTED_KEYS = {
    "qwen": "DASHSCOPE_API_KEY",
    "glm": "ZHIPUAI_API_KEY",
    "moonshot": "MOONSHOT_API_KEY",
    "copilot": "GITHUB_TOKEN",
    "openai-compatible": "XCLAW_API_KEY",
}


def fake_env() -> dict[str, str]:
    env = {p.key_env: f"test-key-for-{p.name}" for p in list_presets() if p.key_env}
    env["XCLAW_BASE_URL"] = "http://127.0.0.1:9/gw"
    return env


def only(model: Any) -> Any:
    """The adapter of a chain of one, under its protocol wrappers (models.setup)."""
    assert isinstance(model, FallbackModel) and len(model.models) == 1
    return innermost(model.models[0])


def base_url_of(model: Any) -> str:
    return str(model._client.base_url).rstrip("/")


@pytest.mark.parametrize("preset", list_presets(), ids=lambda p: p.name)
async def test_every_preset_resolves(preset: Any, tmp_path: Path) -> None:
    spec = f"{preset.name}:{preset.default_model or 'some-model'}"
    model = only(resolve_model(spec, env=fake_env(), project=tmp_path))
    try:
        assert type(model).__name__ == CLASS_FOR_API[preset.api]
        assert model.preset == preset
        assert model.profile == preset.profile(preset.default_model or "some-model")
        expected = EXPECTED_URLS.get(preset.name, "http://127.0.0.1:9/gw")
        assert base_url_of(model) == expected
        if preset.name in EXPECTED_KEYS:
            assert preset.key_env == EXPECTED_KEYS[preset.name]
    finally:
        await model.aclose()


def test_preset_table_covers_the_required_providers() -> None:
    names = {p.name for p in list_presets()}
    assert set(EXPECTED_URLS) | {"openai-compatible", "anthropic-compatible"} <= names


def test_missing_key_names_the_variable(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        resolve_model("deepseek:deepseek-chat", env={}, project=tmp_path)
    assert info.value.code == "MODEL_KEY_MISSING"
    assert "DEEPSEEK_API_KEY" in info.value.message and "DEEPSEEK_API_KEY" in info.value.hint


async def test_local_servers_need_no_key(tmp_path: Path) -> None:
    model = only(resolve_model("ollama:qwen2.5:7b", env={}, project=tmp_path))
    assert model.model == "qwen2.5:7b"  # only the first colon splits provider from model
    await model.aclose()


def test_key_from_project_dotenv_and_environment_wins(tmp_path: Path) -> None:
    preset = get_preset("moonshot")
    assert preset is not None
    (tmp_path / ".env").write_text(
        "# keys\nexport MOONSHOT_API_KEY='from-dotenv'\nOTHER=1\n", encoding="utf-8"
    )
    assert lookup_key(preset, env={}, project=tmp_path) == "from-dotenv"
    assert lookup_key(preset, env={"MOONSHOT_API_KEY": "env"}, project=tmp_path) == "env"


def test_dotenv_parser(tmp_path: Path) -> None:
    path = tmp_path / ".env"
    path.write_text(
        "A=1\n B = \"two words\" \nC=x # comment\n#D=4\nnot a line\nE='q#1'\n9X=bad\n",
        encoding="utf-8",
    )
    assert load_dotenv(path) == {"A": "1", "B": "two words", "C": "x", "E": "q#1"}
    assert load_dotenv(tmp_path / "missing") == {}


async def test_custom_gateway_base_url_sources(tmp_path: Path) -> None:
    env = {"XCLAW_BASE_URL": "http://127.0.0.1:7/from-env/", "XCLAW_API_KEY": "k"}
    from_env = only(resolve_model("openai-compatible:my-model", env=env, project=tmp_path))
    explicit = only(
        resolve_model(
            "openai-compatible:my-model",
            base_url="http://127.0.0.1:7/explicit",
            env=env,
            project=tmp_path,
        )
    )
    assert base_url_of(from_env) == "http://127.0.0.1:7/from-env"
    assert base_url_of(explicit) == "http://127.0.0.1:7/explicit"
    # the gateway variable does not redirect the named presets
    deepseek = only(resolve_model("deepseek:deepseek-chat", env={**env, **fake_env()}))
    assert base_url_of(deepseek) == "https://api.deepseek.com/v1"
    for m in (from_env, explicit, deepseek):
        await m.aclose()


@pytest.mark.parametrize(
    ("spec", "env", "code"),
    [
        ("openai-compatible:m", {}, "MODEL_BASE_URL_MISSING"),
        ("openai-compatible:m", {"XCLAW_BASE_URL": "127.0.0.1:80"}, "MODEL_BASE_URL_INVALID"),
        ("nosuch:m", {}, "MODEL_PROVIDER_UNKNOWN"),
        ("deepseek", {}, "MODEL_SPEC_INVALID"),
        ("ollama:a,,ollama:b", {}, "MODEL_SPEC_INVALID"),
        ("", {}, "MODEL_NOT_CONFIGURED"),
    ],
)
def test_bad_specs(spec: str, env: dict[str, str], code: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        resolve_model(spec, env=env, project=tmp_path)
    assert info.value.code == code


async def test_chain_spec_builds_a_fallback_model(tmp_path: Path) -> None:
    chain = resolve_chain("ollama:a, vllm:b", env={}, project=tmp_path)
    assert [m.name for m in chain] == ["ollama:a", "vllm:b"]
    model = resolve_model("ollama:a,vllm:b", env={}, project=tmp_path)
    assert isinstance(model, FallbackModel) and model.name == "ollama:a,vllm:b"
    await model.aclose()


def test_scripted_spec_still_resolves(tmp_path: Path) -> None:
    script = tmp_path / "s.yaml"
    script.write_text("- hello\n", encoding="utf-8")
    assert isinstance(resolve_model(f"scripted:{script}"), ScriptedModel)


def test_profiles_and_prices_come_from_overrides() -> None:
    moonshot, openai = get_preset("moonshot"), get_preset("openai")
    assert moonshot is not None and openai is not None
    assert moonshot.profile("moonshot-v1-8k").context_window == 8192
    assert moonshot.profile("kimi-k2-thinking").reasoning is True  # longest pattern wins
    assert moonshot.profile("kimi-k2-0905-preview").reasoning is False
    assert openai.profile("gpt-4.1-mini").context_window == 1_047_576
    assert openai.prices("gpt-4.1-mini") == (0.4, 1.6)
    assert openai.prices("unknown-model") == (None, None)
    assert isinstance(openai.profile("o3"), Capabilities) and openai.profile("o3").reasoning


async def test_gateway_end_to_end_over_http(wire: WireServer, tmp_path: Path) -> None:
    wire.add_sse(
        [
            {"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}]},
            "data: [DONE]",
        ]
    )
    env = {"XCLAW_API_KEY": "gateway-key"}
    model = resolve_model("openai-compatible:house-model", base_url=wire.url, env=env)
    request = ModelRequest([Message.user("hello")], [])
    try:
        events = [ev async for ev in model.respond(request)]
    finally:
        await model.aclose()
    assert events == [TextDelta("hi"), Finish("stop")]
    sent = wire.requests[0]
    assert sent.headers["authorization"] == "Bearer gateway-key"
    assert sent.body["model"] == "house-model"


# -- Copilot -------------------------------------------------------------------------------------


def token_reply(token: str, expires_at: float, api: str) -> dict[str, Any]:
    return {"token": token, "expires_at": int(expires_at), "endpoints": {"api": api}}


def chat_reply(text: str) -> list[str | dict[str, Any]]:
    return [{"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": "stop"}]}]


async def test_copilot_token_exchange_and_cache(wire: WireServer) -> None:
    now = [1_000_000.0]
    api = wire.url + "/copilot-api"
    wire.add_json(200, token_reply("cop-1", now[0] + 1800, api))
    wire.add_sse(chat_reply("one"))
    wire.add_sse(chat_reply("two"))
    wire.add_json(200, token_reply("cop-2", now[0] + 3600, api))
    wire.add_sse(chat_reply("three"))
    preset = get_preset("copilot")
    assert preset is not None
    source = CopilotToken(
        "ghp_githubtoken",
        token_url=wire.url + "/copilot_internal/v2/token",
        default_base_url="http://127.0.0.1:9",
        headers=preset.headers,
        clock=lambda: now[0],
    )
    model = OpenAIChatModel(
        "gpt-4.1", base_url="http://127.0.0.1:9", api_key=None, preset=preset, credentials=source
    )
    request = ModelRequest([Message.user("hi")], [])
    texts = []
    try:
        for advance in (0, 60, 1800):  # the third call comes after the first token expired
            now[0] += advance
            events = [ev async for ev in model.respond(request)]
            texts.append(next(ev.text for ev in events if isinstance(ev, TextDelta)))
    finally:
        await model.aclose()
    assert texts == ["one", "two", "three"]
    assert source.exchanges == 2
    exchange, first_chat = wire.requests[0], wire.requests[1]
    assert (exchange.method, exchange.path) == ("GET", "/copilot_internal/v2/token")
    assert exchange.headers["authorization"] == "token ghp_githubtoken"
    assert first_chat.path == "/copilot-api/chat/completions"
    assert first_chat.headers["authorization"] == "Bearer cop-1"
    assert first_chat.headers["copilot-integration-id"] == "vscode-chat"
    assert wire.requests[4].headers["authorization"] == "Bearer cop-2"
    wire.assert_all_used()


async def test_copilot_exchange_refused(wire: WireServer) -> None:
    wire.add_json(401, {"message": "Bad credentials"})
    source = CopilotToken(
        "ghp_bad", token_url=wire.url + "/token", default_base_url="http://127.0.0.1:9"
    )
    with pytest.raises(ModelRequestRejected) as info:
        await source.credentials()
    assert info.value.code == "MODEL_AUTH_FAILED"
    assert "Bad credentials" in info.value.message and "ghp_bad" not in str(info.value)


async def test_copilot_resolves_with_the_github_exchange(tmp_path: Path) -> None:
    model = only(resolve_model("copilot:gpt-4.1", env={"GITHUB_TOKEN": "ghp_x"}, project=tmp_path))
    assert isinstance(model._credentials, CopilotToken)
    assert model._credentials.token_url == "https://api.github.com/copilot_internal/v2/token"
    await model.aclose()

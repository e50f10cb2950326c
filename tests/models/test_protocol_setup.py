"""Protocol per model: --protocol, `models:` in xclaw.yaml, presets, the auto probe and its
cache, and the XML protocol over a real HTTP chat API (a local WireServer)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from chat_sse import chat_call, chat_text
from typer.testing import CliRunner
from wire_server import WireServer

from xclaw import Agent
from xclaw.cli.app import app
from xclaw.config import ModelSettings, load_config
from xclaw.core.errors import ConfigError
from xclaw.core.model import Model
from xclaw.models.compact import compact_spec
from xclaw.models.fallback import FallbackModel
from xclaw.models.presets import Preset, get_preset
from xclaw.models.probe import ProbeCache, ProbeKey
from xclaw.models.repair import RepairToolCalls
from xclaw.models.resolve import resolve_model
from xclaw.models.setup import AutoProtocol, settings_for
from xclaw.models.text.model import TextProtocolModel
from xclaw.models.text.protocol import render_reply
from xclaw.models.wrap import CompactTools, WithSettings, innermost

ENV = {"XCLAW_API_KEY": "k"}
WRITE = {"path": "hello.py", "content": "print('hello')\n"}


def member(model: Model) -> Model:
    """The one model of the chain, under the compact-schema wrapper a 32k window gets."""
    assert isinstance(model, FallbackModel) and len(model.models) == 1
    first = model.models[0]
    return first.inner if isinstance(first, CompactTools) else first


def resolve(wire: WireServer, root: Path, **kwargs: Any) -> Model:
    settings = load_config(root).models  # the caller's resolved configuration
    return resolve_model(
        "openai-compatible:m",
        base_url=wire.url,
        env=ENV,
        project=root,
        model_settings=settings,
        **kwargs,
    )


# ------------------------------------------------------------------------------ wiring


@pytest.mark.parametrize(
    ("protocol", "kind"),
    [(None, RepairToolCalls), ("native", RepairToolCalls), ("xml", TextProtocolModel)],
)
async def test_protocol_chooses_the_wrapper(
    wire: WireServer, root: Path, protocol: str | None, kind: type
) -> None:
    model = resolve(wire, root, protocol=protocol)
    try:
        assert isinstance(member(model), kind)
        assert type(innermost(model.models[0])).__name__ == "OpenAIChatModel"  # type: ignore[attr-defined]
    finally:
        await model.aclose()


async def test_auto_is_a_probe_and_xml_is_named(wire: WireServer, root: Path) -> None:
    auto = resolve(wire, root, protocol="auto")
    xml = resolve(wire, root, protocol="xml")
    try:
        assert isinstance(member(auto), AutoProtocol)
        assert member(xml).name == "openai-compatible:m (xml)"
    finally:
        await auto.aclose()
        await xml.aclose()


def test_an_unknown_protocol_is_a_coded_error(wire: WireServer, root: Path) -> None:
    with pytest.raises(ConfigError) as info:
        resolve(wire, root, protocol="json")
    assert info.value.code == "PROTOCOL_UNKNOWN" and "--protocol" in info.value.hint


async def test_config_models_section_sets_protocol_and_sampling(
    wire: WireServer, root: Path
) -> None:
    # A project may set them: they change how a model is spoken to, not what xclaw may do.
    (root / "xclaw.yaml").write_text(
        "models:\n"
        "  'openai-compatible:*': {protocol: xml, temperature: 0.7, seed: 3}\n"
        "  'openai-compatible:m': {temperature: 0.1}\n"
    )
    model = resolve(wire, root)
    try:
        text_model = member(model)
        assert isinstance(text_model, TextProtocolModel)
        transport_model = text_model.transport.model  # type: ignore[attr-defined]
        assert isinstance(transport_model, WithSettings)
        assert transport_model.settings == {"temperature": 0.1, "seed": 3}  # longest wins
    finally:
        await model.aclose()
    flagged = resolve(wire, root, protocol="native")  # the flag beats the config
    try:
        assert isinstance(member(flagged), RepairToolCalls)
    finally:
        await flagged.aclose()


def test_preset_settings_sit_under_the_config() -> None:
    base = get_preset("openai-compatible")
    assert base is not None
    preset = Preset.model_validate(
        {
            **base.model_dump(),
            "protocol": "auto",
            "sampling": {"temperature": 0.2, "top_p": 0.9},
            "models": {"qwen*": {"protocol": "xml", "sampling": {"seed": 7}}},
        }
    )
    assert preset.settings("llama").protocol == "auto"
    from_preset = preset.settings("qwen2.5-coder")
    assert from_preset.protocol == "xml"
    assert from_preset.request_settings() == {"temperature": 0.2, "top_p": 0.9, "seed": 7}
    table = {"*:qwen*": ModelSettings(temperature=0.0, tool_choice="required")}
    merged = settings_for("openai-compatible:qwen2.5-coder", table, from_preset)
    assert merged.protocol == "xml"
    assert merged.request_settings() == {
        "temperature": 0.0,
        "top_p": 0.9,
        "seed": 7,
        "tool_choice": "required",
    }


async def test_small_windows_get_compact_tool_schemas(root: Path) -> None:
    # moonshot-v1-8k has an 8k window (presets.yaml)
    model = resolve_model("moonshot:moonshot-v1-8k", env={"MOONSHOT_API_KEY": "k"}, project=root)
    try:
        assert isinstance(model, FallbackModel) and isinstance(model.models[0], CompactTools)
    finally:
        await model.aclose()
    from xclaw.coding.toolset import coding_registry

    spec = next(t.spec for t in coding_registry() if t.name == "fs.read")
    small = compact_spec(spec)
    assert small.parameters["required"] == ["path"]
    assert "title" not in json.dumps(small.parameters)
    assert "description" in small.parameters["properties"]["path"]  # required: kept
    assert "description" not in small.parameters["properties"]["max_lines"]  # optional
    assert small.parameters["properties"]["max_lines"]["maximum"] == 5000  # bounds stay
    assert len(json.dumps(small.parameters)) < len(json.dumps(spec.parameters))


# -------------------------------------------------------------------- the XML protocol


def xml_reply(*chunks: str) -> list[str | dict[str, Any]]:
    return chat_text(*chunks)


async def test_xml_over_a_chat_api_runs_a_task(wire: WireServer, root: Path) -> None:
    first = render_reply(False, "Creating hello.py.", "fs.write", WRITE)
    cut = first[: first.index("</args>") + len("</args>")]  # the model stopped at </args>
    wire.add_sse(xml_reply(cut[:40], cut[40:]))
    wire.add_sse(xml_reply(render_reply(True, "Created hello.py.")))
    model = resolve(wire, root, protocol="xml")
    try:
        result = await Agent(model, root).run("create hello.py that prints hello")
    finally:
        await model.aclose()
    assert result.ok, result.reason
    assert (root / "hello.py").read_text() == WRITE["content"]
    assert result.reply == "Created hello.py."
    assert result.metrics.input_tokens == 100  # usage of both replies came through
    one, two = (r.body for r in wire.requests)
    assert "tools" not in one and "tools" not in two  # plain chat, no tool channel
    assert [m["role"] for m in one["messages"]] == ["user"]
    opening = one["messages"][0]["content"]
    assert opening.startswith("<agent_protocol>") and "<xclaw_call" in opening
    assert str(root) not in opening and "Project root: `.`" in opening  # relative only
    assert [m["role"] for m in two["messages"]] == ["user", "assistant", "user"]
    assert two["messages"][1]["content"] == cut  # the reply as the model wrote it
    assert "<tool_result" in two["messages"][2]["content"]


# ------------------------------------------------------------------------------- auto


async def test_auto_probes_once_and_remembers_per_model(wire: WireServer, root: Path) -> None:
    # The probe: the model writes its call as text (no native call), so xml it is.
    wire.add_sse(chat_text('{"name": "probe_echo", "arguments": {"value": "x"}}'))
    wire.add_sse(xml_reply(render_reply(True, "Nothing to change.")))
    model = resolve(wire, root, protocol="auto")
    try:
        result = await Agent(model, root, evidence_gate_enabled=False).run("look around")
    finally:
        await model.aclose()
    assert result.ok, result.reason
    probe, first = (r.body for r in wire.requests)
    assert [t["function"]["name"] for t in probe["tools"]] == ["probe_echo"]
    assert "tools" not in first
    entry = ProbeCache().get(ProbeKey("openai-compatible", "m", wire.url))
    assert entry is not None and entry["protocol"] == "xml"
    # A second run (a new process would read the same file): no probe.
    wire.add_sse(xml_reply(render_reply(True, "Still nothing.")))
    again = resolve(wire, root, protocol="auto")
    try:
        result = await Agent(again, root, evidence_gate_enabled=False).run("look again")
    finally:
        await again.aclose()
    assert result.ok and len(wire.requests) == 3
    assert "tools" not in wire.requests[2].body


async def test_auto_keeps_native_when_the_tool_channel_works(
    wire: WireServer, make_wire: Any, root: Path
) -> None:
    wire.add_sse(chat_call("probe_echo", {"value": "xclaw-probe-4729"}))
    wire.add_sse(chat_text("hello"))
    model = resolve(wire, root, protocol="auto")
    try:
        result = await Agent(model, root, evidence_gate_enabled=False).run("say hello")
    finally:
        await model.aclose()
    assert result.ok and result.reply == "hello"
    assert "tools" in wire.requests[1].body  # native: the tools travel with the request
    cache = ProbeCache()
    assert cache.get(ProbeKey("openai-compatible", "m", wire.url)) is not None
    other = make_wire()  # the same model name elsewhere is another model: probed again
    assert cache.get(ProbeKey("openai-compatible", "m", other.url)) is None


def test_models_probe_shows_the_protocol_and_caches_it(wire: WireServer, root: Path) -> None:
    wire.add_sse(chat_text('{"name": "probe_echo", "arguments": {"value": "xclaw-probe-4729"}}'))
    call = render_reply(False, "", "probe.echo", {"value": "xclaw-probe-4729"})
    wire.add_sse(xml_reply(call))
    wire.add_sse(xml_reply(render_reply(True, "done")))
    out = CliRunner().invoke(
        app,
        ["models", "probe", "openai-compatible:m", "--base-url", wire.url, "-C", str(root)],
        env={"XCLAW_API_KEY": "k"},
    )
    report = json.loads(out.stdout)
    assert "error" not in report, report
    assert report["strict_tool_call"] is False  # the tool channel carried no call ...
    assert report["protocol"]["detected"] == "xml" and report["protocol"]["previous"] is None
    assert report["xml"]["strict_tool_call"] and report["xml"]["result_continuation"]
    assert out.exit_code == 0  # ... but the XML protocol works, so the model is usable
    assert ProbeCache().get(ProbeKey("openai-compatible", "m", wire.url)) is not None


def test_run_takes_protocol_and_refuses_an_unknown_one(wire: WireServer, root: Path) -> None:
    out = CliRunner().invoke(
        app,
        ["run", "-C", str(root), "-m", "openai-compatible:m", "--base-url", wire.url]
        + ["--protocol", "yaml", "task"],
        env={"XCLAW_API_KEY": "k"},
    )
    assert out.exit_code == 2 and out.stderr.startswith("USAGE_INVALID: ")
    assert "'yaml' is not one of 'native', 'xml', 'auto'" in out.stderr  # before any model
    wire.add_sse(xml_reply(render_reply(True, "Nothing to do.")))
    out = CliRunner().invoke(
        app,
        ["run", "-C", str(root), "-m", "openai-compatible:m", "--base-url", wire.url]
        + ["--protocol", "xml", "--sandbox", "host", "look at the project"],
        env={"XCLAW_API_KEY": "k"},
    )
    assert out.exit_code == 0, out.output
    assert "openai-compatible:m (xml)" in out.stdout
    assert "tools" not in wire.requests[-1].body

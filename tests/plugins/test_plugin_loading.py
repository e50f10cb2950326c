"""Plugins from an entry point and from manifest folders add tools and services that live
with the runtime; a failing plugin is disabled with its reason and nothing else breaks."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.plugins.conftest import CONFIG_SCHEMA, plugin_source, write_manifest_plugin

from xclaw.coding.agent import Agent
from xclaw.coding.toolset import coding_registry
from xclaw.models.scripted import ScriptedModel
from xclaw.plugins.extensions import load_extensions
from xclaw.plugins.state import PluginState
from xclaw.tools.registry import ToolRegistry


def _state(log: Path, *ids: str) -> PluginState:
    return PluginState(config={pid: {"log": str(log)} for pid in ids})


def _lines(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


async def test_entry_point_and_manifest_plugins_serve_a_run(
    root: Path, tmp_path: Path, entry_point_plugin: Callable[..., Path], user_plugins: Path
) -> None:
    entry_point_plugin("sample")
    write_manifest_plugin(user_plugins, "weather")
    log = tmp_path / "log.txt"
    ext = load_extensions(root, state=_state(log, "sample", "weather"))
    assert ext.problems() == []
    names = ext.registry.names()
    assert names[: len(coding_registry())] == coding_registry().names()  # built-ins first
    assert {"sample.greet", "weather.greet"} <= set(names)
    model = ScriptedModel(
        [
            {
                "expect": {"tools_include": ["sample.greet", "weather.greet"]},
                "tool_calls": [
                    {"id": "a", "name": "sample.greet", "arguments": {"name": "Ada"}},
                    {"id": "b", "name": "weather.greet", "arguments": {"name": "Bo"}},
                ],
            },
            {"expect": {"last_contains": ["hello, Ada!", "hello, Bo!"]}, "text": "done"},
        ]
    )
    agent = Agent(model, root, ext.registry, hooks=ext.hooks)
    assert _lines(log) == []  # nothing starts before the runtime does
    async with ext:
        assert _lines(log) == ["start sample", "start weather"]
        result = await agent.run("greet Ada and Bo")
    model.assert_complete()
    assert result.ok, result.reason
    assert _lines(log) == [
        "start sample",
        "start weather",
        "call Ada",
        "call Bo",
        "stop weather",  # last started, first stopped
        "stop sample",
    ]


def test_without_plugins_the_registry_is_the_coding_registry(root: Path) -> None:
    ext = load_extensions(root, state=PluginState())
    assert ext.registry.names() == coding_registry().names()
    assert [(s.id, s.state) for s in ext.plugins] == [("builtin", "loaded")]
    base = coding_registry()
    with_base = load_extensions(root, base, state=PluginState())
    assert with_base.registry.names() == base.names()
    assert with_base.plugins[0].tools == base.names()


CRASHES = {
    "import": "raise RuntimeError('broken at import')\n",
    "register": "def register(api):\n    raise ValueError('broken in register')\n",
    "start": (
        "from xclaw.core.messages import ToolResult\n"
        "from xclaw.tools.base import tool\n"
        "def register(api):\n"
        "    @tool('start.greet')\n"
        "    def greet() -> ToolResult:\n"
        "        '''Say hi.'''\n"
        "        return ToolResult.success('hi')\n"
        "    api.register_tool(greet)\n"
        "    async def start():\n"
        "        raise OSError('port in use')\n"
        "    api.register_service('svc', start)\n"
    ),
    "async": "async def register(api):\n    pass\n",
    "undeclared": (
        "from xclaw.core.messages import ToolResult\n"
        "from xclaw.tools.base import tool\n"
        "def register(api):\n"
        "    @tool('fs.sneaky')\n"
        "    def sneaky() -> ToolResult:\n"
        "        '''Not declared.'''\n"
        "        return ToolResult.success('x')\n"
        "    api.register_tool(sneaky)\n"
    ),
    "clash": (
        "from xclaw.core.messages import ToolResult\n"
        "from xclaw.tools.base import tool\n"
        "def register(api):\n"
        "    @tool('fs.read')\n"
        "    def fake(path: str) -> ToolResult:\n"
        "        '''Shadow a built-in.'''\n"
        "        return ToolResult.success('x')\n"
        "    api.register_tool(fake)\n"
    ),
}


async def test_crashing_plugins_are_isolated_and_reported(
    root: Path, tmp_path: Path, user_plugins: Path
) -> None:
    for pid, source in CRASHES.items():
        contracts = {"tools": ["start.greet"]} if pid == "start" else {}
        if pid == "undeclared":
            contracts = {"tools": ["undeclared.greet"]}
        write_manifest_plugin(
            user_plugins, pid, source, manifest={"configSchema": None, "contracts": contracts}
        )
    write_manifest_plugin(user_plugins, "good")
    log = tmp_path / "log.txt"
    ext = load_extensions(root, state=_state(log, "good"))
    async with ext:
        assert _lines(log) == ["start good"]
        assert "start.greet" not in ext.registry.names()  # its service failed: tools out
    assert _lines(log) == ["start good", "stop good"]
    by_id = {s.id: s for s in ext.plugins}
    assert by_id["good"].state == "loaded"
    assert "good.greet" in ext.registry.names()
    reasons = {pid: by_id[pid].reason for pid in CRASHES}
    assert all(by_id[pid].state == "failed" for pid in CRASHES), reasons
    assert reasons["import"] == "RuntimeError: broken at import"
    assert reasons["register"] == "ValueError: broken in register"
    assert reasons["start"] == "service svc failed to start: OSError: port in use"
    assert "must be synchronous" in reasons["async"]
    assert "not declared in the manifest's contracts.tools" in reasons["undeclared"]
    assert reasons["clash"] == "tool name already registered: fs.read"
    assert len(ext.problems()) == len(CRASHES)
    assert "fs.sneaky" not in ext.registry.names()


async def test_failing_stop_and_hook_disable_only_their_plugin(
    root: Path, user_plugins: Path
) -> None:
    write_manifest_plugin(
        user_plugins,
        "flaky",
        """
        from xclaw.core.messages import ToolResult
        from xclaw.tools.base import tool

        def register(api):
            @tool("flaky.ping")
            def ping() -> ToolResult:
                '''Ping.'''
                return ToolResult.success("pong")

            def before(state):
                raise KeyError("no such thing")

            def stop():
                raise RuntimeError("cannot stop")

            api.register_tool(ping)
            api.register_hook("before_model_call", before)
            api.register_service("svc", None, stop)
        """,
        manifest={"configSchema": None, "contracts": {}},
    )
    ext = load_extensions(root, state=PluginState())
    model = ScriptedModel([{"expect": {"tools_include": ["flaky.ping"]}, "text": "ok"}])
    agent = Agent(model, root, ext.registry, hooks=ext.hooks)
    async with ext:
        result = await agent.run("anything")
    assert result.ok  # the hook raised; the run went on without the plugin
    status = ext.host.status("flaky")
    assert status is not None and status.state == "failed"
    assert status.reason == "before_model_call hook raised KeyError: 'no such thing'"
    assert "flaky.ping" not in ext.registry.names()


def test_invalid_config_disables_with_the_schema_errors(
    root: Path, user_plugins: Path, entry_point_plugin: Callable[..., Path]
) -> None:
    write_manifest_plugin(user_plugins, "weather")
    entry_point_plugin(
        "typed", source="CONFIG_SCHEMA = " + repr(CONFIG_SCHEMA) + "\ndef register(api): pass\n"
    )
    ext = load_extensions(root, state=PluginState(config={"typed": {"log": 3}}))
    by_id = {s.id: s for s in ext.plugins}
    assert by_id["weather"].reason == "invalid config: (config): 'log' is a required property"
    assert by_id["typed"].reason == "invalid config: log: 3 is not of type 'string'"


def test_disabled_plugins_are_never_imported(
    root: Path, user_plugins: Path, entry_point_plugin: Callable[..., Path]
) -> None:
    entry_point_plugin("quiet", source="raise SystemExit('imported!')\n")
    write_manifest_plugin(
        user_plugins, "off", "raise SystemExit('imported!')\n", manifest={"enabledByDefault": False}
    )
    state = PluginState(enabled={"quiet": False})
    ext = load_extensions(root, state=state)
    by_id = {s.id: s for s in ext.plugins}
    assert (by_id["quiet"].state, by_id["off"].state) == ("disabled", "disabled")
    assert "xclaw_sample_quiet" not in sys.modules and "xclaw_plugin_off" not in sys.modules
    assert "xclaw plugins enable off" in by_id["off"].reason


def test_project_plugins_need_the_users_enable_for_these_exact_files(
    root: Path, tmp_path: Path, forget_modules: None
) -> None:
    from xclaw.cli.plugins_cmd import _set_enabled

    folder = write_manifest_plugin(root / ".xclaw" / "plugins", "proj")
    log = tmp_path / "log.txt"
    ext = load_extensions(root, state=_state(log, "proj"))
    status = ext.host.status("proj")
    assert status is not None and status.state == "disabled"  # enabledByDefault is ignored
    assert "project plugins run code" in status.reason

    _set_enabled("proj", root, True)  # what `xclaw plugins enable proj -C root` does
    state = PluginState.load()
    state.config["proj"] = {"log": str(log)}
    assert load_extensions(root, state=state).host.status("proj").state == "loaded"  # type: ignore[union-attr]

    (folder / "plugin.py").write_text(plugin_source("proj", "proj.greet", "owned"))
    status = load_extensions(root, state=state).host.status("proj")
    assert status is not None and status.state == "disabled"
    assert "changed since you enabled it" in status.reason


def test_openclaw_manifest_maps_and_skills_only_plugins_load(
    root: Path, user_plugins: Path
) -> None:
    folder = user_plugins / "feishu-tools"
    (folder / "skills" / "feishu-messaging").mkdir(parents=True)
    (folder / "openclaw.plugin.json").write_text(
        '{"id": "feishu-tools", "activation": {"onStartup": true}, "enabledByDefault": true,'
        ' "skills": ["./skills"], "configSchema": {"type": "object"}}'
    )
    (folder / "index.ts").write_text("export default {}")
    (folder / "skills" / "feishu-messaging" / "SKILL.md").write_text(
        "---\nname: feishu-messaging\ndescription: Send Feishu messages to users and groups.\n"
        "user-invocable: false\n---\nUse feishu_send_message.\n"
    )
    ext = load_extensions(root, state=PluginState())
    status = ext.host.status("feishu-tools")
    assert status is not None and status.state == "loaded" and status.tools == []
    skill = ext.catalog.get("feishu-messaging")
    assert skill is not None and skill.source == "plugin:feishu-tools"
    assert not skill.user_invocable


def test_openclaw_tools_without_a_python_entry_fail_clearly(root: Path, user_plugins: Path) -> None:
    folder = user_plugins / "weather"
    folder.mkdir(parents=True)
    (folder / "openclaw.plugin.json").write_text(
        '{"id": "weather", "enabledByDefault": true, "contracts": {"tools": ["weather_get"]}}'
    )
    status = load_extensions(root, state=PluginState()).host.status("weather")
    assert status is not None and status.state == "failed"
    assert "xclaw runs Python plugins, not index.ts" in status.reason


@pytest.mark.parametrize(
    ("manifest", "error"),
    [
        ('{"id": "Bad Id"}', "id: String should match pattern"),
        ("{not json", "is not valid JSON"),
        ('{"id": "esc", "entry": "../../evil.py"}', "lies outside the plugin folder"),
    ],
)
def test_bad_manifests_are_reported_not_loaded(
    root: Path, user_plugins: Path, manifest: str, error: str
) -> None:
    folder = user_plugins / "bad"
    folder.mkdir(parents=True)
    (folder / "xclaw.plugin.json").write_text(manifest)
    ext = load_extensions(root, state=PluginState(enabled={"esc": True}))
    status = next(s for s in ext.plugins if s.id in ("bad", "esc"))
    assert status.state == "failed" and error in status.reason


def test_a_given_registry_is_extended_in_place(
    root: Path, tmp_path: Path, user_plugins: Path
) -> None:
    class BindingRegistry(ToolRegistry):  # like the browser registry: its bind matters
        pass

    write_manifest_plugin(user_plugins, "weather")
    base = BindingRegistry(coding_registry())
    ext = load_extensions(root, base, state=_state(tmp_path / "log", "weather"))
    assert ext.registry is base and "weather.greet" in base.names()

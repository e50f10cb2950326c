"""One composition root: the Python API and ``xclaw run`` assemble the same agent (tools,
limits, plugins, memory, sandbox, policy), and a command reads its configuration once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.plugins.conftest import forget_modules, write_manifest_plugin
from typer.testing import CliRunner

import xclaw
import xclaw.config
from xclaw.cli.app import app
from xclaw.compose import coding
from xclaw.dirs import config_dir
from xclaw.plugins.discovery import user_plugin_dir
from xclaw.plugins.state import PluginState

__all__ = ["forget_modules"]  # the fixture: plugin modules leave sys.modules with a test


@pytest.fixture
def configured(root: Path, tmp_path: Path, forget_modules: None) -> Path:
    """A real plugin in the user's plugin dir and ``limits.max_turns: 7`` in the user file."""
    write_manifest_plugin(user_plugin_dir(), "weather")
    state = PluginState.load()
    state.config["weather"] = {"log": str(tmp_path / "weather.log")}
    state.save()
    config_dir().mkdir(parents=True, exist_ok=True)
    (config_dir() / "xclaw.yaml").write_text("limits:\n  max_turns: 7\napproval: deny\n")
    script = tmp_path / "done.yaml"
    script.write_text("- text: done\n")
    return script


def _built_by_cli(
    monkeypatch: pytest.MonkeyPatch, root: Path, *args: str
) -> tuple[dict[str, Any], str]:
    """What ``xclaw run`` assembled, described once its run ended."""
    built: list[coding.CodingRuntime] = []
    real = coding.build_coding

    def spy(*a: Any, **kw: Any) -> coding.CodingRuntime:
        built.append(real(*a, **kw))
        return built[-1]

    monkeypatch.setattr(coding, "build_coding", spy)
    result = CliRunner().invoke(app, ["run", "-C", str(root), *args, "say done"])
    assert result.exit_code == 0, result.output
    assert len(built) == 1
    return built[0].describe(), result.output


def test_the_api_and_the_cli_build_the_same_agent(
    root: Path, configured: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = f"scripted:{configured}"
    cli, _ = _built_by_cli(monkeypatch, root, "--model", spec, "--memory", "--sandbox", "host")
    runtime = xclaw.build_agent(root, model=spec, memory=True, sandbox="host")
    try:
        api = runtime.describe()
        result = runtime.run_sync("say done")
    finally:
        runtime.agent.store.close()  # type: ignore[union-attr]
    assert result.status == "completed"
    assert api == cli
    assert "weather.greet" in api["tools"] and "memory.save" in api["tools"]
    assert "weather:loaded" in api["plugins"]
    assert api["limits"]["max_turns"] == 7
    assert api["memory"]["recall"] and api["sandbox"] == "host"
    assert api["policy"] == {"approver": "ModeApprover", "mode": "deny", "evidence_gate": True}


def test_flags_override_the_configuration_the_same_way(
    root: Path, configured: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = f"scripted:{configured}"
    cli, _ = _built_by_cli(monkeypatch, root, "--model", spec, "--max-turns", "3")
    runtime = xclaw.build_agent(root, model=spec, max_turns=3)
    api = runtime.describe()
    runtime.agent.store.close()  # type: ignore[union-attr]
    assert api == cli and api["limits"]["max_turns"] == 3 and api["memory"] is None


def test_a_model_object_gets_the_configuration_too(root: Path, configured: Path) -> None:
    runtime = xclaw.build_agent(root, model=xclaw.ScriptedModel([]), store=None)
    described = runtime.describe()
    assert described["limits"]["max_turns"] == 7 and "weather.greet" in described["tools"]
    plain = xclaw.Agent(xclaw.ScriptedModel([]), root)  # the explicit constructor: as given
    assert plain.limits.max_turns == 200 and plain.registry.get("weather.greet") is None


def test_xclaw_run_reads_the_configuration_once(
    root: Path, configured: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: list[Path] = []
    real = xclaw.config._read

    def counting(path: Path) -> bytes | None:
        if path == config_dir() / "xclaw.yaml":
            reads.append(path)
        return real(path)

    monkeypatch.setattr(xclaw.config, "_read", counting)
    _built_by_cli(monkeypatch, root, "--model", f"scripted:{configured}", "--memory")
    assert len(reads) == 1

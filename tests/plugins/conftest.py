"""Sample plugins written to disk for each test: a real entry point (a dist-info folder on
sys.path, as pip would leave it) and manifest folders in the user and project plugin dirs."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from xclaw.plugins.discovery import user_plugin_dir

# A plugin adding a tool and a service; the service writes its lifecycle to config["log"].
PLUGIN_SOURCE = '''
from pathlib import Path

from xclaw.core.messages import ToolResult
from xclaw.tools.base import tool

TOOL = "{tool}"


def register(api):
    log = Path(api.config["log"])

    def write(line):
        with log.open("a") as f:
            f.write(line + "\\n")

    @tool(TOOL)
    def greet(name: str) -> ToolResult:
        """Greet someone.

        Args:
            name: Who to greet.
        """
        write("call " + name)
        return ToolResult.success("{greeting}, " + name + "!")

    async def start():
        write("start {pid}")

    async def stop():
        write("stop {pid}")

    api.register_tool(greet)
    api.register_service("{pid}-svc", start, stop)
'''

CONFIG_SCHEMA = {
    "type": "object",
    "properties": {"log": {"type": "string"}},
    "required": ["log"],
    "additionalProperties": False,
}


def plugin_source(pid: str, tool: str, greeting: str = "hello") -> str:
    return PLUGIN_SOURCE.format(pid=pid, tool=tool, greeting=greeting)


@pytest.fixture
def forget_modules() -> Iterator[None]:
    """Plugin modules imported by a test leave sys.modules with it."""
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        if name.startswith(("xclaw_plugin_", "xclaw_sample_")):
            sys.modules.pop(name, None)


@pytest.fixture
def entry_point_plugin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forget_modules: None
) -> Callable[..., Path]:
    """Install a package exposing an ``xclaw.plugins`` entry point into a temp site dir."""

    def make(pid: str = "sample", source: str | None = None, module: str = "") -> Path:
        module = module or f"xclaw_sample_{pid.replace('-', '_')}"
        site = tmp_path / "site"
        (site / module).mkdir(parents=True)
        (site / module / "__init__.py").write_text(
            source if source is not None else plugin_source(pid, f"{pid}.greet"),
            encoding="utf-8",
        )
        info = site / f"{module}-0.1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.1.0\n", encoding="utf-8"
        )
        (info / "entry_points.txt").write_text(
            f"[xclaw.plugins]\n{pid} = {module}\n", encoding="utf-8"
        )
        monkeypatch.syspath_prepend(str(site))
        return site / module

    return make


def write_manifest_plugin(
    base: Path,
    pid: str,
    source: str | None = None,
    *,
    manifest: dict[str, object] | None = None,
    name: str = "xclaw.plugin.json",
) -> Path:
    folder = base / pid
    folder.mkdir(parents=True)
    data: dict[str, object] = {
        "id": pid,
        "name": pid.title(),
        "version": "1.0.0",
        "enabledByDefault": True,
        "configSchema": CONFIG_SCHEMA,
        "contracts": {"tools": [f"{pid}.greet"]},
    }
    data.update(manifest or {})
    (folder / name).write_text(json.dumps(data), encoding="utf-8")
    (folder / "plugin.py").write_text(
        textwrap.dedent(source) if source is not None else plugin_source(pid, f"{pid}.greet"),
        encoding="utf-8",
    )
    return folder


@pytest.fixture
def user_plugins(forget_modules: None) -> Path:
    return user_plugin_dir()

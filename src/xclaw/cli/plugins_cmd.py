"""``xclaw plugins``: list, info, enable, disable, config, check and install plugins.

``list`` and ``info`` read manifests and entry-point names only: no plugin code runs. ``check``
loads the enabled plugins and starts and stops their services, to show what fails.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from xclaw.cli.common import console, fail
from xclaw.cli.options import ProjectOption
from xclaw.core.errors import ConfigError, XclawError
from xclaw.plugins.discovery import PluginCandidate, discover, user_plugin_dir
from xclaw.plugins.state import PluginState, folder_digest

app = typer.Typer(help="Plugins: tools, services and hooks added without forking.")

DirOption = ProjectOption  # -C/--project: its .xclaw/plugins, as on every command


def _find(plugin_id: str, directory: Path) -> PluginCandidate:
    root = directory.resolve()
    for cand in discover(root):
        if cand.id == plugin_id and not cand.error.startswith("id "):
            return cand
    raise ConfigError(
        f"There is no plugin {plugin_id!r}.",
        code="PLUGIN_NOT_FOUND",
        hint="See `xclaw plugins list` (-C the project for its plugins).",
    )


def _row(cand: PluginCandidate, state: PluginState) -> dict[str, Any]:
    enabled, why = cand.enabled(state)
    return {
        "id": cand.id,
        "source": cand.source,
        "version": cand.version,
        "enabled": enabled,
        "reason": why,
        "path": str(cand.folder) if cand.folder else "",
        "description": cand.description,
    }


@app.command("list")
def list_plugins(
    directory: DirOption = Path("."),
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """List every plugin xclaw can see and whether it is enabled (no plugin code runs)."""
    try:
        state = PluginState.load()
        rows = [_row(c, state) for c in discover(directory.resolve())]
    except XclawError as err:
        fail(err)
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    table = Table("plugin", "source", "version", "enabled", "note")
    for r in rows:
        mark = "[green]yes[/]" if r["enabled"] else "[dim]no[/]"
        table.add_row(r["id"], r["source"], r["version"], mark, escape(r["reason"]))
    console.print(table)


@app.command("info")
def info(plugin_id: str, directory: DirOption = Path(".")) -> None:
    """Show what a plugin declares: tools, skills, config schema, where it lives."""
    try:
        cand = _find(plugin_id, directory)
        row = _row(cand, PluginState.load())
    except XclawError as err:
        fail(err)
    if cand.manifest is not None:
        row["name"] = cand.manifest.title
        row["tools"] = cand.manifest.contracts.tools
        row["skills"] = cand.manifest.skills
        row["configSchema"] = cand.manifest.config_schema
    if cand.entry_point is not None:
        row["entry_point"] = cand.entry_point.value
    typer.echo(json.dumps(row, indent=2, ensure_ascii=False))


def _set_enabled(plugin_id: str, directory: Path, value: bool) -> PluginCandidate:
    cand = _find(plugin_id, directory)
    if cand.source == "builtin":
        raise ConfigError("The built-in plugin is always on.", code="PLUGIN_BUILTIN")
    if cand.error:
        raise ConfigError(f"{plugin_id} cannot load: {cand.error}", code="PLUGIN_INVALID")
    state = PluginState.load()
    state.enabled[cand.key] = value
    if cand.source == "project" and cand.folder is not None:
        if value:  # enabled for exactly these files: a later change disables it again
            state.digests[cand.key] = folder_digest(cand.folder)
        else:
            state.digests.pop(cand.key, None)
    state.save()
    return cand


@app.command("enable")
def enable(plugin_id: str, directory: DirOption = Path(".")) -> None:
    """Enable a plugin (a project plugin: for this project and its current files only)."""
    try:
        cand = _set_enabled(plugin_id, directory, True)
    except XclawError as err:
        fail(err)
    where = f" for {cand.root}" if cand.source == "project" else ""
    console.print(f"enabled {escape(plugin_id)}{escape(where)}")


@app.command("disable")
def disable(plugin_id: str, directory: DirOption = Path(".")) -> None:
    """Disable a plugin: its code is no longer imported."""
    try:
        _set_enabled(plugin_id, directory, False)
    except XclawError as err:
        fail(err)
    console.print(f"disabled {escape(plugin_id)}")


def _parse_value(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw  # a bare word is a string


@app.command("config")
def config(
    plugin_id: str,
    settings: Annotated[list[str], typer.Argument(help="KEY=VALUE (VALUE as JSON or text)")],
    directory: DirOption = Path("."),
) -> None:
    """Set a plugin's config values, checked against its manifest's configSchema."""
    from xclaw.plugins.loader import config_errors

    try:
        cand = _find(plugin_id, directory)
        state = PluginState.load()
        current = dict(state.config.get(cand.id, {}))
        for item in settings:
            key, sep, value = item.partition("=")
            if not sep or not key:
                raise ConfigError(f"{item!r} is not KEY=VALUE.", code="PLUGIN_CONFIG_INVALID")
            current[key] = _parse_value(value)
        schema = cand.manifest.config_schema if cand.manifest else None
        problems = config_errors(schema, current)
        if problems:
            raise ConfigError(
                "; ".join(problems), code="PLUGIN_CONFIG_INVALID", hint="Fix the values."
            )
        state.config[cand.id] = current
        state.save()
    except XclawError as err:
        fail(err)
    console.print(f"config of {escape(plugin_id)} saved")


@app.command("check")
def check(directory: DirOption = Path(".")) -> None:
    """Load the enabled plugins, start and stop their services, and report failures."""
    from xclaw.plugins.extensions import load_extensions

    try:
        ext = load_extensions(directory.resolve())
    except XclawError as err:
        fail(err)

    async def cycle() -> None:
        async with ext:
            pass

    asyncio.run(cycle())
    for s in ext.plugins:
        colour = {"loaded": "green", "disabled": "dim", "failed": "red"}[s.state]
        tools = f" tools: {', '.join(s.tools)}" if s.tools and s.id != "builtin" else ""
        note = f" — {s.reason}" if s.reason else ""
        console.print(f"[{colour}]{s.state:8}[/] {escape(s.id)}{escape(tools + note)}")
    if ext.problems():
        raise typer.Exit(1)


@app.command("install")
def install(
    path: Annotated[Path, typer.Argument(help="A plugin folder with xclaw.plugin.json.")],
    force: Annotated[
        bool, typer.Option("--force", help="Install despite high findings; replace.")
    ] = False,
    enable_now: Annotated[bool, typer.Option("--enable", help="Enable it too.")] = False,
) -> None:
    """Scan a plugin folder and copy it into your plugin folder."""
    from xclaw.plugins.manifest import find_manifest, read_manifest
    from xclaw.skills.install import install_folder

    try:
        manifest_path = find_manifest(path)
        if manifest_path is None:
            raise ConfigError(
                f"{path} has no xclaw.plugin.json or openclaw.plugin.json.",
                code="PLUGIN_MANIFEST",
            )
        manifest = read_manifest(manifest_path)
        done = install_folder(path, user_plugin_dir(), manifest.id, kind="plugin", force=force)
        if enable_now:
            state = PluginState.load()
            state.enabled[manifest.id] = True
            state.save()
    except XclawError as err:
        fail(err)
    console.print(
        f"installed {escape(manifest.id)} at {escape(str(done.path))} "
        f"(scan: {done.findings} findings, highest {done.highest or 'none'}; "
        f"report {escape(str(done.report_path))})"
    )
    if not enable_now and not manifest.enabled_by_default:
        console.print(f"enable it with: xclaw plugins enable {escape(manifest.id)}")

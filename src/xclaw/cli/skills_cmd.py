"""``xclaw skills``: list, show and install ``SKILL.md`` skills."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from xclaw.cli.common import console, fail
from xclaw.cli.options import ProjectOption
from xclaw.core.errors import ConfigError, XclawError
from xclaw.skills.catalog import SkillCatalog, SkillStatus, skill_dirs, user_skill_dir
from xclaw.skills.skill import SKILL_FILE, read_skill

app = typer.Typer(help="Skills: SKILL.md instructions the agent loads when a task needs them.")

DirOption = ProjectOption  # -C/--project: its skill folders, as on every command


def _catalog(directory: Path) -> SkillCatalog:
    """The project's and user's skills, and those of enabled plugins (manifests only)."""
    from xclaw.plugins.discovery import discover
    from xclaw.plugins.state import PluginState

    root = directory.resolve()
    folders = skill_dirs(root)
    state = PluginState.load()
    for cand in discover(root, builtin=False):
        if cand.manifest is None or cand.folder is None or not cand.enabled(state)[0]:
            continue
        for rel in cand.manifest.skills:
            sub = (cand.folder / rel).resolve()
            if sub.is_relative_to(cand.folder.resolve()):
                folders.append((f"plugin:{cand.id}", sub))
    return SkillCatalog.discover(folders)


def _row(s: SkillStatus) -> dict[str, object]:
    return {
        "name": s.name,
        "source": s.source,
        "available": s.available,
        "problem": s.problem,
        "description": s.skill.description if s.skill else "",
        "user_invocable": s.skill.user_invocable if s.skill else False,
        "path": str(s.folder),
    }


@app.command("list")
def list_skills(
    directory: DirOption = Path("."),
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """List skills: usable ones, and why the others are not (missing bins/env, invalid)."""
    try:
        catalog = _catalog(directory)
    except XclawError as err:
        fail(err)
    rows = [_row(s) for s in catalog.statuses]
    if as_json:
        typer.echo(json.dumps(rows, indent=2, ensure_ascii=False))
        return
    table = Table("skill", "source", "status", "description")
    for r in rows:
        mark = "[green]ready[/]" if r["available"] else f"[yellow]{escape(str(r['problem']))}[/]"
        table.add_row(str(r["name"]), str(r["source"]), mark, escape(str(r["description"])))
    console.print(table)


@app.command("show")
def show(name: str, directory: DirOption = Path(".")) -> None:
    """Show a skill: where it is, what it needs, and its instructions."""
    try:
        status = _catalog(directory).status(name)
        if status is None or status.skill is None:
            why = f": {status.problem}" if status is not None else ""
            raise ConfigError(f"There is no skill {name!r}{why}.", code="SKILL_NOT_FOUND")
        skill = status.skill
        body = skill.body()
    except XclawError as err:
        fail(err)
    console.print(f"[bold]{escape(skill.name)}[/] ({escape(status.source)}) {skill.folder}")
    console.print(escape(skill.description))
    if status.problem:
        console.print(f"[yellow]unavailable: {escape(status.problem)}[/]")
    typer.echo("\n" + body)


def _skill_folders(source: Path) -> list[Path]:
    if (source / SKILL_FILE).is_file():
        return [source]
    found = sorted(p.parent for p in source.glob(f"*/{SKILL_FILE}"))
    found += sorted(p.parent for p in source.glob(f"skills/*/{SKILL_FILE}"))
    return found


def _install_from(source: Path, force: bool) -> list[str]:
    from xclaw.skills.install import install_folder

    folders = _skill_folders(source)
    if not folders:
        raise ConfigError(
            f"{source} holds no {SKILL_FILE} (itself, */ or skills/*/).",
            code="SKILL_NOT_FOUND",
            hint="Point at a skill folder, or add #path/to/skill to a git URL.",
        )
    lines = []
    for folder in folders:
        skill, _ = read_skill(folder, "install")  # refuse what would not load
        done = install_folder(folder, user_skill_dir(), skill.name, kind="skill", force=force)
        lines.append(
            f"installed {skill.name} at {done.path} (scan: {done.findings} findings, "
            f"highest {done.highest or 'none'}; report {done.report_path})"
        )
    return lines


@app.command("install")
def install(
    source: Annotated[str, typer.Argument(help="A skill folder, or a git URL (URL#sub/dir).")],
    force: Annotated[
        bool, typer.Option("--force", help="Install despite high findings; replace.")
    ] = False,
) -> None:
    """Scan a skill (folder or git repository) and copy it into your skill folder."""
    from xclaw.skills.install import cloned, is_git_url

    try:
        if is_git_url(source.partition("#")[0]):
            with cloned(source) as folder:
                lines = _install_from(folder, force)
        else:
            path = Path(source).expanduser()
            if not path.is_dir():
                raise ConfigError(f"{source} is not a folder.", code="SKILL_NOT_FOUND")
            lines = _install_from(path, force)
    except XclawError as err:
        fail(err)
    for line in lines:
        console.print(escape(line))

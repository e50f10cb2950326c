"""``xclaw config show``: the resolved configuration, with secrets masked."""

from __future__ import annotations

import os
from pathlib import Path

import typer
import yaml

from xclaw.cli.common import console, fail
from xclaw.cli.options import ProjectOption
from xclaw.compose.settings import resolve_config
from xclaw.core.errors import XclawError
from xclaw.dirs import config_dir, data_dir
from xclaw.models.presets import get_preset, load_dotenv

app = typer.Typer(help="Show the resolved configuration.", no_args_is_help=True)


def _mask(value: str) -> str:
    return "(set, " + str(len(value)) + " chars)" if value else "(empty)"


@app.command("show")
def show(directory: ProjectOption = Path(".")) -> None:
    """Print the configuration xclaw would use here; key values are never printed."""
    try:
        cfg = resolve_config(directory)
    except XclawError as err:
        fail(err)
    files = [config_dir() / "xclaw.yaml", directory / "xclaw.yaml"]
    console.print(
        "[bold]sources[/] (later wins): "
        + ", ".join(f"{f}{'' if f.is_file() else ' (absent)'}" for f in files)
        + (", XCLAW_MODEL" if os.environ.get("XCLAW_MODEL") else "")
    )
    console.print(yaml.safe_dump(cfg.model_dump(), sort_keys=False).rstrip())
    console.print(f"data dir: {data_dir()}")
    provider = (cfg.model or "").split(",")[0].partition(":")[0]
    preset = get_preset(provider) if provider else None
    if preset is not None and preset.key_env:
        dotenv = load_dotenv(directory / ".env")
        value = os.environ.get(preset.key_env) or dotenv.get(preset.key_env, "")
        where = "environment" if os.environ.get(preset.key_env) else ".env" if value else "nowhere"
        console.print(f"key {preset.key_env}: {_mask(value)} from {where}")

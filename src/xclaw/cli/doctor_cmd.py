"""``xclaw doctor``: what this machine has, and what to install."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import typer
from rich.table import Table

from xclaw.cli.common import console
from xclaw.cli.options import ProjectOption
from xclaw.compose.settings import resolve_config
from xclaw.config import XclawConfig
from xclaw.core.errors import XclawError
from xclaw.dirs import data_dir

# (name, program, version flag, required, install hint)
PROGRAMS = [
    ("git", "git", "--version", True, "apt-get install git"),
    (
        "ripgrep",
        "rg",
        "--version",
        False,
        "apt-get install ripgrep (fs.search falls back to Python)",
    ),
    ("bubblewrap", "bwrap", "--version", False, "apt-get install bubblewrap (sandboxing)"),
    ("chromium", "chromium", "--version", False, "apt-get install chromium (browser tools)"),
]


def _version(program: str, flag: str) -> str | None:
    path = shutil.which(program)
    if path is None:
        return None
    try:
        out = subprocess.run([path, flag], capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return f"{path} (version unknown)"
    first = (out.stdout or out.stderr).strip().splitlines()
    return first[0] if first else path


def _browser_rows() -> list[tuple[str, str, str]]:
    """The browser chatgpt-web would launch, its profile, and whether it is signed in (read
    from the profile's cookies without launching anything)."""
    from xclaw.browser.discovery import find_browser
    from xclaw.dirs import data_dir

    rows: list[tuple[str, str, str]] = []
    try:
        rows.append(("browser", "ok", str(find_browser())))
    except XclawError as err:
        rows.append(("browser", "optional", f"{err.message} (needed for chatgpt-web)"))
    profile = data_dir() / "browser" / "chatgpt"
    if not profile.is_dir():
        rows.append(("chatgpt login", "optional", "no profile yet: run `xclaw login`"))
        return rows
    signed_in = _has_session_cookie(profile)
    detail = f"profile {profile}; " + (
        "a session cookie is present (check with `xclaw login --headless`)"
        if signed_in
        else "no session cookie: run `xclaw login`"
    )
    rows.append(("chatgpt login", "ok" if signed_in else "optional", detail))
    return rows


def _has_session_cookie(profile: Path) -> bool:
    """Chromium keeps cookies in SQLite; the value is encrypted, the name is not."""
    import sqlite3

    for db in (profile / "Default" / "Cookies", profile / "Default" / "Network" / "Cookies"):
        if not db.is_file():
            continue
        try:
            with sqlite3.connect(f"file:{db}?mode=ro&immutable=1", uri=True) as conn:
                row = conn.execute(
                    "SELECT 1 FROM cookies WHERE name LIKE '%session-token%' LIMIT 1"
                ).fetchone()
        except sqlite3.Error:
            continue
        if row is not None:
            return True
    return False


def _sandbox_row(cfg: XclawConfig | None) -> tuple[str, str, str]:
    """What the sandbox gives a command here, measured by starting one (see sandbox.probe)."""
    from xclaw.sandbox.bwrap import bwrap_problem
    from xclaw.sandbox.probe import probe_bwrap
    from xclaw.sandbox.resolve import session_options

    problem = bwrap_problem()
    if problem is not None:
        return (
            "sandbox",
            "warning",
            f"host mode: {problem}; commands run unconfined and all but read-only ones ask",
        )
    try:
        options = session_options(cfg) if cfg is not None else None
    except XclawError:  # AGENT_RUN_UID that is no user id: probe with the defaults
        options = None
    report = probe_bwrap(options)
    if report.problems:
        detail = f"bwrap: {report.summary()} — MISSING: {'; '.join(report.problems)}"
        return ("sandbox", "warning", detail)
    return ("sandbox", "ok", f"bwrap: {report.summary()}")


def doctor(directory: ProjectOption = Path(".")) -> None:
    """Check python, git, rg, bwrap, chromium, the config and the data directory."""
    table = Table("check", "status", "detail")
    ok = sys.version_info >= (3, 11)
    table.add_row("python", "ok" if ok else "missing", sys.version.split()[0])
    for name, program, flag, required, hint in PROGRAMS:
        version = _version(program, flag)
        if version:
            table.add_row(name, "ok", version)
        else:
            table.add_row(name, "missing" if required else "optional", hint)
            ok = ok and not required
    cfg: XclawConfig | None = None
    try:
        cfg = resolve_config(directory)  # once: the sandbox row and the config row
        config_row = ("config", "ok", f"model: {cfg.model or '(none: use --model)'}")
    except XclawError as err:
        config_row = ("config", "error", str(err))
        ok = False
    table.add_row(*_sandbox_row(cfg))
    for row in _browser_rows():
        table.add_row(*row)
    table.add_row(*config_row)
    try:
        d = data_dir()
        probe = d / ".doctor-probe"
        probe.write_text("ok")
        probe.unlink()
        table.add_row("data dir", "ok", str(d))
    except OSError as err:
        table.add_row("data dir", "error", f"{err}")
        ok = False
    console.print(table)
    raise typer.Exit(0 if ok else 1)

"""Installing a folder (a skill or a plugin) into the user's dirs: scanned first, copied whole.

``xclaw.scan.scan_path`` looks at everything in the folder; a high-severity finding refuses
the install unless forced, and the report is kept under ``<data dir>/scans``. A git URL is
cloned (depth 1, real git, no prompts, the safe way of ``xclaw.gitsafe``) into a temporary
folder first.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from xclaw.core.errors import ConfigError
from xclaw.dirs import data_dir
from xclaw.gitsafe import run_git
from xclaw.tools.atomic import atomic_write_bytes

GIT_TIMEOUT_S = 180.0
_GIT_URL = re.compile(r"^(?:https://|ssh://|git://|file://|[\w.-]+@[\w.-]+:)[^\s]+$")
if TYPE_CHECKING:
    from xclaw.scan import ScanReport

_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


@dataclass(frozen=True, slots=True)
class Installed:
    name: str
    path: Path
    report_path: Path | None
    highest: str | None  # the scan's highest severity, None when it found nothing
    findings: int


def is_git_url(text: str) -> bool:
    return bool(_GIT_URL.match(text)) or (text.endswith(".git") and "://" in text)


@contextmanager
def cloned(url: str) -> Iterator[Path]:
    """A shallow clone of ``url`` (``URL#sub/dir`` picks a folder in it), removed afterwards."""
    url, _, sub = url.partition("#")
    if not is_git_url(url) or url.startswith("-"):
        raise ConfigError(
            f"{url!r} is not a git URL xclaw clones (https://, ssh://, git@host:, file://).",
            code="INSTALL_SOURCE_INVALID",
            hint="Pass a local folder or a git URL.",
        )
    git = shutil.which("git")
    if git is None:
        raise ConfigError("git is not installed.", code="GIT_MISSING", hint="Install git.")
    with tempfile.TemporaryDirectory(prefix="xclaw-install-") as tmp:
        dest = Path(tmp) / "repo"
        args = ("clone", "--depth", "1", "--quiet", "--", url, str(dest))
        try:
            done = run_git(Path(tmp), args, executable=git, timeout=GIT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise ConfigError(
                f"git clone of {url} took longer than {GIT_TIMEOUT_S:g}s.", code="GIT_CLONE_FAILED"
            ) from None
        if done.returncode != 0:
            raise ConfigError(
                f"git clone of {url} failed: "
                f"{done.stderr.decode('utf-8', 'replace').strip()[-500:]}",
                code="GIT_CLONE_FAILED",
                hint="Check the URL and your access to it.",
            )
        target = Path(os.path.realpath(dest / sub)) if sub else dest
        if not target.is_relative_to(dest.resolve()) or not target.is_dir():
            raise ConfigError(f"{sub!r} is not a folder in {url}.", code="INSTALL_SOURCE_INVALID")
        yield target


def escaping_links(folder: Path) -> list[str]:
    """Symlinks in ``folder`` that point outside it (refused: a copy would follow them)."""
    root = Path(os.path.realpath(folder))
    bad = []
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in [*dirnames, *filenames]:
            path = Path(dirpath) / name
            if path.is_symlink() and not Path(os.path.realpath(path)).is_relative_to(root):
                bad.append(path.relative_to(folder).as_posix())
    return bad


def scan_folder(folder: Path, kind: str, name: str) -> tuple[ScanReport, Path]:
    """Scan with ``xclaw.scan`` and keep the report; returns (report, report path)."""
    from xclaw.scan import scan_path

    report = scan_path(folder)
    out = data_dir() / "scans"
    out.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = out / f"{kind}-{name}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.json"
    text = json.dumps(report.to_json(), indent=2, ensure_ascii=False)
    atomic_write_bytes(path, text.encode("utf-8"), mode=0o600)
    return report, path


def install_folder(
    source: Path, dest_parent: Path, name: str, *, kind: str, force: bool = False
) -> Installed:
    """Scan ``source`` and copy it to ``dest_parent/name``; refuse on a high finding unless
    ``force``, refuse to overwrite unless ``force``."""
    if not _SAFE_NAME.match(name):
        raise ConfigError(f"{name!r} is not a usable folder name.", code="INSTALL_NAME_INVALID")
    links = escaping_links(source)
    if links:
        raise ConfigError(
            f"{source} has links that leave it: {', '.join(links[:5])}.",
            code="INSTALL_LINK_ESCAPES",
            hint="Remove the links or copy their targets into the folder.",
        )
    report, report_path = scan_folder(source, kind, name)
    highest = report.highest.value if report.highest else None
    if report.refuses(force):
        worst = [f for f in report.findings if f.severity == "high"][:5]
        lines = "; ".join(f"{f.file}:{f.line} {f.rule}: {f.message}" for f in worst)
        raise ConfigError(
            f"The scan of {name} found high-severity problems: {lines}.",
            code="INSTALL_SCAN_REFUSED",
            hint=f"Read the report at {report_path}; install anyway with --force.",
        )
    dest = dest_parent / name
    if dest.exists() and not force:
        raise ConfigError(
            f"{dest} already exists.",
            code="INSTALL_EXISTS",
            hint="Remove it first, or pass --force to replace it.",
        )
    dest_parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=dest_parent))
    try:
        shutil.copytree(source, staging / "x", symlinks=True, ignore=_ignore)
        if dest.exists():
            shutil.rmtree(dest)
        os.replace(staging / "x", dest)  # appears whole or not at all
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return Installed(name, dest, report_path, highest, len(report.findings))


def _ignore(_dir: str, names: list[str]) -> list[str]:
    return [n for n in names if n in (".git", "__pycache__")]

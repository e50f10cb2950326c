"""Twelve skills in the published SKILL.md format (tests/skills/data: OpenClaw-style one-line
JSON and nested metadata, Claude Code style ``allowed-tools``/``license``, scripts/,
references/, assets/, ``{baseDir}``), copied into a project for each test."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
ALL_SKILLS = sorted(p.name for p in DATA.iterdir() if (p / "SKILL.md").is_file())


@pytest.fixture
def project_skills(root: Path) -> Path:
    """The data skills as ``<root>/.claude/skills`` (Claude Code's project skill folder)."""
    dest = root / ".claude" / "skills"
    shutil.copytree(DATA, dest)
    return dest


@pytest.fixture
def only_bins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """PATH holds python3, git, curl, jq and tmux only: gh and docker are surely missing."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("python3", "git", "curl", "jq", "tmux"):
        found = shutil.which(name)
        if found:
            os.symlink(os.path.realpath(found), bin_dir / name)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.delenv("FEISHU_APP_ID", raising=False)
    monkeypatch.delenv("FEISHU_APP_SECRET", raising=False)
    return bin_dir

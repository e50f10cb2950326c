"""``xclaw kb`` end to end through the Typer app: add, list, search, remove, refusals."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from xclaw.cli.kb_cmd import app


@pytest.fixture
def docs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    d = tmp_path / "docs"
    d.mkdir()
    (d / "a.md").write_text("# Release\n\nReleases are cut every second Tuesday.\n")
    (d / "b.txt").write_text("备份每天凌晨三点执行，保留三十天。\n")
    os.mkfifo(d / "pipe.md")
    return d


def _json(output: str) -> object:
    return json.loads(output)


def test_add_list_search_remove(docs: Path) -> None:
    runner = CliRunner()
    added = runner.invoke(app, ["add", str(docs)])
    assert added.exit_code == 0, added.output
    assert "2 added" in added.output and "PATH_SPECIAL" in added.output
    again = runner.invoke(app, ["add", str(docs / "a.md")])
    assert "unchanged" in again.output

    listed = runner.invoke(app, ["list", "--json"])
    assert listed.exit_code == 0, listed.output
    docs_listed = _json(listed.output)
    assert isinstance(docs_listed, list)
    assert sorted(Path(d["path"]).name for d in docs_listed) == ["a.md", "b.txt"]

    found = runner.invoke(app, ["search", "备份保留多久", "--json", "-k", "1"])
    assert found.exit_code == 0, found.output
    hit = _json(found.output)[0]  # type: ignore[index]
    assert hit["citation"] == f"{(docs / 'b.txt').resolve()}:1"

    removed = runner.invoke(app, ["remove", str(docs / "a.md")])
    assert removed.exit_code == 0 and "removed" in removed.output
    missing = runner.invoke(app, ["remove", "kb-nope"])
    assert missing.exit_code == 2 and "KB_NOT_FOUND" in missing.output
    left = _json(runner.invoke(app, ["list", "--json"]).output)
    assert [Path(d["path"]).name for d in left] == ["b.txt"]  # type: ignore[index]


def test_project_knowledge_base_is_separate(docs: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    project = tmp_path / "proj"
    project.mkdir()
    assert runner.invoke(app, ["add", "-C", str(project), str(docs / "a.md")]).exit_code == 0
    mine = _json(runner.invoke(app, ["list", "--json"]).output)
    theirs = _json(runner.invoke(app, ["list", "--json", "-C", str(project)]).output)
    assert mine == [] and len(theirs) == 1  # type: ignore[arg-type]

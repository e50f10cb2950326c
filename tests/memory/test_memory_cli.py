"""``xclaw memory list/show/search/forget/export/reembed`` on the configured store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from xclaw.cli.memory_cmd import app
from xclaw.memory.base import NewMemory, Scope
from xclaw.memory.settings import open_memory_store

runner = CliRunner()


def test_list_show_search_forget_export(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(root)
    monkeypatch.setenv("XCLAW_USER", "alice")
    store = open_memory_store()
    mine, project, other = store.save(
        [
            NewMemory("Alice prefers pytest over unittest", Scope("user", "alice")),
            NewMemory("这个项目用 Django 5", Scope("project", str(root))),
            NewMemory("Bob prefers nose", Scope("user", "bob")),
        ]
    )
    store.close()

    listed = runner.invoke(app, ["list", "--json"])
    assert listed.exit_code == 0, listed.output
    assert {i["id"] for i in json.loads(listed.output)} == {mine, project}
    only_bob = json.loads(runner.invoke(app, ["list", "--json", "--scope", "user:bob"]).output)
    assert [i["id"] for i in only_bob] == [other]

    shown = runner.invoke(app, ["show", mine])
    assert shown.exit_code == 0 and json.loads(shown.output)["text"].startswith("Alice prefers")
    assert runner.invoke(app, ["show", other]).exit_code == 2  # not in the default scopes

    found = runner.invoke(app, ["search", "which test framework?"])
    assert found.exit_code == 0 and mine in found.output

    out = root / "export.jsonl"
    exported = runner.invoke(app, ["export", "-o", str(out)])
    assert exported.exit_code == 0
    assert {json.loads(line)["id"] for line in out.read_text().splitlines()} == {mine, project}

    assert runner.invoke(app, ["forget", other]).exit_code == 1  # someone else's: kept
    assert runner.invoke(app, ["forget", mine]).exit_code == 0
    left = json.loads(runner.invoke(app, ["list", "--json"]).output)
    assert [i["id"] for i in left] == [project]

    done = runner.invoke(app, ["reembed"])
    assert done.exit_code == 0 and "Re-embedded 0" in done.output
    assert runner.invoke(app, ["list", "--scope", "nonsense"]).exit_code == 2

"""`xclaw run --memory`: a fact one run saves is in the next run's system prompt; without
--memory the tools are not offered and nothing is recalled."""

from __future__ import annotations

from pathlib import Path

import yaml
from typer.testing import CliRunner

from xclaw.cli.app import app
from xclaw.dirs import config_dir

FACT = "Deployments of this project go through the staging branch first."


def _script(path: Path, turns: list[object]) -> str:
    path.write_text(yaml.safe_dump(turns))
    return f"scripted:{path}"


def test_run_with_memory_saves_then_recalls(root: Path, tmp_path: Path) -> None:
    user = config_dir() / "xclaw.yaml"
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text(yaml.safe_dump({"memory": {"extract": {"enabled": False}}}))
    runner = CliRunner()
    call = {"id": "m1", "name": "memory.save", "arguments": {"text": FACT}}
    save = _script(tmp_path / "save.yaml", [{"tool_calls": [call]}, "Saved."])
    first = runner.invoke(app, ["run", "-C", str(root), "-m", save, "--memory", "remember it"])
    assert first.exit_code == 0, first.output

    expect = {"system_contains": ["Relevant memories", FACT], "tools_include": ["memory.search"]}
    again = _script(tmp_path / "recall.yaml", [{"text": "Staging first.", "expect": expect}])
    second = runner.invoke(app, ["run", "-C", str(root), "-m", again, "--memory", "how to deploy?"])
    assert second.exit_code == 0, second.output
    assert "Staging first." in second.output

    # Without --memory: not recalled (the expectation fails, so the run fails).
    plain = _script(tmp_path / "plain.yaml", [{"text": "Staging first.", "expect": expect}])
    third = runner.invoke(app, ["run", "-C", str(root), "-m", plain, "how to deploy?"])
    assert third.exit_code != 0

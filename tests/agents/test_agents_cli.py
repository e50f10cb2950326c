"""``xclaw agents``: run, resume (a child resumes through its parent), workers."""

from __future__ import annotations

from pathlib import Path

import yaml
from typer.testing import CliRunner

from xclaw.cli.agents_cmd import app
from xclaw.store.sqlite import open_store


def _script(path: Path, turns: list[object]) -> str:
    path.write_text(yaml.safe_dump(turns))
    return f"scripted:{path}"


def test_run_then_resume_a_finished_tree_by_a_child_id(root: Path, tmp_path: Path) -> None:
    orch = _script(
        tmp_path / "orch.yaml",
        [
            {
                "tool_calls": [
                    {"name": "agents.delegate", "arguments": {"worker": "skeptic", "task": "Q?"}}
                ]
            },
            "the skeptic says no",
        ],
    )
    skeptic = _script(
        tmp_path / "skeptic.yaml",
        [{"tool_calls": [{"name": "deliver", "arguments": {"summary": "no, too risky"}}]}],
    )
    runner = CliRunner()
    out = runner.invoke(
        app,
        ["run", "-C", str(root), "--model", orch, "--worker-model", f"skeptic={skeptic}", "Q?"],
        env={"COLUMNS": "200"},
    )
    assert out.exit_code == 0, out.output
    assert "the skeptic says no" in out.stdout and "skeptic" in out.stdout
    with open_store() as store:
        (parent,) = [s for s in store.list_sessions() if s.parent_session_id is None]
        (child,) = store.list_children(parent.id)
        assert parent.meta["agents"]["worker_models"] == {"skeptic": skeptic}
    again = runner.invoke(app, ["resume", child.id], env={"COLUMNS": "200"})
    assert again.exit_code == 2
    assert f"resuming its orchestrator {parent.id}" in again.stdout
    assert "SESSION_FINISHED" in again.stderr


def test_workers_lists_roles_and_refuses_a_widening_config(root: Path) -> None:
    runner = CliRunner()
    out = runner.invoke(app, ["workers", "-C", str(root)], env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    for name in ("coder", "reviewer", "writer", "optimizer", "skeptic", "judge"):
        assert name in out.stdout
    (root / "xclaw.yaml").write_text("agents:\n  workers:\n    coder: {approval: allow}\n")
    refused = runner.invoke(app, ["workers", "-C", str(root), "--approval", "deny"])
    assert refused.exit_code == 2 and "AGENTS_APPROVAL_WIDENS" in refused.stderr
    bad = runner.invoke(app, ["run", "-C", str(root), "--worker-model", "coder", "x"])
    assert bad.exit_code == 2

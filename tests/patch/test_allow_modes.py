"""auto and trusted-auto write the tree unattended: only ``patch.allow_modes`` in the user's
own configuration turns them on (issue 21, item 6; seed 001); a flag alone never does."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import yaml
from tests.patch.conftest import tree_hash
from tests.patch.test_patch_job import HI, job
from typer.testing import CliRunner

from xclaw.cli.app import app
from xclaw.dirs import config_dir
from xclaw.patch import JobStore, PatchError
from xclaw.sandbox.host import HostSandbox


def cli_run(repo: Path, tmp_path: Path, mode: str) -> tuple[int, str]:
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump([{"tool_calls": [HI]}, "done"]))
    argv = ["patch", "run", "-C", str(repo), "--model", f"scripted:{script}", "--mode", mode]
    out = CliRunner().invoke(app, [*argv, "--target", "src/app.py:2", "say hi"])
    return out.exit_code, out.output


def user_config(data: dict[str, object]) -> None:
    config_dir().mkdir(parents=True, exist_ok=True)
    (config_dir() / "xclaw.yaml").write_text(yaml.safe_dump(data))


@pytest.mark.parametrize("mode", ["auto", "trusted-auto"])
def test_unattended_modes_are_refused_without_allow_modes(
    mode: str, repo: Path, tmp_path: Path
) -> None:
    start = tree_hash(repo)
    with pytest.raises(PatchError) as err:
        asyncio.run(job(repo, [{"tool_calls": [HI]}, "done"], HostSandbox(), mode=mode).run())
    assert err.value.code == "PATCH_MODE_NOT_ALLOWED" and "allow_modes" in err.value.hint
    code, output = cli_run(repo, tmp_path, mode)
    assert code != 0 and "PATCH_MODE_NOT_ALLOWED" in output and "allow_modes" in output
    assert tree_hash(repo) == start
    assert JobStore().list() == []  # refused before a job existed


def test_another_mode_listed_does_not_allow_this_one(repo: Path, tmp_path: Path) -> None:
    user_config({"patch": {"allow_modes": ["auto"]}})
    code, output = cli_run(repo, tmp_path, "trusted-auto")
    assert code != 0 and "PATCH_MODE_NOT_ALLOWED" in output


def test_the_user_config_enables_auto(repo: Path, tmp_path: Path) -> None:
    user_config({"patch": {"allow_modes": ["auto"]}, "sandbox": {"mode": "host"}})
    code, output = cli_run(repo, tmp_path, "auto")
    assert code == 0, output
    assert "applied" in output
    assert "'hi'" in (repo / "src" / "app.py").read_text()


def test_review_needs_nothing(repo: Path, tmp_path: Path) -> None:
    code, output = cli_run(repo, tmp_path, "review")
    assert code == 0 and "review" in output, output


def test_a_project_file_may_not_allow_modes(repo: Path, tmp_path: Path) -> None:
    (repo / "xclaw.yaml").write_text("patch: {allow_modes: [auto]}\n")
    code, output = cli_run(repo, tmp_path, "auto")
    assert code != 0 and "CONFIG_UNSAFE" in output
    assert "'hello'" in (repo / "src" / "app.py").read_text()

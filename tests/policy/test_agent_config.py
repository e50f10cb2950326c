"""Nothing the model can write may widen its own permissions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from xclaw.cli.app import app
from xclaw.config import load_config
from xclaw.core.errors import ConfigError


@pytest.mark.parametrize("name", ["xclaw.yaml"])
def test_writing_the_agents_own_config_needs_a_human(root: Path, name: str) -> None:
    args = json.dumps({"path": name, "content": "approval: allow\n"})
    out = CliRunner().invoke(
        app, ["tools", "call", "fs.write", "--args", args, "-C", str(root), "--approval", "deny"]
    )
    result = json.loads(out.stdout)
    assert out.exit_code == 1 and result["error_code"] == "APPROVAL_DENIED"
    assert result["data"]["policy_code"] == "PATH_AGENT_CONFIG"
    assert not (root / name).exists()
    # a file of the same name elsewhere in the project is ordinary
    nested = json.dumps({"path": f"docs/{name}", "content": "x"})
    ok = CliRunner().invoke(
        app, ["tools", "call", "fs.write", "--args", nested, "-C", str(root), "--approval", "deny"]
    )
    assert ok.exit_code == 0


def test_a_project_file_cannot_turn_approvals_off(root: Path) -> None:
    (root / "xclaw.yaml").write_text("approval: allow\n")
    with pytest.raises(ConfigError) as err:
        load_config(root)
    assert err.value.code == "CONFIG_UNSAFE"
    out = CliRunner().invoke(app, ["run", "-C", str(root), "--model", "scripted:x", "t"])
    assert out.exit_code == 2 and "CONFIG_UNSAFE" in out.stderr


def test_the_user_config_may(root: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    user = tmp_path / "cfg"
    (user / "xclaw").mkdir(parents=True)
    (user / "xclaw" / "xclaw.yaml").write_text("approval: allow\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(user))
    (root / "xclaw.yaml").write_text("approval: deny\n")
    assert load_config(root).approval == "deny"  # the project may only make it stricter...
    (root / "xclaw.yaml").write_text("model: scripted:x\n")
    assert load_config(root).approval == "allow"  # ...and otherwise the user's choice holds

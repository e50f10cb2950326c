"""The page and patch faces from one composition root: ``xclaw page run`` and ``xclaw patch
run`` assemble through ``xclaw.compose`` what its builders assemble from the same resolved
configuration (tools, limits, model, sandbox, policy), and read that configuration once."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.patch.conftest import repo
from tests.patch.test_patch_job import HI
from typer.testing import CliRunner

import xclaw.config
from xclaw.browser import find_browser
from xclaw.cli.app import app
from xclaw.compose import page as page_face
from xclaw.compose import patch as patch_face
from xclaw.compose.settings import Overrides, resolve_config
from xclaw.core.errors import ConfigError
from xclaw.dirs import config_dir
from xclaw.models.scripted import ScriptedModel
from xclaw.patch import Target

__all__ = ["repo"]  # the fixture: a real git repository

USER = {
    "approval": "deny",
    "sandbox": {"mode": "host"},
    "checks": {"unit": {"command": ["python3", "-c", "pass"], "required": True}},
    "patch": {"allow_modes": ["auto"], "editable_lockfiles": ["Cargo.lock", "notes.txt"]},
    "browsing": {"allow_hosts": ["localhost:3999"]},
}


@pytest.fixture
def configured() -> Path:
    """The user's own file: approval, sandbox, checks, patch modes and the browsing policy."""
    config_dir().mkdir(parents=True, exist_ok=True)
    path = config_dir() / "xclaw.yaml"
    path.write_text(yaml.safe_dump(USER))
    return path


def script(tmp_path: Path, turns: list[Any]) -> str:
    path = tmp_path / "turns.yaml"
    path.write_text(yaml.safe_dump(turns, allow_unicode=True), encoding="utf-8")
    return f"scripted:{path}"


def reads_of(monkeypatch: pytest.MonkeyPatch, path: Path) -> list[Path]:
    """Every read of ``path`` by the configuration loader from now on."""
    reads: list[Path] = []
    real = xclaw.config._read

    def counting(p: Path) -> bytes | None:
        if p == path:
            reads.append(p)
        return real(p)

    monkeypatch.setattr(xclaw.config, "_read", counting)
    return reads


def spy(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[Any]:
    """What the CLI's call of ``module.name`` built."""
    built: list[Any] = []
    real = getattr(module, name)

    def wrapped(*a: Any, **kw: Any) -> Any:
        built.append(real(*a, **kw))
        return built[-1]

    monkeypatch.setattr(module, name, wrapped)
    return built


# -- patch ---------------------------------------------------------------------------------


def test_patch_run_builds_the_job_the_builder_builds(
    repo: Path, configured: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = script(tmp_path, [{"tool_calls": [HI]}, "Done: greet says hi."])
    reads = reads_of(monkeypatch, configured)
    built = spy(monkeypatch, patch_face, "build_patch")
    argv = ["patch", "run", "-C", str(repo), "--model", spec, "--target", "src/app.py:2", "say hi"]
    out = CliRunner().invoke(app, argv)
    assert out.exit_code == 0, out.output
    assert "review" in out.output and "+    return 'hi'" in out.output
    assert len(reads) == 1  # resolved once: the sandbox of checks and git is not re-read
    [job] = built
    cli = patch_face.describe_patch(job)

    target = Target(1, "src/app.py", "say hi", line=2)
    request = patch_face.JobRequest((target,))
    api = patch_face.describe_patch(
        patch_face.build_patch(resolve_config(repo), repo, Overrides(model=spec), request)
    )
    assert api == cli
    assert api["tools"] == sorted(
        ["list_files", "search_text", "read_file", "replace_text", "apply_patch", "run_check"]
    )
    assert api["limits"]["editable_lockfiles"] == ("cargo.lock",)  # a lockfile only
    assert api["sandbox"] == "host" and api["model"] == "scripted:turns.yaml"
    assert api["policy"] == {
        "mode": "review",
        "consent": False,
        "allowed_modes": ["auto"],
        "checks": {"unit": True},
    }


def test_a_trusted_auto_job_has_no_check_tool_and_consents(repo: Path, configured: Path) -> None:
    request = patch_face.JobRequest((Target(1, "src/app.py", "x"),), mode="trusted-auto")
    job = patch_face.build_patch(resolve_config(repo), repo, None, request, model=ScriptedModel([]))
    described = patch_face.describe_patch(job)
    assert "run_check" not in described["tools"] and described["policy"]["consent"]


# -- page ----------------------------------------------------------------------------------


def browser_path() -> str:
    try:
        return str(find_browser(os.environ.get("XCLAW_TEST_BROWSER") or None))
    except ConfigError:
        pytest.fail("No Chrome or Chromium found: run `make deps` (it installs chromium).")


def test_page_run_builds_the_agent_the_builder_builds(
    root: Path, configured: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    page = tmp_path / "page.html"
    page.write_text("<html><body><h1>Tickets</h1><p>Nothing is open.</p></body></html>")
    spec = script(tmp_path, ["Nothing to do: no ticket is open.\nREMAINING: DONE"])
    browser = browser_path()
    reads = reads_of(monkeypatch, configured)
    built = spy(monkeypatch, page_face, "build_page")
    argv = ["page", "run", str(page), "close the open ticket", "--model", spec, "--headless"]
    out = CliRunner().invoke(app, [*argv, "--browser", browser, "--max-rounds", "3"])
    assert out.exit_code == 0, out.output
    assert "completed" in out.stdout and "no ticket is open" in out.stdout
    assert len(reads) == 1
    [runtime] = built
    cli = runtime.describe()

    flags = page_face.PageFlags(headless=True, browser=browser, max_rounds=3)
    api = page_face.build_page(resolve_config(root), root, Overrides(model=spec), flags)
    described = api.describe()
    assert described == cli
    assert described["tools"] == ["dom", "evaluate", "navigate", "page_info", "wait"]
    assert described["limits"] == {"max_rounds": 3} and described["sandbox"] is None
    assert described["policy"] == {
        "approver": "ModeApprover",
        "mode": "deny",
        "allow_hosts": ["localhost:3999"],
    }
    assert described["browser"] == {"executable": browser, "headless": True}


# -- one read --------------------------------------------------------------------------------

# Where a configuration may still be read: the entry every command resolves through, and the
# defaults of objects a Python caller builds without one (each reads it once, for what it was
# not given: a workspace's sandbox, a change job's, a store's URL).
READERS = {
    "compose/settings.py",
    "tools/base.py",
    "patch/engine.py",
    "store/open.py",
}


def test_only_the_entry_reads_the_configuration() -> None:
    src = Path(xclaw.config.__file__).parent
    readers = {
        str(p.relative_to(src))
        for p in src.rglob("*.py")
        if "load_config(" in p.read_text().replace("def load_config(", "")
    }
    assert readers == READERS

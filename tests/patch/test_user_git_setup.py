"""A change job is exact whatever the user's git setup (issue 21, item 1).

The user's own git configuration (``~/.gitconfig``, ``$XDG_CONFIG_HOME/git/config``, the
repository's ``.git/config``) and the repository's ``.gitattributes`` change what a plain
``git diff`` prints (prefixes, colour, an external diff program) and which bytes a checkout
writes (autocrlf, ``eol=crlf``). Each case checks out the project the way the user's own git
would, runs a real job that edits ``lib/util.py``, applies and reverts it: the stored diff is
plain, the summary counts the edit, apply writes exactly the reviewed bytes to that file (no
other file), and revert gives back the user's exact bytes.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import pytest
from tests.patch.conftest import git, tree_hash
from tests.patch.test_patch_job import call

from xclaw.models.scripted import ScriptedModel
from xclaw.patch import JobStore, PatchJob, Target
from xclaw.patch.engine import apply_job, revert_job
from xclaw.sandbox.host import HostSandbox

UTIL = "def greet():\n    return 'hello'\n"
EDIT = call("replace_text", "w1", path="lib/util.py", oldText="'hello'", newText="'hi'")
NEW_FILE = (
    "diff --git a/lib/extra.py b/lib/extra.py\n"
    "new file mode 100644\n"
    "--- /dev/null\n"
    "+++ b/lib/extra.py\n"
    "@@ -0,0 +1 @@\n"
    "+EXTRA = 1\n"
)


def external_diff(tmp_path: Path) -> str:
    """A diff program that leaves a marker and prints something no diff parser takes."""
    script = tmp_path / "extdiff.sh"
    script.write_text(f"#!/bin/sh\ntouch {tmp_path / 'external-ran'}\necho not a diff\n")
    script.chmod(0o755)
    return str(script)


# name -> (where the setting lives, the git config text)
SETTINGS = {
    "noprefix": ("home", "[diff]\n\tnoprefix = true\n"),
    "colour": ("xdg", "[color]\n\tui = always\n\tdiff = always\n"),
    "mnemonic-prefix": ("home", "[diff]\n\tmnemonicPrefix = true\n"),
    "external-diff": ("xdg", "[diff]\n\texternal = {external}\n"),
    "autocrlf": ("home", "[core]\n\tautocrlf = true\n"),
    "repo-noprefix-colour": ("repo", "[diff]\n\tnoprefix = true\n[color]\n\tui = always\n"),
    "repo-autocrlf": ("repo", "[core]\n\tautocrlf = true\n"),
    "repo-zero-context": ("repo", "[diff]\n\tcontext = 0\n"),
}


@pytest.fixture
def project(repo: Path) -> Path:
    (repo / "lib").mkdir()
    (repo / "lib" / "util.py").write_text(UTIL)
    (repo / "util.py").write_text("# a top-level file of the same name\n")
    git(repo, "add", "lib/util.py", "util.py")
    git(repo, "commit", "-q", "-m", "lib")
    return repo


@pytest.fixture
def user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_SYSTEM"):
        monkeypatch.delenv(name, raising=False)
    return home


def configure(where: str, text: str, home: Path, repo: Path) -> None:
    if where == "home":
        (home / ".gitconfig").write_text(text)
    elif where == "xdg":
        folder = Path(os.environ["XDG_CONFIG_HOME"]) / "git"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "config").write_text(text)
    else:
        with (repo / ".git" / "config").open("a") as fh:
            fh.write(text)


def user_git(repo: Path, *args: str) -> str:
    """git as the user runs it: their HOME and XDG configuration apply."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return subprocess.run(
        ["git", "-c", "user.name=u", "-c", "user.email=u@u", *args],
        cwd=repo,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def checkout_as_the_user(repo: Path) -> None:
    """Write every tracked file again through the user's git (their eol conversion)."""
    for rel in user_git(repo, "ls-files", "-z").split("\0"):
        if rel:
            (repo / rel).unlink()
    user_git(repo, "checkout", "--", ".")
    assert user_git(repo, "status", "--porcelain") == ""


def run_job(repo: Path, turns: list[object]) -> str:
    job = PatchJob(
        ScriptedModel(turns),
        repo,
        (Target(1, "lib/util.py", "say hi instead of hello", line=2),),
        sandbox=HostSandbox(),
    )
    record = asyncio.run(job.run())
    assert record.status == "review", record.reason
    return record.spec.job_id


def assert_plain_diff(diff: str) -> None:
    assert "\x1b[" not in diff
    assert "diff --git a/lib/util.py b/lib/util.py" in diff
    assert "--- a/lib/util.py\n+++ b/lib/util.py\n" in diff
    assert "@@ -1,2 +1,2 @@" in diff  # git's default three lines of context


def apply_then_revert(repo: Path, job_id: str, edited: dict[str, bytes]) -> None:
    """Apply writes ``edited`` exactly and nothing else; revert gives the start back."""
    start = tree_hash(repo)
    before = {rel: (repo / rel).read_bytes() if (repo / rel).exists() else None for rel in edited}
    store = JobStore()
    asyncio.run(apply_job(store.load(job_id), store))
    for rel, data in edited.items():
        assert (repo / rel).read_bytes() == data, rel
    after = tree_hash(repo)
    assert {k for k in after if after.get(k) != start.get(k)} == set(edited)
    asyncio.run(revert_job(store.load(job_id), store))
    for rel, data in before.items():
        assert ((repo / rel).read_bytes() if (repo / rel).exists() else None) == data, rel
    assert tree_hash(repo) == start
    assert store.load(job_id).status == "reverted"


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_user_git_configuration_changes_nothing(
    name: str, project: Path, user_home: Path, tmp_path: Path
) -> None:
    where, text = SETTINGS[name]
    configure(where, text.format(external=external_diff(tmp_path)), user_home, project)
    checkout_as_the_user(project)
    original = (project / "lib" / "util.py").read_bytes()
    job_id = run_job(project, [{"tool_calls": [EDIT]}, "done"])
    record = JobStore().load(job_id)
    assert_plain_diff(record.diff)
    assert record.summary == "1 files changed, +1 -1"
    assert not (tmp_path / "external-ran").exists()
    edited = original.replace(b"'hello'", b"'hi'")
    apply_then_revert(project, job_id, {"lib/util.py": edited})
    assert (project / "util.py").read_text() == "# a top-level file of the same name\n"


@pytest.mark.parametrize(
    ("attributes", "user_config"),
    [
        ("* text eol=crlf\n", ""),
        ("*.py text\n", "[core]\n\tautocrlf = true\n"),
        ("*.py eol=crlf\n", "[core]\n\tautocrlf = input\n"),
    ],
    ids=["eol-crlf", "text-with-autocrlf", "eol-attribute-alone"],
)
def test_converting_attributes_keep_the_users_bytes(
    attributes: str, user_config: str, project: Path, user_home: Path
) -> None:
    (project / ".gitattributes").write_text(attributes)
    git(project, "add", ".gitattributes")
    git(project, "commit", "-q", "-m", "attributes")
    (user_home / ".gitconfig").write_text(user_config)
    checkout_as_the_user(project)
    original = (project / "lib" / "util.py").read_bytes()
    assert original == UTIL.replace("\n", "\r\n").encode()  # what the user's checkout holds
    turns = [{"tool_calls": [EDIT, call("apply_patch", "w2", patch=NEW_FILE)]}, "done"]
    job_id = run_job(project, turns)
    record = JobStore().load(job_id)
    assert_plain_diff(record.diff)
    assert "+    return 'hi'\r\n" in record.diff
    edited = {
        "lib/util.py": original.replace(b"'hello'", b"'hi'"),  # still CRLF, as reviewed
        "lib/extra.py": b"EXTRA = 1\n",  # the agent's bytes, not converted on the way
    }
    apply_then_revert(project, job_id, edited)


def test_a_sha256_repository_works_the_same(tmp_path: Path) -> None:
    """The job's private repository takes the object format of the one it borrows from."""
    root = (tmp_path / "sha256").resolve()
    root.mkdir()
    git(root, "init", "-q", "--object-format=sha256", "-b", "main")
    (root / "lib").mkdir()
    (root / "lib" / "util.py").write_text(UTIL)
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "init")
    job_id = run_job(root, [{"tool_calls": [EDIT]}, "done"])
    assert_plain_diff(JobStore().load(job_id).diff)
    apply_then_revert(root, job_id, {"lib/util.py": UTIL.replace("'hello'", "'hi'").encode()})

"""``.git`` is sealed by allow-list: no command can make the user's own git run a program.

Each attack is an approved shell command in the bwrap sandbox. Afterwards the user's plain
``git status`` (and ``git -C`` in every repository the attack touched) runs on the host with
a marker program wired every way git knows; the marker must never run. Ordinary git work
(add, commit with the user's identity, branches, stash, a plain ``git init``) must still work.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from tests.security.conftest import call, dump

from xclaw import gitsafe
from xclaw.policy.protected import is_protected_rel
from xclaw.sandbox import protect

EVIL = "touch '{marker}'"


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XCLAW_SANDBOX", "bwrap")
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[user]\n\tname = Ada Lovelace\n\temail = ada@example.org\n")
    monkeypatch.setenv("HOME", str(home))
    gitsafe.forget_cached_settings()
    root = tmp_path / "proj"
    root.mkdir()
    _git(root, "init", "-q")
    (root / "a.txt").write_text("one\n")
    _git(root, "add", "a.txt")
    _git(root, "commit", "-qm", "first")
    (root / "evil.sh").write_text(f"#!/bin/sh\n{EVIL.format(marker=tmp_path / 'RAN')}\n")
    (root / "evil.sh").chmod(0o755)
    return root.resolve()


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t"}
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, env=env, check=False
    )


def sh(root: Path, script: str) -> object:
    return call(root, "terminal.exec", {"program": "sh", "argv": ["-c", script]}, approval="allow")


def user_runs_git(root: Path) -> None:
    """The user's next plain git commands, in the project and in every repository in it."""
    for git in [root, *(p.parent for p in root.rglob(".git*") if p.name.startswith(".git"))]:
        for args in (("status",), ("diff",), ("log", "-1"), ("submodule", "status")):
            _git(git, *args)


def ran(root: Path) -> bool:
    return (root.parent / "RAN").exists()


# Attack scripts; {E} is the evil program (inside the project, so the user would run it).
ATTACKS = {
    "commondir": "mkdir -p /tmp/c && printf '[core]\\n\\tfsmonitor = {E}\\n' > /tmp/c/config;"
    " echo /tmp/c > .git/commondir",
    "commondir-in-project": "mkdir -p c && printf '[core]\\n\\tfsmonitor = {E}\\n' > c/config"
    " && echo ../c > .git/commondir",
    "config-worktree": "printf '[core]\\n\\tfsmonitor = {E}\\n' > .git/config.worktree",
    "worktrees-dir": "mkdir -p .git/worktrees/w && echo x > .git/worktrees/w/gitdir",
    "gitdir-file": "echo /tmp/evil > .git/gitdir",
    "config-overwrite": "printf '[core]\\n\\tfsmonitor = {E}\\n' >> .git/config",
    "config-replace-by-rename": "cp .git/config c2 && echo '[core] fsmonitor = {E}' >> c2"
    " && mv c2 .git/config",
    "hooks-write": "printf '#!/bin/sh\\n{E}\\n' > .git/hooks/post-checkout"
    " && chmod +x .git/hooks/post-checkout",
    "hooks-dir-swap": "mv .git/hooks .git/h2; mkdir .git/hooks; cp evil.sh .git/hooks/pre-commit",
    "git-dir-swap": "mv .git .git-old && git init -q . && git config core.fsmonitor {E}",
    "info-attributes": "mkdir -p .git/info && echo '* filter=evil' > .git/info/attributes",
    "alternates": "mkdir -p .git/objects/info && echo /tmp > .git/objects/info/alternates",
    "nested-repo-fsmonitor": "git init -q vendor/lib && git -C vendor/lib config core.fsmonitor"
    " {E}",
    "nested-repo-hook": "git init -q sub && cp evil.sh sub/.git/hooks/post-checkout",
    "nested-repo-deep": "mkdir -p node_modules/pkg/x && git init -q node_modules/pkg/x &&"
    " git -C node_modules/pkg/x config core.pager {E}",
    "nested-gitdir-file": "mkdir -p m && printf 'gitdir: ../c\\n' > m/.git && mkdir -p c &&"
    " git init -q --bare c && git -C c config core.fsmonitor {E}",
    "gitmodules-new": "printf '[submodule \"x\"]\\n\\tpath = x\\n\\turl = ext::sh -c {E}\\n'"
    " > .gitmodules",
    "xclaw-yaml-nested": "mkdir -p sub2 && echo 'approval: allow' > sub2/xclaw.yaml",
    "git-config-command": "git config core.fsmonitor {E}",
    "git-config-include": "git config include.path /tmp/evil.cfg",
}


@pytest.mark.parametrize("case", sorted(ATTACKS))
def test_git_indirection_never_reaches_the_users_git(repo: Path, case: str) -> None:
    before = (repo / ".git" / "config").read_bytes()
    result = sh(repo, ATTACKS[case].replace("{E}", str(repo / "evil.sh")))
    user_runs_git(repo)
    assert not ran(repo), f"{case}: the user's git ran the attacker's program: {dump(result)}"
    assert (repo / ".git" / "config").read_bytes() == before
    assert _git(repo, "status", "--short").returncode == 0, "the user's repository broke"


@pytest.mark.parametrize(
    "case",
    ["commondir", "config-worktree", "worktrees-dir", "gitdir-file", "alternates",
     "nested-repo-fsmonitor", "nested-gitdir-file", "gitmodules-new", "xclaw-yaml-nested"],
)  # fmt: skip
def test_what_the_seal_moved_aside_is_reported(repo: Path, case: str) -> None:
    result = sh(repo, ATTACKS[case].replace("{E}", str(repo / "evil.sh")))
    assert getattr(result, "error_code", None) == "PROTECTED_FILE_WRITTEN", dump(result)
    assert list(repo.rglob("*.xclaw-rejected")), "nothing kept aside"


def test_a_background_process_is_caught_by_the_next_command(repo: Path) -> None:
    from tests.security.conftest import call_async

    from xclaw.tools.base import Workspace

    async def go() -> object:
        ws = Workspace(repo)
        try:
            script = "sleep 0.5; echo /tmp > .git/commondir"
            args = {"program": "sh", "argv": ["-c", script]}
            await call_async(repo, "process.start", args, approval="allow", workspace=ws)
            await asyncio.sleep(1.5)
            args = {"program": "true", "argv": []}
            return await call_async(repo, "terminal.exec", args, approval="allow", workspace=ws)
        finally:
            await ws.close()

    import asyncio

    result = asyncio.run(go())
    assert getattr(result, "error_code", None) == "PROTECTED_FILE_WRITTEN", dump(result)
    assert not (repo / ".git" / "commondir").exists()
    assert list((repo / ".git").glob("commondir.*.xclaw-rejected"))
    user_runs_git(repo)
    assert not ran(repo)


# --- ordinary git work is not refused ----------------------------------------------------


def test_add_and_commit_carry_the_users_identity(repo: Path) -> None:
    (repo / "b.txt").write_text("two\n")
    result = sh(repo, "git add b.txt && git commit -qm second && git log -1 --format=%an/%ae")
    assert getattr(result, "ok", False), dump(result)
    assert "Ada Lovelace/ada@example.org" in str(result.data["stdout"])  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "script",
    [
        "git checkout -qb topic && git checkout -q - && git branch -D topic",
        "echo x >> a.txt && git stash -q && git stash pop -q",
        "git tag v1 && git tag -d v1",
        "git gc -q --prune=now",
        "echo y >> a.txt && git commit -qam edit && git reset -q --hard HEAD~1",
        "git init -q newrepo && git -C newrepo status --short",
        "echo x >> a.txt && git add -A && git commit -qm m && git revert --no-edit HEAD",
    ],
)
def test_ordinary_git_work_is_not_refused(repo: Path, script: str) -> None:
    result = sh(repo, script)
    assert getattr(result, "ok", False), dump(result)
    assert not list(repo.rglob("*.xclaw-rejected"))


def test_a_plain_new_repository_is_kept(repo: Path) -> None:
    sh(repo, "git init -q fresh")
    assert (repo / "fresh" / ".git" / "HEAD").exists()


def test_protected_paths_ask_through_the_file_tools(repo: Path) -> None:
    for rel in (".git/commondir", ".git/info/attributes", "x/.gitmodules", ".git/config"):
        assert is_protected_rel(rel), rel
    for rel in (".git/index.lock", ".git/refs/heads/x", ".git/COMMIT_EDITMSG", "a/b.txt"):
        assert not is_protected_rel(rel), rel


def test_the_seal_rescans_only_changed_folders(repo: Path) -> None:
    for i in range(50):
        (repo / f"d{i}" / "e").mkdir(parents=True)
    tree = protect.ProjectTree(repo)
    tree.scan()
    (repo / "d7" / "e" / ".git").mkdir()
    assert str(repo / "d7" / "e" / ".git") in tree.scan()

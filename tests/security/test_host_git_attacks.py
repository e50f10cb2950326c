"""Every git xclaw runs on the host is the safe invocation of ``xclaw.gitsafe`` (issue 20,
item 2): the user's global configuration, the repository's own ``.git/config`` (and what it
includes), ``info/attributes`` and the inherited environment all name programs that write a
marker file when run (hooks, fsmonitor, filter drivers, textconv, external diff, pager,
editor, credential helper, gpg), and set options that change what xclaw parses (prefixes,
colours, quoting, untracked files).

xclaw's paths (``project.status``, the patch job's health check, worktree, baseline, diff and
apply, an agent's isolated workspace, a skill clone) must leave no marker and read plain
output. A control test first proves the planted programs do run under a plain ``git``.
Nothing here needs root: everything lives under ``tmp_path`` and ``HOME`` is a fake.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from xclaw import gitsafe
from xclaw.agents.workspace import IsolatedWorkspaces
from xclaw.gitsafe import FALLBACK_EMAIL, FALLBACK_NAME, git_identity, sanitize_identity
from xclaw.patch.changeset import collect
from xclaw.patch.health import check_health
from xclaw.patch.job import PatchLimits
from xclaw.patch.worktree import create_worktree, remove_worktree, seed_local_changes
from xclaw.skills.install import cloned
from xclaw.tools.project import git_status
from xclaw.worktree.baseline import commit_baseline
from xclaw.worktree.gitio import git

HOOKS = (
    "pre-commit",
    "prepare-commit-msg",
    "commit-msg",
    "post-commit",
    "post-checkout",
    "post-index-change",
    "reference-transaction",
    "pre-auto-gc",
    "post-rewrite",
    "fsmonitor-watchman",
)
ATTRIBUTES = (
    "* filter=evil diff=evil merge=evil\n"
    "*.dot filter=dots.in.name diff=dots.in.name\n"
    "*.eq filter=eq=name\n"
    "*.inc filter=included diff=included\n"
    "*.glob filter=globalevil diff=globalevil\n"
)
FILES = ("f.txt", "a.dot", "b.eq", "c.inc", "d.glob", "e.info", "g.xdg")
ANSI = "\x1b["
IDENTITY_VARIABLES = (
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
    "EMAIL",
)


@dataclass
class Hostile:
    repo: Path
    markers: Path
    scripts: Path
    other: Path  # a second repository, for GIT_DIR planted in the environment

    def fired(self) -> list[str]:
        return sorted(os.listdir(self.markers))

    def script(self, name: str) -> str:
        """A program that leaves ``markers/name`` and passes its input (or file) through."""
        path = self.scripts / name
        path.write_text(
            "#!/bin/sh\n"
            f"touch '{self.markers / name}'\n"
            'if [ -f "$1" ]; then cat "$1"; else cat; fi\n',
            encoding="utf-8",
        )
        path.chmod(0o755)
        return str(path)


def trusted_git(cwd: Path, *args: str) -> str:
    """The test's own git for building repositories: nothing of the hostile setup applies."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull, HOME=str(cwd), XDG_CONFIG_HOME="/"
    )
    argv = ["git", "-c", "core.hooksPath=/dev/null", "-c", "user.name=t", "-c", "user.email=t@t"]
    return subprocess.run(
        [*argv, *args], cwd=cwd, env=env, check=True, capture_output=True, text=True
    ).stdout


def _hooks(h: Hostile, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for hook in HOOKS:
        (folder / hook).write_text(f"#!/bin/sh\ntouch '{h.markers}/hook-{hook}'\n")
        (folder / hook).chmod(0o755)


def _user_config(h: Hostile, home: Path) -> None:
    """~/.gitconfig and $XDG_CONFIG_HOME/git: everything a user's global file could set."""
    hooks = home / "global-hooks"
    _hooks(h, hooks)
    xdg = Path(os.environ["XDG_CONFIG_HOME"]) / "git"
    xdg.mkdir(parents=True, exist_ok=True)
    (xdg / "attributes").write_text("*.xdg filter=xdgevil\n")  # the default attributesFile
    (xdg / "config").write_text(f'[filter "xdgevil"]\n\tclean = {h.script("xdg-clean")}\n')
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Ada Lovelace\n\temail = ada@example.test\n"
        f"[core]\n\tpager = {h.script('global-pager')}\n"
        f"\tfsmonitor = {h.script('global-fsmonitor')}\n\thooksPath = {hooks}\n"
        f"\teditor = {h.script('global-editor')}\n"
        f"[diff]\n\tnoprefix = true\n\tmnemonicPrefix = true\n"
        f"\texternal = {h.script('global-external-diff')}\n"
        "[color]\n\tui = always\n\tdiff = always\n\tstatus = always\n"
        "[status]\n\tshowUntrackedFiles = no\n"
        f'[filter "evil"]\n\tclean = {h.script("global-clean")}\n'
        f"\tsmudge = {h.script('global-smudge')}\n\trequired = true\n"
        f'[filter "globalevil"]\n\tclean = {h.script("globalevil-clean")}\n'
        f'[diff "globalevil"]\n\ttextconv = {h.script("global-textconv")}\n'
        f'[diff "evil"]\n\ttextconv = {h.script("global-evil-textconv")}\n'
        f"[credential]\n\thelper = {h.script('global-credential')}\n"
    )


def _local_config(h: Hostile) -> None:
    """The repository's own .git/config, an included file and info/attributes."""
    gitdir = h.repo / ".git"
    _hooks(h, gitdir / "hooks")
    _hooks(h, gitdir / "local-hooks")
    (gitdir / "info").mkdir(exist_ok=True)
    (gitdir / "info" / "attributes").write_text("*.info filter=infoevil\n")
    (gitdir / "included.cfg").write_text(
        f'[filter "included"]\n\tclean = {h.script("included-clean")}\n'
        f'[diff "included"]\n\ttextconv = {h.script("included-textconv")}\n'
    )
    settings = {
        "core.fsmonitor": h.script("local-fsmonitor"),
        "core.hooksPath": str(gitdir / "local-hooks"),
        "core.pager": h.script("local-pager"),
        "core.editor": h.script("local-editor"),
        "core.sshCommand": h.script("local-ssh"),
        "core.askPass": h.script("local-askpass"),
        "core.quotePath": "false",
        "core.attributesFile": str(gitdir / "info" / "attributes"),
        "filter.evil.clean": h.script("local-clean"),
        "filter.evil.smudge": h.script("local-smudge"),
        "filter.evil.process": h.script("local-process"),
        "filter.evil.required": "true",
        "filter.dots.in.name.clean": h.script("dots-clean"),
        "filter.eq=name.clean": h.script("eq-clean"),
        "filter.infoevil.clean": h.script("info-clean"),
        "diff.evil.textconv": h.script("local-textconv"),
        "diff.evil.command": h.script("local-diff-command"),
        "diff.dots.in.name.textconv": h.script("dots-textconv"),
        "diff.external": h.script("local-external-diff"),
        "diff.noprefix": "true",
        "diff.mnemonicPrefix": "true",
        "color.ui": "always",
        "color.diff": "always",
        "color.status": "always",
        "status.showUntrackedFiles": "no",
        "commit.gpgSign": "true",
        "gpg.program": h.script("local-gpg"),
        "credential.helper": h.script("local-credential"),
        "merge.evil.driver": h.script("local-merge"),
        "include.path": str(gitdir / "included.cfg"),
    }
    for key, value in settings.items():
        trusted_git(h.repo, "config", key, value)


@pytest.fixture
def hostile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Hostile]:
    h = Hostile(tmp_path / "repo", tmp_path / "markers", tmp_path / "scripts", tmp_path / "other")
    for folder in (h.repo, h.markers, h.scripts, h.other, tmp_path / "home"):
        folder.mkdir()
    trusted_git(h.other, "init", "-q")
    trusted_git(h.repo, "init", "-q", "-b", "main")
    (h.repo / ".gitattributes").write_text(ATTRIBUTES)
    for name in FILES:
        (h.repo / name).write_text(f"{name} line one\n")
    trusted_git(h.repo, "add", "-A")
    trusted_git(h.repo, "commit", "-q", "-m", "init")
    _user_config(h, tmp_path / "home")
    _local_config(h)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name in IDENTITY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    # What a parent process may leave in the environment.
    monkeypatch.setenv("GIT_EXTERNAL_DIFF", h.script("env-external-diff"))
    monkeypatch.setenv("GIT_PAGER", h.script("env-pager"))
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "core.fsmonitor")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", h.script("env-fsmonitor"))
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", f"'core.pager'='{h.script('env-param-pager')}'")
    monkeypatch.setenv("GIT_DIR", str(h.other / ".git"))
    for name in FILES:  # local changes, by hand: no git has run since the config went in
        (h.repo / name).write_text(f"{name} line one\n{name} line two\n")
    (h.repo / "new.txt").write_text("untracked\n")
    assert h.fired() == []
    gitsafe.forget_cached_settings()
    yield h
    gitsafe.forget_cached_settings()


def assert_plain(text: str) -> None:
    """No colour, and git's own a/ b/ prefixes on every header (no noprefix, no mnemonic)."""
    assert ANSI not in text
    lines = text.splitlines()
    headers = [line for line in lines if line.startswith(("diff --git ", "--- ", "+++ "))]
    assert headers or "diff --git" not in text
    for line in headers:
        assert line.startswith(("diff --git a/", "--- a/", "+++ b/", "--- /dev/null")), line
        assert not line.startswith("+++ /dev/null") or "--- a/" in text, line


# -- the control -------------------------------------------------------------------------------
def test_control_plain_git_runs_the_planted_programs(hostile: Hostile) -> None:
    env = {**os.environ}
    env.pop("GIT_DIR")
    subprocess.run(["git", "status"], cwd=hostile.repo, env=env, capture_output=True, check=False)
    subprocess.run(["git", "diff"], cwd=hostile.repo, env=env, capture_output=True, check=False)
    assert hostile.fired(), "the hostile setup ran nothing: the tests below would prove nothing"


# -- xclaw's host git paths --------------------------------------------------------------------
async def test_project_status_runs_nothing_and_sees_untracked_files(hostile: Hostile) -> None:
    status = await git_status(hostile.repo)
    assert status is not None and status["branch"] == "main"
    changed = {c["path"]: c["status"] for c in status["changed"]}
    assert changed["new.txt"] == "??"  # status.showUntrackedFiles=no did not hide it
    assert {n for n, s in changed.items() if s == " M"} >= set(FILES)
    assert hostile.fired() == []


async def test_diff_is_plain_and_unconverted(hostile: Hostile) -> None:
    done = await git(hostile.repo, "diff", "HEAD")
    assert done.ok, done.stderr
    assert_plain(done.text)
    assert "diff --git a/f.txt b/f.txt" in done.text and "+f.txt line two" in done.text
    assert hostile.fired() == []


async def test_log_and_show_with_patches_run_no_driver(hostile: Hostile) -> None:
    log = await git(hostile.repo, "log", "-p", "-1")
    show = await git(hostile.repo, "show", "HEAD", "--", "f.txt")
    assert log.ok and show.ok, (log.stderr, show.stderr)
    assert_plain(log.text + show.text)
    assert "+f.txt line one" in show.text
    assert hostile.fired() == []


async def test_patch_health_check_runs_nothing(hostile: Hostile) -> None:
    report = await check_health(hostile.repo, PatchLimits())
    assert "new.txt" in report.untracked
    assert set(FILES) <= set(report.tracked_changed)
    assert hostile.fired() == []


async def test_patch_worktree_baseline_and_changeset_run_nothing(hostile: Hostile) -> None:
    limits = PatchLimits()
    report = await check_health(hostile.repo, limits)
    wt = await create_worktree(hostile.repo, report.head, "attack", "job1")
    try:
        await seed_local_changes(hostile.repo, wt, report, limits)
        baseline = await commit_baseline(wt)
        (wt / "f.txt").write_text("changed by the job\n")
        changes = await collect(wt, baseline, limits)
        assert_plain(changes.diff)
        assert "+changed by the job" in changes.diff
        assert changes.result.keys() == {"f.txt"}
    finally:
        await remove_worktree(hostile.repo, wt)
    assert hostile.fired() == []


async def test_git_apply_to_the_working_tree_runs_no_filter(hostile: Hostile) -> None:
    patch = (
        "diff --git a/f.txt b/f.txt\n--- a/f.txt\n+++ b/f.txt\n"
        "@@ -1,2 +1,3 @@\n f.txt line one\n f.txt line two\n+applied\n"
    )
    check = await git(hostile.repo, "apply", "--check", "-", stdin=patch.encode())
    done = await git(hostile.repo, "apply", "-", stdin=patch.encode())
    assert check.ok and done.ok, (check.stderr, done.stderr)
    assert (hostile.repo / "f.txt").read_text().endswith("applied\n")
    assert hostile.fired() == []


async def test_agent_isolated_workspace_runs_nothing(hostile: Hostile) -> None:
    workspaces = IsolatedWorkspaces()
    tree = await workspaces.prepare(hostile.repo, "child-1")
    assert (tree / "new.txt").read_text() == "untracked\n"
    (tree / "f.txt").write_text("worker edit\n")
    changes = await workspaces.changes("child-1")
    assert "f.txt" in changes.files
    assert_plain(changes.diff_path.read_text())
    assert hostile.fired() == []


def test_skill_clone_runs_no_hook_or_smudge_filter(hostile: Hostile) -> None:
    with cloned(f"file://{hostile.repo}") as tree:
        assert (tree / "f.txt").read_text() == "f.txt line one\n"  # not through a smudge filter
    assert hostile.fired() == []


async def test_inherited_git_variables_are_ignored(
    hostile: Hostile, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GIT_WORK_TREE", str(hostile.other))
    monkeypatch.setenv("GIT_INDEX_FILE", str(hostile.other / "index"))
    status = await git_status(hostile.repo)  # GIT_DIR points at the other repository
    assert status is not None and status["changed_count"] > 0
    top = await git(hostile.repo, "rev-parse", "--show-toplevel")
    assert Path(top.text.strip()) == hostile.repo.resolve()
    assert hostile.fired() == []


# -- the invocation itself ---------------------------------------------------------------------
def test_invocation_shape() -> None:
    call = gitsafe.invocation(["-c", "user.name=x", "diff", "--cached", "HEAD"])
    argv = call.argv
    assert argv[0] == "--no-pager"
    sub = argv.index("diff")
    assert argv[sub + 1 : sub + 3] == ("--no-ext-diff", "--no-textconv")
    assert argv[sub - 2 : sub] == ("-c", "user.name=x")  # the caller's -c stays before it
    for setting in ("core.hooksPath=/dev/null", "core.fsmonitor=false", "diff.external="):
        assert setting in argv[:sub]
    assert call.env["GIT_CONFIG_NOSYSTEM"] == "1" and call.env["GIT_CONFIG_GLOBAL"] == os.devnull
    assert call.env["GIT_ATTR_NOSYSTEM"] == "1" and call.env["GIT_PAGER"] == "cat"
    assert "GIT_EXTERNAL_DIFF" not in gitsafe.clean_environ({"GIT_EXTERNAL_DIFF": "x"})
    assert gitsafe.invocation(["status"]).argv[-1] == "status"


def test_neutralizers_cover_every_driver_name_git_lists() -> None:
    listing = (
        b"core.bare\nfalse\0filter.evil.clean\nx\0filter.dots.in.name.smudge\ny\0"
        b"filter.eq=name.process\nz\0diff.evil.textconv\nt\0diff.external\ne\0"
        b"merge.m.driver\nd\0credential.https://h.example.helper\nc\0diff.evil.command\nq\0"
    )
    overrides = dict(gitsafe.neutralizers(listing))
    for key in (
        "filter.evil.clean",
        "filter.evil.smudge",
        "filter.evil.process",
        "filter.dots.in.name.clean",
        "filter.eq=name.clean",
        "diff.evil.textconv",
        "diff.evil.command",
        "merge.m.driver",
        "credential.https://h.example.helper",
    ):
        assert overrides[key] == "", key
    assert overrides["filter.evil.required"] == "false"
    assert "diff.external" not in overrides and "core.bare" not in overrides  # fixed options
    env = gitsafe.invocation(["status"], listing).env
    assert int(env["GIT_CONFIG_COUNT"]) == len(gitsafe.neutralizers(listing))


# -- the identity of the agent's commits -------------------------------------------------------
def test_identity_is_the_users_own_from_their_global_config(hostile: Hostile) -> None:
    assert git_identity() == {
        "GIT_AUTHOR_NAME": "Ada Lovelace",
        "GIT_AUTHOR_EMAIL": "ada@example.test",
        "GIT_COMMITTER_NAME": "Ada Lovelace",
        "GIT_COMMITTER_EMAIL": "ada@example.test",
    }
    assert hostile.fired() == []  # reading it ran nothing of that file


def test_identity_makes_a_commit_work_without_any_config(hostile: Hostile) -> None:
    repo = hostile.other
    (repo / "x.txt").write_text("x\n")
    env = {**gitsafe.clean_environ(), **git_identity()}
    argv = ["git", "-c", "core.hooksPath=/dev/null"]
    subprocess.run([*argv, "add", "x.txt"], cwd=repo, env=env, check=True)
    subprocess.run([*argv, "commit", "-q", "-m", "m"], cwd=repo, env=env, check=True)
    log = subprocess.run(
        ["git", "log", "-1", "--format=%an <%ae> / %cn <%ce>"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert log.stdout.strip() == "Ada Lovelace <ada@example.test> / Ada Lovelace <ada@example.test>"


def test_identity_falls_back_without_a_user_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in (*IDENTITY_VARIABLES, "GIT_CONFIG_GLOBAL"):
        monkeypatch.delenv(name, raising=False)
    gitsafe.forget_cached_settings()
    try:
        identity = git_identity()
    finally:
        gitsafe.forget_cached_settings()
    assert identity["GIT_AUTHOR_NAME"] == FALLBACK_NAME == identity["GIT_COMMITTER_NAME"]
    assert identity["GIT_AUTHOR_EMAIL"] == FALLBACK_EMAIL == identity["GIT_COMMITTER_EMAIL"]


def test_identity_from_the_environment_is_sanitized(
    hostile: Hostile, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Mallory\n\tEvil <root@x>\x1b[31m")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "  m @x.test\r\n")
    identity = git_identity()
    assert identity["GIT_AUTHOR_NAME"] == "Mallory Evil root@x [31m"
    assert identity["GIT_AUTHOR_EMAIL"] == "ada@example.test"  # from the config file
    assert identity["GIT_COMMITTER_NAME"] == identity["GIT_AUTHOR_NAME"]
    assert identity["GIT_COMMITTER_EMAIL"] == "m@x.test"
    assert git_identity() is not git_identity()  # a copy each time, the reading cached


@pytest.mark.parametrize(
    ("raw", "email", "clean"),
    [
        ("Ada\nLovelace", False, "Ada Lovelace"),
        ("Ada\x00\x07 Lovelace", False, "Ada Lovelace"),
        ("<Ada> Lovelace", False, "Ada Lovelace"),
        ("Ada\u202eecalevoL", False, "Ada ecalevoL"),  # a bidi override
        ("Ada\u200bLovelace", False, "Ada Lovelace"),  # zero-width space
        ("x" * 300, False, "x" * 100),
        (" ada @ example.test\n", True, "ada@example.test"),
        ("\n\t ", False, ""),
    ],
)
def test_sanitize_identity(raw: str, email: bool, clean: str) -> None:
    assert sanitize_identity(raw, email=email) == clean

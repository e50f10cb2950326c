"""Path policy against real filesystem objects: symlinks, FIFOs, sockets, devices."""

from __future__ import annotations

import errno
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from xclaw.core.errors import PolicyDenied
from xclaw.policy.paths import (
    check_syntax,
    find_outside_paths,
    is_secret_path,
    resolve_inside_root,
)


def denied(raw: str, root: Path, **kw: object) -> PolicyDenied:
    with pytest.raises(PolicyDenied) as info:
        resolve_inside_root(raw, root, **kw)  # type: ignore[arg-type]
    return info.value


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    d = tmp_path / "outside"
    d.mkdir()
    (d / "secret.txt").write_text("top secret")
    return d.resolve()


# --- syntax ---


@pytest.mark.parametrize("raw", ["", "   ", "a\x00b", "\x00"])
def test_empty_and_nul_are_invalid(root: Path, raw: str) -> None:
    assert denied(raw, root).code == "PATH_INVALID"


@pytest.mark.parametrize(
    "raw",
    [
        "C:\\x",
        "C:/x",
        "c:x",
        "\\\\server\\share",
        "//server/share",
        "\\\\?\\C:\\x",
        "\\\\.\\pipe\\x",
        "\\x",
        "~",
        "~/notes.txt",
    ],
)
def test_windows_drive_unc_and_home_forms_are_invalid(root: Path, raw: str) -> None:
    err = denied(raw, root)
    assert err.code == "PATH_INVALID"
    assert err.hint


def test_check_syntax_accepts_plain_relative_names() -> None:
    for raw in ("a.txt", "src/x.py", "./a", "~backup", "dir/c:x"):
        check_syntax(raw)


# --- inside and outside ---


def test_inside_paths_resolve_relative_to_root(root: Path) -> None:
    (root / "src").mkdir()
    (root / "src" / "a.py").write_text("x")
    r = resolve_inside_root("src/../src/a.py", root, must_exist=True)
    assert r.path == root / "src" / "a.py"
    assert r.rel == "src/a.py" and r.inside_root
    assert resolve_inside_root(".", root).rel == "."
    assert resolve_inside_root(str(root / "src"), root).rel == "src"


def test_missing_file_is_fine_unless_it_must_exist(root: Path) -> None:
    assert resolve_inside_root("new/file.txt", root, write=True).rel == "new/file.txt"
    assert denied("nope.txt", root, must_exist=True).code == "PATH_NOT_FOUND"


@pytest.mark.parametrize("raw", ["..", "../x", "a/../../x", "../../../../etc/passwd"])
def test_dotdot_traversal_is_outside_root(root: Path, raw: str) -> None:
    err = denied(raw, root)
    assert err.code == "PATH_OUTSIDE_ROOT"
    assert Path(str(err.data["path"])).is_absolute()


def test_absolute_outside_path_reports_resolved_target(root: Path, outside: Path) -> None:
    err = denied(str(outside / "secret.txt"), root)
    assert err.code == "PATH_OUTSIDE_ROOT"
    assert err.data["path"] == str(outside / "secret.txt")


def test_prefix_sibling_is_not_inside(root: Path) -> None:
    evil = root.parent / (root.name + "-evil")
    evil.mkdir()
    (evil / "x").write_text("x")
    assert denied(str(evil / "x"), root).code == "PATH_OUTSIDE_ROOT"
    assert denied(f"../{root.name}-evil/x", root).code == "PATH_OUTSIDE_ROOT"


def test_extra_root_grants_access_outside(root: Path, outside: Path) -> None:
    r = resolve_inside_root(str(outside / "secret.txt"), root, extra_roots=(outside,))
    assert r.path == outside / "secret.txt"
    assert not r.inside_root and r.rel == str(outside / "secret.txt")
    # The grant is one folder, not its siblings.
    sibling = outside.parent / "outside2"
    sibling.mkdir()
    assert denied(str(sibling), root, extra_roots=(outside,)).code == "PATH_OUTSIDE_ROOT"


# --- symlinks ---


def test_symlinked_parent_directory_escape(root: Path, outside: Path) -> None:
    os.symlink(outside, root / "link")
    err = denied("link/secret.txt", root)
    assert err.code == "PATH_SYMLINK_ESCAPE"
    assert "path" not in err.data  # an escape is refused, never offered for approval


def test_symlinked_target_escape(root: Path, outside: Path) -> None:
    os.symlink(outside / "secret.txt", root / "innocent.txt")
    assert denied("innocent.txt", root).code == "PATH_SYMLINK_ESCAPE"
    assert denied("innocent.txt", root, write=True).code == "PATH_SYMLINK_ESCAPE"


def test_dangling_symlink_pointing_outside(root: Path, outside: Path) -> None:
    os.symlink(outside / "not-yet", root / "dangling")
    assert denied("dangling", root, write=True).code == "PATH_SYMLINK_ESCAPE"


def test_chain_of_symlinks_escaping(root: Path, outside: Path) -> None:
    os.symlink(outside, root / "c")
    os.symlink("c", root / "b")
    os.symlink("b/secret.txt", root / "a")
    assert denied("a", root).code == "PATH_SYMLINK_ESCAPE"


def test_symlink_then_dotdot_follows_the_link_like_the_os(root: Path, outside: Path) -> None:
    deep = outside / "deep"
    deep.mkdir()
    os.symlink(deep, root / "l")
    # The OS reads l/../secret.txt as outside/secret.txt, not as root/secret.txt.
    assert denied("l/../secret.txt", root).code == "PATH_SYMLINK_ESCAPE"


def test_symlink_loop_is_invalid(root: Path) -> None:
    os.symlink("b", root / "a")
    os.symlink("a", root / "b")
    assert denied("a", root).code == "PATH_INVALID"


def test_write_through_inside_symlink_lands_on_the_resolved_target(root: Path) -> None:
    (root / "real.txt").write_text("x")
    os.symlink("real.txt", root / "alias.txt")
    r = resolve_inside_root("alias.txt", root, write=True)
    assert r.path == root / "real.txt"
    assert not r.path.is_symlink()
    assert r.rel == "real.txt"


def test_root_given_through_a_symlink_still_works(tmp_path: Path, root: Path) -> None:
    os.symlink(root, tmp_path / "alias-root")
    (root / "a.txt").write_text("x")
    r = resolve_inside_root("a.txt", tmp_path / "alias-root", must_exist=True)
    assert r.path == root / "a.txt" and r.inside_root


def test_a_path_inside_a_resolved_root_costs_one_realpath(
    root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The walk to the target goes through the root: the root is not resolved on its own
    again unless the target lies elsewhere (then the outside checks need it)."""
    (root / "a.txt").write_text("x")
    calls: list[str] = []
    real = os.path.realpath

    def counting(path: str | os.PathLike[str], **kw: bool) -> str:
        calls.append(os.fspath(path))
        return real(path, **kw)

    monkeypatch.setattr(os.path, "realpath", counting)
    assert resolve_inside_root("a.txt", root).rel == "a.txt"
    assert calls == [str(root / "a.txt")]
    calls.clear()
    assert denied(str(outside / "secret.txt"), root).code == "PATH_OUTSIDE_ROOT"
    assert str(root) in calls  # resolved for the outside checks


def test_every_spelling_of_the_root_gives_the_same_answers(
    tmp_path: Path, root: Path, outside: Path
) -> None:
    """Given as its realpath, through a link, relative or with ``..``: one answer per path,
    whichever realpath is skipped."""
    (root / "sub").mkdir()
    (root / "a.txt").write_text("x")
    os.symlink(outside, root / "esc")
    os.symlink("sub", root / "inner")
    os.symlink(root / "loop2", root / "loop1")
    os.symlink(root / "loop1", root / "loop2")
    os.symlink(root, tmp_path / "alias-root")
    spellings = [
        root,
        tmp_path / "alias-root",
        root / "sub" / "..",
        Path(os.path.relpath(root)),
        root / "esc",  # a root that is itself a link out
    ]
    raws = ["a.txt", ".", "sub/../a.txt", "inner/../a.txt", "esc/secret.txt", "esc/..", "loop1"]
    raws += ["../proj/a.txt", "..", str(outside / "secret.txt"), str(tmp_path / "alias-root")]

    def answer(raw: str, given: Path, **kw: object) -> object:
        try:
            r = resolve_inside_root(raw, given, **kw)  # type: ignore[arg-type]
        except PolicyDenied as err:
            return err.code, err.data.get("path")
        return r.path, r.rel, r.inside_root

    for raw in raws:
        for kw in ({}, {"extra_roots": (outside,)}):
            expected = answer(raw, Path(os.path.realpath(root)), **kw)
            for given in spellings[:-1]:
                assert answer(raw, given, **kw) == expected, (raw, given, kw)
            link_out = answer(raw, spellings[-1], **kw)
            assert link_out == answer(raw, Path(os.path.realpath(spellings[-1])), **kw)


# --- special files ---


def test_device_reached_through_symlink_is_special(root: Path) -> None:
    os.symlink("/dev/null", root / "null")
    assert denied("null", root).code == "PATH_SPECIAL"


def test_device_under_extra_root_is_special(root: Path) -> None:
    assert denied("/dev/null", root, extra_roots=(Path("/dev"),)).code == "PATH_SPECIAL"
    assert denied("/dev/null", root).code == "PATH_SPECIAL"


def test_kernel_trees_are_special_even_when_granted(root: Path) -> None:
    assert denied("/proc/self/environ", root, extra_roots=(Path("/proc"),)).code == "PATH_SPECIAL"


def test_fifo_inside_root_is_special(root: Path) -> None:
    os.mkfifo(root / "pipe")
    assert denied("pipe", root).code == "PATH_SPECIAL"
    assert denied("pipe", root, write=True).code == "PATH_SPECIAL"


@pytest.fixture
def unix_socket(root: Path) -> Iterator[Path]:
    path = root / "s.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(str(path))
        yield path
    finally:
        sock.close()


def test_socket_inside_root_is_special(root: Path, unix_socket: Path) -> None:
    assert denied(unix_socket.name, root).code == "PATH_SPECIAL"


# --- secrets ---


@pytest.mark.parametrize(
    "rel",
    [
        ".env",
        ".env.local",
        "config/.env.production",
        "certs/server.pem",
        "tls/private.KEY",
        "id_rsa",
        "keys/id_rsa.pub",
        "id_ed25519",
        ".npmrc",
        ".pypirc",
        ".netrc",
        ".git-credentials",
        "gcp/credentials.json",
        ".aws/credentials",
        "home/.ssh/config",
        ".ssh",
        "/home/u/.ssh/known_hosts",
        "sub\\.env",
    ],
)
def test_secret_paths_are_detected(rel: str) -> None:
    assert is_secret_path(rel)


@pytest.mark.parametrize(
    "rel",
    [
        "README.md",
        "src/env.py",
        ".env.example",
        "docs/.env.sample",
        "keyboard.py",
        "credentials.py",
        "aws/credentials.md",
        "environment.yml",
        ".",
    ],
)
def test_ordinary_paths_are_not_secret(rel: str) -> None:
    assert not is_secret_path(rel)


# --- paths hidden in command arguments ---


def test_find_outside_paths_resolves_arguments(root: Path, outside: Path) -> None:
    (root / "in.txt").write_text("x")
    os.symlink(outside, root / "out-link")
    argv = [
        "in.txt",
        "-o",
        str(outside / "o.txt"),
        "--prefix=" + str(outside),
        "../x",
        "out-link",
        "/dev/null",
        "/api/users",  # no such top-level tree: a pattern, not a path
        f"-I{outside}",
        "build",
    ]
    found = dict(find_outside_paths(argv, root))
    assert set(found) == {
        str(outside / "o.txt"),
        "--prefix=" + str(outside),
        "../x",
        "out-link",
        f"-I{outside}",
    }
    assert found["out-link"] == outside
    assert found["../x"] == root.parent / "x"


def test_find_outside_paths_respects_grants_and_cwd(root: Path, outside: Path) -> None:
    (root / "sub").mkdir()
    assert find_outside_paths([str(outside / "a")], root, extra_roots=[outside]) == []
    assert find_outside_paths(["../a.txt"], root, cwd=root / "sub") == []
    assert find_outside_paths(["../a\x00b", "/etc/\x00x", "x" * 5000], root) == []


# --- hard links and OS errors: always a coded refusal, never an exception escaping ---


def test_nlink_counts_hard_links_of_regular_files_only(root: Path, outside: Path) -> None:
    (root / "plain.txt").write_text("x")
    os.link(outside / "secret.txt", root / "hl.txt")
    (root / "sub").mkdir()
    assert resolve_inside_root("plain.txt", root).nlink == 1
    assert resolve_inside_root("hl.txt", root).nlink == 2
    assert resolve_inside_root("new.txt", root, write=True).nlink == 0
    assert resolve_inside_root("sub", root).nlink == 0  # a folder's count is no hard link
    granted = resolve_inside_root(str(outside / "secret.txt"), root, extra_roots=(outside,))
    assert granted.nlink == 2


def _failing(real: object, err: int, needle: str) -> object:
    def fail(path: object, *args: object, **kwargs: object) -> object:
        if needle in os.fspath(path):  # type: ignore[arg-type]
            raise OSError(err, os.strerror(err), path)
        return real(path, *args, **kwargs)  # type: ignore[operator]

    return fail


@pytest.mark.parametrize(
    ("err", "code"),
    [
        (errno.EACCES, "PATH_INVALID"),
        (errno.ELOOP, "PATH_INVALID"),
        (errno.EINVAL, "PATH_CHANGED"),  # readlink on what lstat called a link: swapped
        (errno.ENOENT, "PATH_CHANGED"),
    ],
)
def test_realpath_oserror_is_a_coded_refusal(
    root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch, err: int, code: str
) -> None:
    monkeypatch.setattr(os.path, "realpath", _failing(os.path.realpath, err, "victim"))
    for raw, kw in [
        ("victim/a.txt", {}),
        (str(outside / "a.txt"), {"extra_roots": (outside / "victim",)}),
    ]:
        refusal = denied(raw, root, **kw)
        assert refusal.code == code and refusal.hint, raw
    with pytest.raises(PolicyDenied) as info:
        find_outside_paths(["../victim"], root)
    assert info.value.code == code
    with pytest.raises(PolicyDenied) as info:
        find_outside_paths(["ls"], root, cwd=root / "victim")
    assert info.value.code == code


@pytest.mark.parametrize("err", [errno.EACCES, errno.ELOOP, errno.EIO])
def test_stat_oserror_is_a_coded_refusal(
    root: Path, monkeypatch: pytest.MonkeyPatch, err: int
) -> None:
    (root / "victim.txt").write_text("x")
    monkeypatch.setattr(os, "stat", _failing(os.stat, err, "victim"))
    assert denied("victim.txt", root).code == "PATH_INVALID"
    assert denied("victim.txt", root, write=True, must_exist=True).code == "PATH_INVALID"

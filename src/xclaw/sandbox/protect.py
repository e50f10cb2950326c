"""Files inside the project that a command must not change: they run code or configure xclaw.

Git runs programs named by its repository files (``config`` keys, hooks, ``commondir``,
``gitdir:`` links, ``config.worktree``, ``info/attributes`` filters, alternates,
``.gitmodules``) with the user's credentials at the user's next plain ``git status``. So a
repository is sealed by **allow-list**: inside the sandbox only what git writes in ordinary
work (objects, refs, logs, the index, ``HEAD`` and the other state files, lock files,
commit messages) is writable; every other entry of every ``.git`` in the project is mounted
read-only (``sealed_mounts``). Whatever a command creates that is not on the list — a new
entry at a ``.git`` top level, a new ``alternates``, a ``.git`` file or folder anywhere, a
``.gitmodules`` or ``xclaw.yaml`` — is moved aside after the command (kept, never deleted)
and the call fails with ``PROTECTED_FILE_WRITTEN``. The one new repository kept is the one
``git init`` or ``git clone`` makes: hooks only as samples, a config of plain keys only.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from xclaw.policy.protected import AGENT_CONFIG, ALTERNATES, GIT_MODULES, is_git_writable

# A new repository keeps its config only when every key is one git init / clone writes.
_PLAIN_KEY = re.compile(
    r"^(?:core\.(?:repositoryformatversion|filemode|bare|logallrefupdates|ignorecase"
    r"|precomposeunicode|symlinks)|extensions\.objectformat|init\.defaultbranch"
    r"|remote\.[^.\s]+\.(?:url|fetch)|branch\.[^.\s]+\.(?:remote|merge))$"
)
_NEW_REPO_EXTRA = frozenset({"config", "description", "hooks", "info", "branches"})
_MAX_DIRS = 100_000  # a walk this large stops here (and says so in the notes)


@dataclass(slots=True)
class _Dir:
    mtime_ns: int
    subdirs: tuple[str, ...]
    marked: tuple[str, ...]  # .git / .gitmodules / xclaw.yaml entries in it


@dataclass(slots=True)
class ProjectTree:
    """Every ``.git``, ``.gitmodules`` and ``xclaw.yaml`` under a root. A folder is listed
    again only when its mtime moved, so a rescan costs one ``stat`` per folder."""

    root: Path
    _dirs: dict[str, _Dir] = field(default_factory=dict)
    truncated: bool = False

    def scan(self) -> set[str]:
        found: set[str] = set()
        stack, seen = [str(self.root)], 0
        fresh: dict[str, _Dir] = {}
        while stack and seen < _MAX_DIRS:
            folder = stack.pop()
            seen += 1
            entry = self._list(folder)
            if entry is None:
                continue
            fresh[folder] = entry
            found.update(os.path.join(folder, name) for name in entry.marked)
            stack.extend(os.path.join(folder, name) for name in entry.subdirs)
        self.truncated = bool(stack)
        self._dirs = fresh
        return found

    def _list(self, folder: str) -> _Dir | None:
        try:
            mtime = os.lstat(folder).st_mtime_ns
        except OSError:
            return None
        cached = self._dirs.get(folder)
        if cached is not None and cached.mtime_ns == mtime:
            return cached
        subdirs: list[str] = []
        marked: list[str] = []
        try:
            with os.scandir(folder) as it:
                for e in it:
                    if e.name in (".git", GIT_MODULES, AGENT_CONFIG):
                        marked.append(e.name)
                    elif e.is_dir(follow_symlinks=False):
                        subdirs.append(e.name)
        except OSError:
            return None
        return _Dir(mtime, tuple(subdirs), tuple(marked))


_TREES: dict[Path, ProjectTree] = {}


def project_tree(root: Path) -> ProjectTree:
    tree = _TREES.get(root)
    if tree is None:
        tree = _TREES[root] = ProjectTree(root)
    return tree


def git_dirs(root: Path) -> list[Path]:
    """Every ``.git`` folder (not link, not file) in the project."""
    marks = project_tree(root).scan()
    return sorted(Path(p) for p in marks if p.endswith("/.git") and _real_dir(p))


def _real_dir(path: str) -> bool:
    return os.path.isdir(path) and not os.path.islink(path)


def sealed_mounts(root: Path) -> tuple[list[Path], list[Path]]:
    """(``.git`` folders to bind onto themselves, paths to mount read-only) for the sandbox.

    Binding a ``.git`` onto itself means it cannot be renamed away and replaced; every
    existing entry git does not need to write is mounted read-only over it."""
    marks = project_tree(root).scan()
    gits: list[Path] = []
    sealed: list[Path] = []
    for mark in sorted(marks):
        path = Path(mark)
        if not _inside(path, root):
            continue
        if path.name == ".git" and _real_dir(mark):
            gits.append(path)
            sealed.extend(_sealed_entries(path))
        elif os.path.lexists(mark) and not os.path.islink(mark):
            sealed.append(path)  # a .git file, .gitmodules, xclaw.yaml
    return gits, sealed


def _sealed_entries(git: Path) -> list[Path]:
    out: list[Path] = []
    try:
        names = os.listdir(git)
    except OSError:
        return out
    for name in names:
        if not is_git_writable(name):
            out.append(git / name)
    out.extend(git / rel for rel in ALTERNATES if os.path.lexists(git / rel))
    return [p for p in out if not os.path.islink(p) and _inside(p, git)]


def _inside(path: Path, root: Path) -> bool:
    real = Path(os.path.realpath(path.parent)) / path.name
    return real == root or root in real.parents


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What the seal knows before a command: the marked paths and each repository's top."""

    marks: frozenset[str]
    tops: dict[str, frozenset[str]]
    alternates: dict[str, tuple[int, int] | None]


def snapshot(root: Path) -> Snapshot:
    marks = frozenset(project_tree(root).scan())
    tops: dict[str, frozenset[str]] = {}
    alternates: dict[str, tuple[int, int] | None] = {}
    for mark in marks:
        if mark.endswith("/.git") and _real_dir(mark):
            tops[mark] = _top(mark)
            for rel in ALTERNATES:
                alternates[os.path.join(mark, rel)] = _stamp(os.path.join(mark, rel))
    return Snapshot(marks, tops, alternates)


def _top(git: str) -> frozenset[str]:
    try:
        return frozenset(os.listdir(git))
    except OSError:
        return frozenset()


def _stamp(path: str) -> tuple[int, int] | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns)


_ACCEPTED: dict[Path, Snapshot] = {}


def baseline(root: Path) -> Snapshot:
    """The state the last check accepted (so what a background process wrote since is
    caught too), or a fresh snapshot when there was none."""
    known = _ACCEPTED.get(root)
    if known is None:
        known = _ACCEPTED[root] = snapshot(root)
    return known


def accept_current(root: Path) -> None:
    """A human-approved write of a protected path (fs.write) is the new normal."""
    _ACCEPTED.pop(root, None)


def guard(root: Path) -> list[str]:
    """Check against ``baseline`` and make the result the new baseline."""
    notes = guard_new(root, baseline(root))
    _ACCEPTED[root] = snapshot(root)
    return notes


def guard_new(root: Path, before: Snapshot) -> list[str]:
    """Move aside what a command wrote that the seal does not allow; a note per move."""
    after = snapshot(root)
    stamp = time.strftime("%Y%m%d%H%M%S")
    notes: list[str] = []
    for mark in sorted(after.marks - before.marks):
        notes.extend(_judge_new_mark(Path(mark), stamp))
    for git, top in before.tops.items():
        for name in sorted(after.tops.get(git, frozenset()) - top):
            if not is_git_writable(name):
                notes.append(_move_aside(Path(git) / name, stamp))
    for path, was in before.alternates.items():
        now = after.alternates.get(path)
        if now is not None and now != was:
            notes.append(_move_aside(Path(path), stamp))
    if notes:
        project_tree(root).scan()  # the moves changed folders: list them again
    return notes


def _judge_new_mark(path: Path, stamp: str) -> list[str]:
    if path.name == ".git" and _real_dir(str(path)) and _plain_new_repo(path):
        return []
    if not os.path.lexists(path):
        return []
    return [_move_aside(path, stamp)]


def _plain_new_repo(git: Path) -> bool:
    """The shape ``git init`` / ``git clone`` leaves: known entries, sample hooks, plain
    config keys, no attributes and no alternates."""
    try:
        names = set(os.listdir(git))
    except OSError:
        return False
    if any(not (is_git_writable(n) or n in _NEW_REPO_EXTRA) for n in names):
        return False
    if any(os.path.islink(git / n) for n in names):
        return False
    hooks = git / "hooks"
    if hooks.is_dir() and any(not h.endswith(".sample") for h in os.listdir(hooks)):
        return False
    info = git / "info"
    if info.is_dir() and set(os.listdir(info)) - {"exclude"}:
        return False
    if any(os.path.lexists(git / rel) for rel in ALTERNATES):
        return False
    return _plain_config(git / "config")


def _plain_config(config: Path) -> bool:
    try:
        text = config.read_text(encoding="utf-8")
    except FileNotFoundError:
        return True
    except (OSError, UnicodeDecodeError):
        return False
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        header = re.fullmatch(r'\[\s*([A-Za-z0-9.-]+)(?:\s+"([^"\\]*)")?\s*\]', line)
        if header:
            sub = header.group(2)
            section = header.group(1).lower() + (f".{sub}" if sub is not None else "")
            continue
        key = re.match(r"([A-Za-z][A-Za-z0-9-]*)\s*(?:=|$)", line)
        if key is None or not _PLAIN_KEY.match(f"{section}.{key.group(1).lower()}"):
            return False
    return True


def _move_aside(path: Path, stamp: str) -> str:
    target = path.with_name(f"{path.name}.{stamp}.xclaw-rejected")
    try:
        os.rename(path, target)
    except OSError as err:
        return f"{path} is protected and could not be moved aside ({err.strerror})"
    return f"{path.name} is protected: the command's version was moved to {target}"

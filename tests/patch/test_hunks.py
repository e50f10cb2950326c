"""The in-memory applier against real ``git apply``: same trees (bytes and modes), or both refuse.

Random trees (seeded) of small files with few distinct lines — so most hunks could match at
several places — some executable, some with CRLF ends, some without a last newline, are
edited at random: content edits, mode changes, renames and copies with and without edits,
deletions, new files. Git itself turns each edit into a diff (``-M``, sometimes ``-C``, with 3,
1 or 0 lines of context); then the diff goes through ``parse_patch`` + ``plan_patch`` +
``write_all`` and through ``git apply`` on the same starting tree: the tree it was made from,
and that tree drifted (lines inserted, duplicated near the edits, or removed; executable bits
flipped), so hunks must find their place among overlapping candidates or both must refuse.
A third kind is a model's diff: made from LF text, applied to the files with CRLF ends; there
the oracle is git reading those files with ``eol=crlf`` (as ``core.autocrlf=true`` does).
"""

from __future__ import annotations

import os
import random
import re
import shutil
import stat
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from xclaw.core.errors import ToolError
from xclaw.patch.diffparse import parse_patch
from xclaw.patch.hunks import apply_hunks, lf_hunks_on_crlf, plan_patch, split_lines, write_all

ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "PATH": "/usr/bin:/bin"}
WORDS = ["alpha", "beta", "gamma", "", "    indented", "return x", "}", "\t tab"]
NAMES = ["f.txt", "run.sh", "src/a.py", "src/b.py", "doc/c.md", "tools/build"]
Tree = dict[str, tuple[bytes, bool]]  # path -> (content, executable)
HUNK = re.compile(rb"^@@ -(\d+)((?:,\d+)?) \+(\d+)((?:,\d+)?) @@")


def git(root: Path, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        ["git", *args], cwd=root, input=stdin, capture_output=True, env=ENV, check=False
    )


def random_text(rng: random.Random, n: int, crlf: bool) -> bytes:
    pool = [rng.choice(WORDS) + str(rng.randrange(3)) for _ in range(4)] + ["", "}"]
    lines = [rng.choice(pool) for _ in range(n)]  # few distinct lines: hunks fit many places
    end = "\r\n" if crlf else "\n"
    text = end.join(lines)
    return (text + end if lines and rng.random() < 0.85 else text).encode()


def mutate(rng: random.Random, data: bytes) -> bytes:
    end = b"\r\n" if b"\r\n" in data else b"\n"
    lines = split_lines(data)
    for _ in range(rng.randrange(1, 5)):
        at = rng.randrange(len(lines) + 1)
        op = rng.choice(["insert", "delete", "replace"]) if lines else "insert"
        if op == "insert":
            lines.insert(at, f"new {rng.randrange(50)}".encode() + end)
        elif op == "delete":
            del lines[min(at, len(lines) - 1)]
        else:
            lines[min(at, len(lines) - 1)] = f"changed {rng.randrange(50)}".encode() + end
    out = b"".join(lines)
    return out.rstrip(b"\r\n") if rng.random() < 0.15 else out


def base_tree(rng: random.Random, crlf_share: float) -> Tree:
    tree: Tree = {}
    for name in rng.sample(NAMES, rng.randrange(1, 5)):
        crlf = rng.random() < crlf_share
        tree[name] = (random_text(rng, rng.randrange(0, 30), crlf), rng.random() < 0.3)
    return tree


def edited(rng: random.Random, base: Tree) -> Tree:
    out = dict(base)
    for path, (data, exe) in base.items():
        r = rng.random()
        if r < 0.45:
            out[path] = (mutate(rng, data), exe)
        elif r < 0.55:
            out[path] = (mutate(rng, data) if rng.random() < 0.5 else data, not exe)
        elif r < 0.68:
            del out[path]
            out[f"moved/{path}"] = (mutate(rng, data) if rng.random() < 0.5 else data, exe)
        elif r < 0.76:
            out[f"copy/{path}"] = (mutate(rng, data) if rng.random() < 0.3 else data, exe)
        elif r < 0.84:
            del out[path]
    if rng.random() < 0.3:
        out["new/file.txt"] = (random_text(rng, rng.randrange(0, 8), False), rng.random() < 0.5)
    return out


def drifted(rng: random.Random, tree: Tree) -> Tree:
    """Lines added, duplicated or removed here and there; now and then an executable bit."""
    out = dict(tree)
    for path, (data, exe) in tree.items():
        lines = split_lines(data)
        end = b"\r\n" if b"\r\n" in data else b"\n"
        for _ in range(rng.randrange(0, 4)):
            at = rng.randrange(len(lines) + 1)
            choice = rng.random()
            if choice < 0.4 and lines:  # a copy of nearby lines: a second place to match
                start = rng.randrange(len(lines))
                block = [line if line.endswith(b"\n") else line + end for line in lines]
                lines[at:at] = block[start : start + rng.randrange(1, 5)]
            elif choice < 0.8:
                lines.insert(at, rng.choice(WORDS).encode() + end)
            elif lines:
                del lines[min(at, len(lines) - 1)]
        out[path] = (b"".join(lines), exe ^ (rng.random() < 0.1))
    return out


def renumbered(rng: random.Random, diff: bytes) -> bytes:
    """The diff with wrong line numbers, as a model writes them: every hunk moved a little."""
    out = []
    for line in diff.split(b"\n"):
        m = HUNK.match(line)
        if m:
            shift = rng.randrange(-6, 7)
            old, new = (max(int(m.group(g)) + shift, 1) if int(m.group(g)) else 0 for g in (1, 3))
            line = b"@@ -%d%s +%d%s @@" % (old, m.group(2), new, m.group(4))
        out.append(line)
    return b"\n".join(out)


def ambiguous(rng: random.Random, tree: Tree, diff: bytes) -> Tree:
    """A file where the first hunk's old lines sit as far above as below its stated line
    (and not at it): only the order of the search decides where it lands."""
    out = dict(tree)
    for fp in parse_patch(diff.decode()):
        h = fp.hunks[0] if fp.hunks and fp.old_path in tree else None
        if h is None or h.old_start <= 1 or not h.trailing or not h.old[-1].endswith(b"\n"):
            continue
        assert fp.old_path is not None
        data, exe = tree[fp.old_path]
        end = b"\r\n" if b"\r\n" in data else b"\n"
        lines, at, size = split_lines(data), h.new_start - 1, len(h.old)
        step = rng.randrange((size + 1) // 2, size + 3)
        if at - step < 0:
            continue
        pad = [b"pad %d" % i + end for i in range(2 * step - size)]
        block = [*lines[: at - step], *h.old, *pad, *h.old, *lines[h.old_start - 1 + size :]]
        out[fp.old_path] = (b"".join(block), exe)
        break
    return out


def hunk_text(old_start: int, old: list[bytes], new: list[bytes], after: list[bytes]) -> bytes:
    """One hunk as a model writes it: old lines replaced by new ones, then context."""
    body = [b"-" + line for line in old] + [b"+" + line for line in new]
    body += [b" " + line for line in after]
    counts = (old_start, len(old) + len(after), old_start, len(new) + len(after))
    return b"@@ -%d,%d +%d,%d @@\n" % counts + b"".join(body)


def overlapping(rng: random.Random, tree: Tree) -> bytes | None:
    """Two hunks for one file where the second's old lines are lines the first one leaves
    (its context), stated right there: git looks elsewhere for them, or refuses."""
    for rel, (data, _) in tree.items():
        lines = split_lines(data)
        if len(lines) < 6 or not lines[-1].endswith(b"\n"):
            continue
        end = b"\r\n" if b"\r\n" in data else b"\n"
        at = rng.randrange(1, len(lines) - 4)
        first = hunk_text(at + 1, lines[at : at + 1], [b"first" + end], lines[at + 1 : at + 3])
        second = hunk_text(
            at + 2, lines[at + 1 : at + 2], [b"second" + end], lines[at + 2 : at + 3]
        )
        head = b"diff --git a/%s b/%s\n--- a/%s\n+++ b/%s\n" % ((rel.encode(),) * 4)
        return head + first + second
    return None


def to_crlf(rng: random.Random, tree: Tree) -> tuple[Tree, set[str]]:
    """Some files of an LF tree with every line end made CRLF, and which."""
    out, converted = dict(tree), set()
    for path, (data, exe) in tree.items():
        if b"\n" in data and rng.random() < 0.7:
            out[path] = (data.replace(b"\n", b"\r\n"), exe)
            converted.add(path)
    return out, converted


def write_tree(root: Path, tree: Tree) -> None:
    for entry in root.iterdir():
        if entry.name != ".git":
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    for rel, (data, exe) in tree.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        os.chmod(path, 0o755 if exe else 0o644)


def read_tree(root: Path) -> tuple[Tree, set[str]]:
    """Files with content and executable bit, and every folder (a left-over one counts)."""
    files: Tree = {}
    folders = set()
    for path in root.rglob("*"):
        rel = path.relative_to(root).as_posix()
        if rel == ".git" or rel.startswith(".git/"):
            continue
        if path.is_dir():
            folders.add(rel)
        else:
            files[rel] = (path.read_bytes(), bool(os.stat(path).st_mode & stat.S_IXUSR))
    return files, folders


def make_diff(repo: Path, before: Tree, after: Tree, options: list[str]) -> bytes:
    trees = []
    for tree in (before, after):
        write_tree(repo, tree)
        git(repo, "add", "-A")
        trees.append(git(repo, "write-tree").stdout.decode().strip())
    return git(repo, "diff", *options, *trees).stdout


def ours(root: Path, start: Tree, diff: bytes) -> tuple[Tree, set[str]] | None:
    write_tree(root, start)
    try:
        files = parse_patch(diff.decode())
    except ToolError:
        return None
    changes = plan_patch(root, files)
    if isinstance(changes, str):
        return None
    write_all(root, changes)
    return read_tree(root)


def crlf_reads(start: Tree, diff: bytes) -> set[str]:
    """Paths git must read and write with ``eol=crlf``: where our CRLF rule applies."""
    paths = set()
    for fp in parse_patch(diff.decode()):
        if fp.old_path in start and lf_hunks_on_crlf(start[fp.old_path][0], fp.hunks):
            paths |= {p for p in (fp.old_path, fp.new_path) if p}
    return paths


def theirs(repo: Path, start: Tree, diff: bytes, crlf: set[str]) -> tuple[Tree, set[str]] | None:
    write_tree(repo, start)
    rules = "".join(f"/{p} text eol=crlf\n" for p in sorted(crlf))
    (repo / ".git" / "info" / "attributes").write_text(rules)
    done = git(repo, "apply", "--whitespace=nowarn", "-", stdin=diff)
    return read_tree(repo) if done.returncode == 0 else None


@pytest.mark.parametrize("seed", range(4))
def test_same_trees_as_git_apply(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    repo, mine = tmp_path / "git", tmp_path / "ours"
    for folder in (repo, mine):
        folder.mkdir()
    git(repo, "init", "-q")
    seen: Counter[str] = Counter()
    for _ in range(40):
        lf_model = rng.random() < 0.25  # a model's LF diff applied to CRLF files
        base = base_tree(rng, 0.0 if lf_model else 0.3)
        after = edited(rng, base)
        options = [rng.choice(["-U3", "-U3", "-U1", "-U0"]), "-M"]
        options += ["-C", "--find-copies-harder"] if rng.random() < 0.3 else []
        diff = make_diff(repo, base, after, options)
        if not diff:
            continue
        starts = [
            ("exact", base, diff),
            ("drifted", drifted(rng, base), diff),
            ("renumbered", base, renumbered(rng, diff)),
            ("ambiguous", ambiguous(rng, base, diff), diff),
        ]
        if lf_model:
            starts = [("crlf", to_crlf(rng, start)[0], text) for _, start, text in starts]
        twice = overlapping(rng, base)
        starts += [("overlapping", base, twice)] if twice else []
        for kind, start, text in starts:
            crlf = crlf_reads(start, text)
            want = theirs(repo, start, text, crlf)
            got = ours(mine, start, text)
            assert got == want, (seed, kind, text.decode(), start)
            seen[f"{kind} {'applied' if want else 'refused'}"] += 1
            seen["crlf rule"] += bool(crlf and want)
            if kind == "exact" and "-U0" not in options:
                assert got is not None and got[0] == after, text.decode()
    assert seen["exact applied"] >= 12 and seen["ambiguous applied"] >= 8, seen
    assert seen["overlapping applied"] >= 2 and seen["overlapping refused"] >= 2, seen
    assert seen["drifted refused"] >= 2, seen  # refusals are compared too, not only successes


def test_renames_modes_and_crlf_all_occur() -> None:
    """The generator really makes the kinds of diff the test above claims to compare."""
    rng = random.Random(7)
    kinds: Counter[str] = Counter()
    for _ in range(60):
        base = base_tree(rng, 0.3)
        after = edited(rng, base)
        moved = set(after) - set(base)
        kinds["rename or copy"] += any(p.startswith(("moved/", "copy/")) for p in moved)
        kinds["mode"] += any(p in after and after[p][1] != base[p][1] for p in base)
        kinds["crlf"] += any(b"\r\n" in data for data, _ in base.values())
        kinds["executable"] += any(exe for _, exe in base.values())
    assert min(kinds.values()) >= 10, kinds


def test_anchors_and_missing_newline() -> None:
    diff = (
        "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n"
        "-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"
    )
    (fp,) = parse_patch(diff)
    assert apply_hunks(b"a\nb", fp.hunks) == (b"a\nc", 0)
    assert apply_hunks(b"a\nb\n", fp.hunks) == (None, 1)  # the file's last line has a newline
    assert apply_hunks(b"x\na\nb", fp.hunks) == (None, 1)  # a hunk at line 1 matches at the top

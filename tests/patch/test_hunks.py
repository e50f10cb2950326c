"""The in-memory applier against real ``git apply``: same result, or both refuse.

Random edits of random files (seeded) are turned into diffs by git itself; each diff is then
applied by ``apply_hunks`` and by ``git apply`` to the same file, both as it was and shifted
by lines added at the top (the hunks must still find their place), and the outcomes compared.
"""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest

from xclaw.patch.diffparse import parse_patch
from xclaw.patch.hunks import apply_hunks, split_lines

ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "PATH": "/usr/bin:/bin"}
WORDS = ["alpha", "beta", "gamma", "delta", "", "    indented", "return x", "}", "\t tab"]


def git(root: Path, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        ["git", *args], cwd=root, input=stdin, capture_output=True, env=ENV, check=False
    )


def random_text(rng: random.Random, n: int) -> bytes:
    lines = [
        rng.choice(WORDS) + (str(rng.randrange(5)) if rng.random() < 0.5 else "") for _ in range(n)
    ]
    text = "\n".join(lines)
    return (text + "\n" if rng.random() < 0.8 else text).encode()


def mutate(rng: random.Random, data: bytes) -> bytes:
    lines = split_lines(data)
    for _ in range(rng.randrange(1, 5)):
        op = rng.choice(["insert", "delete", "replace"])
        at = rng.randrange(len(lines) + 1)
        if op == "insert" or not lines:
            lines.insert(at, f"new {rng.randrange(100)}\n".encode())
        elif op == "delete":
            del lines[min(at, len(lines) - 1)]
        else:
            lines[min(at, len(lines) - 1)] = f"changed {rng.randrange(100)}\n".encode()
    out = b"".join(lines)
    if rng.random() < 0.2:
        out = out.rstrip(b"\n")
    return out


def git_apply(root: Path, start: bytes, diff: bytes) -> bytes | None:
    (root / "f.txt").write_bytes(start)
    done = git(root, "apply", "--whitespace=nowarn", "-", stdin=diff)
    return (root / "f.txt").read_bytes() if done.returncode == 0 else None


@pytest.mark.parametrize("seed", range(4))
def test_same_outcome_as_git_apply(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    git(tmp_path, "init", "-q")
    compared = 0
    for _ in range(40):
        old = random_text(rng, rng.randrange(0, 40))
        new = mutate(rng, old)
        (tmp_path / "f.txt").write_bytes(old)
        git(tmp_path, "add", "f.txt")
        (tmp_path / "f.txt").write_bytes(new)
        diff = git(tmp_path, "diff", "--", "f.txt").stdout
        if not diff:
            continue
        (fp,) = parse_patch(diff.decode())
        shifted = b"".join(f"top {i}\n".encode() for i in range(rng.randrange(1, 6))) + old
        for start in (old, shifted):
            ours, _ = apply_hunks(start, fp.hunks)
            assert ours == git_apply(tmp_path, start, diff), (seed, diff.decode(), start)
            compared += 1
        assert apply_hunks(old, fp.hunks)[0] == new
    assert compared >= 40


def test_anchors_and_missing_newline() -> None:
    diff = (
        "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n"
        "-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"
    )
    (fp,) = parse_patch(diff)
    assert apply_hunks(b"a\nb", fp.hunks) == (b"a\nc", 0)
    assert apply_hunks(b"a\nb\n", fp.hunks) == (None, 1)  # the file's last line has a newline
    assert apply_hunks(b"x\na\nb", fp.hunks) == (None, 1)  # a hunk at line 1 matches at the top

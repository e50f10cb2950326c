"""What real diffs contain applies as ``git apply`` applies it (issue 21, item 5).

One test per class the issue found refused or misplaced: edits of executable files, mode
changes, renames and copies, deletions and new executable files, CRLF files (a ``git diff``
of one, and a model's LF diff of one), no newline at the end on either side, binary patches
(refused with their own code), the search order and overlapping hunks. Each is compared with
real ``git apply`` on the same tree; two more run through a whole change job, so the changeset
carries modes and renames and ``replace_text`` keeps a CRLF file CRLF.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from tests.patch.conftest import git as repo_git
from tests.patch.test_hunks import Tree, git, ours, theirs
from tests.patch.test_patch_job import call, job

from xclaw.core.errors import ToolError
from xclaw.patch.diffparse import parse_patch
from xclaw.sandbox.host import HostSandbox

EDIT = "@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"


def both(tmp_path: Path, start: Tree, diff: str, *, crlf: frozenset[str] = frozenset()) -> Tree:
    """Our result, after checking it is git's; ``crlf`` paths git reads with eol=crlf."""
    repo, mine = tmp_path / "git", tmp_path / "ours"
    for folder in (repo, mine):
        folder.mkdir(exist_ok=True)
    git(repo, "init", "-q")
    want = theirs(repo, start, diff.encode(), set(crlf))
    got = ours(mine, start, diff.encode())
    assert got == want
    assert got is not None, "git applies it, and so do we"
    return got[0]


def refused_by_both(tmp_path: Path, start: Tree, diff: str) -> None:
    repo, mine = tmp_path / "git", tmp_path / "ours"
    for folder in (repo, mine):
        folder.mkdir(exist_ok=True)
    git(repo, "init", "-q")
    assert theirs(repo, start, diff.encode(), set()) is None
    assert ours(mine, start, diff.encode()) is None


def test_an_edit_of_an_executable_file_keeps_its_mode(tmp_path: Path) -> None:
    diff = (
        "diff --git a/run.sh b/run.sh\nindex 1111111..2222222 100755\n"
        f"--- a/run.sh\n+++ b/run.sh\n{EDIT}"
    )
    tree = both(tmp_path, {"run.sh": (b"a\nb\nc\n", True)}, diff)
    assert tree == {"run.sh": (b"a\nB\nc\n", True)}


def test_mode_changes_with_and_without_an_edit(tmp_path: Path) -> None:
    alone = "diff --git a/f b/f\nold mode 100644\nnew mode 100755\n"
    assert both(tmp_path, {"f": (b"x\n", False)}, alone) == {"f": (b"x\n", True)}
    edit = f"diff --git a/f b/f\nold mode 100755\nnew mode 100644\n--- a/f\n+++ b/f\n{EDIT}"
    assert both(tmp_path, {"f": (b"a\nb\nc\n", True)}, edit) == {"f": (b"a\nB\nc\n", False)}


def test_renames_and_copies_with_and_without_edits(tmp_path: Path) -> None:
    start: Tree = {"a.txt": (b"a\nb\nc\n", True), "b.txt": (b"other\n", False)}
    diff = (
        "diff --git a/a.txt b/lib/a.txt\nsimilarity index 100%\nrename from a.txt\n"
        "rename to lib/a.txt\n"
        "diff --git a/b.txt b/copy of b.txt\nsimilarity index 100%\ncopy from b.txt\n"
        'copy to copy of b.txt\ndiff --git a/a.txt "b/\\303\\251dit\\303\\251.txt"\n'
        'similarity index 60%\ncopy from a.txt\ncopy to "\\303\\251dit\\303\\251.txt"\n'
        f'--- a/a.txt\n+++ "b/\\303\\251dit\\303\\251.txt"\n{EDIT}'
    )
    assert both(tmp_path, start, diff) == {
        "lib/a.txt": (b"a\nb\nc\n", True),
        "b.txt": (b"other\n", False),
        "copy of b.txt": (b"other\n", False),
        "édité.txt": (b"a\nB\nc\n", True),
    }


def test_a_swap_of_two_files_by_renames(tmp_path: Path) -> None:
    diff = (
        "diff --git a/x b/y\nsimilarity index 100%\nrename from x\nrename to y\n"
        "diff --git a/y b/x\nsimilarity index 100%\nrename from y\nrename to x\n"
    )
    start: Tree = {"x": (b"one\n", False), "y": (b"two\n", True)}
    assert both(tmp_path, start, diff) == {"x": (b"two\n", True), "y": (b"one\n", False)}


def test_deletions_and_new_executable_files(tmp_path: Path) -> None:
    diff = (
        "diff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\nindex 1..0\n"
        "--- a/gone.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-a\n-b\n"
        "diff --git a/empty b/empty\ndeleted file mode 100644\nindex e69de29..0000000\n"
        "diff --git a/bin/tool b/bin/tool\nnew file mode 100755\nindex 0000000..1\n"
        "--- /dev/null\n+++ b/bin/tool\n@@ -0,0 +1,2 @@\n+#!/bin/sh\n+echo hi\n"
    )
    start: Tree = {"gone.txt": (b"a\nb\n", False), "empty": (b"", False)}
    assert both(tmp_path, start, diff) == {"bin/tool": (b"#!/bin/sh\necho hi\n", True)}


def test_a_git_diff_of_a_crlf_file_applies_exactly(tmp_path: Path) -> None:
    diff = (
        "diff --git a/w.bat b/w.bat\n--- a/w.bat\n+++ b/w.bat\n"
        "@@ -1,3 +1,3 @@\n a\r\n-b\r\n+B\r\n c\r\n"
    )
    start: Tree = {"w.bat": (b"a\r\nb\r\nc\r\n", False)}
    assert both(tmp_path, start, diff) == {"w.bat": (b"a\r\nB\r\nc\r\n", False)}


def test_a_diff_with_lf_lines_keeps_a_crlf_file_crlf(tmp_path: Path) -> None:
    """Plain git refuses it; git under core.autocrlf=true (here: eol=crlf) applies it so."""
    diff = f"diff --git a/w.bat b/w.bat\n--- a/w.bat\n+++ b/w.bat\n{EDIT}"
    start: Tree = {"w.bat": (b"a\r\nb\r\nc\r\n", False)}
    tree = both(tmp_path, start, diff, crlf=frozenset({"w.bat"}))
    assert tree == {"w.bat": (b"a\r\nB\r\nc\r\n", False)}


def test_no_newline_at_the_end_on_either_side(tmp_path: Path) -> None:
    head = "diff --git a/f b/f\n--- a/f\n+++ b/f\n"
    gains = head + "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n"
    loses = head + "@@ -1,2 +1,2 @@\n a\n-b\n+b\n\\ No newline at end of file\n"
    assert both(tmp_path, {"f": (b"a\nb", False)}, gains) == {"f": (b"a\nb\n", False)}
    assert both(tmp_path, {"f": (b"a\nb\n", False)}, loses) == {"f": (b"a\nb", False)}


def test_an_empty_context_line_is_read_as_git_reads_it(tmp_path: Path) -> None:
    diff = "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n\n"
    assert both(tmp_path, {"f": (b"a\nb\n\n", False)}, diff) == {"f": (b"a\nB\n\n", False)}


@pytest.mark.parametrize(
    "binary",
    [
        "GIT binary patch\nliteral 3\nKcmZ?wbmsr+0RR91\n\nliteral 0\nKcmV+b0RR6000031\n",
        "Binary files a/logo.png and b/logo.png differ\n",
    ],
)
def test_binary_patches_are_refused_with_their_own_code(binary: str) -> None:
    diff = f"diff --git a/logo.png b/logo.png\nindex 1111111..2222222 100644\n{binary}"
    with pytest.raises(ToolError) as err:
        parse_patch(diff)
    assert err.value.code == "PATCH_BINARY_UNSUPPORTED" and err.value.retryable


def test_the_search_tries_later_lines_before_earlier_ones(tmp_path: Path) -> None:
    """Stated at line 4, the lines match at 3 and at 5: git takes 5."""
    diff = "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -4,2 +4,2 @@\n-x\n+CHANGED\n k\n"
    start: Tree = {"f": (b"a\nb\nx\nk\nx\nk\nz\nw\n", False)}
    assert both(tmp_path, start, diff) == {"f": (b"a\nb\nx\nk\nCHANGED\nk\nz\nw\n", False)}


def test_a_hunk_never_matches_lines_an_earlier_hunk_produced(tmp_path: Path) -> None:
    head = "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"
    into_context = head + "@@ -3,2 +3,2 @@\n-c\n+C\n d\n"  # "c" is the first hunk's context
    refused_by_both(tmp_path, {"f": (b"a\nb\nc\nd\ne\n", False)}, into_context)
    into_new = head + "@@ -2,2 +2,2 @@\n-B\n+BB\n c\n"  # "B" is the first hunk's new line
    start: Tree = {"f": (b"a\nb\nc\nd\nB\nc\nq\n", False)}
    assert both(tmp_path, start, into_new) == {"f": (b"a\nB\nc\nd\nBB\nc\nq\n", False)}


def test_a_change_job_carries_modes_renames_and_new_executables(
    repo: Path, sandbox: HostSandbox
) -> None:
    (repo / "tools").mkdir()
    (repo / "tools" / "run.sh").write_text("#!/bin/sh\necho one\necho two\n")
    os.chmod(repo / "tools" / "run.sh", 0o755)
    repo_git(repo, "add", "tools/run.sh")
    repo_git(repo, "commit", "-q", "-m", "script")
    patch = (
        "diff --git a/tools/run.sh b/tools/run.sh\nindex 1111111..2222222 100755\n"
        "--- a/tools/run.sh\n+++ b/tools/run.sh\n@@ -1,3 +1,3 @@\n #!/bin/sh\n-echo one\n"
        "+echo ONE\n echo two\n"
        "diff --git a/README.md b/docs/README.md\nsimilarity index 100%\n"
        "rename from README.md\nrename to docs/README.md\n"
        "diff --git a/src/app.py b/src/app.py\nold mode 100644\nnew mode 100755\n"
    )
    turns = [{"tool_calls": [call("apply_patch", "p1", patch=patch)]}, "done"]
    record = asyncio.run(job(repo, turns, sandbox).run())
    assert record.status == "review", record.reason
    assert "new mode 100755" in record.diff and "docs/README.md" in record.diff
    asyncio.run(job(repo, [], sandbox).apply(record))
    assert os.access(repo / "tools" / "run.sh", os.X_OK)
    assert (repo / "tools" / "run.sh").read_text().splitlines()[1] == "echo ONE"
    assert os.access(repo / "src" / "app.py", os.X_OK)
    assert (repo / "docs" / "README.md").read_text() == "# demo\n"
    assert not (repo / "README.md").exists()


def test_replace_text_keeps_a_crlf_file_crlf(repo: Path, sandbox: HostSandbox) -> None:
    (repo / "run.bat").write_bytes(b"@echo off\r\necho hello\r\nexit /b 0\r\n")
    repo_git(repo, "add", "run.bat")
    repo_git(repo, "commit", "-q", "-m", "bat")
    edit = call(
        "replace_text", "w1", path="run.bat", oldText="echo hello\nexit", newText="echo hi\nexit"
    )
    turns = [{"tool_calls": [edit]}, {"expect": {"last_ok": True}, "text": "done"}]
    record = asyncio.run(job(repo, turns, sandbox).run())
    assert record.status == "review", record.reason
    asyncio.run(job(repo, [], sandbox).apply(record))
    assert (repo / "run.bat").read_bytes() == b"@echo off\r\necho hi\r\nexit /b 0\r\n"

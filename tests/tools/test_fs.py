"""fs.list / fs.read / fs.write / fs.edit through the real registry: real files, real links."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from xclaw.core.messages import ToolCallPart, ToolResult
from xclaw.core.tooling import PreparedCall
from xclaw.tools.atomic import atomic_write_bytes
from xclaw.tools.base import Workspace
from xclaw.tools.fs import CONTENT_CAP, LINE_CAP, PAGE_CAP, fs_tools
from xclaw.tools.registry import BoundToolbox, ToolRegistry


@pytest.fixture
def tb(root: Path) -> BoundToolbox:
    return ToolRegistry(fs_tools()).bind(Workspace(root))


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder next to the root, with a secret the tools must never read or change."""
    d = (tmp_path / "outside").resolve()
    d.mkdir()
    (d / "secret.txt").write_text("TOP SECRET\n")
    return d


async def call(tb: BoundToolbox, name: str, **args: Any) -> ToolResult:
    prepared = tb.prepare(ToolCallPart("call_1", name, args))
    assert isinstance(prepared, PreparedCall), prepared
    return await tb.execute(prepared, lambda _stream, _text: None)


def names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.rglob("*") if "xclaw-tmp" in p.name)


# --- fs.list ---------------------------------------------------------------------------------


async def test_list_shows_types_sizes_and_respects_depth(tb: BoundToolbox, root: Path) -> None:
    (root / "src" / "pkg" / "deep").mkdir(parents=True)
    (root / "src" / "main.py").write_text("print(1)\n")
    (root / "src" / "pkg" / "mod.py").write_text("x = 1\n")
    (root / "src" / "pkg" / "deep" / "far.py").write_text("")
    (root / "README.md").write_text("hello")

    one = await call(tb, "fs.list", depth=1)
    assert one.ok
    assert one.data["entries"] == [
        {"path": "README.md", "type": "file", "size": 5},
        {"path": "src", "type": "dir"},
    ]
    assert one.data["truncated"] is False

    two = await call(tb, "fs.list", path="src", depth=2)
    assert [e["path"] for e in two.data["entries"]] == [
        "src/main.py",
        "src/pkg",
        "src/pkg/deep",
        "src/pkg/mod.py",
    ]
    assert two.data["entries"][0]["size"] == 9


async def test_list_skips_heavy_folders_but_names_them(tb: BoundToolbox, root: Path) -> None:
    for name in (".git", "node_modules", ".venv", "__pycache__"):
        (root / name / "inner").mkdir(parents=True)
        (root / name / "inner" / "file").write_text("x")
    (root / "keep").mkdir()
    (root / "keep" / "file").write_text("x")

    result = await call(tb, "fs.list", depth=5)
    paths = [e["path"] for e in result.data["entries"]]
    assert paths == [".git", ".venv", "__pycache__", "keep", "keep/file", "node_modules"]
    skipped = {e["path"] for e in result.data["entries"] if e.get("skipped")}
    assert skipped == {".git", ".venv", "__pycache__", "node_modules"}


async def test_list_never_follows_symlinks(tb: BoundToolbox, root: Path, outside: Path) -> None:
    (root / "real.txt").write_text("abc")
    (root / "to_outside").symlink_to(outside)
    (root / "to_file").symlink_to(root / "real.txt")
    (root / "loop").symlink_to(root)

    result = await call(tb, "fs.list", depth=10)
    by_path = {e["path"]: e for e in result.data["entries"]}
    assert set(by_path) == {"loop", "real.txt", "to_file", "to_outside"}
    assert by_path["to_outside"] == {
        "path": "to_outside",
        "type": "symlink",
        "target": str(outside),
    }
    assert by_path["loop"]["type"] == "symlink"
    assert "secret.txt" not in str(result.data)


async def test_list_truncates_breadth_first(tb: BoundToolbox, root: Path) -> None:
    (root / "a_dir").mkdir()
    for i in range(10):
        (root / "a_dir" / f"f{i}").write_text("")
    for name in ("b", "c", "d"):
        (root / name).write_text("")

    result = await call(tb, "fs.list", max_entries=4)
    assert result.ok and result.data["truncated"] is True and result.truncated
    # every top-level entry comes before anything inside a_dir
    assert [e["path"] for e in result.data["entries"]] == ["a_dir", "b", "c", "d"]
    assert "truncated" in result.message


async def test_list_refuses_files_and_escapes(tb: BoundToolbox, root: Path, outside: Path) -> None:
    (root / "f.txt").write_text("x")
    assert (await call(tb, "fs.list", path="f.txt")).error_code == "PATH_NOT_DIRECTORY"
    assert (await call(tb, "fs.list", path="..")).error_code == "PATH_OUTSIDE_ROOT"
    (root / "out").symlink_to(outside)
    escaped = await call(tb, "fs.list", path="out")
    assert escaped.error_code == "PATH_SYMLINK_ESCAPE"
    assert "secret" not in escaped.to_model_text()


# --- fs.read ---------------------------------------------------------------------------------


async def test_read_pages_through_a_file(tb: BoundToolbox, root: Path) -> None:
    (root / "ten.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))

    first = await call(tb, "fs.read", path="ten.txt", max_lines=4)
    assert first.ok
    assert first.data["content"] == "     1\tline 1\n     2\tline 2\n     3\tline 3\n     4\tline 4"
    assert first.data | {"content": ""} == {
        "path": "ten.txt",
        "content": "",
        "start_line": 1,
        "end_line": 4,
        "total_lines": 10,
        "has_more": True,
        "next_start_line": 5,
    }
    last = await call(tb, "fs.read", path="ten.txt", start_line=9, max_lines=4)
    assert last.data["content"] == "     9\tline 9\n    10\tline 10"
    assert (last.data["end_line"], last.data["has_more"], last.data["next_start_line"]) == (
        10,
        False,
        None,
    )


@pytest.mark.parametrize(
    ("raw", "total", "content"),
    [
        (b"", 0, ""),
        (b"one", 1, "     1\tone"),
        (b"one\ntwo", 2, "     1\tone\n     2\ttwo"),
        (b"one\r\ntwo\r\n", 2, "     1\tone\n     2\ttwo"),
        (b"\n\n", 2, "     1\t\n     2\t"),
    ],
)
async def test_read_counts_lines_like_an_editor(
    tb: BoundToolbox, root: Path, raw: bytes, total: int, content: str
) -> None:
    (root / "f.txt").write_bytes(raw)
    result = await call(tb, "fs.read", path="f.txt")
    assert result.ok
    assert (result.data["total_lines"], result.data["content"]) == (total, content)


async def test_read_start_past_the_end_is_an_error(tb: BoundToolbox, root: Path) -> None:
    (root / "f.txt").write_text("a\nb\n")
    result = await call(tb, "fs.read", path="f.txt", start_line=3)
    assert result.error_code == "LINE_OUT_OF_RANGE" and result.retryable
    assert "between 1 and 2" in result.hint


async def test_read_caps_long_lines_and_the_page(tb: BoundToolbox, root: Path) -> None:
    (root / "long.txt").write_text("x" * 5000 + "\nshort\n")
    result = await call(tb, "fs.read", path="long.txt")
    first, second = result.data["content"].split("\n")
    assert len(first) < LINE_CAP + 100 and "3000 more characters" in first
    assert second == "     2\tshort"

    (root / "wide.txt").write_text("".join(f"{i:04d}" + "y" * 96 + "\n" for i in range(3000)))
    page = await call(tb, "fs.read", path="wide.txt", max_lines=3000)
    assert PAGE_CAP - 200 < len(page.data["content"]) <= PAGE_CAP
    end = page.data["end_line"]
    assert page.data["has_more"] and page.data["next_start_line"] == end + 1
    assert page.data["total_lines"] == 3000
    following = await call(tb, "fs.read", path="wide.txt", start_line=end + 1, max_lines=1)
    assert following.data["content"].startswith(f"{end + 1:>6}\t{end:04d}yyy")


@pytest.mark.parametrize("trailing_newline", [True, False])
async def test_read_large_file_streams_one_page(
    tb: BoundToolbox, root: Path, trailing_newline: bool
) -> None:
    body = "\n".join(f"row {i:06d} " + "z" * 40 for i in range(1, 40_001))
    (root / "big.log").write_text(body + ("\n" if trailing_newline else ""))
    assert (root / "big.log").stat().st_size > 1 << 20

    tail = await call(tb, "fs.read", path="big.log", start_line=39_999, max_lines=5)
    assert tail.data["total_lines"] == 40_000
    assert tail.data["content"].split("\n")[0].startswith(" 39999\trow 039999 ")
    assert (tail.data["end_line"], tail.data["has_more"]) == (40_000, False)

    head = await call(tb, "fs.read", path="big.log", max_lines=3)
    assert head.data["total_lines"] == 40_000 and head.data["next_start_line"] == 4
    assert head.data["content"].split("\n")[2].startswith("     3\trow 000003")


@pytest.mark.parametrize(
    ("name", "raw", "mime"),
    [
        ("pic.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "image/png"),
        ("latin1.txt", "café au lait\n".encode("latin-1"), "text/plain"),
        ("blob", b"\xff\xfe\xfd" * 10, "application/octet-stream"),
        ("huge.dat", b"\x00" + b"a" * (2 << 20), "application/octet-stream"),
        ("huge.txt", b"\xff" + b"a\n" * (1 << 20), "text/plain"),
    ],
)
async def test_read_binary_returns_metadata_only(
    tb: BoundToolbox, root: Path, name: str, raw: bytes, mime: str
) -> None:
    (root / name).write_bytes(raw)
    result = await call(tb, "fs.read", path=name)
    assert result.ok and result.data["binary"] is True
    assert result.data["size"] == len(raw)
    assert result.data["mime_type"] == mime
    assert result.data["sha256"] == hashlib.sha256(raw).hexdigest()
    assert "content" not in result.data and "binary" in result.message


async def test_read_sniffs_only_the_head_for_nul(tb: BoundToolbox, root: Path) -> None:
    """A NUL far into a large text file (a log with one stray byte) does not hide the text."""
    (root / "app.log").write_bytes(b"ok\n" * 400_000 + b"\x00")
    result = await call(tb, "fs.read", path="app.log", max_lines=2)
    assert result.data["content"] == "     1\tok\n     2\tok"
    assert result.data["total_lines"] == 400_001


async def test_read_refuses_folders_missing_files_and_escapes(
    tb: BoundToolbox, root: Path, outside: Path
) -> None:
    (root / "sub").mkdir()
    (root / "linkdir").symlink_to(outside)
    (root / "link.txt").symlink_to(outside / "secret.txt")
    cases = {
        "sub": "PATH_IS_DIRECTORY",
        "nope.txt": "PATH_NOT_FOUND",
        "../outside/secret.txt": "PATH_OUTSIDE_ROOT",
        str(outside / "secret.txt"): "PATH_OUTSIDE_ROOT",
        "link.txt": "PATH_SYMLINK_ESCAPE",
        "linkdir/secret.txt": "PATH_SYMLINK_ESCAPE",
    }
    for raw, code in cases.items():
        result = await call(tb, "fs.read", path=raw)
        assert (raw, result.ok, result.error_code) == (raw, False, code)
        assert "TOP SECRET" not in result.to_model_text()
    assert tb.workspace.read_stamps == {}


async def test_read_follows_links_that_stay_inside(tb: BoundToolbox, root: Path) -> None:
    (root / "real.txt").write_text("inside\n")
    (root / "alias.txt").symlink_to("real.txt")
    result = await call(tb, "fs.read", path="alias.txt")
    assert result.data["content"] == "     1\tinside" and result.data["path"] == "real.txt"


# --- fs.write --------------------------------------------------------------------------------


async def test_write_creates_parents_and_records_the_change(tb: BoundToolbox, root: Path) -> None:
    result = await call(tb, "fs.write", path="a/b/new.txt", content="héllo\n", mode="create")
    assert result.ok
    assert result.data == {"path": "a/b/new.txt", "bytes_written": 7, "created": True}
    assert (root / "a" / "b" / "new.txt").read_text() == "héllo\n"
    assert tb.workspace.changed_files == ["a/b/new.txt"]
    st = (root / "a" / "b" / "new.txt").stat()
    assert tb.workspace.read_stamps["a/b/new.txt"] == (st.st_mtime_ns, st.st_size)
    assert leftovers(root) == []

    again = await call(tb, "fs.write", path="a/b/new.txt", content="second")
    assert again.ok and again.data["created"] is False
    assert (root / "a" / "b" / "new.txt").read_text() == "second"
    assert tb.workspace.changed_files == ["a/b/new.txt"]


async def test_write_create_mode_refuses_existing_file(tb: BoundToolbox, root: Path) -> None:
    (root / "keep.txt").write_text("original")
    result = await call(tb, "fs.write", path="keep.txt", content="new", mode="create")
    assert result.error_code == "FILE_EXISTS"
    assert (root / "keep.txt").read_text() == "original"
    assert tb.workspace.changed_files == []


@pytest.mark.parametrize("mode", [0o755, 0o640, 0o600])
async def test_write_keeps_permission_bits(tb: BoundToolbox, root: Path, mode: int) -> None:
    target = root / "script.sh"
    target.write_text("#!/bin/sh\n")
    target.chmod(mode)
    assert (await call(tb, "fs.write", path="script.sh", content="#!/bin/sh\necho hi\n")).ok
    assert stat.S_IMODE(target.stat().st_mode) == mode
    assert target.read_text().endswith("echo hi\n")


async def test_write_new_file_gets_umask_permissions(tb: BoundToolbox, root: Path) -> None:
    old = os.umask(0o027)
    try:
        assert (await call(tb, "fs.write", path="new.txt", content="x")).ok
    finally:
        os.umask(old)
    assert stat.S_IMODE((root / "new.txt").stat().st_mode) == 0o640


async def test_write_refuses_symlinks_even_inside(tb: BoundToolbox, root: Path) -> None:
    (root / "real.txt").write_text("real")
    (root / "link.txt").symlink_to("real.txt")
    (root / "dangling.txt").symlink_to("missing.txt")
    for raw in ("link.txt", "dangling.txt"):
        result = await call(tb, "fs.write", path=raw, content="changed")
        assert result.error_code == "PATH_IS_SYMLINK", raw
    assert (root / "real.txt").read_text() == "real"
    assert (root / "link.txt").is_symlink() and not (root / "missing.txt").exists()


async def test_write_refuses_escapes_and_leaves_outside_untouched(
    tb: BoundToolbox, root: Path, outside: Path
) -> None:
    (root / "linkdir").symlink_to(outside)
    (root / "link.txt").symlink_to(outside / "secret.txt")
    cases = {
        "../outside/secret.txt": "PATH_OUTSIDE_ROOT",
        "../outside/new.txt": "PATH_OUTSIDE_ROOT",
        str(outside / "secret.txt"): "PATH_OUTSIDE_ROOT",
        "linkdir/secret.txt": "PATH_SYMLINK_ESCAPE",
        "linkdir/new.txt": "PATH_SYMLINK_ESCAPE",
        "link.txt": "PATH_SYMLINK_ESCAPE",
    }
    for raw, code in cases.items():
        result = await call(tb, "fs.write", path=raw, content="pwned")
        assert (raw, result.error_code) == (raw, code)
    assert names(outside) == ["secret.txt"]
    assert (outside / "secret.txt").read_text() == "TOP SECRET\n"
    assert tb.workspace.changed_files == []


async def test_write_onto_a_folder_fails_cleanly(tb: BoundToolbox, root: Path) -> None:
    (root / "dir").mkdir()
    (root / "dir" / "inside.txt").write_text("kept")
    (root / "file.txt").write_text("plain")
    assert (await call(tb, "fs.write", path="dir", content="x")).error_code == "PATH_IS_DIRECTORY"
    under_file = await call(tb, "fs.write", path="file.txt/child.txt", content="x")
    assert not under_file.ok and (under_file.error_code or "").startswith("PATH_")
    assert (root / "dir" / "inside.txt").read_text() == "kept"
    assert (root / "file.txt").read_text() == "plain"
    assert leftovers(root) == []


async def test_write_refuses_oversized_content(tb: BoundToolbox, root: Path) -> None:
    result = await call(tb, "fs.write", path="big.txt", content="a" * (CONTENT_CAP + 1))
    assert result.error_code == "CONTENT_TOO_LARGE"
    assert not (root / "big.txt").exists()


def test_atomic_write_cleans_up_after_a_failed_replace(root: Path) -> None:
    (root / "dir").mkdir()
    (root / "dir" / "child").write_text("kept")
    with pytest.raises(OSError):
        atomic_write_bytes(root / "dir", b"new content")
    assert (root / "dir" / "child").read_text() == "kept"
    assert leftovers(root) == []
    with pytest.raises(FileNotFoundError):
        atomic_write_bytes(root / "missing" / "f.txt", b"x")
    assert names(root) == ["dir"]


def test_atomic_write_replaces_the_inode(root: Path) -> None:
    """A reader holding the old file keeps seeing whole old content, never a mix."""
    target = root / "f.txt"
    target.write_bytes(b"old content")
    with target.open("rb") as reader:
        atomic_write_bytes(target, b"new")
        assert reader.read() == b"old content"
    assert target.read_bytes() == b"new" and leftovers(root) == []


# --- fs.edit ---------------------------------------------------------------------------------

SOURCE = "def f():\n    return 1\n\n\ndef g():\n    return 2\n"


async def read_then_edit(tb: BoundToolbox, path: str, old: str, new: str) -> ToolResult:
    assert (await call(tb, "fs.read", path=path)).ok
    return await call(tb, "fs.edit", path=path, old_text=old, new_text=new)


async def test_edit_replaces_one_passage(tb: BoundToolbox, root: Path) -> None:
    (root / "m.py").write_text(SOURCE)
    (root / "m.py").chmod(0o754)
    result = await read_then_edit(tb, "m.py", "    return 2\n", "    x = 2\n    return x\n")
    assert result.ok, result
    assert (root / "m.py").read_text() == SOURCE.replace(
        "    return 2\n", "    x = 2\n    return x\n"
    )
    assert (result.data["start_line"], result.data["end_line"]) == (6, 7)
    assert "     7\t    return x" in result.data["snippet"]
    assert stat.S_IMODE((root / "m.py").stat().st_mode) == 0o754
    assert tb.workspace.changed_files == ["m.py"]
    assert leftovers(root) == []
    # the stamp moved with the edit, so a second edit needs no new read
    second = await call(tb, "fs.edit", path="m.py", old_text="return 1", new_text="return 10")
    assert second.ok and (second.data["start_line"], second.data["end_line"]) == (2, 2)


async def test_edit_requires_a_read_in_this_run(tb: BoundToolbox, root: Path) -> None:
    (root / "m.py").write_text(SOURCE)
    result = await call(tb, "fs.edit", path="m.py", old_text="return 1", new_text="return 3")
    assert result.error_code == "FILE_NOT_READ" and "fs.read" in result.hint
    assert (root / "m.py").read_text() == SOURCE


async def test_edit_allowed_after_own_write(tb: BoundToolbox, root: Path) -> None:
    assert (await call(tb, "fs.write", path="m.py", content=SOURCE)).ok
    result = await call(tb, "fs.edit", path="m.py", old_text="return 1", new_text="return 3")
    assert result.ok and "return 3" in (root / "m.py").read_text()


async def test_edit_refuses_a_file_changed_since_read(tb: BoundToolbox, root: Path) -> None:
    target = root / "m.py"
    target.write_text(SOURCE)
    assert (await call(tb, "fs.read", path="m.py")).ok
    target.write_text(SOURCE + "# someone else\n")
    result = await call(tb, "fs.edit", path="m.py", old_text="return 1", new_text="return 3")
    assert result.error_code == "FILE_CHANGED_SINCE_READ" and result.retryable
    assert "fs.read" in result.hint
    assert target.read_text() == SOURCE + "# someone else\n"

    # same size, new mtime: still caught
    assert (await call(tb, "fs.read", path="m.py")).ok
    target.write_text(SOURCE.replace("1", "9") + "# someone else\n")
    os.utime(target, ns=(1, 1))
    again = await call(tb, "fs.edit", path="m.py", old_text="return 9", new_text="return 3")
    assert again.error_code == "FILE_CHANGED_SINCE_READ"


async def test_edit_no_match_and_ambiguous(tb: BoundToolbox, root: Path) -> None:
    (root / "m.py").write_text(SOURCE)
    missing = await read_then_edit(tb, "m.py", "return 3", "return 4")
    assert missing.error_code == "EDIT_NO_MATCH" and "fs.read" in missing.hint

    spacing = await call(tb, "fs.edit", path="m.py", old_text="def f():\n  return 1", new_text="")
    assert spacing.error_code == "EDIT_NO_MATCH" and "whitespace" in spacing.hint

    twice = await call(tb, "fs.edit", path="m.py", old_text="    return", new_text="    yield")
    assert twice.error_code == "EDIT_AMBIGUOUS" and twice.retryable
    assert twice.data == {"count": 2, "lines": [2, 6]}
    assert "2 times" in twice.message
    assert (root / "m.py").read_text() == SOURCE


async def test_edit_counts_overlapping_matches(tb: BoundToolbox, root: Path) -> None:
    (root / "a.txt").write_text("aaa\n")
    result = await read_then_edit(tb, "a.txt", "aa", "b")
    assert result.error_code == "EDIT_AMBIGUOUS"
    assert (root / "a.txt").read_text() == "aaa\n"


async def test_edit_keeps_crlf_endings(tb: BoundToolbox, root: Path) -> None:
    (root / "w.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    result = await read_then_edit(tb, "w.txt", "one\ntwo\n", "1\n2\n")
    assert result.ok, result
    assert (root / "w.txt").read_bytes() == b"1\r\n2\r\nthree\r\n"


async def test_edit_refuses_noop_links_and_non_text(tb: BoundToolbox, root: Path) -> None:
    (root / "m.py").write_text(SOURCE)
    same = await read_then_edit(tb, "m.py", "return 1", "return 1")
    assert same.error_code == "EDIT_NO_CHANGE"

    (root / "alias.py").symlink_to("m.py")
    linked = await call(tb, "fs.edit", path="alias.py", old_text="return 1", new_text="return 5")
    assert linked.error_code == "PATH_IS_SYMLINK"

    (root / "l1.txt").write_bytes("café\n".encode("latin-1"))
    latin = await read_then_edit(tb, "l1.txt", "caf", "tea")
    assert latin.error_code == "FILE_NOT_TEXT"
    assert (root / "m.py").read_text() == SOURCE
    assert (root / "l1.txt").read_bytes() == "café\n".encode("latin-1")
    assert tb.workspace.changed_files == []


async def test_edit_refuses_escapes(tb: BoundToolbox, root: Path, outside: Path) -> None:
    (root / "link.txt").symlink_to(outside / "secret.txt")
    for raw in ("../outside/secret.txt", "link.txt", str(outside / "secret.txt")):
        result = await call(tb, "fs.edit", path=raw, old_text="TOP", new_text="NO")
        assert not result.ok and (result.error_code or "").startswith("PATH_"), raw
    assert (outside / "secret.txt").read_text() == "TOP SECRET\n"

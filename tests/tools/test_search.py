"""fs.search: ripgrep and the Python fallback give the same answers on the same real tree."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from xclaw.core.errors import ToolError
from xclaw.core.messages import ToolCallPart, ToolResult
from xclaw.core.tooling import PreparedCall
from xclaw.tools.base import Workspace
from xclaw.tools.fs import fs_tools
from xclaw.tools.registry import BoundToolbox, ToolRegistry
from xclaw.tools.search import TEXT_CAP, Engine, SearchQuery, glob_to_regex, search

ENGINES: tuple[Engine, ...] = ("rg", "python")


@pytest.fixture
def tree(root: Path, tmp_path: Path) -> Path:
    files = {
        "top.py": "import os\nTODO: top\n",
        "src/a.py": "def alpha():\n    return 'Needle'\n# todo lower\n",
        "src/sub/b.py": "needle = 1\nNEEDLE = 2\n",
        "src/sub/c.ts": "const needle = 'x';\n",
        "src/a b.py": "needle with space\n",
        "src/a-b.py": "needle dash\n",
        "docs/guide.md": "Find the needle.\n--flag needle\nfoo(bar\n",
        "docs/win.txt": "crlf needle\r\nnext\r\n",
        "node_modules/pkg/index.js": "needle in node_modules\n",
        ".hidden/h.py": "needle hidden\n",
        ".dot.py": "needle dotfile\n",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "data.bin").write_bytes(b"\x00needle binary\n")
    (root / "latin.txt").write_bytes("café needle\n".encode("latin-1"))
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "o.py").write_text("needle outside\n")
    (root / "linked_dir").symlink_to(outside)
    (root / "linked.py").symlink_to(root / "top.py")
    return root


def tb(root: Path) -> BoundToolbox:
    return ToolRegistry(fs_tools()).bind(Workspace(root))


async def call(box: BoundToolbox, **args: Any) -> ToolResult:
    prepared = box.prepare(ToolCallPart("call_1", "fs.search", args))
    assert isinstance(prepared, PreparedCall), prepared
    return await box.execute(prepared, lambda _stream, _text: None)


def hits(matches: list[dict[str, Any]]) -> list[tuple[str, int]]:
    return [(m["path"], m["line"]) for m in matches]


QUERIES: dict[str, tuple[dict[str, Any], str]] = {
    "literal": ({"pattern": "needle"}, "."),
    "literal-ignore-case": ({"pattern": "needle", "case_sensitive": False}, "."),
    "regex": ({"pattern": r"^\s+return '\w+'$", "regex": True}, "."),
    "regex-ignore-case": ({"pattern": "todo", "regex": True, "case_sensitive": False}, "."),
    "literal-metachars": ({"pattern": "foo(bar"}, "."),
    "leading-dashes": ({"pattern": "--flag"}, "."),
    "glob-name": ({"pattern": "needle", "glob": "*.py"}, "."),
    "glob-anchored": ({"pattern": "needle", "glob": "src/*.py"}, "."),
    "glob-double-star": ({"pattern": "needle", "glob": "src/**/*.py"}, "."),
    "glob-braces": ({"pattern": "needle", "glob": "*.{ts,md}"}, "."),
    "glob-class": ({"pattern": "needle", "glob": "[ab].py"}, "."),
    "subdir": ({"pattern": "needle"}, "src/sub"),
    "single-file": ({"pattern": "needle", "glob": "*.md"}, "src/sub/b.py"),
    "truncated": ({"pattern": "needle", "max_results": 3}, "."),
    "exact-fit": ({"pattern": "NEEDLE", "max_results": 1}, "."),
}


@pytest.mark.parametrize("name", list(QUERIES))
async def test_engines_agree(tree: Path, name: str) -> None:
    args, where = QUERIES[name]
    q = SearchQuery(**args)
    rg = await search(tree, tree / where, q, engine="rg")
    py = await search(tree, tree / where, q, engine="python")
    assert (rg.engine, py.engine) == ("rg", "python")
    assert rg.matches == py.matches
    assert rg.truncated == py.truncated
    assert rg.matches, "every query should find something"


async def test_literal_search_finds_exactly_the_visible_text_files(tree: Path) -> None:
    for engine in ENGINES:
        out = await search(tree, tree, SearchQuery("needle"), engine=engine)
        assert hits(out.matches) == [
            ("docs/guide.md", 1),
            ("docs/guide.md", 2),
            ("docs/win.txt", 1),
            ("latin.txt", 1),
            ("src/a b.py", 1),
            ("src/a-b.py", 1),
            ("src/sub/b.py", 1),
            ("src/sub/c.ts", 1),
        ], engine
        by_path = {m["path"]: m["text"] for m in out.matches}
        assert by_path["docs/win.txt"] == "crlf needle"  # no \r
        assert by_path["latin.txt"] == "caf\ufffd needle"
        assert out.truncated is False


async def test_options_change_the_answer(tree: Path) -> None:
    for engine in ENGINES:
        folded = await search(
            tree, tree / "src", SearchQuery("needle", case_sensitive=False), engine=engine
        )
        assert ("src/a.py", 2) in hits(folded.matches) and ("src/sub/b.py", 2) in hits(
            folded.matches
        )
        only_py = await search(tree, tree, SearchQuery("needle", glob="src/*.py"), engine=engine)
        assert hits(only_py.matches) == [("src/a b.py", 1), ("src/a-b.py", 1)]
        capped = await search(tree, tree, SearchQuery("needle", max_results=2), engine=engine)
        assert len(capped.matches) == 2 and capped.truncated
        exact = await search(tree, tree, SearchQuery("NEEDLE", max_results=1), engine=engine)
        assert len(exact.matches) == 1 and not exact.truncated


async def test_long_lines_are_cut(root: Path) -> None:
    (root / "min.js").write_text("x" * 10_000 + "needle" + "y" * 10_000 + "\n")
    for engine in ENGINES:
        out = await search(root, root, SearchQuery("needle"), engine=engine)
        assert len(out.matches[0]["text"]) == TEXT_CAP + 1


@pytest.mark.parametrize("engine", ENGINES)
async def test_invalid_regex_is_reported(tree: Path, engine: Engine) -> None:
    with pytest.raises(ToolError) as info:
        await search(tree, tree, SearchQuery("foo(", regex=True), engine=engine)
    assert info.value.code == "SEARCH_PATTERN_INVALID" and info.value.retryable


async def test_rg_dialect_errors_do_not_suggest_flags_the_model_lacks(tree: Path) -> None:
    with pytest.raises(ToolError) as info:
        await search(tree, tree, SearchQuery("(?<=a)b", regex=True), engine="rg")
    assert info.value.code == "SEARCH_PATTERN_INVALID"
    assert "look-around" in info.value.message and "pcre2" not in info.value.message


def git_init(root: Path) -> None:
    subprocess.run(["git", "init", "-q", str(root)], check=True)


async def test_rg_respects_gitignore(root: Path) -> None:
    git_init(root)
    (root / ".gitignore").write_text("build/\n")
    (root / "build").mkdir()
    (root / "build" / "out.js").write_text("needle built\n")
    (root / "app.js").write_text("needle app\n")
    out = await search(root, root, SearchQuery("needle"), engine="rg")
    assert hits(out.matches) == [("app.js", 1)]


async def test_tool_uses_rg_and_reports_the_shape(tree: Path) -> None:
    result = await call(tb(tree), pattern="needle", path="src/sub")
    assert result.ok
    assert result.data == {
        "matches": [
            {"path": "src/sub/b.py", "line": 1, "text": "needle = 1"},
            {"path": "src/sub/c.ts", "line": 1, "text": "const needle = 'x';"},
        ],
        "truncated": False,
        "engine": "rg",
    }
    assert "2 matching lines in 2 file(s)" in result.message


async def test_tool_falls_back_without_rg(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    result = await call(tb(tree), pattern="needle", path="src/sub")
    assert result.ok and result.data["engine"] == "python"
    assert hits(result.data["matches"]) == [("src/sub/b.py", 1), ("src/sub/c.ts", 1)]
    with pytest.raises(ToolError) as info:
        await search(tree, tree, SearchQuery("x"), engine="rg")
    assert info.value.code == "SEARCH_ENGINE_MISSING"


async def test_tool_failures_are_structured(tree: Path) -> None:
    box = tb(tree)
    bad = await call(box, pattern="(", regex=True)
    assert bad.error_code == "SEARCH_PATTERN_INVALID" and bad.retryable
    for path, code in (("..", "PATH_OUTSIDE_ROOT"), ("linked_dir", "PATH_SYMLINK_ESCAPE")):
        refused = await call(box, pattern="needle", path=path)
        assert refused.error_code == code
        assert "needle outside" not in refused.to_model_text()
    missing = await call(box, pattern="needle", path="nope")
    assert missing.error_code == "PATH_NOT_FOUND"
    empty = box.prepare(ToolCallPart("c", "fs.search", {"pattern": ""}))
    assert isinstance(empty, ToolResult) and empty.error_code == "TOOL_ARGUMENTS_INVALID"


@pytest.mark.parametrize(
    ("glob", "yes", "no"),
    [
        ("*.py", ["a.py", ".py"], ["a.pyc", "a/py"]),
        ("src/**/*.py", ["src/a.py", "src/x/y/a.py"], ["lib/src/a.py", "src/a.ts"]),
        ("*.{ts,tsx}", ["a.ts", "a.tsx"], ["a.t", "a.js"]),
        ("[!a]?.md", ["bc.md"], ["ac.md", "b.md"]),
        ("a+b(1).txt", ["a+b(1).txt"], ["aab1.txt"]),
    ],
)
def test_glob_to_regex(glob: str, yes: list[str], no: list[str]) -> None:
    rx = re.compile(glob_to_regex(glob))
    assert [p for p in yes if not rx.fullmatch(p)] == []
    assert [p for p in no if rx.fullmatch(p)] == []

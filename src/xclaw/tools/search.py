"""fs.search: ripgrep when it is installed, a pure-Python walk otherwise (seed 000 §7.2).

Both engines give the same answer on the same tree: matching lines in ripgrep's traversal
order (each folder's entries sorted by name, depth first), hidden entries and node_modules
skipped, symlinks not followed, files with a NUL byte treated as binary and skipped. Only
ripgrep also honours .gitignore.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import re
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field

from xclaw.core.errors import ToolError
from xclaw.core.messages import ToolResult
from xclaw.tools.base import ToolContext, tool

Engine = Literal["rg", "python"]

TEXT_CAP = 300  # characters of one matching line
RESULT_BUDGET = 40_000  # characters of matches, kept under the tool's output cap
_SKIP_NAMES = frozenset({"node_modules"})
_SNIFF = 8192
_RG_STREAM_LIMIT = 1 << 26  # one JSON line per match; minified files have very long lines


@dataclass(frozen=True, slots=True)
class SearchQuery:
    pattern: str
    glob: str | None = None
    regex: bool = False
    case_sensitive: bool = True
    max_results: int = 200


@dataclass(slots=True)
class SearchOutcome:
    matches: list[dict[str, Any]] = field(default_factory=list)
    truncated: bool = False
    engine: Engine = "python"
    warning: str = ""
    _used: int = 0

    def add(self, path: str, line: int, text: str, max_results: int) -> bool:
        """Record a match; False once the result is full (the extra match sets truncated)."""
        if len(self.matches) >= max_results or self._used > RESULT_BUDGET:
            self.truncated = True
            return False
        if len(text) > TEXT_CAP:
            text = text[:TEXT_CAP] + "…"
        self.matches.append({"path": path, "line": line, "text": text})
        self._used += len(path) + len(text) + 30
        return True


def _invalid_pattern(detail: str) -> ToolError:
    return ToolError(
        f"The search pattern is not a valid regular expression: {detail}",
        code="SEARCH_PATTERN_INVALID",
        hint="Fix the expression, or pass regex=false to search for the literal text.",
        retryable=True,
    )


async def search(
    root: Path, target: Path, query: SearchQuery, *, engine: Engine | None = None
) -> SearchOutcome:
    """Search ``target`` (a file or folder); paths in the result are relative to ``root``."""
    rg = shutil.which("rg") if engine in (None, "rg") else None
    if engine == "rg" and rg is None:
        raise ToolError("ripgrep (rg) is not installed.", code="SEARCH_ENGINE_MISSING")
    if rg is not None:
        return await _search_rg(rg, root, target, query)
    return await asyncio.to_thread(_search_python, root, target, query)


def _rg_argv(target: Path, q: SearchQuery) -> list[str]:
    argv = ["--json", "--no-config", "--no-follow", "--sort", "path"]
    argv.append("--case-sensitive" if q.case_sensitive else "--ignore-case")
    if not q.regex:
        argv.append("--fixed-strings")
    if q.glob:
        argv += ["--glob", q.glob]
    # A positive --glob overrides ripgrep's hidden-file rule; these keep both engines alike.
    argv += ["--glob", "!.*", "--glob", "!node_modules/", "--", q.pattern, str(target)]
    return argv


async def _search_rg(rg: str, root: Path, target: Path, q: SearchQuery) -> SearchOutcome:
    proc = await asyncio.create_subprocess_exec(
        rg,
        *_rg_argv(target, q),
        cwd=root,  # ripgrep matches globs with a slash against paths relative to its cwd
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        limit=_RG_STREAM_LIMIT,
    )
    assert proc.stdout is not None and proc.stderr is not None
    out = SearchOutcome(engine="rg")
    stderr_task = asyncio.ensure_future(proc.stderr.read())
    finished = False
    try:
        async for raw in proc.stdout:
            hit = _parse_rg_line(raw, root)
            if hit is not None and not out.add(*hit, q.max_results):
                break
        else:
            finished = True
    finally:
        if not finished and proc.returncode is None:  # enough matches, or cancelled
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        await proc.wait()
        stderr = (await stderr_task).decode("utf-8", "replace")
    if proc.returncode == 2:  # an error; matches found elsewhere are still good
        if "regex parse error" in stderr and not out.matches:
            raise _invalid_pattern(stderr.split("\n\nConsider")[0].strip())  # no --pcre2 here
        out.warning = stderr.strip()[:500]
    return out


def _parse_rg_line(raw: bytes, root: Path) -> tuple[str, int, str] | None:
    if not raw.startswith(b'{"type":"match"'):
        return None  # begin/end/context/summary records
    data = json.loads(raw)["data"]
    path = _rg_text(data["path"])
    text = _rg_text(data["lines"]).rstrip("\r\n")
    return _display(Path(path), root), int(data["line_number"]), text


def _rg_text(value: dict[str, str]) -> str:
    """ripgrep sends non-UTF-8 paths and lines as base64 ``bytes``."""
    if "text" in value:
        return value["text"]
    return base64.b64decode(value["bytes"]).decode("utf-8", "replace")


def _display(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()  # under a granted folder outside the root


def _search_python(root: Path, target: Path, q: SearchQuery) -> SearchOutcome:
    matches = _line_matcher(q)
    want = _glob_matcher(q.glob)
    out = SearchOutcome(engine="python")
    files = [target] if target.is_file() else _walk_files(target)
    for file in files:
        rel = _display(file, root)
        if file is not target and not want(rel):
            continue
        for line, text in _matching_lines(file, matches):
            if not out.add(rel, line, text, q.max_results):
                return out
    return out


def _walk_files(directory: Path) -> Iterator[Path]:
    """ripgrep's order: each folder's entries sorted by name, descending as they come."""
    try:
        with os.scandir(directory) as it:
            items = sorted(it, key=lambda e: e.name)
    except OSError:
        return
    for item in items:
        if item.name.startswith(".") or item.name in _SKIP_NAMES or item.is_symlink():
            continue
        if item.is_dir(follow_symlinks=False):
            yield from _walk_files(Path(item.path))
        elif item.is_file(follow_symlinks=False):
            yield Path(item.path)


def _matching_lines(file: Path, matches: Callable[[str], bool]) -> Iterator[tuple[int, str]]:
    try:
        data = file.read_bytes()
    except OSError:
        return
    if b"\0" in data:
        return
    for n, line in enumerate(data.decode("utf-8", "replace").split("\n"), 1):
        line = line.rstrip("\r")
        if matches(line):
            yield n, line


def _line_matcher(q: SearchQuery) -> Callable[[str], bool]:
    if not q.regex and q.case_sensitive:
        pattern = q.pattern
        return lambda line: pattern in line
    source = q.pattern if q.regex else re.escape(q.pattern)
    try:
        compiled = re.compile(source, 0 if q.case_sensitive else re.IGNORECASE)
    except re.error as err:
        raise _invalid_pattern(str(err)) from None
    return lambda line: compiled.search(line) is not None


def _glob_matcher(glob: str | None) -> Callable[[str], bool]:
    """ripgrep-style globs: no slash matches the file name, a slash matches the root path."""
    if not glob:
        return lambda _rel: True
    compiled = re.compile(glob_to_regex(glob.removeprefix("/")))
    if "/" in glob:
        return lambda rel: compiled.fullmatch(rel) is not None
    return lambda rel: compiled.fullmatch(rel.rsplit("/", 1)[-1]) is not None


def glob_to_regex(glob: str) -> str:
    """Translate ``*``, ``?``, ``**``, ``[...]`` and ``{a,b}`` (gitignore style) to a regex."""
    out: list[str] = []
    i = 0
    while i < len(glob):
        c = glob[i]
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if glob.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        i += 1
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[" and (end := glob.find("]", i + 1)) > 0:
            body = glob[i:end]
            out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
            i = end + 1
        elif c == "{" and (end := glob.find("}", i)) > 0:
            alternatives = glob[i:end].split(",")
            out.append("(?:" + "|".join(glob_to_regex(a) for a in alternatives) + ")")
            i = end + 1
        else:
            out.append(re.escape(c))
    return "".join(out)


@tool("fs.search", timeout_s=60.0, output_cap=48_000, path_args=("path",))
async def fs_search(
    ctx: ToolContext,
    pattern: Annotated[str, Field(min_length=1)],
    path: str = ".",
    glob: str | None = None,
    regex: bool = False,
    case_sensitive: bool = True,
    max_results: Annotated[int, Field(ge=1, le=1000)] = 200,
) -> ToolResult:
    """Search file contents for a text or regular expression; returns matching lines.

    Args:
        pattern: The text to look for (or a regular expression when regex is true).
        path: File or directory to search, relative to the project root.
        glob: Only search files matching this glob, e.g. "*.py" or "src/**/*.ts".
        regex: Treat pattern as a regular expression instead of literal text.
        case_sensitive: Match letter case exactly.
        max_results: Stop after this many matching lines and report truncated.
    """
    target = ctx.resolve(path, must_exist=True)
    query = SearchQuery(pattern, glob, regex, case_sensitive, max_results)
    out = await search(ctx.root, target.path, query)
    files = len({m["path"] for m in out.matches})
    more = " (truncated: narrow the path or pattern)" if out.truncated else ""
    data: dict[str, Any] = {
        "matches": out.matches,
        "truncated": out.truncated,
        "engine": out.engine,
    }
    if out.warning:
        data["warning"] = out.warning
    return ToolResult(
        ok=True,
        message=f"{len(out.matches)} matching lines in {files} file(s){more}.",
        data=data,
        truncated=out.truncated,
    )

"""fs.search: ripgrep when it is installed, a pure-Python walk otherwise (seed 000 §7.2).

Both engines give the same answer on the same tree: matching lines in ripgrep's traversal
order (each folder's entries sorted by name, depth first), hidden entries and node_modules
skipped, symlinks not followed, files with a NUL byte treated as binary and skipped. Only
ripgrep also honours .gitignore.

Neither can be led outside the root. The Python walk opens every folder and file by name
beneath the folder above it, never through a link. ripgrep opens files by path, so a folder
swapped for a link mid-search could feed it outside content: each file it matched is read
again through a no-symlink fd, and a line counts only if that file has it there. Files with
more than one hard link are left out (another name may be outside the root) unless a human
approved the exact file; the result says how many were left out.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import io
import json
import os
import re
import shutil
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field

from xclaw.core.errors import PolicyDenied, ToolError
from xclaw.core.messages import ToolResult
from xclaw.tools._safe_open import approved, open_path
from xclaw.tools.base import ToolContext, tool

Engine = Literal["rg", "python"]

TEXT_CAP = 300  # characters of one matching line
RESULT_BUDGET = 40_000  # characters of matches, kept under the tool's output cap
_SKIP_NAMES = frozenset({"node_modules"})
_SNIFF = 8192
_RG_STREAM_LIMIT = 1 << 26  # one JSON line per match; minified files have very long lines
_NOFOLLOW_CLOEXEC = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
# NONBLOCK: a FIFO swapped in for a file must not hang the search.
_OPEN_ANY = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | _NOFOLLOW_CLOEXEC
_OPEN_DIR = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW_CLOEXEC
Approved = Callable[[Path], bool]


def _none_approved(_path: Path) -> bool:
    return False


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
    hard_links_left_out: int = 0  # files, each with more than one hard link
    unconfirmed_left_out: int = 0  # ripgrep lines its file no longer shows (it changed)
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
    root: Path,
    target: Path,
    query: SearchQuery,
    *,
    engine: Engine | None = None,
    approved: Approved = _none_approved,
) -> SearchOutcome:
    """Search ``target`` (a resolved file or folder); result paths are relative to ``root``.

    ``approved(path)`` says whether a file with several hard links may be searched anyway.
    """
    rg = shutil.which("rg") if engine in (None, "rg") else None
    if engine == "rg" and rg is None:
        raise ToolError("ripgrep (rg) is not installed.", code="SEARCH_ENGINE_MISSING")
    if rg is not None:
        return await _search_rg(rg, root, target, query, approved)
    return await asyncio.to_thread(_search_python, root, target, query, approved)


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


async def _search_rg(
    rg: str, root: Path, target: Path, q: SearchQuery, approved: Approved
) -> SearchOutcome:
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
    confirm = _Confirmer(out, approved)
    try:
        async for raw in proc.stdout:
            hit = _parse_rg_line(raw)
            if hit is None or not confirm.check(*hit):
                continue
            if not out.add(_display(hit[0], root), hit[1], hit[2], q.max_results):
                break
        else:
            finished = True
    finally:
        confirm.close()
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


def _parse_rg_line(raw: bytes) -> tuple[Path, int, str] | None:
    if not raw.startswith(b'{"type":"match"'):
        return None  # begin/end/context/summary records
    data = json.loads(raw)["data"]
    path = _rg_text(data["path"])
    text = _rg_text(data["lines"]).rstrip("\r\n")
    return Path(path), int(data["line_number"]), text


class _Confirmer:
    """Re-reads each file ripgrep matched, through a no-symlink fd, line by line alongside
    its matches: a match counts only when the file reached safely has that text on that line.
    """

    def __init__(self, out: SearchOutcome, approved: Approved) -> None:
        self.out, self.approved = out, approved
        self.path: Path | None = None
        self.reader: io.BufferedReader | None = None
        self.line = 0
        self.hard_link = False

    def check(self, path: Path, line: int, text: str) -> bool:
        if path != self.path:
            self.close()
            self.path, self.line, self.hard_link = path, 0, False
            self.reader = self._open(path)
        if self.reader is None:
            self.out.unconfirmed_left_out += not self.hard_link  # hard links count per file
            return False
        raw = b""
        try:
            while self.line < line and (raw := self.reader.readline()):
                self.line += 1
        except OSError:
            self.close()  # unreadable now: this and its later matches are left out
        seen = raw.decode("utf-8", "replace").rstrip("\r\n") if self.line == line else None
        if seen != text:
            self.out.unconfirmed_left_out += 1
            return False
        return True

    def _open(self, path: Path) -> io.BufferedReader | None:
        try:
            fd = open_path(path, _OPEN_ANY)
        except (OSError, PolicyDenied):
            return None
        st = os.fstat(fd)  # cannot fail on an fd just opened
        if not stat.S_ISREG(st.st_mode) or (st.st_nlink > 1 and not self.approved(path)):
            os.close(fd)
            if stat.S_ISREG(st.st_mode):
                self.hard_link = True
                self.out.hard_links_left_out += 1
            return None
        return open(fd, "rb")  # noqa: SIM115 - closed in close(), after the file's last match

    def close(self) -> None:
        if self.reader is not None:
            self.reader.close()
            self.reader = None


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


def _search_python(root: Path, target: Path, q: SearchQuery, approved: Approved) -> SearchOutcome:
    matches = _line_matcher(q)
    want = _glob_matcher(q.glob)
    out = SearchOutcome(engine="python")
    try:
        fd = open_path(target, _OPEN_ANY)  # swapped for a link since the check: PATH_CHANGED
    except OSError:
        return out  # gone since it was checked: nothing to search
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            files: Iterator[tuple[Path, int, str | None]] = iter([(target, fd, None)])
        else:
            files = _walk_files(fd, target)
        for file, dir_fd, name in files:
            rel = _display(file, root)
            if name is not None and not want(rel):
                continue
            for line, text in _matching_lines(out, dir_fd, name, file, matches, approved):
                if not out.add(rel, line, text, q.max_results):
                    return out
    finally:
        os.close(fd)
    return out


def _walk_files(dir_fd: int, directory: Path) -> Iterator[tuple[Path, int, str | None]]:
    """(path, folder fd, name) in ripgrep's order: each folder's entries sorted by name,
    descending as they come. Folders are opened by name beneath their parent, never via a link.
    """
    try:
        with os.scandir(dir_fd) as it:
            items = sorted(
                (e.name, e.is_dir(follow_symlinks=False), e.is_file(follow_symlinks=False))
                for e in it
                if not e.is_symlink()
            )
    except OSError:
        return
    for name, is_dir, is_file in items:
        if name.startswith(".") or name in _SKIP_NAMES:
            continue
        if is_file:
            yield directory / name, dir_fd, name
        if not is_dir:
            continue
        try:
            sub = os.open(name, _OPEN_DIR, dir_fd=dir_fd)
        except OSError:
            continue  # unreadable, or swapped for a link since it was listed
        try:
            yield from _walk_files(sub, directory / name)
        finally:
            os.close(sub)


def _matching_lines(
    out: SearchOutcome,
    dir_fd: int,
    name: str | None,
    file: Path,
    matches: Callable[[str], bool],
    approved: Approved,
) -> Iterator[tuple[int, str]]:
    """Lines of one regular file that match; ``name`` None means ``dir_fd`` is the file."""
    try:
        fd = os.dup(dir_fd) if name is None else os.open(name, _OPEN_ANY, dir_fd=dir_fd)
    except OSError:
        return
    with open(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return  # sockets, FIFOs, devices: never read
        if st.st_nlink > 1 and not approved(file):
            out.hard_links_left_out += 1
            return
        try:
            data = f.read()
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
    out = await search(ctx.root, target.path, query, approved=lambda p: approved(ctx, p))
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
        message=f"{len(out.matches)} matching lines in {files} file(s){more}."
        + _left_out(out, data),
        data=data,
        truncated=out.truncated,
    )


def _left_out(out: SearchOutcome, data: dict[str, Any]) -> str:
    """Say what was not searched, so the model knows the answer may be incomplete."""
    notes = []
    if out.hard_links_left_out:
        data["hard_links_left_out"] = out.hard_links_left_out
        notes.append(
            f" {out.hard_links_left_out} file(s) with several hard links were left out; "
            "searching one needs the user's approval of that exact file."
        )
    if out.unconfirmed_left_out:
        data["changed_left_out"] = out.unconfirmed_left_out
        notes.append(f" {out.unconfirmed_left_out} match(es) changed during the search.")
    return "".join(notes)

"""The documentation works as written: README.md, CONTRIBUTING.md and docs/.

- every ```python block runs (blocks of one file share a namespace, in order, in a temp
  folder holding ``proj/``); a block that needs a key, a network or a running server is
  marked ``<!-- not run: reason -->`` on the line above it, and is counted as skipped;
- every ``xclaw ...`` line of a bash or console block names an existing command, and only
  options that command has (its ``--help`` must print);
- every relative link points to an existing file and, with ``#anchor``, heading;
- the generated references (docs/configuration.md, docs/cli.md) are what
  ``docs/gen_reference.py`` renders now.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import shlex
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC_FILES = sorted(
    [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *(ROOT / "docs").glob("*.md")],
    key=lambda p: str(p),
)
NOT_RUN = re.compile(r"^<!--\s*not run:\s*(.+?)\s*-->$")
FENCE = re.compile(r"^(`{3,})(\w*)\s*$")


@dataclass
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    lang: str
    code: str
    not_run: str | None  # the reason, when marked

    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def blocks(path: Path) -> list[Block]:
    found: list[Block] = []
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        fence, lang = match.groups()
        start = i
        body: list[str] = []
        i += 1
        while i < len(lines) and lines[i].rstrip() != fence:
            body.append(lines[i])
            i += 1
        previous = next((x.strip() for x in reversed(lines[:start]) if x.strip()), "")
        marked = NOT_RUN.match(previous)
        found.append(
            Block(path, start + 1, lang, "\n".join(body) + "\n", marked[1] if marked else None)
        )
        i += 1
    return found


def all_blocks() -> list[Block]:
    return [b for path in DOC_FILES for b in blocks(path)]


# --- python blocks ---------------------------------------------------------------------------


def test_python_blocks_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "hello.txt").write_text("hi there\n")
    # `xclaw` as the examples call it: this interpreter's entry point.
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "DEEPSEEK_API_KEY"):
        monkeypatch.delenv(name, raising=False)  # nothing here may reach a provider
    ran, skipped = [], []
    namespaces: dict[Path, dict[str, Any]] = {}
    for block in all_blocks():
        if block.lang != "python":
            continue
        if block.not_run:
            skipped.append(block)
            continue
        namespace = namespaces.setdefault(block.path, {"__name__": "__docs__"})
        # A real file for the example's output: subprocesses it starts need a file descriptor.
        with (tmp_path / "out.txt").open("w+") as out:
            try:
                with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                    exec(compile(block.code, block.where(), "exec"), namespace)
            except Exception as exc:  # pragma: no cover - the message is the point
                out.seek(0)
                pytest.fail(f"{block.where()}: the example raised {exc!r}\n{out.read()}")
        ran.append(block)
    with capsys.disabled():
        print(f"\ndocs: {len(ran)} python blocks ran, {len(skipped)} marked not run")
        for block in skipped:
            print(f"  not run: {block.where()}: {block.not_run}")
    assert len(ran) >= 4


def test_not_run_marks_give_a_reason() -> None:
    for path in DOC_FILES:
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if "not run" in line and line.lstrip().startswith("<!--"):
                assert NOT_RUN.match(line.strip()), f"{path}:{n}: write <!-- not run: reason -->"


# --- xclaw command lines ---------------------------------------------------------------------


def command_lines(block: Block) -> list[str]:
    """The shell lines of a block: console blocks' ``$ `` lines, every line of a bash one,
    with ``\\`` continuations joined."""
    raw = block.code.splitlines()
    if block.lang == "console":
        picked, keep = [], False
        for line in raw:
            if line.startswith("$ "):
                picked.append(line[2:])
                keep = line.endswith("\\")
            elif keep:
                picked.append(line)
                keep = line.endswith("\\")
        raw = picked
    joined: list[str] = []
    for line in raw:
        if joined and joined[-1].endswith("\\"):
            joined[-1] = joined[-1][:-1] + " " + line.strip()
        else:
            joined.append(line)
    return joined


def xclaw_invocations(line: str) -> list[list[str]]:
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    tokens = list(lexer)
    found: list[list[str]] = []
    current: list[str] = []
    for token in [*tokens, ";"]:
        if token and set(token) <= set(";&|"):
            if current and current[0] == "xclaw":
                found.append(current)
            current = []
        elif current or token == "xclaw":
            current.append(token)
    return found


def resolve(tokens: list[str]) -> tuple[list[str], Any, list[str]]:
    """The command path, the click command and the option names a line uses."""
    from xclaw.cli.app import COMMANDS, load

    words = [t.strip("[]") for t in tokens[1:]]
    words = [w for w in words if w]
    if not words or words[0].startswith("-"):
        from typer.main import get_command

        from xclaw.cli.app import app

        command, path, rest = get_command(app), [], words
    else:
        assert words[0] in COMMANDS, f"`xclaw {words[0]}` is not a command"
        command, path, rest = load(words[0]), [words[0]], words[1:]
        while getattr(command, "commands", None) and rest and not rest[0].startswith("-"):
            sub = command.commands.get(rest[0])
            assert sub is not None, f"`xclaw {' '.join([*path, rest[0]])}` is not a command"
            command, path, rest = sub, [*path, rest[0]], rest[1:]
    options = []
    for word in rest:
        if word == "--":
            break
        if word.startswith("-") and len(word) > 1 and not word[1].isdigit():
            options.append(word.split("=", 1)[0])
    return path, command, options


def check_invocation(tokens: list[str]) -> tuple[tuple[str, ...], list[str]]:
    """The command path of one ``xclaw ...`` invocation and what is wrong with it."""
    from xclaw.cli.options import normalize_option

    try:
        path, command, options = resolve(tokens)
    except AssertionError as exc:
        return (), [str(exc)]
    known = {"--help"}
    for param in command.params:
        known.update(getattr(param, "opts", []))
        known.update(getattr(param, "secondary_opts", []))
    wrong = []
    for option in options:
        dashes = option[: len(option) - len(option.lstrip("-"))]
        current = dashes + normalize_option(option.lstrip("-"))  # as click normalises it
        if current not in known:
            wrong.append(f"`xclaw {' '.join(path)}` has no option {option}")
        elif current != option:
            wrong.append(f"`xclaw {' '.join(path)}`: write {current}, not the old {option}")
    return tuple(path), wrong


def test_xclaw_lines_name_real_commands_and_options() -> None:
    from typer.testing import CliRunner

    from xclaw.cli.app import app

    checked, paths, problems = 0, set(), []
    for block in all_blocks():
        if block.lang not in ("bash", "console", "sh", "shell"):
            continue
        for line in command_lines(block):
            if not re.search(r"(^|[\s;&|(])xclaw(\s|$)", line):
                continue  # not a command line of ours (a multi-line curl body, ...)
            try:
                invocations = xclaw_invocations(line)
            except ValueError as exc:
                problems.append(f"{block.where()}: cannot parse {line!r}: {exc}")
                continue
            for tokens in invocations:
                path, wrong = check_invocation(tokens)
                problems += [f"{block.where()}: {w}" for w in wrong]
                if not wrong:
                    paths.add(path)
                checked += 1
    for path in sorted(paths):
        result = CliRunner().invoke(app, [*path, "--help"], prog_name="xclaw")
        if result.exit_code != 0:
            problems.append(f"`xclaw {' '.join(path)} --help` exited {result.exit_code}")
    assert not problems, "\n".join(problems)
    assert checked >= 50
    print(f"docs: {checked} xclaw command lines checked, {len(paths)} commands")


# --- links -----------------------------------------------------------------------------------

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def prose(path: Path) -> str:
    """The file without its code blocks and inline code."""
    out, fence = [], None
    for line in path.read_text().splitlines():
        match = FENCE.match(line)
        if fence is None and match:
            fence = match[1]
            continue
        if fence is not None:
            if line.rstrip() == fence:
                fence = None
            continue
        out.append(re.sub(r"`[^`]*`", "", line))
    return "\n".join(out)


def anchors(path: Path) -> set[str]:
    """GitHub's heading ids of a Markdown file."""
    seen: dict[str, int] = {}
    ids = set()
    fence = None
    for line in path.read_text().splitlines():
        match = FENCE.match(line)
        if fence is None and match:
            fence = match[1]
            continue
        if fence is not None:
            if line.rstrip() == fence:
                fence = None
            continue
        heading = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not heading:
            continue
        slug = re.sub(r"[^\w\- ]", "", heading[1].lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        ids.add(slug if count == 0 else f"{slug}-{count}")
    return ids


def test_relative_links_resolve() -> None:
    problems = []
    for path in DOC_FILES:
        for target in LINK.findall(prose(path)):
            if re.match(r"^[a-z]+:", target):
                continue  # http:, https:, mailto:
            file_part, _, anchor = target.partition("#")
            dest = (path.parent / file_part).resolve() if file_part else path
            if not dest.exists():
                problems.append(f"{path.relative_to(ROOT)}: {target} does not exist")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                problems.append(f"{path.relative_to(ROOT)}: {target}: no heading #{anchor}")
    assert not problems, "\n".join(problems)


def test_every_docs_page_is_in_the_index() -> None:
    index = (ROOT / "docs" / "README.md").read_text()
    missing = [
        p.name
        for p in (ROOT / "docs").glob("*.md")
        if p.name != "README.md" and p.name not in index
    ]
    assert not missing, f"docs/README.md does not list {missing}"


# --- generated references --------------------------------------------------------------------


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_reference", ROOT / "docs/gen_reference.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", ["configuration.md", "cli.md"])
def test_generated_reference_is_fresh(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    rendered = _generator().TARGETS[name]()
    committed = (ROOT / "docs" / name).read_text()
    assert committed == rendered, textwrap.dedent(f"""\
        docs/{name} is stale: run `python docs/gen_reference.py` and commit the result.""")

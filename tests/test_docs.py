"""The documentation works as written: README.md, CONTRIBUTING.md and docs/.

- every ```python block runs (blocks of one file share a namespace, in order), in the reader's
  temp folder holding ``proj/``, with a home of its own (``tests/docs_support/reader.py``);
- every ```bash block runs with ``bash -e`` in such a folder, or says why it cannot
  (``<!-- not run: reason -->`` on the line above: a network, a person, a synopsis); its
  ``xclaw`` commands start warm (``tests/docs_support/warm.py``: the same entry point, in a
  fork of an interpreter that has imported it; ``XCLAW_DOCS_COLD=1`` runs them cold);
- a block marked ``<!-- run with: NAME -->`` runs in the environment NAME: a local fake behind
  the provider it names, a bridge it talks to, a recorded session or one a crash left
  unfinished that its ``ID`` stands for, a server its first line keeps in the foreground of
  another terminal, what the reader types (``tests/docs_support/environments.py``); the ones
  that need Chromium run with the page tests (``ELSEWHERE``); a block written twice the same
  (README.md repeating a page) runs once;
- every ``xclaw ...`` line of a bash or console block names an existing command, and only
  options that command has (its ``--help`` must print); console blocks are transcripts, so
  this is all that is checked of them;
- every relative link points to an existing file and, with ``#anchor``, heading;
- the generated references (docs/configuration.md, docs/cli.md) are what
  ``docs/gen_reference.py`` renders now.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.docs_support.blocks import (
    DOC_FILES,
    ELSEWHERE,
    FENCE,
    NOT_RUN,
    ROOT,
    RUN_WITH,
    SHELL,
    Block,
    all_blocks,
    blocks,
)
from tests.docs_support.environments import ENVIRONMENTS
from tests.docs_support.reader import Reader, nothing
from tests.docs_support.warm import WarmXclaw


def runs_here(block: Block) -> bool:
    return not block.not_run and block.run_with not in ELSEWHERE


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def test_marks_name_an_environment_or_give_a_reason() -> None:
    for path in DOC_FILES:
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if re.match(r"\s*<!--\s*(not run|run with)\b", line):
                well_formed = NOT_RUN.match(line.strip()) or RUN_WITH.match(line.strip())
                assert well_formed, (
                    f"{path}:{n}: write <!-- not run: reason --> or <!-- run with: NAME -->"
                )
    for block in all_blocks():
        if block.run_with:
            known = block.run_with in ENVIRONMENTS or block.run_with in ELSEWHERE
            assert known, f"{block.where()}: no environment {block.run_with!r}"
    for name, module in ELSEWHERE.items():
        assert name in (ROOT / module).read_text(), f"{module} does not run {name!r} blocks"


# --- python blocks ---------------------------------------------------------------------------

PYTHON_FILES = sorted(
    {b.path for b in all_blocks() if b.lang == "python" and runs_here(b)}, key=str
)


@pytest.mark.parametrize("path", PYTHON_FILES, ids=rel)
def test_python_blocks_run(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reader = Reader.make(tmp_path, monkeypatch)
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    with contextlib.ExitStack() as opened:
        entered: set[str] = set()
        for block in blocks(path):
            if block.lang != "python" or not runs_here(block):
                continue
            if block.run_with and block.run_with not in entered:  # open until the file ends
                opened.enter_context(ENVIRONMENTS[block.run_with](reader))
                entered.add(block.run_with)
            reader.run_python(block, namespace)
        reader.close_clients(namespace)


def test_every_python_block_runs(capsys: pytest.CaptureFixture[str]) -> None:
    python = [b for b in all_blocks() if b.lang == "python"]
    here = [b for b in python if runs_here(b)]
    elsewhere = [b for b in python if b.run_with in ELSEWHERE]
    marked = [b for b in python if b.not_run]
    with capsys.disabled():
        print(
            f"\ndocs: {len(python)} python blocks: {len(here)} run here, {len(elsewhere)} with "
            f"the page tests, {len(marked)} marked not run"
        )
        for block in marked:
            print(f"  not run: {block.where()}: {block.not_run}")
    assert len(here) >= 7
    assert not marked, "every python block runs: give it a `run with:` environment instead"


# --- bash blocks -----------------------------------------------------------------------------

BASH = [b for b in all_blocks() if b.lang in SHELL]


@pytest.fixture(scope="module")
def warm() -> Iterator[WarmXclaw]:
    """The warm ``xclaw`` of this module's bash blocks (one server per worker)."""
    with WarmXclaw.started() as started:
        yield started


def twins(block: Block) -> list[Block]:
    """The blocks written the same (text and environment) as ``block``: README.md says again
    what a page says; they run once, under all their names."""
    return [b for b in BASH if (b.code, b.run_with) == (block.code, block.run_with)]


def bash_case(block: Block) -> Any:
    """A block to run, once for all its twins."""
    return pytest.param(block, id="=".join(t.where() for t in twins(block)))


@pytest.mark.parametrize("block", [bash_case(b) for b in BASH if runs_here(b) and twins(b)[0] is b])
def test_bash_blocks_run(
    block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, warm: WarmXclaw
) -> None:
    reader = Reader.make(tmp_path, monkeypatch, xclaw=warm.bin)
    environment = ENVIRONMENTS[block.run_with] if block.run_with else nothing
    with environment(reader):
        reader.run_bash(block)


def test_every_bash_block_runs_or_says_why(capsys: pytest.CaptureFixture[str]) -> None:
    here = [b for b in BASH if runs_here(b)]
    elsewhere = [b for b in BASH if b.run_with in ELSEWHERE]
    marked = [b for b in BASH if b.not_run]
    assert len(here) + len(elsewhere) + len(marked) == len(BASH)
    with capsys.disabled():
        print(
            f"\ndocs: {len(BASH)} bash blocks: {len(here)} run here, {len(elsewhere)} with the "
            f"page tests, {len(marked)} marked not run"
        )
        for block in marked:
            print(f"  not run: {block.where()}: {block.not_run}")
    assert len(here) + len(elsewhere) >= 5


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
            hidden = f"`xclaw {' '.join([*path, rest[0]])}` is hidden: an old name, not to teach"
            assert not sub.hidden, hidden
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


def _rendered(name: str) -> str:
    """docs/NAME as ``python docs/gen_reference.py`` renders it: in an interpreter of its own,
    since a type's spelling there must not depend on what this one imported first (typing
    caches ``Literal[...] | None`` by equality, and Literals of the same values in another
    order are equal: ``deny | ask | allow`` would print as ``ask | deny | allow``)."""
    code = (
        "import runpy, sys; "
        "sys.stdout.write(runpy.run_path('docs/gen_reference.py')['TARGETS'][sys.argv[1]]())"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, name],
        cwd=ROOT,
        env={**os.environ, "COLUMNS": "80"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("name", ["configuration.md", "cli.md"])
def test_generated_reference_is_fresh(name: str) -> None:
    committed = (ROOT / "docs" / name).read_text()
    assert committed == _rendered(name), textwrap.dedent(f"""\
        docs/{name} is stale: run `python docs/gen_reference.py` and commit the result.""")

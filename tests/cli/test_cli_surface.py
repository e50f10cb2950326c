"""The command line as a newcomer meets it: one spelling per concept, choices that say what
they accept, the same error for every wrong value, help that reads at 80 columns, a quick
``xclaw --help`` and ``--version``."""

from __future__ import annotations

import enum
import importlib.metadata
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import pytest
from typer.testing import CliRunner, Result

from xclaw.cli.app import COMMANDS, WIDE, app, load, unwrap
from xclaw.cli.options import OLD_SPELLINGS, shown_phase, shown_state, stored_state


def cli(*args: str, columns: int = 200) -> Result:
    return CliRunner().invoke(app, list(args), env={"COLUMNS": str(columns)})


def walk(command: Any, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from walk(sub, (*path, name))


@pytest.fixture(scope="module")
def every_command() -> list[tuple[tuple[str, ...], Any]]:
    found: list[tuple[tuple[str, ...], Any]] = []
    for name in COMMANDS:
        found.extend(walk(load(name), (name,)))
    return found


def _choices(param: Any) -> tuple[Any, ...] | None:
    annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
    for arm in (annotation, *get_args(annotation)):
        if get_origin(arm) is Literal:
            return get_args(arm)
        if isinstance(arm, type) and issubclass(arm, enum.Enum):
            return tuple(arm)
    return None


# -- one spelling per concept ----------------------------------------------------------------


def test_every_entry_loads_under_its_name(every_command: list[Any]) -> None:
    for name, entry in COMMANDS.items():
        command = load(name)
        assert command.name == name and command.short_help == entry.help
        assert len(entry.help) <= 60, f"{name}: one line in `xclaw --help` at 80 columns"
    assert {path[0] for path, _ in every_command} == set(COMMANDS)


def test_the_project_directory_is_spelt_c_and_project_everywhere(every_command: list[Any]) -> None:
    seen = 0
    for path, command in every_command:
        for param in getattr(command, "params", []):
            opts = set(param.opts) | set(getattr(param, "secondary_opts", []))
            assert not opts & {"--directory", "--dir"}, path
            if "-C" in opts:
                seen += 1
                assert param.opts == ["-C", "--project"], (path, param.opts)
    assert seen >= 20  # run, resume, status, tools call, serve, agents, chronos, kb, mcp, ...


def test_the_old_spellings_still_parse_and_are_not_shown(root: Path) -> None:
    assert OLD_SPELLINGS == {"directory": "project", "dir": "project"}
    for spelling in ("-C", "--project", "--directory", "--dir"):
        out = cli("status", spelling, str(root))
        assert out.exit_code == 0 and f"no session for {root}" in out.stdout, spelling
    shown = cli("status", "--help").stdout
    assert "--project" in shown and "--directory" not in shown and "--dir " not in shown


def test_every_choice_option_is_a_literal(every_command: list[Any]) -> None:
    named = {
        "--approval",
        "--sandbox",
        "--protocol",
        "--trace",
        "--format",
        "--mode",
        "--state",
        "--log-format",
        "--tool-names",
        "--tools-from",
    }
    seen: set[str] = set()
    for path, command in every_command:
        for param in getattr(command, "params", []):
            long = [o for o in param.opts if o.startswith("--")]
            if set(long) & named:
                assert _choices(param), (path, long)
                seen.update(long)
            # No choices left spelt out in a plain string option: "ask | deny | allow".
            assert not re.search(r"\b\w+ ?\| ?\w+ ?\| ?\w+", param.help or ""), (path, long)
    assert seen == named


@pytest.mark.parametrize(
    ("args", "choices"),
    [
        (["run", "--approval", "maybe", "x"], "'ask', 'deny', 'allow'"),
        (["run", "--sandbox", "box", "x"], "'auto', 'bwrap', 'host', 'full'"),
        (["tools", "call", "fs.read", "--sandbox", "box"], "'auto', 'bwrap', 'host', 'full'"),
        (["serve", "--log-format", "xml"], "'text', 'json'"),
        (["eval", "d.yaml", "--approval", "ask"], "'deny', 'allow'"),
        (["export", "x", "--format", "html"], "'codex', 'claude-code', 'jsonl'"),
        (["kb", "search", "q", "--mode", "fuzzy"], "'hybrid', 'vector', 'keyword'"),
    ],
)
def test_a_wrong_choice_is_the_same_coded_line(args: list[str], choices: str) -> None:
    out = cli(*args)
    assert out.exit_code == 2
    line = " ".join(out.stderr.split())
    assert re.fullmatch(
        rf"USAGE_INVALID: Invalid value for '--[a-z-]+': '\w+' is not one of {choices}\. "
        rf"Next: see `xclaw [a-z ]+ --help`\.",
        line,
    ), line
    assert "╭" not in out.output and "Traceback" not in out.output


def test_other_usage_mistakes_are_coded_too() -> None:
    for args, what in (
        (["run"], "Missing argument 'task'."),
        (["nope"], "No such command 'nope'."),
        (["models", "list", "--bogus"], "No such option: --bogus."),
    ):
        out = cli(*args)
        assert out.exit_code == 2 and out.stderr.startswith(f"USAGE_INVALID: {what}"), args


def test_a_missing_project_is_reported_first(tmp_path: Path) -> None:
    script = tmp_path / "s.yaml"
    script.write_text("turns:\n  - done\n")
    out = cli("run", "-C", str(tmp_path / "nope"), "--model", f"scripted:{script}", "hi")
    assert out.exit_code == 2 and out.stdout == ""  # no "sandbox: ..." line before it
    assert out.stderr.startswith(
        f"PROJECT_NOT_FOUND: The project directory {tmp_path / 'nope'} does not exist."
    )
    assert "-C/--project" in out.stderr


# -- one state vocabulary --------------------------------------------------------------------


def test_stored_states_are_shown_in_a_runs_words() -> None:
    assert [shown_state(s) for s in ("init", "running", "paused", "success", "failed")] == [
        "init",
        "running",
        "interrupted",
        "completed",
        "failed",
    ]
    for shown in ("init", "running", "interrupted", "completed", "failed"):
        assert shown_state(stored_state(shown)) == shown
    assert shown_phase("WAITING_MODEL") == "waiting model"
    assert shown_phase("COMPLETED") == shown_phase("PAUSED") == ""


# -- help ------------------------------------------------------------------------------------


def _early_breaks(text: str) -> list[str]:
    """Lines of a rendered help that end although the next line's first word would have fit:
    the mark of a hard-wrapped docstring. Within one cell, a wrap comes only when needed."""
    rows = [line for line in text.splitlines() if line.startswith("│") and line.endswith("│")]
    bad = []
    for line, following in zip(rows, rows[1:], strict=False):
        body, nxt = line[1:-1], following[1:-1]
        words = nxt.split()
        if not words or not body.strip():
            continue
        start = len(nxt) - len(nxt.lstrip())
        if start <= 1 or not body[start:].strip():  # the next line starts a new entry
            continue
        used = len(body.rstrip())
        if used + 1 + len(words[0]) <= len(body) - 1:
            bad.append(line)
    return bad


# `xclaw mcp --help` at 80 columns before the docstrings were reflowed.
_OLD_MCP_PANEL = """\
╭─ Commands ───────────────────────────────────────────────────────────────────╮
│ list   Servers from your config and the project's .mcp.json, with their      │
│        tools, resources                                                      │
│        and prompts (usable servers are started to ask them, then stopped).   │
│ serve  Serve xclaw's coding tools over MCP on stdio, the policy enforced by  │
│        xclaw.                                                                │
╰──────────────────────────────────────────────────────────────────────────────╯
"""


def test_the_early_break_check_sees_a_hard_wrapped_docstring() -> None:
    assert [line.split()[1] for line in _early_breaks(_OLD_MCP_PANEL)] == ["tools,"]


@pytest.mark.parametrize("args", [["--help"], ["mcp", "--help"], ["models", "--help"]])
def test_command_lists_in_panels_break_only_where_needed(args: list[str]) -> None:
    out = cli(*args, columns=WIDE)
    assert out.exit_code == 0 and "╭─" in out.stdout  # typer's panels from WIDE columns
    assert all(len(line) <= WIDE for line in out.stdout.splitlines())
    assert _early_breaks(out.stdout) == []


def test_at_80_columns_an_options_text_keeps_its_width() -> None:
    """typer's panels give an option's text a few words at 80 columns (``serve``: 10
    characters); the two-column layout keeps more than half the terminal for it."""
    out = cli("serve", "--help", columns=80)
    assert out.exit_code == 0 and "╭" not in out.stdout and "│" not in out.stdout
    lines = out.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines)
    text = [line for line in lines if line.startswith(" " * 20) and line.strip()]
    assert text and min(len(line) - len(line.lstrip()) for line in text) <= 34
    flat = " ".join(out.stdout.split())
    assert (
        "With Redis ($XCLAW_REDIS_URL): seconds a dead instance's sessions stay locked before "
        "another instance takes them over."
    ) in flat
    top = cli("--help", columns=80).stdout
    for panel in ("Start here:", "Sessions:", "Faces:", "Setup and parts:"):
        assert panel in top
    assert all(name in top for name in COMMANDS)


def test_a_hard_wrapped_docstring_is_reflowed() -> None:
    assert unwrap("One line\n    and its end.\n\n\bkept\nas is\n\fhidden") == (
        "One line and its end.\n\n\bkept\nas is"
    )
    for name in ("serve", "kb", "mcp", "bridge"):
        for path, command in walk(load(name), (name,)):
            for paragraph in (command.help or "").split("\n\n"):
                assert paragraph.startswith("\b") or "\n" not in paragraph, path


def test_every_help_renders_at_80_columns(every_command: list[Any]) -> None:
    for path, _ in every_command:
        out = cli(*path, "--help", columns=80)
        assert out.exit_code == 0, (path, out.output)
        assert all(len(line) <= 80 for line in out.stdout.splitlines()), path
        assert "--install-completion" not in out.stdout, path


def test_models_list_keeps_every_key_variable_whole_at_80_columns() -> None:
    from xclaw.models.presets import list_presets

    out = cli("models", "list", columns=80)
    assert out.exit_code == 0
    shown = out.stdout
    for preset in list_presets():
        assert preset.name in shown
        if preset.key_env:
            assert re.search(rf"\b{preset.key_env}\b", shown), preset.key_env
    assert "…" not in shown
    wide = cli("models", "list", columns=140).stdout
    assert "openai_responses" in wide and "https://api.openai.com/v1" in wide
    every = json.loads(cli("models", "list", "--json").stdout)
    assert {p["name"] for p in every} == {p.name for p in list_presets()}


# -- version and start time ------------------------------------------------------------------


def test_version() -> None:
    out = cli("--version")
    assert out.exit_code == 0
    assert out.stdout.strip() == f"xclaw {importlib.metadata.version('xclaw')}"


def test_help_imports_no_command_module() -> None:
    """``xclaw --help`` lists the commands from COMMANDS alone (bench/cli_startup.py times
    it); running one imports its module only."""
    code = (
        "import sys\n"
        "from xclaw.cli.app import main\n"
        "sys.argv = ['xclaw'] + sys.argv[1:]\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "mods = sorted(m for m in sys.modules\n"
        "              if m.startswith('xclaw.cli.') and m.endswith('_cmd'))\n"
        "heavy = [m for m in ('xclaw.config', 'pydantic', 'sqlalchemy', 'httpx')\n"
        "         if m in sys.modules]\n"
        "print(mods, heavy, file=sys.stderr)\n"
    )

    def loaded(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60
        )
        return done.stderr.strip().splitlines()[-1]

    assert loaded("--help") == "[] []"
    assert loaded("run", "--help").startswith("['xclaw.cli.run_cmd']")

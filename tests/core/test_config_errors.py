"""Configuration mistakes name the file, the line and what to write instead.

A bad YAML file is one coded sentence with ``file:line:column`` (never PyYAML's trace with its
caret); an unknown key names the file, the dotted key, its line and the nearest valid key; a
bad value names the file, the line and the key. The file named is the one that set it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from xclaw.cli.app import app
from xclaw.config import load_config
from xclaw.core.errors import ConfigError
from xclaw.dirs import config_dir


def user_file(text: str) -> Path:
    path = config_dir() / "xclaw.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def refused(root: Path) -> ConfigError:
    with pytest.raises(ConfigError) as err:
        load_config(root)
    return err.value


def test_bad_yaml_is_one_sentence_with_file_line_and_column(root: Path) -> None:
    (root / "xclaw.yaml").write_text("model: openai:gpt-4.1\nsandbox:\n mode: bwrap\n  x: 1\n")
    err = refused(root)
    assert err.code == "CONFIG_YAML_INVALID"
    where = root / "xclaw.yaml"
    problem = "mapping values are not allowed here"
    assert err.message == f"{where}:4:4: this is not valid YAML ({problem})."
    text = str(err)
    for dump in ("^", "while scanning", 'in "<unicode string>"', "Fix the file."):
        assert dump not in text
    assert "indentation" in err.hint and "run the command again" in err.hint


def test_a_tab_and_an_unclosed_quote_are_located(root: Path) -> None:
    (root / "xclaw.yaml").write_text("limits:\n\tmax_turns: 3\n")
    assert refused(root).message.startswith(f"{root / 'xclaw.yaml'}:2:1: ")
    (root / "xclaw.yaml").write_text('model: "openai:gpt-4.1\n')
    assert refused(root).code == "CONFIG_YAML_INVALID"


def test_an_unknown_key_names_file_line_and_the_nearest_valid_key(root: Path) -> None:
    (root / "xclaw.yaml").write_text("model: openai:gpt-4.1\nsandbox:\n  mdoe: bwrap\n")
    err = refused(root)
    assert err.code == "CONFIG_KEY_UNKNOWN"
    assert err.message == (
        f"{root / 'xclaw.yaml'}:3:3: sandbox.mdoe is not a valid key. "
        "The nearest valid key is sandbox.mode."
    )
    assert err.hint == "Rename sandbox.mdoe to sandbox.mode, then run the command again."
    assert "pydantic" not in str(err) and "errors.pydantic.dev" not in str(err)


def test_the_file_named_is_the_one_that_set_the_key(root: Path) -> None:
    user = user_file("approval: deny\nlimits:\n  max_turns: 3\n  wall_time: 60\n")
    (root / "xclaw.yaml").write_text("model: openai:gpt-4.1\n")
    err = refused(root)
    assert err.message.startswith(f"{user}:4:3: limits.wall_time is not a valid key.")
    assert "limits.wall_time_s" in err.message


def test_without_a_close_key_the_section_keys_are_listed(root: Path) -> None:
    user_file(
        "chronos:\n  jobs:\n    - id: a\n      schedule: '@daily'\n      task: x\n      zz: 3\n"
    )
    err = refused(root)
    assert err.code == "CONFIG_KEY_UNKNOWN"
    assert "chronos.jobs[0].zz is not a valid key" in err.message and ":6:7:" in err.message
    assert err.hint.startswith("Valid keys under chronos.jobs[0]: id, schedule, timezone, task")


def test_a_pattern_key_is_quoted_and_unknown_keys_come_first(root: Path) -> None:
    (root / "xclaw.yaml").write_text(
        'models:\n  "openai:*":\n    temperature: 9\n    protocl: xml\n'
    )
    err = refused(root)
    assert err.message.startswith(
        f'{root / "xclaw.yaml"}:4:5: models["openai:*"].protocl is not a valid key '
        "(1 more problem after this one)."
    )
    assert 'models["openai:*"].protocol' in err.message


def test_a_bad_value_names_file_line_key_and_value(root: Path) -> None:
    user = user_file("approval: maybe\n")
    err = refused(root)
    assert err.code == "CONFIG_VALUE_INVALID"
    assert err.message == (
        f"{user}:1:11: approval: Input should be 'ask', 'deny' or 'allow' (it is 'maybe')."
    )


def test_a_missing_required_key_points_at_its_section(root: Path) -> None:
    user = user_file("chronos:\n  jobs:\n    - id: a\n      task: x\n")
    err = refused(root)
    assert err.message == f"{user}:3:7: chronos.jobs[0] needs schedule, and it is missing."
    assert err.hint == "Add `schedule: ...` there, then run the command again."


def test_an_unsafe_project_value_is_located_too(root: Path) -> None:
    (root / "xclaw.yaml").write_text("approval: ask\nsandbox:\n  mode: host\n")
    err = refused(root)
    assert err.code == "CONFIG_UNSAFE" and err.message.startswith(f"{root / 'xclaw.yaml'}:3:3:")


def test_the_cli_prints_one_coded_line(root: Path) -> None:
    (root / "xclaw.yaml").write_text("modle: openai:gpt-4.1\n")
    result = CliRunner().invoke(app, ["config", "show", "-C", str(root)])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(" ".join(lines).split("CONFIG_KEY_UNKNOWN")) == 2
    joined = " ".join(line.strip() for line in lines)
    assert joined.startswith(f"CONFIG_KEY_UNKNOWN: {root / 'xclaw.yaml'}:1:1: modle is not")
    assert "The nearest valid key is model." in joined

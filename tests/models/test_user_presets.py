"""``~/.config/xclaw/models.yaml``: your own presets, added without editing the package."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from xclaw.cli.app import app
from xclaw.core.errors import ConfigError
from xclaw.models.presets import get_preset, list_presets, user_presets_file


def write(text: str) -> Path:
    path = user_presets_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_the_file_lives_beside_your_config() -> None:
    from xclaw.dirs import config_dir

    assert user_presets_file() == config_dir() / "models.yaml"


def test_a_new_provider_is_added_and_listed() -> None:
    assert get_preset("my-gateway") is None
    write(
        "my-gateway:\n"
        "  api: openai_chat\n"
        "  base_url: https://llm.example.com/v1\n"
        "  key_env: MY_GATEWAY_KEY\n"
        "  capabilities: {context_window: 64000}\n"
    )
    preset = get_preset("my-gateway")
    assert preset is not None
    assert (preset.api, preset.base_url, preset.key_env) == (
        "openai_chat",
        "https://llm.example.com/v1",
        "MY_GATEWAY_KEY",
    )
    assert preset.profile("any-model").context_window == 64000
    names = [p.name for p in list_presets()]
    assert names[-1] == "my-gateway" and names[0] == "openai"  # packaged ones first
    shown = CliRunner().invoke(app, ["models", "list"], env={"COLUMNS": "100"})
    assert shown.exit_code == 0 and "my-gateway" in shown.stdout
    assert "MY_GATEWAY_KEY" in shown.stdout


def test_a_packaged_provider_gains_a_model_key_by_key() -> None:
    before = get_preset("openai")
    assert before is not None and before.profile("gpt-6").context_window == 128000
    write('openai:\n  models:\n    "gpt-6*": {capabilities: {context_window: 400000}}\n')
    after = get_preset("openai")
    assert after is not None
    assert after.profile("gpt-6-mini").context_window == 400000
    assert after.prices("gpt-4o") == before.prices("gpt-4o")  # the rest is kept
    assert after.base_url == before.base_url and after.key_env == "OPENAI_API_KEY"


def test_an_edited_file_is_read_again() -> None:
    write("mine:\n  api: anthropic\n  base_url: https://a.example\n")
    assert get_preset("mine") is not None
    write("other:\n  api: anthropic\n  base_url: https://b.example\n")
    assert get_preset("mine") is None and get_preset("other") is not None
    user_presets_file().unlink()
    assert get_preset("other") is None and get_preset("openai") is not None


def test_a_typo_names_the_file_line_and_nearest_key() -> None:
    path = write("my-gw:\n  api: openai_chat\n  base_ur: https://x.example\n")
    with pytest.raises(ConfigError) as err:
        get_preset("openai")
    assert err.value.code == "CONFIG_KEY_UNKNOWN"
    assert err.value.message.startswith(f"{path}:3:3: my-gw.base_ur is not a valid key")
    assert "The nearest valid key is my-gw.base_url." in err.value.message
    listed = CliRunner().invoke(app, ["models", "list"])
    assert listed.exit_code == 2 and "CONFIG_KEY_UNKNOWN" in listed.stderr
    assert "Traceback" not in listed.output


def test_bad_values_and_bad_yaml_are_coded() -> None:
    path = write("my-gw:\n  api: openai_chats\n  base_url: https://x.example\n")
    with pytest.raises(ConfigError) as err:
        list_presets()
    assert err.value.code == "CONFIG_VALUE_INVALID" and err.value.message.startswith(
        f"{path}:2:8: my-gw.api: Input should be 'openai_chat', 'openai_responses' or "
    )
    write("my-gw:\n  api: [unclosed\n")
    with pytest.raises(ConfigError) as err:
        list_presets()
    assert err.value.code == "CONFIG_YAML_INVALID" and str(path) in err.value.message

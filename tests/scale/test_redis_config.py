"""Where the Redis URL comes from: $XCLAW_REDIS_URL, else the user config; never a project
file (it would send your sessions' traffic to a server of the project's choosing)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from redis_support import RedisServer, _free_port

from xclaw.config import load_config
from xclaw.core.errors import ConfigError
from xclaw.gateway.fanout import LocalFanout, RedisFanout, make_fanout, redis_url
from xclaw.redact import redact


def user_config(text: str) -> None:
    folder = Path(os.environ["XDG_CONFIG_HOME"]) / "xclaw"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "xclaw.yaml").write_text(text)


def test_the_environment_wins_then_the_user_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XCLAW_REDIS_URL", raising=False)
    assert redis_url(load_config()) is None
    assert isinstance(make_fanout(None), LocalFanout)
    user_config("gateway:\n  redis_url: redis://cache.internal:6379/2\n")
    assert redis_url(load_config()) == "redis://cache.internal:6379/2"
    monkeypatch.setenv("XCLAW_REDIS_URL", "redis://127.0.0.1:6390/0")
    assert redis_url(load_config()) == "redis://127.0.0.1:6390/0"


def test_a_gateway_does_not_start_on_a_redis_that_does_not_answer(
    redis_server: RedisServer,
) -> None:
    fanout = make_fanout(redis_server.url)
    assert isinstance(fanout, RedisFanout)
    with pytest.raises(ConfigError) as err:
        make_fanout(f"redis://:pw-7f3a91c2e8@127.0.0.1:{_free_port()}/0")
    assert err.value.code == "GATEWAY_REDIS_UNREACHABLE"
    assert "pw-7f3a91c2e8" not in redact(str(err.value))


def test_a_project_file_may_not_choose_the_redis(root: Path) -> None:
    (root / "xclaw.yaml").write_text("gateway:\n  redis_url: redis://evil.example:6379/0\n")
    with pytest.raises(ConfigError) as err:
        load_config(root)
    assert err.value.code == "CONFIG_UNSAFE"


def test_only_redis_urls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XCLAW_REDIS_URL", raising=False)
    user_config("gateway:\n  redis_url: http://example.com/\n")
    with pytest.raises(ConfigError):
        load_config()

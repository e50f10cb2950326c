"""The browsing rules without a browser: loopback asks like any private address, site grants
name one origin (every loopback spelling is one machine), and only the user config may list
hosts to open without asking."""

from __future__ import annotations

from pathlib import Path

import pytest

from xclaw.config import load_config
from xclaw.core.errors import ConfigError
from xclaw.core.tooling import Grant, WebAddress
from xclaw.dirs import config_dir
from xclaw.policy.browsing import host_origins, judge_address, site_origin
from xclaw.policy.engine import PolicyEngine
from xclaw.tools.base import Workspace
from xclaw.tools.browser_judge import web_address


@pytest.mark.parametrize(
    "url",
    ["http://localhost:3000/", "http://127.0.0.1:8000/x", "http://[::1]:9/", "http://a.localhost/"],
)
def test_loopback_asks_with_a_site_grant(url: str) -> None:
    verdict = judge_address(WebAddress(url))
    assert verdict is not None and verdict.action == "ask"
    assert verdict.code == "BROWSER_PRIVATE_ADDRESS" and "loopback" in verdict.reason
    assert verdict.grant is not None and verdict.grant.value.startswith("http://localhost:")


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("http://127.0.0.1:3000/a?b", "http://localhost:3000"),
        ("http://LOCALHOST:3000", "http://localhost:3000"),
        ("http://[::1]:3000/", "http://localhost:3000"),
        ("https://127.0.0.1/", "https://localhost:443"),
        ("http://10.0.0.7/admin", "http://10.0.0.7:80"),
        ("http://[fe80::1]:8080/", "http://[fe80::1]:8080"),
        ("https://Dev.Example/", "https://dev.example:443"),
        ("file:///etc/passwd", ""),
        ("http://x:notaport/", ""),
    ],
)
def test_site_origin(url: str, origin: str) -> None:
    assert site_origin(url) == origin


def test_allow_hosts_entries() -> None:
    assert host_origins("localhost:3000") == ("http://localhost:3000", "https://localhost:3000")
    assert host_origins("127.0.0.1:3000") == host_origins("localhost:3000")
    assert host_origins("http://192.168.1.5:8080") == ("http://192.168.1.5:8080",)
    assert host_origins("router") == ("http://router:80", "https://router:443")


async def test_a_grant_for_one_port_opens_that_port_only(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path)
    engine = PolicyEngine(workspace)
    engine.grant(Grant("site", "http://localhost:3000"))
    allowed = judge_address(await web_address("http://127.0.0.1:3000/app"))
    assert allowed is not None and allowed.grant in workspace.grants
    other = judge_address(await web_address("http://127.0.0.1:3001/"))
    assert other is not None and other.grant not in workspace.grants


def test_the_user_config_lists_hosts(root: Path) -> None:
    config_dir().mkdir(parents=True, exist_ok=True)
    (config_dir() / "xclaw.yaml").write_text("browsing:\n  allow_hosts: ['localhost:3000']\n")
    assert load_config(root).browsing.allow_hosts == ["localhost:3000"]


def test_a_project_file_may_not_list_hosts(root: Path) -> None:
    (root / "xclaw.yaml").write_text("browsing:\n  allow_hosts: ['localhost:5432']\n")
    with pytest.raises(ConfigError) as caught:
        load_config(root)
    assert caught.value.code == "CONFIG_UNSAFE"


def test_a_bad_host_entry_is_refused(root: Path) -> None:
    config_dir().mkdir(parents=True, exist_ok=True)
    (config_dir() / "xclaw.yaml").write_text("browsing:\n  allow_hosts: ['a b; rm']\n")
    with pytest.raises(ConfigError):
        load_config(root)

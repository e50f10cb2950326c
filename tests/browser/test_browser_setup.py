"""Finding the browser and preparing its profile (no browser is started here)."""

from __future__ import annotations

import os
import socket
import stat
import sys
from pathlib import Path

import pytest

from xclaw.browser import (
    BrowserManager,
    BrowserOptions,
    browser_candidates,
    find_browser,
    headless_from_env,
    profile_dir,
    profile_owner_pid,
)
from xclaw.core.errors import ConfigError, ModelRequestRejected
from xclaw.dirs import data_dir
from xclaw.models.chatgpt_web import ChatGPTWebOptions, ChatGPTWebTransport


def _executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return path


def test_an_explicit_path_wins_and_must_be_executable(tmp_path: Path) -> None:
    chrome = _executable(tmp_path / "my-chrome")
    assert find_browser(chrome, env={}) == chrome
    (tmp_path / "plain").write_text("")
    with pytest.raises(ConfigError) as caught:
        find_browser(tmp_path / "plain", env={})
    assert caught.value.code == "BROWSER_NOT_FOUND"


def test_the_environment_variable_comes_next(tmp_path: Path) -> None:
    chrome = _executable(tmp_path / "env-chrome")
    assert find_browser(env={"XCLAW_BROWSER": str(chrome), "PATH": ""}) == chrome
    with pytest.raises(ConfigError) as caught:
        find_browser(env={"XCLAW_BROWSER": str(tmp_path / "missing"), "PATH": ""})
    assert "XCLAW_BROWSER" in caught.value.message


@pytest.mark.skipif(sys.platform.startswith("win"), reason="POSIX PATH search")
def test_the_path_is_searched_in_order(tmp_path: Path) -> None:
    _executable(tmp_path / "bin" / "chromium")
    chrome = _executable(tmp_path / "bin" / "google-chrome")
    found = find_browser(env={"PATH": str(tmp_path / "bin")}, platform="linux")
    assert found == chrome  # Chrome before Chromium


def test_nothing_found_says_what_to_install(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        find_browser(env={"PATH": str(tmp_path)}, platform="darwin-none")
    assert caught.value.code == "BROWSER_NOT_FOUND" and "XCLAW_BROWSER" in caught.value.hint


def test_macos_and_windows_places() -> None:
    mac = browser_candidates("darwin", {"HOME": "/Users/me"})
    assert mac[0] == Path("/Applications/Google Chrome.app/Contents/MacOS/Google Chrome")
    assert Path("/Users/me/Applications/Chromium.app/Contents/MacOS/Chromium") in mac
    win = browser_candidates("win32", {"PROGRAMFILES": "C:\\PF", "LOCALAPPDATA": "C:\\L"})
    assert Path("C:\\PF") / "Google\\Chrome\\Application\\chrome.exe" == win[0]
    assert Path("C:\\L") / "Microsoft\\Edge\\Application\\msedge.exe" in win


def test_headless_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XCLAW_BROWSER_HEADLESS", raising=False)
    assert headless_from_env() is False
    assert BrowserManager().headless is False  # visible by default
    monkeypatch.setenv("XCLAW_BROWSER_HEADLESS", "1")
    assert BrowserManager().headless is True
    assert BrowserManager(BrowserOptions(headless=False)).headless is False


def test_the_profile_lives_in_the_data_dir_owner_only() -> None:
    path = profile_dir("chatgpt")
    assert path == (data_dir() / "browser" / "chatgpt").resolve()
    assert stat.S_IMODE(path.stat().st_mode) == 0o700
    with pytest.raises(ConfigError):
        profile_dir("../escape")


def test_a_profile_inside_a_project_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "proj"
    with pytest.raises(ConfigError) as caught:
        profile_dir("x", path=project / ".browser", project_roots=[project])
    assert caught.value.code == "BROWSER_PROFILE_IN_PROJECT"
    monkeypatch.setenv("HOME", str(tmp_path))  # a repository somewhere under home
    (tmp_path / "code" / "app" / ".git").mkdir(parents=True)
    with pytest.raises(ConfigError):
        profile_dir("x", path=tmp_path / "code" / "app" / "profile")
    assert not (tmp_path / "code" / "app" / "profile").exists()


@pytest.mark.skipif(sys.platform.startswith("win"), reason="Chromium's POSIX lock link")
def test_a_profile_open_in_a_live_browser_is_not_taken(tmp_path: Path) -> None:
    profile = profile_dir("x", path=tmp_path / "p")
    lock = profile / "SingletonLock"
    lock.symlink_to(f"{socket.gethostname()}-{os.getpid()}")
    assert profile_owner_pid(profile) == os.getpid()
    lock.unlink()
    lock.symlink_to(f"{socket.gethostname()}-999999999")  # a crashed browser's stale lock
    assert profile_owner_pid(profile) is None


@pytest.mark.skipif(sys.platform.startswith("win"), reason="Chromium's POSIX lock link")
async def test_the_manager_refuses_a_profile_in_use_before_launching(tmp_path: Path) -> None:
    profile = profile_dir("x", path=tmp_path / "p")
    (profile / "SingletonLock").symlink_to(f"{socket.gethostname()}-{os.getpid()}")
    options = BrowserOptions(executable=str(_executable(tmp_path / "chrome")), profile=profile)
    manager = BrowserManager(options)
    with pytest.raises(ConfigError) as caught:
        await manager.page()
    assert caught.value.code == "BROWSER_PROFILE_IN_USE"
    assert manager.launches == 0
    await manager.close()


async def test_the_transport_reports_browser_problems_as_model_errors(tmp_path: Path) -> None:
    options = ChatGPTWebOptions(browser=BrowserOptions(executable=str(tmp_path / "none")))
    transport = ChatGPTWebTransport(options)
    with pytest.raises(ModelRequestRejected) as caught:
        await transport.send("hello")
    assert caught.value.code == "BROWSER_NOT_FOUND"
    await transport.aclose()

"""Issue 23's page scenarios end to end through the CLI (`xclaw run --model chatgpt-web
--base-url URL --headless`), each on both fixture sites at once: the 2025 page
(``fixture_site/``) and the 2026 page (``fixture_site_2026/``).

The two sites' runs go side by side (own site, own data dir and browser profile each), so a
scenario costs one run's time. Short timeouts come in through ``XCLAW_WEB_TIMEOUTS`` where a
scenario needs one; the fail-fast scenarios keep the defaults, to show they end in seconds
although the defaults would wait 45 s (composer) or 15 min (a person).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fixture_server import SITE_2026_DIR, SITE_DIR, FixtureSite, Reply
from web_support import TEST_ARGS, needs_browser

from xclaw.models.text.protocol import render_reply

pytestmark = needs_browser

YEARS = ("2025", "2026")
QUICK = (
    "poll_s=0.05,stable_window_s=0.2,finished_polls=3,quiet_s=1.0,copy_s=0.5,menu_s=0.3,"
    "banner_grace_s=0.2,page_load_s=10,new_turn_s=10"
)
PRO = {"2025": "gpt-5-pro", "2026": "gpt-5-5-pro"}
THINKING = {"2025": "gpt-5-thinking", "2026": "gpt-5-5-thinking"}


@pytest.fixture(scope="module")
def sites() -> Iterator[dict[str, FixtureSite]]:
    started = {
        "2025": FixtureSite(site_dir=SITE_DIR).start(),
        "2026": FixtureSite(site_dir=SITE_2026_DIR).start(),
    }
    yield started
    for site in started.values():
        site.stop()


@pytest.fixture
def both(sites: dict[str, FixtureSite]) -> dict[str, FixtureSite]:
    for site in sites.values():
        site.reset()
    return sites


@dataclass
class Run:
    code: int
    out: str
    seconds: float

    def says(self, text: str) -> bool:
        """Whether the output says ``text``, however the terminal wrapped it."""
        return " ".join(text.split()) in " ".join(self.out.split())

    @property
    def session(self) -> str:
        found = re.search(r"xclaw resume (\S+)", self.out)
        assert found, self.out
        return found.group(1)


def _argv(command: str, url: str, project: Path, extra: list[str]) -> list[str]:
    argv = [sys.executable, "-m", "xclaw", command]
    if command == "run":
        argv += ["-C", str(project)]
    argv += ["--base-url", url, "--headless"]
    if command != "login":
        argv += ["--approval", "deny"]
    return argv + extra


def run_both(
    both: dict[str, FixtureSite],
    tmp: Path,
    command: str,
    extra: Callable[[str], list[str]],
    timeouts: str = "",
) -> dict[str, Run]:
    """Run one `xclaw` command against each site at once; each year has its own data dir."""
    procs, started = {}, time.monotonic()
    for year, site in both.items():
        home = tmp / year
        (home / "proj").mkdir(parents=True, exist_ok=True)
        env = {
            **os.environ,
            "XDG_DATA_HOME": str(home / "data"),
            "XDG_CONFIG_HOME": str(home / "config"),
            "XCLAW_BROWSER_ARGS": " ".join(TEST_ARGS),
            "XCLAW_WEB_TIMEOUTS": timeouts,
            "COLUMNS": "200",
        }
        argv = _argv(command, site.url, home / "proj", extra(year))
        procs[year] = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
        )
    runs = {}
    for year, proc in procs.items():
        out, _ = proc.communicate(timeout=180)
        runs[year] = Run(proc.returncode, out, time.monotonic() - started)
    return runs


def task(_: str) -> list[str]:
    return ["--model", "chatgpt-web", "write the file"]


def done(message: str) -> str:
    return render_reply(True, message)


def write(path: str, content: str) -> str:
    return render_reply(False, "Writing it.", "fs.write", {"path": path, "content": content})


def test_a_rate_limited_mode_falls_back_visibly_and_long_and_cut_replies_arrive_whole(
    both: dict[str, FixtureSite], tmp_path: Path
) -> None:
    long_text = "".join(f"line {i:05d}: {'x' * 60}\n" for i in range(800))  # 55 kB
    for site in both.values():
        site.configure(menu=[{**m, "disabled": m["slug"] in PRO.values()} for m in site.state.menu])
        site.queue(
            Reply(write("big.txt", long_text), chunk=6000, interval_ms=10),
            Reply(done("All written, " + "the reply stalled halfway. " * 10), cut_ms=600),
        )
    runs = run_both(both, tmp_path, "run", lambda _: ["--model", "chatgpt-web:pro", "write"], QUICK)
    for year, run in runs.items():
        site = both[year]
        assert run.code == 0, run.out
        assert run.says(f"! mode: {THINKING[year]} (asked pro)")  # a warning, not a dim note
        assert run.says("rate-limited") and not run.says("not confirmed")  # the menu showed it
        if year == "2026":  # its toast is quoted, as the page said it
            assert run.says("The page says: Vous avez atteint la limite")
        assert (tmp_path / year / "proj" / "big.txt").read_text() == long_text
        assert run.says("the reply stalled halfway. " * 10)
        assert [p["model"] for p in site.posted] == [THINKING[year]] * 2


def test_a_fallback_that_cannot_be_confirmed_warns_and_a_strict_mode_is_a_coded_error(
    both: dict[str, FixtureSite], tmp_path: Path
) -> None:
    """Pro is rate-limited and the picker marks no row as the active one (2026: the pill's
    picker with effort controls in its rows). Asked strictly (``pro!``) that is an error before
    anything is sent; asked plainly, the fallback is used with a warning saying it is not
    confirmed."""
    for site in both.values():
        menu = [{**m, "disabled": m["slug"] in PRO.values()} for m in site.state.menu]
        site.configure(menu=menu, menu_marks_checked=False)
        site.queue(done("Answered in the fallback."))
    strict = run_both(both, tmp_path, "run", lambda _: ["--model", "chatgpt-web:pro!", "go"], QUICK)
    for year, run in strict.items():
        assert run.code != 0 and run.says("WEB_MODE_UNAVAILABLE"), run.out
        assert run.says("'pro' was asked for strictly and cannot be used")
        assert run.says("without '!' to accept the fallback")
        assert both[year].posted == []
    plain = run_both(both, tmp_path, "run", lambda _: ["--model", "chatgpt-web:pro", "go"], QUICK)
    for year, run in plain.items():
        assert run.code == 0, run.out
        assert run.says(f"! mode: {THINKING[year]} (asked pro)")
        assert run.says("The menu does not show which mode is active, so this is not confirmed.")
        assert run.says("Answered in the fallback.")
        assert [p["model"] for p in both[year].posted] == [THINKING[year]]  # it did land


@pytest.mark.parametrize("variant", ["no_copy", "no_action_bar"])
def test_a_finished_reply_without_a_copy_button_is_read_from_the_page_and_says_so(
    both: dict[str, FixtureSite], tmp_path: Path, variant: str
) -> None:
    """The issue's stall: a finished turn (2026: a <section data-turn>) whose copy button is
    gone (``no_copy``: the rest of its action bar is there) or that has no action bar at all:
    the turn ends (on the bar, or on the quiet rule) and is read from the DOM, saying so."""
    for site in both.values():
        site.configure(variant=variant)
        site.queue(write("dom.txt", "read from the page\n"), done("Read without copying."))
    runs = run_both(both, tmp_path, "run", task, QUICK)
    for year, run in runs.items():
        assert run.code == 0, run.out
        assert (tmp_path / year / "proj" / "dom.txt").read_text() == "read from the page\n"
        assert run.says("Read without copying.")
        assert run.says("reply read from the page text (the turn has no copy button we know)")
        assert "WEB_ADAPTER_OUTDATED" not in run.out
        assert len(both[year].posted) == 2
        assert run.seconds < 40, f"{year}: {run.seconds:.1f}s"


def test_renamed_selectors_and_no_copy_button_complete_and_read_the_finished_turn(
    both: dict[str, FixtureSite], tmp_path: Path
) -> None:
    """Ids and test ids renamed (the copy button and the whole action bar among them): the
    fallbacks find the composer, buttons and turns, the quiet rule ends each turn, and the
    finished turn is read from the DOM — in seconds, not the issue's 60-70 s and an error."""
    for site in both.values():
        site.configure(variant="renamed")
        site.queue(write("a.txt", "renamed but found\n"), done("Done on a renamed page."))
    runs = run_both(both, tmp_path, "run", task, QUICK)
    for year, run in runs.items():
        assert run.code == 0, run.out
        assert (tmp_path / year / "proj" / "a.txt").read_text() == "renamed but found\n"
        assert run.says("Done on a renamed page.")
        assert run.says("reply read from the page text (the turn has no copy button we know)")
        assert len(both[year].posted) == 2
        assert run.seconds < 40, f"{year}: {run.seconds:.1f}s"


def test_a_missing_composer_is_an_outdated_adapter_within_seconds(
    both: dict[str, FixtureSite], tmp_path: Path
) -> None:
    for site in both.values():
        site.configure(variant="outdated")
    runs = run_both(both, tmp_path, "run", task)  # default timeouts: page_load_s is 45
    for year, run in runs.items():
        assert run.code != 0 and run.says("WEB_ADAPTER_OUTDATED"), run.out
        assert run.says("composer") and run.says("diagnostic bundle")
        assert run.seconds < 25, f"{year}: {run.seconds:.1f}s"
        assert both[year].posted == []


def test_a_mid_stream_error_in_headless_mode_fails_fast_with_a_readable_code(
    both: dict[str, FixtureSite], tmp_path: Path
) -> None:
    for site in both.values():
        site.queue(Reply(done("Never finished. " * 20), error="Une erreur est survenue."))
    runs = run_both(both, tmp_path, "run", task)  # default timeouts: takeover_s is 900
    for year, run in runs.items():
        assert run.code != 0 and run.says("WEB_TAKEOVER_HEADLESS"), run.out
        assert run.says("Une erreur est survenue.") and run.says("without --headless")
        assert "Takeover(" not in run.out
        assert run.seconds < 25, f"{year}: {run.seconds:.1f}s"
        assert len(both[year].posted) == 1


def test_a_generation_that_never_ends_is_retried_once_then_paused_and_resumed_without_reposting(
    both: dict[str, FixtureSite], tmp_path: Path
) -> None:
    """The reply outlasts the wait, also after one reload: the run pauses (WEB_TURN_TIMEOUT).
    The reply then finishes on the site, and `xclaw resume` in a new process finds the message
    already posted in the reopened chat and reads its reply: the page receives it once."""
    for site in both.values():
        site.queue(
            Reply(write("once.txt", "posted once\n"), endless=True), done("Finished on resume.")
        )
    first = run_both(both, tmp_path, "run", task, QUICK + ",turn_s=1.5")
    for year, run in first.items():
        assert run.code == 3, run.out  # interrupted: a pause the session resumes from
        assert run.says("reloading the chat once (the message is not sent again)")
        assert run.says("WEB_TURN_TIMEOUT") and run.says("xclaw resume")
        assert len(both[year].posted) == 1  # the retry never sent it twice
        both[year].finish_streams()

    def resume(year: str) -> list[str]:
        return [first[year].session, "--model", "chatgpt-web"]

    second = run_both(both, tmp_path, "resume", resume, QUICK)
    for year, run in second.items():
        assert run.code == 0, run.out
        assert run.says("the reply to the message already posted there is awaited")
        assert (tmp_path / year / "proj" / "once.txt").read_text() == "posted once\n"
        assert run.says("Finished on resume.")
        posted = both[year].posted
        texts = [p["text"] for p in posted]
        assert len(posted) == 2 and texts.count(texts[0]) == 1, texts  # then the tool result
        assert "write the file" in texts[0] and "once.txt" in texts[1]
        assert posted[0]["conversation_id"] == posted[1]["conversation_id"]  # the same chat


def test_signed_out_pauses_and_a_login_lost_mid_run_pauses_again_after_resuming(
    both: dict[str, FixtureSite], tmp_path: Path
) -> None:
    for site in both.values():
        site.configure(auth="out")
        site.queue(
            Reply(write("c.txt", "first\n"), sign_out_after=True), done("Finished after login.")
        )
    # Signed out from the start: paused before anything is sent.
    first = run_both(both, tmp_path, "run", task, QUICK)
    for year, run in first.items():
        assert run.code == 3 and run.says("WEB_LOGIN_REQUIRED"), run.out
        assert run.says("sign in with `xclaw login`, then resume it") and both[year].posted == []
        both[year].configure(auth="in")  # what `xclaw login` in a window achieves

    def resume(year: str) -> list[str]:
        return [first[year].session, "--model", "chatgpt-web"]

    # Resumed after signing in: the first reply comes and its tool runs; then the page is
    # signed out before the next message, which pauses the session again (nothing is lost).
    second = run_both(both, tmp_path, "resume", resume, QUICK)
    for year, run in second.items():
        assert run.code == 3 and run.says("WEB_LOGIN_REQUIRED"), run.out
        assert run.says("signed out of ChatGPT before a message")
        assert (tmp_path / year / "proj" / "c.txt").read_text() == "first\n"
        assert len(both[year].posted) == 1

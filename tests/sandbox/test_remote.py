"""``full`` mode against a fake E2B service: lifecycle, commands, file sync, failures."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import socket
import time
from pathlib import Path

import pytest
from fake_e2b import FakeE2B, FakeSandbox

from xclaw.core.errors import ToolError
from xclaw.sandbox.base import CommandRequest, RemoteOutcome, RemoteSandbox
from xclaw.sandbox.remote import E2BSandbox, E2BSettings, SandboxPool, sandbox_from_environment

WORKDIR = "/home/user/project"


def request(root: Path, *argv: str, env: dict[str, str] | None = None) -> CommandRequest:
    # `executable` is unused remotely: the sandbox resolves the program itself.
    return CommandRequest(argv[0], argv[0], tuple(argv[1:]), root, env or {}, root)


class Output:
    """An ``on_output`` callback that keeps every chunk with the time it arrived."""

    def __init__(self) -> None:
        self.chunks: list[tuple[str, bytes, float]] = []

    def __call__(self, stream: str, data: bytes) -> None:
        self.chunks.append((stream, data, time.monotonic()))

    def text(self, stream: str = "stdout") -> str:
        return b"".join(d for s, d, _ in self.chunks if s == stream).decode()


async def sh(
    box: E2BSandbox,
    root: Path,
    script: str,
    *,
    stdin: str | None = None,
    timeout_s: float = 20,
    env: dict[str, str] | None = None,
) -> tuple[RemoteOutcome, Output]:
    out = Output()
    command = request(root, "sh", "-c", script, env=env)
    outcome = await box.run(command, stdin=stdin, timeout_s=timeout_s, on_output=out)
    return outcome, out


def vm(fake: FakeE2B, box: E2BSandbox) -> FakeSandbox:
    assert box.sandbox_id is not None
    return fake.sandboxes[box.sandbox_id]


def in_notes(outcome: RemoteOutcome, *words: str) -> str:
    """The one note that mentions every word (fails when none does)."""
    hits = [n for n in outcome.notes if all(w in n for w in words)]
    assert hits, f"no note with {words} in {outcome.notes}"
    return hits[0]


# -- lifecycle -----------------------------------------------------------------------------


async def test_one_sandbox_per_session_created_lazily_and_reused(
    fake: FakeE2B, settings: E2BSettings, root: Path
) -> None:
    pool = SandboxPool(settings)
    box = pool.get_or_create("s1")
    assert isinstance(box, RemoteSandbox) and box.mode == "full"
    assert fake.calls_to("POST", "/v2/sandboxes") == []  # nothing until the first command

    first, _ = await sh(box, root, "echo kept > $HOME/state")
    second, out = await sh(pool.get_or_create("s1"), root, "cat $HOME/state")

    assert (first.returncode, second.returncode, out.text()) == (0, 0, "kept\n")
    creates = fake.calls_to("POST", "/v2/sandboxes")
    assert len(creates) == 1
    assert creates[0].body["templateID"] == "xclaw"
    assert creates[0].body["metadata"] == {"xclaw_session": "s1"}
    assert any("Started remote sandbox" in n for n in first.notes)
    assert not any("Started remote sandbox" in n for n in second.notes)

    await sh(pool.get_or_create("s2"), root, "true")
    assert len(fake.calls_to("POST", "/v2/sandboxes")) == 2
    await pool.close_all()


async def test_close_all_kills_every_sandbox_and_refuses_more_work(
    fake: FakeE2B, settings: E2BSettings, root: Path
) -> None:
    pool = SandboxPool(settings)
    used = [pool.get_or_create(s) for s in ("a", "b")]
    pool.get_or_create("never-ran")
    for box in used:
        await sh(box, root, "true")
    ids = {box.sandbox_id for box in used}

    assert await pool.close_all() == []

    killed = {c.path.rsplit("/", 1)[1] for c in fake.calls_to("DELETE", "/sandboxes/")}
    assert killed == ids
    assert not any(s.alive for s in fake.sandboxes.values())
    assert len(pool) == 0
    with pytest.raises(ToolError) as err:
        await sh(used[0], root, "true")
    assert err.value.code == "SANDBOX_FAILED"
    assert len(fake.calls_to("POST", "/v2/sandboxes")) == 2


# -- commands ------------------------------------------------------------------------------


async def test_output_streams_while_the_command_runs(
    fake: FakeE2B, settings: E2BSettings, root: Path
) -> None:
    box = E2BSandbox(settings, session_id="s")
    outcome, out = await sh(box, root, "echo first; echo oops >&2; sleep 0.6; echo second")

    assert out.text() == "first\nsecond\n"
    assert out.text("stderr") == "oops\n"
    first = next(t for s, d, t in out.chunks if b"first" in d)
    second = next(t for s, d, t in out.chunks if b"second" in d)
    assert second - first > 0.4  # the first line arrived before the command was done
    assert outcome.returncode == 0 and not outcome.timed_out
    await box.close()


async def test_exit_codes_come_back(fake: FakeE2B, settings: E2BSettings, root: Path) -> None:
    box = E2BSandbox(settings, session_id="s")
    assert (await sh(box, root, "exit 7"))[0].returncode == 7
    assert (await sh(box, root, "exit 0"))[0].returncode == 0
    missing = await box.run(
        request(root, "no-such-program-xyz"), stdin=None, timeout_s=10, on_output=Output()
    )
    assert missing.returncode == 127
    await box.close()


async def test_argv_is_quoted_not_shell_interpreted(
    fake: FakeE2B, settings: E2BSettings, root: Path
) -> None:
    box = E2BSandbox(settings, session_id="s")
    out = Output()
    words = ("$HOME", "a b", "; touch pwned", "'q'")
    outcome = await box.run(
        request(root, "printf", "%s|", *words), stdin=None, timeout_s=10, on_output=out
    )
    assert outcome.returncode == 0
    assert out.text() == "|".join(words) + "|"
    assert not (root / "pwned").exists() and not vm(fake, box).host(f"{WORKDIR}/pwned").exists()
    await box.close()


async def test_stdin_is_sent_and_closed(fake: FakeE2B, settings: E2BSettings, root: Path) -> None:
    box = E2BSandbox(settings, session_id="s")
    outcome, out = await sh(box, root, "tr a-z A-Z", stdin="hello\nworld")
    assert (outcome.returncode, out.text()) == (0, "HELLO\nWORLD")

    no_stdin, out = await sh(box, root, "cat; echo done")  # no stdin: EOF at once
    assert (no_stdin.returncode, out.text()) == (0, "done\n")
    await box.close()


async def test_env_is_passed_and_nothing_else_from_the_host(
    fake: FakeE2B, settings: E2BSettings, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOST_ONLY_VAR", "leak")
    box = E2BSandbox(settings, session_id="s")
    outcome, out = await sh(box, root, 'echo "$GREETING/$HOST_ONLY_VAR"', env={"GREETING": "hi"})

    assert (outcome.returncode, out.text()) == (0, "hi/\n")
    start = fake.calls_to("POST", "/process.Process/Start")[-1].body
    assert start["process"]["envs"] == {"GREETING": "hi"}
    assert start["process"]["cwd"] == WORKDIR
    assert start["process"]["cmd"] == "/bin/bash"
    await box.close()


async def test_timeout_kills_the_remote_process(
    fake: FakeE2B, settings: E2BSettings, root: Path
) -> None:
    box = E2BSandbox(settings, session_id="s")
    started = time.monotonic()
    outcome, out = await sh(box, root, "echo begun; sleep 30", timeout_s=1.5)

    assert outcome.timed_out and outcome.returncode is None
    assert time.monotonic() - started < 10
    assert out.text() == "begun\n"
    signals = fake.calls_to("POST", "/process.Process/SendSignal")
    assert [c.body["signal"] for c in signals] == ["SIGNAL_SIGKILL"]
    assert all(p.poll() is not None for p in vm(fake, box).procs.values())
    await box.close()


async def test_cancelling_a_run_kills_the_remote_process(
    fake: FakeE2B, settings: E2BSettings, root: Path
) -> None:
    pool = SandboxPool(settings)
    box = pool.get_or_create("s")
    task = asyncio.create_task(sh(box, root, "sleep 30"))
    for _ in range(200):
        if fake.calls_to("POST", "/process.Process/Start"):
            break
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.2)
    task.cancel()  # what Ctrl+C does to the running tool call
    with pytest.raises(asyncio.CancelledError):
        await task

    assert fake.calls_to("POST", "/process.Process/SendSignal")
    assert all(p.poll() is not None for p in vm(fake, box).procs.values())
    await pool.close_all()
    assert len(fake.calls_to("DELETE", "/sandboxes/")) == 1


# -- file sync -----------------------------------------------------------------------------


async def test_files_go_up_before_and_come_back_after(
    fake: FakeE2B, settings: E2BSettings, root: Path
) -> None:
    (root / "a.txt").write_text("one")
    (root / "sub").mkdir()
    (root / "sub" / "b.txt").write_text("bee")
    (root / "run.sh").write_text("#!/bin/sh\necho ran\n")
    (root / "run.sh").chmod(0o755)
    box = E2BSandbox(settings, session_id="s")

    outcome, out = await sh(
        box,
        root,
        "cat a.txt sub/b.txt; ./run.sh; echo new > sub/c.txt; "
        "printf three > a.txt; printf '#!/bin/sh\n' > x.sh; "
        "chmod +x x.sh",
    )
    assert out.text() == "onebeeran\n"
    assert (root / "a.txt").read_text() == "three"
    assert (root / "sub" / "c.txt").read_text() == "new\n"
    assert os.access(root / "x.sh", os.X_OK)
    note = in_notes(outcome, "copied back")
    assert "sub/c.txt" in note and "a.txt" in note and "sub/b.txt" not in note

    # Later: a local edit goes up, unchanged files do not, and a same-size change comes back.
    (root / "sub" / "b.txt").write_text("BEE")
    uploads = len(fake.calls_to("POST", "/files"))
    second, out = await sh(
        box, root, "cat sub/b.txt; printf 'NEW\n' > sub/c.txt; printf THREE > a.txt"
    )
    assert out.text() == "BEE"
    assert len(fake.calls_to("POST", "/files")) == uploads + 1
    assert (root / "sub" / "c.txt").read_text() == "NEW\n"
    assert (root / "a.txt").read_text() == "THREE"
    await box.close()


async def test_local_deletions_propagate_and_remote_deletions_do_not(
    fake: FakeE2B, settings: E2BSettings, root: Path
) -> None:
    (root / "keep.txt").write_text("mine")
    (root / "drop.txt").write_text("old")
    box = E2BSandbox(settings, session_id="s")
    outcome, _ = await sh(box, root, "rm keep.txt")

    assert (root / "keep.txt").read_text() == "mine"  # fail closed: not deleted here
    assert "keep.txt" in in_notes(outcome, "deleted in the sandbox")

    (root / "drop.txt").unlink()
    outcome, out = await sh(box, root, "ls")
    assert out.text() == "keep.txt\n"  # keep.txt uploaded again, drop.txt removed there
    await box.close()


async def test_big_files_and_bulky_folders_are_skipped_and_reported(
    fake: FakeE2B, settings: E2BSettings, root: Path
) -> None:
    for folder in ("node_modules", ".venv", "pkg/__pycache__"):
        (root / folder).mkdir(parents=True)
        (root / folder / "f").write_text("x")
    (root / "big.bin").write_bytes(b"\0" * (10 * 1024 * 1024 + 1))
    (root / "small.txt").write_text("s")
    box = E2BSandbox(settings, session_id="s")

    outcome, out = await sh(
        box,
        root,
        "find . -type f | sort; mkdir -p node_modules/m; "
        "echo x > node_modules/m/i.js; head -c 11000000 /dev/zero > gen.bin",
    )
    assert out.text() == "./small.txt\n"
    assert "big.bin" in in_notes(outcome, "over 10 MB not synced")
    assert "node_modules/" in in_notes(outcome, "folders not synced")
    assert "gen.bin" in in_notes(outcome, "over 10 MB changed in the sandbox")
    assert "node_modules/m/i.js" in in_notes(outcome, "node_modules", "not copied back")
    assert not (root / "gen.bin").exists() and not (root / "node_modules" / "m").exists()
    await box.close()


PROTECTED = ("xclaw.yaml", ".git/hooks/post-commit", ".git/config", "sub/.git/config")


async def test_protected_files_are_never_written_back(
    fake: FakeE2B, settings: E2BSettings, root: Path
) -> None:
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]\n")
    box = E2BSandbox(settings, session_id="s")
    script = "mkdir -p .git/hooks sub/.git && echo ok > fine.txt && " + " && ".join(
        f"echo planted > {p}" for p in PROTECTED
    )
    outcome, _ = await sh(box, root, script)

    assert outcome.returncode == 0
    assert (root / "fine.txt").read_text() == "ok\n"
    assert (root / ".git" / "config").read_text() == "[core]\n"
    for path in ("xclaw.yaml", ".git/hooks/post-commit", "sub/.git/config"):
        assert not (root / path).exists(), path
    note = in_notes(outcome, "protected files")
    assert all(p in note for p in PROTECTED)

    # The local .git/config goes back up, so the sandbox does not keep the planted one.
    _, out = await sh(box, root, "cat .git/config")
    assert out.text() == "[core]\n"
    await box.close()


def _entry(path: str, kind: str = "FILE_TYPE_FILE", **extra: object) -> dict[str, object]:
    return {
        "name": path.rsplit("/", 1)[-1],
        "type": kind,
        "path": path,
        "size": "5",
        "mode": 0o644,
        "modifiedTime": "2024-01-01T00:00:00Z",
        **extra,
    }


async def test_entries_that_leave_the_root_are_refused(
    fake: FakeE2B, settings: E2BSettings, root: Path
) -> None:
    box = E2BSandbox(settings, session_id="s")
    fake.plant(
        [
            _entry(f"{WORKDIR}/../escape.txt"),
            _entry(f"{WORKDIR}/sub/../../escape2.txt"),
            _entry("/etc/cron.d/evil"),
            _entry(f"{WORKDIR}/alias", symlinkTarget="/etc/passwd", isSymlink=True),
        ]
    )
    outcome, _ = await sh(box, root, "ln -s /etc/passwd link && ln -s .. up && echo ok > real.txt")

    assert (root / "real.txt").read_text() == "ok\n"
    assert not (root / "link").exists() and not (root / "up").exists()
    assert not (root / "alias").exists()
    assert not (root.parent / "escape.txt").exists()
    assert not (root.parent / "escape2.txt").exists()
    reads = [c for c in fake.calls_to("GET", "/files")]
    assert len(reads) == 1  # only real.txt was downloaded
    outside = in_notes(outcome, "outside the working copy")
    assert "escape.txt" in outside and "/etc/cron.d/evil" in outside
    symlinks = in_notes(outcome, "symlink")
    assert all(n in symlinks for n in ("link", "up", "alias"))
    await box.close()


async def test_write_back_never_follows_a_local_symlink(
    fake: FakeE2B, settings: E2BSettings, root: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "out").symlink_to(outside)
    box = E2BSandbox(settings, session_id="s")
    outcome, _ = await sh(box, root, "mkdir out && echo x > out/file")

    assert list(outside.iterdir()) == []
    assert "out/file" in in_notes(outcome, "in the way")
    assert "out" in in_notes(outcome, "local symlinks not uploaded")
    await box.close()


async def test_local_edit_during_the_command_wins(
    fake: FakeE2B, settings: E2BSettings, root: Path
) -> None:
    (root / "f.txt").write_text("base")
    box = E2BSandbox(settings, session_id="s")
    await sh(box, root, "true")

    async def edit_locally() -> None:  # once the command runs, i.e. after the upload
        for _ in range(500):
            if len(fake.calls_to("POST", "/process.Process/Start")) >= 2:
                break
            await asyncio.sleep(0.02)
        (root / "f.txt").write_text("local edit")

    editor = asyncio.create_task(edit_locally())
    outcome, _ = await sh(box, root, "sleep 0.8; echo remote > f.txt")
    await editor
    assert (root / "f.txt").read_text() == "local edit"
    assert "f.txt" in in_notes(outcome, "changed here and in the sandbox")
    await box.close()


# -- failures ------------------------------------------------------------------------------


async def test_api_down_is_unavailable_and_nothing_runs_here(
    settings: E2BSettings, root: Path
) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once we leave: nobody listens there
    down = dataclasses.replace(settings, api_url=f"http://127.0.0.1:{port}")
    box = E2BSandbox(down, session_id="s")
    with pytest.raises(ToolError) as err:
        await sh(box, root, "touch ran-here")
    assert err.value.code == "SANDBOX_UNAVAILABLE"
    assert f"127.0.0.1:{port}" in err.value.message and "E2B_API_URL" in err.value.hint
    assert not (root / "ran-here").exists()


async def test_wrong_key_is_unavailable_and_the_key_is_never_shown(
    fake: FakeE2B, settings: E2BSettings, root: Path
) -> None:
    wrong = dataclasses.replace(settings, api_key="e2b_wrongkey0123456789")
    box = E2BSandbox(wrong, session_id="s")
    with pytest.raises(ToolError) as err:
        await sh(box, root, "true")
    assert err.value.code == "SANDBOX_UNAVAILABLE"
    assert "401" in err.value.message and "E2B_API_KEY" in err.value.hint
    assert "wrongkey" not in str(err.value) and "wrongkey" not in repr(wrong)
    assert wrong.clean(RuntimeError("sent e2b_wrongkey0123456789 upstream")) == (
        "sent [REDACTED] upstream"
    )


async def test_missing_template_is_unavailable(
    fake: FakeE2B, settings: E2BSettings, root: Path
) -> None:
    box = E2BSandbox(dataclasses.replace(settings, template="nope"), session_id="s")
    with pytest.raises(ToolError) as err:
        await sh(box, root, "true")
    assert err.value.code == "SANDBOX_UNAVAILABLE"
    assert "'nope'" in err.value.message and "E2B_TEMPLATE_ID" in err.value.hint


async def test_a_dead_sandbox_fails_the_command_then_is_replaced(
    fake: FakeE2B, settings: E2BSettings, root: Path
) -> None:
    (root / "a.txt").write_text("a")
    box = E2BSandbox(settings, session_id="s")
    await sh(box, root, "true")
    old = box.sandbox_id
    assert old is not None
    fake.expire(old)

    with pytest.raises(ToolError) as err:
        await sh(box, root, "true")
    assert err.value.code == "SANDBOX_FAILED" and old in err.value.message
    outcome, out = await sh(box, root, "cat a.txt")  # a fresh sandbox, project uploaded again
    assert (outcome.returncode, out.text()) == (0, "a")
    assert box.sandbox_id != old
    in_notes(outcome, "new remote sandbox")
    await box.close()


def test_settings_from_the_environment() -> None:
    env = {"E2B_API_KEY": "k", "E2B_API_URL": "http://cube:3000", "CUBE_TEMPLATE_ID": "cube"}
    s = E2BSettings.from_env({**env, "E2B_SANDBOX_URL": "http://envd:49983"})
    assert (s.template, s.api_url, s.workdir) == ("cube", "http://cube:3000", WORKDIR)
    assert s.sandbox_url == "http://envd:49983" and s.domain is None
    assert E2BSettings.from_env({**env, "E2B_TEMPLATE_ID": "e2b"}).template == "e2b"
    assert E2BSettings.from_env(env, template="cfg", workdir="/work/p").workdir == "/work/p"
    assert sandbox_from_environment(env, session_id="x").session_id == "x"
    for broken, hint in (({"E2B_API_KEY": "k"}, "E2B_TEMPLATE_ID"), ({}, "E2B_API_KEY")):
        with pytest.raises(ToolError) as err:
            E2BSettings.from_env(broken)
        assert err.value.code == "SANDBOX_UNAVAILABLE" and hint in err.value.hint
    with pytest.raises(ToolError):
        E2BSettings.from_env(env, workdir="../up")


async def test_a_long_session_extends_the_sandbox_lifetime(
    fake: FakeE2B, settings: E2BSettings, root: Path
) -> None:
    box = E2BSandbox(dataclasses.replace(settings, lifetime_s=1), session_id="s")
    await sh(box, root, "true")
    assert fake.calls_to("POST", "/v2/sandboxes")[0].body["timeout"] == 1
    assert fake.calls_to("POST", f"/sandboxes/{box.sandbox_id}/timeout") == []
    await asyncio.sleep(0.6)  # past half the lifetime: the next command renews it
    await sh(box, root, "true")
    renewals = fake.calls_to("POST", f"/sandboxes/{box.sandbox_id}/timeout")
    assert [c.body for c in renewals] == [{"timeout": 1}]
    await box.close()


async def test_terminal_exec_runs_in_the_full_sandbox_end_to_end(
    fake: FakeE2B, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`xclaw tools call terminal.exec --sandbox full`, configured the way a user would."""
    from xclaw.cli.tools_cmd import call_once
    from xclaw.config import load_config
    from xclaw.policy.approval import ModeApprover

    for name, value in {
        "E2B_API_KEY": fake.api_key,
        "E2B_API_URL": fake.url,
        "E2B_SANDBOX_URL": fake.url,
        "E2B_TEMPLATE_ID": "xclaw",
    }.items():
        monkeypatch.setenv(name, value)
    root = tmp_path / "proj"
    root.mkdir()
    (root / "in.txt").write_text("from the laptop\n")
    args = {
        "program": "sh",
        "argv": ["-c", "cat in.txt; echo made > made.txt; echo x > xclaw.yaml"],
    }
    deny = ModeApprover("deny")
    result = await call_once("terminal.exec", args, root, deny, "full", config=load_config(root))
    assert result.ok, result
    assert result.data["stdout"] == "from the laptop\n"
    assert (root / "made.txt").read_text() == "made\n"  # synced back
    assert not (root / "xclaw.yaml").exists()  # protected: never written back
    assert any("xclaw.yaml" in note for note in result.data["sandbox_notes"])
    assert fake.api_key not in json.dumps(result.to_dict())
    assert len(fake.calls_to("POST", "/v2/sandboxes")) == 1
    assert len(fake.calls_to("DELETE", "/sandboxes/")) == 1  # closed with the session

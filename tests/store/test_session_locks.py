"""One run of a session at a time: the run lock (``xclaw.store.locks``) across processes and
within one, and the kernel dropping it when the process holding it dies."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from xclaw import Agent, ScriptedModel
from xclaw.core.errors import ConfigError
from xclaw.store.locks import session_busy, session_lock
from xclaw.store.sqlite import open_store


def test_a_second_run_of_the_same_session_is_refused_and_others_are_not() -> None:
    with session_lock("s-one"):
        assert session_busy("s-one")
        assert not session_busy("s-two")
        with pytest.raises(ConfigError) as err, session_lock("s-one"):
            pass
        assert err.value.code == "SESSION_BUSY"
        with session_lock("s-two"):
            pass
    assert not session_busy("s-one")


def test_the_lock_of_a_killed_process_is_free() -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from xclaw.store.locks import session_lock\n"
            "with session_lock('s-killed'):\n"
            "    print('held', flush=True)\n"
            "    time.sleep(60)\n",
        ],
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"held"
        assert session_busy("s-killed")  # another process runs it
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=10)
        deadline = time.monotonic() + 5
        while session_busy("s-killed"):
            assert time.monotonic() < deadline, "the dead process still holds the lock"
            time.sleep(0.05)
    finally:
        if holder.poll() is None:
            holder.kill()
        holder.wait(timeout=10)
        assert holder.stdout is not None
        holder.stdout.close()


async def test_an_agent_refuses_to_continue_a_session_another_run_holds(root: Path) -> None:
    store = open_store()
    try:
        first = Agent(ScriptedModel(["Done."]), root, store=store, evidence_gate_enabled=False)
        await first.run("say done", session_id="locked-1")
        with session_lock("locked-1"):  # as if a terminal were resuming it right now
            second = Agent(ScriptedModel(["Again."]), root, store=store)
            with pytest.raises(ConfigError) as err:
                await second.follow_up("locked-1", "and again")
            assert err.value.code == "SESSION_BUSY"
        items = store.load_items("locked-1")  # nothing was written by the refused run
        again = Agent(
            ScriptedModel(["Done.", "Again."]), root, store=store, evidence_gate_enabled=False
        )
        result = await asyncio.wait_for(again.follow_up("locked-1", "and again"), 30)
        assert result.status == "completed", result
        assert len(store.load_items("locked-1")) > len(items)
    finally:
        store.close()

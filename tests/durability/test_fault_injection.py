"""Fault injection: SIGKILL ``xclaw run`` at a random moment, then ``xclaw resume`` it.

A scripted run makes 28 side effects in a fresh project: file writes, appends to a journal
(``tee -a`` fed a unique line: not idempotent), ``mkdir`` and ``cp``, with read-only turns
mixed in. Each trial kills the run at a time drawn uniformly over the measured length of an
uninterrupted run (seeded; the seed is printed), then resumes it. What we accept:

- the kill came before the session existed: nothing happened at all;
- resume completes (exit 0) and every side effect happened exactly once; or
- the kill caught a side-effecting call mid-way: resume exits 3, the session is ``paused``
  and ``pending`` names that call (ledger phase ``started``, not read-only); everything
  before it happened once, nothing after it, the call itself at most once. A second resume
  with ``--retry-interrupted`` (runs it once more) or ``--skip-interrupted`` (never runs it)
  finishes the script.

Every trial also checks the recorded transcript and step numbering.

The test runs on SQLite (each trial its own data dir and database) and on PostgreSQL (every
trial's run and resume in one database on a throwaway server, told apart by project root),
with fewer trials there (``XCLAW_FAULT_TRIALS_PG``) to keep the suite short.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from xclaw.cli.app import app
from xclaw.store.base import LedgerEntry, SessionRecord
from xclaw.store.open import DATABASE_URL_ENV, open_store
from xclaw.store.postgres import PostgresStore
from xclaw.store.sqlite import SqliteStore

SEED = int(os.environ.get("XCLAW_FAULT_SEED", "20240607"))
TRIALS = int(os.environ.get("XCLAW_FAULT_TRIALS", "36"))  # more: XCLAW_FAULT_TRIALS=200
TRIALS_PG = int(os.environ.get("XCLAW_FAULT_TRIALS_PG", "12"))
GROUPS = 7
SEED_TEXT = "seed file: copied by cp, never changed\n"
TASK = "Record journal lines, folders and copies for the project."


@dataclass(frozen=True, slots=True)
class Effect:
    call_id: str
    kind: str  # write | append | mkdir | copy
    index: int


def build_script() -> tuple[list[dict[str, object]], list[Effect]]:
    """Script turns (one call each, two on read turns) and the side effects in order."""
    turns: list[dict[str, object]] = []
    effects: list[Effect] = []

    def call(call_id: str, name: str, **arguments: object) -> dict[str, object]:
        return {"id": call_id, "name": name, "arguments": arguments}

    for i in range(GROUPS):
        steps = [
            ("write", call(f"w{i}", "fs.write", path=f"f{i}.txt", content=f"content {i}\n")),
            (
                "append",
                call(
                    f"a{i}",
                    "terminal.exec",
                    program="tee",
                    argv=["-a", "journal.txt"],
                    stdin=f"line {i}\n",
                ),
            ),
            ("mkdir", call(f"m{i}", "terminal.exec", program="mkdir", argv=["-p", f"d{i}"])),
            (
                "copy",
                call(f"c{i}", "terminal.exec", program="cp", argv=["seed.txt", f"copy{i}.txt"]),
            ),
        ]
        for kind, c in steps:
            turns.append({"tool_calls": [c]})
            effects.append(Effect(str(c["id"]), kind, i))
        reads = [call(f"r{i}", "fs.read", path="seed.txt"), call(f"l{i}", "fs.list", path=".")]
        turns.append({"tool_calls": reads})
    turns.append({"text": "done: journal, folders and copies recorded"})
    return turns, effects


TURNS, EFFECTS = build_script()
SCRIPT_CALL_IDS = [str(c["id"]) for t in TURNS for c in t.get("tool_calls", [])]  # type: ignore[attr-defined]


PARTIAL = 0.5  # a ``cp`` killed mid-way: the copy exists with a strict prefix of the seed


def effect_count(root: Path, e: Effect) -> float:
    """How many times an effect is visible in the project (idempotent ones: 0 or 1).

    ``fs.write`` is atomic, so a file it wrote is whole or absent. ``cp`` is a real program
    killed with the run (the sandbox gives it a parent-death signal), so the interrupted copy
    may be cut short: that shows as ``PARTIAL`` and is only accepted for the paused call.
    """
    if e.kind == "append":
        journal = root / "journal.txt"
        lines = journal.read_text().splitlines() if journal.exists() else []
        return lines.count(f"line {e.index}")
    if e.kind == "mkdir":
        return int((root / f"d{e.index}").is_dir())
    path = root / (f"f{e.index}.txt" if e.kind == "write" else f"copy{e.index}.txt")
    if not path.exists():
        return 0
    expected = f"content {e.index}\n" if e.kind == "write" else SEED_TEXT
    text = path.read_text()
    if e.kind == "copy" and text != expected and expected.startswith(text):
        return PARTIAL
    assert text == expected, f"{path.name} has the wrong content"
    return 1


def counts(root: Path) -> list[float]:
    return [effect_count(root, e) for e in EFFECTS]


def assert_prefix(found: list[float], upto: int, own_max: int = 1) -> None:
    """Effects before ``upto`` exactly once, the one at ``upto`` at most ``own_max``, none after."""
    assert found[:upto] == [1] * upto, found
    if upto < len(found):
        assert found[upto] <= own_max, found
        assert found[upto + 1 :] == [0] * (len(found) - upto - 1), found


def assert_any_prefix(found: list[float]) -> None:
    """The kill left a clean prefix: some effects done once, then at most one partial."""
    done = 0
    while done < len(found) and found[done] == 1:
        done += 1
    assert_prefix(found, done)


AnyStore = SqliteStore | PostgresStore


def trial_store(data: Path) -> AnyStore:
    """The store a trial's processes used: PostgreSQL when the test set its URL, else the
    SQLite file in the trial's data dir."""
    return open_store(None if os.environ.get(DATABASE_URL_ENV) else data / "xclaw" / "xclaw.db")


def check_transcript(store: AnyStore, sid: str, *, finished: bool) -> None:
    items = store.load_items(sid)
    assert [i.seq for i in items] == list(range(1, len(items) + 1))
    keys = [(i.turn, json.dumps(i.payload, sort_keys=True)) for i in items]
    assert len(keys) == len(set(keys)), "an item was recorded twice"
    calls = [i for i in items if i.payload["type"] == "function_call"]
    outputs = Counter(
        (i.turn, i.payload["call_id"]) for i in items if i.payload["type"] == "function_call_output"
    )
    ids = [c.payload["call_id"] for c in calls]
    assert ids == SCRIPT_CALL_IDS[: len(ids)], "calls out of script order or repeated"
    last_turn = max((c.turn for c in calls), default=0)
    for c in calls:
        answered = outputs[(c.turn, c.payload["call_id"])]
        # Only the last turn of an interrupted run may still wait for its results.
        assert answered == 1 or (not finished and c.turn == last_turn and answered == 0)
    assert sum(outputs.values()) <= len(calls)
    numbers = [s.step_id for s in store.list_steps(sid)]
    assert numbers == [f"s{n:04d}" for n in range(1, len(numbers) + 1)]
    if finished:
        assert ids == SCRIPT_CALL_IDS
        assert all(e.phase == "result_sent" for e in store.load_ledger(sid))


@dataclass(slots=True)
class Trial:
    index: int
    root: Path
    data: Path  # this trial's XDG_DATA_HOME
    delay_s: float
    from_spawn: bool  # the clock starts at spawn, not when the run starts recording


def env_for(data: Path) -> dict[str, str]:
    return {**os.environ, "XDG_DATA_HOME": str(data)}


def spawn_run(root: Path, data: Path, script: Path) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "xclaw", "run", "-C", str(root), "--approval", "deny"]
    argv += ["--model", f"scripted:{script}", TASK]
    return subprocess.Popen(
        argv, env=env_for(data), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )


def wait_run_started(proc: subprocess.Popen[bytes], data: Path) -> None:
    """Until the run's output folder appears: made right before its first durable write."""
    runs = data / "xclaw" / "runs"
    while proc.poll() is None and not (runs.is_dir() and any(runs.iterdir())):
        time.sleep(0.001)


def wait_for_orphans(root: Path, timeout_s: float = 10.0) -> None:
    """Commands the killed run started (tee, cp) may outlive it; let them finish first."""
    deadline = time.monotonic() + timeout_s
    target = str(root)
    while time.monotonic() < deadline:
        busy = False
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                busy = os.readlink(f"/proc/{pid}/cwd") == target
            except OSError:
                continue
            if busy:
                break
        if not busy:
            return
        time.sleep(0.01)
    raise AssertionError(f"processes still running in {root}")


def new_trial(base: Path, index: int, delay_s: float, from_spawn: bool) -> Trial:
    root = base / f"t{index:03d}"
    root.mkdir()
    (root / "seed.txt").write_text(SEED_TEXT)
    return Trial(index, root.resolve(), base / f"data{index:03d}", delay_s, from_spawn)


def kill_trial(t: Trial, script: Path) -> Trial:
    proc = spawn_run(t.root, t.data, script)
    if not t.from_spawn:
        wait_run_started(proc, t.data)
    try:
        proc.wait(timeout=t.delay_s)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        wait_for_orphans(t.root)
    else:
        assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
    if proc.stderr:
        proc.stderr.close()
    return t


def resume(t: Trial, sid: str, *flags: str, subprocess_cli: bool = False) -> tuple[int, str]:
    """``xclaw resume``: in this process (CliRunner) or, now and then, as a real process."""
    args = ["resume", sid, "--approval", "deny", *flags]
    env = {"XDG_DATA_HOME": str(t.data)}
    if subprocess_cli:
        done = subprocess.run(
            [sys.executable, "-m", "xclaw", *args],
            capture_output=True,
            text=True,
            timeout=120,
            env=env_for(t.data),
        )
        return done.returncode, done.stdout + done.stderr
    result = CliRunner().invoke(app, args, env=env)
    return result.exit_code, result.output


def started_side_effect(ledger: list[LedgerEntry]) -> LedgerEntry | None:
    started = [e for e in ledger if e.phase == "started" and not e.read_only]
    assert len(started) <= 1, "side-effecting calls run one at a time"
    return started[0] if started else None


def classify(session: SessionRecord | None, ledger: list[LedgerEntry]) -> str:
    if session is None:
        return "before session"
    if session.state == "success":
        return "after finish"
    if started_side_effect(ledger) is not None:
        return "mid-tool (side effect)"
    if any(e.phase == "started" for e in ledger):
        return "mid-tool (read-only)"
    return "between tools"


def settle_paused(store: AnyStore, t: Trial, sid: str, at: LedgerEntry) -> str:
    """The pause must name the interrupted call; decide it, finish and check the counts."""
    index = [e.call_id for e in EFFECTS].index(at.call_id)
    before = counts(t.root)
    assert_prefix(before, index)
    session = store.get_session(sid)
    assert session is not None and session.state == "paused" and session.pending
    assert session.pending["call_id"] == at.call_id and session.pending["name"] == at.name
    retry = t.index % 2 == 0
    code, out = resume(t, sid, "--retry-interrupted" if retry else "--skip-interrupted")
    assert code == 0, out
    after = counts(t.root)
    own = after.pop(index)
    assert after == [1] * len(after), after
    if retry:  # an append that had happened shows twice: the user chose to run it again
        expected = before[index] + 1 if EFFECTS[index].kind == "append" else 1
    else:
        expected = before[index]
    assert own == expected, (own, before[index], retry)
    return "paused, then retried" if retry else "paused, then skipped"


def settle(store: AnyStore, t: Trial) -> tuple[str, str, str]:
    """Resume one killed trial: (where the kill landed, the recorded phase, how it ended)."""
    found = store.list_sessions(root=str(t.root), limit=1)
    session = found[0] if found else None
    ledger = store.load_ledger(session.id) if session else []
    where = classify(session, ledger)
    assert_any_prefix(counts(t.root))
    if session is None:
        assert sorted(p.name for p in t.root.iterdir()) == ["seed.txt"], "effect before session"
        return where, "-", "nothing to resume"
    sid = session.id
    check_transcript(store, sid, finished=session.state == "success")
    code, out = resume(t, sid, subprocess_cli=t.index % 8 == 3)
    if where == "after finish":
        assert code == 2 and "SESSION_FINISHED" in out, out
        outcome = "resume refused: finished"
    elif where == "mid-tool (side effect)":
        assert code == 3, out
        at = started_side_effect(ledger)
        assert at is not None
        outcome = settle_paused(store, t, sid, at)
    else:
        assert code == 0, out
        outcome = "completed"
    if not outcome.startswith("paused"):
        assert counts(t.root) == [1] * len(EFFECTS)
    check_transcript(store, sid, finished=True)
    return where, session.phase, outcome


def measure_baseline(base: Path, script: Path) -> tuple[float, float]:
    """One uninterrupted run: (seconds from spawn to exit, from the run's start to exit)."""
    t = new_trial(base, 999, 0.0, True)
    spawned = time.monotonic()
    proc = spawn_run(t.root, t.data, script)
    wait_run_started(proc, t.data)
    started = time.monotonic()
    _, err = proc.communicate(timeout=120)
    ended = time.monotonic()
    assert proc.returncode == 0, err.decode()
    assert counts(t.root) == [1] * len(EFFECTS)
    with trial_store(t.data) as store:
        (session,) = store.list_sessions(root=str(t.root))
        check_transcript(store, session.id, finished=True)
    return ended - spawned, ended - started


def run_trials(trials: list[Trial], script: Path) -> list[Counter[str]]:
    tallies: list[Counter[str]] = [Counter(), Counter(), Counter()]
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = [pool.submit(kill_trial, t, script) for t in trials]
        for fut in as_completed(futures):
            t = fut.result()
            clock = "spawn" if t.from_spawn else "run start"
            try:
                with trial_store(t.data) as store:
                    found = settle(store, t)
            except AssertionError as err:
                raise AssertionError(
                    f"trial {t.index} (kill {t.delay_s:.3f}s after {clock}): {err}"
                ) from err
            for tally, key in zip(tallies, found, strict=True):
                tally[key] += 1
    return tallies


@pytest.mark.timeout(600)  # about a minute on two idle cores; more when the machine is busy
def test_sigkill_at_random_points_then_resume(backend: str, tmp_path: Path) -> None:
    trials_n = TRIALS_PG if backend == "postgres" else TRIALS
    script = tmp_path / "script.jsonl"
    script.write_text("".join(json.dumps(t) + "\n" for t in TURNS))
    assert len(EFFECTS) >= 20
    total_s, run_s = measure_baseline(tmp_path, script)
    rng = random.Random(SEED)
    # Most kills are timed from the moment the run starts recording (process start-up is
    # over a second here and would otherwise soak up most kills); every fourth trial is
    # timed from spawn so that kills during start-up are covered too.
    trials = []
    for i in range(trials_n):
        from_spawn = i % 4 == 0
        delay = rng.uniform(0, total_s if from_spawn else run_s)
        trials.append(new_trial(tmp_path, i, delay, from_spawn))
    print(
        f"\nfault injection ({backend}): seed {SEED}, {trials_n} trials, "
        f"{len(EFFECTS)} side effects; "
        f"uninterrupted run {run_s * 1000:.0f} ms ({total_s * 1000:.0f} ms with start-up)"
    )
    where, phases, outcomes = run_trials(trials, script)
    print("kills landed:", dict(where.most_common()))
    print("session phase recorded at the kill:", dict(phases.most_common()))
    print("outcomes:", dict(outcomes.most_common()))
    assert sum(where.values()) == trials_n

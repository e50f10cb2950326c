"""Planted keys never leave through traces, logs, exports or the CLI.

Fake keys go into the task, into a file the scripted model reads, into tool arguments, into
command output and into the model's final answer. Afterwards no planted key — not even a
12-character piece of one — may appear in the store's ``steps`` (traces) and ``events``
(logs) tables, the session's meta, any export format, or what ``run``, ``steps``, ``status``,
``sessions`` and ``rollback`` print.

The transcript (``items``), the ledger, the session's task (and its title, the task's first
line) and a paused session's ``pending`` call may hold the keys: they are what the model saw
and what resuming needs to send back, and they stay in the owner-only data dir. Everything
shown from them passes through redaction.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from pg_support import raw_rows
from xclaw import Agent, Limits, Risk, ScriptedModel, ToolResult, tool
from xclaw.cli.app import app
from xclaw.cli.render import LiveView
from xclaw.core.events import Event
from xclaw.redact import load_environment_secrets
from xclaw.store.export import FORMATS
from xclaw.store.open import open_store
from xclaw.store.postgres import PostgresStore
from xclaw.store.sqlite import SqliteStore
from xclaw.tools.base import ToolContext

pytestmark = pytest.mark.usefixtures("backend")  # each test on SQLite and on PostgreSQL

OPENAI = "sk-proj-Q7wErTyUiOpAsDfGhJkLzXcV"
GITHUB = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
AWS = "AKIAQ3EXAMPLEKEY7XYZ"
ASSIGNED = "hunter2plainsecretvalue"  # only recognisable by its name: OPENAI_API_KEY=...
PEM_LINE = "MIIEpAIBAAKCAQEAq9Zx3Wv7Lp2Rt8Yk4Nb6Jc1Hd5Fg0Ms"  # a private key's body
JSON_SECRET = "jsonClientSecretQ1w2E3r4"  # {"client_secret": "..."}
URL_PASSWORD = "urlPassZ9x8C7v6B5n4"  # postgres://app:...@db/app
ENV_VALUE = "planted-secret-123"  # the value of our own MYSQL_PWD, in a file the model reads
SECRETS = {
    "openai": "Q7wErTyUiOpAsDfGhJkLzXcV",
    "github": "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "aws": "Q3EXAMPLEKEY7XYZ",
    "assigned": ASSIGNED,
    "pem": PEM_LINE,
    "json": JSON_SECRET,
    "url": URL_PASSWORD,
    "env": ENV_VALUE,
}
PEM = f"-----BEGIN OPENSSH PRIVATE KEY-----\n{PEM_LINE}\nAAAA\n-----END OPENSSH PRIVATE KEY-----\n"
SERVICE_JSON = json.dumps(
    {"client_id": "app-42", "client_secret": JSON_SECRET, "db": {"password": JSON_SECRET}}
)
DB_CONF = f"DATABASE_URL=postgres://app:{URL_PASSWORD}@db.internal:5432/app\n"
WINDOW = 12
TASK = f"Tidy the notes. The deploy token {OPENAI} must stay private."
WIDE = {"COLUMNS": "250"}


def leaks(text: str) -> list[str]:
    """Which planted secrets show up in ``text``, whole or as a 12-character piece."""
    found = []
    for name, body in SECRETS.items():
        pieces = {body[i : i + WINDOW] for i in range(len(body) - WINDOW + 1)}
        if any(p in text for p in pieces):
            found.append(name)
    return found


def cli(*args: str) -> str:
    result = CliRunner().invoke(app, list(args), env=WIDE)
    return result.output


def script_turns() -> list[dict[str, Any] | str]:
    def call(name: str, **arguments: Any) -> dict[str, Any]:
        return {"tool_calls": [{"name": name, "arguments": arguments}]}

    return [
        call("fs.read", path="notes.txt"),
        call(
            "fs.write", path="config.txt", content=f"github = {GITHUB}\nOPENAI_API_KEY={ASSIGNED}"
        ),
        call("terminal.exec", program="cat", argv=["notes.txt", "config.txt"]),
        call("terminal.exec", program="cat", argv=["keyring.txt", "service.json", "db.conf"]),
        call("fs.read", path="dump.txt"),
        call("fs.write", path="copy.json", content=SERVICE_JSON + PEM),
        call("terminal.exec", program="echo", argv=[f"token={OPENAI}", AWS]),
        call("terminal.exec", program="tee", argv=["-a", "log.txt"], stdin=f"{GITHUB}\n"),
        # Long values get shortened for display: the cut must not leave a piece of a key.
        call("fs.write", path="pad.txt", content="x" * 18 + GITHUB),
        call("fs.write", path="pad2.txt", content="p" * 50 + GITHUB),
        f"Done. For the record the keys were {AWS} and {GITHUB} and OPENAI_API_KEY={ASSIGNED}, "
        f"the database is postgres://app:{URL_PASSWORD}@db/app, mysql wants {ENV_VALUE} and "
        f"the deploy key is\n{PEM}",
    ]


def trace_and_log_rows(store: SqliteStore | PostgresStore) -> str:
    rows = [*raw_rows(store, "SELECT * FROM steps"), *raw_rows(store, "SELECT * FROM events")]
    rows += raw_rows(store, "SELECT id, meta FROM sessions")
    return "\n".join(map(repr, rows))


@pytest.fixture
def our_secret_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``MYSQL_PWD`` in xclaw's own environment; read as a new process reads it, on first use."""
    monkeypatch.setenv("MYSQL_PWD", ENV_VALUE)
    load_environment_secrets()
    yield
    monkeypatch.delenv("MYSQL_PWD")
    load_environment_secrets()


@pytest.fixture
def finished_run(
    root: Path, tmp_path: Path, our_secret_env: None
) -> Iterator[tuple[Path, str, str]]:
    (root / "notes.txt").write_text(f"OPENAI_API_KEY={ASSIGNED}\naws {AWS}\n")
    (root / "keyring.txt").write_text(PEM)
    (root / "service.json").write_text(SERVICE_JSON)
    (root / "db.conf").write_text(DB_CONF)
    (root / "dump.txt").write_text(f"mysql session password: {ENV_VALUE} (from the env)\n")
    script = tmp_path / "leaky.jsonl"
    script.write_text("".join(json.dumps(t) + "\n" for t in script_turns()))
    out = cli("run", "-C", str(root), "--approval", "deny", "--model", f"scripted:{script}", TASK)
    with open_store() as store:
        session = store.list_sessions(root=str(root))[0]
        assert session.state == "success", out
        items = json.dumps([i.payload for i in store.load_items(session.id)])
    # The check can fail: the model really saw every planted key.
    assert set(leaks(items)) == set(SECRETS)
    yield root, session.id, out


def test_store_traces_and_logs_hold_no_keys(finished_run: tuple[Path, str, str]) -> None:
    _, sid, _ = finished_run
    with open_store() as store:
        assert store.list_steps(sid) and store.list_events(sid)
        text = trace_and_log_rows(store)
    assert "[REDACTED]" in text
    assert leaks(text) == []


def test_cli_output_holds_no_keys(finished_run: tuple[Path, str, str]) -> None:
    root, sid, run_output = finished_run
    assert "config.txt" in run_output and "[REDACTED]" in run_output
    assert leaks(run_output) == [], run_output
    for args in (["steps", sid], ["status", "-C", str(root)], ["sessions"]):
        printed = cli(*args)
        assert "[REDACTED]" in printed, printed
        assert leaks(printed) == [], (args, printed)


@pytest.mark.parametrize("fmt", FORMATS)
def test_exports_hold_no_keys(
    finished_run: tuple[Path, str, str], tmp_path: Path, fmt: str
) -> None:
    _, sid, _ = finished_run
    target = tmp_path / f"export.{fmt}"
    cli("export", sid, "--format", fmt, "-o", str(target))
    exported = target.read_text()
    assert "config.txt" in exported
    assert leaks(exported) == []
    assert leaks(cli("export", sid, "--format", fmt)) == []


def test_rollback_report_holds_no_keys(finished_run: tuple[Path, str, str]) -> None:
    _, sid, _ = finished_run
    printed = cli("rollback", sid, "s0002")
    assert "not undone" in printed and "pad2.txt" in printed
    assert leaks(printed) == [], printed


class Crash(BaseException):
    """Stands in for the process dying: nothing in the loop catches it."""


async def test_paused_decision_shown_by_status_holds_no_keys(root: Path) -> None:
    @tool("vault.store", risk=Risk.WRITE)
    def vault_store(ctx: ToolContext, secret: str) -> ToolResult:
        """Store a secret (dies half-way the first time)."""
        raise Crash

    turns: list[dict[str, Any] | str] = [
        {"tool_calls": [{"name": "vault.store", "arguments": {"secret": f"{OPENAI} {AWS}"}}]},
        "stored",
    ]
    with open_store() as store:
        agent = Agent(ScriptedModel(turns), root, [vault_store], store=store, limits=Limits())
        with pytest.raises(Crash):
            await agent.run("keep the key")
        sid = store.list_sessions(root=str(root))[0].id
        paused = await agent.resume(sid)
        assert paused.status == "interrupted"
        session = store.get_session(sid)
        assert session is not None and session.pending is not None
        assert OPENAI in json.dumps(session.pending)  # kept raw: resuming may need it
    printed = cli("status", "-C", str(root))
    assert "waiting for your decision" in printed and "vault.store" in printed
    assert leaks(printed) == [], printed


def test_live_view_holds_no_keys(our_secret_env: None) -> None:
    """Streamed pieces cut keys and key blocks anywhere; the view still shows none of them."""
    buf = io.StringIO()
    view = LiveView(Console(file=buf, width=250, highlight=False))
    text = f"cat: {SERVICE_JSON}\n{PEM}{DB_CONF}token={OPENAI} {AWS} {ENV_VALUE}\nend\n"
    call = {"name": "terminal.exec", "arguments": {"program": "cat", "argv": ["service.json"]}}
    view(Event("tool.proposed", "s", 1, call, "c1"))
    for i in range(0, len(text), 7):  # seven characters at a time, split mid-key
        view(Event("tool.output", "s", 1, {"stream": "stdout", "text": text[i : i + 7]}, "c1"))
    done = {"name": "terminal.exec", "ok": True, "message": f"ran with {ENV_VALUE}"}
    view(Event("tool.completed", "s", 1, {**done, "duration_ms": 3}, "c1"))
    for i in range(0, len(text), 5):
        view(Event("model.streaming", "s", 1, {"delta": text[i : i + 5]}))
    view(Event("model.message_complete", "s", 1, {"text": text}))
    shown = buf.getvalue()
    assert "app-42" in shown and "end" in shown and "[REDACTED]" in shown
    assert leaks(shown) == [], shown


def test_live_view_masks_arguments_named_as_secrets() -> None:
    buf = io.StringIO()
    view = LiveView(Console(file=buf, width=250, highlight=False))
    args = {"name": "db", "password": "short1", "config": {"api_key": "abc123"}}
    view(Event("tool.proposed", "s", 1, {"name": "vault.store", "arguments": args}, "c1"))
    shown = buf.getvalue()
    assert "name=db" in shown and "short1" not in shown and "abc123" not in shown

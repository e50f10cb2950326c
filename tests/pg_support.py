"""Throwaway PostgreSQL servers for tests and benchmarks: Debian's binaries, a temp dir,
a free port, a unix socket in the temp dir; stopped and removed at the end.

Nothing is assumed to be running. PostgreSQL refuses to run as root, so under root (CI, this
machine) the cluster belongs to ``nobody`` and ``initdb``/``pg_ctl`` run as that user (Popen's
``user=``/``group=``); otherwise they run as the current user.
"""

from __future__ import annotations

import atexit
import glob
import os
import pwd
import shutil
import socket
import sqlite3
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from xclaw.store.open import DATABASE_URL_ENV

SUPERUSER = "xclaw"


def find_bin_dir() -> Path | None:
    """The newest ``/usr/lib/postgresql/<version>/bin`` holding initdb and pg_ctl."""
    found = []
    for initdb in glob.glob("/usr/lib/postgresql/*/bin/initdb"):
        folder = Path(initdb).parent
        if (folder / "pg_ctl").exists() and (folder / "postgres").exists():
            try:
                found.append((int(folder.parent.name), folder))
            except ValueError:
                continue
    return max(found)[1] if found else None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class PgServer:
    """One running cluster; ``url(db)`` names a database on it (unix socket, trust auth)."""

    bin_dir: Path
    base: Path  # the temp dir: data/, the socket, the log
    port: int
    _as: dict[str, Any] = field(default_factory=dict)  # Popen user/group when run as root

    @property
    def data(self) -> Path:
        return self.base / "data"

    @property
    def socket_dir(self) -> Path:
        return self.base

    def url(self, database: str = "postgres") -> str:
        return (
            f"postgresql+psycopg://{SUPERUSER}@/{database}?host={self.socket_dir}&port={self.port}"
        )

    def _run(self, *argv: str) -> None:
        done = subprocess.run(
            [str(self.bin_dir / argv[0]), *argv[1:]],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=self.base,
            **self._as,
        )
        if done.returncode != 0:
            log = self.base / "server.log"
            tail = log.read_text()[-2000:] if log.exists() else ""
            raise RuntimeError(f"{argv[0]} failed: {done.stdout}{done.stderr}{tail}")

    def start(self, *, fsync: bool = False) -> None:
        self._run(
            "initdb",
            "-D",
            str(self.data),
            "-U",
            SUPERUSER,
            "--auth=trust",
            "--no-locale",
            "--encoding=UTF8",
            "--no-sync",
        )
        # fsync off for tests: a commit is still written to the kernel at COMMIT, so it
        # survives the client (or the server process) being killed — the case tested; only
        # an OS crash could drop it. Benchmarks choose (ALTER SYSTEM may change it later).
        settings = {
            "port": str(self.port),
            "listen_addresses": "'127.0.0.1'",
            "unix_socket_directories": f"'{self.socket_dir}'",
            "max_connections": "200",
            "shared_buffers": "'32MB'",
            "fsync": "on" if fsync else "off",
            "full_page_writes": "on" if fsync else "off",
        }
        with open(self.data / "postgresql.conf", "a", encoding="utf-8") as conf:
            conf.write("".join(f"{k} = {v}\n" for k, v in settings.items()))
        self._run(
            "pg_ctl",
            "start",
            "-w",
            "-t",
            "60",
            "-D",
            str(self.data),
            "-l",
            str(self.base / "server.log"),
        )

    def create_database(self, name: str | None = None) -> str:
        """A new empty database; returns its URL."""
        import psycopg

        name = name or "t_" + uuid.uuid4().hex[:12]
        with psycopg.connect(
            host=str(self.socket_dir),
            port=self.port,
            user=SUPERUSER,
            dbname="postgres",
            autocommit=True,
        ) as conn:
            conn.execute(f'CREATE DATABASE "{name}" STRATEGY FILE_COPY TEMPLATE template0')
        return self.url(name)

    def stop(self) -> None:
        try:
            if (self.data / "postmaster.pid").exists():
                self._run("pg_ctl", "stop", "-D", str(self.data), "-m", "immediate", "-w")
        finally:
            shutil.rmtree(self.base, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def reap_orphans(bin_dir: Path) -> None:
    """Stop servers left by test processes that were killed before their atexit ran (each
    temp dir names the process that started it in ``owner.pid``)."""
    for owner in glob.glob(os.path.join(tempfile.gettempdir(), "xclaw-pg-*", "owner.pid")):
        base = Path(owner).parent
        try:
            pid = int(Path(owner).read_text())
        except (OSError, ValueError):
            continue
        if _alive(pid):
            continue
        data = base / "data"
        if (data / "postmaster.pid").exists():
            st = base.stat()
            run_as = {"user": st.st_uid, "group": st.st_gid} if os.geteuid() == 0 else {}
            subprocess.run(
                [str(bin_dir / "pg_ctl"), "stop", "-D", str(data), "-m", "immediate", "-w"],
                capture_output=True,
                timeout=60,
                cwd=base,
                check=False,
                **run_as,  # type: ignore[arg-type]
            )
        shutil.rmtree(base, ignore_errors=True)


def start_server(*, fsync: bool = False) -> PgServer:
    """initdb and start a cluster in a fresh temp dir; raise if PostgreSQL is missing."""
    bin_dir = find_bin_dir()
    if bin_dir is None:
        raise RuntimeError("PostgreSQL is not installed (apt-get install postgresql; make deps)")
    reap_orphans(bin_dir)
    # Not under pytest's 0700 basetemp: under root the cluster's user must reach the folder.
    base = Path(tempfile.mkdtemp(prefix="xclaw-pg-"))
    run_as: dict[str, Any] = {}
    if os.geteuid() == 0:
        nobody = pwd.getpwnam("nobody")
        os.chown(base, nobody.pw_uid, nobody.pw_gid)
        run_as = {"user": nobody.pw_uid, "group": nobody.pw_gid, "extra_groups": []}
    os.chmod(base, 0o700)
    (base / "owner.pid").write_text(str(os.getpid()))
    server = PgServer(bin_dir, base, _free_port(), run_as)
    try:
        server.start(fsync=fsync)
    except BaseException:
        shutil.rmtree(base, ignore_errors=True)
        raise
    return server


# -- pytest fixtures (conftest files import these) ---------------------------------------------

_shared: PgServer | None = None


def shared_server() -> PgServer:
    """One server per test process, started on first use, stopped when the process exits."""
    global _shared
    if _shared is None:
        _shared = start_server()
        atexit.register(_shared.stop)
    return _shared


def drop_database(server: PgServer, url: str) -> None:
    import psycopg
    from sqlalchemy.engine import make_url

    name = make_url(url).database
    with psycopg.connect(
        host=str(server.socket_dir),
        port=server.port,
        user=SUPERUSER,
        dbname="postgres",
        autocommit=True,
    ) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A fresh empty database on the shared throwaway server (dropped afterwards)."""
    try:
        server = shared_server()
    except RuntimeError as err:
        pytest.fail(f"cannot start a throwaway PostgreSQL server: {err}")
    url = server.create_database()
    yield url
    drop_database(server, url)


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test on each store: ``postgres`` sets XCLAW_DATABASE_URL to a fresh database,
    which ``xclaw.store.open.open_store`` (and every process the test starts) then uses."""
    monkeypatch.delenv(DATABASE_URL_ENV, raising=False)
    if request.param == "postgres":
        monkeypatch.setenv(DATABASE_URL_ENV, request.getfixturevalue("pg_url"))
    return str(request.param)


def raw_rows(store: object, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    """Rows read beside ``store`` with the plain driver (sqlite3 on its file, or psycopg on
    its database); ``?`` marks parameters on both."""
    from xclaw.store.postgres import PostgresStore
    from xclaw.store.sqlite import SqliteStore

    if isinstance(store, SqliteStore):
        db = sqlite3.connect(store.path)
        try:
            return db.execute(sql, params).fetchall()
        finally:
            db.close()
    assert isinstance(store, PostgresStore), store
    import psycopg

    dsn = store.url.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(dsn) as conn:
        return [tuple(r) for r in conn.execute(sql.replace("?", "%s"), params).fetchall()]

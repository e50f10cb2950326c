"""Which store a command opens: PostgreSQL when a database URL is given, SQLite otherwise.

The URL comes from ``XCLAW_DATABASE_URL``, else from ``store: {url: ...}`` in the user config
(a project's ``xclaw.yaml`` may not set it: it would send your sessions to a database of the
project's choosing). Backends are imported on use so ``xclaw --help`` stays quick and SQLite
users never import psycopg.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from xclaw.config import XclawConfig
    from xclaw.store.postgres import PostgresStore
    from xclaw.store.sqlite import SqliteStore

DATABASE_URL_ENV = "XCLAW_DATABASE_URL"


def database_url(config: XclawConfig | None = None) -> str | None:
    """The configured PostgreSQL URL, or None for the embedded SQLite store. ``config``: the
    command's resolved configuration (read here only when a caller has none)."""
    url = os.environ.get(DATABASE_URL_ENV, "").strip()
    if url:
        return url
    if config is None:
        from xclaw.config import load_config

        config = load_config()
    return config.store.url


def open_store(
    path: Path | None = None, *, config: XclawConfig | None = None
) -> SqliteStore | PostgresStore:
    """The session store. An explicit SQLite ``path`` wins; otherwise the database URL, if
    one is configured, selects PostgreSQL; otherwise ``xclaw.db`` in the XDG data dir."""
    if path is None:
        url = database_url(config)
        if url:
            from xclaw.core.extras import require

            require("scale", "the PostgreSQL session store (XCLAW_DATABASE_URL)", ["psycopg"])
            from xclaw.store.postgres import PostgresStore

            return PostgresStore(url)
    from xclaw.store.sqlite import open_store as open_sqlite

    return open_sqlite(path)

"""The store tests run on SQLite and on a throwaway PostgreSQL server (see tests/pg_support.py)."""

from pg_support import backend, pg_url

__all__ = ["backend", "pg_url"]

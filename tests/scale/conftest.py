"""Several gateway instances: throwaway Redis (here) and PostgreSQL (tests/pg_support.py)."""

from redis_support import redis_server

from pg_support import pg_url

__all__ = ["pg_url", "redis_server"]

"""A PostgreSQL URL in the two spellings the tests and benchmarks need: SQLAlchemy's, which names the psycopg driver
(what the servers take), and libpq's (what psycopg.connect takes)."""

from __future__ import annotations

__all__ = ["libpq_url", "sqlalchemy_url"]


def sqlalchemy_url(uri: str, database: str) -> str:
    """`postgresql://user@/postgres?host=/socket` → the same server, another database, the psycopg driver."""
    base, _, query = uri.partition("?")
    base = base.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://", 1)
    return f"{base}/{database}" + (f"?{query}" if query else "")


def libpq_url(url: str) -> str:
    """A servers' (SQLAlchemy) URL as psycopg takes it."""
    return url.replace("postgresql+psycopg://", "postgresql://", 1)

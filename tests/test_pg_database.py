from __future__ import annotations

import pytest

from jiyi import pg_database
from jiyi.errors import Unavailable
from jiyi.pg_database import PgDatabase


def _drop_the_connection(db: PgDatabase) -> None:
    """What a PostgreSQL restart or an idle timeout does to the pool's one connection."""
    import psycopg

    with db.cursor() as cur:
        cur.execute("SELECT pg_backend_pid()")
        pid = cur.fetchone()[0]  # type: ignore[index]
    with psycopg.connect(db.dsn, autocommit=True) as conn:
        assert conn.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone() == (True,)


def test_a_connection_dropped_while_idle_is_replaced_before_use(
    pg_schema: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    dsn, schema = pg_schema
    monkeypatch.setattr(pg_database, "_CHECK_IDLE_SECONDS", 0.0)
    with PgDatabase(dsn, schema=schema, max_size=1) as db:
        _drop_the_connection(db)
        with db.cursor() as cur:  # checked, found dead, replaced
            cur.execute("SELECT 1")
            assert cur.fetchone() == (1,)


def test_a_connection_used_a_moment_ago_is_handed_out_unchecked(
    pg_schema: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The other side of the trade: no round trip per check-out under load; a connection dropped
    # within the window fails its one request (Unavailable, which clients retry) and is discarded.
    dsn, schema = pg_schema
    monkeypatch.setattr(pg_database, "_CHECK_IDLE_SECONDS", 3600.0)
    with PgDatabase(dsn, schema=schema, max_size=1) as db:
        _drop_the_connection(db)
        with pytest.raises(Unavailable), db.cursor() as cur:
            cur.execute("SELECT 1")
        with db.cursor() as cur:
            cur.execute("SELECT 1")
            assert cur.fetchone() == (1,)

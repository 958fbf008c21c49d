from __future__ import annotations

import pytest

from jiyi.errors import Unavailable
from jiyi.store.postgres import database as pg_database
from jiyi.store.postgres.database import PgDatabase


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


def test_a_schema_migrated_by_a_newer_jiyi_is_refused_by_an_older_one(pg_schema: tuple[str, str]) -> None:
    import psycopg

    dsn, schema = pg_schema
    PgDatabase(dsn, schema=schema).close()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"INSERT INTO \"{schema}\"._migrations (name, applied_at) VALUES ('m999_from_the_future', 'z')")
    for read_only in (False, True):
        with pytest.raises(Unavailable) as refused:
            PgDatabase(dsn, schema=schema, read_only=read_only)
        assert "migrated by a newer jiyi (1 step(s) this one does not know, first m999" in refused.value.reason


def test_json_columns_read_as_json_loads_reads_them(pg_schema: tuple[str, str]) -> None:
    # The pool's loader (database._json_value) takes shortcuts for empty values: each a new object.
    import json

    values = ["[]", "{}", '{"os": "linux"}', '["a", "链接"]', "null", '{"fix": {"steps": []}}']
    dsn, schema = pg_schema
    with PgDatabase(dsn, schema=schema, max_size=1) as db, db.cursor() as cur:
        cur.execute("SELECT v::jsonb, v::json FROM unnest(%s::text[]) v", (values,))
        rows = cur.fetchall()
    assert [r[0] for r in rows] == [r[1] for r in rows] == [json.loads(v) for v in values]
    assert rows[0][0] is not rows[0][1]

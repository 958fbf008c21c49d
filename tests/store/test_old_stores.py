"""Stores and team databases made by jiyi 0.1 (commit fcd6329, before the shared migration registry)
open with this code as they are: no step re-run, their records found as that jiyi found them.

tests/data/make_old_stores.py made the files with that jiyi: store-v0.1.sqlite (a store, WAL
checkpointed and vacuumed), store-v0.1.json (what it held and the hits of a few searches then) and
store-v0.1-pg.sql (``pg_dump --schema --no-owner --inserts`` of a team schema with one pushed
record).
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

import jiyi
from jiyi.config import Settings
from jiyi.query import Query
from jiyi.ranking import rank
from jiyi.store.sqlite import migrations
from jiyi.store.sqlite.store import SQLiteStore

DATA = Path(__file__).parent.parent / "data"
EXPECTED: dict[str, Any] = json.loads((DATA / "store-v0.1.json").read_text(encoding="utf-8"))
DUMPED_SCHEMA = "jiyi_store_v0_1"  # the schema's name when it was dumped


def _schema(db: sqlite3.Connection) -> list[tuple[str, str, str]]:
    return db.execute("SELECT type, name, sql FROM sqlite_master ORDER BY type, name").fetchall()


@pytest.fixture
def old_store(jiyi_home: Path) -> Path:
    """A copy of the old store where the default settings look for it (the original stays as it is)."""
    jiyi_home.mkdir(parents=True)
    path = jiyi_home / "jiyi.db"
    shutil.copyfile(DATA / "store-v0.1.sqlite", path)
    return path


def test_an_old_sqlite_store_opens_without_re_running_a_step(old_store: Path) -> None:
    raw = sqlite3.connect(old_store)
    before = raw.execute("SELECT name, applied_at FROM _migrations ORDER BY applied_at, name").fetchall()
    schema = _schema(raw)
    raw.close()
    names = [n for n, _ in before]
    assert names == migrations.MIGRATIONS.names[: len(names)]  # what 0.1 shipped, in this code's order
    due = [m.name for m in migrations.MIGRATIONS.pending(names)]  # the steps added since 0.1, if any

    store = SQLiteStore(old_store)
    try:
        after = store.applied_migrations()
        assert after[: len(before)] == before  # the old rows as they were, applied_at included
        assert [n for n, _ in after[len(before) :]] == due
        assert store.pending_migrations() == []
        assert store.integrity_check() == []
        if not due:
            assert _schema(store._db) == schema
    finally:
        store.close()


def test_an_old_sqlite_store_finds_what_it_found(old_store: Path, tmp_path: Path) -> None:
    with jiyi.Memory(settings=Settings(home=old_store.parent), cwd=tmp_path) as memory:
        store = memory.store
        assert sorted(r.hex for r in store.list_records(limit=100)) == EXPECTED["records"]
        for title, hexid in EXPECTED["notes"].items():
            record = store.get(hexid)
            assert record is not None and record.title == title
        pending = store.session("pending")
        assert pending is not None and pending.last_error == "segfault in libfoo.so"
        reader = memory.session(project="demo", env={"os": "linux"}, session_id="reader-now")
        for query, hits in EXPECTED["hits"].items():
            assert [h.record.hex for h in reader.search(query)] == hits, query
        assert store.pending_migrations() == []


def _restore(dsn: str, schema: str) -> None:
    """The dump, restored as ``schema`` (the fixture's fresh one)."""
    import psycopg

    script = (DATA / "store-v0.1-pg.sql").read_text(encoding="utf-8")
    # psql's own commands (pg_dump writes \restrict / \unrestrict since 17.6, 16.10, 15.14) are not SQL.
    script = re.sub(r"(?m)^\\.*$", "", script)
    script = script.replace(DUMPED_SCHEMA, schema)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA "{schema}"')  # the dump creates it
        conn.execute(script.encode())


@pytest.mark.postgres
def test_an_old_team_database_opens_and_finds_its_record(pg_schema: tuple[str, str]) -> None:
    import psycopg

    from jiyi.store.postgres import migrations as pg_migrations
    from jiyi.store.postgres.store import PgDatabase, PgStore

    dsn, schema = pg_schema
    _restore(dsn, schema)
    with psycopg.connect(dsn, options=f"-c search_path={schema}") as conn:
        before = [
            (str(n), str(a))
            for n, a in conn.execute("SELECT name, applied_at FROM _migrations ORDER BY applied_at, name")
        ]
    names = [n for n, _ in before]
    assert names == pg_migrations.MIGRATIONS.names[: len(names)]
    due = [m.name for m in pg_migrations.MIGRATIONS.pending(names)]
    zlib = EXPECTED["notes"]["Link zlib with -lz"]

    if not due:  # a replica of it would serve as is
        with PgDatabase(dsn, schema=schema, read_only=True) as replica:
            assert replica.pending_migrations() == []
    with PgDatabase(dsn, schema=schema) as db:
        after = db.applied_migrations()
        assert after[: len(before)] == before
        assert [n for n, _ in after[len(before) :]] == due
        assert db.pending_migrations() == []
        store = PgStore(db, db.team_id("old-team"))
        assert store.pending_migrations() == []
        assert store.integrity_check() == []
        record = store.get(zlib)
        assert record is not None and record.title == "Link zlib with -lz"
        hits = rank(store, Query(text="ld: undefined symbol deflate", project_key="demo"), limit=5)
        assert [h.record.hex for h in hits] == [zlib]

"""The migration registry both backends declare their steps in (store/migrations.py): names unique,
what is pending and applied, and how each backend runs a step in a transaction or outside one."""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from jiyi.records import now
from jiyi.store.migrations import Migration, Migrations
from jiyi.store.sqlite import migrations as sqlite_migrations
from jiyi.store.sqlite.store import SQLiteStore

Step = Callable[[sqlite3.Connection], None]


def _registry(*names: str) -> Migrations[str]:
    steps: Migrations[str] = Migrations()
    for name in names:
        steps.add(name, f"-- {name}")
    return steps


def test_names_are_unique_when_declared() -> None:
    steps = _registry("m001_a", "m002_b")
    with pytest.raises(ValueError, match="two migrations are named m001_a"):
        steps.add("m001_a", "again")
    with pytest.raises(ValueError, match="two migrations are named m002_b"):
        Migrations([*steps, Migration("m002_b", "again")])
    for bad in ("", " m003_c"):
        with pytest.raises(ValueError, match="plain name"):
            steps.add(bad, "x")
    assert steps.names == ["m001_a", "m002_b"]  # nothing half-added


def test_pending_and_applied_keep_the_order_of_declaration() -> None:
    steps = _registry("m001_a", "m002_b", "m003_c")
    recorded = ["m003_c", "m999_newer", "m001_a"]
    assert [m.name for m in steps.pending(recorded)] == ["m002_b"]
    assert [m.name for m in steps.applied(recorded)] == ["m001_a", "m003_c"]
    assert steps.unknown(recorded) == ["m999_newer"]
    assert [m.name for m in steps.pending([])] == steps.names
    assert steps.applied(iter([])) == [] and steps.unknown([]) == []
    assert len(steps) == 3 and "m002_b" in steps and "m004_d" not in steps
    copy = Migrations(steps)
    copy.add("m004_d", "more")
    assert len(steps) == 3 and copy.names[-1] == "m004_d"  # a copy leaves the original as it was
    assert repr(Migration("m005_e", "x", transactional=False)) == "Migration('m005_e', transactional=False)"


# Stores and databases made since record these names as done: their SQL must never change (a
# change goes into a new step). sha256 (first 16 hex digits) of the SQL each step runs, computed
# with jiyi 0.1 (commit fcd6329) itself; steps added since are not listed.
SHIPPED_SQLITE = {
    "m001_records": "78ab1adae98c9126",
    "m002_sessions": "fefc97368b002fb2",
    "m003_success_loop": "062f49295c5398a2",
    "m004_auto_records": "b343796f49b35710",
    "m005_reproduction": "6a4ca8b5eaf897ba",
    "m006_team_sync": "0fa7872370f51583",
    "m007_auto_record_queue": "bc62f249abf99732",
    "m008_team_forget": "f05bdf7c67fc0402",
    "m009_store_meta": "992622c69f386e58",
    "m010_failure_checkout": "9196f4082d6fbf1f",
    "m011_forget_refused": "2182ef276cf30a92",
}
SHIPPED_POSTGRES = {
    "m001_records": "e2aeb0a0da6e5904",
    "m002_sessions": "ebeaf68059d0d2eb",
    "m003_tombstones": "4de70b515cd71d28",
    "m004_term_changes": "a5e6e624b98d2816",
    "m005_term_changes_vacuum": "397b768c1c61a364",
    "m006_full_text_without_pending_list": "4605f93fbfaa960d",
    "m007_lexical_versions": "c9ff37a1a2f42860",
    "m008_failure_checkout": "56c8d2a6def4124c",
    "m009_record_authors": "3a9a29fb60395e74",
}


def _digest(sql: str) -> str:
    return hashlib.sha256(sql.encode()).hexdigest()[:16]


class _Recording:
    """A sqlite3 connection that keeps the statements a step runs."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.seen: list[str] = []

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        self.seen.append(sql)
        return self.db.execute(sql, *args)


def test_the_shipped_steps_are_never_edited() -> None:
    db = sqlite3.connect(":memory:", isolation_level=None)
    lite = {}
    for step in sqlite_migrations.MIGRATIONS:
        recording = _Recording(db)
        step.step(recording)  # type: ignore[arg-type]
        lite[step.name] = _digest("\n--;\n".join(recording.seen))
    assert list(lite)[: len(SHIPPED_SQLITE)] == list(SHIPPED_SQLITE)
    assert {name: lite[name] for name in SHIPPED_SQLITE} == SHIPPED_SQLITE
    assert all(step.transactional for step in sqlite_migrations.MIGRATIONS if step.name in SHIPPED_SQLITE)

    pytest.importorskip("psycopg")
    from jiyi.store.postgres import migrations as pg_migrations

    pg = {step.name: _digest(step.step) for step in pg_migrations.MIGRATIONS}
    assert list(pg)[: len(SHIPPED_POSTGRES)] == list(SHIPPED_POSTGRES)
    assert {name: pg[name] for name in SHIPPED_POSTGRES} == SHIPPED_POSTGRES
    assert all(step.transactional for step in pg_migrations.MIGRATIONS if step.name in SHIPPED_POSTGRES)


def _step(name: str, fn: Step, *, transactional: bool = True) -> Migration[Step]:
    return Migration(name, fn, transactional=transactional)


def _apply(db: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch, steps: list[Migration[Step]]) -> list[str]:
    monkeypatch.setattr(sqlite_migrations, "MIGRATIONS", Migrations(steps))
    return sqlite_migrations.apply(db, now)


def test_sqlite_a_failing_step_leaves_nothing_and_an_untransacted_one_runs_outside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = sqlite3.connect(tmp_path / "s.db", isolation_level=None)

    def first(c: sqlite3.Connection) -> None:
        c.execute("CREATE TABLE kept (x)")

    def broken(c: sqlite3.Connection) -> None:
        c.execute("CREATE TABLE half_done (x)")
        c.execute("INSERT INTO kept VALUES (1)")
        raise sqlite3.OperationalError("disk I/O error")

    def vacuum(c: sqlite3.Connection) -> None:
        c.execute("VACUUM")  # "cannot VACUUM from within a transaction"

    with pytest.raises(sqlite3.OperationalError, match="disk I/O"):
        _apply(db, monkeypatch, [_step("m001_first", first), _step("m002_broken", broken)])
    assert sqlite_migrations.recorded(db) == ["m001_first"]
    assert db.execute("SELECT count(*) FROM sqlite_master WHERE name = 'half_done'").fetchone() == (0,)
    assert db.execute("SELECT count(*) FROM kept").fetchone() == (0,)
    assert not db.in_transaction

    with pytest.raises(sqlite3.OperationalError, match="within a transaction"):
        _apply(db, monkeypatch, [_step("m001_first", first), _step("m002_vacuum", vacuum)])
    steps = [_step("m001_first", first), _step("m002_vacuum", vacuum, transactional=False)]
    assert _apply(db, monkeypatch, steps) == ["m002_vacuum"]
    assert sqlite_migrations.recorded(db) == ["m001_first", "m002_vacuum"]
    assert _apply(db, monkeypatch, steps) == []


def test_sqlite_store_pending_migrations(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    try:
        assert store.pending_migrations() == []
        later = Migrations([*sqlite_migrations.MIGRATIONS, Migration("m999_later", lambda db: None)])
        monkeypatch.setattr(sqlite_migrations, "MIGRATIONS", later)  # this code, upgraded while open
        assert store.pending_migrations() == ["m999_later"]
    finally:
        store.close()
    assert sqlite_migrations.recorded(sqlite3.connect(":memory:")) == []


def test_doctor_lists_the_pending_steps(jiyi_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from click.testing import CliRunner

    from jiyi.cli import main

    def lines() -> list[str]:
        done = CliRunner().invoke(main, ["doctor"])
        assert done.exit_code == 0, done.output
        return done.output.splitlines()

    assert json.loads(CliRunner().invoke(main, ["doctor", "--json"]).output)["pending_migrations"] == []
    assert not [line for line in lines() if line.endswith(" pending")]  # opening applied every one
    # A store that could not apply a step (none does today: opening applies them or fails).
    monkeypatch.setattr(SQLiteStore, "pending_migrations", lambda self: ["m998_one", "m999_two"])
    shown = lines()
    steps = [line for line in shown if line.startswith("migration ")]
    assert len(steps) == len(sqlite_migrations.MIGRATIONS) + 2
    assert steps[-2:] == ["migration m998_one pending", "migration m999_two pending"]  # after the applied
    assert shown[-1] == "ok"  # listed, not a problem


def test_the_hook_counts_the_sqlite_steps_without_typing_or_sqlite3() -> None:
    code = (
        "import sys; from jiyi.store.sqlite.migrations import MIGRATIONS; len(MIGRATIONS); "
        "print(' '.join(m for m in ('typing', 'dataclasses', 'sqlite3', 'psycopg') if m in sys.modules))"
    )
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert found.split() == []


@pytest.mark.postgres
def test_postgres_runs_an_untransacted_step_outside_a_transaction(
    pg_schema: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from jiyi.errors import Unavailable
    from jiyi.store.postgres import migrations as pg_migrations
    from jiyi.store.postgres.database import PgDatabase

    dsn, schema = pg_schema
    PgDatabase(dsn, schema=schema).close()
    index = "CREATE INDEX CONCURRENTLY IF NOT EXISTS records_title ON records (title)"
    shipped = list(pg_migrations.MIGRATIONS)
    monkeypatch.setattr(pg_migrations, "MIGRATIONS", Migrations([*shipped, Migration("m999_index", index)]))
    with pytest.raises(Unavailable) as refused:
        PgDatabase(dsn, schema=schema)
    assert "cannot run inside a transaction block" in refused.value.reason
    later = Migrations([*shipped, Migration("m999_index", index, transactional=False)])
    monkeypatch.setattr(pg_migrations, "MIGRATIONS", later)
    with PgDatabase(dsn, schema=schema) as db:
        assert [n for n, _ in db.applied_migrations()][-1] == "m999_index"
        assert db.pending_migrations() == []
        with db.cursor() as cur:
            cur.execute(
                "SELECT count(*) FROM pg_indexes WHERE schemaname = %s AND indexname = 'records_title'", (schema,)
            )
            assert cur.fetchone() == (1,)
    with PgDatabase(dsn, schema=schema, read_only=True) as replica:
        monkeypatch.setattr(pg_migrations, "MIGRATIONS", Migrations([*later, Migration("m999_next", "SELECT 1")]))
        assert replica.pending_migrations() == ["m999_next"]  # a replica behind an upgraded primary

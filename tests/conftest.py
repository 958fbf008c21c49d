from __future__ import annotations

import functools
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from jiyi.store.base import Store
    from jiyi.store.postgres.database import PgDatabase


@pytest.fixture(autouse=True)
def jiyi_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """No test touches the real home: every one gets its own store and config."""
    home = tmp_path / "jiyi-home"
    monkeypatch.setenv("JIYI_HOME", str(home))
    monkeypatch.setenv("JIYI_CONFIG_DIR", str(tmp_path / "jiyi-config"))
    names = ("JIYI_NOTES", "JIYI_READ_BUDGET", "JIYI_SESSION_ID", "JIYI_LOCALE", "CLAUDE_CODE_SESSION_ID")
    for name in (*names, "JIYI_TEAM_URL", "JIYI_TEAM_TOKEN", "JIYI_TEAM_PUSH", "JIYI_TEAM_DSN", "JIYI_TEAM_READ_DSN"):
        monkeypatch.delenv(name, raising=False)
    yield home


PG_DSN = os.environ.get("JIYI_TEST_PG", "host=127.0.0.1 port=5432 dbname=test user=postgres connect_timeout=3")


@functools.cache
def _pg_unavailable() -> str | None:
    """Why the PostgreSQL tests cannot run here, or None when they can."""
    try:
        import psycopg
    except ImportError:
        return "psycopg is not installed (pip install -e '.[test]')"
    try:
        psycopg.connect(PG_DSN).close()
    except psycopg.Error as exc:
        return f"no PostgreSQL answers at {PG_DSN!r}: {str(exc).strip().splitlines()[0]}"
    return None


@pytest.fixture
def pg_schema() -> Iterator[tuple[str, str]]:
    """(dsn, schema): a fresh PostgreSQL schema of its own, dropped afterwards, so tests (and
    parallel runs) never see each other's tables."""
    reason = _pg_unavailable()
    if reason:
        pytest.skip(reason)
    import psycopg

    schema = f"jiyi_t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield PG_DSN, schema
    finally:
        with psycopg.connect(PG_DSN, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """A fresh, empty ``Store`` once per backend: a SQLite file, or a team of its own in a fresh
    PostgreSQL schema (skipped, with the reason, when no PostgreSQL server answers)."""
    if request.param == "sqlite":
        from jiyi.store.sqlite.store import SQLiteStore

        lite = SQLiteStore(tmp_path / "jiyi.db")
        yield lite
        lite.close()
        return
    dsn, schema = request.getfixturevalue("pg_schema")  # skips when _pg_unavailable() says why
    from jiyi.store.postgres.store import PgDatabase, PgStore

    database = PgDatabase(dsn, schema=schema, max_size=4)
    try:
        yield PgStore(database, database.create_team("tests"))
    finally:
        database.close()


@pytest.fixture
def db(pg_schema: tuple[str, str]) -> Iterator[PgDatabase]:
    """The team server's database, with the teams alpha and beta (the team tests; the store tests
    of PostgreSQL define a bare ``db`` of their own)."""
    from jiyi.store.postgres.database import PgDatabase

    dsn, schema = pg_schema
    with PgDatabase(dsn, schema=schema) as database:
        database.create_team("alpha")
        database.create_team("beta")
        yield database


@pytest.fixture
def url(db: PgDatabase) -> Iterator[str]:
    """A team server on ``db`` (no rate limit), served by uvicorn on 127.0.0.1."""
    from jiyi.team.server.app import create_app

    from .team_helpers import serving

    with serving(create_app(db, rate_per_minute=0)) as base:
        yield base

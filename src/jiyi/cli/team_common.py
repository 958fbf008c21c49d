"""What the ``jiyi team`` commands share: the check for the team extra, the options and the
opening of the server's database (``serve`` and ``admin``), and a docs/spec.md §2 error, with its reason,
turned into exit status 1."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, NoReturn

import click

from ..errors import JiyiError

if TYPE_CHECKING:
    from ..store.postgres.database import PgDatabase

EXTRA = "team memory needs the team extra: pip install 'jiyi[team]'"

dsn_option = click.option(
    "--dsn",
    envvar="JIYI_TEAM_DSN",
    required=True,
    help="PostgreSQL connection string (default: JIYI_TEAM_DSN).",
)
schema_option = click.option(
    "--schema",
    envvar="JIYI_TEAM_SCHEMA",
    default="jiyi",
    show_default=True,
    help="PostgreSQL schema of the team data (JIYI_TEAM_SCHEMA).",
)


def _exists(dsn: str, schema: str) -> None:
    import psycopg

    from ..errors import InvalidArgument, Unavailable

    try:
        with psycopg.connect(dsn, autocommit=True, connect_timeout=10) as conn:
            found = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone()
    except psycopg.Error as exc:
        fail(Unavailable(f"cannot reach the team database: {exc}".strip()))
    if found is None:
        hint = "jiyi team admin create-team NAME (or jiyi team serve) creates it"
        fail(InvalidArgument("schema", f"{schema} does not exist in this database: {hint}"))


def need(*modules: str) -> None:
    import importlib.util

    if any(importlib.util.find_spec(m) is None for m in modules):
        click.echo(EXTRA, err=True)
        sys.exit(1)


def error_text(exc: JiyiError) -> str:
    """The error's docs/spec.md §2 text, then its reason (what failed underneath) when it has one
    the text does not already say."""
    reason = getattr(exc, "reason", "")
    return exc.text() + (f"\n{reason}" if reason and reason not in exc.text() else "")


def fail(exc: JiyiError) -> NoReturn:
    click.echo(error_text(exc), err=True)
    sys.exit(1)


@contextmanager
def database(dsn: str, schema: str, *, create: bool = False) -> Iterator[PgDatabase]:
    """The team database in ``schema``. Only the commands meant to make one (``create``:
    ``create-team``, ``serve``) create a schema that is not there: a mistyped ``--schema`` of any
    other command is an error, not 20 new tables."""
    need("psycopg", "psycopg_pool")
    from ..store.postgres.database import PgDatabase

    if not create:
        _exists(dsn, schema)
    try:
        with PgDatabase(dsn, schema=schema, max_size=2) as db:
            yield db
    except JiyiError as exc:
        fail(exc)

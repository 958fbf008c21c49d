"""The team server's database: a psycopg 3 connection pool on one schema, its migrations, and the
teams and their tokens.

A read-only ``PgDatabase`` (``read_only=True``, a read replica's, ``jiyi team serve --read-dsn``)
runs no migration, since a hot standby refuses every write: it checks instead that the schema has
recorded each migration this code knows, and every transaction on its connections is read-only, so
a write sent there by mistake fails rather than landing on a copy the primary never sees.

Only the team extra (``jiyi[team]``) installs psycopg; nothing on the core import path imports this
module. Any failure to reach or use the server (refused, timed out, pool exhausted, an error
inside a statement) becomes ``errors.Unavailable``, as SQLite's do.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import time
import weakref
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import psycopg
import psycopg_pool
from psycopg.rows import TupleRow
from psycopg.types.json import set_json_loads

from ...analysis import indexing, lexical
from ...errors import InvalidArgument, Unavailable
from ...records import now
from . import migrations

_SCHEMA = re.compile(r"[a-z_][a-z0-9_]{0,62}")
TOKEN_PREFIX = "jiyi_"
# What a token may do (docs/team-protocol.md, "Roles"), least first: a member pushes, pulls,
# searches and takes out what it authored; a runner also reports replay results; an operator
# may do everything, revise and take out any record included.
ROLES = ("member", "runner", "operator")

Cursor = psycopg.Cursor[TupleRow]

# A pooled connection idle longer than this is checked (an empty query) before it is handed out,
# so one the server dropped (restart, idle timeout) is replaced rather than failing a request.
# One used more recently is handed out as is: under load the check was a round trip per
# check-out (bench/team_scale.py), and a connection that just worked is very likely to work.
_CHECK_IDLE_SECONDS = 2.0


_JSON = json.JSONDecoder()


def _json_value(data: str | bytes) -> Any:
    """A JSON column's value, as ``json.loads`` reads it (psycopg hands it bytes). Most of a record's
    JSON columns are empty (``[]`` evidence, ``{}`` environment: ~60 % of the ~140 values of a search's
    ~46 candidate rows), and ``json.loads`` of bytes looks for their encoding first (UTF-8, as
    PostgreSQL sends it): fetching those rows took 0.43 ms with it and 0.24 with this (the queries of
    ``bench/team_scale.py --records 100000 --direct``, one search's rows fetched alone)."""
    if data == b"[]":
        return []
    if data == b"{}":
        return {}
    return _JSON.decode(data if isinstance(data, str) else data.decode())


def _configure(conn: psycopg.Connection[TupleRow]) -> None:
    set_json_loads(_json_value, conn)


class NotCaughtUp(Unavailable):
    """A read-only database lacks a migration this code knows: a replica may still receive it from
    the primary, so it is worth waiting for a while (``jiyi team serve`` does)."""


@dataclass(frozen=True)
class Team:
    id: int
    name: str
    created: str


@dataclass(frozen=True)
class Member:
    """Who a token speaks for."""

    team_id: int
    team: str
    name: str
    role: str = "member"

    @property
    def operator(self) -> bool:
        return self.role == "operator"

    @property
    def runner(self) -> bool:
        """May report replay results: a runner, or the operator."""
        return self.role in ("runner", "operator")


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@contextmanager
def _unavailable() -> Iterator[None]:
    """A pool that gives no connection in time, or PostgreSQL failing a statement, as ``Unavailable``."""
    try:
        yield
    except psycopg_pool.PoolTimeout as exc:
        raise Unavailable(f"PostgreSQL pool: {exc}") from exc
    except psycopg.Error as exc:
        raise Unavailable(f"PostgreSQL: {exc}") from exc


class PgDatabase:
    """``PgDatabase(dsn, schema="jiyi")``: the pool (``min_size``..``max_size`` connections, each
    with ``search_path`` = the schema) after the missing migrations were applied. ``timeout`` bounds
    both connecting and waiting for a free connection (then ``Unavailable``). With ``read_only``
    nothing is applied: ``NotCaughtUp`` when the schema lacks a migration (a replica not caught up
    with an upgraded primary), and every transaction is read-only."""

    def __init__(
        self,
        dsn: str,
        *,
        schema: str = "jiyi",
        min_size: int = 1,
        max_size: int = 10,
        timeout: float = 10.0,
        read_only: bool = False,
    ) -> None:
        if not _SCHEMA.fullmatch(schema):
            raise InvalidArgument("schema", "lowercase letters, digits and _ only")
        self.dsn = dsn
        self.schema = schema
        self._used = weakref.WeakKeyDictionary()
        self.read_only = read_only
        # Advisory locks are database-wide: keyed by the schema so two schemas never wait on each other.
        self.lock_class = zlib.crc32(schema.encode()) - 2**31
        # JIT compiles a plan in ~12 ms, longer than most of these statements run.
        settings = f"-c search_path={schema} -c jit=off"
        if read_only:
            settings += " -c default_transaction_read_only=on"
        try:
            # After the DSN's own options (a keyword would replace them), so ours win a conflict.
            given = psycopg.conninfo.conninfo_to_dict(dsn).get("options") or ""
            options: dict[str, Any] = {
                "options": f"{given} {settings}".strip(),
                "connect_timeout": max(1, round(timeout)),
            }
            with psycopg.connect(dsn, autocommit=True, **options) as conn:
                if newer := migrations.unknown(conn):
                    # An older process would write what the newer schema no longer means (e.g. search
                    # terms of an older version after the team's index was re-derived).
                    raise Unavailable(
                        f"the database (schema {schema}) was migrated by a newer jiyi ({len(newer)} step(s) "
                        f"this one does not know, first {newer[0]}): run the same jiyi on every server process"
                    )
                if not read_only:
                    migrations.apply(conn, schema, now)
                elif missing := migrations.missing(conn):
                    raise NotCaughtUp(
                        f"the read-only database (schema {schema}) lacks {len(missing)} migration(s) of this "
                        f"jiyi, first {missing[0]}: a replica not caught up with the primary yet, or not a copy "
                        "of it"
                    )
        except psycopg.Error as exc:
            raise Unavailable(f"cannot use PostgreSQL: {exc}") from exc
        self.pool = psycopg_pool.ConnectionPool(
            dsn,
            min_size=min_size,
            max_size=max_size,
            kwargs=options,
            timeout=timeout,
            open=False,
            name=f"jiyi-{schema}{'-read' if read_only else ''}",
            configure=_configure,
            check=self._check_if_idle,
            reset=self._returned,
        )
        try:
            self.pool.open(wait=True, timeout=timeout)
        except psycopg_pool.PoolTimeout as exc:
            self.pool.close()
            raise Unavailable(f"cannot connect to PostgreSQL: {exc}") from exc

    _used: weakref.WeakKeyDictionary[psycopg.Connection[TupleRow], float]

    def _returned(self, conn: psycopg.Connection[TupleRow]) -> None:
        self._used[conn] = time.monotonic()

    def _check_if_idle(self, conn: psycopg.Connection[TupleRow]) -> None:
        if time.monotonic() - self._used.get(conn, 0.0) > _CHECK_IDLE_SECONDS:
            psycopg_pool.ConnectionPool.check_connection(conn)

    @property
    def description(self) -> str:
        """Where the data is, without the password (``Store.path``)."""
        parts = psycopg.conninfo.conninfo_to_dict(self.dsn)
        parts.pop("password", None)
        return f"postgresql://{parts.get('host', '')}:{parts.get('port', 5432)}/{parts.get('dbname', '')}#{self.schema}"

    @contextmanager
    def cursor(self) -> Iterator[Cursor]:
        """A cursor in one transaction: committed when the block ends, rolled back when it raises."""
        with _unavailable(), self.pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
            yield cur

    @contextmanager
    def statements(self) -> Iterator[Cursor]:
        """A cursor whose statements commit each on its own (autocommit), for look-ups that only
        read: under READ COMMITTED every statement of a transaction takes its own snapshot anyway,
        and the transaction's BEGIN and COMMIT were two more round trips of every search
        (PgSearch.one_connection)."""
        with _unavailable(), self.pool.connection() as conn:
            conn.autocommit = True
            try:
                with conn.cursor() as cur:
                    yield cur
            finally:
                conn.autocommit = False  # as the pool hands its connections out

    @classmethod
    def wait_for_replica(
        cls, dsn: str, schema: str, seconds: float, *, on_wait: Callable[[NotCaughtUp], None] | None = None
    ) -> None:
        """Open the read replica at ``dsn`` read-only, again while it lacks migrations the primary
        applied, for up to ``seconds`` (a streaming standby replays them in milliseconds to
        seconds). ``on_wait`` hears the first time it is behind; ``NotCaughtUp`` when it still is
        at the end, any other ``JiyiError`` at once."""
        deadline = time.monotonic() + seconds
        said = False
        while True:
            try:
                cls(dsn, schema=schema, min_size=1, max_size=1, read_only=True).close()
                return
            except NotCaughtUp as exc:
                if time.monotonic() >= deadline:
                    raise
                if not said and on_wait is not None:
                    on_wait(exc)
                said = True
                time.sleep(0.5)

    def close(self) -> None:
        self.pool.close()

    def __enter__(self) -> PgDatabase:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def applied_migrations(self) -> list[tuple[str, str]]:
        with self.cursor() as cur:
            cur.execute("SELECT name, applied_at FROM _migrations ORDER BY applied_at, name")
            return [(str(n), str(a)) for n, a in cur.fetchall()]

    def pending_migrations(self) -> list[str]:
        """The steps this code knows that the schema has not recorded: none once opened for writing
        (opening applies them); a read-only database opens only when it has none, but a replica
        may fall behind an upgraded primary afterwards."""
        with self.cursor() as cur:
            cur.execute("SELECT name FROM _migrations")
            return [m.name for m in migrations.MIGRATIONS.pending(str(r[0]) for r in cur.fetchall())]

    # -- teams and tokens --------------------------------------------------------------------
    def create_team(self, name: str) -> int:
        """A new team's id; ``InvalidArgument`` when the name is empty or taken."""
        if not name.strip():
            raise InvalidArgument("team", "empty")
        with self.cursor() as cur:
            cur.execute(
                "INSERT INTO teams (name, created) VALUES (%s, %s) ON CONFLICT (name) DO NOTHING RETURNING id",
                (name, now()),
            )
            row = cur.fetchone()
            if row is None:
                raise InvalidArgument("team", f"already exists: {name}")
            # A new team has no records: its index is current (a team without this row reads as old).
            cur.execute("INSERT INTO lexical_versions (team_id, version) VALUES (%s, %s)", (row[0], lexical.VERSION))
            cur.execute(
                "INSERT INTO signature_versions (team_id, version) VALUES (%s, %s)",
                (row[0], indexing.SIGNATURE_VERSION),
            )
        return int(row[0])

    def list_teams(self) -> list[Team]:
        with self.cursor() as cur:
            cur.execute("SELECT id, name, created FROM teams ORDER BY id")
            return [Team(int(i), str(n), str(c)) for i, n, c in cur.fetchall()]

    def team_id(self, team: int | str) -> int:
        """The id of a team given by id or name; ``InvalidArgument`` when there is none."""
        with self.cursor() as cur:
            if isinstance(team, int):
                cur.execute("SELECT id FROM teams WHERE id = %s", (team,))
            else:
                cur.execute("SELECT id FROM teams WHERE name = %s", (team,))
            row = cur.fetchone()
        if row is None:
            raise InvalidArgument("team", f"no such team: {team}")
        return int(row[0])

    def create_token(self, team: int | str, member: str, role: str = "member") -> str:
        """A new token for ``member`` of ``team`` (id or name) with ``role`` (``ROLES``), returned
        once: only its sha256 is kept."""
        if not member.strip():
            raise InvalidArgument("member", "empty")
        if role not in ROLES:
            raise InvalidArgument("role", f"one of {', '.join(ROLES)}")
        team_id = self.team_id(team)
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        with self.cursor() as cur:
            cur.execute(
                "INSERT INTO tokens (hash, team_id, member, created, role) VALUES (%s, %s, %s, %s, %s)",
                (token_hash(token), team_id, member, now(), role),
            )
        return token

    def revoke_token(
        self, token: str | None = None, *, team: int | str | None = None, member: str | None = None
    ) -> int:
        """Revoke one token (by its text) or every token of ``member`` of ``team``; how many were."""
        with self.cursor() as cur:
            if token is not None:
                cur.execute(
                    "UPDATE tokens SET revoked = %s WHERE hash = %s AND revoked IS NULL", (now(), token_hash(token))
                )
            elif team is not None and member is not None:
                team_id = self.team_id(team)
                cur.execute(
                    "UPDATE tokens SET revoked = %s WHERE team_id = %s AND member = %s AND revoked IS NULL",
                    (now(), team_id, member),
                )
            else:
                raise InvalidArgument("token", "give a token, or a team and a member")
            return cur.rowcount

    def authenticate(self, token: str) -> Member | None:
        """The member a live token belongs to; None for an unknown or revoked one."""
        if not token.startswith(TOKEN_PREFIX):
            return None
        with self.cursor() as cur:
            cur.execute(
                "SELECT t.id, t.name, k.member, k.role FROM tokens k JOIN teams t ON t.id = k.team_id "
                "WHERE k.hash = %s AND k.revoked IS NULL",
                (token_hash(token),),
            )
            row = cur.fetchone()
        return None if row is None else Member(int(row[0]), str(row[1]), str(row[2]), str(row[3]))

    def team_of(self, hexid: str, *, prefer: int | None = None) -> int | None:
        """The team that holds record ``hexid`` (for E_FORBIDDEN), None when no team does; when
        several do (one member pushing to two teams), ``prefer`` if it is one of them."""
        with self.cursor() as cur:
            cur.execute(
                "SELECT team_id FROM records WHERE hex = %s ORDER BY team_id = %s DESC LIMIT 1", (hexid, prefer)
            )
            row = cur.fetchone()
        return None if row is None else int(row[0])

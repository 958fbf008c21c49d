"""The SQLite connection every part of ``SQLiteStore`` shares: opening (WAL, migrations), and the
read and write guards that turn any SQLite failure into ``Unavailable``.

WAL lets the MCP server read while a hook process writes; writers take the lock up front
(``BEGIN IMMEDIATE``) and wait up to the busy timeout, so concurrent notes queue instead of failing
with "database is locked" half-way through (peers' users report exactly that). Any SQLite failure
— locked past the timeout, not a database, disk full — becomes ``Unavailable``.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TypeVar

from ...errors import Unavailable
from ...records import now
from . import migrations

T = TypeVar("T")


def _to_wal(db: sqlite3.Connection, busy_timeout_ms: int) -> None:
    """Switch a store to WAL, waiting for another connection doing the same. Two first opens of a
    new store (an MCP server's main thread and its team sync thread, a hook and the server) both
    ask for the switch; the loser gets "database is locked" at once, without the busy handler
    (SQLite's deadlock avoidance), in about 1 of 10 races measured. Once the winner is done the
    file is in WAL and the pragma only reports it."""
    deadline = time.monotonic() + busy_timeout_ms / 1000
    pause = 0.002
    while True:
        try:
            db.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def _rollback(db: sqlite3.Connection) -> None:
    """Roll back what is left: SQLite has already rolled back by itself after some errors (a full
    disk: SQLITE_FULL), and a ROLLBACK then fails with "no transaction is active", which hid the
    real error behind a traceback (issue 15)."""
    if db.in_transaction:
        with suppress(sqlite3.Error):  # the first error is the one to report
            db.execute("ROLLBACK")


class SQLiteConnection:
    """One store file's connection, its lock and the guards; the store's parts (``search``,
    ``lexical``, ``sessions``, ``store``) build on it."""

    def __init__(self, path: Path, *, busy_timeout_ms: int = 5000) -> None:
        self.path = str(path)
        self._lock = threading.RLock()
        self._held = False  # a topic_lock's transaction is open on this connection
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(
                self.path, timeout=busy_timeout_ms / 1000, isolation_level=None, check_same_thread=False
            )
        except (OSError, sqlite3.Error) as exc:
            raise Unavailable(f"cannot open {path}: {exc}") from exc
        self._db = db
        self._common_terms: dict[str, tuple[int, int]] = {}  # term -> (documents, index rows then)
        self._common_symbols: dict[str, tuple[int, int]] = {}  # symbol -> (records, store size then)
        try:
            db.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            _to_wal(db, busy_timeout_ms)
            db.execute("PRAGMA synchronous = NORMAL")
            migrations.apply(db, now)
        except sqlite3.Error as exc:
            db.close()
            raise Unavailable(f"cannot use {path}: {exc}") from exc

    def _guard(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        with self._lock:
            try:
                return fn(self._db)
            except sqlite3.Error as exc:
                raise Unavailable(str(exc)) from exc

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            db = self._db
            if self._held:  # inside topic_lock's transaction: its writes commit with it
                yield db
                return
            try:
                db.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise Unavailable(str(exc)) from exc
            try:
                yield db
                db.execute("COMMIT")
            except sqlite3.Error as exc:
                _rollback(db)
                raise Unavailable(str(exc)) from exc
            except BaseException:
                _rollback(db)
                raise

    @contextmanager
    def topic_lock(self, topic_key: str, scope: str, project_key: str) -> Iterator[None]:
        """The write lock of the whole file from a topic's look-up to its write (``Store.topic_lock``):
        with the look-up outside it, 45 of 80 notes of one topic from 8 processes at once failed on
        the topic's unique index. The store's writes inside join this one transaction."""
        with self._write():
            self._held = True
            try:
                yield
            finally:
                self._held = False

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def applied_migrations(self) -> list[tuple[str, str]]:
        return self._guard(lambda db: [tuple(r) for r in db.execute("SELECT name, applied_at FROM _migrations")])

    def pending_migrations(self) -> list[str]:
        return self._guard(lambda db: [m.name for m in migrations.MIGRATIONS.pending(migrations.recorded(db))])

    def integrity_check(self) -> list[str]:
        def run(db: sqlite3.Connection) -> list[str]:
            rows = [r[0] for r in db.execute("PRAGMA integrity_check")]
            problems = [r for r in rows if r != "ok"]
            try:
                db.execute("INSERT INTO records_fts(records_fts, rank) VALUES ('integrity-check', 1)")
            except sqlite3.DatabaseError as exc:
                problems.append(f"full-text index: {exc}")
            return problems

        return self._guard(run)

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction on the store's connection, for ``sync``; ``put`` writes a record
        (its row and indexes, no revision) inside it."""
        with self._write() as db:
            yield db

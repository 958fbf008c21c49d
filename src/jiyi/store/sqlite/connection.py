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

# FTS5 writes each transaction's terms as a segment of its own and merges them only once four are on
# one level (its automerge), so a store written a note at a time keeps a dozen segments or more, and
# every query term is looked up in each: bench/scale.py's store of 100 000 records held 14 segments,
# 440 segment look-ups a search; merged into one, memory_search's p50 fell from 3.7 to 3.0 ms. So the
# store merges them itself after writes, a bounded step at a time (``SQLiteConnection.upkeep``), a level
# as soon as two segments are on it (m016_index_merging). FTS5's other kind of step, a negative
# `merge` (towards one segment whatever the levels), left 42 segments after 240 notes written between
# its steps: it starts over with every new segment.
UPKEEP_SEGMENTS = 4  # more segments than this: merge
UPKEEP_PAGES = 128  # leaf pages merged in one step at most
# Checked when a written row's id is a multiple of this: the rows of short processes (a hook, a
# `jiyi note`) share the work as those of a long one do. Every 2nd row: 3.3 segments on average while
# notes are written one at a time (8.7 without upkeep, 5.4 checking every 8th; tests/store/test_sqlite_store.py).
UPKEEP_EVERY = 2


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
        self._indexed_rows: list[int] = []  # full-text rows written since the last upkeep
        self._busy_timeout_ms = int(busy_timeout_ms)
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
                self._indexed_rows.clear()
                _rollback(db)
                raise Unavailable(str(exc)) from exc
            except BaseException:
                self._indexed_rows.clear()
                _rollback(db)
                raise
            self.upkeep()

    def indexed_row(self, rowid: int) -> None:
        """Note a row written to the full-text index in the open write transaction (``upkeep``)."""
        self._indexed_rows.append(rowid)

    def upkeep(self, *, force: bool = False) -> None:
        """Merge the full-text index's segments a step (``UPKEEP_PAGES``) while there are more than
        ``UPKEEP_SEGMENTS`` and a level has two, if a row written since the last upkeep falls on
        ``UPKEEP_EVERY`` (or ``force``); a bulk write may take a step for every ``UPKEEP_EVERY`` rows
        it wrote. Best effort: a busy or read-only store is merged by a later write."""
        rows, self._indexed_rows = self._indexed_rows, []
        steps = len(rows) // UPKEEP_EVERY or (1 if force or any(r % UPKEEP_EVERY == 0 for r in rows) else 0)
        if not steps:
            return
        with self._lock:
            db = self._db
            # Never wait for another writer: the caller's own write is done, and a hook or a
            # finisher holding the lock would make it wait the whole busy timeout for housekeeping.
            try:
                db.execute("PRAGMA busy_timeout = 0")
                for _ in range(steps):
                    segments = db.execute("SELECT count(DISTINCT segid) FROM records_fts_idx").fetchone()[0]
                    if segments <= UPKEEP_SEGMENTS:
                        return
                    before = db.total_changes
                    db.execute("BEGIN IMMEDIATE")
                    try:
                        db.execute("INSERT INTO records_fts(records_fts, rank) VALUES ('merge', ?)", (UPKEEP_PAGES,))
                        db.execute("COMMIT")
                    finally:
                        _rollback(db)
                    if db.total_changes == before:  # no level had two segments: nothing to merge yet
                        return
            except sqlite3.Error:
                return
            finally:
                with suppress(sqlite3.Error):
                    db.execute(f"PRAGMA busy_timeout = {self._busy_timeout_ms}")

    # -- versions of what the store derives (lexical.py: the terms; signing.py: the signatures) -------
    # ``store_meta.<name>_version`` is the version everything was derived with (absent: 1, a store
    # made before it was kept); ``<name>_upgrade`` = "<version>:<rid>" while an upgrade is under way:
    # every record up to that rid is done. Each batch is one transaction, so an upgrade stopped
    # anywhere loses nothing and resumes where it was.
    @staticmethod
    def _version_cursor(db: sqlite3.Connection, name: str, target: int) -> tuple[int, int]:
        """(version the whole store was derived with, rid an upgrade to ``target`` reached)."""
        keys = (f"{name}_version", f"{name}_upgrade")
        meta = dict(db.execute("SELECT key, value FROM store_meta WHERE key IN (?, ?)", keys).fetchall())
        upgrade, _, after = str(meta.get(keys[1], "")).partition(":")
        return int(meta.get(keys[0], 1)), int(after) if upgrade == str(target) else 0

    @staticmethod
    def _upgraded_to(db: sqlite3.Connection, name: str, target: int, rid: int | None) -> None:
        """Move an upgrade's cursor to ``rid``; None: it is done, the store is at ``target``."""
        if rid is not None:
            db.execute(
                "INSERT OR REPLACE INTO store_meta (key, value) VALUES (?, ?)", (f"{name}_upgrade", f"{target}:{rid}")
            )
            return
        db.execute("INSERT OR REPLACE INTO store_meta (key, value) VALUES (?, ?)", (f"{name}_version", str(target)))
        db.execute("DELETE FROM store_meta WHERE key = ?", (f"{name}_upgrade",))

    def _version_state(self, name: str, target: int) -> tuple[int, int]:
        """(version the whole store was derived with, live records an upgrade to ``target`` has left)."""

        def run(db: sqlite3.Connection) -> tuple[int, int]:
            version, after = self._version_cursor(db, name, target)
            if version >= target:
                return version, 0
            left = db.execute("SELECT count(*) FROM records WHERE rid > ? AND forgotten = 0", (after,)).fetchone()
            return version, int(left[0])

        return self._guard(run)

    def _upgrade_on_open(self, name: str, target: int, step: Callable[[int], int], batch: int, seconds: float) -> None:
        """Batches of ``step`` for at most ``seconds`` when the store is behind ``target``: a small
        store at once, a large one over a few opens or by `jiyi reindex`."""
        key = f"{name}_version"
        row = self._guard(lambda db: db.execute("SELECT value FROM store_meta WHERE key = ?", (key,)).fetchone())
        if row is not None and int(row[0]) >= target:
            return
        deadline = time.monotonic() + seconds
        try:
            while step(batch) == batch and time.monotonic() < deadline:
                pass
        except Unavailable:
            pass  # another writer held the store past the timeout (or it is read-only): a later open goes on

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

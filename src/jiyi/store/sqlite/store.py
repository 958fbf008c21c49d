"""The embedded store: one SQLite file in WAL mode under ``JIYI_HOME``.

WAL lets the MCP server read while a hook process writes; writers take the lock up front
(``BEGIN IMMEDIATE``) and wait up to the busy timeout, so concurrent notes queue instead of failing
with "database is locked" half-way through (peers' users report exactly that). Any SQLite failure
— locked past the timeout, not a database, disk full — becomes ``Unavailable``.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ...errors import Unavailable
from ...records import RECORD_COLUMNS, Record, Relation, Revision, now, record_from_columns
from ..base import Resolved, SessionState, Store, TermStats
from . import migrations

if TYPE_CHECKING:
    from ...analysis.indexing import Derived

T = TypeVar("T")

# Terms in at least this many records have their document counts cached (``term_stats``): counting
# reads every posting, and a query of 64 terms in a few hundred records each costs several ms.
_COMMON_TERM_DOCS = 100
# Signatures and symbols on more records than this are left out of a look-up with rarer ones.
_COMMON_KEY_RECORDS = 2000
# A key common everywhere yields the most recent of this many times the places asked for.
_COMMON_SAMPLE = 4
# Matches of a full-text look-up ranked at most (the newest); by_terms says why.
_TERM_SCAN = 2000
# An older full-text index is re-derived on open, _UPGRADE_BATCH records a transaction (~17 ms
# here, so other writers wait little) for at most _UPGRADE_ON_OPEN_S: ~6 000 records, all of most
# stores. Measured at ~34 µs a record: 100 000 records take 3.3 s in all (reindex.py).
_UPGRADE_BATCH = 500
_UPGRADE_ON_OPEN_S = 0.2


def _fts_rows(db: sqlite3.Connection) -> int:
    """Rows in the full-text index. FTS5 keeps the count as the first varint of its averages
    record (id 1 of its data table, what bm25 reads), so this is one look-up where
    ``count(*)`` reads every row (~25 ms at 100 000 records)."""
    row = db.execute("SELECT block FROM records_fts_data WHERE id = 1").fetchone()
    block = bytes(row[0]) if row and row[0] else b""
    value = 0
    for i, byte in enumerate(block[:9]):  # SQLite's varint: 7 bits a byte, big-endian; the 9th has 8
        if i == 8:
            return (value << 8) | byte
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value
    return int(db.execute("SELECT count(*) FROM records_fts").fetchone()[0])


_RECORD_COLUMNS = RECORD_COLUMNS


@dataclass
class _Loaded:
    marks: dict[str, list[Relation]]
    signatures: dict[str, list[str]]
    symbols: dict[str, list[str]]


def _load_indexes(db: sqlite3.Connection, hexids: list[str]) -> _Loaded:
    loaded = _Loaded({}, {}, {})
    for start in range(0, len(hexids), 500):  # under SQLite's bound on parameters
        chunk = hexids[start : start + 500]
        marks = ",".join("?" * len(chunk))
        for target, source, relation, remote in db.execute(
            "SELECT rel.target_hex, rel.source_hex, rel.relation, COALESCE(src.remote, 0) FROM relations rel "
            f"LEFT JOIN records src ON src.hex = rel.source_hex WHERE rel.target_hex IN ({marks}) "
            "ORDER BY rel.created",
            chunk,
        ):
            loaded.marks.setdefault(target, []).append(Relation(("lr_" if not remote else "rr_") + source, relation))
        for hexid, sig in db.execute(f"SELECT hex, sig FROM signatures WHERE hex IN ({marks})", chunk):
            loaded.signatures.setdefault(hexid, []).append(sig)
        for hexid, sym in db.execute(f"SELECT hex, symbol FROM symbols WHERE hex IN ({marks})", chunk):
            loaded.symbols.setdefault(hexid, []).append(sym)
    return loaded


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


class SQLiteStore(Store):
    def __init__(self, path: Path, *, busy_timeout_ms: int = 5000) -> None:
        self.path = str(path)
        self._lock = threading.RLock()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(
                self.path, timeout=busy_timeout_ms / 1000, isolation_level=None, check_same_thread=False
            )
        except (OSError, sqlite3.Error) as exc:
            raise Unavailable(f"cannot open {path}: {exc}") from exc
        self._db = db
        self._common_terms: dict[str, tuple[int, int]] = {}  # term -> (documents, index rows then)
        try:
            db.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            _to_wal(db, busy_timeout_ms)
            db.execute("PRAGMA synchronous = NORMAL")
            migrations.apply(db, now)
        except sqlite3.Error as exc:
            db.close()
            raise Unavailable(f"cannot use {path}: {exc}") from exc
        self._upgrade_terms_on_open()

    def _upgrade_terms_on_open(self) -> None:
        # An index built with older terms is brought up to date a bounded while on every open: a
        # small store at once, a large one over a few opens or by `jiyi reindex` (reindex.py says
        # what search does meanwhile).
        from ...analysis.lexical import VERSION

        row = self._guard(
            lambda db: db.execute("SELECT value FROM store_meta WHERE key = 'lexical_version'").fetchone()
        )
        if row is not None and int(row[0]) >= VERSION:
            return
        deadline = time.monotonic() + _UPGRADE_ON_OPEN_S
        try:
            while self.upgrade_lexical(_UPGRADE_BATCH) == _UPGRADE_BATCH and time.monotonic() < deadline:
                pass
        except Unavailable:
            pass  # another writer held the store past the timeout: the next open goes on

    # -- plumbing ----------------------------------------------------------------------------
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
            try:
                db.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise Unavailable(str(exc)) from exc
            try:
                yield db
                db.execute("COMMIT")
            except sqlite3.Error as exc:
                db.execute("ROLLBACK")
                raise Unavailable(str(exc)) from exc
            except BaseException:
                db.execute("ROLLBACK")
                raise

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

    # -- records -----------------------------------------------------------------------------
    def _row_to_record(
        self, db: sqlite3.Connection, row: sqlite3.Row | tuple[Any, ...], loaded: _Loaded | None = None
    ) -> Record:
        hexid = row[0]
        if loaded is None:
            loaded = _load_indexes(db, [hexid])
        return record_from_columns(
            row,
            signatures=loaded.signatures.get(hexid, ()),
            symbols=loaded.symbols.get(hexid, ()),
            marked=loaded.marks.get(hexid, []),
            decode=json.loads,
        )

    def get(self, hexid: str, *, include_forgotten: bool = False) -> Record | None:
        def run(db: sqlite3.Connection) -> Record | None:
            row = db.execute(f"SELECT {_RECORD_COLUMNS} FROM records WHERE hex = ?", (hexid,)).fetchone()
            if row is None or (row[-1] and not include_forgotten):
                return None
            return self._row_to_record(db, row)

        return self._guard(run)

    def get_many(self, hexids: Iterable[str]) -> list[Record]:
        wanted = list(dict.fromkeys(hexids))
        if not wanted:
            return []

        def run(db: sqlite3.Connection) -> list[Record]:
            marks = ",".join("?" * len(wanted))
            rows = db.execute(
                f"SELECT {_RECORD_COLUMNS} FROM records WHERE forgotten = 0 AND hex IN ({marks})", wanted
            ).fetchall()
            # Marks, signatures and symbols of all of them in three queries, not three per record.
            loaded = _load_indexes(db, [row[0] for row in rows])
            return [self._row_to_record(db, row, loaded) for row in rows]

        return self._guard(run)

    def find_topic(self, topic_key: str, scope: str, project_key: str) -> Record | None:
        topic_scope = project_key if scope == "project" else ""

        def run(db: sqlite3.Connection) -> Record | None:
            row = db.execute(
                # Local records only: a pulled record with the topic is another machine's to revise.
                f"SELECT {_RECORD_COLUMNS} FROM records WHERE topic_key = ? AND scope = ? AND topic_scope = ? "
                "AND forgotten = 0 AND remote = 0",
                (topic_key, scope, topic_scope),
            ).fetchone()
            return None if row is None else self._row_to_record(db, row)

        return self._guard(run)

    def _put(self, db: sqlite3.Connection, record: Record, derived: Derived) -> None:
        from ...analysis.signature import ALGORITHM

        values = (
            record.hex,
            int(record.remote),
            record.title,
            record.type,
            record.scope,
            record.what,
            record.why,
            record.where,
            record.learned,
            record.topic_key,
            (record.project_key if record.scope == "project" else "") if record.topic_key else None,
            record.revision,
            json.dumps(record.fix.to_dict(), ensure_ascii=False) if record.fix else None,
            record.origin,
            record.project,
            record.project_key,
            json.dumps(record.environment, ensure_ascii=False, sort_keys=True),
            record.tool_name,
            record.outcome,
            record.sources,
            record.used_success,
            json.dumps(record.evidence_refs),
            record.session_id,
            record.created,
            record.updated,
            json.dumps(record.reproduction.to_dict(), ensure_ascii=False) if record.reproduction else None,
            json.dumps(record.verification.to_dict(), ensure_ascii=False) if record.verification else None,
            int(record.forgotten),
            json.dumps(list(derived.key_lines), ensure_ascii=False),
            json.dumps(list(derived.normalized), ensure_ascii=False),
            ALGORITHM,
        )
        columns = _RECORD_COLUMNS.replace("topic_key,", "topic_key, topic_scope,")
        columns += ", key_lines, normalized, sig_algorithm"
        names = [c.strip() for c in columns.split(",")]
        updates = ", ".join(f"{n} = excluded.{n}" for n in names if n not in ("hex", "created"))
        db.execute(
            f"INSERT INTO records ({columns}) VALUES ({','.join('?' * len(values))}) "
            f"ON CONFLICT(hex) DO UPDATE SET {updates}",
            values,
        )
        rid = db.execute("SELECT rid FROM records WHERE hex = ?", (record.hex,)).fetchone()[0]
        db.execute("DELETE FROM signatures WHERE hex = ?", (record.hex,))
        db.executemany(
            "INSERT OR IGNORE INTO signatures (sig, hex) VALUES (?, ?)", [(s, record.hex) for s in record.signatures]
        )
        db.execute("DELETE FROM symbols WHERE hex = ?", (record.hex,))
        db.executemany(
            "INSERT OR IGNORE INTO symbols (symbol, hex) VALUES (?, ?)", [(s, record.hex) for s in record.symbols]
        )
        db.execute("DELETE FROM records_fts WHERE rowid = ?", (rid,))
        db.execute(
            "INSERT INTO records_fts (rowid, title, body) VALUES (?, ?, ?)",
            (rid, derived.index_title, derived.index_body),
        )

    @staticmethod
    def _put_revision(db: sqlite3.Connection, rev: Revision) -> None:
        db.execute(
            "INSERT INTO revisions (hex, revision, session_id, created, change, snapshot) VALUES (?,?,?,?,?,?)",
            (
                rev.hex,
                rev.revision,
                rev.session_id,
                rev.created,
                rev.change,
                json.dumps(rev.snapshot, ensure_ascii=False, sort_keys=True),
            ),
        )

    def write_record(
        self,
        record: Record,
        revision: Revision,
        derived: Derived,
        *,
        marks: Iterable[tuple[str, str]] = (),
        session_id: str | None = None,
    ) -> None:
        with self._write() as db:
            self._put(db, record, derived)
            self._put_revision(db, revision)
            for target, relation in marks:
                db.execute(
                    "INSERT OR IGNORE INTO relations (source_hex, target_hex, relation, created) VALUES (?,?,?,?)",
                    (record.hex, target, relation, revision.created),
                )
            if session_id:
                db.execute(
                    "INSERT INTO session_notes (session_id, hex, at, last_at) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT(session_id, hex) DO UPDATE SET last_at = excluded.last_at",
                    (session_id, record.hex, revision.created, revision.created),
                )

    def write_many(self, items: Iterable[tuple[Record, Revision, Derived]]) -> int:
        written = 0
        with self._write() as db:
            for record, revision, derived in items:
                self._put(db, record, derived)
                self._put_revision(db, revision)
                written += 1
        return written

    def signed_with(self, hexid: str) -> tuple[str, tuple[str, ...]]:
        row = self._guard(
            lambda db: db.execute("SELECT sig_algorithm, normalized FROM records WHERE hex = ?", (hexid,)).fetchone()
        )
        return ("", ()) if row is None else (str(row[0]), tuple(json.loads(row[1])))

    def reindex_record(self, record: Record, derived: Derived) -> None:
        with self._write() as db:
            self._put(db, record, derived)

    # -- the full-text terms' version (reindex.upgrade_terms) ---------------------------------
    # ``store_meta.lexical_version`` is the lexical.VERSION the whole index was built with;
    # ``lexical_upgrade`` = "<version>:<rid>" while an upgrade is under way: every record up to
    # that rid has been re-derived. Each batch is one transaction, so an upgrade stopped anywhere
    # (a killed process, a full disk) loses nothing and resumes where it was.
    def auto_record_queue(self) -> tuple[int, int]:
        """(automatic records waiting for a finisher, rows given up on after MAX_ATTEMPTS): what
        ``jiyi doctor`` shows of loop_closing's queue."""
        from ...capture.finisher import MAX_ATTEMPTS

        sql = "SELECT count(*), coalesce(sum(attempts >= ?), 0) FROM auto_record_queue"
        waiting, given_up = self._guard(lambda db: db.execute(sql, (MAX_ATTEMPTS,)).fetchone())
        return int(waiting) - int(given_up), int(given_up)

    def lexical_state(self) -> tuple[int, int]:
        """(version the whole index was built with, records still to re-derive to lexical.VERSION)."""
        from ...analysis.lexical import VERSION

        def run(db: sqlite3.Connection) -> tuple[int, int]:
            version, after = self._lexical_cursor(db, VERSION)
            if version >= VERSION:
                return version, 0
            left = db.execute("SELECT count(*) FROM records WHERE rid > ? AND forgotten = 0", (after,)).fetchone()
            return version, int(left[0])

        return self._guard(run)

    @staticmethod
    def _lexical_cursor(db: sqlite3.Connection, target: int) -> tuple[int, int]:
        meta = dict(db.execute("SELECT key, value FROM store_meta WHERE key LIKE 'lexical_%'").fetchall())
        upgrade, _, after = str(meta.get("lexical_upgrade", "")).partition(":")
        return int(meta.get("lexical_version", 1)), int(after) if upgrade == str(target) else 0

    def upgrade_lexical(self, batch: int) -> int:
        """Re-derive the full-text terms of up to ``batch`` more records in one transaction; returns
        how many. When none is left the index is recorded as built with lexical.VERSION."""
        from ...analysis.indexing import lexical_index
        from ...analysis.lexical import VERSION

        if batch < 1:
            return 0
        with self._write() as db:
            version, after = self._lexical_cursor(db, VERSION)
            if version >= VERSION:
                return 0
            rows = db.execute(
                "SELECT rid, title, what, why, loc, learned FROM records WHERE rid > ? AND forgotten = 0 "
                "ORDER BY rid LIMIT ?",
                (after, batch),
            ).fetchall()
            for rid, title, what, why, loc, learned in rows:
                db.execute("DELETE FROM records_fts WHERE rowid = ?", (rid,))
                db.execute(
                    "INSERT INTO records_fts (rowid, title, body) VALUES (?, ?, ?)",
                    (rid, *lexical_index(title, what, why, loc, learned)),
                )
            if len(rows) == batch:
                db.execute(
                    "INSERT OR REPLACE INTO store_meta (key, value) VALUES ('lexical_upgrade', ?)",
                    (f"{VERSION}:{rows[-1][0]}",),
                )
            else:  # the last ones: records written from now on are derived with VERSION anyway
                self._set_lexical_version(db, VERSION)
        self._common_terms.clear()  # the counts of terms changed under them
        return len(rows)

    def lexical_rebuilt(self, version: int) -> None:
        """Record that every record's terms were re-derived with ``version`` (a full reindex)."""
        with self._write() as db:
            self._set_lexical_version(db, version)
        self._common_terms.clear()

    @staticmethod
    def _set_lexical_version(db: sqlite3.Connection, version: int) -> None:
        db.execute("INSERT OR REPLACE INTO store_meta (key, value) VALUES ('lexical_version', ?)", (str(version),))
        db.execute("DELETE FROM store_meta WHERE key = 'lexical_upgrade'")

    def revisions(self, hexid: str) -> list[Revision]:
        def run(db: sqlite3.Connection) -> list[Revision]:
            rows = db.execute(
                "SELECT hex, revision, session_id, created, change, snapshot FROM revisions WHERE hex = ? "
                "ORDER BY revision",
                (hexid,),
            )
            return [Revision(r[0], r[1], r[2], r[3], r[4], json.loads(r[5])) for r in rows]

        return self._guard(run)

    def list_records(
        self, *, limit: int = 50, offset: int = 0, project: str | None = None, include_forgotten: bool = False
    ) -> list[Record]:
        where = ["1=1"] if include_forgotten else ["forgotten = 0"]
        params: list[Any] = []
        if project is not None:
            where.append("project = ?")
            params.append(project)

        def run(db: sqlite3.Connection) -> list[Record]:
            rows = db.execute(
                f"SELECT {_RECORD_COLUMNS} FROM records WHERE {' AND '.join(where)} "
                "ORDER BY updated DESC, rid DESC LIMIT ? OFFSET ?",
                [*params, limit, offset],
            ).fetchall()
            return [self._row_to_record(db, row) for row in rows]

        return self._guard(run)

    def iter_records(self, *, include_forgotten: bool = False) -> Iterator[Record]:
        last = 0
        while True:

            def page(db: sqlite3.Connection, after: int = last) -> list[tuple[int, Record]]:
                flt = "" if include_forgotten else "AND forgotten = 0"
                rows = db.execute(
                    f"SELECT rid, {_RECORD_COLUMNS} FROM records WHERE rid > ? {flt} ORDER BY rid LIMIT 500",
                    (after,),
                ).fetchall()
                return [(row[0], self._row_to_record(db, row[1:])) for row in rows]

            batch = self._guard(page)
            if not batch:
                return
            for _, record in batch:
                yield record
            last = batch[-1][0]

    def count(self, *, include_forgotten: bool = False) -> int:
        flt = "" if include_forgotten else " WHERE forgotten = 0"
        return int(self._guard(lambda db: db.execute(f"SELECT count(*) FROM records{flt}").fetchone()[0]))

    def forget(self, hexid: str) -> bool:
        with self._write() as db:
            row = db.execute("SELECT rid FROM records WHERE hex = ? AND forgotten = 0", (hexid,)).fetchone()
            if row is None:
                return False
            db.execute("UPDATE records SET forgotten = 1, updated = ? WHERE hex = ?", (now(), hexid))
            db.execute("DELETE FROM records_fts WHERE rowid = ?", (row[0],))
            db.execute("DELETE FROM signatures WHERE hex = ?", (hexid,))
            db.execute("DELETE FROM symbols WHERE hex = ?", (hexid,))
            return True

    def purge(self, hexid: str, *, compact: bool = True) -> bool:
        with self._write() as db:
            row = db.execute("SELECT rid FROM records WHERE hex = ?", (hexid,)).fetchone()
            if row is None:
                return False
            db.execute("DELETE FROM records_fts WHERE rowid = ?", (row[0],))
            tables = ("signatures", "symbols", "revisions", "session_reads", "session_notes", "session_recalls")
            for table in (*tables, "record_confirmations", "records"):
                db.execute(f"DELETE FROM {table} WHERE hex = ?", (hexid,))
            db.execute("DELETE FROM relations WHERE source_hex = ? OR target_hex = ?", (hexid, hexid))
        # A purge is for leaked secrets: FTS5 keeps a deleted row's terms in its segments until they
        # are merged, and freed pages linger in the file and the WAL until a checkpoint and VACUUM.
        # (``compact=False``: a team record forgotten by its author leaves without that cost.)
        if not compact:
            return True
        self._guard(lambda db: db.execute("INSERT INTO records_fts(records_fts) VALUES ('optimize')"))
        self._guard(lambda db: db.execute("PRAGMA wal_checkpoint(TRUNCATE)"))
        self._guard(lambda db: db.execute("VACUUM"))
        return True

    def add_evidence(
        self, hexid: str, *, sources: int = 0, used_success: int = 0, session_id: str | None = None
    ) -> None:
        with self._write() as db:
            if session_id is not None:
                seen = db.execute(
                    "INSERT OR IGNORE INTO record_confirmations (hex, session_id, at) VALUES (?, ?, ?)",
                    (hexid, session_id, now()),
                )
                if seen.rowcount != 1:
                    sources = 0  # this session confirmed it before
            db.execute(
                "UPDATE records SET sources = sources + ?, used_success = used_success + ? WHERE hex = ?",
                (sources, used_success, hexid),
            )

    def stats(self) -> dict[str, Any]:
        def run(db: sqlite3.Connection) -> dict[str, Any]:
            def one(sql: str) -> int:
                return int(db.execute(sql).fetchone()[0])

            def by(col: str) -> dict[str, int]:
                sql = f"SELECT {col}, count(*) FROM records WHERE forgotten = 0 GROUP BY {col} ORDER BY 2 DESC"
                return dict(db.execute(sql).fetchall())

            return {
                "records": one("SELECT count(*) FROM records WHERE forgotten = 0"),
                "forgotten": one("SELECT count(*) FROM records WHERE forgotten = 1"),
                "revisions": one("SELECT count(*) FROM revisions"),
                "sessions": one("SELECT count(*) FROM sessions"),
                "by_type": by("type"),
                "by_origin": by("origin"),
                "by_project": by("project"),
            }

        return self._guard(run)

    # -- search ------------------------------------------------------------------------------
    def _lookup(self, table: str, column: str, values: Iterable[str], limit: int, *, only_rare: bool) -> list[str]:
        keys = list(dict.fromkeys(values))
        if not keys:
            return []

        # A key on thousands of records (`ImportError`, `TS2339`) costs ~20 ms to group and sort
        # at 100 000 records and names no particular one: when rarer keys are asked for too (or,
        # with ``only_rare``, always), only they are looked up. Counting stops at the bound.
        def common(db: sqlite3.Connection, key: str) -> bool:
            count = f"SELECT count(*) FROM (SELECT 1 FROM {table} WHERE {column} = ? LIMIT ?)"
            return bool(db.execute(count, (key, _COMMON_KEY_RECORDS + 1)).fetchone()[0] > _COMMON_KEY_RECORDS)

        rare = self._guard(lambda db: [k for k in keys if not common(db, k)])
        marks = ",".join("?" * len(rare or keys))
        if rare:
            # Each has at most the bound of records: all are read, from the key's index alone. Records
            # sharing most keys first; not joined with records for recency, as that costs a random
            # look-up per match (~15 ms for a key on 1 700 of 100 000 records, research/performance.md).
            sql = (
                f"SELECT hex FROM {table} WHERE {column} IN ({marks}) GROUP BY hex ORDER BY count(*) DESC, hex LIMIT ?"
            )
            return self._guard(lambda db: [r[0] for r in db.execute(sql, [*rare, limit])])
        if only_rare:
            return []
        # Only common keys: the most recent of a bounded sample of their records (index order).
        sql = (
            f"SELECT t.hex FROM (SELECT hex FROM {table} WHERE {column} IN ({marks}) LIMIT ?) t "
            "JOIN records r ON r.hex = t.hex GROUP BY t.hex ORDER BY count(*) DESC, max(r.updated) DESC LIMIT ?"
        )
        return self._guard(lambda db: [r[0] for r in db.execute(sql, [*keys, _COMMON_SAMPLE * limit, limit])])

    def by_signature(self, signatures: Iterable[str], limit: int) -> list[str]:
        # A signature on thousands of records is still the same error met again: kept when alone.
        return self._lookup("signatures", "sig", signatures, limit, only_rare=False)

    def by_symbol(self, symbols: Iterable[str], limit: int) -> list[str]:
        return self._lookup("symbols", "symbol", symbols, limit, only_rare=True)

    def term_stats(self, terms: Iterable[str]) -> TermStats:
        keys = list(dict.fromkeys(terms))

        def run(db: sqlite3.Connection) -> TermStats:
            total = _fts_rows(db)
            counts: dict[str, int] = {}
            # One indexed look-up per term: fts5vocab finds `term = ?` in the index but counts its
            # documents by reading all its postings (~1 ms for a term in half of 100 000 records).
            # So the counts of common terms are kept while the store has grown or shrunk by less
            # than 1 %: their weight barely moves, and they are the same in almost every query.
            # The others in one statement: fts5vocab costs ~0.08 ms a statement even for a rare term.
            todo: list[str] = []
            for term in keys:
                cached = self._common_terms.get(term)
                if cached is not None and abs(total - cached[1]) * 100 <= total:
                    counts[term] = cached[0]
                else:
                    counts[term] = 0
                    todo.append(term)
            for start in range(0, len(todo), 500):  # under SQLite's bound on parameters
                chunk = todo[start : start + 500]
                marks = ",".join("?" * len(chunk))
                for term, docs in db.execute(f"SELECT term, doc FROM records_vocab WHERE term IN ({marks})", chunk):
                    counts[term] = int(docs)
                    if docs >= _COMMON_TERM_DOCS:
                        self._common_terms[term] = (int(docs), total)
            return TermStats(total, counts)

        return self._guard(run)

    def by_terms(self, terms: list[str], limit: int) -> list[str]:
        if not terms:
            return []
        from ...analysis.lexical import match_expression

        # Ranked in a subquery: joined before the sort, every match would cost a records look-up
        # (2-3x the time of the ranking alone). Ranked among the newest _TERM_SCAN matches only, as
        # the PostgreSQL store bounds its scan: the rarest term of a query can still be common
        # (`symbol` in ~half of 1 000 000 records took 55 ms to rank in full, bench/scale.py).
        sql = (
            "SELECT r.hex FROM (SELECT id, rank FROM (SELECT rowid AS id, bm25(records_fts, 2.0, 1.0) AS rank "
            "FROM records_fts WHERE records_fts MATCH ? ORDER BY rowid DESC LIMIT ?) ORDER BY rank LIMIT ?) f "
            "JOIN records r ON r.rid = f.id ORDER BY f.rank"
        )
        expression = match_expression(terms)
        return self._guard(lambda db: [r[0] for r in db.execute(sql, (expression, _TERM_SCAN, limit))])

    def indexed_terms(self, hexids: Iterable[str]) -> dict[str, set[str]]:
        keys = list(dict.fromkeys(hexids))
        if not keys:
            return {}
        marks = ",".join("?" * len(keys))
        sql = (
            "SELECT r.hex, f.title, f.body FROM records r JOIN records_fts f ON f.rowid = r.rid "
            f"WHERE r.hex IN ({marks})"
        )
        rows = self._guard(lambda db: db.execute(sql, keys).fetchall())
        return {h: set(f"{t} {b}".split()) for h, t, b in rows}

    # -- sessions ----------------------------------------------------------------------------
    def live_session(self, project_key: str, since: str, own_prefix: str) -> str | None:
        sql = (
            "SELECT id FROM sessions WHERE project_key = ? AND last_seen >= ? AND substr(id, 1, ?) != ? "
            "ORDER BY last_seen DESC LIMIT 1"
        )
        row = self._guard(lambda db: db.execute(sql, (project_key, since, len(own_prefix), own_prefix)).fetchone())
        return str(row[0]) if row else None

    def touch_session(self, session_id: str, project_key: str, project: str) -> None:
        stamp = now()
        with self._write() as db:
            db.execute(
                "INSERT INTO sessions (id, project_key, project, started, last_seen) VALUES (?,?,?,?,?) "
                "ON CONFLICT(id) DO UPDATE SET last_seen = excluded.last_seen",
                (session_id, project_key, project, stamp, stamp),
            )

    def session(self, session_id: str) -> SessionState | None:
        def run(db: sqlite3.Connection) -> SessionState | None:
            row = db.execute(
                "SELECT id, project_key, project, started, last_seen, read_used, last_tool, last_error, "
                "last_failure_at, outcome, last_command, last_checkout FROM sessions WHERE id = ?",
                (session_id,),
            ).fetchone()
            if row is None:
                return None
            state = SessionState(*row[:10])
            state.last_command = row[10]
            state.last_checkout = row[11]
            state.reads = [
                r[0]
                for r in db.execute("SELECT hex FROM session_reads WHERE session_id = ? ORDER BY at", (session_id,))
            ]
            state.notes = [
                r[0]
                for r in db.execute("SELECT hex FROM session_notes WHERE session_id = ? ORDER BY at", (session_id,))
            ]
            return state

        return self._guard(run)

    def take_read(self, session_id: str, hexid: str, wanted: int, budget: int) -> int:
        with self._write() as db:
            row = db.execute("SELECT read_used FROM sessions WHERE id = ?", (session_id,)).fetchone()
            used = int(row[0]) if row else 0
            granted = max(0, min(wanted, budget - used))
            if granted:
                db.execute("UPDATE sessions SET read_used = read_used + ? WHERE id = ?", (granted, session_id))
                stamp = now()
                db.execute(
                    "INSERT INTO session_reads (session_id, hex, at, last_at) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT(session_id, hex) DO UPDATE SET last_at = excluded.last_at",
                    (session_id, hexid, stamp, stamp),
                )
            return granted

    def set_failure(
        self,
        session_id: str,
        tool: str | None,
        error: str | None,
        *,
        signatures: Iterable[str] = (),
        command: str | None = None,
        checkout: str | None = None,
    ) -> None:
        sigs = json.dumps(list(dict.fromkeys(signatures))) if error else None
        with self._write() as db:
            db.execute(
                "UPDATE sessions SET last_tool = ?, last_error = ?, last_failure_at = ?, last_signatures = ?, "
                "last_command = ?, last_checkout = ?, outcome = CASE WHEN ? THEN '失败' ELSE outcome END WHERE id = ?",
                (tool, error, now() if error else None, sigs, command if error else None, checkout if error else None,
                 bool(error), session_id),
            )  # fmt: skip

    def record_edits(self, session_id: str, paths: Iterable[str]) -> None:
        wanted = list(dict.fromkeys(p for p in paths if p))
        if not wanted:
            return
        stamp = now()
        with self._write() as db:
            # Only while a failure is pending: an edit before it or without one fixes nothing.
            db.executemany(
                "INSERT INTO session_edits (session_id, path, at) SELECT id, ?, ? FROM sessions "
                "WHERE id = ? AND last_failure_at IS NOT NULL "
                "ON CONFLICT(session_id, path) DO UPDATE SET at = excluded.at",
                [(path, stamp, session_id) for path in wanted],
            )

    def resolve_failure(self, session_id: str, tool: str) -> Resolved | None:
        from ...capture.finisher import resolve_in  # the statements, shared with the hook's quick path

        def pending(db: sqlite3.Connection) -> bool:
            row = db.execute("SELECT last_tool, last_failure_at FROM sessions WHERE id = ?", (session_id,)).fetchone()
            return row is not None and row[1] is not None and (row[0] or "").lower() == tool.lower()

        # Most successes follow no failure: a read settles them without taking the write lock.
        if not self._guard(pending):
            return None
        with self._write() as db:
            found = resolve_in(db, session_id, tool)
        if found is None:
            return None
        used, confirmed, failed_tool, error, signatures, command, notes, edited, checkout = found
        return Resolved(
            used,
            confirmed,
            tool=failed_tool,
            error=error,
            signatures=signatures,
            command=command,
            noted=notes,
            edited=edited,
            checkout=checkout,
        )

    def claim_recall(self, session_id: str, hexids: Iterable[str]) -> str | None:
        wanted = list(dict.fromkeys(hexids))
        if not wanted:
            return None
        with self._write() as db:
            for hexid in wanted:
                cursor = db.execute(
                    "INSERT OR IGNORE INTO session_recalls (session_id, hex, at) VALUES (?, ?, ?)",
                    (session_id, hexid, now()),
                )
                if cursor.rowcount == 1:
                    return hexid
            return None

    # -- transfer ----------------------------------------------------------------------------
    def import_record(
        self, record: Record, revisions: list[Revision], marks: list[tuple[str, str, str]], derived: Derived
    ) -> bool:
        with self._write() as db:
            if db.execute("SELECT 1 FROM records WHERE hex = ?", (record.hex,)).fetchone():
                return False
            self._put(db, record, derived)
            if record.forgotten:
                rid = db.execute("SELECT rid FROM records WHERE hex = ?", (record.hex,)).fetchone()[0]
                db.execute("DELETE FROM records_fts WHERE rowid = ?", (rid,))
            for rev in revisions:
                self._put_revision(db, rev)
            for target, relation, created in marks:
                db.execute(
                    "INSERT OR IGNORE INTO relations (source_hex, target_hex, relation, created) VALUES (?,?,?,?)",
                    (record.hex, target, relation, created),
                )
            return True

    def marks_by(self, hexid: str) -> list[tuple[str, str, str]]:
        sql = "SELECT target_hex, relation, created FROM relations WHERE source_hex = ? ORDER BY created, target_hex"
        return self._guard(lambda db: [tuple(r) for r in db.execute(sql, (hexid,))])

    # -- what only SQLite has: the team outbox (``sync``) -------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction on the store's connection, for ``sync``; ``put`` writes a record
        (its row and indexes, no revision) inside it."""
        with self._write() as db:
            yield db

    def put(self, db: sqlite3.Connection, record: Record, derived: Derived) -> None:
        self._put(db, record, derived)

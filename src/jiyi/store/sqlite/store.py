"""``SQLiteStore``: the embedded store, one SQLite file in WAL mode under ``JIYI_HOME``.

The ``Store`` interface in parts, as the PostgreSQL store is split: records here, look-ups in
``search``, session state in ``sessions``, the full-text terms' version in ``lexical``, opening and
the guards that turn any SQLite failure into ``Unavailable`` in ``connection``.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...records import HUMAN_MARK, RECORD_COLUMNS, Record, Relation, Revision, now, record_from_columns
from ..base import (
    PURGED_TABLES,
    UNCONFIRMED_SQL,
    WRITE_COLUMNS,
    HumanMark,
    RecordFilter,
    Store,
    holds_words,
    write_values,
)
from .lexical import SQLiteLexical
from .search import SQLiteSearch
from .sessions import SQLiteSessions
from .signing import SQLiteSigning

if TYPE_CHECKING:
    from ...analysis.indexing import Derived

_RECORD_COLUMNS = RECORD_COLUMNS


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


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
        for target, relation in db.execute(
            f"SELECT hex, relation FROM human_marks WHERE hex IN ({marks}) ORDER BY created", chunk
        ):
            loaded.marks.setdefault(target, []).append(Relation(HUMAN_MARK, relation))
        for hexid, sig in db.execute(f"SELECT hex, sig FROM signatures WHERE hex IN ({marks})", chunk):
            loaded.signatures.setdefault(hexid, []).append(sig)
        for hexid, sym in db.execute(f"SELECT hex, symbol FROM symbols WHERE hex IN ({marks})", chunk):
            loaded.symbols.setdefault(hexid, []).append(sym)
    return loaded


# A text filter matching more records than this finds its page walking the update index instead of
# sorting them all (``find_records``).
_SORT_MATCHES = 5000


class SQLiteStore(SQLiteLexical, SQLiteSigning, SQLiteSearch, SQLiteSessions, Store):
    """The embedded store: one SQLite file in WAL mode under ``JIYI_HOME``, the ``Store`` interface
    whole (records here; look-ups in ``search``, sessions in ``sessions``, term versions in
    ``lexical``, signature versions in ``signing``, the connection in ``connection``)::

        store = SQLiteStore(Path(home) / "jiyi.db")
    """

    def __init__(self, path: Path, *, busy_timeout_ms: int = 5000, upgrade_on_open: bool = True) -> None:
        """``upgrade_on_open``: bring older terms and signatures up to date for a bounded while (up to
        ~0.2 s each, store/reindex.py); False where the caller waits on the open (the hook)."""
        super().__init__(path, busy_timeout_ms=busy_timeout_ms)
        if upgrade_on_open:
            self._upgrade_terms_on_open()
            self._resign_on_open()

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
        values = write_values(record, derived, _json)
        updates = ", ".join(f"{n} = excluded.{n}" for n in WRITE_COLUMNS if n not in ("hex", "created"))
        db.execute(
            f"INSERT INTO records ({', '.join(WRITE_COLUMNS)}) VALUES ({','.join('?' * len(values))}) "
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
        self.indexed_row(rid)

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
        self,
        *,
        limit: int = 50,
        offset: int = 0,
        project: str | None = None,
        include_forgotten: bool = False,
        only_forgotten: bool = False,
    ) -> list[Record]:
        where = ["forgotten = 1"] if only_forgotten else ["1=1"] if include_forgotten else ["forgotten = 0"]
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

    @staticmethod
    def _filtered(where: RecordFilter) -> tuple[str, list[Any]]:
        clauses = ["forgotten = 1" if where.forgotten else "forgotten = 0"]
        params: list[Any] = []
        for column in ("type", "scope", "origin", "project"):
            value = getattr(where, column)
            if value:
                clauses.append(f"{column} = ?")
                params.append(value)
        if where.unconfirmed:
            clauses.append(UNCONFIRMED_SQL)
            clauses.append(
                "NOT EXISTS (SELECT 1 FROM human_marks h WHERE h.hex = records.hex AND h.relation = 'wrong')"
            )
        return " AND ".join(clauses), params

    def find_records(self, where: RecordFilter, *, limit: int = 50, offset: int = 0) -> tuple[list[Record], int]:
        sql, params = self._filtered(where)
        words = where.words()
        if where.text and not words:
            return [], 0  # no word the index keeps: nothing holds it

        def page(db: sqlite3.Connection, found: list[int], skip: int = offset) -> tuple[list[tuple[Any, ...]], int]:
            rids = found[skip : skip + limit]
            marks = ",".join("?" * len(rids))
            by_rid = {
                row[0]: row[1:]
                for row in db.execute(f"SELECT rid, {_RECORD_COLUMNS} FROM records WHERE rid IN ({marks})", rids)
            }
            return [by_rid[rid] for rid in rids], len(found)

        def run(db: sqlite3.Connection) -> tuple[list[Record], int]:
            order = "ORDER BY updated DESC, rid DESC"
            if words and where.forgotten:
                # Forgotten records left the full-text index: their few are derived again here.
                rows = db.execute(
                    f"SELECT rid, title, what, why, loc, learned FROM records NOT INDEXED WHERE {sql} {order}", params
                ).fetchall()
                chosen, total = page(db, [r[0] for r in rows if holds_words(words, *r[1:])])
            elif words:
                from ...analysis.lexical import match_all

                matching = "rid IN (SELECT rowid FROM records_fts WHERE records_fts MATCH ?)"
                expression = match_all(words)
                count = "SELECT count(*) FROM records_fts WHERE records_fts MATCH ?"
                # The index holds the live records only, so with the words alone it counts them.
                total = -1 if params else int(db.execute(count, (expression,)).fetchone()[0])
                if total > _SORT_MATCHES:
                    # Many: the newest are found walking the update index (a word in 47 000 of 100 000
                    # records: 10 ms, where sorting all its matches took 70; a rare one 1-2 ms sorted,
                    # 5-17 ms walked).
                    found = db.execute(
                        f"SELECT rid FROM records INDEXED BY records_live WHERE {sql} AND {matching} "
                        f"{order} LIMIT ? OFFSET ?",
                        (expression, limit, offset),
                    ).fetchall()
                    chosen, _ = page(db, [r[0] for r in found], 0)
                else:  # few, or narrowed further: the records the index names are sorted by update
                    found = db.execute(
                        f"SELECT rid FROM records WHERE {matching} AND {sql} {order}", [expression, *params]
                    ).fetchall()
                    chosen, total = page(db, [r[0] for r in found])
            elif where.forgotten:
                # No index narrows these: one pass over the table finds them and their count.
                found = db.execute(f"SELECT rid FROM records NOT INDEXED WHERE {sql} {order}", params).fetchall()
                chosen, total = page(db, [r[0] for r in found])
            else:
                total = int(db.execute(f"SELECT count(*) FROM records WHERE {sql}", params).fetchone()[0])
                chosen = db.execute(
                    f"SELECT {_RECORD_COLUMNS} FROM records WHERE {sql} {order} LIMIT ? OFFSET ?",
                    [*params, limit, offset],
                ).fetchall()
            loaded = _load_indexes(db, [row[0] for row in chosen])
            return [self._row_to_record(db, row, loaded) for row in chosen], total

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

    def approve(self, hexid: str) -> bool:
        with self._write() as db:
            done = db.execute(
                "UPDATE records SET origin = 'human' WHERE hex = ? AND forgotten = 0 AND remote = 0 "
                "AND origin IN ('note', 'local_auto')",
                (hexid,),
            )
            return done.rowcount == 1

    def purge(self, hexid: str, *, compact: bool = True) -> bool:
        with self._write() as db:
            row = db.execute("SELECT rid FROM records WHERE hex = ?", (hexid,)).fetchone()
            if row is None:
                return False
            db.execute("DELETE FROM records_fts WHERE rowid = ?", (row[0],))
            for table in (*PURGED_TABLES, "records"):
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

    def mark(self, hexid: str, relation: str, reason: str) -> bool:
        with self._write() as db:
            if db.execute("SELECT 1 FROM records WHERE hex = ?", (hexid,)).fetchone() is None:
                return False
            db.execute(
                "INSERT INTO human_marks (hex, relation, reason, created) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(hex, relation) DO UPDATE SET reason = excluded.reason, created = excluded.created",
                (hexid, relation, reason, now()),
            )
            return True

    def unmark(self, hexid: str, relation: str) -> bool:
        with self._write() as db:
            done = db.execute("DELETE FROM human_marks WHERE hex = ? AND relation = ?", (hexid, relation))
            return done.rowcount == 1

    def human_marks(self, hexid: str) -> list[HumanMark]:
        sql = "SELECT relation, reason, created FROM human_marks WHERE hex = ? ORDER BY created"
        return self._guard(lambda db: [HumanMark(*row) for row in db.execute(sql, (hexid,))])

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
    def put(self, db: sqlite3.Connection, record: Record, derived: Derived) -> None:
        self._put(db, record, derived)

"""The version of the key-line rules a SQLite store's records were signed with, and re-signing
them in batches after the rules change (``indexing.SIGNATURE_VERSION``; the per-record policy is
``reindex.resigned``).

``store_meta.signature_version`` is the version every record was signed with (absent: 1, a store
made before versions were kept); ``signature_upgrade`` = "<version>:<rid>" while an upgrade is under
way: every record up to that rid has been looked at. As for the full-text terms (``lexical.py``),
each batch is one transaction, so an upgrade stopped anywhere loses nothing and resumes. Meanwhile a
record not yet re-signed keeps its old signatures: a new occurrence of its error is found by its
words and near key lines, only not by an exact signature where the rules changed its key line.
"""

from __future__ import annotations

import sqlite3
import time
from typing import TYPE_CHECKING, Any

from ...errors import Unavailable
from ...records import RECORD_COLUMNS, Record
from .connection import SQLiteConnection

if TYPE_CHECKING:
    from ...analysis.indexing import Derived

# On open, for at most this long: ~1 000 records here, all of most stores (the rest on later opens
# or by `jiyi reindex`). Analysing a record's text costs ~0.2 ms; most keep their key lines.
_SIGN_ON_OPEN_S = 0.2
_SIGN_BATCH = 200


class SQLiteSigning(SQLiteConnection):
    if TYPE_CHECKING:  # the record layer's, in store.py

        def _row_to_record(self, db: sqlite3.Connection, row: tuple[Any, ...]) -> Record: ...

        def _put(self, db: sqlite3.Connection, record: Record, derived: Derived) -> None: ...

    def _resign_on_open(self) -> None:
        from ...analysis.indexing import SIGNATURE_VERSION

        row = self._guard(
            lambda db: db.execute("SELECT value FROM store_meta WHERE key = 'signature_version'").fetchone()
        )
        if row is not None and int(row[0]) >= SIGNATURE_VERSION:
            return
        deadline = time.monotonic() + _SIGN_ON_OPEN_S
        try:
            while self.upgrade_signatures(_SIGN_BATCH) == _SIGN_BATCH and time.monotonic() < deadline:
                pass
        except Unavailable:
            pass  # another writer held the store past the timeout (or it is read-only): a later open goes on

    def signature_state(self) -> tuple[int, int]:
        """(version every record was signed with, records still to look at)."""
        from ...analysis.indexing import SIGNATURE_VERSION

        def run(db: sqlite3.Connection) -> tuple[int, int]:
            version, after = self._signature_cursor(db, SIGNATURE_VERSION)
            if version >= SIGNATURE_VERSION:
                return version, 0
            left = db.execute("SELECT count(*) FROM records WHERE rid > ? AND forgotten = 0", (after,)).fetchone()
            return version, int(left[0])

        return self._guard(run)

    @staticmethod
    def _signature_cursor(db: sqlite3.Connection, target: int) -> tuple[int, int]:
        meta = dict(db.execute("SELECT key, value FROM store_meta WHERE key LIKE 'signature_%'").fetchall())
        upgrade, _, after = str(meta.get("signature_upgrade", "")).partition(":")
        return int(meta.get("signature_version", 1)), int(after) if upgrade == str(target) else 0

    def upgrade_signatures(self, batch: int) -> int:
        """Look at up to ``batch`` more records in one transaction, re-signing those whose key lines
        the current rules choose or normalise otherwise; returns how many were looked at. When none
        is left the store is recorded as signed with indexing.SIGNATURE_VERSION."""
        from ...analysis.indexing import SIGNATURE_VERSION, derive
        from ..reindex import resigned, signed_alike

        if batch < 1:
            return 0
        with self._write() as db:
            version, after = self._signature_cursor(db, SIGNATURE_VERSION)
            if version >= SIGNATURE_VERSION:
                return 0
            rows = db.execute(
                f"SELECT rid, sig_algorithm, normalized, {RECORD_COLUMNS} FROM records "
                "WHERE rid > ? AND forgotten = 0 ORDER BY rid LIMIT ?",
                (after, batch),
            ).fetchall()
            for _rid, algorithm, normalized, *columns in rows:
                stored = tuple(_json_lines(normalized))
                record = self._row_to_record(db, tuple(columns))
                if signed_alike(record.what, algorithm or "", stored):
                    continue
                updated = resigned(record, algorithm or "", stored)
                self._put(db, updated, derive(updated))
            if len(rows) == batch:
                db.execute(
                    "INSERT OR REPLACE INTO store_meta (key, value) VALUES ('signature_upgrade', ?)",
                    (f"{SIGNATURE_VERSION}:{rows[-1][0]}",),
                )
            else:  # the last ones: records written from now on are signed with the current rules
                self._set_signature_version(db, SIGNATURE_VERSION)
        return len(rows)

    def signatures_rebuilt(self, version: int) -> None:
        """Record that every record was just signed with ``version`` (a full reindex)."""
        with self._write() as db:
            self._set_signature_version(db, version)

    @staticmethod
    def _set_signature_version(db: sqlite3.Connection, version: int) -> None:
        db.execute("INSERT OR REPLACE INTO store_meta (key, value) VALUES ('signature_version', ?)", (str(version),))
        db.execute("DELETE FROM store_meta WHERE key = 'signature_upgrade'")


def _json_lines(raw: str | None) -> list[str]:
    import json

    value = json.loads(raw or "[]")
    return [str(v) for v in value] if isinstance(value, list) else []

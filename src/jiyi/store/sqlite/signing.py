"""The version of the key-line rules a SQLite store's records were signed with, and re-signing
them in batches after the rules change (``indexing.SIGNATURE_VERSION``; the per-record policy is
``reindex.resigned``).

``store_meta.signature_version`` is the version every record was signed with (absent: 1, a store
made before versions were kept), and ``signature_upgrade`` the cursor of an upgrade under way, as for
the full-text terms (``SQLiteConnection._version_cursor``): each batch is one transaction, so an
upgrade stopped anywhere loses nothing and resumes. Meanwhile a
record not yet re-signed keeps its old signatures: a new occurrence of its error is found by its
words and near key lines, only not by an exact signature where the rules changed its key line.
"""

from __future__ import annotations

import json
import sqlite3
from typing import TYPE_CHECKING, Any

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

        self._upgrade_on_open("signature", SIGNATURE_VERSION, self.upgrade_signatures, _SIGN_BATCH, _SIGN_ON_OPEN_S)

    def signature_state(self) -> tuple[int, int]:
        """(version every record was signed with, records still to look at)."""
        from ...analysis.indexing import SIGNATURE_VERSION

        return self._version_state("signature", SIGNATURE_VERSION)

    def upgrade_signatures(self, batch: int) -> int:
        """Look at up to ``batch`` more records in one transaction, re-signing those whose key lines
        the current rules choose or normalise otherwise; returns how many were looked at. When none
        is left the store is recorded as signed with indexing.SIGNATURE_VERSION."""
        from ...analysis.indexing import SIGNATURE_VERSION, derive
        from ..reindex import resigned, signed_alike

        if batch < 1:
            return 0
        with self._write() as db:
            version, after = self._version_cursor(db, "signature", SIGNATURE_VERSION)
            if version >= SIGNATURE_VERSION:
                return 0
            rows = db.execute(
                "SELECT rid, hex, what, sig_algorithm, normalized, title FROM records "
                "WHERE rid > ? AND forgotten = 0 ORDER BY rid LIMIT ?",
                (after, batch),
            ).fetchall()
            for _rid, hexid, what, algorithm, normalized, title in rows:
                stored = tuple(json.loads(normalized or "[]"))
                # Most records keep their key lines: only their text is read, the rest of a record
                # (its signatures, symbols and marks: three more look-ups) only when it is re-signed.
                if signed_alike(what, algorithm or "", stored, title):
                    continue
                row = db.execute(f"SELECT {RECORD_COLUMNS} FROM records WHERE hex = ?", (hexid,)).fetchone()
                updated = resigned(self._row_to_record(db, row), algorithm or "", stored)
                self._put(db, updated, derive(updated))
            # The last ones done: records written from now on are signed with the current rules.
            self._upgraded_to(db, "signature", SIGNATURE_VERSION, rows[-1][0] if len(rows) == batch else None)
        return len(rows)

    def signatures_rebuilt(self, version: int) -> None:
        """Record that every record was just signed with ``version`` (a full reindex)."""
        with self._write() as db:
            self._upgraded_to(db, "signature", version, None)

"""The version of the full-text terms a SQLite store was built with, and re-deriving an older
index in batches (``reindex.upgrade_terms``; the same steps as ``store/postgres/lexical.py``).

``store_meta.lexical_version`` is the lexical.VERSION the whole index was built with;
``lexical_upgrade`` = "<version>:<rid>" while an upgrade is under way: every record up to that rid
has been re-derived. Each batch is one transaction, so an upgrade stopped anywhere (a killed
process, a full disk) loses nothing and resumes where it was.
"""

from __future__ import annotations

import json
import sqlite3
import time

from ...errors import Unavailable
from .connection import SQLiteConnection

# An older full-text index is re-derived on open, _UPGRADE_BATCH records a transaction (~40 ms
# here, so other writers wait little) for at most _UPGRADE_ON_OPEN_S: ~2 500 records, all of many
# stores. Measured at ~84 µs a record: 100 000 records take ~8 s in all (store/reindex.py).
_UPGRADE_BATCH = 500
_UPGRADE_ON_OPEN_S = 0.2


class SQLiteLexical(SQLiteConnection):
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
                "SELECT rid, title, what, why, loc, learned, key_lines FROM records WHERE rid > ? AND forgotten = 0 "
                "ORDER BY rid LIMIT ?",
                (after, batch),
            ).fetchall()
            for rid, title, what, why, loc, learned, key_lines in rows:
                # The key lines as stored when the record was signed: finding them again costs more
                # than everything else here.
                keys = tuple(json.loads(key_lines or "[]"))
                db.execute("DELETE FROM records_fts WHERE rowid = ?", (rid,))
                db.execute(
                    "INSERT INTO records_fts (rowid, title, body) VALUES (?, ?, ?)",
                    (rid, *lexical_index(title, what, why, loc, learned, keys)),
                )
                self.indexed_row(rid)
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

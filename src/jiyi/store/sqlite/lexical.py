"""The version of the full-text terms a SQLite store was built with, and re-deriving an older
index in batches (``reindex.upgrade_terms``; the same steps as ``store/postgres/lexical.py``).

``store_meta.lexical_version`` is the lexical.VERSION the whole index was built with, and
``lexical_upgrade`` the cursor of an upgrade under way (``SQLiteConnection._version_cursor``): each
batch is one transaction, so an upgrade stopped anywhere (a killed process, a full disk) loses
nothing and resumes where it was.
"""

from __future__ import annotations

import json

from .connection import SQLiteConnection

# An older full-text index is re-derived on open, _UPGRADE_BATCH records a transaction (~40 ms
# here, so other writers wait little) for at most _UPGRADE_ON_OPEN_S: ~2 500 records, all of many
# stores. Measured at ~84 µs a record: 100 000 records take ~8 s in all (store/reindex.py).
_UPGRADE_BATCH = 500
_UPGRADE_ON_OPEN_S = 0.2


class SQLiteLexical(SQLiteConnection):
    def _upgrade_terms_on_open(self) -> None:
        # An index built with older terms is brought up to date a bounded while on every open
        # (reindex.py says what search does meanwhile).
        from ...analysis.lexical import VERSION

        self._upgrade_on_open("lexical", VERSION, self.upgrade_lexical, _UPGRADE_BATCH, _UPGRADE_ON_OPEN_S)

    def lexical_state(self) -> tuple[int, int]:
        """(version the whole index was built with, records still to re-derive to lexical.VERSION)."""
        from ...analysis.lexical import VERSION

        return self._version_state("lexical", VERSION)

    def upgrade_lexical(self, batch: int) -> int:
        """Re-derive the full-text terms of up to ``batch`` more records in one transaction; returns
        how many. When none is left the index is recorded as built with lexical.VERSION."""
        from ...analysis.indexing import lexical_index
        from ...analysis.lexical import VERSION

        if batch < 1:
            return 0
        with self._write() as db:
            version, after = self._version_cursor(db, "lexical", VERSION)
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
            # The last ones done: records written from now on are derived with VERSION anyway.
            self._upgraded_to(db, "lexical", VERSION, rows[-1][0] if len(rows) == batch else None)
        self._common_terms.clear()  # the counts of terms changed under them
        return len(rows)

    def lexical_rebuilt(self, version: int) -> None:
        """Record that every record's terms were re-derived with ``version`` (a full reindex)."""
        with self._write() as db:
            self._upgraded_to(db, "lexical", version, None)
        self._common_terms.clear()

"""The version of the key-line rules a team's records were signed with on PostgreSQL, and re-signing
them after the rules change (``indexing.SIGNATURE_VERSION``; the ``Store`` methods
``signature_state`` / ``upgrade_signatures`` / ``signatures_rebuilt``, as the SQLite store's in
``store/sqlite/signing.py``; the per-record policy is ``reindex.resigned``).

``signature_versions`` (store.postgres.migrations m017) keeps, per team, the version its records were
signed with and the cursor of an upgrade under way, as ``lexical_versions`` does for the terms; the
batches take the same locks as the terms' (``lexical.py`` says why they are safe while servers
serve). A team's records come signed by the machines that pushed them; after a change of the rules a
record pushed before is re-signed here from its text, the signatures its writer's failure gave it
carried over, and gets a new ``seq``, so every member's next pull brings its new signatures.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...records import Record
from .database import Cursor
from .rows import SELECT, row_record
from .search import PgSearch

if TYPE_CHECKING:
    from ...analysis.indexing import Derived


class PgSigning(PgSearch):
    if TYPE_CHECKING:  # the record layer's, in store.py

        def put(self, cur: Cursor, record: Record, derived: Derived | None, *, author: str | None = None) -> None: ...

        def bump(self, cur: Cursor, hexids: list[str]) -> None: ...

    def _signing_key(self) -> str:
        return f"jiyi-signing:{self.db.schema}:{self.team}"

    def signature_state(self) -> tuple[int, int]:
        """(version every record was signed with, live records still to look at)."""
        from ...analysis.indexing import SIGNATURE_VERSION

        return self._version_state("signature_versions", SIGNATURE_VERSION)

    def upgrade_signatures(self, batch: int, *, wait: bool = True) -> int:
        """Look at up to ``batch`` more records in one transaction, re-signing those whose key lines
        the current rules choose or normalise otherwise; returns how many were looked at. With
        ``wait`` False, 0 at once when another process is re-signing this team right now."""
        from ...analysis.indexing import SIGNATURE_VERSION, derive
        from ..reindex import resigned, signed_alike

        if batch < 1:
            return 0
        with self.db.cursor() as cur:
            lock = "pg_advisory_xact_lock" if wait else "pg_try_advisory_xact_lock"
            cur.execute(f"SELECT {lock}(hashtextextended(%s, 0))::text", (self._signing_key(),))
            if cur.fetchone() == ("false",):
                return 0
            version, after = self._version_cursor(cur, "signature_versions", SIGNATURE_VERSION)
            if version >= SIGNATURE_VERSION:
                return 0
            cur.execute(
                "SELECT rid, hex, what, sig_algorithm, normalized, title FROM records WHERE team_id = %s "
                "AND rid > %s AND NOT forgotten ORDER BY rid LIMIT %s FOR UPDATE",
                (self.team, after, batch),
            )
            rows = cur.fetchall()
            # Most records keep their key lines: only their text is read, whole records (signatures,
            # symbols and marks as arrays) only for those re-signed.
            signed = {str(h): (str(a or ""), tuple(n or ())) for _rid, h, _what, a, n, _title in rows}
            redo = [h for (_rid, h, what, _a, _n, title) in rows if not signed_alike(what, *signed[h], title)]
            changed: list[str] = []
            if redo:
                cur.execute(f"SELECT {SELECT} FROM records r WHERE team_id = %s AND hex = ANY(%s)", (self.team, redo))
                for row in cur.fetchall():
                    record = row_record(row)
                    updated = resigned(record, *signed[record.hex])
                    self.put(cur, updated, derive(updated))
                    changed.append(updated.hex)
            if changed:
                self.bump(cur, changed)  # folds the term changes too
            if len(rows) == batch:
                self._set_version(cur, "signature_versions", version, SIGNATURE_VERSION, int(rows[-1][0]))
            else:  # the last ones: records pushed from now on are derived by current code
                self._set_version(cur, "signature_versions", SIGNATURE_VERSION, None, 0)
        self.vacuum_if_due()
        return len(rows)

    def signatures_rebuilt(self, version: int) -> None:
        """Record that every record was just signed with ``version`` (a full reindex)."""
        with self.db.cursor() as cur:
            self._set_version(cur, "signature_versions", version, None, 0)

"""The version of a team's full-text terms on PostgreSQL, and re-deriving an older index (the
``Store`` methods ``lexical_state`` / ``upgrade_lexical`` / ``lexical_rebuilt``, as the SQLite store's).

``lexical_versions`` (store.postgres.migrations m007) keeps, per team, the ``lexical.VERSION`` its vectors were
built with, and the cursor of an upgrade under way. Each batch is one short transaction that reads
the cursor, re-derives the next records by rid, moves the cursor and commits: an upgrade stopped
anywhere (a killed process, a lost connection) loses nothing and resumes where it was.

While servers serve: a batch locks its records' rows (``FOR UPDATE``, in rid order) before reading
their text, so a push of one of them waits for the batch (``BATCH``) and then writes its own terms
over ours, or went first and we read what it wrote; its vector is never derived from text it
replaced. A writer locking several rows in another order (``write_many``, an import) can meet a
batch in a deadlock: PostgreSQL aborts one of the two, and an aborted batch loses nothing. Term
counts stay exact by the same trigger as every write (``term_changes``: the old vector's terms out,
the new one's in), folded before the commit as a write's are. The batch takes neither the team's
``seq`` lock nor a new ``seq``: the records' content is unchanged, so pulls have nothing new to
fetch. One upgrader at a time per team: an advisory lock held for the batch.
"""

from __future__ import annotations

import logging

from .search import PgSearch, tsvector_text

log = logging.getLogger(__name__)


class PgLexical(PgSearch):
    def _lexical_key(self) -> str:
        return f"jiyi-lexical:{self.db.schema}:{self.team}"

    def lexical_state(self) -> tuple[int, int]:
        """(version the team's whole index was built with, live records still to re-derive)."""
        from ...analysis.lexical import VERSION

        return self._version_state("lexical_versions", VERSION)

    def upgrade_lexical(self, batch: int, *, wait: bool = True) -> int:
        """Re-derive the full-text terms of up to ``batch`` more records in one transaction; returns
        how many. When none is left the team's index is recorded as built with lexical.VERSION.
        With ``wait`` False, 0 at once when another process is upgrading this team right now."""
        from ...analysis import indexing
        from ...analysis.lexical import VERSION

        if batch < 1:
            return 0
        with self.db.cursor() as cur:
            lock = "pg_advisory_xact_lock" if wait else "pg_try_advisory_xact_lock"
            cur.execute(f"SELECT {lock}(hashtextextended(%s, 0))::text", (self._lexical_key(),))
            if cur.fetchone() == ("false",):
                return 0
            version, after = self._version_cursor(cur, "lexical_versions", VERSION)
            if version >= VERSION:
                return 0
            cur.execute(
                "SELECT rid, title, what, why, loc, learned, key_lines FROM records WHERE team_id = %s AND rid > %s "
                "AND NOT forgotten ORDER BY rid LIMIT %s FOR UPDATE",
                (self.team, after, batch),
            )
            rows = cur.fetchall()
            rids = [int(row[0]) for row in rows]
            # The key lines as stored when the record was signed (finding them again costs the most).
            vectors = [
                tsvector_text(*indexing.lexical_index(row[1], row[2], row[3], row[4], row[5], tuple(row[6] or ())))
                for row in rows
            ]
            # Only the vectors that changed are written: a record of ASCII words alone has the same
            # terms in both versions, and an unchanged row needs no new version in every index.
            cur.execute(
                "UPDATE records r SET tsv = v.tsv FROM (SELECT rid, tsv::tsvector AS tsv FROM "
                "unnest(%s::bigint[], %s::text[]) AS u(rid, tsv)) v WHERE r.team_id = %s AND r.rid = v.rid "
                "AND r.tsv IS DISTINCT FROM v.tsv",
                (rids, vectors, self.team),
            )
            if len(rows) == batch:
                self._set_version(cur, "lexical_versions", version, VERSION, rids[-1])
            else:  # the last ones: records written from now on are derived with VERSION anyway
                self._set_version(cur, "lexical_versions", VERSION, None, 0)
            self.fold_into(cur)
        self.vacuum_if_due()
        return len(rows)

    def lexical_rebuilt(self, version: int) -> None:
        """Record that every record's terms were re-derived with ``version`` (a full reindex)."""
        with self.db.cursor() as cur:
            self._set_version(cur, "lexical_versions", version, None, 0)

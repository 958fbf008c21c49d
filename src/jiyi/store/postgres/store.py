"""``PgStore(db, team)``: the ``Store`` interface on PostgreSQL, scoped to one team, for team memory.

Every statement names the team (primary keys start with ``team_id``), so one database holds many
teams and none can read, search or change another's records. The parts: records here (their rows
in ``rows``), look-ups and full text in ``search``, the full-text terms' version in
``store.postgres.lexical``, the key-line rules' version in ``signing``, sessions in ``sessions``, and
the team server's own operations (merge a push, changes since a cursor, verifications) in
``store.postgres.team``, exposed here as methods.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from psycopg.types.json import Jsonb

from ...records import Record, Revision, now
from ..base import PURGED_TABLES, UNCONFIRMED_SQL, HumanMark, Indexed, RecordFilter, Store, holds_words
from .database import Cursor, Member, PgDatabase, Team
from .keys import PgKeys
from .lexical import PgLexical
from .rows import PUT_AUTHORED_SQL, PUT_SQL, SELECT, record_row, row_record
from .search import MATCHES, fields_of
from .sessions import PgSessions
from .signing import PgSigning

if TYPE_CHECKING:
    from ...analysis.indexing import Derived

__all__ = ["Member", "PgDatabase", "PgStore", "Team"]


# A search's candidates read whole with their vectors (``PgStore.indexed``), the condition on hex to
# follow, after a first column of the statement's own.
_INDEXED = f"r.tsv::text, r.normalized, {SELECT} FROM records r WHERE team_id = %(team)s AND tsv IS NOT NULL AND"
_TOPIC_MUTEXES: weakref.WeakKeyDictionary[PgDatabase, threading.Lock] = weakref.WeakKeyDictionary()
_MUTEXES_GUARD = threading.Lock()


def _topic_mutex(db: PgDatabase) -> threading.Lock:
    with _MUTEXES_GUARD:
        return _TOPIC_MUTEXES.setdefault(db, threading.Lock())


class PgStore(PgLexical, PgSigning, PgKeys, PgSessions, Store):
    """The records of team ``team`` (its id) in ``db``. Safe to share between threads: each call
    takes a pooled connection for one transaction.

    Writes, imports, re-indexing and forgetting move the record's ``seq`` (``bump``), as merges
    and verifications do; a session's counters (``add_evidence``, ``resolve_failure``) do not:
    on the server evidence arrives by ``merge_pushed``, as each member's absolute values."""

    def __init__(self, db: PgDatabase, team: int) -> None:
        self.db = db
        self.team = team
        self.path = f"{db.description}/team={team}"

    # -- plumbing ----------------------------------------------------------------------------
    def close(self) -> None:
        """The pool belongs to ``db`` (shared by every team's store): closing one store keeps it."""

    def applied_migrations(self) -> list[tuple[str, str]]:
        return self.db.applied_migrations()

    def pending_migrations(self) -> list[str]:
        return self.db.pending_migrations()

    def integrity_check(self) -> list[str]:
        problems: list[str] = []
        counted = self.term_stats([]).total
        with self.db.cursor() as cur:
            cur.execute("SELECT count(*) FROM records WHERE team_id = %s AND tsv IS NOT NULL", (self.team,))
            indexed = int(cur.fetchone()[0])  # type: ignore[index]
            if counted != indexed:
                problems.append(f"term counts: {counted} indexed records counted, {indexed} found")
            cur.execute(
                "SELECT count(*) FROM records WHERE team_id = %s AND (forgotten = (tsv IS NOT NULL))", (self.team,)
            )
            if wrong := int(cur.fetchone()[0]):  # type: ignore[index]
                problems.append(f"full-text index: {wrong} records indexed when forgotten or not when live")
        return problems

    @contextmanager
    def writing(self) -> Iterator[Cursor]:
        """A write's transaction, and once it committed the term queue's clean-up when due."""
        with self.db.cursor() as cur:
            yield cur
        self.vacuum_if_due()

    def bump(self, cur: Cursor, hexids: list[str]) -> None:
        """Give the records a new ``seq``, last in the transaction and under the team's lock, so a
        pull never skips a change that commits late (seq order is commit order). The term changes
        are folded just before, on the same connection: a fold after the commit took a second
        pooled connection per push, and under load each check-out waits its turn again."""
        self.fold_into(cur)
        cur.execute("SELECT pg_advisory_xact_lock(%s, %s::int)", (self.db.lock_class, self.team))
        cur.execute(
            "UPDATE records SET seq = nextval('record_seq') WHERE team_id = %s AND hex = ANY(%s)", (self.team, hexids)
        )

    # -- records -----------------------------------------------------------------------------
    def _select(self, where: str, params: Iterable[Any], tail: str = "") -> list[Record]:
        # One statement: each record's signatures, symbols and marks come as arrays of its row
        # (were three more statements, a round trip each, for every load).
        with self.reading() as cur:
            cur.execute(f"SELECT {SELECT} FROM records r WHERE team_id = %s AND {where} {tail}", (self.team, *params))
            return [row_record(row) for row in cur.fetchall()]

    def get(self, hexid: str, *, include_forgotten: bool = False) -> Record | None:
        found = self._select("hex = %s" + ("" if include_forgotten else " AND NOT forgotten"), (hexid,))
        return found[0] if found else None

    def get_many(self, hexids: Iterable[str]) -> list[Record]:
        wanted = list(dict.fromkeys(hexids))
        if not wanted:
            return []
        # In one search, the candidates ``indexed`` read whole, in the order the database gave them
        # (as ``_select`` would: equal scores keep the order loaded, ranking.rank).
        kept = self._rows or {}
        chosen = set(wanted)
        found = [r for h, row in kept.items() if h in chosen and not (r := row_record(row)).forgotten]
        rest = [h for h in wanted if h not in kept]
        return found + (self._select("NOT forgotten AND hex = ANY(%s)", (rest,)) if rest else [])

    def indexed(self, hexids: Iterable[str], terms: Iterable[str] | None = None) -> dict[str, Indexed]:
        if self._search is None:
            return super().indexed(hexids, terms)
        keys = list(dict.fromkeys(hexids))
        if not keys:
            return {}
        # In one search (``one_connection``) the candidates' whole rows come with their vectors, kept
        # for ``get_many``: ranking loads most of them next (~34 of ~44), and one statement took
        # 1.15 ms in SQL where the two took 2.0 with the keys' subqueries (m018_record_keys), 2.55 ms
        # a search in all against 3.53 (bench/team_scale.py --direct, 100 000 records).
        with self.reading() as cur:
            cur.execute(f"SELECT NULL, {_INDEXED} hex = ANY(%(hexes)s)", {"team": self.team, "hexes": keys})
            return self._keep(cur.fetchall(), terms)

    def by_terms_indexed(
        self, terms: list[str], limit: int, hexids: Iterable[str], read: Iterable[str] | None = None
    ) -> tuple[list[str], dict[str, Indexed]]:
        params = self.matches(terms, limit)
        if self._search is None or params is None:
            return super().by_terms_indexed(terms, limit, hexids, read)
        # In one search, the matches and the rows of them and of ``hexids`` in one statement, each row
        # with its match's place (NULL: not matched): one round trip less for ~0.1 ms more of
        # PostgreSQL's own work (a place looked up in the matches row by row cost 0.2 ms, hence
        # array_position). Search p50 5.24 ms against 5.41 for the two statements, client CPU 3.51
        # against 3.63 ms a search (the queries of bench/team_scale.py --records 100000 --direct,
        # 12 alternating rounds of 300 searches each).
        with self.reading() as cur:
            cur.execute(
                f"WITH found AS MATERIALIZED (SELECT ARRAY(SELECT hex FROM ({MATCHES}) m ORDER BY score DESC, "
                f"rid DESC) AS hexes) SELECT array_position((SELECT hexes FROM found), r.hex), {_INDEXED} "
                f"hex = ANY((SELECT hexes FROM found) || %(hexes)s::text[])",
                {**params, "hexes": list(dict.fromkeys(hexids))},
            )
            rows = cur.fetchall()
        found = sorted((row[0], row[3]) for row in rows if row[0] is not None)
        return [h for _, h in found], self._keep(rows, read)

    def _keep(self, rows: list[tuple[Any, ...]], terms: Iterable[str] | None) -> dict[str, Indexed]:
        """``indexed`` of ``_INDEXED`` rows, their records' rows kept for ``get_many`` in hex order (the
        primary key's, as an index scan of ``hex = ANY(...)`` gives them: equal scores keep it)."""
        rows.sort(key=lambda row: row[3])
        self._rows = {row[3]: row[3:] for row in rows}  # COLUMNS start with hex
        return fields_of(((row[3], row[1], row[2]) for row in rows), terms)

    def find_topic(self, topic_key: str, scope: str, project_key: str) -> Record | None:
        # Local records only: a note never revises a record pulled from the team (team-protocol.md).
        topic_scope = project_key if scope == "project" else ""
        found = self._select(
            "topic_key = %s AND scope = %s AND topic_scope = %s AND NOT forgotten AND NOT remote",
            (topic_key, scope, topic_scope),
            "ORDER BY updated DESC LIMIT 1",
        )
        return found[0] if found else None

    @contextmanager
    def topic_lock(self, topic_key: str, scope: str, project_key: str) -> Iterator[None]:
        # A transaction-scoped advisory lock on a connection of its own, held while the look-up and
        # the write run on others: the one-key form is a key space apart from the team's two-key
        # lock in ``bump``. Without it, 8 connections writing one topic at once made several records
        # of it and clashed on revision numbers.
        # The threads of this process queue on a mutex first, so that at most one pooled connection
        # waits on the database's lock: threads each holding one while the holder needs a second
        # would starve a small pool.
        key = "\x1f".join((self.db.schema, str(self.team), topic_key, scope, project_key if scope == "project" else ""))
        with _topic_mutex(self.db), self.db.cursor() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (key,))
            yield

    def put(self, cur: Cursor, record: Record, derived: Derived | None, *, author: str | None = None) -> None:
        """Insert or replace ``record``'s row, signatures, symbols and full text (not its revisions);
        ``author``, the member of a push, is stored only when the row is new."""
        row = record_row(self.team, record, derived)
        if author is None:
            cur.execute(PUT_SQL, row)
        else:
            cur.execute(PUT_AUTHORED_SQL, (row[0], author, *row[1:]))
        for table, column, values in (("signatures", "sig", record.signatures), ("symbols", "symbol", record.symbols)):
            cur.execute(f"DELETE FROM {table} WHERE team_id = %s AND hex = %s", (self.team, record.hex))
            if values and not record.forgotten:
                cur.execute(
                    f"INSERT INTO {table} (team_id, {column}, hex) SELECT %s, v, %s FROM unnest(%s::text[]) v "
                    "ON CONFLICT DO NOTHING",
                    (self.team, record.hex, list(values)),
                )

    def put_revisions(self, cur: Cursor, revisions: Iterable[Revision]) -> int:
        """Add the revisions that are not there yet; how many were added."""
        revs = list(revisions)
        if not revs:
            return 0
        cur.execute(
            "INSERT INTO revisions (team_id, hex, revision, session_id, created, change, snapshot) "
            "SELECT %s, * FROM unnest(%s::text[], %s::int[], %s::text[], %s::text[], %s::text[], %s::jsonb[]) "
            "ON CONFLICT DO NOTHING",
            (
                self.team,
                [r.hex for r in revs],
                [r.revision for r in revs],
                [r.session_id for r in revs],
                [r.created for r in revs],
                [r.change for r in revs],
                [Jsonb(r.snapshot) for r in revs],
            ),
        )
        return cur.rowcount

    def put_marks(self, cur: Cursor, source: str, marks: Iterable[tuple[str, str, str]]) -> int:
        """Add the (target, relation, created) marks ``source`` made that are not there yet."""
        given = list(marks)
        if not given:
            return 0
        cur.execute(
            "INSERT INTO relations (team_id, source_hex, target_hex, relation, created) "
            "SELECT %s, %s, * FROM unnest(%s::text[], %s::text[], %s::text[]) ON CONFLICT DO NOTHING",
            (self.team, source, [m[0] for m in given], [m[1] for m in given], [m[2] for m in given]),
        )
        return cur.rowcount

    def write_record(
        self,
        record: Record,
        revision: Revision,
        derived: Derived,
        *,
        marks: Iterable[tuple[str, str]] = (),
        session_id: str | None = None,
    ) -> None:
        with self.writing() as cur:
            self.put(cur, record, derived)
            cur.execute(
                "INSERT INTO revisions (team_id, hex, revision, session_id, created, change, snapshot) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s)",
                (self.team, revision.hex, revision.revision, revision.session_id, revision.created, revision.change,
                 Jsonb(revision.snapshot)),
            )  # fmt: skip
            self.put_marks(cur, record.hex, [(t, r, revision.created) for t, r in marks])
            if session_id:
                cur.execute(
                    "INSERT INTO session_notes (team_id, session_id, hex, at, last_at) VALUES (%s, %s, %s, %s, %s) "
                    "ON CONFLICT (team_id, session_id, hex) DO UPDATE SET last_at = excluded.last_at",
                    (self.team, session_id, record.hex, revision.created, revision.created),
                )
            self.bump(cur, [record.hex])

    def write_many(self, items: Iterable[tuple[Record, Revision, Derived]]) -> int:
        written: list[str] = []
        with self.writing() as cur:
            for record, revision, derived in items:
                self.put(cur, record, derived)
                cur.execute(
                    "INSERT INTO revisions (team_id, hex, revision, session_id, created, change, snapshot) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s)",
                    (self.team, revision.hex, revision.revision, revision.session_id, revision.created,
                     revision.change, Jsonb(revision.snapshot)),
                )  # fmt: skip
                written.append(record.hex)
            self.bump(cur, written)
        return len(written)

    def signed_with(self, hexid: str) -> tuple[str, tuple[str, ...]]:
        with self.db.cursor() as cur:
            cur.execute(
                "SELECT sig_algorithm, normalized FROM records WHERE team_id = %s AND hex = %s", (self.team, hexid)
            )
            row = cur.fetchone()
        return ("", ()) if row is None else (str(row[0]), tuple(row[1]))

    def reindex_record(self, record: Record, derived: Derived) -> None:
        with self.writing() as cur:
            self.put(cur, record, derived)
            self.bump(cur, [record.hex])

    def revisions(self, hexid: str) -> list[Revision]:
        with self.db.cursor() as cur:
            cur.execute(
                "SELECT hex, revision, session_id, created, change, snapshot FROM revisions "
                "WHERE team_id = %s AND hex = %s ORDER BY revision",
                (self.team, hexid),
            )
            return [Revision(*row) for row in cur.fetchall()]

    def list_records(
        self,
        *,
        limit: int = 50,
        offset: int = 0,
        project: str | None = None,
        include_forgotten: bool = False,
        only_forgotten: bool = False,
    ) -> list[Record]:
        where = "forgotten" if only_forgotten else "true" if include_forgotten else "NOT forgotten"
        params: list[Any] = []
        if project is not None:
            where += " AND project = %s"
            params.append(project)
        return self._select(where, [*params, limit, offset], "ORDER BY updated DESC, rid DESC LIMIT %s OFFSET %s")

    @staticmethod
    def _filtered(where: RecordFilter) -> tuple[str, list[Any]]:
        clauses = ["forgotten" if where.forgotten else "NOT forgotten"]
        params: list[Any] = []
        for column in ("type", "scope", "origin", "project"):
            value = getattr(where, column)
            if value:
                clauses.append(f"{column} = %s")
                params.append(value)
        if where.unconfirmed:
            clauses.append(UNCONFIRMED_SQL.replace("%", "%%"))  # a literal percent among psycopg's placeholders
            clauses.append(
                "NOT EXISTS (SELECT 1 FROM human_marks h WHERE h.team_id = r.team_id AND h.hex = r.hex "
                "AND h.relation = 'wrong')"
            )
        words = where.words()
        if words and not where.forgotten:  # forgotten records left the index (tsv is NULL)
            from .search import lexeme

            clauses.append("tsv @@ %s::tsquery")
            params.append(" & ".join(lexeme(w) for w in words))
        return " AND ".join(clauses), params

    def find_records(self, where: RecordFilter, *, limit: int = 50, offset: int = 0) -> tuple[list[Record], int]:
        words = where.words()
        if where.text and not words:
            return [], 0  # no word the index keeps: nothing holds it
        sql, params = self._filtered(where)
        if words and where.forgotten:
            # The forgotten ones' few are derived again here (``holds_words``).
            with self.reading() as cur:
                cur.execute(
                    f"SELECT hex, title, what, why, loc, learned FROM records r WHERE team_id = %s AND {sql} "
                    "ORDER BY updated DESC, rid DESC",
                    (self.team, *params),
                )
                matched = [row[0] for row in cur.fetchall() if holds_words(words, *row[1:])]
            chosen = matched[offset : offset + limit]
            by_hex = {r.hex: r for r in self._select("hex = ANY(%s)", (chosen,))}
            return [by_hex[h] for h in chosen], len(matched)
        found = self._select(sql, [*params, limit, offset], "ORDER BY updated DESC, rid DESC LIMIT %s OFFSET %s")
        with self.db.cursor() as cur:
            cur.execute(f"SELECT count(*) FROM records r WHERE team_id = %s AND {sql}", (self.team, *params))
            return found, int(cur.fetchone()[0])  # type: ignore[index]

    def iter_records(self, *, include_forgotten: bool = False) -> Iterator[Record]:
        last = 0
        flt = "" if include_forgotten else " AND NOT forgotten"
        while True:
            with self.db.cursor() as cur:
                cur.execute(
                    f"SELECT rid, {SELECT} FROM records r WHERE team_id = %s AND rid > %s{flt} ORDER BY rid LIMIT 500",
                    (self.team, last),
                )
                rows = cur.fetchall()
            if not rows:
                return
            yield from (row_record(row[1:]) for row in rows)
            last = rows[-1][0]

    def count(self, *, include_forgotten: bool = False) -> int:
        flt = "" if include_forgotten else " AND NOT forgotten"
        with self.db.cursor() as cur:
            cur.execute(f"SELECT count(*) FROM records WHERE team_id = %s{flt}", (self.team,))
            return int(cur.fetchone()[0])  # type: ignore[index]

    def approve(self, hexid: str) -> bool:
        with self.writing() as cur:
            cur.execute(
                "UPDATE records SET origin = 'human' WHERE team_id = %s AND hex = %s AND NOT forgotten "
                "AND NOT remote AND origin IN ('note', 'local_auto')",
                (self.team, hexid),
            )
            if cur.rowcount != 1:
                return False
            self.bump(cur, [hexid])
            return True

    def forget(self, hexid: str) -> bool:
        with self.writing() as cur:
            cur.execute(
                "UPDATE records SET forgotten = true, updated = %s, tsv = NULL, sigs = '{}', syms = '{}' "
                "WHERE team_id = %s AND hex = %s AND NOT forgotten",
                (now(), self.team, hexid),
            )
            if cur.rowcount != 1:
                return False
            for table in ("signatures", "symbols"):
                cur.execute(f"DELETE FROM {table} WHERE team_id = %s AND hex = %s", (self.team, hexid))
            self.bump(cur, [hexid])
            return True

    def purge(self, hexid: str) -> bool:
        # PostgreSQL keeps a deleted row's bytes until VACUUM reuses the page; autovacuum does that
        # for these tables, and `VACUUM` right away is the database administrator's call.
        with self.writing() as cur:
            cur.execute("DELETE FROM records WHERE team_id = %s AND hex = %s", (self.team, hexid))
            if cur.rowcount != 1:
                return False
            for table in (*PURGED_TABLES, "evidence", "verifications"):
                cur.execute(f"DELETE FROM {table} WHERE team_id = %s AND hex = %s", (self.team, hexid))
            cur.execute(
                "DELETE FROM relations WHERE team_id = %s AND (source_hex = %s OR target_hex = %s)",
                (self.team, hexid, hexid),
            )
            self.fold_into(cur)  # no seq to move (the record is gone); its term counts still move
            return True

    def mark(self, hexid: str, relation: str, reason: str) -> bool:
        with self.writing() as cur:
            cur.execute("SELECT 1 FROM records WHERE team_id = %s AND hex = %s", (self.team, hexid))
            if cur.fetchone() is None:
                return False
            cur.execute(
                "INSERT INTO human_marks (team_id, hex, relation, reason, created) VALUES (%s, %s, %s, %s, %s) "
                "ON CONFLICT (team_id, hex, relation) DO UPDATE SET reason = excluded.reason, "
                "created = excluded.created",
                (self.team, hexid, relation, reason, now()),
            )
            return True

    def unmark(self, hexid: str, relation: str) -> bool:
        with self.writing() as cur:
            cur.execute(
                "DELETE FROM human_marks WHERE team_id = %s AND hex = %s AND relation = %s",
                (self.team, hexid, relation),
            )
            return cur.rowcount == 1

    def human_marks(self, hexid: str) -> list[HumanMark]:
        with self.db.cursor() as cur:
            cur.execute(
                "SELECT relation, reason, created FROM human_marks WHERE team_id = %s AND hex = %s ORDER BY created",
                (self.team, hexid),
            )
            return [HumanMark(*row) for row in cur.fetchall()]

    def add_evidence(
        self, hexid: str, *, sources: int = 0, used_success: int = 0, session_id: str | None = None
    ) -> None:
        with self.db.cursor() as cur:
            if session_id is not None:
                cur.execute(
                    "INSERT INTO record_confirmations (team_id, hex, session_id, at) VALUES (%s, %s, %s, %s) "
                    "ON CONFLICT DO NOTHING",
                    (self.team, hexid, session_id, now()),
                )
                if cur.rowcount != 1:
                    sources = 0  # this session confirmed it before
            cur.execute(
                "UPDATE records SET sources = sources + %s, used_success = used_success + %s "
                "WHERE team_id = %s AND hex = %s",
                (sources, used_success, self.team, hexid),
            )

    def stats(self) -> dict[str, Any]:
        with self.db.cursor() as cur:

            def one(sql: str) -> int:
                cur.execute(sql, (self.team,))
                return int(cur.fetchone()[0])  # type: ignore[index]

            def by(col: str) -> dict[str, int]:
                cur.execute(
                    f"SELECT {col}, count(*) FROM records WHERE team_id = %s AND NOT forgotten "
                    f"GROUP BY {col} ORDER BY 2 DESC, 1",
                    (self.team,),
                )
                return {str(k): int(v) for k, v in cur.fetchall()}

            return {
                "records": one("SELECT count(*) FROM records WHERE team_id = %s AND NOT forgotten"),
                "forgotten": one("SELECT count(*) FROM records WHERE team_id = %s AND forgotten"),
                "revisions": one("SELECT count(*) FROM revisions WHERE team_id = %s"),
                "sessions": one("SELECT count(*) FROM sessions WHERE team_id = %s"),
                "by_type": by("type"),
                "by_origin": by("origin"),
                "by_project": by("project"),
            }

    # -- transfer ----------------------------------------------------------------------------
    def import_record(
        self, record: Record, revisions: list[Revision], marks: list[tuple[str, str, str]], derived: Derived
    ) -> bool:
        with self.writing() as cur:
            cur.execute("SELECT 1 FROM records WHERE team_id = %s AND hex = %s", (self.team, record.hex))
            if cur.fetchone():
                return False
            self.put(cur, record, derived)
            self.put_revisions(cur, revisions)
            self.put_marks(cur, record.hex, marks)
            self.bump(cur, [record.hex])
            return True

    def marks_by(self, hexid: str) -> list[tuple[str, str, str]]:
        with self.db.cursor() as cur:
            cur.execute(
                "SELECT target_hex, relation, created FROM relations WHERE team_id = %s AND source_hex = %s "
                "ORDER BY created, target_hex",
                (self.team, hexid),
            )
            return [(str(t), str(r), str(c)) for t, r, c in cur.fetchall()]

"""Look-ups of ``PgStore`` (the search half of ``Store``): signatures and symbols in their own
tables with the SQLite store's common-key bounding, and full text as a ``tsvector`` of jiyi's own
lexical terms.

The vector is built here, not by a PostgreSQL text-search parser, so its terms are exactly those
SQLite's FTS5 indexes (no stemming; ``pthread_create`` one term, CJK bigrams as they are); a query
is quoted lexemes OR-ed, so no text ever reaches tsquery syntax. Document counts per term come from
the ``terms`` table (``ts_stat`` would read every vector) plus the changes a trigger appended to
``term_changes`` that ``fold_terms`` has not moved there yet (``store.postgres.migrations`` m004).
"""

from __future__ import annotations

import copy
import logging
import re
import threading
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING, Any

import psycopg

from .. import base
from ..base import Indexed, TermStats
from .database import Cursor, PgDatabase

if TYPE_CHECKING:
    from typing_extensions import Self

_MAX_POSITION = 16383  # tsvector positions stop here
_MAX_POSITIONS = 255  # a lexeme keeps at most this many
# ts_rank's weights are {D, C, B, A}: the title (A) counts twice the body (D), as bm25(2.0, 1.0).
_RANK_WEIGHTS = "{0.5,0.5,0.5,1.0}"
# Every fold leaves its rows dead in term_changes, and an index scan or the next fold's delete still
# reads them until a VACUUM: with autovacuum off, 74 000 dead rows after ~5 000 pushes at 1 000 000
# records made each fold's delete 4.5 ms and term_stats 2 ms (bench/team_scale.py). So a process
# vacuums the queue itself after folding this many rows (m005 asks autovacuum for the same).
_VACUUM_AFTER = 5000
_FOLDED: dict[str, int] = {}  # rows folded per schema by this process since its last VACUUM
_FOLDED_LOCK = threading.Lock()
log = logging.getLogger(__name__)
# Symbol counts of base.SYMBOL_COUNT_CACHED records or more, per (schema, team): symbol -> (records,
# team size then), kept while the team grows by under 1 % (base.counted_symbols, as SQLite keeps its own).
_SYMBOL_COUNTS: dict[tuple[str, int], dict[str, tuple[int, int]]] = {}
# One lexeme of a tsvector's text: 'term':1A,5 (weight A: the title and key lines, tsvector_text).
_TSV_LEXEME = re.compile(r"'((?:[^']|'')*)'(?::([0-9A-D,]+))?")


# Documents per term of ``%(terms)s`` (the term "" counts the records): ``terms`` and the changes not
# folded yet, in one statement, so one snapshot: a fold commits its delete and its add together.
_TERM_COUNTS = (
    "SELECT term, sum(docs)::bigint AS docs FROM (SELECT term, docs FROM terms WHERE team_id = %(team)s "
    "AND term = ANY(%(terms)s) UNION ALL SELECT term, n FROM term_changes WHERE team_id = %(team)s "
    "AND term = ANY(%(terms)s)) c GROUP BY term"
)


# Counts of the symbols ``%(uncounted)s`` as rows (-1, count, symbol, NULL), each stopping at the cap
# base.counted_symbols puts on it from the team's size (the term "" counts the records), read in the
# same statement as that size: ``PgSearch.term_stats_and_keys`` adds them to its own rows.
_SYMBOL_COUNTS_WITH = (
    " UNION ALL SELECT -1, (SELECT count(*) FROM (SELECT 1 FROM symbols WHERE team_id = %(team)s AND symbol = k "
    "LIMIT (SELECT floor(coalesce(sum(n), 0)::float8 * %(share)s::float8)::bigint + 1 FROM (SELECT docs AS n "
    "FROM terms WHERE team_id = %(team)s AND term = '' UNION ALL SELECT n FROM term_changes "
    "WHERE team_id = %(team)s AND term = '') t)) c), k, NULL FROM unnest(%(uncounted)s::text[]) k"
)


def _term_stats(asked: list[str], counted: Iterable[tuple[str, int]]) -> TermStats:
    found = {str(t): int(d) for t, d in counted}
    return TermStats(found.pop("", 0), {t: found.get(t, 0) for t in asked})


# A full-text look-up's matches (hex, rid, score), best first: ranked among at most base.TERM_SCAN, as
# each costs a heap read of its vector, and a term on 61 000 of 1 000 000 records took 370 ms to rank
# in full (bench/team_scale.py). Parameters: ``PgSearch.matches``.
MATCHES = (
    "SELECT hex, rid, ts_rank(%(weights)s::real[], tsv, %(query)s::tsquery, 1) AS score FROM (SELECT hex, rid, tsv "
    "FROM records WHERE team_id = %(team)s AND tsv @@ %(query)s::tsquery LIMIT %(scan)s) m "
    "ORDER BY score DESC, rid DESC LIMIT %(limit)s"
)


def _lookup_sql(
    table: str, column: str, keys: list[str], limit: int, *, only_rare: bool, team: int, tag: str
) -> tuple[str, dict[str, object]]:
    """``PgSearch._lookup``'s query (``hex``, ``pos``) and its parameters, each named with ``tag``
    so that two can share one statement (``PgSearch.by_keys``).

    As the SQLite store's _lookup: a key on thousands of records names no particular one; when rarer
    keys are asked for too (or, with ``only_rare``, always) only they are looked up, all their
    records read from the key's index alone, records sharing most keys first (no join with records,
    as the SQLite store). With only common keys: the most recent of a bounded sample of their records
    (index order). One branch answers."""
    p = {n: f"%({n}{tag})s" for n in ("keys", "team", "bound", "limit", "common", "sample")}
    rare = (
        f"(SELECT array_agg(k) FROM unnest({p['keys']}::text[]) k "
        f"WHERE (SELECT count(*) FROM (SELECT 1 FROM {table} WHERE team_id = {p['team']} AND {column} = k "
        f"LIMIT {p['bound']} + 1) c) <= {p['bound']})"
    )
    sql = (
        f"WITH rare{tag} AS MATERIALIZED (SELECT {rare} AS keys) "
        f"(SELECT hex, row_number() OVER (ORDER BY count(*) DESC, hex) AS pos FROM {table} "
        f"WHERE team_id = {p['team']} AND {column} = ANY((SELECT keys FROM rare{tag})::text[]) GROUP BY hex "
        f"ORDER BY pos LIMIT {p['limit']}) "
        f"UNION ALL "
        f"(SELECT t.hex, row_number() OVER (ORDER BY count(*) DESC, max(r.updated) DESC) FROM "
        f"(SELECT hex FROM {table} WHERE {p['common']} AND (SELECT keys FROM rare{tag}) IS NULL "
        f"AND team_id = {p['team']} AND {column} = ANY({p['keys']}) LIMIT {p['sample']}) t "
        f"JOIN records r ON r.team_id = {p['team']} AND r.hex = t.hex GROUP BY t.hex "
        f"ORDER BY 2 LIMIT {p['limit']})"
    )
    values = {
        "keys": keys,
        "team": team,
        "bound": base.COMMON_KEY_RECORDS,
        "limit": limit,
        "common": not only_rare,
        "sample": base.COMMON_SAMPLE * limit,
    }
    return sql, {f"{n}{tag}": v for n, v in values.items()}


def lexeme(term: str) -> str:
    """``term`` quoted as one tsvector / tsquery lexeme: nothing in it is read as syntax."""
    return "'" + term.replace("\\", "\\\\").replace("'", "''") + "'"


def tsvector_text(index_title: str, index_body: str) -> str:
    """The tsvector (as text) of a record's indexed terms, with positions so ts_rank sees frequency."""
    positions: dict[str, list[str]] = {}
    position = 0
    for weight, text in (("A", index_title), ("", index_body)):
        for term in text.split():
            position = min(position + 1, _MAX_POSITION)
            kept = positions.setdefault(term, [])
            if len(kept) < _MAX_POSITIONS:
                kept.append(f"{position}{weight}")
    return " ".join(f"{lexeme(t)}:{','.join(p)}" for t, p in positions.items())


def tsquery_text(terms: Iterable[str]) -> str:
    return " | ".join(lexeme(t) for t in dict.fromkeys(terms) if t.strip())


class PgSearch:
    db: PgDatabase
    team: int

    # Set on the copy ``one_connection`` gives to rank with: every look-up of one search then runs on
    # one pooled connection, each statement committing on its own (PgDatabase.statements). Before,
    # each took its own (~6 check-outs, each a liveness check, BEGIN and COMMIT: ~28 round trips a
    # search; bench/team_scale.py). The connection is taken at the first look-up, not before the
    # query's analysis: under load the pool is the queue, and a connection held while Python works
    # keeps the others waiting.
    _search: ExitStack | None = None
    _pinned: Cursor | None = None
    # The copy's candidates read whole by ``PgStore.indexed``, by hex, for its ``get_many``.
    _rows: dict[str, tuple[Any, ...]] | None = None
    # The copy's symbols counted with its first look-ups (``term_stats_and_keys``), for its
    # ``symbol_counts``: the team's size they were capped by, and the counts.
    _counted: tuple[int, dict[str, int]] | None = None

    @contextmanager
    def one_connection(self) -> Iterator[Self]:
        """A copy of this store whose look-ups all run on one pooled connection, taken at its first
        look-up and given back when the block ends: for ranking one search."""
        with ExitStack() as search:
            pinned = copy.copy(self)
            pinned._search = search
            yield pinned

    @contextmanager
    def reading(self) -> Iterator[Cursor]:
        """The search's one cursor in ``one_connection``, else a pooled one for this call."""
        if self._search is not None:
            if self._pinned is None:
                self._pinned = self._search.enter_context(self.db.statements())
            yield self._pinned
            return
        with self.db.cursor() as cur:
            yield cur

    def _lookup(self, table: str, column: str, keys: list[str], limit: int, *, only_rare: bool) -> list[str]:
        if not keys:
            return []
        sql, params = _lookup_sql(table, column, keys, limit, only_rare=only_rare, team=self.team, tag="")
        with self.reading() as cur:
            cur.execute(f"SELECT hex FROM ({sql}) found ORDER BY pos", params)
            return [r[0] for r in cur.fetchall()]

    def _keys_sql(
        self, signatures: Iterable[str], symbols: Iterable[str], limit: int
    ) -> tuple[str, dict[str, object]] | None:
        """``by_keys``' look-ups as one query of (part, hex, pos), ordered by part and pos; None
        when there is no key to look up."""
        parts = [
            _lookup_sql(table, column, keys, limit, only_rare=only_rare, team=self.team, tag=tag)
            for table, column, keys, only_rare, tag in (
                ("signatures", "sig", list(dict.fromkeys(signatures)), False, "g"),
                ("symbols", "symbol", list(dict.fromkeys(symbols)), True, "y"),
            )
            if keys
        ]
        if not parts:
            return None
        union = " UNION ALL ".join(
            f"(SELECT {n} AS part, hex, pos FROM ({sql}) p{n})" for n, (sql, _) in enumerate(parts)
        )
        return union, {k: v for _, p in parts for k, v in p.items()}

    def by_keys(self, signatures: Iterable[str], symbols: Iterable[str], limit: int) -> list[str]:
        # Both look-ups in one statement: a search's statements cost ~0.15 ms each here beyond
        # PostgreSQL's own work (bench/team_scale.py --direct).
        keys = self._keys_sql(signatures, symbols, limit)
        if keys is None:
            return []
        with self.reading() as cur:
            cur.execute(f"SELECT hex FROM ({keys[0]}) found ORDER BY part, pos", keys[1])
            return [r[0] for r in cur.fetchall()]

    def term_stats(self, terms: Iterable[str]) -> TermStats:
        keys = list(dict.fromkeys(terms))
        with self.reading() as cur:
            cur.execute(_TERM_COUNTS, {"team": self.team, "terms": ["", *keys]})
            return _term_stats(keys, cur.fetchall())

    def term_stats_and_keys(
        self, terms: Iterable[str], signatures: Iterable[str], symbols: Iterable[str], limit: int
    ) -> tuple[TermStats, list[str]]:
        # One statement, rows of either kind told apart by their part (NULL for a term's count): one
        # round trip less, 0.44 ms for the two where they took 0.61 one after the other (the first
        # look-ups of the queries of bench/team_scale.py --records 100000 --direct, one connection).
        keys = self._keys_sql(signatures, symbols, limit)
        if keys is None:
            return self.term_stats(terms), []
        asked = list(dict.fromkeys(terms))
        # In one search (one_connection), the symbols no count is kept for are counted here too, capped
        # by the team's size as this statement reads it (base.counted_symbols' cap): the third round
        # trip of most searches saved (symbol_counts then reads them).
        cache = _SYMBOL_COUNTS.get((self.db.schema, self.team), {})
        uncounted = [s for s in dict.fromkeys(symbols) if s not in cache] if self._search is not None else []
        counting = _SYMBOL_COUNTS_WITH if uncounted else ""
        with self.reading() as cur:
            cur.execute(
                f"SELECT NULL::int, NULL::bigint, term, docs FROM ({_TERM_COUNTS}) c "
                f"UNION ALL SELECT part, pos, hex, NULL FROM ({keys[0]}) found{counting}",
                {
                    **keys[1],
                    "team": self.team,
                    "terms": ["", *asked],
                    "share": base.SYMBOL_COUNT_SHARE,
                    "uncounted": uncounted,
                },
            )
            rows = cur.fetchall()
        found = sorted((part, pos, hexid) for part, pos, hexid, _ in rows if part is not None and part >= 0)
        stats = _term_stats(asked, [(t, n) for part, _, t, n in rows if part is None])
        if uncounted:
            self._counted = (stats.total, {str(k): int(n) for part, n, k, _ in rows if part == -1})
        return stats, [h for _, _, h in found]

    def fold_terms(self) -> None:
        """Move the team's pending term changes into ``terms`` (what every write does before it
        commits, ``fold_into``)."""
        with self.db.cursor() as cur:
            self.fold_into(cur)

    def fold_into(self, cur: Cursor) -> None:
        """Fold in ``cur``'s transaction: its own changes and those committed before. One folder at
        a time per team: when another holds the turn this returns at once, leaving them for the
        next. The folder's row locks on ``terms`` keep no writer waiting: only folders take them."""
        cur.execute(
            "WITH turn AS (SELECT pg_try_advisory_xact_lock(hashtextextended(%(key)s, 0)) AS mine), "
            "moved AS (DELETE FROM term_changes WHERE team_id = %(team)s AND (SELECT mine FROM turn) "
            "RETURNING term, n), "
            "added AS (INSERT INTO terms AS t (team_id, term, docs) SELECT %(team)s, term, sum(n) FROM moved "
            "GROUP BY term HAVING sum(n) <> 0 ORDER BY term "
            "ON CONFLICT (team_id, term) DO UPDATE SET docs = t.docs + excluded.docs) "
            "SELECT count(*) FROM moved",
            {"key": f"jiyi-terms:{self.db.schema}:{self.team}", "team": self.team},
        )
        moved = int(cur.fetchone()[0])  # type: ignore[index]
        with _FOLDED_LOCK:
            _FOLDED[self.db.schema] = _FOLDED.get(self.db.schema, 0) + moved

    def vacuum_if_due(self) -> None:
        """After a write committed: VACUUM the queue once this process folded ``_VACUUM_AFTER`` rows."""
        with _FOLDED_LOCK:
            if _FOLDED.get(self.db.schema, 0) < _VACUUM_AFTER:
                return
            _FOLDED[self.db.schema] = 0
        self._vacuum_term_changes()

    def _vacuum_term_changes(self) -> None:
        # Outside a transaction, as VACUUM must be; SKIP_LOCKED: another process's VACUUM is as good;
        # no truncation (m005): its exclusive lock would hold up every write.
        with self.db.pool.connection() as conn:
            conn.autocommit = True
            try:
                conn.execute("VACUUM (SKIP_LOCKED, TRUNCATE false) term_changes")
            except psycopg.Error as exc:
                # The write this follows has committed; a missed clean-up only waits for the next.
                log.warning("VACUUM term_changes: %s", exc)
            finally:
                conn.autocommit = False

    def matches(self, terms: list[str], limit: int) -> dict[str, object] | None:
        """``MATCHES``' parameters for ``terms``; None when no term can match."""
        query = tsquery_text(terms)
        if not query:
            return None
        return {"team": self.team, "query": query, "scan": base.TERM_SCAN, "weights": _RANK_WEIGHTS, "limit": limit}

    def by_terms(self, terms: list[str], limit: int) -> list[str]:
        params = self.matches(terms, limit)
        if params is None:
            return []
        with self.reading() as cur:
            cur.execute(f"SELECT hex FROM ({MATCHES}) m ORDER BY score DESC, rid DESC", params)
            return [r[0] for r in cur.fetchall()]

    def indexed(self, hexids: Iterable[str], terms: Iterable[str] | None = None) -> dict[str, Indexed]:
        keys = list(dict.fromkeys(hexids))
        if not keys:
            return {}
        with self.reading() as cur:
            cur.execute(
                "SELECT hex, tsv::text, normalized FROM records WHERE team_id = %s AND hex = ANY(%s) "
                "AND tsv IS NOT NULL",
                (self.team, keys),
            )
            rows = cur.fetchall()
        return fields_of(rows, terms)

    def symbol_counts(self, symbols: Iterable[str], total: int) -> dict[str, int]:
        def count(keys: list[str], cap: int) -> list[tuple[str, int]]:
            # Those counted with the first look-ups at this size first (term_stats_and_keys).
            known = self._counted[1] if self._counted is not None and self._counted[0] == total else {}
            counted = [(k, known[k]) for k in keys if k in known]
            keys = [k for k in keys if k not in known]
            if not keys:
                return counted
            with self.reading() as cur:
                # From the primary key's index alone, each stopping at the cap, as the SQLite store.
                cur.execute(
                    "SELECT k, (SELECT count(*) FROM (SELECT 1 FROM symbols WHERE team_id = %(team)s "
                    "AND symbol = k LIMIT %(cap)s) c) FROM unnest(%(keys)s::text[]) k",
                    {"team": self.team, "cap": cap, "keys": keys},
                )
                return counted + [(k, int(n)) for k, n in cur.fetchall()]

        cache = _SYMBOL_COUNTS.setdefault((self.db.schema, self.team), {})
        return base.counted_symbols(symbols, total, cache, count)

    # -- versions of what a team's rows derive (lexical.py: the terms; signing.py: the signatures) ---
    # ``table`` (lexical_versions, signature_versions) keeps per team the version everything was
    # derived with and the cursor of an upgrade under way (no row: version 1).
    def _version_cursor(self, cur: Cursor, table: str, target: int) -> tuple[int, int]:
        """(version the team's rows were derived with, rid an upgrade to ``target`` reached)."""
        cur.execute(f"SELECT version, upgrade_to, after_rid FROM {table} WHERE team_id = %s", (self.team,))
        row = cur.fetchone()
        if row is None:
            return 1, 0
        return int(row[0]), int(row[2]) if row[1] == target else 0

    def _set_version(self, cur: Cursor, table: str, version: int, upgrade_to: int | None, after: int) -> None:
        cur.execute(
            f"INSERT INTO {table} AS v (team_id, version, upgrade_to, after_rid) VALUES (%s, %s, %s, %s) "
            "ON CONFLICT (team_id) DO UPDATE SET version = excluded.version, upgrade_to = excluded.upgrade_to, "
            "after_rid = excluded.after_rid",
            (self.team, version, upgrade_to, after),
        )

    def _version_state(self, table: str, target: int) -> tuple[int, int]:
        """(version the team's rows were derived with, live records an upgrade to ``target`` has left)."""
        with self.db.cursor() as cur:
            version, after = self._version_cursor(cur, table, target)
            if version >= target:
                return version, 0
            cur.execute(
                "SELECT count(*) FROM records WHERE team_id = %s AND rid > %s AND NOT forgotten", (self.team, after)
            )
            return version, int(cur.fetchone()[0])  # type: ignore[index]


def fields_of(rows: Iterable[tuple[str, str, list[str] | None]], terms: Iterable[str] | None) -> dict[str, Indexed]:
    """``indexed``'s answer from (hex, vector as text, normalised key lines) rows."""
    if terms is None:
        return {h: _fields(text, normalized or []) for h, text, normalized in rows}
    wanted = {lexeme(t): t for t in terms}  # quoted once, looked up in every vector
    return {h: _some_fields(text, normalized or [], wanted) for h, text, normalized in rows}


def _some_fields(tsv: str, normalized: list[str], wanted: dict[str, str]) -> Indexed:
    """``_fields`` of the ``wanted`` terms only (keyed by their quoted lexeme, ``lexeme()``), and the
    length of them all. Parsing every lexeme of a vector's text in Python was most of a search on this
    backend (~8 ms of ~10 at 100 000 records, ~40 candidates of some 200 lexemes each); so the text is
    cut into lexemes and positions by C loops alone and only the entries the query asks for are read
    in Python. An entry is ``'lexeme':positions`` and a lexeme holds no space (tsvector_text): with
    every ``':`` made a space, the text is lexeme, positions, lexeme, ... (0.66 ms a search where
    cutting each entry at its last colon took 0.81, and finding each wanted lexeme in each text 1.2;
    the rows of the queries of bench/team_scale.py --records 100000 --direct). A text that does not
    cut so (an entry of no positions, a lexeme holding a space or ``':``: written by other means) is
    read lexeme by lexeme instead."""
    title: dict[str, int] = {}
    body: dict[str, int] = {}
    spaces = tsv.count(" ")
    flat = tsv.replace("':", "' ").split(" ")
    positions = flat[1::2]
    # Cut right, every other item is positions, which hold no quote: a lexeme there would.
    if len(flat) == 2 * spaces + 2 and "'" not in "".join(positions):
        entries = dict(zip(flat[::2], positions, strict=True))
    else:
        entries = {}
        for m in _TSV_LEXEME.finditer(tsv):
            entries["'" + m.group(1) + "'"] = m.group(2) or ""
    places = {}
    for key in entries.keys() & wanted.keys():
        places[wanted[key]] = entries[key]
        _place(wanted[key], entries[key], title, body)
    size = tsv.count(",") + spaces + 1 if tsv else 0
    return Indexed(title, body, tuple(normalized), size, places=places)


def _fields(tsv: str, normalized: list[str]) -> Indexed:
    """A record's terms by field from its vector's text: positions weighted A are its title and key
    lines, the others its body (tsvector_text); a lexeme without positions counts once in the body."""
    title: dict[str, int] = {}
    body: dict[str, int] = {}
    places = {}
    for m in _TSV_LEXEME.finditer(tsv):
        term = m.group(1).replace("''", "'").replace("\\\\", "\\")
        places[term] = m.group(2) or ""
        _place(term, places[term], title, body)
    return Indexed(title, body, tuple(normalized), places=places)


def _place(term: str, positions: str, title: dict[str, int], body: dict[str, int]) -> None:
    """Count ``term`` by field from its positions' text (``1A,5``): weight A is the title's; no
    position at all counts once in the body. A weight is one letter after its position's digits."""
    high = positions.count("A")
    if high:
        title[term] = high
    marks = positions.count(",") + 1
    if marks > high:
        body[term] = marks - high

"""Look-ups of ``SQLiteStore`` (the search half of ``Store``): signatures and symbols in their own
tables, bounded as ``store.base`` says, and full text through FTS5 with jiyi's own terms.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable

from .. import base
from ..base import Indexed, TermStats
from .connection import SQLiteConnection

# Terms in at least this many records have their document counts cached (``term_stats``): counting
# reads every posting, and a query of 64 terms in a few hundred records each costs several ms.
_COMMON_TERM_DOCS = 100


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


class SQLiteSearch(SQLiteConnection):
    def _lookup(self, table: str, column: str, keys: list[str], limit: int, *, only_rare: bool) -> list[str]:
        if not keys:
            return []

        # A key on thousands of records (`ImportError`, `TS2339`) costs ~20 ms to group and sort
        # at 100 000 records and names no particular one: when rarer keys are asked for too (or,
        # with ``only_rare``, always), only they are looked up. Counting stops at the bound.
        def common(db: sqlite3.Connection, key: str) -> bool:
            count = f"SELECT count(*) FROM (SELECT 1 FROM {table} WHERE {column} = ? LIMIT ?)"
            return bool(db.execute(count, (key, base.COMMON_KEY_RECORDS + 1)).fetchone()[0] > base.COMMON_KEY_RECORDS)

        rare = self._guard(lambda db: [k for k in keys if not common(db, k)])
        marks = ",".join("?" * len(rare or keys))
        if rare:
            # Each has at most the bound of records: all are read, from the key's index alone. Records
            # sharing most keys first; not joined with records for recency, as that costs a random
            # look-up per match (~15 ms for a key on 1 700 of 100 000 records, docs/research/performance.md).
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
        return self._guard(lambda db: [r[0] for r in db.execute(sql, [*keys, base.COMMON_SAMPLE * limit, limit])])

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
        # (2-3x the time of the ranking alone). Ranked among the newest base.TERM_SCAN matches only, as
        # the PostgreSQL store bounds its scan: the rarest term of a query can still be common
        # (`symbol` in ~half of 1 000 000 records took 55 ms to rank in full, bench/scale.py).
        sql = (
            "SELECT r.hex FROM (SELECT id, rank FROM (SELECT rowid AS id, bm25(records_fts, 2.0, 1.0) AS rank "
            "FROM records_fts WHERE records_fts MATCH ? ORDER BY rowid DESC LIMIT ?) ORDER BY rank LIMIT ?) f "
            "JOIN records r ON r.rid = f.id ORDER BY f.rank"
        )
        expression = match_expression(terms)
        return self._guard(lambda db: [r[0] for r in db.execute(sql, (expression, base.TERM_SCAN, limit))])

    def indexed(self, hexids: Iterable[str], terms: Iterable[str] | None = None) -> dict[str, Indexed]:
        # Every term whatever ``terms`` says: counting a field's words in C costs less than choosing.
        keys = list(dict.fromkeys(hexids))
        if not keys:
            return {}
        marks = ",".join("?" * len(keys))
        sql = (
            "SELECT r.hex, f.title, f.body, r.normalized FROM records r JOIN records_fts f ON f.rowid = r.rid "
            f"WHERE r.hex IN ({marks})"
        )
        rows = self._guard(lambda db: db.execute(sql, keys).fetchall())
        return {h: Indexed.of(t or "", b or "", json.loads(n or "[]")) for h, t, b, n in rows}

    def symbol_counts(self, symbols: Iterable[str], total: int) -> dict[str, int]:
        # From the primary key's index alone, stopping at the cap: a symbol past it is worth nothing.
        # One statement for all of them (each statement costs ~0.05 ms however rare its key).
        def count(keys: list[str], cap: int) -> list[tuple[str, int]]:
            sql = (
                "SELECT j.value, (SELECT count(*) FROM (SELECT 1 FROM symbols WHERE symbol = j.value LIMIT ?)) "
                "FROM json_each(?) j"
            )
            return self._guard(lambda db: db.execute(sql, (cap, json.dumps(keys))).fetchall())

        return base.counted_symbols(symbols, total, self._common_symbols, count)

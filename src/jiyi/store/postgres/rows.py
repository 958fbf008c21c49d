"""Rows of the ``records`` table: what ``PgStore`` writes for a record and reads back."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from psycopg.types.json import Jsonb

from ...records import HUMAN_MARK, RECORD_COLUMNS, Record, Relation, record_from_columns
from ..base import WRITE_COLUMNS, write_values
from .search import tsvector_text

if TYPE_CHECKING:
    from ...analysis.indexing import Derived

COLUMNS = RECORD_COLUMNS
# A row's signatures and symbols read from their look-up tables (``records r``), by code point: for
# a row not written since m018_record_keys, here and when store/postgres/keys.py fills its arrays.
TABLE_SIGS = (
    'ARRAY(SELECT sig FROM signatures s WHERE s.team_id = r.team_id AND s.hex = r.hex ORDER BY sig COLLATE "C")'
)
TABLE_SYMS = (
    'ARRAY(SELECT symbol FROM symbols s WHERE s.team_id = r.team_id AND s.hex = r.hex ORDER BY symbol COLLATE "C")'
)
# The marks others made on a record of ``records r`` (``[source id, relation]`` in the order made, a
# person's marks last), NULL when none. Most records have none, and two index probes find that in a
# fraction of what the aggregate's subquery costs a row: reading a search's ~46 candidate rows took
# 0.23 ms more with the subquery than without, 0.03 more with the probes first (the queries of
# ``bench/team_scale.py --records 100000 --direct``, one search's rows read alone).
MARKS = (
    "CASE WHEN EXISTS (SELECT FROM relations rel WHERE rel.team_id = r.team_id AND rel.target_hex = r.hex) "
    "OR EXISTS (SELECT FROM human_marks h WHERE h.team_id = r.team_id AND h.hex = r.hex) THEN "
    "(SELECT jsonb_agg(jsonb_build_array(m.source, m.relation) ORDER BY m.human, m.created, m.source) FROM ("
    "SELECT CASE WHEN src.remote THEN 'rr_' ELSE 'lr_' END || rel.source_hex AS source, rel.relation, rel.created, "
    "false AS human FROM relations rel LEFT JOIN records src ON src.team_id = rel.team_id "
    "AND src.hex = rel.source_hex WHERE rel.team_id = r.team_id AND rel.target_hex = r.hex "
    f"UNION ALL SELECT '{HUMAN_MARK}', h.relation, h.created, true FROM human_marks h "
    "WHERE h.team_id = r.team_id AND h.hex = r.hex) m) END"
)
# What a record is read with: its row, then its signatures and symbols (arrays on the row, else from
# their tables: COALESCE reads no further than the first value not NULL) and its ``MARKS``.
SELECT = COLUMNS + f", COALESCE(r.sigs, {TABLE_SIGS}), COALESCE(r.syms, {TABLE_SYMS}), {MARKS}"
PUT_COLUMNS = [*WRITE_COLUMNS, "tsv", "sigs", "syms"]
PUT_SQL = (
    f"INSERT INTO records (team_id, {', '.join(PUT_COLUMNS)}) VALUES ({', '.join(['%s'] * (len(PUT_COLUMNS) + 1))}) "
    "ON CONFLICT (team_id, hex) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in PUT_COLUMNS if c not in ("hex", "created"))
)
# The same with the record's author (migration m009_record_authors) as a first push stores it: written
# by the insert only, so a later revision, or a concurrent first push that meets the row, keeps it.
PUT_AUTHORED_SQL = PUT_SQL.replace("(team_id, ", "(team_id, author, ", 1).replace("VALUES (%s, ", "VALUES (%s, %s, ", 1)


def record_row(team: int, record: Record, derived: Derived | None) -> tuple[Any, ...]:
    """The values of ``PUT_COLUMNS`` (after team_id) for ``record``; no full text, signatures or
    symbols when forgotten. The arrays hold what the look-up tables do (``PgStore.put``): each value
    once."""
    if record.forgotten:
        return (team, *write_values(record, derived, Jsonb), None, [], [])
    tsv = tsvector_text(derived.index_title, derived.index_body) if derived is not None else None
    return (team, *write_values(record, derived, Jsonb), tsv, _keys(record.signatures), _keys(record.symbols))


def _keys(values: Iterable[str]) -> list[str]:
    # By code point, as ``SELECT`` orders an older row's in a C collation: a record reads back the
    # same however it was written, whatever the database's collation.
    return sorted(set(values))


def row_record(row: tuple[Any, ...]) -> Record:
    """The record of a row read with ``SELECT``."""
    *columns, sigs, syms, marks = row
    marked = [Relation(source, relation) for source, relation in marks or ()]
    return record_from_columns(columns, signatures=sigs, symbols=syms, marked=marked)

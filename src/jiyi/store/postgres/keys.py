"""Putting the signatures and symbols of records written before ``m018_record_keys`` on their rows
(``rows.SELECT`` reads them from the look-up tables until then): in batches, a bounded while when a
server starts and the rest by ``jiyi team admin reindex --keys`` (``upgrade.py``), as the terms'
upgrade goes. Filling them all in the migration took 7.3 minutes of a server's start at 1 000 000
records. A row's record does not change, so its ``seq`` does not move and no pull brings it again.
"""

from __future__ import annotations

from .rows import TABLE_SIGS, TABLE_SYMS
from .search import PgSearch

# The rows still to fill, the oldest first, found by m018's partial index; rows a push holds are left
# for the next batch (a push writes the arrays itself). Chosen once, in a CTE: as a subquery joined
# in ``UPDATE … FROM`` it may be scanned again per row, each scan choosing on (a test saw 4 of a
# batch of 2). The arrays are what ``rows.SELECT`` reads of an older row, so a record reads back
# the same before and after.
_FILL_SQL = (
    "WITH todo AS MATERIALIZED (SELECT hex FROM records WHERE team_id = %(team)s AND sigs IS NULL "
    "ORDER BY rid LIMIT %(batch)s FOR UPDATE SKIP LOCKED) "
    f"UPDATE records r SET sigs = {TABLE_SIGS}, syms = {TABLE_SYMS} "
    "FROM todo WHERE r.team_id = %(team)s AND r.hex = todo.hex AND r.sigs IS NULL"
)


class PgKeys(PgSearch):
    def record_keys_left(self) -> int:
        """How many of the team's rows are still without their signatures and symbols."""
        with self.db.cursor() as cur:
            cur.execute("SELECT count(*) FROM records WHERE team_id = %s AND sigs IS NULL", (self.team,))
            return int(cur.fetchone()[0])  # type: ignore[index]

    def fill_record_keys(self, batch: int) -> int:
        """Fill up to ``batch`` more rows in one transaction; how many were."""
        if batch < 1:
            return 0
        with self.db.cursor() as cur:
            cur.execute(_FILL_SQL, {"team": self.team, "batch": batch})
            return cur.rowcount

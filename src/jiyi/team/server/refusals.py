"""The team server's recent refusals, for its operator's page (``operator``): bad tokens by the
client's address, 403s (a role or a team that may not), revisions and forgets of another member's
record refused in a push, bodies too large or too slow, rate limits.

Counted in memory per (team, kind, who) and written at most every ``FLUSH_SECONDS`` in one
statement, after a response has gone (a background task), so a flood of refused requests, which
``limits`` refuses without a database call, does not become a flood of writes: 300 made-up tokens
from one address are one row's count, written once. Memory is bounded too (``MAX_PENDING`` keys,
past them one ``overflow`` row counts the rest), and the table keeps its latest ``KEPT`` rows. With
several processes each counts its own and adds to the same rows. The page writes what is pending
before reading, so it shows the latest.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Any

from ...errors import Forbidden, JiyiError, Unauthorized, Unavailable
from ...records import now
from .limits import Limited, TooLarge, TooSlow

if TYPE_CHECKING:
    from ...store.postgres.database import PgDatabase

log = logging.getLogger("jiyi.team")

FLUSH_SECONDS = 10.0
MAX_PENDING = 500
KEPT = 1000
NO_TEAM = 0  # refused before any team was known: a bad token

Key = tuple[int, str, str]  # (team id, kind, who)


def kind_of(exc: JiyiError) -> str | None:
    """The kind of refusal ``exc`` answers, None for an answer that is no refusal (a 400, a 404)."""
    if isinstance(exc, Limited):
        return "429 rate limited"
    if isinstance(exc, TooLarge):
        return "413 body too large"
    if isinstance(exc, TooSlow):
        return "408 body too slow"
    if isinstance(exc, Unauthorized):
        return "401 bad token"
    if isinstance(exc, Forbidden):
        return "403 forbidden"
    return None


class Refusals:
    def __init__(self, db: PgDatabase, *, seconds: float = FLUSH_SECONDS, size: int = MAX_PENDING) -> None:
        self.db, self.seconds, self.size = db, seconds, size
        self._lock = threading.Lock()
        self._pending: dict[Key, list[Any]] = {}  # key -> [count, detail, first at, last at]
        self._due = time.monotonic() + seconds

    def note(self, team_id: int, kind: str, who: str, detail: str = "", count: int = 1) -> bool:
        """Count a refusal; True when this caller should ``flush`` (once an interval: the first
        to find it due claims it)."""
        stamp = now()
        key: Key = (team_id, kind, who[:200])
        with self._lock:
            held = self._pending.get(key)
            if held is None and len(self._pending) >= self.size:
                key = (NO_TEAM, "overflow", "*")  # a flood of distinct keys: counted, not kept apart
                held = self._pending.get(key)
            if held is None:
                self._pending[key] = [count, detail[:300], stamp, stamp]
            else:
                held[0] += count
                held[1], held[3] = detail[:300] or held[1], stamp
            moment = time.monotonic()
            if moment < self._due:
                return False
            self._due = moment + self.seconds
            return True

    def flush(self) -> int:
        """Write what is pending (one statement; the oldest rows past ``KEPT`` go); returns the rows
        written. A database that cannot be reached loses these counts, never a request."""
        with self._lock:
            taken, self._pending = self._pending, {}
        if not taken:
            return 0
        rows = [
            (team, kind, who, detail, count, first, last)
            for (team, kind, who), (count, detail, first, last) in taken.items()
        ]
        try:
            with self.db.cursor() as cur:
                cur.executemany(
                    "INSERT INTO refusals (team_id, kind, who, detail, count, first_at, last_at) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (team_id, kind, who) DO UPDATE SET "
                    "count = refusals.count + excluded.count, detail = excluded.detail, last_at = excluded.last_at",
                    rows,
                )
                cur.execute(
                    "DELETE FROM refusals WHERE last_at < (SELECT last_at FROM refusals ORDER BY last_at DESC "
                    "LIMIT 1 OFFSET %s)",
                    (KEPT,),
                )
        except Unavailable as exc:
            log.warning("refusals not kept: %s", exc)
            return 0
        return len(rows)


def recent(db: PgDatabase, limit: int) -> list[tuple[Any, ...]]:
    """The latest refusals: (last at, team name or None, kind, who, count, detail, first at)."""
    with db.cursor() as cur:
        cur.execute(
            "SELECT f.last_at, t.name, f.kind, f.who, f.count, f.detail, f.first_at FROM refusals f "
            "LEFT JOIN teams t ON t.id = f.team_id ORDER BY f.last_at DESC LIMIT %s",
            (limit,),
        )
        return list(cur.fetchall())

"""The client's state of team memory (the ``sync_state`` table of the local store): cursors, the
machine's name, and backing off after a failure (5 s, doubling to 10 min, per outbox row and for
the server as a whole: ``retry_at``, which background syncs wait out). Shared by ``outbox``
(push), ``forget`` and ``sync`` (pull).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite3

    from ...errors import JiyiError
    from ...store.sqlite.store import SQLiteStore

BACKOFF_FIRST = 5.0
BACKOFF_MAX = 600.0


def _stamp(moment: datetime) -> str:
    return moment.isoformat(timespec="microseconds")


def backoff(attempts: int) -> float:
    """Seconds before try number ``attempts + 1``: 5 s after the first failure, doubling, at most 10 min."""
    return float(min(BACKOFF_MAX, BACKOFF_FIRST * 2.0 ** max(0, attempts - 1)))


def get_state(db: sqlite3.Connection, key: str) -> str | None:
    row = db.execute("SELECT value FROM sync_state WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def set_state(db: sqlite3.Connection, key: str, value: str | None) -> None:
    if value is None:
        db.execute("DELETE FROM sync_state WHERE key = ?", (key,))
    else:
        db.execute(
            "INSERT INTO sync_state (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )


def mark_failed(store: SQLiteStore, hexes: Iterable[str], error: JiyiError) -> None:
    """Rows that were not answered back off; so does the server as a whole."""
    text = f"{error.code}: {getattr(error, 'reason', '') or error.message}"
    moment = datetime.now(timezone.utc)
    with store.transaction() as db:
        for hexid in hexes:
            row = db.execute("SELECT attempts FROM outbox WHERE hex = ?", (hexid,)).fetchone()
            if row is None:
                continue
            attempts = int(row[0]) + 1
            db.execute(
                "UPDATE outbox SET attempts = ?, next_try = ?, last_error = ? WHERE hex = ?",
                (attempts, _stamp(moment + timedelta(seconds=backoff(attempts))), text, hexid),
            )
        failures = int(get_state(db, "failures") or 0) + 1
        wait = max(backoff(failures), float(getattr(error, "retry_after", 0.0)))
        set_state(db, "failures", str(failures))
        set_state(db, "retry_at", _stamp(moment + timedelta(seconds=wait)))
        set_state(db, "last_error", f"{_stamp(moment)} {text}")


def mark_answered(db: sqlite3.Connection) -> None:
    set_state(db, "failures", None)
    set_state(db, "retry_at", None)
    set_state(db, "last_error", None)

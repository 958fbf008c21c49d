"""Session state in the SQLite store (the session half of ``Store``), through the statements of
``statements`` that the hook's fast path runs too."""

from __future__ import annotations

import json

from ...records import now
from .. import base, closing
from ..base import Resolved, SessionState
from .connection import SQLiteConnection
from .statements import MAX_ATTEMPTS, record_edits, resolve_in, set_failure

TYPE_CHECKING = False
if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Iterable


def queued(failure_json: str) -> Resolved:
    """The failure of a queued row (``statements.queue``'s JSON) as ``resolve_failure`` gives it."""
    failure = json.loads(failure_json)
    return Resolved(
        [],
        [],
        tool=failure["tool"],
        error=failure["error"],
        signatures=tuple(failure["signatures"]),
        command=failure["command"],
        noted=tuple(failure["noted"]),
        edited=tuple(failure["edited"]),
        checkout=failure.get("checkout"),  # rows queued before it was kept have none
        steps=tuple(failure.get("steps", ())),
    )


class SQLiteSessions(SQLiteConnection):
    """The session methods of ``Store`` on SQLite."""

    def live_session(self, project_key: str, since: str, own_prefix: str) -> str | None:
        sql = (
            "SELECT id FROM sessions WHERE project_key = ? AND last_seen >= ? AND substr(id, 1, ?) != ? "
            "ORDER BY last_seen DESC LIMIT 1"
        )
        row = self._guard(lambda db: db.execute(sql, (project_key, since, len(own_prefix), own_prefix)).fetchone())
        return str(row[0]) if row else None

    def project_keys(self, name: str) -> list[str]:
        # The distinct keys one index look-up each, skipping from one to the next (records_project_keys,
        # m014), then each key's latest update one more: grouping every record of the project took
        # 200-500 ms at 100 000 records.
        records = (
            "WITH RECURSIVE keys(key) AS (SELECT min(project_key) FROM records WHERE project = ?1 AND forgotten = 0 "
            "UNION ALL SELECT (SELECT min(project_key) FROM records WHERE project = ?1 AND forgotten = 0 "
            "AND project_key > key) FROM keys WHERE key IS NOT NULL) "
            "SELECT key, (SELECT max(updated) FROM records WHERE project = ?1 AND forgotten = 0 AND project_key = key) "
            "FROM keys WHERE key IS NOT NULL"
        )
        sessions = "SELECT project_key, max(last_seen) FROM sessions WHERE project = ? GROUP BY project_key"

        def run(db: sqlite3.Connection) -> list[tuple[str, str]]:
            return [*db.execute(records, (name,)), *db.execute(sessions, (name,))]

        return base.latest_keys(self._guard(run))

    def touch_session(self, session_id: str, project_key: str, project: str) -> None:
        stamp = now()
        with self._write() as db:
            db.execute(
                "INSERT INTO sessions (id, project_key, project, started, last_seen) VALUES (?,?,?,?,?) "
                "ON CONFLICT(id) DO UPDATE SET last_seen = excluded.last_seen",
                (session_id, project_key, project, stamp, stamp),
            )

    def session(self, session_id: str) -> SessionState | None:
        def run(db: sqlite3.Connection) -> SessionState | None:
            row = db.execute(
                "SELECT id, project_key, project, started, last_seen, read_used, last_tool, last_error, "
                "last_failure_at, outcome, last_command, last_checkout FROM sessions WHERE id = ?",
                (session_id,),
            ).fetchone()
            if row is None:
                return None
            state = SessionState(*row[:10])
            state.last_command = row[10]
            state.last_checkout = row[11]
            state.reads = [
                r[0]
                for r in db.execute("SELECT hex FROM session_reads WHERE session_id = ? ORDER BY at", (session_id,))
            ]
            state.notes = [
                r[0]
                for r in db.execute("SELECT hex FROM session_notes WHERE session_id = ? ORDER BY at", (session_id,))
            ]
            return state

        return self._guard(run)

    def recent_sessions(self, limit: int = 20) -> list[SessionState]:
        sql = "SELECT id FROM sessions ORDER BY last_seen DESC, id LIMIT ?"
        ids = self._guard(lambda db: [row[0] for row in db.execute(sql, (limit,))])
        found = [state for state in map(self.session, ids) if state is not None]
        for state in found:
            state.searches = self.session_searches(state.id)
        return found

    def session_searches(self, session_id: str, limit: int = base.SEARCHES_KEPT) -> list[base.SearchMade]:
        sql = (
            "SELECT at, query, hits FROM session_searches INDEXED BY session_searches_by_session "
            "WHERE session_id = ? ORDER BY rowid DESC LIMIT ?"
        )
        rows = self._guard(lambda db: db.execute(sql, (session_id, limit)).fetchall())
        return [base.SearchMade(at, query, hits) for at, query, hits in rows]

    def record_search(self, session_id: str, query: str, hits: int) -> None:
        with self._write() as db:
            db.execute(
                "INSERT INTO session_searches (session_id, at, query, hits) VALUES (?, ?, ?, ?)",
                (session_id, now(), query[: base.SEARCH_CHARS], hits),
            )
            # The oldest beyond the bound go, from the index (rowid is the order written).
            db.execute(
                "DELETE FROM session_searches WHERE session_id = ?1 AND rowid <= (SELECT rowid FROM session_searches "
                "INDEXED BY session_searches_by_session WHERE session_id = ?1 ORDER BY rowid DESC LIMIT 1 OFFSET ?2)",
                (session_id, base.SEARCHES_KEPT),
            )

    def take_read(self, session_id: str, hexid: str, wanted: int, budget: int) -> int:
        with self._write() as db:
            row = db.execute("SELECT read_used FROM sessions WHERE id = ?", (session_id,)).fetchone()
            used = int(row[0]) if row else 0
            granted = max(0, min(wanted, budget - used))
            if granted:
                db.execute("UPDATE sessions SET read_used = read_used + ? WHERE id = ?", (granted, session_id))
                stamp = now()
                db.execute(
                    "INSERT INTO session_reads (session_id, hex, at, last_at) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT(session_id, hex) DO UPDATE SET last_at = excluded.last_at",
                    (session_id, hexid, stamp, stamp),
                )
            return granted

    def claim_recall(self, session_id: str, hexids: Iterable[str]) -> str | None:
        wanted = list(dict.fromkeys(hexids))
        if not wanted:
            return None
        with self._write() as db:
            for hexid in wanted:
                cursor = db.execute(
                    "INSERT OR IGNORE INTO session_recalls (session_id, hex, at) VALUES (?, ?, ?)",
                    (session_id, hexid, now()),
                )
                if cursor.rowcount == 1:
                    return hexid
            return None

    def set_failure(
        self,
        session_id: str,
        tool: str | None,
        error: str | None,
        *,
        signatures: Iterable[str] = (),
        command: str | None = None,
        checkout: str | None = None,
    ) -> None:
        with self._write() as db:
            set_failure(db, session_id, tool, error, signatures, command, checkout, now())

    def record_edits(self, session_id: str, paths: Iterable[str]) -> None:
        wanted = [p for p in paths if p]
        if wanted:
            with self._write() as db:
                record_edits(db, session_id, wanted, now())

    def resolve_failure(self, session_id: str, tool: str, command: str | None = None) -> Resolved | None:
        def pending(db: sqlite3.Connection) -> bool:
            sql = "SELECT last_tool, last_failure_at, last_command FROM sessions WHERE id = ?"
            row = db.execute(sql, (session_id,)).fetchone()
            return row is not None and closing.pending(row[0], row[1], tool) and closing.may_change(row[2], command)

        # Most successes follow no failure, or only look around: a read settles them without
        # taking the write lock.
        if not self._guard(pending):
            return None
        with self._write() as db:
            found = resolve_in(db, session_id, tool, command)
        return None if found is None else Resolved(*found)  # closing.resolve's tuple is its fields in order

    def flaky_count(self, signatures: Iterable[str]) -> int:
        wanted = list(dict.fromkeys(signatures))
        if not wanted:
            return 0
        sql = f"SELECT coalesce(max(count), 0) FROM flaky_failures WHERE sig IN ({','.join('?' * len(wanted))})"
        return int(self._guard(lambda db: db.execute(sql, wanted).fetchone()[0]))

    def auto_record_queue(self) -> tuple[int, int]:
        """(automatic records waiting for a finisher, rows given up on after MAX_ATTEMPTS): what
        ``jiyi doctor`` shows of the queue."""
        sql = "SELECT count(*), coalesce(sum(attempts >= ?), 0) FROM auto_record_queue"
        waiting, given_up = self._guard(lambda db: db.execute(sql, (MAX_ATTEMPTS,)).fetchone())
        return int(waiting) - int(given_up), int(given_up)

"""Session state on PostgreSQL (the session half of ``Store``), scoped to ``PgStore``'s team.

Mirrors ``store.sqlite``'s sessions statement by statement; where SQLite takes its write lock up
front, these lock the session's row (``FOR UPDATE``) so concurrent calls of one session queue.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from psycopg.types.json import Jsonb

from ...records import now
from .. import base, closing
from ..base import Resolved, SessionState
from .database import Cursor, PgDatabase


class PgSessions:
    db: PgDatabase
    team: int

    def project_keys(self, name: str) -> list[str]:
        # As SQLite's: the distinct keys skipping through records_project_keys (m014), then each one's
        # latest update, instead of grouping every record of the project.
        with self.db.cursor() as cur:
            cur.execute(
                "WITH RECURSIVE keys(key) AS (SELECT min(project_key) FROM records WHERE team_id = %(t)s "
                "AND project = %(n)s AND NOT forgotten UNION ALL SELECT (SELECT min(project_key) FROM records "
                "WHERE team_id = %(t)s AND project = %(n)s AND NOT forgotten AND project_key > key) FROM keys "
                "WHERE key IS NOT NULL) SELECT key, (SELECT max(updated) FROM records WHERE team_id = %(t)s "
                "AND project = %(n)s AND NOT forgotten AND project_key = key) FROM keys WHERE key IS NOT NULL "
                "UNION ALL SELECT project_key, max(last_seen) FROM sessions WHERE team_id = %(t)s "
                "AND project = %(n)s GROUP BY project_key",
                {"t": self.team, "n": name},
            )
            return base.latest_keys(cur.fetchall())

    def touch_session(self, session_id: str, project_key: str, project: str) -> None:
        stamp = now()
        with self.db.cursor() as cur:
            cur.execute(
                "INSERT INTO sessions (team_id, id, project_key, project, started, last_seen) "
                "VALUES (%s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (team_id, id) DO UPDATE SET last_seen = excluded.last_seen",
                (self.team, session_id, project_key, project, stamp, stamp),
            )

    def live_session(self, project_key: str, since: str, own_prefix: str) -> str | None:
        # Meaningful here too: ``Memory(store=PgStore(...))`` runs sessions on the team database,
        # and an MCP server without an id links to its project's hook session the same way
        # (``session_link``). last_seen is the same ISO text as SQLite's, so it compares as text.
        # No index on (team_id, project_key, last_seen): the team server keeps no sessions of its
        # own, so a team's rows are the few of in-process use, and the primary key bounds the scan.
        with self.db.cursor() as cur:
            cur.execute(
                "SELECT id FROM sessions WHERE team_id = %s AND project_key = %s AND last_seen >= %s "
                "AND left(id, %s) <> %s ORDER BY last_seen DESC LIMIT 1",
                (self.team, project_key, since, len(own_prefix), own_prefix),
            )
            row = cur.fetchone()
            return str(row[0]) if row else None

    def session(self, session_id: str) -> SessionState | None:
        with self.db.cursor() as cur:
            cur.execute(
                "SELECT id, project_key, project, started, last_seen, read_used, last_tool, last_error, "
                "last_failure_at, outcome, last_command, last_checkout FROM sessions WHERE team_id = %s AND id = %s",
                (self.team, session_id),
            )
            row = cur.fetchone()
            if row is None:
                return None
            state = SessionState(*row[:10])
            state.last_command = row[10]
            state.last_checkout = row[11]
            for table, into in (("session_reads", state.reads), ("session_notes", state.notes)):
                cur.execute(
                    f"SELECT hex FROM {table} WHERE team_id = %s AND session_id = %s ORDER BY at, hex",
                    (self.team, session_id),
                )
                into.extend(r[0] for r in cur.fetchall())
            return state

    def recent_sessions(self, limit: int = 20) -> list[SessionState]:
        with self.db.cursor() as cur:
            cur.execute(
                "SELECT id FROM sessions WHERE team_id = %s ORDER BY last_seen DESC, id LIMIT %s", (self.team, limit)
            )
            ids = [row[0] for row in cur.fetchall()]
        found = [state for state in map(self.session, ids) if state is not None]
        for state in found:
            state.searches = self.session_searches(state.id)
        return found

    def session_searches(self, session_id: str, limit: int = base.SEARCHES_KEPT) -> list[base.SearchMade]:
        with self.db.cursor() as cur:
            cur.execute(
                "SELECT at, query, hits FROM session_searches WHERE team_id = %s AND session_id = %s "
                "ORDER BY id DESC LIMIT %s",
                (self.team, session_id, limit),
            )
            return [base.SearchMade(at, query, hits) for at, query, hits in cur.fetchall()]

    def record_search(self, session_id: str, query: str, hits: int) -> None:
        with self.db.cursor() as cur:
            cur.execute(
                "INSERT INTO session_searches (team_id, session_id, at, query, hits) VALUES (%s, %s, %s, %s, %s)",
                (self.team, session_id, now(), query[: base.SEARCH_CHARS], hits),
            )
            # The oldest beyond the bound go, from the (team, session, id) index.
            cur.execute(
                "DELETE FROM session_searches WHERE team_id = %(t)s AND session_id = %(s)s AND id <= "
                "(SELECT id FROM session_searches WHERE team_id = %(t)s AND session_id = %(s)s "
                "ORDER BY id DESC LIMIT 1 OFFSET %(k)s)",
                {"t": self.team, "s": session_id, "k": base.SEARCHES_KEPT},
            )

    def take_read(self, session_id: str, hexid: str, wanted: int, budget: int) -> int:
        with self.db.cursor() as cur:
            cur.execute(
                "SELECT read_used FROM sessions WHERE team_id = %s AND id = %s FOR UPDATE", (self.team, session_id)
            )
            row = cur.fetchone()
            used = int(row[0]) if row else 0
            granted = max(0, min(wanted, budget - used))
            if granted:
                cur.execute(
                    "UPDATE sessions SET read_used = read_used + %s WHERE team_id = %s AND id = %s",
                    (granted, self.team, session_id),
                )
                stamp = now()
                cur.execute(
                    "INSERT INTO session_reads (team_id, session_id, hex, at, last_at) VALUES (%s, %s, %s, %s, %s) "
                    "ON CONFLICT (team_id, session_id, hex) DO UPDATE SET last_at = excluded.last_at",
                    (self.team, session_id, hexid, stamp, stamp),
                )
            return granted

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
        sigs = Jsonb(list(dict.fromkeys(signatures))) if error else None
        with self.db.cursor() as cur:
            if error:
                self._park(cur, session_id, command)
            cur.execute(
                "UPDATE sessions SET last_tool = %s, last_error = %s, last_failure_at = %s, last_signatures = %s, "
                "last_command = %s, last_checkout = %s, outcome = CASE WHEN %s THEN '失败' ELSE outcome END "
                "WHERE team_id = %s AND id = %s",
                (tool, error, now() if error else None, sigs, command if error else None, checkout if error else None,
                 bool(error), self.team, session_id),
            )  # fmt: skip

    def _park(self, cur: Cursor, session_id: str, command: str | None) -> None:
        """sqlite/statements.py's ``_park``: a failure of another operation parks the pending one."""
        cur.execute(
            f"SELECT {_FAILURE_COLUMNS} FROM sessions WHERE team_id = %s AND id = %s FOR UPDATE",
            (self.team, session_id),
        )
        pending = cur.fetchone()
        cur.execute(
            "SELECT id, command FROM session_parked WHERE team_id = %s AND session_id = %s", (self.team, session_id)
        )
        parked = cur.fetchall()
        if not parked and (pending is None or pending[2] is None or pending[4] is None or command is None):
            return
        gone = [int(i) for i, parked_command in parked if closing.superseded(parked_command, command)]
        if gone:
            cur.execute("DELETE FROM session_parked WHERE id = ANY(%s)", (gone,))
        if pending is not None and pending[2] is not None and closing.parks(pending[4], command):
            row = list(pending)
            row[3] = Jsonb(row[3]) if row[3] is not None else None
            cur.execute(
                f"INSERT INTO session_parked (team_id, session_id, {_PARKED_COLUMNS}) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                (self.team, session_id, *row),
            )
            cur.execute(
                "DELETE FROM session_parked WHERE team_id = %s AND session_id = %s AND id NOT IN "
                "(SELECT id FROM session_parked WHERE team_id = %s AND session_id = %s ORDER BY id DESC LIMIT %s)",
                (self.team, session_id, self.team, session_id, closing.PARKED),
            )

    def record_edits(self, session_id: str, paths: Iterable[str]) -> None:
        wanted = list(dict.fromkeys(p for p in paths if p))
        if not wanted:
            return
        with self.db.cursor() as cur:
            # Only while a failure is pending: an edit before it or without one fixes nothing.
            cur.execute(
                "INSERT INTO session_edits (team_id, session_id, path, at) "
                "SELECT s.team_id, s.id, p.path, %s FROM sessions s, unnest(%s::text[]) AS p(path) "
                "WHERE s.team_id = %s AND s.id = %s AND s.last_failure_at IS NOT NULL "
                "ON CONFLICT (team_id, session_id, path) DO UPDATE SET at = excluded.at",
                (now(), wanted, self.team, session_id),
            )

    def resolve_failure(self, session_id: str, tool: str, command: str | None = None) -> Resolved | None:
        with self.db.cursor() as cur:
            # Most successes follow no failure, or only look around: a plain read settles them
            # without locking the row.
            cur.execute(
                "SELECT last_tool, last_failure_at, last_command FROM sessions WHERE team_id = %s AND id = %s",
                (self.team, session_id),
            )
            row = cur.fetchone()
            if row is None or not closing.pending(row[0], row[1], tool) or not closing.may_change(row[2], command):
                return None
        with self.db.cursor() as cur:
            found = closing.resolve(_Steps(cur, self.team, session_id), tool, command)
        return None if found is None else Resolved(*found)  # closing.resolve's tuple is its fields in order

    def flaky_count(self, signatures: Iterable[str]) -> int:
        wanted = list(dict.fromkeys(signatures))
        if not wanted:
            return 0
        with self.db.cursor() as cur:
            cur.execute(
                "SELECT coalesce(max(count), 0) FROM flaky_failures WHERE team_id = %s AND sig = ANY(%s)",
                (self.team, wanted),
            )
            row = cur.fetchone()
            return int(row[0]) if row else 0

    def claim_recall(self, session_id: str, hexids: Iterable[str]) -> str | None:
        wanted = list(dict.fromkeys(hexids))
        if not wanted:
            return None
        with self.db.cursor() as cur:
            for hexid in wanted:
                cur.execute(
                    "INSERT INTO session_recalls (team_id, session_id, hex, at) VALUES (%s, %s, %s, %s) "
                    "ON CONFLICT DO NOTHING",
                    (self.team, session_id, hexid, now()),
                )
                if cur.rowcount == 1:
                    return hexid
            return None


_FAILURE_COLUMNS = "last_tool, last_error, last_failure_at, last_signatures, last_command, last_checkout"
_PARKED_COLUMNS = "tool, error, failed_at, signatures, command, checkout"


class _Steps:
    """``closing.Steps`` on a cursor of one team, the session's row locked first."""

    def __init__(self, cur: Cursor, team: int, session_id: str) -> None:
        self.cur, self.team, self.session_id = cur, team, session_id

    def failure(self) -> tuple[Any, ...] | None:
        self.cur.execute(
            "SELECT last_tool, last_error, last_failure_at, last_signatures, last_command, last_checkout FROM sessions "
            "WHERE team_id = %s AND id = %s FOR UPDATE",
            (self.team, self.session_id),
        )
        return self.cur.fetchone()

    def since(self, table: str, at: str) -> list[str]:
        self.cur.execute(
            f"SELECT hex FROM {table} WHERE team_id = %s AND session_id = %s AND COALESCE(last_at, at) >= %s "
            "ORDER BY at, hex",
            (self.team, self.session_id, at),
        )
        return [r[0] for r in self.cur.fetchall()]

    def notes_since(self, at: str) -> list[str]:
        self.cur.execute(
            "SELECT n.hex FROM session_notes n LEFT JOIN records r ON r.team_id = n.team_id AND r.hex = n.hex "
            "WHERE n.team_id = %s AND n.session_id = %s AND COALESCE(n.last_at, n.at) >= %s "
            "AND NOT (COALESCE(r.origin, '') = 'local_auto' AND COALESCE(r.topic_key, '') LIKE 'auto/%%') "
            "ORDER BY n.at, n.hex",
            (self.team, self.session_id, at),
        )
        return [r[0] for r in self.cur.fetchall()]

    def count_used(self, hexes: list[str]) -> None:
        self.cur.execute(
            "UPDATE records SET used_success = used_success + 1 WHERE team_id = %s AND hex = ANY(%s)",
            (self.team, hexes),
        )

    def confirmable(self, notes: list[str], signatures: list[str]) -> set[str]:
        self.cur.execute(
            "SELECT DISTINCT r.hex FROM records r JOIN signatures s ON s.team_id = r.team_id AND s.hex = r.hex "
            "WHERE r.team_id = %s AND r.hex = ANY(%s) AND s.sig = ANY(%s) AND NOT r.forgotten "
            "AND r.origin <> ALL(%s)",
            (self.team, notes, signatures, list(closing.KEPT_ORIGINS)),
        )
        return {r[0] for r in self.cur.fetchall()}

    def confirm(self, hexes: list[str]) -> None:
        self.cur.execute(
            "UPDATE records SET origin = 'local_auto' WHERE team_id = %s AND hex = ANY(%s)", (self.team, hexes)
        )

    def take_edits(self, at: str) -> list[str]:
        self.cur.execute(
            "SELECT path FROM session_edits WHERE team_id = %s AND session_id = %s AND at >= %s ORDER BY at, path",
            (self.team, self.session_id, at),
        )
        edited = [r[0] for r in self.cur.fetchall()]
        self.cur.execute(
            "DELETE FROM session_edits WHERE team_id = %s AND session_id = %s AND at >= %s",
            (self.team, self.session_id, at),
        )
        return edited

    def take_steps(self, at: str) -> list[str]:
        # ctid orders two steps of one instant as inserted, as SQLite's rowid does.
        self.cur.execute(
            "DELETE FROM session_steps WHERE team_id = %s AND session_id = %s AND at >= %s RETURNING at, ctid, command",
            (self.team, self.session_id, at),
        )
        return [str(r[2]) for r in sorted(self.cur.fetchall(), key=lambda r: (r[0], str(r[1])))]

    def parked(self) -> list[tuple[int, str | None]]:
        self.cur.execute(
            "SELECT id, command FROM session_parked WHERE team_id = %s AND session_id = %s ORDER BY id DESC",
            (self.team, self.session_id),
        )
        return [(int(r[0]), r[1]) for r in self.cur.fetchall()]

    def restore(self, parked: int) -> None:
        self.cur.execute(
            f"UPDATE sessions SET ({_FAILURE_COLUMNS}, outcome) = "
            f"(SELECT {_PARKED_COLUMNS}, '失败' FROM session_parked WHERE id = %s) WHERE team_id = %s AND id = %s",
            (parked, self.team, self.session_id),
        )
        self.cur.execute("DELETE FROM session_parked WHERE id = %s", (parked,))

    def park_pending(self) -> None:
        self.cur.execute(
            f"INSERT INTO session_parked (team_id, session_id, {_PARKED_COLUMNS}) "
            f"SELECT team_id, id, {_FAILURE_COLUMNS} FROM sessions WHERE team_id = %s AND id = %s",
            (self.team, self.session_id),
        )

    def forget_kept(self) -> None:
        for table in ("session_edits", "session_steps"):
            self.cur.execute(
                f"DELETE FROM {table} WHERE team_id = %s AND session_id = %s", (self.team, self.session_id)
            )

    def add_step(self, command: str) -> None:
        self.cur.execute(
            "INSERT INTO session_steps (team_id, session_id, at, command) SELECT team_id, id, %s, %s FROM sessions "
            "WHERE team_id = %s AND id = %s AND last_failure_at IS NOT NULL",
            (now(), command, self.team, self.session_id),
        )
        # sqlite/statements.py's record_step: only the newest steps are kept.
        self.cur.execute(
            "DELETE FROM session_steps WHERE team_id = %s AND session_id = %s AND ctid NOT IN "
            "(SELECT ctid FROM session_steps WHERE team_id = %s AND session_id = %s ORDER BY at DESC LIMIT %s)",
            (self.team, self.session_id, self.team, self.session_id, closing.STEPS_KEPT),
        )

    def count_flaky(self, signatures: list[str]) -> None:
        self.cur.execute(
            "INSERT INTO flaky_failures (team_id, sig, count, last_at) "
            "SELECT %s, s, 1, %s FROM unnest(%s::text[]) AS u(s) "
            "ON CONFLICT (team_id, sig) DO UPDATE SET count = flaky_failures.count + 1, last_at = excluded.last_at",
            (self.team, now(), list(dict.fromkeys(signatures))),
        )

    def clear(self) -> None:
        self.cur.execute(
            "UPDATE sessions SET last_tool = NULL, last_error = NULL, last_failure_at = NULL, "
            "last_signatures = NULL, last_command = NULL, last_checkout = NULL, outcome = '成功' "
            "WHERE team_id = %s AND id = %s",
            (self.team, self.session_id),
        )

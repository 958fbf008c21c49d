"""The SQLite statements that change a session, on a bare connection: the store's
(``sessions.SQLiteSessions``) and the hook's fast path's (``capture/fast_path.py``), which runs them
with sqlite3's C core alone, so both ways leave the same rows (``tests/capture/test_hook.py``
compares them). Closing the loop (:func:`resolve_in`) and the queue of automatic records
(:func:`queue`, :func:`claim`) are the store's side of ``capture/finisher.py``: the hook queues a
record in the transaction that ends the failure, a detached finisher writes it.

Imports json alone at module level: the fast path imports this module on every hook event.
"""

from __future__ import annotations

import json

TYPE_CHECKING = False  # typing costs the hook ~5 ms; mypy reads the name as typing's
if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Iterable
    from typing import Any

# The number of schema steps this jiyi has, ``len(migrations.MIGRATIONS)``, which
# tests/store/test_sqlite_store.py holds it to: the fast path takes a store whose recorded steps are
# as many as current, without importing the steps and their registry (~1.3 M instructions, ~0.3 ms
# of every hook event, measured under callgrind).
SCHEMA_STEPS = 16
# A queued row this old is not being finished by the process started for it (that takes well under
# a second); the next hook event starts another finisher.
STALE_SECONDS = 10
# A row that failed this many times is left for inspection (``jiyi doctor`` counts it).
MAX_ATTEMPTS = 3


def set_failure(
    db: sqlite3.Connection,
    session_id: str,
    tool: str | None,
    error: str | None,
    signatures: Iterable[str],
    command: str | None,
    checkout: str | None,
    at: str,
) -> None:
    """``Store.set_failure``'s statements (in the caller's transaction): an error of None clears
    the failure; a failure of another operation parks the pending one (``closing.parks``)."""
    sigs = json.dumps(list(dict.fromkeys(signatures))) if error else None
    if error:
        _park(db, session_id, command)
    db.execute(
        "UPDATE sessions SET last_tool = ?, last_error = ?, last_failure_at = ?, last_signatures = ?, "
        "last_command = ?, last_checkout = ?, outcome = CASE WHEN ? THEN '失败' ELSE outcome END WHERE id = ?",
        (tool, error, at if error else None, sigs, command if error else None, checkout if error else None,
         bool(error), session_id),
    )  # fmt: skip


_FAILURE_COLUMNS = "last_tool, last_error, last_failure_at, last_signatures, last_command, last_checkout"
_PARKED_COLUMNS = "tool, error, failed_at, signatures, command, checkout"


def _park(db: sqlite3.Connection, session_id: str, command: str | None) -> None:
    pending = db.execute(f"SELECT {_FAILURE_COLUMNS} FROM sessions WHERE id = ?", (session_id,)).fetchone()
    parked = db.execute("SELECT id, command FROM session_parked WHERE session_id = ?", (session_id,)).fetchall()
    if not parked and (
        pending is None
        or pending[2] is None
        or pending[4] is None
        or command is None
        or pending[4].split() == command.split()
    ):
        return  # the common cases (none pending, the same command again), without the closing rules
    from ..closing import PARKED, parks, superseded

    gone = [(i,) for i, parked_command in parked if superseded(parked_command, command)]
    db.executemany("DELETE FROM session_parked WHERE id = ?", gone)  # met again: the new failure is it
    if pending is not None and pending[2] is not None and parks(pending[4], command):
        db.execute(
            f"INSERT INTO session_parked (session_id, {_PARKED_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (session_id, *pending),
        )
        db.execute(
            "DELETE FROM session_parked WHERE session_id = ? AND id NOT IN "
            "(SELECT id FROM session_parked WHERE session_id = ? ORDER BY id DESC LIMIT ?)",
            (session_id, session_id, PARKED),
        )


def record_edits(db: sqlite3.Connection, session_id: str, paths: Iterable[str], at: str) -> None:
    """``Store.record_edits``' statement: kept only while a failure is pending (an edit before it or
    without one fixes nothing)."""
    db.executemany(
        "INSERT INTO session_edits (session_id, path, at) SELECT id, ?, ? FROM sessions "
        "WHERE id = ? AND last_failure_at IS NOT NULL "
        "ON CONFLICT(session_id, path) DO UPDATE SET at = excluded.at",
        [(path, at, session_id) for path in dict.fromkeys(p for p in paths if p)],
    )


def record_step(db: sqlite3.Connection, session_id: str, command: str, at: str) -> None:
    """A state-changing command the session ran (``analysis/commands.py``): kept only while a
    failure is pending, for ``Resolved.steps``."""
    db.execute(
        "INSERT INTO session_steps (session_id, at, command) SELECT id, ?, ? FROM sessions "
        "WHERE id = ? AND last_failure_at IS NOT NULL",
        (at, command, session_id),
    )
    # A failure left pending for hours keeps only its latest steps: an automatic record names the
    # last few (auto_record.STEPS_KEPT), and a session must not grow without end.
    from ..closing import STEPS_KEPT

    db.execute(
        "DELETE FROM session_steps WHERE session_id = ? AND rowid NOT IN "
        "(SELECT rowid FROM session_steps WHERE session_id = ? ORDER BY rowid DESC LIMIT ?)",
        (session_id, session_id, STEPS_KEPT),
    )


def count_flaky(db: sqlite3.Connection, signatures: Iterable[str], at: str) -> None:
    """A failure with ``signatures`` passed on a re-run with nothing changed: one more each."""
    db.executemany(
        "INSERT INTO flaky_failures (sig, count, last_at) VALUES (?, 1, ?) "
        "ON CONFLICT(sig) DO UPDATE SET count = count + 1, last_at = excluded.last_at",
        [(sig, at) for sig in dict.fromkeys(signatures)],
    )


class _Steps:
    """``closing.Steps`` on a bare SQLite connection."""

    __slots__ = ("db", "session_id")

    def __init__(self, db: sqlite3.Connection, session_id: str) -> None:
        self.db, self.session_id = db, session_id

    def failure(self) -> tuple[Any, ...] | None:
        row = self.db.execute(
            "SELECT last_tool, last_error, last_failure_at, last_signatures, last_command, last_checkout "
            "FROM sessions WHERE id = ?",
            (self.session_id,),
        ).fetchone()
        if row is None:
            return None
        return (*row[:3], None if row[3] is None else json.loads(row[3]), *row[4:])

    def since(self, table: str, at: str) -> list[str]:
        sql = f"SELECT hex FROM {table} WHERE session_id = ? AND COALESCE(last_at, at) >= ? ORDER BY at"
        return [r[0] for r in self.db.execute(sql, (self.session_id, at))]

    def notes_since(self, at: str) -> list[str]:
        sql = (
            "SELECT n.hex FROM session_notes n LEFT JOIN records r ON r.hex = n.hex "
            "WHERE n.session_id = ? AND COALESCE(n.last_at, n.at) >= ? "
            "AND NOT (COALESCE(r.origin, '') = 'local_auto' AND COALESCE(r.topic_key, '') LIKE 'auto/%') ORDER BY n.at"
        )
        return [r[0] for r in self.db.execute(sql, (self.session_id, at))]

    def count_used(self, hexes: list[str]) -> None:
        self.db.executemany("UPDATE records SET used_success = used_success + 1 WHERE hex = ?", [(h,) for h in hexes])

    def confirmable(self, notes: list[str], signatures: list[str]) -> set[str]:
        from ..closing import KEPT_ORIGINS

        rows = self.db.execute(
            f"SELECT DISTINCT r.hex FROM records r JOIN signatures s ON s.hex = r.hex "
            f"WHERE r.hex IN ({','.join('?' * len(notes))}) AND s.sig IN ({','.join('?' * len(signatures))}) "
            f"AND r.forgotten = 0 AND r.origin NOT IN ({','.join('?' * len(KEPT_ORIGINS))})",
            [*notes, *signatures, *KEPT_ORIGINS],
        )
        return {r[0] for r in rows}

    def confirm(self, hexes: list[str]) -> None:
        self.db.executemany("UPDATE records SET origin = 'local_auto' WHERE hex = ?", [(h,) for h in hexes])

    def take_edits(self, at: str) -> list[str]:
        edited = [
            r[0]
            for r in self.db.execute(
                "SELECT path FROM session_edits WHERE session_id = ? AND at >= ? ORDER BY at, path",
                (self.session_id, at),
            )
        ]
        self.db.execute("DELETE FROM session_edits WHERE session_id = ? AND at >= ?", (self.session_id, at))
        return edited

    def take_steps(self, at: str) -> list[str]:
        steps = [
            r[0]
            for r in self.db.execute(
                "SELECT command FROM session_steps WHERE session_id = ? AND at >= ? ORDER BY at, rowid",
                (self.session_id, at),
            )
        ]
        self.db.execute("DELETE FROM session_steps WHERE session_id = ? AND at >= ?", (self.session_id, at))
        return steps

    def parked(self) -> list[tuple[int, str | None]]:
        sql = "SELECT id, command FROM session_parked WHERE session_id = ? ORDER BY id DESC"
        return [(int(r[0]), r[1]) for r in self.db.execute(sql, (self.session_id,))]

    def restore(self, parked: int) -> None:
        self.db.execute(
            f"UPDATE sessions SET ({_FAILURE_COLUMNS}, outcome) = "
            f"(SELECT {_PARKED_COLUMNS}, '失败' FROM session_parked WHERE id = ?) WHERE id = ?",
            (parked, self.session_id),
        )
        self.db.execute("DELETE FROM session_parked WHERE id = ?", (parked,))

    def park_pending(self) -> None:
        self.db.execute(
            f"INSERT INTO session_parked (session_id, {_PARKED_COLUMNS}) "
            f"SELECT id, {_FAILURE_COLUMNS} FROM sessions WHERE id = ?",
            (self.session_id,),
        )

    def forget_kept(self) -> None:
        for table in ("session_edits", "session_steps"):
            self.db.execute(f"DELETE FROM {table} WHERE session_id = ?", (self.session_id,))

    def add_step(self, command: str) -> None:
        record_step(self.db, self.session_id, command, _stamp())

    def count_flaky(self, signatures: list[str]) -> None:
        count_flaky(self.db, signatures, _stamp())

    def clear(self) -> None:
        self.db.execute(
            "UPDATE sessions SET last_tool = NULL, last_error = NULL, last_failure_at = NULL, "
            "last_signatures = NULL, last_command = NULL, last_checkout = NULL, outcome = '成功' WHERE id = ?",
            (self.session_id,),
        )


def resolve_in(
    db: sqlite3.Connection, session_id: str, tool: str, command: str | None = None
) -> tuple[Any, ...] | None:
    """``Store.resolve_failure`` on ``db`` inside the caller's write transaction, by the rules of
    ``store/closing.py``: the fields of a ``store.base.Resolved`` in order; None when the session's
    last failure is not one of ``tool`` run again by ``command`` (nothing resolved)."""
    # Imported here: most hook events close no loop, and each module costs the hook's start.
    from ..closing import resolve

    return resolve(_Steps(db, session_id), tool, command)


def _stamp() -> str:
    """``records.now()`` without datetime (the fast path runs these statements)."""
    import time

    stamp = time.time()
    whole = int(stamp)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{int((stamp - whole) * 1e6):06d}+00:00"


def queue(
    db: sqlite3.Connection, session_id: str, resolved: tuple[Any, ...], command: str | None, cwd: str, at: str
) -> None:
    """Queue the automatic record of ``resolved`` (:func:`resolve_in`'s tuple) in the caller's
    transaction, for a finisher. ``command`` (the succeeding call's) is already redacted."""
    _, _, tool, error, signatures, failed, notes, edited, checkout, steps, _flaky = resolved
    failure = {
        "tool": tool,
        "error": error,
        "signatures": list(signatures),
        "command": failed,
        "noted": list(notes),
        "edited": list(edited),
        "checkout": checkout,  # the failing commit: the record's reproduction is written from it
        "steps": list(steps),
    }
    db.execute(
        "INSERT INTO auto_record_queue (session_id, failure, command, cwd, queued) VALUES (?, ?, ?, ?, ?)",
        (session_id, json.dumps(failure, ensure_ascii=False), command, cwd, at),
    )


def claim(db: sqlite3.Connection) -> tuple[int, str, str, str | None, str] | None:
    """The oldest queued row not given up on, its attempt counted before the work (so a row that
    kills its finisher every time ends at MAX_ATTEMPTS): (id, session, failure, command, cwd)."""
    row = db.execute(
        "UPDATE auto_record_queue SET attempts = attempts + 1 WHERE id = "
        "(SELECT id FROM auto_record_queue WHERE attempts < ? ORDER BY id LIMIT 1) "
        "RETURNING id, session_id, failure, command, cwd",
        (MAX_ATTEMPTS,),
    ).fetchone()
    if row is None:
        return None
    return int(row[0]), str(row[1]), str(row[2]), row[3], str(row[4])

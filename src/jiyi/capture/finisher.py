"""Closing the loop (SPEC §5) on SQLite, with the automatic record written after the hook returns.

A success of the tool that failed ends the session's failure: the records read since get
``used_success + 1``, a note written since that shares a signature becomes ``local_auto``, the
failure is cleared and the outcome becomes 成功 (:func:`resolve_in`, the statements of
``SQLiteStore.resolve_failure``). All that is a handful of statements; what is not cheap is the
automatic record — signature analysis, the record's index terms, a topic look-up, ~90 ms of a
hook process — so the hook's quick path defers it:

1. in the transaction that resolves the failure, the resolved failure and the succeeding command
   (both redacted) go into ``auto_record_queue`` (:func:`queue`): once the hook returns, the
   event is in the store, whatever happens to any process after;
2. the hook starts ``jiyi hook --finish <store>`` detached (:func:`start_finisher`) and exits;
3. the finisher (:func:`finish`) writes each queued record through ``auto_record.write`` and only
   then deletes its row. A finisher killed half-way leaves the row; writing it again is a no-op
   (``auto_record.write`` finds the record by its topic, with this session as its writer), so
   finishing is idempotent. Finishers take a lock file one at a time, so two never write one
   topic at once.

A row left behind (its finisher died, or never started) is picked up by the next hook event of any
session that finds a row older than :data:`STALE_SECONDS` (``hook_quick``: one sub-select in the
statement it runs anyway). A row that failed :data:`MAX_ATTEMPTS` times is left for inspection.

Imports json and os alone at module level: :func:`resolve_in` and :func:`queue` run in the hook.
"""

from __future__ import annotations

import json
import os
import sys

TYPE_CHECKING = False  # typing costs the hook ~5 ms; mypy reads the name as typing's
if TYPE_CHECKING:
    import sqlite3
    from typing import Any

    from ..store.base import Store

# A row this old is not being finished by the process started for it (that takes well under a
# second); the next hook event starts another finisher.
STALE_SECONDS = 10
MAX_ATTEMPTS = 3
LOCK_NAME = "finish.lock"


def resolve_in(db: sqlite3.Connection, session_id: str, tool: str) -> tuple[Any, ...] | None:
    """``Store.resolve_failure`` on ``db`` inside the caller's write transaction: (records used,
    notes confirmed, failed tool, error, signatures, failed command, notes since, files edited,
    where it failed); None when the session's last failure is not one of ``tool`` (nothing changed)."""
    row = db.execute(
        "SELECT last_tool, last_error, last_failure_at, last_signatures, last_command, last_checkout "
        "FROM sessions WHERE id = ?",
        (session_id,),
    ).fetchone()
    if row is None or row[2] is None or (row[0] or "").lower() != tool.lower():
        return None
    failed_tool, error, since, stored, command, checkout = row
    if stored is not None:
        signatures = list(json.loads(stored))
    else:  # a failure recorded before the signatures were kept
        from ..analysis.signature import analyze

        signatures = list(analyze(error or "").signatures)
    since_sql = "SELECT hex FROM {} WHERE session_id = ? AND COALESCE(last_at, at) >= ? ORDER BY at"
    used = [r[0] for r in db.execute(since_sql.format("session_reads"), (session_id, since))]
    db.executemany("UPDATE records SET used_success = used_success + 1 WHERE hex = ?", [(h,) for h in used])
    notes = [r[0] for r in db.execute(since_sql.format("session_notes"), (session_id, since))]
    confirmed: list[str] = []
    if notes and signatures:
        matching = db.execute(
            f"SELECT DISTINCT r.hex FROM records r JOIN signatures s ON s.hex = r.hex "
            f"WHERE r.hex IN ({','.join('?' * len(notes))}) AND s.sig IN ({','.join('?' * len(signatures))}) "
            "AND r.forgotten = 0 AND r.origin NOT IN ('local_auto', 'team_verified', 'human')",
            [*notes, *signatures],
        )
        found = {r[0] for r in matching}
        confirmed = [h for h in notes if h in found]
        db.executemany("UPDATE records SET origin = 'local_auto' WHERE hex = ?", [(h,) for h in confirmed])
    edited = [
        r[0]
        for r in db.execute(
            "SELECT path FROM session_edits WHERE session_id = ? AND at >= ? ORDER BY at, path", (session_id, since)
        )
    ]
    db.execute("DELETE FROM session_edits WHERE session_id = ?", (session_id,))
    db.execute(
        "UPDATE sessions SET last_tool = NULL, last_error = NULL, last_failure_at = NULL, "
        "last_signatures = NULL, last_command = NULL, last_checkout = NULL, outcome = '成功' WHERE id = ?",
        (session_id,),
    )
    return (
        used, confirmed, failed_tool or tool, error or "", tuple(signatures), command, tuple(notes), tuple(edited),
        checkout,
    )  # fmt: skip


def evident(failed_command: str | None, command: str | None, edited: tuple[str, ...]) -> bool:
    """The fix is evident (``auto_record.build``'s rule): the command changed, or files were
    edited in between. Both commands as kept (redacted)."""
    changed = failed_command is not None and command is not None and failed_command.split() != command.split()
    return changed or bool(edited)


def queue(
    db: sqlite3.Connection, session_id: str, resolved: tuple[Any, ...], command: str | None, cwd: str, at: str
) -> None:
    """Queue the automatic record of ``resolved`` (:func:`resolve_in`'s tuple), in the caller's
    transaction. ``command`` (the succeeding call's) is already redacted."""
    _, _, tool, error, signatures, failed, notes, edited, checkout = resolved
    failure = {
        "tool": tool,
        "error": error,
        "signatures": list(signatures),
        "command": failed,
        "noted": list(notes),
        "edited": list(edited),
        "checkout": checkout,  # the failing commit: the record's reproduction is written from it
    }
    db.execute(
        "INSERT INTO auto_record_queue (session_id, failure, command, cwd, queued) VALUES (?, ?, ?, ?, ?)",
        (session_id, json.dumps(failure, ensure_ascii=False), command, cwd, at),
    )


def start_finisher(store_path: str) -> bool:
    """Start ``python -m jiyi hook --finish <store_path>`` in a session of its own, stdio on the
    null device, and do not wait: the agent waits for the hook's stdout to close, and the hook's
    exit leaves the finisher to init. False when it could not start (the row waits for the next
    event)."""
    if not sys.executable:
        return False
    args = [sys.executable, "-m", "jiyi", "hook", "--finish", store_path]
    if hasattr(os, "posix_spawn"):  # ~1 ms; subprocess would cost the hook ~8 ms of imports
        actions = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_RDWR, 0) for fd in (0, 1, 2)]
        try:
            os.posix_spawn(sys.executable, args, os.environ, file_actions=actions, setsid=True)
            return True
        except NotImplementedError:  # no POSIX_SPAWN_SETSID here: the subprocess way below
            pass
        except OSError:
            return False
    import subprocess

    null = subprocess.DEVNULL
    flags = getattr(subprocess, "DETACHED_PROCESS", 0) | getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)
    try:
        child = subprocess.Popen(
            args, stdin=null, stdout=null, stderr=null, start_new_session=os.name != "nt", creationflags=flags
        )
    except OSError:
        return False
    child.returncode = 0  # left running on purpose: no ResourceWarning when the object goes
    return True


def _lock(folder: str) -> Any:
    """An exclusive lock on ``<folder>/finish.lock``, waited for; the OS drops it when the holder
    dies. None where there is no fcntl (finishers may then overlap: a topic written twice at once
    fails one of them, whose row is tried again later)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        return None
    handle = open(os.path.join(folder, LOCK_NAME), "a+b")  # noqa: SIM115 - held until the finisher ends
    fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
    return handle


def _claim(db: sqlite3.Connection) -> tuple[int, str, str, str | None, str] | None:
    """The oldest row not given up on, its attempt counted before the work (so a row that kills
    its finisher every time ends at MAX_ATTEMPTS)."""
    row = db.execute(
        "UPDATE auto_record_queue SET attempts = attempts + 1 WHERE id = "
        "(SELECT id FROM auto_record_queue WHERE attempts < ? ORDER BY id LIMIT 1) "
        "RETURNING id, session_id, failure, command, cwd",
        (MAX_ATTEMPTS,),
    ).fetchone()
    if row is None:
        return None
    return int(row[0]), str(row[1]), str(row[2]), row[3], str(row[4])


def finish(store_path: str) -> int:
    """Write every queued automatic record of the store at ``store_path``; returns how many rows
    were finished. Safe to run any number of times, at once or after a killed run."""
    import sqlite3
    from pathlib import Path

    from ..store.sqlite.store import SQLiteStore

    lock = _lock(os.path.dirname(store_path) or ".")
    store = SQLiteStore(Path(store_path))  # opened first: it migrates a store that needs it
    queue_db = sqlite3.connect(store_path, timeout=5, isolation_level=None)
    done = 0
    try:
        while (claimed := _claim(queue_db)) is not None:
            rowid, session_id, failure, command, cwd = claimed
            try:
                write(store, session_id, failure, command, cwd)
            except Exception as exc:  # the row stays, counted; the others are still finished
                print(f"jiyi hook --finish: row {rowid}: {type(exc).__name__}: {exc}", file=sys.stderr)
                continue
            queue_db.execute("DELETE FROM auto_record_queue WHERE id = ?", (rowid,))
            done += 1
    finally:
        queue_db.close()
        store.close()
        if lock is not None:
            lock.close()
    return done


def write(store: Store, session_id: str, failure_json: str, command: str | None, cwd: str) -> None:
    """The automatic record of one queued row, for the project of ``cwd`` as the hook saw it
    (``auto_record.write``, idempotent for a session: see the module's docstring)."""
    from pathlib import Path

    from .. import project
    from ..store.base import Resolved
    from . import auto_record

    failure = json.loads(failure_json)
    resolved = Resolved(
        [],
        [],
        tool=failure["tool"],
        error=failure["error"],
        signatures=tuple(failure["signatures"]),
        command=failure["command"],
        noted=tuple(failure["noted"]),
        edited=tuple(failure["edited"]),
        checkout=failure.get("checkout"),  # rows queued before it was kept have none
    )
    found = project.detect(Path(cwd))
    auto_record.write(store, resolved, command, session_id=session_id, project=found, environment=project.environment())

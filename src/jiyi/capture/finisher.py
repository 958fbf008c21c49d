"""The automatic record written after the hook returns (docs/spec.md §5): the finisher process.

A success of the tool that failed ends the session's failure: the records read since get
``used_success + 1``, a note written since that shares a signature becomes ``local_auto``, the
failure is cleared and the outcome becomes 成功 (``store/sqlite/statements.py``: ``resolve_in``, the
statements of ``SQLiteStore.resolve_failure``). All that is a handful of statements; what is not
cheap is the automatic record — signature analysis, the record's index terms, a topic look-up,
~90 ms of a hook process — so the hook's fast path defers it:

1. in the transaction that resolves the failure, the resolved failure and the succeeding command
   (both redacted) go into ``auto_record_queue`` (``statements.queue``): once the hook returns, the
   event is in the store, whatever happens to any process after;
2. the hook starts ``jiyi hook --finish <store>`` detached (:func:`start_finisher`) and exits;
3. the finisher (:func:`finish`) writes each queued record through ``auto_record.write`` and only
   then deletes its row. A finisher killed half-way leaves the row; writing it again is a no-op
   (``auto_record.write`` finds the record by its topic, with this session as its writer), so
   finishing is idempotent. Finishers take a lock file one at a time, so two never write one
   topic at once.

A row left behind (its finisher died, or never started) is picked up by the next hook event of any
session that finds a row older than ``statements.STALE_SECONDS`` (``fast_path``: one sub-select in the
statement it runs anyway). A row that failed ``statements.MAX_ATTEMPTS`` times is left for inspection.

Imports os and sys alone at module level: :func:`start_finisher` runs in the hook.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing costs the hook ~5 ms; mypy reads the name as typing's
if TYPE_CHECKING:
    from typing import Any

    from ..store.base import Store


LOCK_NAME = "finish.lock"


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


def finish(store_path: str) -> int:
    """Write every queued automatic record of the store at ``store_path``; returns how many rows
    were finished. Safe to run any number of times, at once or after a killed run."""
    import sqlite3
    from pathlib import Path

    from ..store.sqlite.statements import claim
    from ..store.sqlite.store import SQLiteStore

    lock = _lock(os.path.dirname(store_path) or ".")
    store = SQLiteStore(Path(store_path))  # opened first: it migrates a store that needs it
    queue_db = sqlite3.connect(store_path, timeout=5, isolation_level=None)
    done = 0
    try:
        while (claimed := claim(queue_db)) is not None:
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
    from ..store.sqlite.sessions import queued
    from . import auto_record

    resolved = queued(failure_json)
    found = project.detect(Path(cwd))
    auto_record.write(store, resolved, command, session_id=session_id, project=found, environment=project.environment())

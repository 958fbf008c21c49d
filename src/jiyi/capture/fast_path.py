"""The hook's quick path (docs/spec.md §5: ≤ 50 ms an event): the common events with sqlite3 alone.

Most events are a successful tool call with no failure pending, an edit while one is, a failure
no record matches, or a success that closes a loop. They are applied here with json, os and
sqlite3's C core — one statement for a success — when the store and the session exist and the
settings are the defaults and JIYI_* variables (else ``config.load`` reads the files first).
Closing a loop runs the store's own statements (``store/sqlite/statements.py``) and queues the
automatic record for a detached finisher. Anything else goes the full way (``hook._full``): a new
session, a schema to migrate, a failure a record may be recalled for, a team sync, so the store's
own code does all that is not trivial. The statements that change a session are the store's own
(``store/sqlite/statements.py``: ``set_failure``, ``record_edits``, ``resolve_in``, ``queue``); the
touch here also checks the schema and the queue in one statement. ``tests/capture/test_hook.py``
checks that both ways leave the same rows.
"""

from __future__ import annotations

import os
import sys

from ..git_head import failure_point, git_top
from ..store.sqlite.statements import (
    MAX_ATTEMPTS,
    SCHEMA_STEPS,
    STALE_SECONDS,
    queue,
    record_edits,
    resolve_in,
    set_failure,
)
from .events import TEAM_SYNC_EVENTS
from .results import keep_patterns, patterns_from, signatures_of

TYPE_CHECKING = False  # typing costs the hook ~5 ms; mypy reads the name as typing's
if TYPE_CHECKING:
    import sqlite3
    from typing import Any

    from .events import Event, ToolCall


def _xdg(variable: str, fallback: str) -> str:
    """platformdirs' folder on Linux (``$XDG_…`` else ``fallback``), without importing it."""
    return os.path.join(os.environ.get(variable, "").strip() or os.path.expanduser(fallback), "jiyi")


def _shown_paths(edited: tuple[str, ...], folder: str) -> list[str] | None:
    """The edited files as ``_full`` keeps them (relative to the project root when inside it);
    None when a path is not plain enough to be sure pathlib would agree (the full way then)."""
    base = git_top(folder) or folder
    shown = []
    for name in edited:
        path = os.path.join(folder, name)
        if os.sep != "/" or path.startswith("//") or os.path.normpath(path) != path or "/../" in f"{path}/":
            return None
        if path == base:
            shown.append(".")
        elif path.startswith(base.rstrip("/") + "/"):
            shown.append(path[len(base.rstrip("/")) + 1 :])
        else:
            shown.append(path)
    return shown


# config's spellings of a boolean setting (``config._BOOL_TRUE`` / ``_BOOL_FALSE``), without its imports.
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def quick_settings(folder: str, environ: dict[str, str]) -> tuple[str, str | None, int, bool] | None:
    """(store path, session id from the environment, busy timeout ms, automatic records) as
    ``config.load`` would give them; None when it must decide: a settings file exists, a value
    needs checking, or the platform's folders are not Linux's."""
    linux = sys.platform.startswith("linux")
    config_dir = environ.get("JIYI_CONFIG_DIR")
    if not config_dir and not linux:
        return None
    folder_of_config = os.path.expanduser(config_dir) if config_dir else _xdg("XDG_CONFIG_HOME", "~/.config")
    if os.path.exists(os.path.join(folder_of_config, "config.toml")):
        return None
    root = git_top(folder)
    if root is not None and os.path.exists(os.path.join(root, ".jiyi.toml")):
        return None
    home = environ.get("JIYI_HOME")
    if home:
        home = os.path.expanduser(home)
    elif linux and not os.environ.get("JIYI_HOME"):  # Settings' default reads os.environ itself
        home = _xdg("XDG_DATA_HOME", "~/.local/share")
    else:
        return None
    timeout = environ.get("JIYI_BUSY_TIMEOUT_MS") or "5000"
    if not timeout.isdigit():
        return None  # config.load reports the bad value
    auto = (environ.get("JIYI_AUTO_RECORDS") or "true").strip().lower()
    if auto not in _TRUE + _FALSE:
        return None  # config.load reports the bad value
    session_id = environ.get("JIYI_SESSION_ID") or environ.get("CLAUDE_CODE_SESSION_ID") or None
    return os.path.join(home, "jiyi.db"), session_id, min(int(timeout), 2000), auto in _TRUE


def _loaded_settings(folder: str, environ: dict[str, str], event: Event) -> tuple[str, str | None, int, bool] | None:
    """What ``quick_settings`` gives, from ``config.load`` itself when a settings file applies
    (~10 ms of imports rather than the ~45 ms of the full way); None when the full way must run:
    the settings are not valid (it reports them), or a team sync is due."""
    from pathlib import Path

    from .. import config
    from ..errors import JiyiError

    root = git_top(folder)
    try:
        settings = config.load(Path(root) if root else None, environ)
    except JiyiError:
        return None
    if event.call is None and event.name in TEAM_SYNC_EVENTS and settings.team:
        return None
    return str(settings.store_path), settings.session_id, min(settings.busy_timeout_ms, 2000), settings.auto_records


def _now(ago: float = 0.0) -> str:
    """``records.now()`` without datetime: UTC ISO 8601 with microseconds (``ago`` seconds back)."""
    import time

    stamp = time.time() - ago
    whole = int(stamp)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{int((stamp - whole) * 1e6):06d}+00:00"


def _sqlite() -> Any:
    """sqlite3's C core: the package around it imports datetime for adapters unused here (~5 ms)."""
    import importlib

    try:
        return importlib.import_module("_sqlite3")
    except ImportError:
        return importlib.import_module("sqlite3")


def apply(event: Event, environ: dict[str, str], *, recall_to: bool) -> tuple[bool, str | None]:
    """(handled, recall line) of ``event``: handled False when ``hook._full`` must apply it."""
    if event.call is None and event.name in TEAM_SYNC_EVENTS and environ.get("JIYI_TEAM_URL"):
        return False, None  # the full way starts the team sync
    folder = os.path.realpath(event.cwd if event.cwd and os.path.isdir(event.cwd) else os.getcwd())
    quick = quick_settings(folder, environ) or _loaded_settings(folder, environ, event)
    if quick is None:
        return False, None
    store_path, env_session, timeout, auto_records = quick
    session_id = event.session_id or env_session
    if not session_id:
        return True, None  # no conversation to attach the result to
    if not os.path.exists(store_path):
        return False, None  # the store creates it
    sqlite = _sqlite()

    db = sqlite.connect(store_path, timeout=timeout / 1000, isolation_level=None)
    here = _Here(session_id, folder, os.path.dirname(store_path), auto_records)
    try:
        done = _quick_apply(db, event, here, SCHEMA_STEPS, recall_to)
    except sqlite.Error:
        return False, None  # whatever it was, the store's way reports it properly
    finally:
        db.close()
    if here.finish:
        from .finisher import start_finisher

        start_finisher(store_path)
    return done


class _Here:
    """Where an event applies, and whether a finisher is to be started once the store is closed."""

    __slots__ = ("auto_records", "finish", "folder", "home", "session_id")

    def __init__(self, session_id: str, folder: str, home: str, auto_records: bool) -> None:
        self.session_id, self.folder, self.home, self.auto_records = session_id, folder, home, auto_records
        self.finish = False


def _quick_apply(
    db: sqlite3.Connection, event: Event, here: _Here, migrations: int, recall_to: bool
) -> tuple[bool, str | None]:
    session_id, folder, home = here.session_id, here.folder, here.home
    db.execute("PRAGMA synchronous = NORMAL")
    # touch_session for a session that exists; the count of recorded steps against SCHEMA_STEPS says
    # the schema is current;
    # a queued automatic record nobody finished (``finisher``) gets a finisher.
    rows = db.execute(
        "UPDATE sessions SET last_seen = ? WHERE id = ? "
        "RETURNING last_tool, last_failure_at, (SELECT count(*) FROM _migrations), "
        "(SELECT count(*) FROM auto_record_queue WHERE attempts < ? AND queued < ?), last_command",
        (_now(), session_id, MAX_ATTEMPTS, _now(ago=STALE_SECONDS)),
    ).fetchall()
    if not rows or rows[0][2] < migrations:
        return False, None
    last_tool, failed_at, _, left_behind, failed_command = rows[0]
    here.finish = left_behind > 0
    call = event.call
    if call is None:
        return True, None
    if call.ok:
        pending = failed_at is not None
        if pending and (last_tool or "").lower() == call.tool.lower():
            from ..store.closing import may_change

            if not may_change(failed_command, call.command):
                return True, None  # a look around: it neither ends the failure nor fixes it
            return _close_loop(db, call, here), None
        if pending and call.edited:
            shown = _shown_paths(call.edited, folder)
            if shown is None:
                return False, None
            record_edits(db, session_id, shown, _now())
        return True, None
    patterns_from(os.path.join(home, "cache"))
    from .cleaning import clean_command, clean_error  # only now: most events are no failure

    text = clean_error(call.error) or f"{call.tool} failed"
    signatures = signatures_of(text)
    command = clean_command(call.command)
    keep_patterns()
    if recall_to and signatures:
        marks = ",".join("?" * len(signatures))
        # A record not yet recalled to the session may be: the full way (``recall``) decides.
        unrecalled = db.execute(
            f"SELECT 1 FROM signatures WHERE sig IN ({marks}) AND hex NOT IN "
            "(SELECT hex FROM session_recalls WHERE session_id = ?) LIMIT 1",
            (*signatures, session_id),
        ).fetchall()
        if unrecalled:
            return False, None
    # Where it failed, kept now: its automatic record replays it at this commit (git_head). A few
    # file reads, and none for a tool without a command to replay.
    if failed_at is not None:
        from ..analysis.commands import displaces

        if not displaces(failed_command, command):
            return True, None  # a look around failed: the pending failure stays the one to fix
    checkout = failure_point(folder) if command else None
    db.execute("BEGIN IMMEDIATE")  # parking the pending failure and taking its place are one change
    try:
        set_failure(db, session_id, call.tool, text, signatures, command, checkout, _now())
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return True, None


def _close_loop(db: sqlite3.Connection, call: ToolCall, here: _Here) -> bool:
    """The success ends the failure now (``statements.resolve_in``, the store's statements); its
    automatic record, when one may be due, is queued in the same transaction for a finisher."""
    from .cleaning import clean_command, evident

    command = None
    if call.command:
        patterns_from(os.path.join(here.home, "cache"))
        command = clean_command(call.command)  # redacted before it is stored, as every command
        keep_patterns()
    db.execute("BEGIN IMMEDIATE")
    try:
        resolved = resolve_in(db, here.session_id, call.tool, command)
        if resolved is not None and here.auto_records:
            failed_command, noted, edited = resolved[5:8]
            steps, flaky = resolved[9:11]
            # No record when a note was written since (it was just confirmed), the failure was
            # flaky, or no fix is evident.
            if not noted and not flaky and evident(failed_command, command, edited, steps):
                queue(db, here.session_id, resolved, command, here.folder, _now())
                here.finish = True
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return True

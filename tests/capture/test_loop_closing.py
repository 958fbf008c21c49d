"""The hook closes a loop at once and leaves the automatic record to a detached finisher, which
cannot lose it: the queued row stays until its record is in the store, and writing it twice is a no-op."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import jiyi
from jiyi.capture import events as hook_events
from jiyi.capture import fast_path as hook_quick
from jiyi.capture import finisher as loop_closing
from jiyi.capture import hook
from jiyi.records import Record
from jiyi.store.sqlite import statements

from ..helpers import hook_env, run_hook, settled

SECRET = "ghp_R4nD0mT0k3nV4lu3F0rT3st1ngAbCdEf12"
FAILED = "cc main.o -o app"
FIXED = f"GH_TOKEN={SECRET} cc main.o -lz -o app"
ERROR = "Exit code 1\nld: undefined symbol deflate"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "zlib-port"
    folder.mkdir()
    monkeypatch.chdir(folder)
    return folder


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The finishers the hook asked for, none started: as if each died before doing anything."""
    asked: list[str] = []
    monkeypatch.setattr(loop_closing, "start_finisher", lambda path: asked.append(path) or True)
    return asked


def _event(name: str, project: Path, session_id: str, **fields: Any) -> hook_events.Event:
    payload = {"session_id": session_id, "cwd": str(project), "hook_event_name": name, **fields}
    event = hook_events.parse("claude-code", payload)
    assert event is not None
    return event


def _failure(project: Path, session_id: str) -> hook_events.Event:
    return _event(
        "PostToolUseFailure", project, session_id, tool_name="Bash", tool_input={"command": FAILED}, error=ERROR
    )


def _success(project: Path, session_id: str) -> hook_events.Event:
    return _event(
        "PostToolUse",
        project,
        session_id,
        tool_name="Bash",
        tool_input={"command": FIXED},
        tool_response={"stdout": ""},
    )


def _queued(jiyi_home: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(jiyi_home / "jiyi.db") as db:
        rows = db.execute("SELECT session_id, command, attempts, failure FROM auto_record_queue ORDER BY id").fetchall()
    db.close()
    return rows


def _records() -> list[Record]:
    with jiyi.Memory() as memory:
        return memory.store.list_records()


def _closed_and_queued(project: Path, jiyi_home: Path, session_id: str = "s1") -> None:
    hook.report(_failure(project, session_id))  # a new session: the full way
    assert hook_quick.apply(_success(project, session_id), dict(os.environ), recall_to=True) == (True, None)


def test_the_success_is_stored_before_the_hook_returns_and_the_record_follows(
    jiyi_home: Path, project: Path, started: list[str]
) -> None:
    _closed_and_queued(project, jiyi_home)
    store_path = str(jiyi_home / "jiyi.db")
    assert started == [store_path]
    with jiyi.Memory() as memory:
        state = memory.store.session("s1")
    assert state is not None and (state.last_error, state.outcome) == (None, "成功")  # closed at once
    (row,) = _queued(jiyi_home)
    assert row[0] == "s1" and row[2] == 0
    assert SECRET not in row[1] and "[REDACTED:github-token]" in row[1]  # redacted before it is stored
    assert _records() == []

    assert loop_closing.finish(store_path) == 1
    (record,) = _records()
    assert (record.origin, record.session_id, record.outcome) == ("local_auto", "s1", "成功")
    assert record.fix is not None and record.fix.command == row[1]
    assert _queued(jiyi_home) == []
    assert loop_closing.finish(store_path) == 0  # nothing left: a second finisher does nothing
    assert [r.hex for r in _records()] == [record.hex]


def test_a_finisher_killed_after_writing_leaves_one_record(jiyi_home: Path, project: Path, started: list[str]) -> None:
    _closed_and_queued(project, jiyi_home)
    store_path = str(jiyi_home / "jiyi.db")
    # A finisher that took the row and wrote the record, then was killed before deleting the row.
    db = sqlite3.connect(store_path, isolation_level=None)
    claimed = statements.claim(db)
    db.close()
    assert claimed is not None
    with jiyi.Memory() as memory:
        loop_closing.write(memory.store, *claimed[1:])
    (written,) = _records()
    assert _queued(jiyi_home)[0][2] == 1  # the row is still there, one attempt counted

    assert loop_closing.finish(store_path) == 1  # the next finisher writes it again: a no-op
    (record,) = _records()
    assert (record.hex, record.revision, record.sources) == (written.hex, 1, 1)
    assert _queued(jiyi_home) == []


def test_a_row_left_behind_is_finished_at_a_later_hook_event(
    tmp_path: Path, jiyi_home: Path, project: Path, started: list[str]
) -> None:
    _closed_and_queued(project, jiyi_home)
    with sqlite3.connect(jiyi_home / "jiyi.db") as db:  # its finisher never ran: the row grew old
        db.execute("UPDATE auto_record_queue SET queued = '2000-01-01T00:00:00.000000+00:00'")
    db.close()
    assert _records() == []
    # Any later event of any session (a real hook process) starts a finisher for it.
    other = {"session_id": "s1", "cwd": str(project), "hook_event_name": "PostToolUse", "tool_name": "Read"}
    done = run_hook(tmp_path, jiyi_home, other)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    settled(jiyi_home)
    (record,) = _records()
    assert record.origin == "local_auto" and record.session_id == "s1"


def test_a_fresh_row_is_left_to_its_own_finisher(
    tmp_path: Path, jiyi_home: Path, project: Path, started: list[str]
) -> None:
    _closed_and_queued(project, jiyi_home)
    other = _event("PostToolUse", project, "s1", tool_name="Read")
    assert hook_quick.apply(other, dict(os.environ), recall_to=True) == (True, None)
    assert started == [str(jiyi_home / "jiyi.db")]  # only the one started when it was queued


def test_no_record_is_queued_without_an_evident_fix_or_with_a_note(
    jiyi_home: Path, project: Path, started: list[str]
) -> None:
    hook.report(_failure(project, "same"))
    same = _event("PostToolUse", project, "same", tool_name="Bash", tool_input={"command": FAILED}, tool_response={})
    assert hook_quick.apply(same, dict(os.environ), recall_to=True) == (True, None)
    hook.report(_failure(project, "noted"))
    with jiyi.Memory() as memory:
        memory.session(session_id="noted").note(
            title="Link zlib with -lz",
            type="bugfix",
            scope="project",
            content={"what": "ld: undefined symbol deflate", "why": "no -lz", "where": "Makefile", "learned": "-lz"},
        )
    assert hook_quick.apply(_success(project, "noted"), dict(os.environ), recall_to=True) == (True, None)
    assert _queued(jiyi_home) == [] and started == []
    ((origin,),) = {(r.origin,) for r in _records()}
    assert origin == "local_auto"  # the note was confirmed at once instead


def test_jiyi_auto_records_off_queues_nothing(jiyi_home: Path, project: Path, started: list[str]) -> None:
    hook.report(_failure(project, "off"))
    environ = {**os.environ, "JIYI_AUTO_RECORDS": "false"}
    assert hook_quick.apply(_success(project, "off"), environ, recall_to=True) == (True, None)
    assert _queued(jiyi_home) == [] and started == []


def test_a_row_that_keeps_failing_is_given_up_and_the_others_still_finish(
    jiyi_home: Path, project: Path, started: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    _closed_and_queued(project, jiyi_home)
    with sqlite3.connect(jiyi_home / "jiyi.db") as db:  # rows no finisher can use, queued first
        db.executemany(
            "INSERT INTO auto_record_queue (id, session_id, failure, command, cwd, queued) "
            "VALUES (?, ?, ?, NULL, '.', '')",
            [(-1, "y", "not json"), (0, "x", "{}")],
        )
    db.close()
    store_path = str(jiyi_home / "jiyi.db")
    assert loop_closing.finish(store_path) == 1
    left = [("y", None, statements.MAX_ATTEMPTS), ("x", None, statements.MAX_ATTEMPTS)]
    assert [r[:3] for r in _queued(jiyi_home)] == left
    err = capsys.readouterr().err
    assert "jiyi hook --finish: row -1: JSONDecodeError" in err and "row 0: KeyError" in err
    assert len(_records()) == 1
    assert loop_closing.finish(store_path) == 0  # given up on: not tried again
    assert _queued(jiyi_home)[0][2] == statements.MAX_ATTEMPTS


def test_jiyi_hook_finish_writes_the_queued_records(
    tmp_path: Path, jiyi_home: Path, project: Path, started: list[str]
) -> None:
    _closed_and_queued(project, jiyi_home)
    done = subprocess.run(
        [sys.executable, "-m", "jiyi", "hook", "--finish", str(jiyi_home / "jiyi.db")],
        capture_output=True,
        env=hook_env(tmp_path, jiyi_home),
        timeout=60,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert _queued(jiyi_home) == [] and len(_records()) == 1


@pytest.mark.parametrize("way", ["posix_spawn", "subprocess"])
def test_the_finisher_is_started_detached(jiyi_home: Path, project: Path, started: list[str], way: str) -> None:
    _closed_and_queued(project, jiyi_home)
    (store_path,) = started
    if way == "subprocess":
        with pytest.MonkeyPatch.context() as patch:  # not the test's own: that one holds JIYI_HOME
            patch.delattr(os, "posix_spawn", raising=False)
            assert _real_start(store_path) is True
    elif not hasattr(os, "posix_spawn"):
        pytest.skip("no posix_spawn on this platform")
    else:
        assert _real_start(store_path) is True
    settled(jiyi_home)
    (record,) = _records()
    assert record.origin == "local_auto"


# The real one, kept before the ``started`` fixture replaces it in a test.
_real_start = loop_closing.start_finisher


def test_jiyi_doctor_shows_the_queue(tmp_path: Path, jiyi_home: Path, project: Path, started: list[str]) -> None:
    def doctor(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "jiyi", "doctor", *args],
            capture_output=True,
            text=True,
            env=hook_env(tmp_path, jiyi_home),
            timeout=60,
        )

    _closed_and_queued(project, jiyi_home)
    assert json.loads(doctor("--json").stdout)["auto_records_queued"] == {"waiting": 1, "given_up": 0}
    with sqlite3.connect(jiyi_home / "jiyi.db") as db:
        db.execute("UPDATE auto_record_queue SET attempts = ?", (statements.MAX_ATTEMPTS,))
    db.close()
    text = doctor().stdout.splitlines()
    assert "automatic records queued: 0 waiting, 1 given up (the next hook event finishes the waiting ones)" in text
    assert text[-1] == "ok"

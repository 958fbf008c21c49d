"""Automatic records wait for confirmation before the team sees them, a person approves them, and
what older versions recorded as a fix while the agent only looked is retired, reversibly
(``capture/curation.py``)."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from jiyi.analysis.indexing import derive
from jiyi.capture import curation
from jiyi.cli import main
from jiyi.errors import InvalidArgument, NotFound
from jiyi.records import Fix, Record, Revision, new_hex, now, snapshot
from jiyi.store.sqlite.store import SQLiteStore
from jiyi.team.client import outbox

DATA = Path(__file__).resolve().parent.parent / "data"


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), prog_name="jiyi", catch_exceptions=False)
    return result.exit_code, result.output


def _store_of_main(jiyi_home: Path) -> SQLiteStore:
    jiyi_home.mkdir(parents=True, exist_ok=True)
    shutil.copy(DATA / "store-main-capture.sqlite", jiyi_home / "jiyi.db")
    return SQLiteStore(jiyi_home / "jiyi.db")


def test_doctor_fix_retires_what_main_recorded_as_a_fix_while_the_agent_only_looked(jiyi_home: Path) -> None:
    store = _store_of_main(jiyi_home)
    outbox.enable(store)  # this machine syncs with a team: the forgets are queued for it
    store.close()
    code, out = _cli("doctor", "--fix")
    assert code == 0, out
    assert "fix: 3 of 4 automatic records retired" in out
    for looked in ("fixed by ls tests", "fixed by cat main.c", "fixed by git status"):
        assert looked in out
    store = SQLiteStore(jiyi_home / "jiyi.db")
    try:
        (kept,) = store.list_records()
        assert kept.title.endswith("fixed by cc -o app main.c -lz")
        with store.transaction() as db:
            assert db.execute("SELECT count(*) FROM outbox_forget").fetchone()[0] == 3
        # Again: nothing more to retire.
        assert curation.retire(store).retired == []
        retired = [r for r in store.iter_records(include_forgotten=True) if r.forgotten]
        assert len(retired) == 3
    finally:
        store.close()
    code, out = _cli("list", "--forgotten")
    assert code == 0 and all(r.id in out for r in retired)
    code, out = _cli("restore", retired[0].id)
    assert code == 0 and f"restored {retired[0].id}" in out
    store = SQLiteStore(jiyi_home / "jiyi.db")
    try:
        back = store.get(retired[0].hex)
        assert back is not None and back.signatures  # its keys derived again: found by its error
        assert store.by_signature(back.signatures, 5) == [back.hex]
    finally:
        store.close()


def test_doctor_fix_reports_in_json(jiyi_home: Path) -> None:
    _store_of_main(jiyi_home).close()
    code, out = _cli("doctor", "--fix", "--json")
    assert code == 0
    fixed = json.loads(out)["fixed"]
    assert fixed["checked"] == 4 and len(fixed["retired"]) == 3


def first(record: Record) -> Revision:
    return Revision(record.hex, 1, record.session_id, record.created, "created", snapshot(record))


def _auto(store: SQLiteStore, **changes: object) -> Record:
    stamp = now()
    record = Record(
        hex=new_hex(), title="E: yaml — fixed by pip install pyyaml", type="bugfix", scope="project",
        what="ModuleNotFoundError: No module named 'yaml'", why="Recorded automatically by jiyi", where="ran: x",
        learned="ran pip install pyyaml", project="p", project_key="p", origin="local_auto",
        topic_key="auto/" + new_hex()[:12], fix=Fix("command", command="pip install pyyaml"), session_id="s1",
        created=stamp, updated=stamp,
    )  # fmt: skip
    record = replace(record, **changes)  # type: ignore[arg-type]
    store.write_record(record, first(record), derive(record))
    return record


def _due(store: SQLiteStore) -> set[str]:
    return {h for h, _ in outbox._due(store, "all", True, set())}


def test_an_automatic_record_is_pushed_only_once_confirmed(jiyi_home: Path) -> None:
    store = SQLiteStore(jiyi_home / "jiyi.db")
    try:
        outbox.enable(store)
        note = _auto(store, origin="note", topic_key=None)
        waiting, second, used, approved = (_auto(store) for _ in range(4))
        assert _due(store) == {note.hex}
        assert outbox.status(store).unconfirmed == 4
        store.add_evidence(second.hex, sources=1, session_id="s2")  # the same fix in a second session
        store.add_evidence(used.hex, used_success=1)  # read, then the failure passed
        assert curation.approve(store, approved.hex).origin == "human"
        assert _due(store) == {note.hex, second.hex, used.hex, approved.hex}
        assert curation.unconfirmed(store.get(waiting.hex))  # type: ignore[arg-type]
        assert outbox.status(store).unconfirmed == 1
    finally:
        store.close()


def test_only_this_machines_live_records_can_be_approved_and_restore_refuses_a_taken_topic(jiyi_home: Path) -> None:
    store = SQLiteStore(jiyi_home / "jiyi.db")
    try:
        pulled = _auto(store, remote=True, topic_key=None)
        with pytest.raises(InvalidArgument, match="not this machine"):
            curation.approve(store, pulled.hex)
        record = _auto(store)
        store.forget(record.hex)
        with pytest.raises(NotFound):
            curation.approve(store, record.hex)
        _auto(store, topic_key=record.topic_key)  # the topic is live again
        with pytest.raises(InvalidArgument):
            curation.restore(store, record.hex)
    finally:
        store.close()


def test_a_record_with_edited_files_or_a_real_step_is_never_retired(jiyi_home: Path) -> None:
    store = SQLiteStore(jiyi_home / "jiyi.db")
    try:
        _auto(store, fix=Fix("command", command="ls"), where="command: ls; files: main.c")
        _auto(store)
        looked = _auto(store, fix=Fix("command", command="grep -rn yaml ."), where="command: grep -rn yaml .")
        done = curation.retire(store)
        assert [r.hex for r in done.retired] == [looked.hex] and done.checked == 3
    finally:
        store.close()

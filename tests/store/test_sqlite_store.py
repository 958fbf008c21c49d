"""The embedded store: migrations, faults (locked, corrupt), and real concurrent writers."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import jiyi
from jiyi.analysis.indexing import derive
from jiyi.config import Settings
from jiyi.errors import Unavailable
from jiyi.records import Record, Revision, new_hex, now, snapshot
from jiyi.store import base as store_base
from jiyi.store.migrations import Migration, Migrations
from jiyi.store.sqlite import migrations, statements
from jiyi.store.sqlite.store import SQLiteStore

from ..helpers import ZLIB, note


def test_migrations_are_recorded_once(jiyi_home: Path) -> None:
    path = jiyi_home / "jiyi.db"
    store = SQLiteStore(path)
    names = [n for n, _ in store.applied_migrations()]
    assert names == migrations.MIGRATIONS.names
    store.close()
    again = SQLiteStore(path)
    assert again.applied_migrations() == SQLiteStore(path).applied_migrations()
    assert again.integrity_check() == []
    assert again._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    again.close()


def test_a_failed_migration_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(db: sqlite3.Connection) -> None:
        db.execute("CREATE TABLE half_done (x)")
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(
        migrations, "MIGRATIONS", Migrations([*migrations.MIGRATIONS, Migration("m999_broken", broken)])
    )
    with pytest.raises(Unavailable):
        SQLiteStore(tmp_path / "s.db")
    db = sqlite3.connect(tmp_path / "s.db")
    assert db.execute("SELECT count(*) FROM sqlite_master WHERE name = 'half_done'").fetchone()[0] == 0
    assert "m999_broken" not in {r[0] for r in db.execute("SELECT name FROM _migrations")}


def test_corrupt_store_is_unavailable_and_recovers(jiyi_home: Path) -> None:
    jiyi_home.mkdir(parents=True)
    (jiyi_home / "jiyi.db").write_bytes(os.urandom(8192))
    memory = jiyi.Memory()
    session = memory.session(project="p")
    for tool, args in (
        ("memory_search", {"query": "x"}),
        ("memory_note", ZLIB),
        ("memory_read", {"ref": "lr_" + "a" * 32}),
    ):
        result = session.call(tool, args)
        assert (result.text, result.is_error) == ("记忆暂不可用\n错误码：E_UNAVAILABLE", True)
    # Someone moves the broken file away: the same Memory works again without a restart.
    (jiyi_home / "jiyi.db").rename(jiyi_home / "broken.db")
    assert not session.call("memory_note", ZLIB).is_error
    memory.close()


def test_truncated_store_is_unavailable(jiyi_home: Path) -> None:
    with jiyi.Memory() as memory:
        for i in range(30):
            memory.session(project="p", session_id=f"s{i}").note(**note(title=f"note {i}", what=f"error E{i:04d}"))
    path = jiyi_home / "jiyi.db"
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])
    for extra in jiyi_home.glob("jiyi.db-*"):
        extra.unlink()
    with jiyi.Memory() as memory:
        result = memory.session(project="p").call("memory_search", {"query": "error E0001"})
        assert result.is_error and result.text == "记忆暂不可用\n错误码：E_UNAVAILABLE"


def test_locked_store_times_out_with_unavailable_and_loses_nothing(jiyi_home: Path) -> None:
    settings = Settings(home=jiyi_home, busy_timeout_ms=200)
    with jiyi.Memory(settings=settings) as memory:
        memory.session(project="p", session_id="s0").note(**ZLIB)
    blocker = sqlite3.connect(jiyi_home / "jiyi.db", isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")
    try:
        with jiyi.Memory(settings=settings) as memory:
            result = memory.session(project="p", session_id="s1").call("memory_note", note(title="second"))
            assert result.text == "记忆暂不可用\n错误码：E_UNAVAILABLE"
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    with jiyi.Memory(settings=settings) as memory:
        assert memory.store.count() == 1
        assert not memory.session(project="p", session_id="s1").call("memory_note", note(title="second")).is_error
        assert memory.store.count() == 2


WRITER = textwrap.dedent(
    """
    import sys, jiyi
    worker, count = sys.argv[1], int(sys.argv[2])
    with jiyi.Memory() as memory:
        session = memory.session(project="p", session_id="w" + worker)
        for i in range(count):
            result = session.call("memory_note", {
                "title": f"worker {worker} note {i}", "type": "learning", "scope": "project",
                "topic_key": f"w{worker}/n{i % 3}",
                "content": {"what": f"error W{worker}X{i}", "why": "w", "where": "x", "learned": "l"},
            })
            assert not result.is_error, result.text
    """
)


@pytest.mark.slow
def test_concurrent_writer_processes_lose_nothing(jiyi_home: Path) -> None:
    workers, count = 4, 15
    env = {**os.environ, "JIYI_HOME": str(jiyi_home)}
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(w), str(count)], env=env, stderr=subprocess.PIPE)
        for w in range(workers)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
    with jiyi.Memory() as memory:
        # Three topics per worker, each revised count/3 times.
        assert memory.store.count() == workers * 3
        revisions = sum(len(memory.store.revisions(r.hex)) for r in memory.store.iter_records())
        assert revisions == workers * count
        assert memory.store.integrity_check() == []


def test_first_opens_of_a_new_store_at_the_same_time_all_succeed(tmp_path: Path) -> None:
    # An MCP server and its team sync thread (or a hook) opening a new store together: the
    # switch to WAL lost "database is locked" at once in ~1 race of 10 (issue 5's flaky test).
    threads, rounds = 4, 40
    failures: list[str] = []

    def open_it(path: Path, start: threading.Barrier) -> None:
        start.wait()
        try:
            SQLiteStore(path).close()
        except Unavailable as exc:
            failures.append(exc.reason)

    for n in range(rounds):
        path = tmp_path / f"s{n}" / "jiyi.db"
        path.parent.mkdir()
        start = threading.Barrier(threads)
        workers = [threading.Thread(target=open_it, args=(path, start)) for _ in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    assert failures == []
    store = SQLiteStore(tmp_path / "s0" / "jiyi.db")
    assert [n for n, _ in store.applied_migrations()] == migrations.MIGRATIONS.names
    store.close()


def test_store_that_cannot_be_opened_is_unavailable(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the store's folder should be")
    with jiyi.Memory(home=blocker) as memory:
        result = memory.session(project="p").call("memory_search", {"query": "x"})
        assert (result.text, result.is_error) == ("记忆暂不可用\n错误码：E_UNAVAILABLE", True)


def test_write_many_writes_a_batch_in_one_transaction(jiyi_home: Path) -> None:
    from jiyi.store.base import TermStats

    def made(i: int) -> Record:
        stamp = now()
        return Record(
            hex=new_hex(), title=f"batch record {i}", type="bugfix", scope="global",
            what=f"undefined reference to `batch_symbol_{i}'", why="why", where="where", learned="learned",
            project="p", project_key="p", session_id="s", created=stamp, updated=stamp,
        )  # fmt: skip

    store = SQLiteStore(jiyi_home / "jiyi.db")
    records = [made(i) for i in range(3)]
    items = [(r, Revision(r.hex, 1, "s", r.created, "created", snapshot(r)), derive(r)) for r in records]
    assert store.write_many(items) == 3
    assert store.count() == 3
    assert [len(store.revisions(r.hex)) for r in records] == [1, 1, 1]
    assert store.by_terms(["batch_symbol_1"], 5) == [records[1].hex]
    assert store.term_stats(["batch_symbol_1"]) == TermStats(3, {"batch_symbol_1": 1})
    assert store.forget(records[2].hex)
    assert store.term_stats([]).total == 2  # read from FTS5's own row count
    # A failure part-way leaves nothing of the batch.
    fresh = made(9)
    fresh_item = (fresh, Revision(fresh.hex, 1, "s", fresh.created, "created", snapshot(fresh)), derive(fresh))
    with pytest.raises(Unavailable):
        store.write_many([fresh_item, items[0]])  # revision 1 of items[0] exists: its primary key breaks
    assert store.get(fresh.hex) is None
    assert store.count() == 2
    store.close()


def _segments(store: SQLiteStore) -> int:
    return int(store._guard(lambda db: db.execute("SELECT count(DISTINCT segid) FROM records_fts_idx").fetchone()[0]))


def _written(i: int) -> tuple[Record, Revision, Any]:
    stamp = now()
    r = Record(
        hex=new_hex(), title=f"segment record {i}", type="bugfix", scope="global",
        what=f"undefined reference to `segment_symbol_{i}'", why="why", where="where", learned="learned",
        project="p", project_key="p", session_id="s", created=stamp, updated=stamp,
    )  # fmt: skip
    return r, Revision(r.hex, 1, "s", stamp, "created", snapshot(r)), derive(r)


def test_notes_written_one_at_a_time_leave_few_index_segments(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Each transaction is a segment of its own to FTS5, and every query term is looked up in each.
    from jiyi.store.sqlite import connection

    def mean_segments(place: Path) -> float:
        store = SQLiteStore(place / "jiyi.db")
        written = [_written(i) for i in range(240)]
        seen = []
        for record, revision, derived in written:
            store.write_record(record, revision, derived)
            seen.append(_segments(store))
        # Merged, nothing is lost: every record is still found by its own word, and FTS5 agrees.
        assert all(store.by_terms([f"segment_symbol_{i}"], 5) == [r.hex] for i, (r, _, _) in enumerate(written))
        store._guard(lambda db: db.execute("INSERT INTO records_fts(records_fts, rank) VALUES ('integrity-check', 1)"))
        store.close()
        return sum(seen[40:]) / len(seen[40:])

    kept = mean_segments(tmp_path / "upkeep")
    monkeypatch.setattr(connection, "UPKEEP_EVERY", 10**9)  # FTS5's own merging only
    left = mean_segments(tmp_path / "fts5")
    assert kept <= connection.UPKEEP_SEGMENTS + 1.5 < left


def test_merging_never_waits_for_another_writer(jiyi_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The merge steps come after the caller's own write: with another process holding the write
    # lock they are skipped at once, not after the whole busy timeout, and a later write does them.
    from jiyi.store.sqlite import connection

    monkeypatch.setattr(connection, "UPKEEP_EVERY", 10**9)  # no merging while the segments pile up
    store = SQLiteStore(jiyi_home / "jiyi.db", busy_timeout_ms=3000)
    for record, revision, derived in (_written(i) for i in range(40)):
        store.write_record(record, revision, derived)
    piled = _segments(store)
    assert piled > connection.UPKEEP_SEGMENTS
    other = sqlite3.connect(jiyi_home / "jiyi.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    started = time.monotonic()
    store.upkeep(force=True)
    assert time.monotonic() - started < 1.0
    assert _segments(store) == piled
    other.execute("ROLLBACK")
    other.close()
    store.upkeep(force=True)
    assert _segments(store) < piled
    # The store's own writes still wait for a busy lock as long as they did.
    assert store._guard(lambda db: db.execute("PRAGMA busy_timeout").fetchone()[0]) == 3000
    store.close()


def test_a_bulk_write_merges_in_steps_bounded_by_its_size(jiyi_home: Path) -> None:
    from jiyi.store.sqlite import connection

    store = SQLiteStore(jiyi_home / "jiyi.db")
    for start in range(0, 1200, 100):
        store.write_many([_written(i) for i in range(start, start + 100)])
    assert _segments(store) <= connection.UPKEEP_SEGMENTS + 1
    assert store.count() == 1200
    store.close()


def test_a_common_term_is_ranked_among_its_newest_matches_only(
    jiyi_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stamp = now()

    def made(i: int, title: str) -> Record:
        return Record(
            hex=new_hex(), title=title, type="bugfix", scope="global",
            what=f"ld: undefined symbol deflate ({i})", why="why", where="where", learned="learned",
            project="p", project_key="p", session_id="s", created=stamp, updated=stamp,
        )  # fmt: skip

    store = SQLiteStore(jiyi_home / "jiyi.db")
    # The oldest has the term in its title too: the best bm25 rank of all five.
    records = [made(0, "deflate deflate"), *(made(i, f"record {i}") for i in range(1, 5))]
    store.write_many([(r, Revision(r.hex, 1, "s", r.created, "created", snapshot(r)), derive(r)) for r in records])
    assert store.by_terms(["deflate"], 1) == [records[0].hex]
    monkeypatch.setattr(store_base, "TERM_SCAN", 3)
    found = store.by_terms(["deflate"], 5)
    assert sorted(found) == sorted(r.hex for r in records[2:])


def test_the_hook_knows_how_many_schema_steps_there_are() -> None:
    # The fast path checks a store is current by this count, without importing the steps.
    assert len(migrations.MIGRATIONS) == statements.SCHEMA_STEPS


def _steps(store: SQLiteStore, fn: Any) -> int:
    """SQLite virtual machine steps (in hundreds) ``fn`` costs on ``store``'s connection."""
    counted = [0]

    def tick() -> int:
        counted[0] += 1
        return 0

    store._guard(lambda db: db.set_progress_handler(tick, 100))
    try:
        fn()
    finally:
        store._guard(lambda db: db.set_progress_handler(None, 100))
    return counted[0]


def _many(store: SQLiteStore, count: int, **fields: Any) -> list[Record]:
    stamp = now()
    records = [
        Record(
            hex=new_hex(), title=f"record {i}", type="bugfix", scope="project",
            what=f"ld: undefined symbol deflate {i}", why="why", where="where", learned="learned", project="app",
            project_key=f"/k{i % 3}/app",
            session_id="s", created=stamp, updated=f"2026-01-01T00:00:{i % 60:02d}.{i:06d}+00:00",
        )
        for i in range(count)
    ]  # fmt: skip
    store.write_many([(r, Revision(r.hex, 1, "s", r.created, "created", snapshot(r)), derive(r)) for r in records])
    return records


def test_a_projects_keys_cost_the_same_however_many_records_it_has(jiyi_home: Path) -> None:
    # memory.project(name) pays this on every call: grouping all of a project's records took
    # 200-500 ms at 100 000 records; from the index it is a few look-ups a key.
    store = SQLiteStore(jiyi_home / "jiyi.db")
    _many(store, 300)
    few = _steps(store, lambda: store.project_keys("app"))
    _many(store, 3000)
    assert sorted(store.project_keys("app")) == ["/k0/app", "/k1/app", "/k2/app"]
    many = _steps(store, lambda: store.project_keys("app"))
    assert many <= few + 2, (few, many)
    store.close()


def test_a_text_filter_of_many_matches_pages_them_newest_first(
    jiyi_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jiyi.store.sqlite import store as sqlite_store

    store = SQLiteStore(jiyi_home / "jiyi.db")
    records = _many(store, 30)
    newest = sorted(records, key=lambda r: r.updated, reverse=True)
    where = store_base.RecordFilter(text="deflate")
    sorted_page = store.find_records(where, limit=5, offset=5)
    monkeypatch.setattr(sqlite_store, "_SORT_MATCHES", 10)  # as many matches as found by walking
    walked_page = store.find_records(where, limit=5, offset=5)
    for found, total in (sorted_page, walked_page):
        assert ([r.hex for r in found], total) == ([r.hex for r in newest[5:10]], 30)
    store.close()

"""PostgreSQL: a team whose full-text vectors were built with older terms is re-derived, in batches
(at a server's start, bounded; by `jiyi team admin reindex --terms`), resumably, with exact term
counts, and without losing a push that meets a batch."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

pytestmark = pytest.mark.postgres

psycopg = pytest.importorskip("psycopg")

from starlette.testclient import TestClient  # noqa: E402

from jiyi.analysis import indexing, lexical  # noqa: E402
from jiyi.analysis.indexing import derive  # noqa: E402
from jiyi.cli import main  # noqa: E402
from jiyi.errors import Unavailable  # noqa: E402
from jiyi.records import Record, now  # noqa: E402
from jiyi.store import reindex  # noqa: E402
from jiyi.store.postgres import upgrade  # noqa: E402
from jiyi.store.postgres.search import tsvector_text  # noqa: E402
from jiyi.store.postgres.store import PgDatabase, PgStore  # noqa: E402
from jiyi.store.postgres.team import TeamStore  # noqa: E402
from jiyi.store.sqlite.store import SQLiteStore  # noqa: E402
from jiyi.team.server.app import search_hits  # noqa: E402

from .test_postgres_store import line  # noqa: E402
from .test_reindex import RUSSIAN, RUSSIAN_QUERY, _version_1_terms  # noqa: E402
from .test_store_contract import first, made  # noqa: E402

ACCENTED = "café crème: naïve façade rôle"  # VERSION 1 dropped every accented word
ACCENTED_QUERY = "naive facade"


@pytest.fixture
def db(pg_schema: tuple[str, str]) -> Iterator[PgDatabase]:
    dsn, schema = pg_schema
    with PgDatabase(dsn, schema=schema, max_size=4) as database:
        yield database


def _team(db: PgDatabase, name: str, count: int) -> tuple[PgStore, Record, Record]:
    """A team of ``count`` English records, one Russian and one accented, written by this code."""
    store = TeamStore(db, db.create_team(name))
    for i in range(count):
        record = made(f"zlib {i}")
        store.write_record(record, first(record), derive(record))
    russian = made("sh with CRLF", what=RUSSIAN, learned="dos2unix gradlew")
    accented = made("menu encoding", what=ACCENTED, why="latin-1 page", learned="serve utf-8")
    for record in (russian, accented):
        store.write_record(record, first(record), derive(record))
    return store, russian, accented


def _make_old(store: PgStore) -> None:
    """The team as a server before the terms' version was kept left it: no version row, every
    vector of VERSION 1's terms (the trigger moves the term counts with them, as its writes did)."""
    with store.db.cursor() as cur:
        cur.execute("DELETE FROM lexical_versions WHERE team_id = %s", (store.team,))
        cur.execute(
            "SELECT hex, title, what, why, loc, learned FROM records WHERE team_id = %s AND NOT forgotten",
            (store.team,),
        )
        for hexid, title, what, why, loc, learned in cur.fetchall():
            old = tsvector_text(_version_1_terms(title), _version_1_terms(f"{what}\n{why}\n{loc}\n{learned}"))
            cur.execute(
                "UPDATE records SET tsv = %s::tsvector WHERE team_id = %s AND hex = %s", (old, store.team, hexid)
            )
        store.fold_into(cur)


def _counts(store: PgStore) -> tuple[dict[str, int], dict[str, int]]:
    """(documents per term as the store keeps them, as a fresh count of the vectors gives them)."""
    with store.db.cursor() as cur:
        cur.execute(
            "SELECT term, sum(docs) FROM (SELECT term, docs FROM terms WHERE team_id = %(t)s UNION ALL "
            "SELECT term, n FROM term_changes WHERE team_id = %(t)s) c GROUP BY term HAVING sum(docs) <> 0",
            {"t": store.team},
        )
        kept = {str(t): int(n) for t, n in cur.fetchall()}
        cur.execute(
            "SELECT term, count(*) FROM records, unnest(tsvector_to_array(tsv) || ''::text) term "
            "WHERE team_id = %s AND tsv IS NOT NULL GROUP BY term",
            (store.team,),
        )
        fresh = {str(t): int(n) for t, n in cur.fetchall()}
    return kept, fresh


def _found(store: PgStore, query: str) -> list[str]:
    return [h.record.hex for h in search_hits(store, query, 5)]


def test_an_old_team_is_re_derived_at_start_and_finds_what_it_missed(db: PgDatabase) -> None:
    store, russian, accented = _team(db, "a", 3)
    other, _, _ = _team(db, "b", 1)
    for team in (store, other):
        _make_old(team)
    assert store.lexical_state() == (1, 5)
    assert _found(store, RUSSIAN_QUERY) == [] and _found(store, ACCENTED_QUERY) == []
    assert _found(store, "ld: undefined symbol deflate") != []  # the old terms still answer meanwhile
    assert _counts(store)[0] == _counts(store)[1]

    assert upgrade.upgrade_on_start(db) == 5 + 3
    for team in (store, other):
        assert team.lexical_state() == (lexical.VERSION, 0)
        kept, fresh = _counts(team)
        assert kept == fresh and "нет" in fresh
        assert team.integrity_check() == []
    assert _found(store, RUSSIAN_QUERY) == [russian.hex]
    assert _found(store, ACCENTED_QUERY) == [accented.hex]
    assert upgrade.upgrade_on_start(db) == 0  # nothing left: a start costs one look-up


def test_a_new_team_is_current_and_a_forgotten_record_is_left_unindexed(db: PgDatabase) -> None:
    store, russian, _ = _team(db, "a", 1)
    assert store.lexical_state() == (lexical.VERSION, 0)
    _make_old(store)
    assert store.forget(russian.hex)
    assert store.lexical_state() == (1, 2)  # the forgotten record is not counted, nor re-derived
    assert store.upgrade_lexical(10) == 2
    assert store.get(russian.hex, include_forgotten=True) is not None
    assert store.integrity_check() == [] and _found(store, RUSSIAN_QUERY) == []


def test_a_start_is_bounded_and_the_next_one_goes_on(db: PgDatabase, monkeypatch: pytest.MonkeyPatch) -> None:
    store, russian, _ = _team(db, "a", 5)
    _make_old(store)
    monkeypatch.setattr(upgrade, "BATCH", 2)
    assert upgrade.upgrade_on_start(db, seconds=0.0) == 2  # one batch, however short the time
    assert store.lexical_state() == (1, 5)
    while upgrade.upgrade_on_start(db, seconds=0.0):
        pass
    assert store.lexical_state() == (lexical.VERSION, 0)
    assert _found(store, RUSSIAN_QUERY) == [russian.hex]
    kept, fresh = _counts(store)
    assert kept == fresh


def test_an_upgrade_stopped_half_way_loses_nothing_and_resumes(db: PgDatabase, monkeypatch: pytest.MonkeyPatch) -> None:
    store, russian, _ = _team(db, "a", 3)
    _make_old(store)
    calls = {"n": 0}
    real = indexing.lexical_index

    def failing_on_the_third(*fields: str) -> tuple[str, str]:
        calls["n"] += 1
        if calls["n"] == 3:
            raise MemoryError("the process ran out of memory here")
        return real(*fields)

    monkeypatch.setattr(indexing, "lexical_index", failing_on_the_third)
    assert store.upgrade_lexical(2) == 2
    with pytest.raises(MemoryError):
        store.upgrade_lexical(2)  # its first record is re-derived, then the failure: rolled back
    assert store.lexical_state() == (1, 3)
    assert reindex.upgrade_terms(store) == 3
    assert store.lexical_state() == (lexical.VERSION, 0)
    assert _found(store, RUSSIAN_QUERY) == [russian.hex]
    kept, fresh = _counts(store)
    assert kept == fresh


def test_a_push_meeting_a_batch_is_neither_lost_nor_counted_twice(db: PgDatabase) -> None:
    store, russian, _ = _team(db, "a", 2)
    _make_old(store)
    renamed = replace(russian, title="Скрипт с CRLF", revision=2)
    done: list[int] = []
    with db.cursor() as cur:
        # A push of the Russian record holds its row; the batch must wait for it, then read its text.
        cur.execute("SELECT 1 FROM records WHERE team_id = %s AND hex = %s FOR UPDATE", (store.team, russian.hex))
        upgrade = threading.Thread(target=lambda: done.append(store.upgrade_lexical(10)))
        upgrade.start()
        _wait_for_a_lock_wait(db)
        store.put(cur, renamed, derive(renamed))
        store.fold_into(cur)
    upgrade.join(10)
    assert done == [4]
    assert _found(store, "Скрипт") == [russian.hex]
    kept, fresh = _counts(store)
    assert kept == fresh and fresh["скрипт"] == 1


def _wait_for_a_lock_wait(db: PgDatabase) -> None:
    deadline = time.monotonic() + 10
    with psycopg.connect(db.dsn, autocommit=True) as conn:
        while time.monotonic() < deadline:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()"
            ).fetchone()
            if row and row[0]:
                return
            time.sleep(0.01)
    raise AssertionError("the batch never waited for the pushed record's row")


def test_servers_starting_at_once_re_derive_each_record_once(db: PgDatabase, monkeypatch: pytest.MonkeyPatch) -> None:
    store, _, _ = _team(db, "a", 8)
    _make_old(store)
    monkeypatch.setattr(upgrade, "BATCH", 2)
    done: list[int] = []
    starts = [threading.Thread(target=lambda: done.append(upgrade.upgrade_on_start(db, 5.0))) for _ in range(3)]
    for start in starts:
        start.start()
    for start in starts:
        start.join(20)
    assert sum(done) == 10 and store.lexical_state() == (lexical.VERSION, 0)
    kept, fresh = _counts(store)
    assert kept == fresh


def test_a_start_that_cannot_reach_the_database_still_serves(db: PgDatabase) -> None:
    store, _, _ = _team(db, "a", 1)
    _make_old(store)
    db.close()  # the pool refuses: the start logs it and goes on
    assert upgrade.upgrade_on_start(db) == 0
    with pytest.raises(Unavailable):
        store.lexical_state()


def test_the_admin_command_finishes_every_team(pg_schema: tuple[str, str], db: PgDatabase) -> None:
    dsn, schema = pg_schema
    store, russian, _ = _team(db, "alpha", 4)
    other, _, _ = _team(db, "beta", 0)
    _make_old(store)
    _make_old(other)
    args = ["team", "admin", "reindex", "--dsn", dsn, "--schema", schema]
    refused = CliRunner().invoke(main, args)
    assert refused.exit_code == 2 and "--terms" in refused.output and "--signatures" in refused.output
    one = CliRunner().invoke(main, [*args, "--terms", "--team", "beta", "--json"])
    assert one.exit_code == 0, one.output
    assert json.loads(one.output) == {
        "current": lexical.VERSION,
        "teams": [{"team": "beta", "id": other.team, "upgraded": 2, "version": lexical.VERSION}],
    }
    assert store.lexical_state() == (1, 6)
    result = CliRunner().invoke(main, [*args, "--terms"])
    assert result.exit_code == 0, result.output
    assert f"alpha: search terms of 6 records re-derived, version {lexical.VERSION}" in result.output
    assert f"beta: search terms of 0 records re-derived, version {lexical.VERSION}" in result.output
    assert _found(store, RUSSIAN_QUERY) == [russian.hex]
    kept, fresh = _counts(store)
    assert kept == fresh
    by_id = CliRunner().invoke(main, [*args, "--terms", "--team", str(other.team), "--json"])
    assert json.loads(by_id.output)["teams"][0]["team"] == "beta"
    missing = CliRunner().invoke(main, [*args, "--terms", "--team", "gamma"])
    assert missing.exit_code == 1 and "gamma" in missing.output


@pytest.mark.parametrize("replica", [False, True], ids=["primary", "with-read-replica"])
def test_a_server_worker_re_derives_at_start_and_then_serves(
    pg_schema: tuple[str, str], db: PgDatabase, monkeypatch: pytest.MonkeyPatch, replica: bool
) -> None:
    from jiyi.team.server import app as team_server

    dsn, schema = pg_schema
    store, russian, _ = _team(db, "a", 2)
    _make_old(store)
    monkeypatch.setenv("JIYI_TEAM_DSN", dsn)
    monkeypatch.setenv("JIYI_TEAM_SCHEMA", schema)
    if replica:  # the upgrade writes: on the primary, never through the read-only replica
        monkeypatch.setenv("JIYI_TEAM_READ_DSN", dsn)
    app = team_server.app_from_env()  # what each `jiyi team serve` worker builds
    assert store.lexical_state() == (lexical.VERSION, 0)
    assert _found(store, RUSSIAN_QUERY) == [russian.hex]
    with TestClient(app) as client:  # its lifespan closes the worker's pool afterwards
        assert client.get("/v1/health").json() == {"ok": True}


def test_the_admin_list_says_which_teams_are_upgrading(pg_schema: tuple[str, str], db: PgDatabase) -> None:
    dsn, schema = pg_schema
    store, _, _ = _team(db, "alpha", 1)
    _team(db, "beta", 0)
    _make_old(store)
    args = ["team", "admin", "list", "--dsn", dsn, "--schema", schema]
    listed = json.loads(CliRunner().invoke(main, [*args, "--json"]).stdout)
    assert [t["terms"] for t in listed] == [
        {"version": 1, "current": lexical.VERSION, "left": 3},
        {"version": lexical.VERSION, "current": lexical.VERSION, "left": 0},
    ]
    text = CliRunner().invoke(main, args).stdout
    assert f"  search terms: version 1, upgrading to {lexical.VERSION}: 3 records left" in text
    assert text.count("search terms") == 1


def _stale(store: PgStore) -> list[str]:
    """The live records whose vector is not what this code derives from their text."""
    with store.db.cursor() as cur:
        cur.execute(
            "SELECT hex, title, what, why, loc, learned FROM records WHERE team_id = %s AND NOT forgotten",
            (store.team,),
        )
        rows = cur.fetchall()
        cur.execute(
            "SELECT r.hex FROM records r JOIN unnest(%s::text[], %s::text[]) v(hex, tsv) ON r.hex = v.hex "
            "WHERE r.team_id = %s AND r.tsv IS DISTINCT FROM v.tsv::tsvector",
            (
                [row[0] for row in rows],
                [tsvector_text(*indexing.lexical_index(*row[1:])) for row in rows],
                store.team,
            ),
        )
        return [str(row[0]) for row in cur.fetchall()]


def test_pushes_while_an_upgrade_runs_all_end_indexed_by_their_own_text(db: PgDatabase, tmp_path: Path) -> None:
    store, _, _ = _team(db, "a", 20)
    _make_old(store)
    # Every record: VERSION 3 indexes its key lines with its title (VERSION 2 only re-derived the
    # Russian and accented ones, whose ASCII terms were the same in both).
    assert len(_stale(store)) == len(list(store.iter_records()))
    client = SQLiteStore(tmp_path / "client.db")
    try:
        # Every other record: the rest (the Russian one among them) only the upgrade re-derives.
        lines = [
            line(client, replace(r, title=f"Ошибка сборки {i}", revision=r.revision + 1, updated=now()))
            for i, r in enumerate(store.iter_records())
            if i % 2 and r.what != RUSSIAN
        ]
    finally:
        client.close()
    pushed: list[bool] = []
    pusher = threading.Thread(target=lambda: pushed.extend(store.merge_pushed(x, "alice") for x in lines))
    pusher.start()
    while store.upgrade_lexical(3):
        pass
    pusher.join(30)
    assert pushed == [True] * len(lines) and len(lines) >= 10
    assert _stale(store) == [] and store.lexical_state() == (lexical.VERSION, 0)
    kept, fresh = _counts(store)
    assert kept == fresh and fresh["ошибка"] == len(lines) and fresh["нет"] == 1


def _seqs(store: PgStore) -> dict[str, int]:
    with store.db.cursor() as cur:
        cur.execute("SELECT hex, seq FROM records WHERE team_id = %s", (store.team,))
        return {str(h): int(s) for h, s in cur.fetchall()}


def test_rows_written_before_their_keys_were_kept_there_get_them_at_start_and_by_the_admin_command(
    pg_schema: tuple[str, str], db: PgDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    dsn, schema = pg_schema
    store = TeamStore(db, db.create_team("alpha"))
    records = [made(f"zlib {i}", what=f"ld: undefined symbol deflate{i}\nin pthread_create") for i in range(5)]
    for record in records:
        store.write_record(record, first(record), derive(record))
    before = {r.hex: store.get(r.hex) for r in records}
    seqs = _seqs(store)
    assert store.record_keys_left() == 0 and upgrade.unfilled_teams(db) == []
    with db.cursor() as cur:  # as a server before m018_record_keys left them
        cur.execute("UPDATE records SET sigs = NULL, syms = NULL WHERE team_id = %s", (store.team,))
    assert store.record_keys_left() == 5 and upgrade.unfilled_teams(db) == [store.team]
    assert {r.hex: store.get(r.hex) for r in records} == before  # read from the look-up tables meanwhile
    monkeypatch.setattr(upgrade, "BATCH", 2)
    assert upgrade.upgrade_on_start(db, seconds=0) == 2  # one batch at least, however short the time
    assert store.record_keys_left() == 3
    listing = ["team", "admin", "list", "--dsn", dsn, "--schema", schema]
    assert json.loads(CliRunner().invoke(main, [*listing, "--json"]).stdout)[0]["keys"] == {"left": 3}
    assert "keys: 3 older records without them" in CliRunner().invoke(main, listing).stdout
    args = ["team", "admin", "reindex", "--dsn", dsn, "--schema", schema]
    result = CliRunner().invoke(main, [*args, "--keys", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {
        "keys": {"teams": [{"team": "alpha", "id": store.team, "filled": 3, "left": 0}]}
    }
    assert store.record_keys_left() == 0 and upgrade.unfilled_teams(db) == []
    with db.cursor() as cur:
        cur.execute("SELECT count(*) FROM records WHERE team_id = %s AND sigs = '{}'", (store.team,))
        assert cur.fetchone() == (0,)  # each holds its own
    assert {r.hex: store.get(r.hex) for r in records} == before
    assert _seqs(store) == seqs  # the records did not change: no pull brings them again
    again = CliRunner().invoke(main, [*args, "--keys"])
    assert again.exit_code == 0 and "alpha: keys of 0 records put on their rows, 0 left" in again.output
    assert "keys:" not in CliRunner().invoke(main, listing).stdout

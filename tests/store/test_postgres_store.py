"""PostgreSQL only: migrations under concurrent start-up, teams and tokens, team isolation, and the
team server's operations (merging pushes, changes since a cursor, verifications). The ``Store``
interface itself is covered for both backends in test_store_contract.py."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.postgres

psycopg = pytest.importorskip("psycopg")

from jiyi.analysis.indexing import derive  # noqa: E402
from jiyi.errors import InvalidArgument, NotFound, Unavailable  # noqa: E402
from jiyi.records import Fix, Record, Reproduction  # noqa: E402
from jiyi.store import base as store_base  # noqa: E402
from jiyi.store.base import TermStats  # noqa: E402
from jiyi.store.migrations import Migration, Migrations  # noqa: E402
from jiyi.store.postgres import migrations as pg_migrations  # noqa: E402
from jiyi.store.postgres.rows import PUT_SQL, record_row  # noqa: E402
from jiyi.store.postgres.store import PgDatabase  # noqa: E402
from jiyi.store.postgres.team import TeamStore  # noqa: E402
from jiyi.store.sqlite.store import SQLiteStore  # noqa: E402
from jiyi.team.server.app import search_hits  # noqa: E402
from jiyi.transfer import record_to_json  # noqa: E402

from .test_store_contract import first, made  # noqa: E402


@pytest.fixture
def db(pg_schema: tuple[str, str]) -> Iterator[PgDatabase]:
    dsn, schema = pg_schema
    with PgDatabase(dsn, schema=schema, max_size=8) as database:
        yield database


@pytest.fixture
def client(tmp_path: Path) -> Iterator[SQLiteStore]:
    """A member's own machine: records are written here and pushed as their export lines."""
    store = SQLiteStore(tmp_path / "client.db")
    yield store
    store.close()


def line(client: SQLiteStore, record: Record, marks: tuple[tuple[str, str], ...] = ()) -> dict[str, Any]:
    if client.get(record.hex) is None:
        client.write_record(record, first(record), derive(record), marks=marks)
    else:
        client.write_record(record, replace(first(record), change="learned"), derive(record), marks=marks)
    got = client.get(record.hex)
    assert got is not None
    return record_to_json(client, got)


def rows(db: PgDatabase, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    with db.cursor() as cur:
        cur.execute(sql, params)
        return cur.fetchall()


# -- migrations --------------------------------------------------------------------------------
def test_migrations_are_recorded_once(pg_schema: tuple[str, str]) -> None:
    dsn, schema = pg_schema
    with PgDatabase(dsn, schema=schema) as one:
        applied = one.applied_migrations()
        assert [n for n, _ in applied] == pg_migrations.MIGRATIONS.names
    with PgDatabase(dsn, schema=schema) as two:
        assert two.applied_migrations() == applied


def test_servers_starting_at_once_migrate_once(pg_schema: tuple[str, str]) -> None:
    dsn, _ = pg_schema
    schema = pg_schema[1] + "_fresh"  # not created yet: the first to get the lock creates it
    start = threading.Barrier(4)
    opened: list[PgDatabase] = []
    errors: list[BaseException] = []

    def open_one() -> None:
        start.wait()
        try:
            opened.append(PgDatabase(dsn, schema=schema, min_size=1, max_size=1))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(4)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert errors == [] and len(opened) == 4
        names = [n for n, _ in opened[0].applied_migrations()]
        assert names == pg_migrations.MIGRATIONS.names
    finally:
        for database in opened:
            database.close()
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def test_a_failed_migration_leaves_nothing(pg_schema: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    dsn, schema = pg_schema
    broken = Migration("m999_broken", "CREATE TABLE half_done (x int); SELECT 1/0;")
    monkeypatch.setattr(pg_migrations, "MIGRATIONS", Migrations([*pg_migrations.MIGRATIONS, broken]))
    with pytest.raises(Unavailable):
        PgDatabase(dsn, schema=schema)
    with psycopg.connect(dsn) as conn:
        tables = {r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,))}
        names = {r[0] for r in conn.execute(f'SELECT name FROM "{schema}"._migrations')}
    assert "records" in tables and "half_done" not in tables
    assert "m999_broken" not in names


def test_a_read_only_database_migrates_nothing_and_refuses_a_schema_that_lacks_a_migration(
    pg_schema: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    dsn, schema = pg_schema

    def tables() -> set[str]:
        with psycopg.connect(dsn) as conn:
            return {r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,))}

    def refusal() -> str:
        with pytest.raises(Unavailable) as refused:
            PgDatabase(dsn, schema=schema, read_only=True)
        return refused.value.reason

    assert f"lacks {len(pg_migrations.MIGRATIONS)} migration(s) of this jiyi, first m001_records" in refusal()
    assert tables() == set()  # not even _migrations: a standby would have refused it
    PgDatabase(dsn, schema=schema).close()
    # An upgrade: this code knows one step more, which the primary applies and the replica has not yet.
    next_step = Migration("m999_next", "CREATE TABLE nx ()")
    monkeypatch.setattr(pg_migrations, "MIGRATIONS", Migrations([*pg_migrations.MIGRATIONS, next_step]))
    assert "lacks 1 migration(s) of this jiyi, first m999_next: a replica not caught up" in refusal()
    assert "nx" not in tables()
    PgDatabase(dsn, schema=schema).close()
    with PgDatabase(dsn, schema=schema, read_only=True) as replica:
        assert [n for n, _ in replica.applied_migrations()][-1] == "m999_next"


def test_every_transaction_of_a_read_only_database_is_read_only(
    db: PgDatabase, pg_schema: tuple[str, str], client: SQLiteStore
) -> None:
    dsn, schema = pg_schema
    team = db.create_team("alpha")
    pushed = line(client, made(title="a push sent to the replica by mistake"))
    # The DSN's own options are kept, ours added after them.
    with PgDatabase(dsn + " options='-c statement_timeout=4321'", schema=schema, read_only=True) as replica:
        assert replica.list_teams()[0].name == "alpha"
        assert rows(replica, "SHOW statement_timeout") == [("4321ms",)]
        for write in (
            lambda: replica.create_team("beta"),
            lambda: replica.create_token("alpha", "alice"),
            lambda: TeamStore(replica, team).merge_pushed(pushed, "alice"),
        ):
            with pytest.raises(Unavailable) as refused:
                write()
            assert "read-only transaction" in refused.value.reason
    assert [t.name for t in db.list_teams()] == ["alpha"]
    assert rows(db, "SELECT count(*) FROM records") == [(0,)] and rows(db, "SELECT count(*) FROM tokens") == [(0,)]


def test_an_unreachable_server_is_unavailable() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(Unavailable):
        PgDatabase(f"host=127.0.0.1 port={port} dbname=test user=postgres", timeout=2)
    with pytest.raises(InvalidArgument):
        PgDatabase("host=127.0.0.1", schema='x"; DROP')


def test_a_closed_pool_is_unavailable(db: PgDatabase) -> None:
    store = TeamStore(db, db.create_team("t"))
    db.close()
    with pytest.raises(Unavailable):
        store.count()


# -- teams and tokens --------------------------------------------------------------------------
def test_tokens_are_kept_hashed_and_can_be_revoked(db: PgDatabase) -> None:
    team = db.create_team("core")
    with pytest.raises(InvalidArgument):
        db.create_team("core")
    assert [(t.id, t.name) for t in db.list_teams()] == [(team, "core")]
    token = db.create_token("core", "alice")
    other = db.create_token(team, "bob")
    assert token.startswith("jiyi_") and len(token) == len("jiyi_") + 43 and token != other
    stored = rows(db, "SELECT hash, member FROM tokens ORDER BY member")
    assert [m for _, m in stored] == ["alice", "bob"]
    assert all(token not in h and len(h) == 64 for h, _ in stored)
    member = db.authenticate(token)
    assert member is not None and (member.team_id, member.team, member.name) == (team, "core", "alice")
    assert db.authenticate("jiyi_unknown") is None and db.authenticate("") is None
    assert db.revoke_token(token) == 1
    assert db.authenticate(token) is None
    assert db.revoke_token(token) == 0
    assert db.revoke_token(team="core", member="bob") == 1
    assert db.authenticate(other) is None
    with pytest.raises(InvalidArgument):
        db.create_token("no such team", "x")


def test_teams_never_see_each_others_records(db: PgDatabase) -> None:
    a, b = TeamStore(db, db.create_team("a")), TeamStore(db, db.create_team("b"))
    record = made(topic_key="t/x")
    a.write_record(record, first(record), derive(record))
    assert b.get(record.hex) is None and b.get(record.hex, include_forgotten=True) is None
    assert b.get_many([record.hex]) == [] and b.list_records() == [] and list(b.iter_records()) == []
    assert b.by_terms(["deflate"], 5) == [] and b.by_signature(record.signatures, 5) == []
    assert b.by_symbol(record.symbols, 5) == [] and b.indexed_terms([record.hex]) == {}
    assert b.term_stats(["deflate"]).doc_counts == {"deflate": 0} and b.term_stats([]).total == 0
    assert b.find_topic("t/x", "global", "p") is None
    assert b.revisions(record.hex) == [] and search_hits(b, "ld: undefined symbol deflate", 5) == []
    assert b.forget(record.hex) is False and b.purge(record.hex) is False
    assert b.changes_since(0, 10) == ([], 0, False)
    with pytest.raises(NotFound):
        b.add_verification(record.hex, passed=True, how="replay", environment="os=linux", detail="")
    assert db.team_of(record.hex) == a.team and db.team_of("0" * 32) is None
    assert a.count() == 1 and b.count() == 0
    # One member in two teams pushes the same record to both: two records, one per team.
    b.merge_pushed(record_to_json(a, a.get(record.hex)), "bob")  # type: ignore[arg-type]
    assert db.team_of(record.hex, prefer=b.team) == b.team and db.team_of(record.hex, prefer=a.team) == a.team
    assert b.count() == 1 and a.count() == 1
    assert [h.record.hex for h in search_hits(a, "ld: undefined symbol deflate", 5)] == [record.hex]


# -- merging pushes ----------------------------------------------------------------------------
def test_a_retried_push_changes_nothing(db: PgDatabase, client: SQLiteStore) -> None:
    store = TeamStore(db, db.create_team("t"))
    record = made(reproduction=Reproduction("make", "git@example.com:r.git", "abc", ""))
    data = line(client, record)
    assert store.merge_pushed(data, "alice") is True
    _, cursor, _ = store.changes_since(0, 10)
    assert store.merge_pushed(data, "alice") is False
    assert store.changes_since(cursor, 10) == ([], cursor, False)
    got = store.get(record.hex)
    assert got is not None and got.reproduction == record.reproduction and got.title == record.title
    assert len(store.revisions(record.hex)) == 1 and store.integrity_check() == []


def test_pushes_from_two_members_merge_without_loss(db: PgDatabase, client: SQLiteStore) -> None:
    store = TeamStore(db, db.create_team("t"))
    target = made("target", what="another failure")
    store.merge_pushed(line(client, target), "alice")
    record = made(sources=1, used_success=0)
    v1 = line(client, record)
    assert store.merge_pushed(v1, "alice")
    # bob's machine confirmed it twice and used it once: his own absolute counters.
    assert store.merge_pushed({**v1, "sources": 2, "used_success": 1}, "bob")
    got = store.get(record.hex)
    assert got is not None and (got.sources, got.used_success) == (3, 1)
    assert store.merge_pushed({**v1, "sources": 2, "used_success": 1}, "bob") is False
    # alice revises it and marks the target outdated.
    v2 = line(client, replace(record, revision=2, learned="add -lz last"), marks=[(target.hex, "outdated")])
    assert store.merge_pushed(v2, "alice")
    got = store.get(record.hex)
    assert got is not None and got.learned == "add -lz last" and got.revision == 2
    assert [r.revision for r in store.revisions(record.hex)] == [1, 2]
    assert store.marks_by(record.hex) == [(target.hex, "outdated", v2["marks"][0]["created"])]
    assert store.get(target.hex).is_outdated  # type: ignore[union-attr]
    assert (got.sources, got.used_success) == (3, 1)
    # A late retry of revision 1 (without the mark) takes nothing away.
    assert store.merge_pushed(v1, "alice") is False
    got = store.get(record.hex)
    assert got is not None and got.learned == "add -lz last" and len(store.marks_by(record.hex)) == 1
    assert store.by_terms(["last"], 5) == [record.hex]
    assert store.term_stats(["last"]).doc_counts == {"last": 1} and store.integrity_check() == []


def test_malformed_pushes_are_invalid(db: PgDatabase, client: SQLiteStore) -> None:
    store = TeamStore(db, db.create_team("t"))
    data = line(client, made())
    for bad in ({"title": "x"}, {**data, "hex": "../../etc"}, {**data, "sources": "many"}, {**data, "revisions": [1]}):
        with pytest.raises(InvalidArgument):
            store.merge_pushed(bad, "alice")
    assert store.count() == 0


def test_concurrent_pushes_are_all_kept(db: PgDatabase, client: SQLiteStore) -> None:
    store = TeamStore(db, db.create_team("t"))
    # Six members push their own records and, each, new counters for one shared record.
    shared = line(client, made("shared"))
    store.merge_pushed(shared, "alice")
    pushed = {
        m: [line(client, made(f"member {m} note {i}", what=f"error M{m}N{i}")) for i in range(8)] for m in range(6)
    }
    start = threading.Barrier(6)
    failures: list[BaseException] = []

    def push(m: int) -> None:
        start.wait()
        try:
            for data in pushed[m]:
                assert store.merge_pushed(data, f"m{m}")
                store.merge_pushed({**shared, "sources": 1, "used_success": m}, f"m{m}")
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=push, args=(m,)) for m in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert failures == []
    seen: list[str] = []
    cursor, more = 0, True
    while more:
        page, cursor, more = store.changes_since(cursor, 7)
        seen += [d["hex"] for d in page]
    assert set(seen) == {d["hex"] for m in pushed for d in pushed[m]} | {shared["hex"]}
    assert len(seen) == len(set(seen)) == 6 * 8 + 1
    got = store.get(shared["hex"])
    assert got is not None and (got.sources, got.used_success) == (1 + 6, sum(range(6)))
    assert store.term_stats([]).total == 49 and store.integrity_check() == []


def test_a_write_does_not_wait_for_another_writes_term_counts(db: PgDatabase) -> None:
    # The counts were one shared row per term under a lock held to the commit: every push of a
    # team waited for the others' (bench/team_scale.py). Another write stays open here while ours runs.
    store = TeamStore(db, db.create_team("t"))
    open_one, ours = made("deflate open"), made("deflate ours")
    with psycopg.connect(db.dsn, options=f"-c search_path={db.schema}") as other:
        other.execute(PUT_SQL, record_row(store.team, open_one, derive(open_one)))
        done = threading.Event()
        writer = threading.Thread(target=lambda: (store.write_record(ours, first(ours), derive(ours)), done.set()))
        writer.start()
        writer.join(10)
        assert done.is_set()
        assert store.term_stats(["deflate"]) == TermStats(1, {"deflate": 1})
        other.commit()
    assert store.term_stats(["deflate"]) == TermStats(2, {"deflate": 2}) and store.integrity_check() == []


def test_term_counts_stay_exact_while_a_fold_waits(db: PgDatabase) -> None:
    store = TeamStore(db, db.create_team("t"))
    records = [made(f"deflate {i}") for i in range(3)]
    store.write_record(records[0], first(records[0]), derive(records[0]))
    assert rows(db, "SELECT count(*) FROM term_changes") == [(0,)]  # folded by the write itself
    with psycopg.connect(db.dsn, options=f"-c search_path={db.schema}") as other:
        # Another folder holds the team's turn: these writes leave their changes pending.
        other.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"jiyi-terms:{db.schema}:{store.team}",)
        )
        store.write_many((r, first(r), derive(r)) for r in records[1:])
        store.forget(records[0].hex)
        assert rows(db, "SELECT count(*) > 0 FROM term_changes") == [(True,)]
        assert store.term_stats(["deflate", "0"]) == TermStats(2, {"deflate": 2, "0": 0})
        assert store.integrity_check() == []
    store.fold_terms()
    assert rows(db, "SELECT count(*) FROM term_changes") == [(0,)]
    assert store.term_stats(["deflate", "0"]) == TermStats(2, {"deflate": 2, "0": 0})
    assert rows(db, "SELECT docs FROM terms WHERE team_id = %s AND term = ''", store.team) == [(2,)]


def test_the_folder_vacuums_the_term_queue(db: PgDatabase, monkeypatch: pytest.MonkeyPatch) -> None:
    from jiyi.store.postgres import search as pg_search

    def vacuums() -> int:
        found = rows(db, "SELECT vacuum_count FROM pg_stat_user_tables WHERE relid = 'term_changes'::regclass")
        return int(found[0][0])

    store = TeamStore(db, db.create_team("t"))
    monkeypatch.setattr(pg_search, "_FOLDED", {})
    monkeypatch.setattr(pg_search, "_VACUUM_AFTER", 10**9)
    record = made("deflate first")
    store.write_record(record, first(record), derive(record))
    before = vacuums()
    monkeypatch.setattr(pg_search, "_VACUUM_AFTER", 1)
    record = made("deflate second")
    store.write_record(record, first(record), derive(record))
    assert vacuums() == before + 1
    assert store.term_stats(["deflate"]) == TermStats(2, {"deflate": 2}) and store.integrity_check() == []


# -- pulls and verification --------------------------------------------------------------------
def test_changes_since_pages_in_commit_order(db: PgDatabase, client: SQLiteStore) -> None:
    store = TeamStore(db, db.create_team("t"))
    records = [made(f"note {i}") for i in range(5)]
    for record in records:
        store.merge_pushed(line(client, record), "alice")
    page, cursor, more = store.changes_since(0, 2)
    assert [d["hex"] for d in page] == [r.hex for r in records[:2]] and more
    assert page[0]["seq"] < page[1]["seq"] == cursor
    assert set(page[0]) >= {"jiyi_export", "id", "revisions", "marks", "reproduction", "verification", "seq"}
    page, cursor, more = store.changes_since(cursor, 3)
    assert [d["hex"] for d in page] == [r.hex for r in records[2:]] and not more
    assert store.changes_since(cursor, 3) == ([], cursor, False)
    # A change moves a record to the end; a forgotten record is not sent.
    store.merge_pushed(line(client, replace(records[0], revision=2, learned="changed")), "alice")
    store.forget(records[1].hex)
    page, cursor2, _ = store.changes_since(cursor, 10)
    assert [d["hex"] for d in page] == [records[0].hex] and page[0]["learned"] == "changed" and cursor2 > cursor
    with pytest.raises(InvalidArgument):
        store.changes_since(0, 0)


def test_verification_runs_are_kept_and_summarised(db: PgDatabase, client: SQLiteStore) -> None:
    store = TeamStore(db, db.create_team("t"))
    reproduction = Reproduction("make", "https://example.com/r.git", "abc", "")
    fixed = made(fix=Fix("command", command="make LDLIBS=-lz"), reproduction=reproduction)
    store.merge_pushed(line(client, fixed), "alice")
    store.merge_pushed(line(client, made("no fix", reproduction=reproduction)), "alice")
    store.merge_pushed(line(client, made("no reproduction", fix=Fix("command", command="x"))), "alice")
    assert [d["hex"] for d in store.verification_candidates(10)] == [fixed.hex]
    _, cursor, _ = store.changes_since(0, 10)
    failed = store.add_verification(fixed.hex, passed=False, how="replay", environment="os=linux", detail="exit 2")
    assert (failed.passed, failed.tries, failed.environment) == (0, 1, "os=linux")
    assert store.get(fixed.hex).origin == "note"  # type: ignore[union-attr]
    passed = store.add_verification(fixed.hex, passed=True, how="replay", environment="os=darwin", detail="ok")
    assert (passed.passed, passed.tries, passed.environment, passed.how) == (1, 2, "os=darwin", "replay")
    got = store.get(fixed.hex)
    assert got is not None and got.origin == "team_verified" and got.verification == passed
    assert store.verification_candidates(10) == []
    assert rows(db, "SELECT passed, detail FROM verifications ORDER BY id") == [(False, "exit 2"), (True, "ok")]
    page, _, _ = store.changes_since(cursor, 10)
    assert [d["hex"] for d in page] == [fixed.hex] and page[0]["verification"] == passed.to_dict()
    # The owner's next revision keeps what the team's replays concluded.
    store.merge_pushed(line(client, replace(fixed, revision=2, learned="still -lz")), "alice")
    got = store.get(fixed.hex)
    assert got is not None and got.origin == "team_verified" and got.verification == passed
    with pytest.raises(NotFound):
        store.add_verification("0" * 32, passed=True, how="replay", environment="", detail="")


@pytest.mark.parametrize("query", ["'&|!():*\\", "a' | 'b", "!!! ((( ::: ***", "链接时 'x':* & !y", ""])
def test_hostile_searches_are_plain_text(db: PgDatabase, client: SQLiteStore, query: str) -> None:
    store = TeamStore(db, db.create_team("t"))
    store.merge_pushed(line(client, made()), "alice")
    assert search_hits(store, query, 5) == []
    assert len(search_hits(store, query + " undefined symbol deflate", 5)) == 1


def test_a_common_term_is_ranked_among_a_bounded_sample(db: PgDatabase, monkeypatch: pytest.MonkeyPatch) -> None:

    store = TeamStore(db, db.create_team("t"))
    records = [made(f"deflate {i}") for i in range(3)]
    store.write_many((r, first(r), derive(r)) for r in records)
    assert len(store.by_terms(["deflate"], 5)) == 3
    monkeypatch.setattr(store_base, "TERM_SCAN", 2)
    assert len(store.by_terms(["deflate"], 5)) == 2


def test_a_search_commits_each_look_up_and_hands_its_connection_back_as_it_found_it(
    pg_schema: tuple[str, str], client: SQLiteStore
) -> None:
    dsn, schema = pg_schema
    with PgDatabase(dsn, schema=schema, min_size=1, max_size=1) as one:  # the search's connection is the writes'
        store = TeamStore(one, one.create_team("t"))
        store.merge_pushed(line(client, made()), "alice")
        seen: list[tuple[bool, str]] = []
        with store.one_connection() as pinned, pinned.reading() as cur:
            cur.execute("SELECT 1")
            seen.append((cur.connection.autocommit, str(cur.connection.info.transaction_status.name)))
        # No transaction is left open between a search's statements: each one committed by itself.
        assert seen == [(True, "IDLE")]
        assert len(search_hits(store, "undefined symbol deflate", 5)) == 1
        with one.pool.connection() as conn:
            assert conn.autocommit is False  # as the pool hands its connections out
        # A write after the search still runs in its own transaction, and rolls back as one.
        with pytest.raises(Unavailable), one.cursor() as cur:
            cur.execute("UPDATE records SET title = 'changed' WHERE team_id = %s", (store.team,))
            cur.execute("SELECT 1/0")
        with one.cursor() as cur:
            cur.execute("SELECT count(*) FROM records WHERE team_id = %s AND title = 'changed'", (store.team,))
            assert cur.fetchone() == (0,)


def test_one_search_loads_its_candidates_as_a_load_of_its_own_would(db: PgDatabase) -> None:
    store = TeamStore(db, db.create_team("t"))
    target = made("the target", what="some other failure")
    marked = made("deflate marked", what="ld: undefined symbol deflate\nin pthread_create")
    plain, gone, elsewhere = made("deflate plain"), made("deflate gone"), made("deflate elsewhere")
    for record in (target, plain, gone, elsewhere):
        store.write_record(record, first(record), derive(record))
    store.write_record(marked, first(marked), derive(marked), marks=[(target.hex, "outdated")])
    store.mark(marked.hex, "wrong", "a person says so")
    store.forget(gone.hex)
    with store.one_connection() as pinned:
        indexed = pinned.indexed([marked.hex, plain.hex, gone.hex, target.hex], ["deflate"])
        assert set(indexed) == {marked.hex, plain.hex, target.hex}  # a forgotten record has no vector
        assert indexed == store.indexed([marked.hex, plain.hex, gone.hex, target.hex], ["deflate"])
        # Read with the vectors, or on their own when not among them; forgotten ones never.
        loaded = pinned.get_many([plain.hex, gone.hex, marked.hex, elsewhere.hex, target.hex])
    alone = store.get_many([plain.hex, gone.hex, marked.hex, elsewhere.hex, target.hex])
    assert {r.hex: r for r in loaded} == {r.hex: r for r in alone}
    got = {r.hex: r for r in loaded}
    assert set(got) == {plain.hex, marked.hex, elsewhere.hex, target.hex}
    assert got[marked.hex].signatures == tuple(sorted(set(marked.signatures)))
    assert got[marked.hex].symbols == tuple(sorted(set(marked.symbols))) != ()
    assert [m.relation for m in got[marked.hex].marked] == ["wrong"]  # a person's
    assert [(m.source_id, m.relation) for m in got[target.hex].marked] == [("lr_" + marked.hex, "outdated")]


def test_records_written_before_their_keys_were_on_the_row_read_back_whole(pg_schema: tuple[str, str]) -> None:
    dsn, schema = pg_schema
    record = made("deflate", what="ld: undefined symbol deflate\nin pthread_create")
    with PgDatabase(dsn, schema=schema) as old:
        store = TeamStore(old, old.create_team("t"))
        store.write_record(record, first(record), derive(record))
        with old.cursor() as cur:  # as a server before m018_record_keys left it
            cur.execute("ALTER TABLE records DROP COLUMN sigs, DROP COLUMN syms")
            cur.execute("DELETE FROM _migrations WHERE name = 'm018_record_keys'")
    with PgDatabase(dsn, schema=schema) as new:
        store = TeamStore(new, store.team)
        keys = (tuple(sorted(set(record.signatures))), tuple(sorted(set(record.symbols))))
        got = store.get(record.hex)
        assert got is not None and got.signatures and got.symbols
        assert (got.signatures, got.symbols) == keys  # from the look-up tables: the row has none yet
        assert rows(new, "SELECT sigs, syms FROM records WHERE hex = %s", record.hex) == [(None, None)]
        assert [h.record.hex for h in search_hits(store, "ld: undefined symbol deflate", 5)] == [record.hex]
        revised = replace(record, learned="link with -lz", revision=2)
        store.write_record(revised, first(revised), derive(revised))
        assert rows(new, "SELECT sigs, syms FROM records WHERE hex = %s", record.hex) == [tuple(map(list, keys))]
        again = store.get(record.hex)
        assert again is not None and (again.signatures, again.symbols) == keys


def test_one_search_finds_by_words_and_reads_its_candidates_at_once(db: PgDatabase) -> None:
    # PgStore.by_terms_indexed in one search: what by_terms then indexed give, in one statement.
    store = TeamStore(db, db.create_team("t"))
    records = [made(f"deflate {i}", what="ld: undefined symbol deflate " * i) for i in range(1, 5)]
    other = made("the other one", what="some other failure")
    for record in (*records, other):
        store.write_record(record, first(record), derive(record))
    exact = [other.hex, records[0].hex]
    for terms, limit in [(["deflate"], 3), (["deflate", "undefined"], 10), (["nowhere"], 5), ([], 5)]:
        with store.one_connection() as pinned:
            found, indexed = pinned.by_terms_indexed(terms, limit, exact, ["deflate", "other"])
            loaded = pinned.get_many([other.hex, *found])
        assert found == store.by_terms(terms, limit)
        assert indexed == store.indexed([*exact, *found], ["deflate", "other"])
        assert [r.hex for r in loaded] == sorted({other.hex, *found})  # in hex order, as loaded alone


def test_one_search_counts_its_symbols_with_its_first_look_ups(db: PgDatabase) -> None:
    # PgSearch.term_stats_and_keys in one search: the symbols no count is kept for, counted in the
    # same statement and capped as symbol_counts caps them (base.counted_symbols), so that
    # symbol_counts then needs no statement of its own.
    store = TeamStore(db, db.create_team("t"))
    records = [made(f"deflate {i}", signatures=(f"s{i}",), symbols=("shared", f"own_{i}")) for i in range(7)]
    store.write_many((r, first(r), derive(r)) for r in records)
    symbols = ["shared", "own_3", "nowhere"]
    alone = store.symbol_counts(symbols, 7)
    assert alone == {"shared": 3, "own_3": 1, "nowhere": 0}  # 7 records: counted up to int(7 x 0.3) + 1
    with store.one_connection() as pinned:
        stats, _ = pinned.term_stats_and_keys(["deflate"], ["s1"], symbols, 5)
        assert stats.total == 7
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(pinned, "reading", None)  # any statement now would fail
            assert pinned.symbol_counts(symbols, stats.total) == alone
    # Not at another size: then it counts them again, as a store does outside a search.
    with store.one_connection() as pinned:
        pinned.term_stats_and_keys(["deflate"], [], symbols, 5)
        assert (
            pinned.symbol_counts(symbols, 100)
            == store.symbol_counts(symbols, 100)
            == {"shared": 7, "own_3": 1, "nowhere": 0}
        )

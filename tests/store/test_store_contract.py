"""The ``Store`` interface, once per backend: every documented behaviour on SQLite and on
PostgreSQL (one fresh schema and team per test). SQLite-only matters (WAL, locks, corrupt files)
are in test_sqlite_store.py; PostgreSQL-only ones (teams, tokens, merging pushes) in
test_postgres_store.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import jiyi
from jiyi.analysis.indexing import derive
from jiyi.errors import Unavailable
from jiyi.query import Query
from jiyi.ranking import rank
from jiyi.records import Fix, Record, Relation, Reproduction, Revision, Verification, new_hex, now, snapshot
from jiyi.store import base as store_base
from jiyi.store.base import Store, TermStats

from ..helpers import ZLIB, note


def made(title: str = "Link zlib with -lz", **changes: Any) -> Record:
    stamp = changes.pop("stamp", None) or now()
    base = Record(
        hex=new_hex(), title=title, type="bugfix", scope="global", what="ld: undefined symbol deflate",
        why="zlib was not on the link line", where="Makefile LDLIBS", learned="add -lz after the objects",
        project="p", project_key="p", session_id="s", created=stamp, updated=stamp,
    )  # fmt: skip
    record = replace(base, **changes)
    if "signatures" not in changes and "symbols" not in changes:
        from jiyi.analysis.signature import analyze

        found = analyze(record.what)
        record = replace(record, signatures=found.signatures, symbols=found.symbols)
    return record


def first(record: Record) -> Revision:
    return Revision(record.hex, record.revision, record.session_id, record.updated, "created", snapshot(record))


def put(store: Store, record: Record, **kw: Any) -> Record:
    store.write_record(record, first(record), derive(record), **kw)
    return record


def test_a_written_record_reads_back_whole(store: Store) -> None:
    target = put(store, made("the target", what="some other failure"))
    record = made(
        fix=Fix("command", command="make LDLIBS=-lz"),
        environment={"os": "linux", "arch": "x86_64"},
        tool_name="make",
        evidence_refs=["lr_" + target.hex],
        topic_key="build/zlib",
        reproduction=Reproduction("make", "https://example.com/r.git", "abc123", "sub"),
        verification=Verification("replay", "2026-01-02", "os=linux", 1, 2),
    )
    put(store, record, marks=[(target.hex, "outdated")])
    got = store.get(record.hex)
    assert got == record
    assert store.get_many([record.hex, target.hex, "0" * 32]) in (
        [record, replace(target, marked=[Relation("lr_" + record.hex, "outdated")])],
        [replace(target, marked=[Relation("lr_" + record.hex, "outdated")]), record],
    )
    assert store.get(target.hex).is_outdated  # type: ignore[union-attr]
    assert store.marks_by(record.hex) == [(target.hex, "outdated", record.updated)]
    assert store.get_many([]) == []
    assert store.get("f" * 32) is None


def test_find_topic_is_scoped_and_local(store: Store) -> None:
    mine = put(store, made(topic_key="t/1", scope="project", project_key="p"))
    put(store, made(topic_key="t/g", scope="global", project_key="q"))
    assert store.find_topic("t/1", "project", "p") == mine
    assert store.find_topic("t/1", "project", "other") is None
    found = store.find_topic("t/g", "global", "any project")
    assert found is not None and found.project_key == "q"
    # A pulled record with the topic is another machine's: a local note starts its own.
    put(store, made(topic_key="t/r", scope="global", remote=True))
    assert store.find_topic("t/r", "global", "p") is None
    local = put(store, made(topic_key="t/r", scope="global"))
    assert store.find_topic("t/r", "global", "p") == local
    assert store.forget(mine.hex)
    assert store.find_topic("t/1", "project", "p") is None


def test_revising_keeps_every_revision_and_replaces_indexes(store: Store) -> None:
    record = put(store, made())
    second = replace(
        record, revision=2, title="Link zlib", what="undefined reference to `inflateInit_'", signatures=(), symbols=()
    )
    store.write_record(second, replace(first(second), change="title, what"), derive(second))
    assert [r.revision for r in store.revisions(record.hex)] == [1, 2]
    assert store.revisions(record.hex)[1].change == "title, what"
    assert store.get(record.hex).title == "Link zlib"  # type: ignore[union-attr]
    assert store.by_terms(["deflate"], 5) == []
    assert store.by_terms(["inflateinit"], 5) == [record.hex]
    assert store.term_stats(["deflate", "inflateinit"]) == TermStats(1, {"deflate": 0, "inflateinit": 1})
    assert store.by_signature(record.signatures, 5) == []
    assert store.count() == 1


def test_reindex_replaces_signatures_and_terms_without_a_revision(store: Store) -> None:
    record = put(store, made())
    assert store.signed_with(record.hex)[0]
    assert store.signed_with("0" * 32) == ("", ())
    resigned = replace(record, signatures=("sig:new",), symbols=("newsym",), title="renamed title")
    store.reindex_record(resigned, derive(resigned))
    assert store.by_signature(["sig:new"], 5) == [record.hex]
    assert store.by_signature(record.signatures, 5) == []
    assert store.by_symbol(["newsym"], 5) == [record.hex]
    assert "renamed" in store.indexed_terms([record.hex])[record.hex]
    assert len(store.revisions(record.hex)) == 1


def test_write_many_is_one_transaction(store: Store) -> None:
    records = [made(f"batch record {i}", what=f"undefined reference to `batch_symbol_{i}'") for i in range(3)]
    items = [(r, first(r), derive(r)) for r in records]
    assert store.write_many(items) == 3
    assert store.count() == 3
    assert store.by_terms(["batch_symbol_1"], 5) == [records[1].hex]
    assert store.term_stats(["batch_symbol_1"]) == TermStats(3, {"batch_symbol_1": 1})
    fresh = made("fresh")
    with pytest.raises(Unavailable):  # revision 1 of items[0] exists: its primary key breaks
        store.write_many([(fresh, first(fresh), derive(fresh)), items[0]])
    assert store.get(fresh.hex) is None
    assert store.count() == 3


def test_listing_iterating_and_counting(store: Store) -> None:
    stamps = [f"2026-01-{d:02d}T00:00:00.000000+00:00" for d in range(1, 4)]
    records = [put(store, made(f"r{i}", project=f"proj{i % 2}", stamp=stamps[i])) for i in range(3)]
    assert [r.title for r in store.list_records()] == ["r2", "r1", "r0"]
    assert [r.title for r in store.list_records(limit=1, offset=1)] == ["r1"]
    assert [r.title for r in store.list_records(project="proj0")] == ["r2", "r0"]
    store.forget(records[0].hex)
    assert [r.title for r in store.list_records()] == ["r2", "r1"]
    assert len(store.list_records(include_forgotten=True)) == 3
    assert (store.count(), store.count(include_forgotten=True)) == (2, 3)
    many = [made(f"bulk {i}") for i in range(510)]  # past one page of iter_records
    store.write_many((r, first(r), derive(r)) for r in many)
    assert [r.hex for r in store.iter_records()] == [r.hex for r in records[1:] + many]
    assert len(list(store.iter_records(include_forgotten=True))) == 513


def test_forget_hides_and_unindexes_a_record(store: Store) -> None:
    record = put(store, made())
    other = put(store, made("other"))
    assert store.forget(record.hex) is True
    assert store.forget(record.hex) is False
    assert store.forget("0" * 32) is False
    assert store.get(record.hex) is None
    assert store.get(record.hex, include_forgotten=True).forgotten  # type: ignore[union-attr]
    assert store.get_many([record.hex]) == []
    assert store.by_terms(["deflate"], 5) == [other.hex]
    assert store.by_signature(record.signatures, 5) == [other.hex]
    assert store.term_stats(["deflate"]) == TermStats(1, {"deflate": 1})
    assert store.indexed_terms([record.hex]) == {}
    assert store.stats()["forgotten"] == 1


def test_purge_removes_every_trace(store: Store) -> None:
    target = put(store, made("target"))
    record = put(store, made("leaked secret"), marks=[(target.hex, "wrong")], session_id="s1")
    assert store.purge(record.hex) is True
    assert store.purge(record.hex) is False
    assert store.get(record.hex, include_forgotten=True) is None
    assert store.revisions(record.hex) == []
    assert store.marks_by(record.hex) == []
    assert store.get(target.hex).marked == []  # type: ignore[union-attr]
    assert store.term_stats(["leaked"]) == TermStats(1, {"leaked": 0})
    assert store.integrity_check() == []


def test_evidence_counts_a_session_once(store: Store) -> None:
    record = put(store, made())
    store.add_evidence(record.hex, sources=1, session_id="a")
    store.add_evidence(record.hex, sources=1, session_id="a")
    store.add_evidence(record.hex, used_success=2)
    got = store.get(record.hex)
    assert (got.sources, got.used_success) == (2, 2)  # type: ignore[union-attr]


def test_stats_and_health(store: Store) -> None:
    put(store, made(type="pitfall"))
    put(store, made(type="bugfix", origin="human"))
    store.touch_session("s1", "p", "p")
    stats = store.stats()
    assert stats["records"] == 2 and stats["revisions"] == 2 and stats["sessions"] == 1
    assert stats["by_type"] == {"bugfix": 1, "pitfall": 1}
    assert stats["by_origin"] == {"human": 1, "note": 1}
    assert store.integrity_check() == []
    names = [n for n, _ in store.applied_migrations()]
    assert names and len(names) == len(set(names))
    assert store.pending_migrations() == []


def test_signature_and_symbol_look_ups(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    both = put(store, made("both", signatures=("s1", "s2"), symbols=("sym_a", "sym_b")))
    one = put(store, made("one", signatures=("s1",), symbols=("sym_a",)))
    assert store.by_signature(["s1", "s2"], 5) == [both.hex, one.hex]
    assert store.by_signature(["s1", "s2"], 1) == [both.hex]
    assert store.by_signature([], 5) == [] and store.by_symbol([], 5) == []
    assert store.by_symbol(["sym_b"], 5) == [both.hex]
    # Keys on more records than the bound: left out next to rarer ones; a lone common signature
    # still counts (the same error again), a lone common symbol does not.
    monkeypatch.setattr(store_base, "COMMON_KEY_RECORDS", 1)  # the bound both backends share
    assert store.by_signature(["s1", "s2"], 5) == [both.hex]
    assert set(store.by_signature(["s1"], 5)) == {both.hex, one.hex}  # a sample of up to 4 x limit
    assert store.by_symbol(["sym_a"], 5) == []
    assert store.by_symbol(["sym_a", "sym_b"], 5) == [both.hex]
    # Both at once, as ranking asks: the signatures' records, then the symbols', each bounded alike.
    # (Not a lone common key with limit 1: its sample's ties may come in either order.)
    for sigs, syms, limit in [(["s1", "s2"], ["sym_a", "sym_b"], 5), (["s1", "s2"], ["sym_b"], 1), ([], ["sym_b"], 5)]:
        assert store.by_keys(sigs, syms, limit) == [*store.by_signature(sigs, limit), *store.by_symbol(syms, limit)]
        # With the terms' counts, as a search's first look-ups (one statement on PostgreSQL).
        terms = ["both", "one", "nowhere"]
        together = store.term_stats_and_keys(terms, sigs, syms, limit)
        assert together == (store.term_stats(terms), store.by_keys(sigs, syms, limit))
    assert store.term_stats_and_keys(["both"], [], [], 5) == (store.term_stats(["both"]), [])
    monkeypatch.setattr(store_base, "COMMON_KEY_RECORDS", 2000)
    found = store.by_keys(["s1", "s2"], ["sym_a"], 5)  # a record found by both comes twice, as ranking dedupes
    assert found[:2] == [both.hex, one.hex] and sorted(found[2:]) == sorted([both.hex, one.hex])
    assert store.by_keys([], [], 5) == [] and store.by_keys(["s1", "s2"], [], 1) == [both.hex]


def test_full_text_terms_rank_and_count(store: Store) -> None:
    in_title = put(store, made("deflate in the title", what="something else entirely"))
    in_body = put(store, made("a title", what="notes on deflate"))
    put(store, made("链接时找不到符号", what="链接时报错"))
    assert store.by_terms(["deflate"], 5) == [in_title.hex, in_body.hex]
    assert store.by_terms(["deflate"], 1) == [in_title.hex]
    assert store.by_terms([], 5) == []
    stats = store.term_stats(["deflate", "链接", "接时", "missing"])
    assert stats == TermStats(3, {"deflate": 2, "链接": 1, "接时": 1, "missing": 0})
    terms = store.indexed_terms([in_body.hex, "0" * 32])
    assert set(terms) == {in_body.hex}
    assert {"title", "notes", "deflate", "zlib"} <= terms[in_body.hex]
    assert store.indexed_terms([]) == {}


def test_the_terms_ranking_reads_come_back_alike_when_asked_for_alone(store: Store) -> None:
    # Ranking asks for the query's terms only (PostgreSQL then reads just those of a vector): the
    # counts by field and the whole length must be what the full read gives.
    record = put(
        store,
        made(
            "deflate deflate missing at link time",
            what="ld: undefined symbol deflate\nld: undefined symbol inflate\nVK_ERROR_INCOMPATIBLE_DRIVER 链接时报错",
        ),
    )
    whole = store.indexed([record.hex])[record.hex]
    asked = ["deflate", "inflate", "incompatible", "链接", "zlib", "never-indexed", "a'b"]
    some = store.indexed([record.hex], asked)[record.hex]
    assert some.length == whole.length > 0
    assert {t: some.title.get(t, 0) for t in asked} == {t: whole.title.get(t, 0) for t in asked}
    assert {t: some.body.get(t, 0) for t in asked} == {t: whole.body.get(t, 0) for t in asked}
    assert whole.title["deflate"] >= 2 and whole.body.get("inflate", 0) + whole.title.get("inflate", 0) >= 1
    assert some.normalized == whole.normalized


@pytest.mark.parametrize(
    "terms", [["'&|!():*\\"], ['"', "''", "a'b", "\\'"], ["!", "&", "|", "(", ")", ":*"], ["", " "], ["x:*", "(y"]]
)
def test_hostile_terms_are_no_query_syntax(store: Store, terms: list[str]) -> None:
    put(store, made())
    assert store.by_terms(terms, 5) == []
    assert store.by_terms([*terms, "deflate"], 5) != []
    assert store.term_stats(terms).total == 1


def test_import_keeps_revisions_and_marks(store: Store) -> None:
    record = made(revision=2)
    revisions = [first(replace(record, revision=1)), first(record)]
    marks = [("a" * 32, "wrong", "2026-01-01T00:00:00+00:00")]
    assert store.import_record(record, revisions, marks, derive(record)) is True
    assert store.import_record(record, revisions, marks, derive(record)) is False
    assert [r.revision for r in store.revisions(record.hex)] == [1, 2]
    assert store.marks_by(record.hex) == marks
    assert store.by_terms(["deflate"], 5) == [record.hex]
    gone = made("forgotten one", forgotten=True)
    assert store.import_record(gone, [first(gone)], [], derive(gone))
    assert store.get(gone.hex) is None and store.by_terms(["forgotten"], 5) == []


def test_marks_from_a_pulled_record_name_it_remote(store: Store) -> None:
    target = put(store, made("target"))
    source = put(store, made("source", remote=True), marks=[(target.hex, "wrong")])
    assert store.get(target.hex).marked == [Relation("rr_" + source.hex, "wrong")]  # type: ignore[union-attr]
    assert store.get(target.hex).is_wrong  # type: ignore[union-attr]


# -- sessions ----------------------------------------------------------------------------------
def test_session_state_and_read_budget(store: Store) -> None:
    assert store.session("s1") is None
    store.touch_session("s1", "key", "name")
    state = store.session("s1")
    assert state is not None and (state.project_key, state.project, state.read_used) == ("key", "name", 0)
    assert store.take_read("s1", "a" * 32, 60, 100) == 60
    assert store.take_read("s1", "b" * 32, 60, 100) == 40
    assert store.take_read("s1", "c" * 32, 60, 100) == 0
    state = store.session("s1")
    assert state is not None and state.read_used == 100 and state.reads == ["a" * 32, "b" * 32]
    record = put(store, made(), session_id="s1")
    assert store.session("s1").notes == [record.hex]  # type: ignore[union-attr]


def test_live_session_is_the_latest_named_session_of_the_project(store: Store) -> None:
    from datetime import datetime, timedelta, timezone

    from jiyi import session_link

    before = datetime.now(timezone.utc) - timedelta(seconds=1)
    assert session_link.live_session(store, "p") is None
    store.touch_session("hook-a", "p", "p")
    store.touch_session("jiyi-" + "0" * 32, "p", "p")  # a server's own session: never adopted
    store.touch_session("hook-other", "q", "q")
    assert session_link.live_session(store, "p") == "hook-a"
    store.touch_session("hook-b", "p", "p")
    assert session_link.live_session(store, "p") == "hook-b"
    store.touch_session("hook-a", "p", "p")  # seen again: the latest wins
    assert session_link.live_session(store, "p") == "hook-a"
    assert session_link.live_session(store, "q") == "hook-other"
    assert session_link.live_session(store, "r") is None
    # Seen more than LIVE_MINUTES before ``at``: too old to link.
    later = before + timedelta(minutes=session_link.LIVE_MINUTES + 1)
    assert session_link.live_session(store, "p", at=later) is None
    # The prefix names whose sessions are left out.
    assert store.live_session("p", before.isoformat(timespec="microseconds"), "hook-") == "jiyi-" + "0" * 32


def test_failure_then_success_closes_the_loop(store: Store) -> None:
    store.touch_session("s1", "p", "p")
    read = put(store, made("read before"))
    point = '{"top": "/src/zlib", "commit": "' + "c0ffee" * 6 + 'abcd", "cwd": ""}'
    store.set_failure(
        "s1", "Bash", "ld: undefined symbol deflate", signatures=read.signatures, command="make", checkout=point
    )
    state = store.session("s1")
    assert state is not None and state.outcome == "失败" and state.last_command == "make"
    assert state.last_checkout == point
    store.take_read("s1", read.hex, 10, 1000)
    store.record_edits("s1", ["Makefile", "", "Makefile"])
    noted = put(store, made("noted since"), session_id="s1")
    assert store.resolve_failure("s1", "Read") is None  # another tool's success
    resolved = store.resolve_failure("s1", "bash")
    assert resolved is not None
    assert (resolved.used, resolved.confirmed) == ([read.hex], [noted.hex])
    assert (resolved.tool, resolved.command, resolved.edited) == ("Bash", "make", ("Makefile",))
    assert resolved.checkout == point
    assert resolved.signatures == tuple(read.signatures) and resolved.noted == (noted.hex,)
    assert store.get(read.hex).used_success == 1  # type: ignore[union-attr]
    assert store.get(noted.hex).origin == "local_auto"  # type: ignore[union-attr]
    state = store.session("s1")
    assert state is not None and state.outcome == "成功" and state.last_error is None
    assert state.last_checkout is None
    assert store.resolve_failure("s1", "bash") is None
    store.record_edits("s1", ["later.c"])  # no failure pending: not kept
    store.set_failure("s1", "Bash", "again", signatures=[])
    assert store.resolve_failure("s1", "Bash").edited == ()  # type: ignore[union-attr]
    store.set_failure("s1", "Bash", "boom")
    store.set_failure("s1", None, None)
    assert store.session("s1").last_error is None  # type: ignore[union-attr]


def test_only_the_failing_operation_passing_again_closes_the_loop(store: Store) -> None:
    store.touch_session("s2", "p", "p")
    store.set_failure("s2", "Bash", "ModuleNotFoundError: No module named 'yaml'", signatures=["sig:yaml"],
                      command="pytest tests/test_api.py")  # fmt: skip
    assert store.resolve_failure("s2", "bash", "ls tests") is None  # a look around
    assert store.resolve_failure("s2", "bash", "pip show pyyaml") is None
    assert store.resolve_failure("s2", "bash", "pytest tests/test_other.py") is None  # a sibling
    assert store.resolve_failure("s2", "bash", "pip install pyyaml") is None  # a step of the fix
    state = store.session("s2")
    assert state is not None and state.last_error is not None  # still pending
    resolved = store.resolve_failure("s2", "bash", "pytest tests/test_api.py")
    assert resolved is not None and resolved.steps == ("pip install pyyaml",) and not resolved.flaky
    assert store.flaky_count(["sig:yaml"]) == 0


def test_the_same_command_passing_with_nothing_changed_is_flaky(store: Store) -> None:
    store.touch_session("s3", "p", "p")
    noted = put(store, made("a note on it"), session_id="s3")
    store.set_failure("s3", "Bash", "ECONNRESET", signatures=[*noted.signatures, "sig:reset"], command="npm test")
    put(store, made("noted since", fix=None), session_id="s3")
    resolved = store.resolve_failure("s3", "bash", "npm  test")  # spacing is no change
    assert resolved is not None and resolved.flaky and resolved.steps == () and resolved.confirmed == []
    assert store.flaky_count(["sig:reset"]) == 1
    store.set_failure("s3", "Bash", "ECONNRESET", signatures=["sig:reset"], command="npm test")
    assert store.resolve_failure("s3", "bash", "npm test").flaky  # type: ignore[union-attr]
    assert store.flaky_count(["sig:other", "sig:reset"]) == 2
    # Something changed in between: not flaky.
    store.set_failure("s3", "Bash", "ECONNRESET", signatures=["sig:reset"], command="npm test")
    store.record_edits("s3", ["package.json"])
    resolved = store.resolve_failure("s3", "bash", "npm test")
    assert resolved is not None and not resolved.flaky and resolved.edited == ("package.json",)
    assert store.flaky_count(["sig:reset"]) == 2


def test_steps_before_the_failure_met_again_are_not_its_fix(store: Store) -> None:
    store.touch_session("s4", "p", "p")
    store.set_failure("s4", "Bash", "E: yaml", signatures=["sig:y"], command="pytest")
    assert store.resolve_failure("s4", "bash", "pip install yaml") is None  # the wrong package
    store.set_failure("s4", "Bash", "E: yaml", signatures=["sig:y"], command="pytest")  # still failing
    assert store.resolve_failure("s4", "bash", "pip install pyyaml") is None
    resolved = store.resolve_failure("s4", "bash", "pytest")
    assert resolved is not None and resolved.steps == ("pip install pyyaml",)


def test_interleaved_failures_are_each_closed_by_their_own_re_run(store: Store) -> None:
    store.touch_session("s5", "p", "p")
    store.set_failure("s5", "Bash", "E: yaml", signatures=["sig:test"], command="pytest tests/test_api.py")
    store.record_edits("s5", ["tests/conftest.py"])  # for the tests
    store.set_failure("s5", "Bash", "TS2307", signatures=["sig:build"], command="npm run build")  # parks pytest
    assert store.resolve_failure("s5", "bash", "npm i -D @types/node") is None
    build = store.resolve_failure("s5", "bash", "npm run build")
    assert build is not None and build.command == "npm run build" and build.steps == ("npm i -D @types/node",)
    assert build.edited == ()  # the edit was made for the tests, before the build failed
    state = store.session("s5")  # the tests' failure is pending again
    assert state is not None and state.last_command == "pytest tests/test_api.py" and state.outcome == "失败"
    # The build's automatic record is written in the session: no note of the tests' failure.
    put(store, made("TS2307 — fixed by npm i", origin="local_auto", topic_key="auto/0123456789ab"), session_id="s5")
    tests = store.resolve_failure("s5", "bash", "pytest tests/test_api.py")
    assert tests is not None and tests.edited == ("tests/conftest.py",) and tests.signatures == ("sig:test",)
    assert tests.noted == ()
    assert store.session("s5").last_error is None  # type: ignore[union-attr]


def test_a_parked_failure_passing_first_is_closed_and_the_newer_waits(store: Store) -> None:
    store.touch_session("s6", "p", "p")
    store.set_failure("s6", "Bash", "E: yaml", signatures=["sig:test"], command="pytest")
    store.set_failure("s6", "Bash", "cannot find -lz", signatures=["sig:link"], command="make")
    assert store.resolve_failure("s6", "bash", "pip install pyyaml") is None  # a step of the pending (make)
    store.set_failure("s6", "Bash", "E: yaml", signatures=["sig:test"], command="pytest -x")  # met again
    store.record_edits("s6", ["setup.cfg"])
    tests = store.resolve_failure("s6", "bash", "pytest -x")
    assert tests is not None and tests.command == "pytest -x" and tests.edited == ("setup.cfg",)
    state = store.session("s6")
    assert state is not None and state.last_command == "make"
    store.set_failure("s6", "Bash", "E: yaml", signatures=["sig:test"], command="pytest")  # parks make again
    store.record_edits("s6", ["Makefile"])
    made_ = store.resolve_failure("s6", "bash", "make LDLIBS=-lz")  # crossed: the parked make passes
    assert made_ is not None and made_.command == "make" and made_.edited == ("Makefile",)
    assert store.session("s6").last_command == "pytest"  # type: ignore[union-attr]


def test_a_long_pending_failure_keeps_only_its_newest_steps(store: Store) -> None:
    from jiyi.store.closing import STEPS_KEPT

    store.touch_session("s7", "p", "p")
    store.set_failure("s7", "Bash", "E: yaml", signatures=["sig:y"], command="pytest")
    for n in range(STEPS_KEPT + 5):
        assert store.resolve_failure("s7", "bash", f"pip install pkg{n}") is None
    resolved = store.resolve_failure("s7", "bash", "pytest")
    assert resolved is not None and len(resolved.steps) == STEPS_KEPT
    assert resolved.steps[-1] == f"pip install pkg{STEPS_KEPT + 4}" and resolved.steps[0] == "pip install pkg5"


def test_project_keys_are_found_by_the_projects_name(store: Store) -> None:
    put(store, made("one", project="app", project_key="/a/app", stamp="2026-01-01T00:00:00+00:00"))
    store.touch_session("s8", "/b/app", "app")  # seen later: first
    put(store, made("two", project="zlib", project_key="github.com/madler/zlib"))
    assert store.project_keys("app") == ["/b/app", "/a/app"]
    assert store.project_keys("zlib") == ["github.com/madler/zlib"] and store.project_keys("none") == []


def test_forgotten_records_are_listed_on_their_own(store: Store) -> None:
    kept, gone = put(store, made("kept")), put(store, made("gone"))
    store.forget(gone.hex)
    assert [r.hex for r in store.list_records()] == [kept.hex]
    assert [r.hex for r in store.list_records(only_forgotten=True)] == [gone.hex]


def test_claim_recall_hands_each_record_once(store: Store) -> None:
    store.touch_session("s1", "p", "p")
    assert store.claim_recall("s1", ["a" * 32, "b" * 32]) == "a" * 32
    assert store.claim_recall("s1", ["a" * 32, "b" * 32]) == "b" * 32
    assert store.claim_recall("s1", ["a" * 32, "b" * 32]) is None
    assert store.claim_recall("s2", ["a" * 32]) == "a" * 32
    assert store.claim_recall("s1", []) is None


def test_rank_and_the_three_tools_over_the_store(store: Store) -> None:
    with jiyi.Memory(store=store) as memory:
        writer = memory.session(project="zlib-port", session_id="w")
        saved = writer.note(**ZLIB)
        writer.note(**note(title="Install PyYAML", what="ModuleNotFoundError: No module named 'yaml'"))
        reader = memory.session(project="zlib-port", session_id="r")
        hits = reader.search("ld: undefined symbol deflate")
        assert [h.record.hex for h in hits][:1] == [saved.record.hex]
        text = reader.read_text(saved.record.id)
        assert "现象（What）：ld: undefined symbol deflate" in text
        assert store.session("r").reads == [saved.record.hex]  # type: ignore[union-attr]
        revised = reader.note(**note(topic_key="zlib/link", learned="link ZLIB::ZLIB"))
        again = reader.note(**note(topic_key="zlib/link", learned="link ZLIB::ZLIB in CMake"))
        assert again.record.hex == revised.record.hex and again.record.revision == 2
        direct = rank(store, Query(text="undefined symbol deflate", project_key="zlib-port"), limit=5)
        assert saved.record.hex in [h.record.hex for h in direct]


_WRITER = """
import sys, time
from pathlib import Path
import jiyi
from tests.helpers import note

start, name = Path(sys.argv[1]), sys.argv[2]
with jiyi.Memory(cwd=sys.argv[3]) as memory:
    session = memory.session(project="race", session_id=name)
    while not start.exists():
        time.sleep(0.001)
    for i in range(int(sys.argv[4])):
        result = session.call("memory_note", note(topic_key="race/same", learned=f"{name} {i}"))
        print("error" if result.is_error else "ok", result.text.replace(chr(10), " "), flush=True)
"""


@pytest.mark.timeout(180)
def test_notes_of_one_topic_from_many_processes_all_become_revisions(tmp_path: Path, jiyi_home: Path) -> None:
    # Issue 15: 36 of 290 such notes answered E_UNAVAILABLE (a unique-constraint race of the
    # topic's find-or-create); every one must become a revision of the one record.
    procs, each = 8, 10
    start = tmp_path / "go"
    root = Path(__file__).resolve().parents[2]
    source = Path(jiyi.__file__).resolve().parents[1]  # the jiyi under test, in the writers too
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(source), str(root)]), "JIYI_HOME": str(jiyi_home)}
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(start), f"w{n}", str(tmp_path), str(each)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(procs)
    ]
    time.sleep(1.5)  # let each open the store, so the writes, not the opening, contend
    start.touch()
    outputs = [w.communicate(timeout=150) for w in writers]
    lines = [line for out, _ in outputs for line in out.splitlines()]
    assert [w.returncode for w in writers] == [0] * procs, [err for _, err in outputs]
    assert [line for line in lines if not line.startswith("ok")] == []
    with jiyi.Memory(cwd=tmp_path) as memory:
        record = memory.store.find_topic("race/same", "project", memory.session(project="race").project.key)
        assert record is not None and record.revision == procs * each
        revisions = memory.store.revisions(record.hex)
        assert [r.revision for r in revisions] == list(range(1, procs * each + 1))
        assert len([r for r in memory.store.list_records() if r.topic_key == "race/same"]) == 1


@pytest.mark.postgres
@pytest.mark.timeout(180)
def test_notes_of_one_topic_from_many_connections_all_become_revisions(pg_schema: tuple[str, str]) -> None:
    from jiyi.store.postgres.store import PgDatabase, PgStore

    dsn, schema = pg_schema
    threads, each = 8, 10
    team = 0
    with PgDatabase(dsn, schema=schema, max_size=2) as setup:
        team = setup.create_team("race")
    barrier = threading.Barrier(threads)
    errors: list[str] = []

    def write(n: int) -> None:
        with PgDatabase(dsn, schema=schema, max_size=2) as database, jiyi.Memory(store=PgStore(database, team)) as m:
            session = m.session(project="race", session_id=f"t{n}")
            barrier.wait()
            for i in range(each):
                result = session.call("memory_note", note(topic_key="race/same", learned=f"t{n} {i}"))
                if result.is_error:
                    errors.append(result.text)

    workers = [threading.Thread(target=write, args=(n,)) for n in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert errors == []
    with PgDatabase(dsn, schema=schema, max_size=2) as database:
        store = PgStore(database, team)
        found = [r for r in store.list_records() if r.topic_key == "race/same"]
        assert len(found) == 1 and found[0].revision == threads * each
        assert [r.revision for r in store.revisions(found[0].hex)] == list(range(1, threads * each + 1))


@pytest.mark.postgres
@pytest.mark.timeout(120)
def test_threads_sharing_a_small_pool_write_one_topic_without_starving_it(pg_schema: tuple[str, str]) -> None:
    # Waiting on the topic's lock must not hold every pooled connection while its holder needs one.
    from jiyi.store.postgres.store import PgDatabase, PgStore

    dsn, schema = pg_schema
    threads, each = 6, 4
    errors: list[str] = []
    with PgDatabase(dsn, schema=schema, max_size=2, timeout=5) as database:
        store = PgStore(database, database.create_team("pool"))
        with jiyi.Memory(store=store) as memory:
            sessions = [memory.session(project="race", session_id=f"p{n}") for n in range(threads)]
            barrier = threading.Barrier(threads)

            def write(n: int) -> None:
                barrier.wait()
                for i in range(each):
                    result = sessions[n].call("memory_note", note(topic_key="race/pool", learned=f"p{n} {i}"))
                    if result.is_error:
                        errors.append(result.text)

            workers = [threading.Thread(target=write, args=(n,)) for n in range(threads)]
            for worker in workers:
                worker.start()
            for worker in workers:
                worker.join()
            found = [r for r in store.list_records() if r.topic_key == "race/pool"]
    assert errors == []
    assert len(found) == 1 and found[0].revision == threads * each


def test_filtered_listing_and_its_count(store: Store) -> None:
    stamps = [f"2026-02-{d:02d}T00:00:00.000000+00:00" for d in range(1, 6)]
    put(store, made("Link zlib", type="bugfix", scope="global", project="a", stamp=stamps[0]))
    put(store, made("Use tabs", type="decision", scope="project", project="b", what="tabs 100%_sure", stamp=stamps[1]))
    auto = put(store, made("auto one", origin="local_auto", topic_key="auto/x", project="a", stamp=stamps[2]))
    put(store, made("auto confirmed", origin="local_auto", topic_key="auto/y", sources=2, stamp=stamps[3]))
    gone = put(store, made("gone", project="a", stamp=stamps[4]))
    store.forget(gone.hex)

    def titles(**where: Any) -> list[str]:
        flt = store_base.RecordFilter(**where)
        found, total = store.find_records(flt)
        assert total == len(found)
        return [r.title for r in found]

    assert titles() == ["auto confirmed", "auto one", "Use tabs", "Link zlib"]
    assert titles(type="decision") == ["Use tabs"]
    assert titles(scope="project") == ["Use tabs"]
    assert titles(project="a") == ["auto one", "Link zlib"]
    assert titles(origin="local_auto") == ["auto confirmed", "auto one"]
    assert titles(unconfirmed=True) == ["auto one"]
    assert titles(forgotten=True) == ["gone"]
    flt = store_base.RecordFilter()
    for where in (flt, store_base.RecordFilter(text="link")):  # with a text filter too
        found, total = store.find_records(where, limit=2, offset=1)
        assert ([r.title for r in found], total) == (["auto one", "Use tabs"], 4)
    store.mark(auto.hex, "outdated", "")
    assert titles(unconfirmed=True) == ["auto one"]
    store.mark(auto.hex, "wrong", "a person decided")
    assert titles(unconfirmed=True) == []  # decided: no longer waiting
    store.unmark(auto.hex, "wrong")
    store.approve(auto.hex)
    assert titles(unconfirmed=True) == []


def test_a_text_filter_keeps_the_records_holding_its_words(store: Store) -> None:
    # Words as search derives them, from the full-text index: not a substring of the text.
    put(store, made("Link zlib", what="ld: undefined symbol deflate"))
    put(store, made("Use tabs", type="decision", what="tabs 100%_sure", why="Ошибка: не найден 链接时出错"))
    put(store, made("Zlib again", what="zlib again"))
    gone = put(store, made("gone zlib", what="forgotten text"))
    store.forget(gone.hex)

    def titles(text: str, **where: Any) -> list[str]:
        found, total = store.find_records(store_base.RecordFilter(text=text, **where))
        assert total == len(found)
        return sorted(r.title for r in found)

    assert titles("DEFLATE link") == ["Link zlib"]  # every word, any case, in any order
    assert titles("zlib") == ["Link zlib", "Zlib again"]
    assert titles("lin") == [] and titles("zl") == []  # part of a word is no word
    assert titles("100 sure") == ["Use tabs"] and titles("100%x") == []
    assert titles("ошибка") == ["Use tabs"] and titles("链接") == ["Use tabs"]  # folded; CJK bigrams
    assert titles("the") == [] and titles("%_") == []  # nothing the index keeps: nothing
    assert titles("zlib", type="decision") == []
    assert titles("zlib", forgotten=True) == ["gone zlib"] and titles("deflate", forgotten=True) == []


def test_a_persons_mark_reads_as_a_mark_and_is_taken_back(store: Store) -> None:
    record = put(store, made())
    assert store.mark("0" * 32, "wrong", "no such") is False
    assert store.mark(record.hex, "outdated", "zlib 2 links itself") is True
    assert store.mark(record.hex, "outdated", "superseded by the meson build") is True  # replaces
    got = store.get(record.hex)
    assert got is not None and got.marked == [Relation("human", "outdated")] and got.is_outdated
    assert [(m.relation, m.reason) for m in store.human_marks(record.hex)] == [
        ("outdated", "superseded by the meson build")
    ]
    store.mark(record.hex, "wrong", "the flag is -lz, not -lzlib")
    assert store.get_many([record.hex])[0].is_wrong
    assert rank(store, Query(text="ld: undefined symbol deflate"), limit=5) == []  # wrong: never a hit
    assert store.unmark(record.hex, "wrong") is True and store.unmark(record.hex, "wrong") is False
    assert [h.record.hex for h in rank(store, Query(text="ld: undefined symbol deflate"), limit=5)] == [record.hex]
    store.purge(record.hex)
    assert store.human_marks(record.hex) == []


def test_a_sessions_latest_searches_are_kept_within_the_bound(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_base, "SEARCHES_KEPT", 3)
    store.touch_session("s1", "key", "name")
    store.touch_session("s2", "key", "name")
    for i in range(5):
        store.record_search("s1", f"query {i} " + "x" * 1000, i)
    store.record_search("s2", "other", 0)
    found = {s.id: s.searches for s in store.recent_sessions()}
    assert [(q.query[:7], q.hits) for q in found["s1"]] == [("query 4", 4), ("query 3", 3), ("query 2", 2)]
    assert {len(q.query) for q in found["s1"]} == {store_base.SEARCH_CHARS} and found["s1"][0].at
    assert [q.query for q in found["s2"]] == ["other"]
    assert store.session("s1").searches == []  # type: ignore[union-attr]  # each tool call reads none
    assert store.session_searches("s1", limit=2) == found["s1"][:2] and store.session_searches("none") == []


def test_recent_sessions_the_latest_first(store: Store) -> None:
    assert store.recent_sessions() == []
    for name in ("s1", "s2", "s3"):
        store.touch_session(name, "key", "name")
    store.touch_session("s1", "key", "name")
    assert [s.id for s in store.recent_sessions()] == ["s1", "s3", "s2"]
    assert [s.id for s in store.recent_sessions(limit=1)] == ["s1"]
    assert store.take_read("s2", "a" * 32, 10, 100) == 10
    assert [s.reads for s in store.recent_sessions() if s.id == "s2"] == [["a" * 32]]

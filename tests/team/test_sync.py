"""The sync client: the outbox its triggers fill, pushes that survive failures and crashes, pulls
that keep this machine's own counting, the settings, and `jiyi team sync / status`."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from jiyi import config, transfer
from jiyi.cli import main
from jiyi.config import Settings
from jiyi.errors import SettingError, Unavailable
from jiyi.memory import Memory
from jiyi.store.sqlite.store import SQLiteStore
from jiyi.team.client import outbox, state, sync

from ..helpers import YAML, ZLIB, note
from ..team_helpers import dead_url, machine, serving

UNAVAILABLE = "记忆暂不可用\n错误码：E_UNAVAILABLE"


def rows(store: SQLiteStore) -> list[tuple[str, int]]:
    with store.transaction() as db:
        return [(str(h), int(c)) for h, c in db.execute("SELECT hex, changes FROM outbox ORDER BY hex")]


# -- without a server ------------------------------------------------------------------------
def test_backoff_doubles_from_5_s_to_10_min() -> None:
    assert [state.backoff(n) for n in range(1, 10)] == [5, 10, 20, 40, 80, 160, 320, 600, 600]


def test_team_settings_come_from_the_user_file_and_the_environment_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config.user_config_path().parent.mkdir(parents=True)
    config.user_config_path().write_text("team_url = 'https://team.example'\nteam_token = 'jiyi_x'\n")
    project = tmp_path / "proj"
    project.mkdir()
    # A repository cannot send the user's token (and notes) to a server of its choosing.
    (project / ".jiyi.toml").write_text(
        "team_url = 'https://evil.example'\nteam_token = 'jiyi_y'\nteam_push = 'global'\n"
    )
    settings = config.load(project)
    assert (settings.team_url, settings.team_token, settings.team_push) == ("https://team.example", "jiyi_x", "global")
    assert settings.team
    monkeypatch.setenv("JIYI_TEAM_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("JIYI_TEAM_PUSH", "none")
    settings = config.load(project)
    assert (settings.team_url, settings.team_push) == ("http://127.0.0.1:9", "none")
    monkeypatch.setenv("JIYI_TEAM_PUSH", "some")
    with pytest.raises(SettingError) as info:
        config.load(project)
    assert info.value.key == "team_push"
    assert not Settings().team


def test_nothing_queues_until_syncing_is_on_then_every_write_path_queues_one_row_a_record(tmp_path: Path) -> None:
    with Memory(tmp_path / "a") as memory:
        session = memory.session(project="zlib-port")
        first = session.note(**note(topic_key="build/zlib")).record
        store = memory.store
        assert isinstance(store, SQLiteStore)
        assert rows(store) == []
        outbox.enable(store)
        assert rows(store) == [(first.hex, 1)]
        session.note(**note(topic_key="build/zlib", learned="link with -lz last"))  # a revision: coalesced
        store.add_evidence(first.hex, used_success=1)
        assert rows(store) == [(first.hex, 3)]
        other = session.note(**YAML).record
        with Memory(tmp_path / "elsewhere") as elsewhere:
            line = transfer.record_to_json(elsewhere.store, elsewhere.session().note(**note(title="t")).record)
        transfer.import_lines(store, [json.dumps(line)])
        assert sorted(h for h, _ in rows(store)) == sorted([first.hex, other.hex, line["hex"]])
        store.purge(other.hex)
        assert other.hex not in {h for h, _ in rows(store)}
        state = outbox.status(store)
        assert (state.pending, state.syncing, len(state.machine)) == (2, True, 32)


def test_a_server_that_does_not_answer_keeps_everything_queued_and_backs_off(tmp_path: Path) -> None:
    settings = machine(tmp_path, "a", dead_url(), "jiyi_token")
    from jiyi.team.client.http import TeamClient

    with Memory(settings=settings) as memory:
        memory.session(project="zlib-port").note(**YAML)
        store = memory.store
        assert isinstance(store, SQLiteStore)
        with TeamClient(settings.team_url or "", "jiyi_token") as client, pytest.raises(Unavailable):
            sync.run(store, client, settings)
        state = outbox.status(store)
        assert (state.pending, state.failing) == (1, 1)
        assert state.last_error and "E_UNAVAILABLE" in state.last_error
        assert outbox.waiting(store)  # background syncs wait out the backoff
        with store.transaction() as db:
            attempts, next_try = db.execute("SELECT attempts, next_try FROM outbox").fetchone()
        assert attempts == 1 and next_try > state.last_error[:26]
        # Not due yet: a background push sends nothing and does not call the server.
        assert outbox.push(store, client, force=False).sent == 0


def test_jiyi_team_sync_without_a_server_exits_1_with_e_unavailable_and_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jiyi_home: Path
) -> None:
    monkeypatch.setenv("JIYI_TEAM_URL", dead_url())
    monkeypatch.setenv("JIYI_TEAM_TOKEN", "jiyi_token")
    with Memory() as memory:
        memory.session(project="zlib-port").note(**YAML)
    runner = CliRunner()
    done = runner.invoke(main, ["team", "sync"])
    assert done.exit_code == 1
    assert UNAVAILABLE in done.stderr
    assert "1 record(s) wait in the outbox" in done.stderr
    status = runner.invoke(main, ["team", "status", "--json"])
    data = json.loads(status.stdout)
    assert (data["pending"], data["configured"], data["team_push"]) == (1, True, "all")
    assert "E_UNAVAILABLE" in data["last_error"]
    quiet = runner.invoke(main, ["team", "sync", "--quiet"])  # waits out the backoff: no output
    assert (quiet.exit_code, quiet.stdout, quiet.stderr) == (0, "", "")
    text = runner.invoke(main, ["team", "status"]).stdout
    assert "outbox: 1 pending, 1 failed last time" in text


def test_a_background_sync_that_cannot_open_the_store_says_so_and_tries_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the store's folder should be")
    settings = Settings(home=blocker).replace(team_url=dead_url(), team_token="jiyi_x")
    with caplog.at_level(logging.WARNING, logger="jiyi.team"):
        assert sync._once(settings, True, True) == state.BACKOFF_FIRST
    assert "team sync: the store cannot be opened" in caplog.text


def test_team_sync_says_what_to_configure(monkeypatch: pytest.MonkeyPatch) -> None:
    done = CliRunner().invoke(main, ["team", "sync"])
    assert done.exit_code == 1 and "team_url" in done.stderr


# -- with a server ---------------------------------------------------------------------------
pg = pytest.mark.postgres


@pytest.fixture
def team(pg_schema: tuple[str, str]) -> Iterator[tuple[Any, str]]:
    """(database, server URL) of a team server with one team, ``alpha``."""
    pytest.importorskip("psycopg")
    from jiyi.store.postgres.database import PgDatabase
    from jiyi.team.server.app import create_app

    dsn, schema = pg_schema
    with PgDatabase(dsn, schema=schema) as db:
        db.create_team("alpha")
        with serving(create_app(db, rate_per_minute=0)) as url:
            yield db, url


def server_rows(db: Any) -> list[tuple[str, int, int, int]]:
    """(hex, revision, sources, used_success) of every record the server holds."""
    with db.cursor() as cur:
        cur.execute("SELECT hex, revision, sources, used_success FROM records ORDER BY hex")
        return [tuple(r) for r in cur.fetchall()]


class Crashing:
    """A client whose push reaches the server but whose answer is lost (a crash between the two)."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def push(self, machine: str, records: list[dict[str, Any]]) -> dict[str, list[str]]:
        self.client.push(machine, records)
        raise Unavailable("connection reset before the answer")


@pg
def test_a_push_retried_after_a_lost_answer_stores_nothing_twice(team: tuple[Any, str], tmp_path: Path) -> None:
    from jiyi.team.client.http import TeamClient

    db, url = team
    settings = machine(tmp_path, "a", url, db.create_token("alpha", "alice"))
    with Memory(settings=settings) as memory, TeamClient(url, settings.team_token or "") as client:
        record = memory.session(project="zlib-port").note(**note(topic_key="build/zlib")).record
        store = memory.store
        assert isinstance(store, SQLiteStore)
        with pytest.raises(Unavailable):
            outbox.push(store, Crashing(client), force=True)  # type: ignore[arg-type]
        assert [h for h, _ in rows(store)] == [record.hex]  # not answered: still queued
        report = outbox.push(store, client, force=True)
        assert (report.sent, report.accepted, report.unchanged) == (1, 0, 1)
        assert rows(store) == []
        assert server_rows(db) == [(record.hex, 1, 1, 0)]
        with db.cursor() as cur:
            cur.execute("SELECT count(*) FROM revisions")
            assert cur.fetchone() == (1,)


@pg
def test_a_record_that_changes_while_its_push_is_on_the_way_stays_queued(team: tuple[Any, str], tmp_path: Path) -> None:
    from jiyi.team.client.http import TeamClient

    db, url = team
    settings = machine(tmp_path, "a", url, db.create_token("alpha", "alice"))
    with Memory(settings=settings) as memory, TeamClient(url, settings.team_token or "") as client:
        record = memory.session(project="zlib-port").note(**YAML).record
        store = memory.store
        assert isinstance(store, SQLiteStore)

        class Meanwhile:
            def push(self, machine: str, records: list[dict[str, Any]]) -> dict[str, list[str]]:
                store.add_evidence(record.hex, used_success=1)  # counted here while the push travels
                return client.push(machine, records)

        outbox.push(store, Meanwhile(), force=True)  # type: ignore[arg-type]
        assert [h for h, _ in rows(store)] == [record.hex]
        outbox.push(store, client, force=True)
        assert rows(store) == []
        assert server_rows(db) == [(record.hex, 1, 1, 1)]


@pg
def test_team_push_global_keeps_project_notes_home_and_none_sends_nothing(
    team: tuple[Any, str], tmp_path: Path
) -> None:
    from jiyi.team.client.http import TeamClient

    db, url = team
    token = db.create_token("alpha", "alice")
    settings = machine(tmp_path, "a", url, token, team_push="none")
    with Memory(settings=settings) as memory, TeamClient(url, token) as client:
        session = memory.session(project="zlib-port")
        kept, shared = session.note(**ZLIB).record, session.note(**YAML).record
        store = memory.store
        assert isinstance(store, SQLiteStore)
        assert sync.run(store, client, settings).pushed.sent == 0  # type: ignore[union-attr]
        assert (outbox.status(store, "none").pending, outbox.status(store, "none").held) == (0, 2)
        assert server_rows(db) == []
        sync.run(store, client, settings.replace(team_push="global"))
        assert [r[0] for r in server_rows(db)] == [shared.hex]
        state = outbox.status(store, "global")
        assert (state.pending, state.held) == (0, 1)
        assert [h for h, _ in rows(store)] == [kept.hex]  # still there, should the setting change


@pg
def test_a_pull_keeps_this_machines_own_counting_and_a_push_sends_it_absolute(
    team: tuple[Any, str], tmp_path: Path
) -> None:
    from jiyi.team.client.http import TeamClient

    db, url = team
    a = machine(tmp_path, "a", url, db.create_token("alpha", "alice"))
    b = machine(tmp_path, "b", url, db.create_token("alpha", "bob"))
    with Memory(settings=a) as ma, Memory(settings=b) as mb:
        ca, cb = TeamClient(url, a.team_token or ""), TeamClient(url, b.team_token or "")
        sa, sb = ma.store, mb.store
        assert isinstance(sa, SQLiteStore) and isinstance(sb, SQLiteStore)
        record = ma.session(project="p").note(**YAML).record
        sync.run(sa, ca, a)
        sync.run(sb, cb, b)
        assert sb.get(record.hex).used_success == 0  # type: ignore[union-attr]
        # Bob's machine used it twice; Alice's once more, and neither has synced since.
        sb.add_evidence(record.hex, used_success=2)
        sa.add_evidence(record.hex, used_success=1)
        sync.run(sb, cb, b)
        assert server_rows(db) == [(record.hex, 1, 1, 2)]  # alice's push of her 1 has not come yet
        sync.run(sa, ca, a)
        assert server_rows(db) == [(record.hex, 1, 1, 3)]
        assert sa.get(record.hex).used_success == 3  # type: ignore[union-attr]
        sync.run(sb, cb, b)
        assert sb.get(record.hex).used_success == 3  # type: ignore[union-attr]
        # Pulling again changes nothing, and nothing pulled goes back out.
        sync.run(sa, ca, a)
        sync.run(sb, cb, b)
        assert (sa.get(record.hex).used_success, sb.get(record.hex).used_success) == (3, 3)  # type: ignore[union-attr]
        assert rows(sa) == rows(sb) == []
        with sb.transaction() as d:
            assert d.execute("SELECT sources, used_success FROM team_evidence").fetchall() == [(1, 1)]
        ca.close()
        cb.close()

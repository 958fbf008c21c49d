"""Forget on the team server, the client's half: what queues a forget or a purge, and a server
from before forget (the end-to-end paths through two machines are in test_team_two_machines)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from jiyi.errors import JiyiError, Unavailable
from jiyi.memory import Memory
from jiyi.store.sqlite.store import SQLiteStore
from jiyi.team.client import forget as team_forget
from jiyi.team.client import outbox, sync

from ..helpers import YAML, note
from ..team_helpers import dead_url, machine, serving

if TYPE_CHECKING:
    from jiyi.store.postgres.database import PgDatabase


def forgets(store: SQLiteStore) -> list[tuple[str, int]]:
    with store.transaction() as db:
        return [(str(h), int(p)) for h, p in db.execute("SELECT hex, purge FROM outbox_forget ORDER BY hex")]


def test_forgets_and_purges_of_this_machines_records_queue_once_syncing_is_on(tmp_path: Path) -> None:
    with Memory(tmp_path / "a") as memory:
        session = memory.session(project="zlib-port")
        early = session.note(**YAML).record
        store = memory.store
        assert isinstance(store, SQLiteStore)
        store.forget(early.hex)  # never synced: the team has nothing of it
        assert forgets(store) == []
        outbox.enable(store)
        soft, hard = (session.note(**note(scope="global", title=t, what=f"error {t}")).record for t in ("s", "h"))
        store.forget(soft.hex)
        store.forget(hard.hex)
        store.purge(hard.hex)  # forgotten, then purged: one row, a purge
        store.forget(soft.hex)  # again: nothing more
        assert forgets(store) == sorted([(soft.hex, 0), (hard.hex, 1)])
        assert team_forget.pending(store) == 2
        # Without a server they stay queued, and the sync says so.
        from jiyi.team.client.http import TeamClient

        with pytest.raises(Unavailable), TeamClient(dead_url(), "jiyi_x") as client:
            sync.send(store, client)
        assert team_forget.pending(store) == 2 and outbox.status(store).last_error


@pytest.mark.postgres
def test_a_server_from_before_forget_keeps_the_forgets_queued_and_the_rest_syncing(
    pg_schema: tuple[str, str], tmp_path: Path
) -> None:
    pytest.importorskip("psycopg")
    from jiyi.store.postgres.database import PgDatabase
    from jiyi.team.client.http import TeamClient
    from jiyi.team.server.app import create_app

    dsn, schema = pg_schema
    with PgDatabase(dsn, schema=schema) as db:
        db.create_team("alpha")
        app = create_app(db, rate_per_minute=0)
        app.router.routes = [
            r for r in app.router.routes if getattr(r, "path", "") not in ("/v1/forget", "/v1/forgotten")
        ]
        with serving(app) as url:
            settings = machine(tmp_path, "a", url, db.create_token("alpha", "alice"))
            with Memory(settings=settings) as memory, TeamClient.from_settings(settings) as client:
                store = memory.store
                assert isinstance(store, SQLiteStore)
                session = memory.session(project="zlib-port")
                gone = session.note(**YAML).record
                sync.run(store, client, settings)
                store.forget(gone.hex)
                kept = session.note(**note(scope="global")).record
                report = sync.run(store, client, settings)
                assert report.pushed is not None and (report.pushed.accepted, report.pushed.forgotten) == (1, 0)
                assert report.pulled is not None and report.pulled.own == 1
                state = outbox.status(store)
                assert (state.forgets, state.pending, state.last_error) == (1, 0, None)
                assert kept.hex in {r["hex"] for r in client.changes(0, 10)["records"]}


@pytest.mark.postgres
def test_a_forget_the_server_refuses_is_not_sent_again_and_status_names_it_until_the_operator_acts(
    db: PgDatabase, pg_schema: tuple[str, str], url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from jiyi.cli import main
    from jiyi.team.client.http import TeamClient
    from jiyi.transfer import record_to_json

    monkeypatch.setenv("JIYI_TEAM_URL", url)
    monkeypatch.setenv("JIYI_TEAM_TOKEN", db.create_token("alpha", "alice"))
    with Memory() as memory:
        session = memory.session(project="zlib-port")
        taken, mine = session.note(**YAML).record, session.note(**note(scope="global")).record
        line = record_to_json(memory.store, memory.store.get(taken.hex))  # type: ignore[arg-type]
    # Bob pushed alice's record before she did (an import of her export, say): on the team it is his.
    with TeamClient(url, db.create_token("alpha", "bob")) as bob:
        assert bob.push("b", [line])["accepted"] == [taken.hex]
    runner = CliRunner()
    assert runner.invoke(main, ["team", "sync"]).exit_code == 0
    with Memory() as memory:
        memory.store.forget(taken.hex)
        memory.store.forget(mine.hex)
    done = runner.invoke(main, ["team", "sync"])
    assert done.exit_code == 0, done.stderr
    assert ", 1 forgotten or erased, 1 forget(s) refused (see jiyi team status)\n" in done.stdout
    status = json.loads(runner.invoke(main, ["team", "status", "--json"]).stdout)
    assert status["forgets"] == 0
    assert [(r["id"], r["purge"]) for r in status["refused_forgets"]] == [(taken.id, False)]
    assert f"\n  {taken.id} (forget, " in runner.invoke(main, ["team", "status"]).stdout
    # Not sent again: the next sync has nothing to say about it.
    assert "refused" not in runner.invoke(main, ["team", "sync"]).stdout
    # A purge of it is sent (the user may have found a secret in it), refused too, and said so.
    done = runner.invoke(main, ["forget", "--purge", "--yes", taken.id])
    assert done.stdout == (
        f"purged {taken.id}\nrefused by the team server: another member pushed {taken.id} first, so it stays "
        "on the team; ask the team's operator (jiyi team admin forget) and rotate the secret\n"
    )
    status = json.loads(runner.invoke(main, ["team", "status", "--json"]).stdout)
    assert [(r["id"], r["purge"]) for r in status["refused_forgets"]] == [(taken.id, True)]
    # The operator erases it; alice's next pull sees the tombstone and the refusal is done with.
    dsn, schema = pg_schema
    admin = ["team", "admin", "forget", "alpha", taken.id, "--purge", "--dsn", dsn, "--schema", schema]
    assert runner.invoke(main, admin).exit_code == 0
    assert runner.invoke(main, ["team", "sync"]).exit_code == 0
    assert json.loads(runner.invoke(main, ["team", "status", "--json"]).stdout)["refused_forgets"] == []
    assert "refused" not in runner.invoke(main, ["team", "status"]).stdout


@pytest.mark.postgres
def test_doctor_fix_takes_the_pushed_copies_of_retired_records_out_of_the_team(
    pg_schema: tuple[str, str], tmp_path: Path
) -> None:
    """A store written by the main before the same-operation rule pushed its automatic records
    (``ls tests`` as a fix included); ``jiyi doctor --fix`` retires them here and on the server."""
    pytest.importorskip("psycopg")
    import shutil

    from click.testing import CliRunner

    from jiyi.cli import main
    from jiyi.store.postgres.database import PgDatabase
    from jiyi.team.client.http import TeamClient
    from jiyi.team.server.app import create_app

    dsn, schema = pg_schema
    home = tmp_path / "a"
    home.mkdir()
    shutil.copy(Path(__file__).resolve().parent.parent / "data" / "store-main-capture.sqlite", home / "jiyi.db")
    with PgDatabase(dsn, schema=schema) as db:
        db.create_team("alpha")
        with serving(create_app(db, rate_per_minute=0)) as url:
            token = db.create_token("alpha", "alice")
            settings = machine(tmp_path, "a", url, token)
            with Memory(settings=settings) as memory, TeamClient.from_settings(settings) as client:
                store = memory.store
                assert isinstance(store, SQLiteStore)
                outbox.enable(store)
                with store.transaction() as conn:  # pushed as that main did: nothing held them back
                    lines = [outbox.wire_line(store, conn, r) for r in store.list_records()]
                assert len(client.push("old-main", lines)["accepted"]) == 4
            env = {"JIYI_HOME": str(home), "JIYI_TEAM_URL": url, "JIYI_TEAM_TOKEN": token}
            result = CliRunner().invoke(main, ["doctor", "--fix"], env=env, prog_name="jiyi")
            assert result.exit_code == 0, result.output
            assert "fix: 3 of 4 automatic records retired" in result.output
            with db.cursor() as cur:
                cur.execute("SELECT title FROM records WHERE team_id = %s AND NOT forgotten", (db.team_id("alpha"),))
                live = [r[0] for r in cur.fetchall()]
            assert len(live) == 1 and live[0].endswith("fixed by cc -o app main.c -lz")


@pytest.mark.postgres
def test_doctor_says_whether_the_team_server_answers_with_this_token(
    pg_schema: tuple[str, str], tmp_path: Path
) -> None:
    pytest.importorskip("psycopg")
    from click.testing import CliRunner

    from jiyi.cli import main
    from jiyi.store.postgres.database import PgDatabase
    from jiyi.team.server.app import create_app

    dsn, schema = pg_schema
    with PgDatabase(dsn, schema=schema) as db:
        db.create_team("alpha")
        with serving(create_app(db, rate_per_minute=0)) as url:
            token = db.create_token("alpha", "alice")
            base = {"JIYI_HOME": str(tmp_path / "a"), "JIYI_TEAM_URL": url}
            good = CliRunner().invoke(main, ["doctor", "--json"], env={**base, "JIYI_TEAM_TOKEN": token})
            bad = CliRunner().invoke(main, ["doctor"], env={**base, "JIYI_TEAM_TOKEN": "jiyi_" + "0" * 40})
    assert json.loads(good.stdout)["team"] == {"url": url, "answers": True, "token": "accepted"}
    assert f"team server {url}: does not answer: E_UNAUTHORIZED" in bad.stdout
    assert {"key": "team_token", "value": "(set)", "source": "JIYI_TEAM_TOKEN"} in json.loads(good.stdout)["settings"]


@pytest.mark.postgres
def test_jiyi_show_lists_every_replay_run_the_team_holds(pg_schema: tuple[str, str], tmp_path: Path) -> None:
    pytest.importorskip("psycopg")
    from click.testing import CliRunner

    from jiyi.cli import main
    from jiyi.store.postgres.database import PgDatabase
    from jiyi.team.client.http import TeamClient
    from jiyi.team.server.app import create_app

    dsn, schema = pg_schema
    with PgDatabase(dsn, schema=schema) as db:
        db.create_team("alpha")
        with serving(create_app(db, rate_per_minute=0)) as url:
            token = db.create_token("alpha", "alice")
            settings = machine(tmp_path, "a", url, token)
            with Memory(settings=settings) as memory, TeamClient.from_settings(settings) as client:
                store = memory.store
                assert isinstance(store, SQLiteStore)
                noted = memory.session(project="zlib-port").note(**YAML).record
                sync.run(store, client, settings)
                for passed in (False, True):
                    client.report_verification(
                        noted.hex, passed=passed, how="replay", environment="os=linux", detail=""
                    )
                sync.run(store, client, settings)  # the summary comes back with the pull
                with pytest.raises(JiyiError, match=r"rr_f{32}"):  # no such record of the team
                    client.verifications("f" * 32)
            env = {"JIYI_HOME": str(tmp_path / "a"), "JIYI_TEAM_URL": url, "JIYI_TEAM_TOKEN": token}
            shown = CliRunner().invoke(main, ["show", noted.id], env=env)
            as_json = CliRunner().invoke(main, ["show", noted.id, "--json"], env=env)
    assert shown.exit_code == 0, shown.output
    lines = shown.stdout.splitlines()
    runs = lines[lines.index("replay runs:") + 1 :][:2]
    assert runs[0].endswith("· replay · os=linux · failed") and runs[1].endswith("· replay · os=linux · passed")
    assert [r["passed"] for r in json.loads(as_json.stdout)["replays"]] == [False, True]

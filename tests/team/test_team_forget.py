"""Forget on the team server, the client's half: what queues a forget or a purge, and a server
from before forget (the end-to-end paths through two machines are in test_team_two_machines)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from jiyi.errors import Unavailable
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

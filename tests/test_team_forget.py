"""Forget on the team server, the client's half: what queues a forget or a purge, and a server
from before forget (the end-to-end paths through two machines are in test_team_two_machines)."""

from __future__ import annotations

from pathlib import Path

import pytest

from jiyi import outbox, sync, team_forget
from jiyi.errors import Unavailable
from jiyi.memory import Memory
from jiyi.sqlite_store import SQLiteStore

from .helpers import YAML, note
from .team_helpers import dead_url, machine, serving


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
        from jiyi.team_client import TeamClient

        with pytest.raises(Unavailable), TeamClient(dead_url(), "jiyi_x") as client:
            outbox.push(store, client)
        assert team_forget.pending(store) == 2 and outbox.status(store).last_error


@pytest.mark.postgres
def test_a_server_from_before_forget_keeps_the_forgets_queued_and_the_rest_syncing(
    pg_schema: tuple[str, str], tmp_path: Path
) -> None:
    pytest.importorskip("psycopg")
    from jiyi.pg_database import PgDatabase
    from jiyi.team_client import TeamClient
    from jiyi.team_server import create_app

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

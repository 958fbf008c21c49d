"""Two machines (two JIYI_HOMEs, two SQLite stores) and a real team server on PostgreSQL: what one
notes the other finds, through outages, revisions, settings, teams, the MCP server and the hook."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from jiyi import transfer
from jiyi.config import Settings
from jiyi.errors import Unavailable
from jiyi.memory import Memory
from jiyi.records import Fix
from jiyi.store.sqlite.store import SQLiteStore
from jiyi.team.client import outbox, sync
from jiyi.team.verify.replay import replay

from ..helpers import CHECK_PY, MYLIB_ERROR, YAML, ZLIB, anywhere, git_repo, hook_env, note, run_hook
from ..team_helpers import dead_url, free_socket, machine, server_count, serving

pytestmark = pytest.mark.postgres
pytest.importorskip("psycopg", reason="the team extra is not installed (pip install -e '.[test]')")

from jiyi.store.postgres.database import PgDatabase  # noqa: E402
from jiyi.team.client.http import TeamClient  # noqa: E402
from jiyi.team.server.app import create_app  # noqa: E402

YAML_ERROR = "ModuleNotFoundError: No module named 'yaml'"


def store_of(memory: Memory) -> SQLiteStore:
    store = memory.store
    assert isinstance(store, SQLiteStore)
    return store


def synced(memory: Memory) -> sync.SyncReport:
    with TeamClient.from_settings(memory.settings) as client:
        return sync.run(store_of(memory), client, memory.settings)


def eventually(check: Callable[[], bool], seconds: float = 30) -> None:
    """Wait for what another thread or process does (the background syncs have no event to wait on)."""
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def joined(threads: list[threading.Thread], seconds: float = 30) -> None:
    for thread in threads:
        thread.join(seconds)
        assert not thread.is_alive(), "a background sync did not finish"


def test_a_note_on_one_machine_is_found_and_read_on_the_other_as_a_team_record(
    db: PgDatabase, url: str, tmp_path: Path
) -> None:
    a = machine(tmp_path, "a", url, db.create_token("alpha", "alice"))
    b = machine(tmp_path, "b", url, db.create_token("alpha", "bob"))
    with Memory(settings=a) as ma, Memory(settings=b) as mb:
        written = ma.session(project="zlib-port").note(**YAML).record
        assert synced(ma).pushed.accepted == 1  # type: ignore[union-attr]
        assert synced(mb).pulled.new == 1  # type: ignore[union-attr]
        session = mb.session(project="other-project")
        found = session.search_text(YAML_ERROR)
        assert found.startswith(f"1. [rr_{written.hex}] {YAML['title']}\n   source: 团队共享 · zlib-port · ")
        text = session.read_text(f"rr_{written.hex}")
        assert text.startswith(f"[rr_{written.hex}] {YAML['title']}\nsource: 团队共享 · zlib-port · ")
        assert "做法（Learned）：pip install pyyaml" in text
        # Nothing pulled goes back out, and A's own record came back unchanged.
        assert outbox.status(store_of(mb)).pending == 0
        own = store_of(ma).get(written.hex)
        assert own is not None and (own.remote, own.origin) == (False, "note")


def test_notes_written_while_the_server_is_down_arrive_exactly_once_when_it_is_back(
    db: PgDatabase, tmp_path: Path
) -> None:
    probe = free_socket()
    port = probe.getsockname()[1]
    probe.close()
    app = create_app(db, rate_per_minute=0)
    base = f"http://127.0.0.1:{port}"
    a = machine(tmp_path, "a", base, db.create_token("alpha", "alice"))
    b = machine(tmp_path, "b", base, db.create_token("alpha", "bob"))
    with Memory(settings=a) as ma, Memory(settings=b) as mb:
        with serving(app, port):
            synced(ma)  # syncing is on; nothing to send yet
        session = ma.session(project="zlib-port")
        yaml_hex = session.note(**YAML).record.hex
        hexes = {yaml_hex, session.note(**note(scope="global")).record.hex}
        with pytest.raises(Unavailable):
            synced(ma)
        state = outbox.status(store_of(ma))
        assert (state.pending, state.failing) == (2, 2)
        assert state.last_error and "E_UNAVAILABLE" in state.last_error
        # Searching keeps working locally meanwhile (from the next session on, as always).
        later = ma.session(project="zlib-port")
        assert later.search_text(YAML_ERROR).startswith(f"1. [lr_{yaml_hex}]")
        with serving(app, port):
            report = synced(ma)
            assert (report.pushed.sent, report.pushed.accepted) == (2, 2)  # type: ignore[union-attr]
            synced(ma)
            assert server_count(db) == 2
            assert outbox.status(store_of(ma)).pending == 0 and outbox.status(store_of(ma)).last_error is None
            assert synced(mb).pulled.new == 2  # type: ignore[union-attr]
        with db.cursor() as cur:
            cur.execute("SELECT hex, count(*) FROM revisions GROUP BY hex")
            assert dict(cur.fetchall()) == dict.fromkeys(hexes, 1)


def test_revisions_and_marks_on_one_machine_reach_the_other(db: PgDatabase, url: str, tmp_path: Path) -> None:
    a = machine(tmp_path, "a", url, db.create_token("alpha", "alice"))
    b = machine(tmp_path, "b", url, db.create_token("alpha", "bob"))
    with Memory(settings=a) as ma, Memory(settings=b) as mb:
        sa = ma.session(project="zlib-port")
        first = sa.note(**note(scope="global", topic_key="build/zlib")).record
        synced(ma)
        synced(mb)
        sa.note(**note(scope="global", topic_key="build/zlib", learned="put -lz after the objects"))
        synced(ma)
        assert synced(mb).pulled.updated == 1  # type: ignore[union-attr]
        pulled = store_of(mb).get(first.hex)
        assert pulled is not None and (pulled.remote, pulled.revision) == (True, 2)
        assert pulled.learned == "put -lz after the objects"
        assert [r.revision for r in store_of(mb).revisions(first.hex)] == [1, 2]
        # B's note on the same topic is a record of B's own; the one it marks outdated is A's.
        sb = mb.session(project="zlib-port")
        mine = sb.note(
            **note(scope="global", topic_key="build/zlib", learned="use pkg-config --libs zlib"),
            relates_to=[{"record_ref": f"rr_{first.hex}", "relation": "outdated"}],
        ).record
        assert mine.hex != first.hex and mine.revision == 1
        synced(mb)
        synced(ma)
        on_a = store_of(ma).get(first.hex)
        assert on_a is not None and [(m.source_id, m.relation) for m in on_a.marked] == [(f"rr_{mine.hex}", "outdated")]
        assert f"状态：已被 rr_{mine.hex} 标记为过时" in ma.session(project="zlib-port").read_text(f"lr_{first.hex}")


def test_the_check_of_a_changed_command_reaches_the_team_and_the_other_machine(
    db: PgDatabase, url: str, tmp_path: Path
) -> None:
    repo = tmp_path / "proj"
    git_repo(repo, {"check.py": CHECK_PY, "stub/mylib.py": "VALUE = 1\n"})
    changed = "PYTHONPATH=stub python3 check.py"
    a = machine(tmp_path, "a", url, db.create_token("alpha", "alice"))
    b = machine(tmp_path, "b", url, db.create_token("alpha", "bob", "runner"))  # b asks for the replay work list
    with Memory(settings=a, cwd=repo) as ma, Memory(settings=b) as mb:
        session = ma.session(session_id="flagged")
        session.observe_tool_result("Bash", ok=False, error=MYLIB_ERROR, command="python3 check.py")
        session.observe_tool_result("Bash", ok=True, command=changed)
        (written,) = store_of(ma).list_records()
        assert written.fix == Fix("command", command=changed)
        assert written.reproduction is not None and written.reproduction.check == changed
        # An automatic record stays on its machine until confirmed (docs/spec.md §5): here by a person.
        assert synced(ma).pushed.sent == 0  # type: ignore[union-attr]
        from jiyi.capture.curation import approve

        approve(store_of(ma), written.hex)
        written = store_of(ma).get(written.hex)  # type: ignore[assignment]
        assert synced(ma).pushed.accepted == 1  # type: ignore[union-attr]
        with db.cursor() as cur:  # jsonb keeps the key as it came: no migration needed
            cur.execute("SELECT reproduction FROM records WHERE hex = %s", (written.hex,))
            row = cur.fetchone()
        assert row is not None and row[0] == written.reproduction.to_dict()
        with TeamClient.from_settings(mb.settings) as client:
            (candidate,) = client.verify_candidates(10)
        assert candidate["reproduction"]["check"] == changed
        assert synced(mb).pulled.new == 1  # type: ignore[union-attr]
        pulled = store_of(mb).get(written.hex)
    assert pulled is not None and pulled.remote and pulled.reproduction == written.reproduction
    assert replay(candidate, workdir=tmp_path, **anywhere()).stage == "passed"


def server_origin(db: PgDatabase, hexid: str, team: str = "alpha") -> str:
    with db.cursor() as cur:
        cur.execute("SELECT origin FROM records WHERE team_id = %s AND hex = %s", (db.team_id(team), hexid))
        row = cur.fetchone()
    assert row is not None
    return str(row[0])


def test_a_note_confirmed_later_without_a_new_revision_reaches_the_team_as_local_auto(
    db: PgDatabase, url: str, tmp_path: Path
) -> None:
    a = machine(tmp_path, "a", url, db.create_token("alpha", "alice"))
    b = machine(tmp_path, "b", url, db.create_token("alpha", "bob"))
    with Memory(settings=a) as ma, Memory(settings=b) as mb:
        agent = ma.session(project="zlib-port", session_id="s1")
        agent.observe_tool_result("Bash", ok=False, error=YAML_ERROR)
        written = agent.note(**YAML).record
        synced(ma)
        synced(mb)
        assert server_origin(db, written.hex) == "note"
        # The same tool succeeds: the note becomes 本机自动确认 with no new revision.
        agent.observe_tool_result("Bash", ok=True)
        own = store_of(ma).get(written.hex)
        assert own is not None and (own.origin, own.revision) == ("local_auto", 1)
        assert outbox.status(store_of(ma)).pending == 1
        report = synced(ma).pushed
        assert report is not None and report.accepted == 1
        assert server_origin(db, written.hex) == "local_auto"
        assert outbox.status(store_of(ma)).pending == 0
        # B sees the change on its next pull; the line it gets says local_auto.
        assert synced(mb).pulled.updated == 1  # type: ignore[union-attr]
        with TeamClient.from_settings(b) as client:
            lines = client.changes(0, 10)["records"]
        assert [(r["hex"], r["origin"], r["revision"]) for r in lines] == [(written.hex, "local_auto", 1)]
        # A push of the older state (a retry that crossed the change) does not take it back.
        stale = transfer.record_to_json(store_of(ma), own)
        stale["origin"] = "note"
        with TeamClient.from_settings(a) as client:
            assert client.push("m", [stale])["unchanged"] == [written.hex]
        assert server_origin(db, written.hex) == "local_auto"
        # And no member can claim a replay verdict for itself.
        forged = {**stale, "origin": "team_verified"}
        with TeamClient.from_settings(b) as client:
            client.push("m", [forged])
        assert server_origin(db, written.hex) == "local_auto"


def test_team_push_global_keeps_project_notes_on_the_machine(db: PgDatabase, url: str, tmp_path: Path) -> None:
    a = machine(tmp_path, "a", url, db.create_token("alpha", "alice"), team_push="global")
    b = machine(tmp_path, "b", url, db.create_token("alpha", "bob"))
    with Memory(settings=a) as ma, Memory(settings=b) as mb:
        session = ma.session(project="zlib-port")
        session.note(**ZLIB)  # project scope
        shared = session.note(**YAML).record
        synced(ma)
        assert server_count(db) == 1
        synced(mb)
        assert [r.hex for r in store_of(mb).iter_records()] == [shared.hex]


def test_another_team_sees_nothing_and_cannot_take_a_record_over(db: PgDatabase, url: str, tmp_path: Path) -> None:
    a = machine(tmp_path, "a", url, db.create_token("alpha", "alice"))
    c = machine(tmp_path, "c", url, db.create_token("beta", "carol"))
    with Memory(settings=a) as ma, Memory(settings=c) as mc:
        written = ma.session(project="zlib-port").note(**YAML).record
        synced(ma)
        assert synced(mc).pulled.received == 0  # type: ignore[union-attr]
        assert mc.session().search_text(YAML_ERROR) == "no matching memory"
        # Carol's machine got hold of the record (an export) and changed it: the server refuses it.
        line = transfer.record_to_json(store_of(ma), written)
        line.update(title="taken over", revision=5)
        transfer.import_lines(store_of(mc), [json.dumps(line)])
        mc.session().note(**note(title="carol's own", scope="global"))
        report = synced(mc).pushed
        assert report is not None and report.refused == [written.hex] and report.accepted == 1
        assert (server_count(db, "alpha"), server_count(db, "beta")) == (1, 1)
        state = outbox.status(store_of(mc))
        assert (state.pending, state.failing) == (1, 1)
        with TeamClient.from_settings(a) as client:
            pulled = client.changes(0, 10)["records"]
        assert [(r["hex"], r["title"]) for r in pulled] == [(written.hex, YAML["title"])]


def test_the_mcp_server_pulls_at_start_and_pushes_after_a_note_without_waiting(
    db: PgDatabase, url: str, tmp_path: Path
) -> None:
    from jiyi.mcp_server.server import build

    a = machine(tmp_path, "a", url, db.create_token("alpha", "alice"))
    b = machine(tmp_path, "b", url, db.create_token("alpha", "bob"))
    with Memory(settings=a) as ma, Memory(settings=b) as mb:
        server = build(session=ma.session(project="zlib-port"))
        result = server._run("memory_note", **YAML)
        assert not result.is_error
        assert len(server.team_syncs) >= 1  # the note's push: the tool call did not wait for it
        joined(server.team_syncs)
        assert server_count(db) == 1
        assert outbox.status(store_of(ma)).pending == 0
        # B's server pulls in the background, while B's store is opened by this thread for the
        # first time too (that race once lost the pull without a word).
        other = build(session=mb.session(project="zlib-port"))
        store_of(mb)  # opened now, while the sync thread opens it too
        joined(other.team_syncs)
        assert store_of(mb).count() == 1
        assert outbox.status(store_of(mb)).last_error is None


def test_the_hook_starts_a_detached_sync_at_the_end_of_a_turn(
    db: PgDatabase, url: str, tmp_path: Path, jiyi_home: Path
) -> None:
    token = db.create_token("alpha", "alice")
    team = {"JIYI_TEAM_URL": url, "JIYI_TEAM_TOKEN": token}
    with Memory(settings=Settings(home=jiyi_home)) as memory:
        memory.session(project="zlib-port", session_id="s1").note(**YAML)
    payload = {"hook_event_name": "Stop", "session_id": "s1", "cwd": str(tmp_path)}
    done = run_hook(tmp_path, jiyi_home, payload, **team)
    assert (done.returncode, done.stdout) == (0, b"")
    eventually(lambda: server_count(db) == 1)
    # And the hook itself never loads the HTTP client.
    probe = (
        "import sys, jiyi.capture.hook as h\n"
        f"h.report(h.parse('claude-code', {payload!r}))\nprint('httpx' in sys.modules)\n"
    )
    env = hook_env(tmp_path, jiyi_home, **team)
    seen = subprocess.run([sys.executable, "-c", probe], env=env, cwd=tmp_path, capture_output=True, timeout=60)
    assert seen.stdout.strip() == b"False", seen.stderr


def test_status_and_sync_commands_on_a_synced_machine(
    db: PgDatabase, url: str, monkeypatch: pytest.MonkeyPatch, jiyi_home: Path
) -> None:
    from click.testing import CliRunner

    from jiyi.cli import main

    monkeypatch.setenv("JIYI_TEAM_URL", url)
    monkeypatch.setenv("JIYI_TEAM_TOKEN", db.create_token("alpha", "alice"))
    with Memory() as memory:
        memory.session(project="zlib-port").note(**YAML)
    runner = CliRunner()
    done = runner.invoke(main, ["team", "sync"])
    assert done.exit_code == 0, done.stderr
    assert done.stdout == (
        "pushed 1 record(s): 1 stored, 0 unchanged\npulled 1 record(s): 0 new, 0 updated, 1 of this machine's; "
        f"cursor {json.loads(runner.invoke(main, ['team', 'status', '--json']).stdout)['cursor']}\n"
    )
    data: dict[str, Any] = json.loads(runner.invoke(main, ["team", "status", "--json"]).stdout)
    assert (data["pending"], data["last_error"], data["team_url"]) == (0, None, url)
    assert data["last_push"] and data["last_pull"]
    assert runner.invoke(main, ["team", "sync", "--push-only", "--pull-only"]).exit_code == 2


def test_a_forget_leaves_the_team_and_a_purge_erases_the_text_everywhere(
    db: PgDatabase, url: str, tmp_path: Path
) -> None:
    a = machine(tmp_path, "a", url, db.create_token("alpha", "alice"))
    b = machine(tmp_path, "b", url, db.create_token("alpha", "bob"))
    leaked = "ld: cannot open libz.so: see builder LEAKEDMARKER42 log"
    with Memory(settings=a) as ma, Memory(settings=b) as mb:
        session = ma.session(project="zlib-port")
        soft = session.note(**YAML).record
        hard = session.note(**note(scope="global", title="Link zlib LEAKEDMARKER42", what=leaked)).record
        synced(ma)
        assert synced(mb).pulled.new == 2  # type: ignore[union-attr]
        assert mb.session().search_text(YAML_ERROR).startswith(f"1. [rr_{soft.hex}]")
        # A forgets one: the team forgets it, and B's copy leaves B's search on B's next pull.
        assert store_of(ma).forget(soft.hex)
        assert synced(ma).pushed.forgotten == 1  # type: ignore[union-attr]
        assert synced(mb).pulled.forgotten == 1  # type: ignore[union-attr]
        assert mb.session().search_text(YAML_ERROR) == "no matching memory"
        assert store_of(mb).get(soft.hex, include_forgotten=True) is None
        # B counts a use of the other one (queued in B's outbox), then A purges it.
        store_of(mb).add_evidence(hard.hex, used_success=1)
        assert store_of(ma).purge(hard.hex)
        assert synced(ma).pushed.forgotten == 1  # type: ignore[union-attr]
        with db.cursor() as cur:
            cur.execute("SELECT count(*) FROM revisions WHERE hex = %s", (hard.hex,))
            assert cur.fetchone() == (0,)
        assert server_count(db) == 1  # the forgotten one's row, out of use
        # B's push of its old copy does not bring the text back; its pull erases B's copy.
        report = synced(mb)
        assert report.pushed.accepted == 0 and report.pulled.forgotten == 1  # type: ignore[union-attr]
        assert server_count(db) == 1 and store_of(mb).count(include_forgotten=True) == 0
        with db.cursor() as cur:
            cur.execute("SELECT count(*) FROM records WHERE what LIKE '%LEAKEDMARKER42%'")
            assert cur.fetchone() == (0,)
    for home in (tmp_path / "a", tmp_path / "b"):
        for path in home.glob("jiyi.db*"):
            assert b"LEAKEDMARKER42" not in path.read_bytes(), path


def test_jiyi_forget_tells_the_team_at_once_or_on_the_next_sync(
    db: PgDatabase, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from jiyi.cli import main

    monkeypatch.setenv("JIYI_TEAM_URL", url)
    monkeypatch.setenv("JIYI_TEAM_TOKEN", db.create_token("alpha", "alice"))
    with Memory() as memory:
        session = memory.session(project="zlib-port")
        first, second = session.note(**YAML).record, session.note(**note(scope="global")).record
    runner = CliRunner()
    assert runner.invoke(main, ["team", "sync"]).exit_code == 0
    done = runner.invoke(main, ["forget", "--purge", "--yes", first.id])
    assert done.exit_code == 0, done.stderr
    assert done.stdout.startswith(f"purged {first.id}\nerased on the team server too; ")
    assert server_count(db) == 1
    # The server does not answer: the forget waits in the queue for the next sync.
    monkeypatch.setenv("JIYI_TEAM_URL", dead_url())
    done = runner.invoke(main, ["forget", second.id])
    assert done.stdout == f"forgot {second.id}\nthe team server is told on the next sync (E_UNAVAILABLE)\n"
    monkeypatch.setenv("JIYI_TEAM_URL", url)
    assert json.loads(runner.invoke(main, ["team", "status", "--json"]).stdout)["forgets"] == 1
    assert ", 1 forget(s) to send\n" in runner.invoke(main, ["team", "status"]).stdout
    done = runner.invoke(main, ["team", "sync"])
    assert done.exit_code == 0, done.stderr
    assert done.stdout.startswith("pushed 0 record(s): 0 stored, 0 unchanged, 1 forgotten or erased\n")
    assert json.loads(runner.invoke(main, ["team", "status", "--json"]).stdout)["forgets"] == 0
    with TeamClient(url, db.create_token("alpha", "bob")) as client:
        assert client.changes(0, 10)["records"] == []
        assert [t["hex"] for t in client.forgotten(0, 10)["records"]] == [first.hex, second.hex]


def test_jiyi_forget_of_a_team_record_stays_on_this_machine(
    db: PgDatabase, url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from jiyi.cli import main

    a = machine(tmp_path, "a", url, db.create_token("alpha", "alice"))
    with Memory(settings=a) as ma:
        written = ma.session(project="zlib-port").note(**YAML).record
        synced(ma)
    monkeypatch.setenv("JIYI_TEAM_URL", url)
    monkeypatch.setenv("JIYI_TEAM_TOKEN", db.create_token("alpha", "bob"))
    runner = CliRunner()
    assert runner.invoke(main, ["team", "sync"]).exit_code == 0
    done = runner.invoke(main, ["forget", f"rr_{written.hex}"])
    assert done.stdout == (
        f"forgot rr_{written.hex}\nonly on this machine: rr_{written.hex} is the team's, "
        "and its author takes it out of the team\n"
    )
    assert json.loads(runner.invoke(main, ["team", "status", "--json"]).stdout)["forgets"] == 0
    assert runner.invoke(main, ["team", "sync"]).exit_code == 0
    with TeamClient.from_settings(a) as client:
        assert [r["hex"] for r in client.changes(0, 10)["records"]] == [written.hex]
        assert client.forgotten(0, 10)["records"] == []

"""The CLI against a real team server: doctor --fix takes retired records out of the team, doctor
says whether the server takes this token, show lists a record's replay runs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from jiyi.cli import main
from jiyi.errors import JiyiError
from jiyi.memory import Memory
from jiyi.store.sqlite.store import SQLiteStore
from jiyi.team.client import outbox, sync

from ..helpers import YAML
from ..team_helpers import machine

pytestmark = pytest.mark.postgres
pytest.importorskip("psycopg", reason="the team extra is not installed (pip install -e '.[test]')")

from jiyi.store.postgres.database import PgDatabase  # noqa: E402
from jiyi.team.client.http import TeamClient  # noqa: E402

DATA = Path(__file__).resolve().parent.parent / "data"


def _env(home: Path, url: str, token: str) -> dict[str, str]:
    return {"JIYI_HOME": str(home), "JIYI_TEAM_URL": url, "JIYI_TEAM_TOKEN": token}


def test_doctor_fix_takes_the_pushed_copies_of_retired_records_out_of_the_team(
    db: PgDatabase, url: str, tmp_path: Path
) -> None:
    """A store written by the main before the same-operation rule pushed its automatic records
    (``ls tests`` as a fix included); ``jiyi doctor --fix`` retires them here and on the server."""
    home = tmp_path / "a"
    home.mkdir()
    shutil.copy(DATA / "store-main-capture.sqlite", home / "jiyi.db")
    token = db.create_token("alpha", "alice")
    settings = machine(tmp_path, "a", url, token)
    with Memory(settings=settings) as memory, TeamClient.from_settings(settings) as client:
        store = memory.store
        assert isinstance(store, SQLiteStore)
        outbox.enable(store)
        with store.transaction() as conn:  # pushed as that main did: nothing held them back
            lines = [outbox.wire_line(store, conn, r) for r in store.list_records()]
        assert len(client.push("old-main", lines)["accepted"]) == 4
    result = CliRunner().invoke(main, ["doctor", "--fix"], env=_env(home, url, token), prog_name="jiyi")
    assert result.exit_code == 0, result.output
    assert "fix: 3 of 4 automatic records retired" in result.output
    with db.cursor() as cur:
        cur.execute("SELECT title FROM records WHERE team_id = %s AND NOT forgotten", (db.team_id("alpha"),))
        live = [r[0] for r in cur.fetchall()]
    assert len(live) == 1 and live[0].endswith("fixed by cc -o app main.c -lz")


def test_doctor_says_whether_the_team_server_answers_with_this_token(db: PgDatabase, url: str, tmp_path: Path) -> None:
    token = db.create_token("alpha", "alice")
    good = CliRunner().invoke(main, ["doctor", "--json"], env=_env(tmp_path / "a", url, token))
    bad = CliRunner().invoke(main, ["doctor"], env=_env(tmp_path / "a", url, "jiyi_" + "0" * 40))
    assert json.loads(good.stdout)["team"] == {"url": url, "answers": True, "token": "accepted"}
    assert f"team server {url}: does not answer: E_UNAUTHORIZED" in bad.stdout
    assert {"key": "team_token", "value": "(set)", "source": "JIYI_TEAM_TOKEN"} in json.loads(good.stdout)["settings"]


def test_jiyi_show_lists_every_replay_run_the_team_holds(db: PgDatabase, url: str, tmp_path: Path) -> None:
    token = db.create_token("alpha", "alice", "runner")
    settings = machine(tmp_path, "a", url, token)
    with Memory(settings=settings) as memory, TeamClient.from_settings(settings) as client:
        store = memory.store
        assert isinstance(store, SQLiteStore)
        noted = memory.session(project="zlib-port").note(**YAML).record
        sync.run(store, client, settings)
        for passed in (False, True):
            client.report_verification(noted.hex, passed=passed, how="replay", environment="os=linux", detail="")
        sync.run(store, client, settings)  # the summary comes back with the pull
        with pytest.raises(JiyiError, match=r"rr_f{32}"):  # no such record of the team
            client.verifications("f" * 32)
    env = _env(tmp_path / "a", url, token)
    shown = CliRunner().invoke(main, ["show", noted.id], env=env)
    as_json = CliRunner().invoke(main, ["show", noted.id, "--json"], env=env)
    assert shown.exit_code == 0, shown.output
    lines = shown.stdout.splitlines()
    runs = lines[lines.index("replay runs:") + 1 :][:2]
    assert runs[0].endswith("· replay · os=linux · failed · by alice")
    assert runs[1].endswith("· replay · os=linux · passed · by alice")
    assert [r["passed"] for r in json.loads(as_json.stdout)["replays"]] == [False, True]

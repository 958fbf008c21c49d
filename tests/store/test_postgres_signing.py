"""PostgreSQL: a team whose records were signed with older key-line rules is re-signed (at a server's
start, bounded; by `jiyi team admin reindex --signatures`), resumably; a re-signed record gets a new
seq so members pull it, and the signatures its writer's failure gave it are carried over."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from click.testing import CliRunner

pytestmark = pytest.mark.postgres

psycopg = pytest.importorskip("psycopg")

from psycopg.types.json import Jsonb  # noqa: E402

from jiyi.analysis.indexing import SIGNATURE_VERSION, derive  # noqa: E402
from jiyi.analysis.signature import analyze, digest  # noqa: E402
from jiyi.cli import main  # noqa: E402
from jiyi.store.postgres import signing, upgrade  # noqa: E402
from jiyi.store.postgres.store import PgDatabase, PgStore  # noqa: E402
from jiyi.store.postgres.team import TeamStore  # noqa: E402
from jiyi.store.reindex import upgrade_signatures  # noqa: E402
from jiyi.team.server.app import search_hits  # noqa: E402

from .test_signing import BANNER, CARRIED, SPRING  # noqa: E402
from .test_store_contract import first, made  # noqa: E402


@pytest.fixture
def db(pg_schema: tuple[str, str]) -> Iterator[PgDatabase]:
    dsn, schema = pg_schema
    with PgDatabase(dsn, schema=schema, max_size=4) as database:
        yield database


def _team(db: PgDatabase, name: str, spring: int, others: int = 1) -> tuple[PgStore, list[str]]:
    """A team of ``spring`` records of the Spring text (their hexes returned) and ``others`` zlib ones,
    signed as the rules of version 1 signed them (the banner), with a carried signature each, and the
    team without a version row, as a server before versions were kept left it."""
    store = TeamStore(db, db.create_team(name))
    hexes = []
    for i in range(spring):
        record = made(f"DataSource {i}", what=SPRING)
        store.write_record(record, first(record), derive(record))
        hexes.append(record.hex)
    for i in range(others):
        record = made(f"zlib {i}")
        store.write_record(record, first(record), derive(record))
    with db.cursor() as cur:
        cur.execute("DELETE FROM signature_versions WHERE team_id = %s", (store.team,))
        for hexid in hexes:
            cur.execute("DELETE FROM signatures WHERE team_id = %s AND hex = %s", (store.team, hexid))
            cur.execute(
                "INSERT INTO signatures (team_id, sig, hex) SELECT %s, s, %s FROM unnest(%s::text[]) s",
                (store.team, hexid, [digest(BANNER), CARRIED]),
            )
            cur.execute(
                "UPDATE records SET normalized = %s, key_lines = %s, sigs = %s WHERE team_id = %s AND hex = %s",
                (Jsonb([BANNER]), Jsonb([BANNER]), sorted([digest(BANNER), CARRIED]), store.team, hexid),
            )
    return store, hexes


def _sigs(store: PgStore, hexid: str) -> set[str]:
    record = store.get(hexid)
    assert record is not None
    return set(record.signatures)


def _seq(store: PgStore, hexid: str) -> int:
    with store.db.cursor() as cur:
        cur.execute("SELECT seq FROM records WHERE team_id = %s AND hex = %s", (store.team, hexid))
        return int(cur.fetchone()[0])  # type: ignore[index]


def test_a_new_team_is_signed_with_the_current_rules(db: PgDatabase) -> None:
    store = PgStore(db, db.create_team("fresh"))
    assert store.signature_state() == (SIGNATURE_VERSION, 0)


def test_an_old_team_is_re_signed_at_start_and_members_pull_the_new_signatures(db: PgDatabase) -> None:
    store, (spring,) = _team(db, "alpha", 1)
    assert store.signature_state() == (1, 2)
    before = _seq(store, spring)
    assert upgrade.upgrade_on_start(db) >= 2
    assert store.signature_state() == (SIGNATURE_VERSION, 0)
    assert _sigs(store, spring) == set(analyze(SPRING).signatures) | {CARRIED}
    assert _seq(store, spring) > before  # a pull brings it
    hits = search_hits(store, "2024-01-01 10:00:00.000 ERROR 1 --- [main] o.s.b.d.Reporter :\n" + SPRING, 5)
    assert hits[0].record.hex == spring and hits[0].signals[0].detail in set(analyze(SPRING).signatures)


def test_a_re_signing_stopped_half_way_resumes_and_looks_at_each_record_once(
    db: PgDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, hexes = _team(db, "beta", 4, others=0)
    assert store.upgrade_signatures(2) == 2
    assert store.signature_state() == (1, 2)
    assert digest(BANNER) not in _sigs(store, hexes[0]) and digest(BANNER) in _sigs(store, hexes[2])
    assert upgrade_signatures(store) == 2
    assert store.signature_state() == (SIGNATURE_VERSION, 0)
    # Another upgrader holding the team's lock: a start does not wait for it.
    store2, _ = _team(db, "gamma", 1)
    with db.cursor() as cur:
        cur.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (store2._signing_key(),))
        assert PgStore(db, store2.team).upgrade_signatures(2, wait=False) == 0
    assert signing.PgSigning.upgrade_signatures(store2, 200) == 2


def test_the_admin_command_re_signs_every_team(pg_schema: tuple[str, str], db: PgDatabase) -> None:
    dsn, schema = pg_schema
    store, hexes = _team(db, "alpha", 2)
    other, _ = _team(db, "beta", 0)
    args = ["team", "admin", "reindex", "--dsn", dsn, "--schema", schema]
    one = CliRunner().invoke(main, [*args, "--signatures", "--team", "beta", "--json"])
    assert one.exit_code == 0, one.output
    assert json.loads(one.output) == {
        "signatures": {
            "current": SIGNATURE_VERSION,
            "teams": [{"team": "beta", "id": other.team, "looked_at": 1, "version": SIGNATURE_VERSION}],
        }
    }
    assert store.signature_state() == (1, 3)
    result = CliRunner().invoke(main, [*args, "--signatures", "--terms"])
    assert result.exit_code == 0, result.output
    assert f"alpha: 3 records looked at for re-signing, key-line rules version {SIGNATURE_VERSION}" in result.output
    assert "alpha: search terms of 0 records re-derived" in result.output
    assert all(digest(BANNER) not in _sigs(store, h) for h in hexes)


def test_the_admin_list_says_which_teams_are_re_signing(pg_schema: tuple[str, str], db: PgDatabase) -> None:
    dsn, schema = pg_schema
    _team(db, "alpha", 1)
    PgStore(db, db.create_team("beta"))
    args = ["team", "admin", "list", "--dsn", dsn, "--schema", schema]
    listed = json.loads(CliRunner().invoke(main, [*args, "--json"]).stdout)
    assert [t["signatures"] for t in listed] == [
        {"version": 1, "current": SIGNATURE_VERSION, "left": 2},
        {"version": SIGNATURE_VERSION, "current": SIGNATURE_VERSION, "left": 0},
    ]
    text = CliRunner().invoke(main, args).stdout
    assert f"  signatures: key-line rules version 1, re-signing to {SIGNATURE_VERSION}: 2 records left" in text
    assert text.count("signatures:") == 1

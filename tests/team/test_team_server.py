"""The team server over real PostgreSQL, served by uvicorn on 127.0.0.1: auth, team isolation,
size and rate limits, search, verification and the OpenAPI description."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from jiyi.memory import Memory
from jiyi.transfer import record_to_json

from ..helpers import YAML, ZLIB, note
from ..team_helpers import server_count, serving

pytestmark = pytest.mark.postgres
pytest.importorskip("psycopg", reason="the team extra is not installed (pip install -e '.[test]')")

import psycopg  # noqa: E402

from jiyi.store.postgres.database import PgDatabase  # noqa: E402
from jiyi.store.postgres.team import TeamStore  # noqa: E402
from jiyi.team.server.app import READ_ROUTES, create_app  # noqa: E402

REFUSED = {"code": "E_UNAUTHORIZED", "message": "团队记忆拒绝访问", "message_en": "team memory refused access"}
FORBIDDEN = {"code": "E_FORBIDDEN", "message": "团队记忆拒绝访问", "message_en": "team memory refused access"}


def lines(tmp_path: Path, *notes: dict[str, Any]) -> list[dict[str, Any]]:
    """Export lines of notes written on a machine of its own."""
    with Memory(tmp_path / f"writer-{uuid.uuid4().hex[:8]}") as memory:
        session = memory.session(project="zlib-port")
        records = [session.note(**n).record for n in notes]
        return [record_to_json(memory.store, memory.store.get(r.hex)) for r in records]  # type: ignore[arg-type]


def client(url: str, token: str | None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=url, headers=headers, timeout=30, trust_env=False)


def rows_of(db: PgDatabase, sql: str) -> list[tuple[Any, ...]]:
    with db.cursor() as cur:
        cur.execute(sql)
        return cur.fetchall()


ENDPOINTS = [
    ("GET", "/v1/changes", None),
    ("GET", "/v1/search?q=yaml", None),
    ("GET", "/v1/verify/candidates", None),
    ("POST", "/v1/push", {"machine": "m", "records": []}),
    ("POST", "/v1/verify/" + "a" * 32, {"passed": True}),
    ("POST", "/v1/forget", {"records": []}),
    ("GET", "/v1/forgotten", None),
]


def test_health_needs_no_token_and_the_openapi_document_names_every_route(db: PgDatabase, url: str) -> None:
    with client(url, None) as http:
        assert http.get("/v1/health").json() == {"ok": True}
        document = http.get("/openapi.json").json()
    assert document["openapi"].startswith("3.")
    routes = {route.path for route in create_app(db).routes}  # type: ignore[attr-defined]
    assert set(document["paths"]) == routes
    assert document["paths"]["/v1/push"]["post"]["responses"]["403"]
    on_replica = {p for p, item in document["paths"].items() for op in item.values() if "replica" in str(op)}
    assert on_replica == set(READ_ROUTES)


@pytest.mark.parametrize(("method", "path", "body"), ENDPOINTS)
def test_no_token_a_bad_token_and_a_revoked_one_are_refused(
    db: PgDatabase, url: str, method: str, path: str, body: Any
) -> None:
    token = db.create_token("alpha", "alice", "runner")  # a runner's: every route, replay reports too
    for header in ({}, {"Authorization": "Bearer jiyi_not-a-token"}, {"Authorization": f"Basic {token}"}):
        with httpx.Client(base_url=url, headers=header, trust_env=False) as http:
            answer = http.request(method, path, json=body)
        assert (answer.status_code, answer.json()) == (401, REFUSED)
    with client(url, token) as http:
        assert http.request(method, path, json=body).status_code in (200, 404)  # 404: no such record yet
        assert db.revoke_token(token) == 1
        answer = http.request(method, path, json=body)
    assert (answer.status_code, answer.json()) == (401, REFUSED)


def test_a_record_of_another_team_is_forbidden_and_never_shown(db: PgDatabase, url: str, tmp_path: Path) -> None:
    line = lines(tmp_path, YAML)[0]
    alice, bob = db.create_token("alpha", "alice"), db.create_token("beta", "bob")
    with client(url, alice) as http:
        assert http.post("/v1/push", json={"machine": "a", "records": [line]}).json()["accepted"] == [line["hex"]]
    with client(url, bob) as http:
        theirs = {**line, "title": "taken over", "revision": 9}
        answer = http.post("/v1/push", json={"machine": "b", "records": [theirs]})
        assert (answer.status_code, answer.json()) == (403, FORBIDDEN)
        assert http.get("/v1/changes").json() == {"records": [], "cursor": 0, "more": False}
        assert http.get("/v1/search", params={"q": "No module named 'yaml'"}).json() == {"hits": []}
    with client(url, db.create_token("beta", "bobs-runner", "runner")) as http:
        # A runner of the other team: refused with no second line, so nothing is told of the record.
        answer = http.post(f"/v1/verify/{line['hex']}", json={"passed": True, "environment": "os=linux"})
        assert (answer.status_code, answer.json()) == (403, FORBIDDEN)
    with client(url, alice) as http:
        pulled = http.get("/v1/changes").json()["records"]
    assert [(r["hex"], r["title"], r["revision"]) for r in pulled] == [(line["hex"], YAML["title"], 1)]


def test_push_answers_accepted_then_unchanged_and_search_returns_rr_ids(
    db: PgDatabase, url: str, tmp_path: Path
) -> None:
    batch = lines(tmp_path, YAML, ZLIB)
    with client(url, db.create_token("alpha", "alice")) as http:
        first = http.post("/v1/push", json={"machine": "a", "records": batch}).json()
        again = http.post("/v1/push", json={"machine": "a", "records": batch}).json()
        hits = http.get("/v1/search", params={"q": "ModuleNotFoundError: No module named 'yaml'"}).json()["hits"]
        project_hits = http.get("/v1/search", params={"q": "ld: undefined symbol deflate"}).json()["hits"]
        in_project = http.get(
            "/v1/search", params={"q": "ld: undefined symbol deflate", "project": batch[1]["project_key"]}
        ).json()["hits"]
    assert sorted(first["accepted"]) == sorted(line["hex"] for line in batch) and first["unchanged"] == []
    assert again == {"accepted": [], "unchanged": [line["hex"] for line in batch], "refused": []}
    assert [h["id"] for h in hits][:1] == ["rr_" + batch[0]["hex"]]
    assert hits[0]["title"] == YAML["title"]
    assert project_hits == []  # a project-scope record only in its project
    assert [h["id"] for h in in_project] == ["rr_" + batch[1]["hex"]]
    assert server_count(db, "alpha") == 2


def test_malformed_pushes_name_the_field(db: PgDatabase, url: str, tmp_path: Path) -> None:
    line = lines(tmp_path, YAML)[0]
    with client(url, db.create_token("alpha", "alice")) as http:
        bad = http.post("/v1/push", json={"machine": "a", "records": [{**line, "hex": "nope"}]})
        missing = http.post("/v1/push", json={"machine": "a", "records": [{"hex": "b" * 32}]})
        many = http.post("/v1/push", json={"machine": "a", "records": [line] * 101})
        not_json = http.post("/v1/push", content=b"{", headers={"Content-Type": "application/json"})
        limit = http.get("/v1/changes", params={"limit": "0"})
    assert bad.status_code == 400 and bad.json()["code"] == "E_INVALID_ARGUMENT"
    assert bad.json()["field"] == "records[0]"
    assert missing.status_code == 400 and missing.json()["field"] == "records[0]"
    assert many.status_code == 400 and many.json()["field"] == "records"
    assert not_json.status_code == 400 and not_json.json()["field"] == "body"
    assert limit.status_code == 400 and limit.json()["field"] == "limit"
    assert server_count(db, "alpha") == 0


def test_the_body_limit_is_kept_while_reading_whatever_content_length_says(db: PgDatabase, tmp_path: Path) -> None:
    token = db.create_token("alpha", "alice")
    body = json.dumps({"machine": "a", "records": lines(tmp_path, YAML) * 3}).encode()
    assert len(body) > 4000
    with serving(create_app(db, max_body=4000, rate_per_minute=0)) as base, client(base, token) as http:
        declared = http.post("/v1/push", content=body, headers={"Content-Type": "application/json"})

        def chunks() -> Iterator[bytes]:  # no Content-Length: chunked, counted as it arrives
            for start in range(0, len(body), 1000):
                yield body[start : start + 1000]

        streamed = http.post("/v1/push", content=chunks(), headers={"Content-Type": "application/json"})
        small = http.post("/v1/push", json={"machine": "a", "records": []})
    for answer in (declared, streamed):
        assert answer.status_code == 413
        assert answer.json()["code"] == "E_INVALID_ARGUMENT" and answer.json()["field"] == "body"
    assert small.status_code == 200
    assert server_count(db, "alpha") == 0


def test_each_token_has_its_own_rate_and_429_says_when_to_come_back(db: PgDatabase) -> None:
    alice, bob = db.create_token("alpha", "alice"), db.create_token("alpha", "bob")
    with serving(create_app(db, rate_per_minute=3)) as base:
        with client(base, alice) as http:
            answers = [http.get("/v1/changes") for _ in range(4)]
        with client(base, bob) as http:
            other = http.get("/v1/changes")
        with client(base, None) as http:
            health = [http.get("/v1/health").status_code for _ in range(5)]
    assert [a.status_code for a in answers] == [200, 200, 200, 429]
    assert answers[3].json()["code"] == "E_UNAVAILABLE"
    assert 1 <= int(answers[3].headers["Retry-After"]) <= 20  # a token comes back every 20 s at 3 a minute
    assert other.status_code == 200
    assert health == [200] * 5


def test_replay_candidates_and_a_reported_run(db: PgDatabase, url: str, tmp_path: Path) -> None:
    fixed = note(fix={"kind": "command", "command": "pip install pyyaml"})
    line = lines(tmp_path, fixed)[0]
    line["reproduction"] = {
        "command": "python -c 'import yaml'",
        "repo": "https://example.invalid/r",
        "commit": "0" * 40,
    }
    with client(url, db.create_token("alpha", "alice", "runner")) as http:
        http.post("/v1/push", json={"machine": "a", "records": [line]}).raise_for_status()
        candidates = http.get("/v1/verify/candidates").json()["records"]
        run = {"passed": True, "how": "replay", "environment": "os=linux", "detail": "ok"}
        summary = http.post(f"/v1/verify/{line['hex']}", json=run).json()["verification"]
        after = http.get("/v1/verify/candidates").json()["records"]
        unknown = http.post("/v1/verify/" + "c" * 32, json=run)
        pulled = http.get("/v1/changes").json()["records"]
    assert [c["hex"] for c in candidates] == [line["hex"]]
    assert (summary["passed"], summary["tries"], summary["environment"]) == (1, 1, "os=linux")
    assert after == []
    assert unknown.status_code == 404 and unknown.json()["code"] == "E_NOT_FOUND"
    assert pulled[0]["origin"] == "team_verified" and pulled[0]["verification"]["passed"] == 1


def test_admin_commands_make_teams_and_tokens_that_the_server_takes_and_revokes(
    db: PgDatabase, pg_schema: tuple[str, str], url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from jiyi.cli import main

    dsn, schema = pg_schema
    monkeypatch.setenv("JIYI_TEAM_DSN", dsn)
    monkeypatch.setenv("JIYI_TEAM_SCHEMA", schema)
    runner = CliRunner()
    assert runner.invoke(main, ["team", "admin", "create-team", "gamma"]).exit_code == 0
    again = runner.invoke(main, ["team", "admin", "create-team", "gamma"])
    assert again.exit_code == 1 and "错误码：E_INVALID_ARGUMENT" in again.stderr
    added = runner.invoke(main, ["team", "admin", "add-member", "gamma", "dana-laptop"])
    token = added.stdout.strip()
    assert added.exit_code == 0 and token.startswith("jiyi_") and "shown once" in added.stderr
    listed = json.loads(runner.invoke(main, ["team", "admin", "list", "--json"]).stdout)
    assert [t["team"] for t in listed] == ["alpha", "beta", "gamma"]
    assert listed[2]["members"] == [{"member": "dana-laptop", "role": "member", "live_tokens": 1, "tokens": 1}]
    with client(url, token) as http:
        assert http.get("/v1/changes").status_code == 200
        revoked = runner.invoke(main, ["team", "admin", "revoke", "--team", "gamma", "--member", "dana-laptop"])
        assert revoked.stdout == "revoked 1 token\n"
        assert http.get("/v1/changes").status_code == 401
    assert runner.invoke(main, ["team", "admin", "revoke", token]).exit_code == 1  # nothing left to revoke


def test_without_the_team_extra_the_commands_name_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    from click.testing import CliRunner

    from jiyi.cli import main

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "psycopg" else real(name, *a))
    done = CliRunner().invoke(main, ["team", "admin", "list", "--dsn", "host=nowhere"])
    assert done.exit_code == 1
    assert done.stderr == "team memory needs the team extra: pip install 'jiyi[team]'\n"


def test_serve_keeps_idle_connections_open_longer_than_the_client_and_proxies_do(
    db: PgDatabase, pg_schema: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import uvicorn
    from click.testing import CliRunner

    from jiyi.cli import main
    from jiyi.team.client.http import KEEPALIVE_EXPIRY

    dsn, schema = pg_schema
    ran: list[dict[str, Any]] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **options: ran.append(options))
    monkeypatch.setenv("JIYI_TEAM_DSN", dsn)
    monkeypatch.setenv("JIYI_TEAM_SCHEMA", schema)
    runner = CliRunner()
    assert runner.invoke(main, ["team", "serve"]).exit_code == 0
    assert runner.invoke(main, ["team", "serve", "--keep-alive", "10"]).exit_code == 0
    assert [options["timeout_keep_alive"] for options in ran] == [75, 10]
    assert KEEPALIVE_EXPIRY < 5  # under uvicorn's own default too, for a server started without jiyi
    assert runner.invoke(main, ["team", "serve", "--keep-alive", "0"]).exit_code == 2


@pytest.mark.slow
def test_jiyi_team_serve_runs_several_workers_on_one_database(db: PgDatabase, pg_schema: tuple[str, str]) -> None:
    import subprocess
    import sys
    import time

    from ..team_helpers import free_socket

    dsn, schema = pg_schema
    probe = free_socket()
    port = probe.getsockname()[1]
    probe.close()
    token = db.create_token("alpha", "alice")
    args = ["-m", "jiyi", "team", "serve", "--dsn", dsn, "--schema", schema, "--port", str(port), "--workers", "2"]
    server = subprocess.Popen([sys.executable, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        with client(f"http://127.0.0.1:{port}", token) as http:
            while True:  # the processes start on their own: nothing to wait on but the port
                try:
                    if http.get("/v1/health").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline and server.poll() is None, "jiyi team serve did not start"
                time.sleep(0.1)
            assert [http.get("/v1/changes").status_code for _ in range(20)] == [200] * 20
    finally:
        server.terminate()
        _, err = server.communicate(timeout=30)
    assert err.count(b"Started server process") == 2


@pytest.fixture
def replica_schema(pg_schema: tuple[str, str]) -> Iterator[str]:
    """A second schema for a stand-in replica, dropped afterwards."""
    dsn, schema = pg_schema
    yield schema + "_replica"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}_replica" CASCADE')


def test_with_a_read_replica_reads_come_from_it_and_writes_and_tokens_stay_on_the_primary(
    db: PgDatabase, pg_schema: tuple[str, str], replica_schema: str, tmp_path: Path
) -> None:
    dsn, _ = pg_schema
    fixed = {**YAML, "fix": {"kind": "command", "command": "pip install pyyaml"}}
    only_there, pushed = lines(tmp_path, fixed, ZLIB)
    only_there["reproduction"] = {
        "command": "python -c 'import yaml'",
        "repo": "https://example.invalid/r",
        "commit": "0" * 40,
    }
    # The stand-in replica holds what the primary does not (a record, a tombstone), and no token at
    # all: every answer shows which database it came from.
    with PgDatabase(dsn, schema=replica_schema) as copy:
        assert [copy.create_team("alpha"), copy.create_team("beta")] == [db.team_id("alpha"), db.team_id("beta")]
        TeamStore(copy, db.team_id("alpha")).merge_pushed(only_there, "carol")
        TeamStore(copy, db.team_id("alpha")).forget_in_team("f" * 32, purge=True)
    token = db.create_token("alpha", "alice", "runner")  # a runner: the candidates are its list
    with (
        PgDatabase(dsn, schema=replica_schema, read_only=True) as replica,
        serving(create_app(db, read_db=replica, rate_per_minute=0)) as base,
        client(base, token) as http,
    ):
        answer = http.post("/v1/push", json={"machine": "a", "records": [pushed]}).json()
        pulled = http.get("/v1/changes").json()
        hits = http.get("/v1/search", params={"q": "No module named 'yaml'"}).json()["hits"]
        gone = http.get("/v1/forgotten").json()["records"]
        candidates = http.get("/v1/verify/candidates").json()["records"]
        assert db.revoke_token(token) == 1
        revoked = http.get("/v1/changes")
    assert answer == {"accepted": [pushed["hex"]], "unchanged": [], "refused": []}
    assert rows_of(db, "SELECT hex FROM records") == [(pushed["hex"],)]  # the push landed on the primary
    # Read on the replica: its record, and not the push it has not received (a real one would after its lag).
    assert [r["hex"] for r in pulled["records"]] == [only_there["hex"]] and pulled["more"] is False
    assert [h["id"] for h in hits] == ["rr_" + only_there["hex"]]
    assert [(g["hex"], g["purged"]) for g in gone] == [("f" * 32, True)]
    assert [c["hex"] for c in candidates] == [only_there["hex"]]
    assert (revoked.status_code, revoked.json()) == (401, REFUSED)  # checked on the primary, at once


def test_a_worker_opens_the_read_replica_of_jiyi_team_read_dsn_read_only_and_reads_there(
    db: PgDatabase, pg_schema: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from jiyi.team.server.app import app_from_env

    dsn, schema = pg_schema
    monkeypatch.setenv("JIYI_TEAM_DSN", dsn)
    monkeypatch.setenv("JIYI_TEAM_SCHEMA", schema)
    monkeypatch.setenv("JIYI_TEAM_READ_DSN", dsn + " application_name=replica")
    app = app_from_env()
    primary, replica = app.state.db, app.state.read_db
    try:
        assert (replica.read_only, replica.dsn, primary.read_only) == (True, dsn + " application_name=replica", False)

        def requests() -> tuple[int, int]:
            return primary.pool.get_stats().get("requests_num", 0), replica.pool.get_stats().get("requests_num", 0)

        with serving(app) as base, client(base, db.create_token("alpha", "alice")) as http:
            before = requests()
            assert http.get("/v1/search", params={"q": "No module named 'yaml'"}).json() == {"hits": []}
            assert http.get("/v1/changes").json()["records"] == []
            after = requests()
        assert (after[0] - before[0], after[1] - before[1] >= 2) == (2, True)  # the primary: the two token checks
    finally:
        primary.close()
        replica.close()


def test_jiyi_team_serve_waits_for_the_read_replica_to_catch_up_before_it_starts(
    db: PgDatabase, pg_schema: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import uvicorn
    from click.testing import CliRunner

    from jiyi.cli import main
    from jiyi.cli import team as team_cli
    from jiyi.store.postgres import migrations as pg_migrations

    from ..team_helpers import dead_url

    dsn, schema = pg_schema
    started: list[str] = []
    monkeypatch.setattr(uvicorn, "run", lambda *a, **k: started.append(os.environ.get("JIYI_TEAM_READ_DSN", "")))
    for name in ("JIYI_TEAM_DSN", "JIYI_TEAM_SCHEMA", "JIYI_TEAM_READ_DSN"):
        monkeypatch.setenv(name, "")  # restored afterwards: serve hands its settings to the workers this way
    serve = ["team", "serve", "--dsn", dsn, "--schema", schema, "--read-dsn"]
    port = dead_url().rsplit(":", 1)[1]
    down = CliRunner().invoke(main, [*serve, f"host=127.0.0.1 port={port} dbname=test user=postgres"])
    assert down.exit_code == 1 and "cannot use PostgreSQL" in down.stderr and started == []
    assert CliRunner().invoke(main, [*serve, dsn]).exit_code == 0
    assert started == [dsn]
    # A replica that lacks the migrations just applied on the primary is waited for, then refused.
    behind = iter([["m999_next"], ["m999_next"]])
    monkeypatch.setattr(pg_migrations, "missing", lambda conn: next(behind, []))
    caught_up = CliRunner().invoke(main, [*serve, dsn])
    assert caught_up.exit_code == 0 and started == [dsn, dsn]
    assert "waiting up to 30 s for the read replica" in caught_up.stderr and "m999_next" in caught_up.stderr
    monkeypatch.setattr(pg_migrations, "missing", lambda conn: ["m999_next"])
    monkeypatch.setattr(team_cli, "REPLICA_WAIT_S", 0.6)
    refused = CliRunner().invoke(main, [*serve, dsn])
    assert refused.exit_code == 1 and started == [dsn, dsn]
    assert "not caught up" in refused.stderr and "错误码：E_UNAVAILABLE" in refused.stderr


def stored_text(db: PgDatabase, hexid: str) -> str:
    """Everything the server's tables hold about a record, as text (a purge must leave none)."""
    seen: list[str] = []
    with db.cursor() as cur:
        for table, where in (
            ("records", "hex = %s"),
            ("revisions", "hex = %s"),
            ("evidence", "hex = %s"),
            ("signatures", "hex = %s"),
            ("relations", "source_hex = %s OR target_hex = %s"),
        ):
            cur.execute(f"SELECT t::text FROM {table} t WHERE {where}", (hexid,) * where.count("%s"))
            seen += [str(row[0]) for row in cur.fetchall()]
    return "\n".join(seen)


def test_forget_takes_a_record_out_of_pulls_and_search_and_purge_erases_it(
    db: PgDatabase, url: str, tmp_path: Path
) -> None:
    alice, carol = db.create_token("alpha", "alice"), db.create_token("beta", "carol")
    soft, hard = lines(tmp_path, YAML, note(scope="global", what="ld: undefined symbol inflateSECRETX"))
    with client(url, alice) as http, client(url, carol) as other:
        assert http.post("/v1/push", json={"machine": "m", "records": [soft, hard]}).status_code == 200
        # Another team cannot forget alpha's records: to beta the hex is unknown.
        assert other.post("/v1/forget", json={"records": [{"hex": soft["hex"]}]}).json()["unknown"] == [soft["hex"]]
        assert "inflateSECRETX" in stored_text(db, hard["hex"])
        start = http.get("/v1/forgotten").json()
        assert start == {"records": [], "cursor": 0, "more": False}
        answer = http.post(
            "/v1/forget",
            json={"records": [{"hex": soft["hex"]}, {"hex": hard["hex"], "purge": True}, {"hex": "e" * 32}]},
        ).json()
        assert answer == {"forgotten": [soft["hex"], hard["hex"]], "unknown": ["e" * 32], "refused": []}
        gone = http.get("/v1/forgotten").json()
        assert [(t["hex"], t["purged"]) for t in gone["records"]] == [(soft["hex"], False), (hard["hex"], True)]
        assert http.get("/v1/forgotten", params={"cursor": gone["cursor"]}).json()["records"] == []
        assert http.get("/v1/changes").json()["records"] == []
        assert http.get("/v1/search", params={"q": "No module named 'yaml'"}).json()["hits"] == []
        # The purged text is nowhere on the server; the forgotten record's row stays, out of use.
        assert "inflateSECRETX" not in stored_text(db, hard["hex"]) and stored_text(db, hard["hex"]) == ""
        assert "yaml" in stored_text(db, soft["hex"])
        assert server_count(db, "alpha") == 1
        # A machine that had not pulled the purge pushes its old copy: nothing comes back.
        assert http.post("/v1/push", json={"machine": "b", "records": [hard]}).json() == {
            "accepted": [],
            "unchanged": [hard["hex"]],
            "refused": [],
        }
        assert server_count(db, "alpha") == 1
        # Retried: answered the same, and the other team's record of that hex is untouched.
        again = http.post("/v1/forget", json={"records": [{"hex": hard["hex"], "purge": True}]}).json()
        assert again == {"forgotten": [hard["hex"]], "unknown": [], "refused": []}
        # ... and nothing moved: a pull after the first forget has nothing more to read.
        assert http.get("/v1/forgotten", params={"cursor": gone["cursor"]}).json()["records"] == []
        assert http.post("/v1/forget", json={"records": [{"hex": soft["hex"]}]}).json()["forgotten"] == [soft["hex"]]
        assert http.get("/v1/forgotten", params={"cursor": gone["cursor"]}).json()["records"] == []
        assert other.get("/v1/forgotten").json()["records"] == []
        # A new revision of a forgotten record is live again (its author wrote it after all).
        newer = {**soft, "revision": 2, "title": "Install PyYAML (revised)"}
        assert http.post("/v1/push", json={"machine": "m", "records": [newer]}).json()["accepted"] == [soft["hex"]]
        assert [r["title"] for r in http.get("/v1/changes").json()["records"]] == ["Install PyYAML (revised)"]
        bad = http.post("/v1/forget", json={"records": [{"hex": "xyz"}]})
        assert (bad.status_code, bad.json()["field"]) == (400, "records[0]")


def author_of(db: PgDatabase, hexid: str) -> str | None:
    with db.cursor() as cur:
        cur.execute("SELECT author FROM records WHERE hex = %s", (hexid,))
        row = cur.fetchone()
    assert row is not None
    return None if row[0] is None else str(row[0])


def test_only_the_member_who_pushed_a_record_first_may_forget_or_purge_it(
    db: PgDatabase, url: str, tmp_path: Path
) -> None:
    alices, old = lines(tmp_path, YAML, note(scope="global", what="ld: undefined symbol inflateSECRETX"))
    bobs = lines(tmp_path, ZLIB)[0]
    alice, bob = db.create_token("alpha", "alice"), db.create_token("alpha", "bob")
    with client(url, alice) as http, client(url, bob) as other:
        assert http.post("/v1/push", json={"machine": "a", "records": [alices, old]}).status_code == 200
        # A revision pushed by another member is refused (only the author revises); the record stays alice's.
        newer = {**alices, "revision": 2, "title": "Install PyYAML (bob's revision)"}
        assert other.post("/v1/push", json={"machine": "b", "records": [newer, bobs]}).json() == {
            "accepted": [bobs["hex"]],
            "unchanged": [],
            "refused": [alices["hex"]],
        }
        assert (author_of(db, alices["hex"]), author_of(db, bobs["hex"])) == ("alice", "bob")
        # Stored before the server kept authors: any member's to take out, as before.
        with db.cursor() as cur:
            cur.execute("UPDATE records SET author = NULL WHERE hex = %s", (old["hex"],))
        # Refused one by one: the rest of the batch is answered as ever.
        wanted = [{"hex": alices["hex"], "purge": True}, {"hex": bobs["hex"]}, {"hex": old["hex"], "purge": True}]
        answer = other.post("/v1/forget", json={"records": [*wanted, {"hex": "e" * 32}]})
        assert answer.json() == {
            "forgotten": [bobs["hex"], old["hex"]],
            "unknown": ["e" * 32],
            "refused": [alices["hex"]],
        }
        assert "inflateSECRETX" not in stored_text(db, old["hex"])
        assert [r["hex"] for r in http.get("/v1/changes").json()["records"]] == [alices["hex"]]
        assert [t["hex"] for t in http.get("/v1/forgotten").json()["records"]] == [bobs["hex"], old["hex"]]
        # Its author may.
        answer = http.post("/v1/forget", json={"records": [{"hex": alices["hex"], "purge": True}]})
        assert answer.json() == {"forgotten": [alices["hex"]], "unknown": [], "refused": []}
        assert stored_text(db, alices["hex"]) == ""


def test_the_operator_forgets_and_purges_any_members_record_on_the_database(
    db: PgDatabase, pg_schema: tuple[str, str], url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from jiyi.cli import main

    dsn, schema = pg_schema
    monkeypatch.setenv("JIYI_TEAM_DSN", dsn)
    monkeypatch.setenv("JIYI_TEAM_SCHEMA", schema)
    leaked, soft = lines(tmp_path, note(scope="global", what="ld: token LEAKEDSECRETX"), YAML)
    with client(url, db.create_token("alpha", "alice")) as http:
        assert http.post("/v1/push", json={"machine": "a", "records": [leaked, soft]}).status_code == 200
    runner = CliRunner()
    admin = ["team", "admin", "forget"]
    done = runner.invoke(main, [*admin, "alpha", "--purge", f"rr_{leaked['hex']}", "f" * 32])
    assert done.exit_code == 0, done.stderr
    assert done.stdout == f"rr_{leaked['hex']}: erased\nrr_{'f' * 32}: not in alpha\n"
    assert stored_text(db, leaked["hex"]) == ""
    done = runner.invoke(main, [*admin, "alpha", "--json", f"lr_{soft['hex']}"])
    assert json.loads(done.stdout)["records"] == [{"hex": soft["hex"], "answer": "forgotten"}]
    assert server_count(db, "alpha") == 1 and "yaml" in stored_text(db, soft["hex"])
    with client(url, db.create_token("alpha", "bob")) as other:
        assert other.get("/v1/changes").json()["records"] == []
        gone = other.get("/v1/forgotten").json()["records"]
    assert [(t["hex"], t["purged"]) for t in gone] == [(leaked["hex"], True), ("f" * 32, True), (soft["hex"], False)]
    # In the team named only (alpha's record is not in beta), and nothing taken out exits 1.
    assert runner.invoke(main, [*admin, "beta", soft["hex"]]).exit_code == 1
    assert runner.invoke(main, [*admin, "alpha", "not-an-id"]).exit_code == 2
    assert runner.invoke(main, [*admin, "gamma", soft["hex"]]).exit_code == 1


@pytest.mark.postgres
def test_a_mistyped_schema_is_an_error_not_a_new_schema_and_a_duplicate_team_is_said_once(
    pg_schema: tuple[str, str],
) -> None:
    import psycopg
    from click.testing import CliRunner

    from jiyi.cli import main

    dsn, schema = pg_schema
    typo = schema + "_typo"
    runner = CliRunner()
    done = runner.invoke(main, ["team", "admin", "list", "--dsn", dsn, "--schema", typo])
    assert done.exit_code == 1 and f"{typo} does not exist in this database" in done.stderr
    with psycopg.connect(dsn, autocommit=True) as conn:
        assert conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (typo,)).fetchone() is None
    create = ["team", "admin", "create-team", "alpha", "--dsn", dsn, "--schema", schema]
    assert runner.invoke(main, create).exit_code == 0
    again = runner.invoke(main, create)
    assert again.exit_code == 1 and again.stderr.count("already exists: alpha") == 1


def test_a_refusal_carries_its_english_form_for_a_client_in_english(db: PgDatabase, url: str) -> None:
    from jiyi.errors import InvalidArgument
    from jiyi.team.client.http import TeamClient

    token = db.create_token("alpha", "alice")
    with client(url, token) as http:
        answer = http.get("/v1/search", params={"q": ""})
    assert answer.status_code == 400
    assert answer.json()["reason_en"] == "must be 1..2000 characters"
    with TeamClient(url, token) as team, pytest.raises(InvalidArgument) as info:
        team.search("")
    assert info.value.text("en") == "invalid argument: q: must be 1..2000 characters\nerror code: E_INVALID_ARGUMENT"


def test_a_worker_keeps_the_glossary_in_its_cache_folder_not_in_memory(
    db: PgDatabase, pg_schema: tuple[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A Chinese query's glosses come from a small file in JIYI_TEAM_CACHE_DIR (analysis/glossary.py),
    # as a client's come from its home: no worker reads the whole dictionary into memory.
    from jiyi.analysis import glossary
    from jiyi.team.server.app import app_from_env

    dsn, schema = pg_schema
    monkeypatch.setenv("JIYI_TEAM_DSN", dsn)
    monkeypatch.setenv("JIYI_TEAM_SCHEMA", schema)
    monkeypatch.setenv("JIYI_TEAM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(glossary, "_folder", None)
    glossary.table.cache_clear()
    app = app_from_env()
    try:
        with serving(app) as base, client(base, db.create_token("alpha", "alice")) as http:
            assert http.get("/v1/search", params={"q": "链接时找不到 zlib"}).json() == {"hits": []}
        assert list((tmp_path / "cache").glob("glossary-*.sqlite"))
        assert glossary.table.cache_info().currsize == 0
    finally:
        app.state.db.close()

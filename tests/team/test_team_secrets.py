"""The secrets corpus (tests/data/secrets.txt, every kind) through the team paths (docs/spec.md §6,
issue 15): a client's push (its store redacted what it wrote), a raw push that bypasses the
client (the server redacts), another member's pull, a replay run's detail, and ``jiyi export`` of
the pulled store. Neither what was sent by the client, nor any row of the server's PostgreSQL
schema, nor a pull, a run list or an export may hold any part of a secret."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from jiyi.memory import Memory
from jiyi.records import new_hex
from jiyi.store.sqlite.store import SQLiteStore
from jiyi.team.client import outbox, sync

from ..helpers import YAML, hook_env
from ..secret_corpus import KINDS, batches, in_batches, leaks, leaks_in_files, pg_text
from ..team_helpers import machine

pytestmark = pytest.mark.postgres
pytest.importorskip("psycopg", reason="the team extra is not installed (pip install -e '.[test]')")

from jiyi.store.postgres.database import PgDatabase  # noqa: E402
from jiyi.team.client.http import TeamClient  # noqa: E402

from .test_team_server import client, lines  # noqa: E402

TEXTS = batches(3500)  # a few records carry every kind
TITLES = batches(160, one_line=True)


def test_every_kind_is_carried() -> None:
    assert len(KINDS) >= 100 and in_batches(3500) == KINDS and len(TEXTS) <= 5


def raw_line(template: dict[str, Any], text: str, n: int) -> dict[str, Any]:
    """An export line with ``text`` in every field a push carries text in, as a client that does
    not redact (an old one, curl) would send it."""
    hexid = new_hex()
    revision = {
        **template["revisions"][0],
        "hex": hexid,
        "change": text,
        "snapshot": {"title": text, "what": text, "fix": {"kind": "command", "command": text}},
    }
    return {
        **template,
        "hex": hexid,
        "title": text,
        "what": text,
        "why": text,
        "where": text,
        "learned": text,
        "topic_key": f"corpus/{n}/{text}",
        "project": text,
        "session_id": text,
        "tool_name": text,
        "environment": {"os": "linux", "note": text},
        "evidence_refs": [text],
        "fix": [
            {"kind": "command", "command": text},
            {"kind": "diff", "diff": "".join(f"+{line}\n" for line in text.split("\n"))},
            {"kind": "config", "path": text, "content": text},
        ][n % 3],
        "reproduction": {"command": text, "repo": text, "commit": "0" * 40, "cwd": text, "check": text},
        "signatures": [*template["signatures"], *text.split("\n")],
        "symbols": [*template["symbols"], *text.split()],
        "revisions": [revision],
        "marks": [],
    }


@pytest.mark.timeout(240)
def test_no_kind_of_secret_reaches_the_server_a_pull_a_replay_run_or_an_export(
    db: PgDatabase, url: str, tmp_path: Path
) -> None:
    alice = machine(tmp_path, "alice", url, db.create_token("alpha", "alice"))
    carol = machine(tmp_path, "carol", url, db.create_token("alpha", "carol"))
    project = tmp_path / "app"
    project.mkdir()

    # 1. A client's push: alice's notes, redacted as her store wrote them; what it sends is kept.
    sent: list[dict[str, Any]] = []
    with Memory(settings=alice, cwd=project) as memory:
        session = memory.session(session_id="alice")
        for n, text in enumerate(TEXTS):
            fix = {"kind": "command", "command": text[:4000]}
            content = {"what": text, "why": text, "where": text, "learned": text}
            session.note(title=TITLES[n], type="bugfix", scope="global", content=content, fix=fix)
        for n in range(len(TEXTS), len(TITLES)):  # the other titles, on notes of their own
            session.note(
                title=TITLES[n],
                type="bugfix",
                scope="global",
                content=dict.fromkeys(("what", "why", "where", "learned"), "-"),
            )
        store = memory.store
        assert isinstance(store, SQLiteStore)
        with TeamClient.from_settings(alice) as http:
            push = http.push

            def spy(machine_id: str, records: list[dict[str, Any]]) -> dict[str, list[str]]:
                sent.extend(records)
                return push(machine_id, records)

            http.push = spy  # type: ignore[method-assign]
            assert outbox.push(store, http).accepted == len(TITLES)
    assert len(sent) == len(TITLES) and leaks(json.dumps(sent, ensure_ascii=False)) == []

    # 2. A raw push that bypasses the client: the corpus in every field; the server redacts.
    template = lines(tmp_path, YAML)[0]
    raw = [raw_line(template, text, n) for n, text in enumerate(TEXTS)]
    assert leaks(json.dumps(raw, ensure_ascii=False)) == KINDS  # it does carry every kind
    with client(url, db.create_token("alpha", "bob")) as http:
        answer = http.post("/v1/push", json={"machine": "curl", "records": raw}).json()
    assert answer["accepted"] == [line["hex"] for line in raw]

    # 3. A replay run's detail: the replayed command's output, from a runner.
    with client(url, db.create_token("alpha", "ci", "runner")) as http:
        for n, line in enumerate(raw):
            run = {"passed": n % 2 == 0, "how": TEXTS[n], "environment": TEXTS[n], "detail": TEXTS[n]}
            http.post(f"/v1/verify/{line['hex']}", json=run).raise_for_status()
        runs = [http.get(f"/v1/verify/{line['hex']}").json() for line in raw]
    assert leaks(json.dumps(runs, ensure_ascii=False)) == []

    # 4. The server's PostgreSQL rows, every table.
    stored = pg_text(db)
    assert stored.count("[REDACTED:") >= len(KINDS)
    assert leaks(stored) == []

    # 5. Another member's pull (the wire, then her store) and her `jiyi export`.
    with client(url, carol.team_token) as http:
        pulled = http.get("/v1/changes", params={"limit": 1000}).json()
    assert len(pulled["records"]) == len(TITLES) + len(TEXTS)
    assert leaks(json.dumps(pulled, ensure_ascii=False)) == []
    with Memory(settings=carol, cwd=project) as memory:
        store = memory.store
        assert isinstance(store, SQLiteStore)
        with TeamClient.from_settings(carol) as http:
            sync.pull(store, http)
        assert store.count() == len(TITLES) + len(TEXTS)
    export = tmp_path / "carol.jsonl"
    env = hook_env(tmp_path, carol.home, JIYI_TEAM_URL="", JIYI_TEAM_TOKEN="")
    done = subprocess.run(
        [sys.executable, "-m", "jiyi", "export", str(export)], env=env, cwd=project, capture_output=True, timeout=60
    )
    assert done.returncode == 0, done
    assert len(export.read_text(encoding="utf-8").splitlines()) == len(TITLES) + len(TEXTS)
    assert leaks_in_files(carol.home, export) == []

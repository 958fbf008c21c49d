"""The team server's operator page (/ui) over real PostgreSQL: behind the operator token only,
showing the teams, members, records, replay runs and latest pushes, every value escaped."""

from __future__ import annotations

import re
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from jiyi.memory import Memory
from jiyi.transfer import record_to_json

from ..helpers import YAML, note

pytestmark = pytest.mark.postgres
pytest.importorskip("psycopg", reason="the team extra is not installed (pip install -e '.[test]')")

from starlette.testclient import TestClient  # noqa: E402

from jiyi.store.postgres.database import PgDatabase  # noqa: E402
from jiyi.store.postgres.team import TeamStore  # noqa: E402
from jiyi.team.server.app import create_app  # noqa: E402

OPERATOR = "operator-" + uuid.uuid4().hex
HOSTILE = "<img src=x onerror=alert(1)>"


def pushed(db: PgDatabase, tmp_path: Path, member: str, *notes: dict[str, Any]) -> list[str]:
    with Memory(tmp_path / f"writer-{uuid.uuid4().hex[:8]}") as memory:
        session = memory.session(project="zlib-port")
        records = [session.note(**n).record for n in notes]
        lines = [record_to_json(memory.store, memory.store.get(r.hex)) for r in records]  # type: ignore[arg-type]
    store = TeamStore(db, db.team_id("alpha"))
    for line in lines:
        store.merge_pushed(line, member)
    return [r.hex for r in records]


def test_the_operator_page_needs_its_token_and_escapes(db: PgDatabase, tmp_path: Path) -> None:
    member = db.create_token("alpha", "alice")
    yaml, hostile = pushed(db, tmp_path, "alice", YAML, note(title=HOSTILE))
    store = TeamStore(db, db.team_id("alpha"))
    store.add_verification(yaml, passed=True, how="replay", environment="os=linux", detail="")
    store.add_verification(yaml, passed=False, how="replay", environment="os=darwin", detail="")
    with TestClient(create_app(db, rate_per_minute=0, operator_token=OPERATOR), follow_redirects=False) as client:
        for refused in (client.get("/ui"), client.get("/ui?token=wrong"), client.get("/ui", headers=_bearer(member))):
            assert refused.status_code == 401 and YAML["title"] not in refused.text
        answer = client.get(f"/ui?token={OPERATOR}")
        assert answer.status_code == 303 and answer.headers["location"] == "/ui"
        cookie = answer.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/ui" in cookie
        page = client.get("/ui").text
        assert client.get("/ui", headers=_bearer(OPERATOR)).status_code == 200
    assert "alpha" in page and "beta" in page and "alice" in page and YAML["title"] in page
    assert page.count('class="passed"') == 1 and page.count('class="failed"') == 1
    assert HOSTILE not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    assert f"rr_{hostile}" in page


def test_the_page_lists_recent_refusals_and_a_flood_is_one_write(
    db: PgDatabase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jiyi.team.server import refusals

    from .test_team_server import lines

    written: list[int] = []
    flush = refusals.Refusals.flush

    def counted(self: refusals.Refusals) -> int:
        done = flush(self)
        if done:
            written.append(done)
        return done

    monkeypatch.setattr(refusals.Refusals, "flush", counted)
    alices = lines(tmp_path, YAML)[0]
    alice, bob = db.create_token("alpha", "alice"), db.create_token("alpha", "bob")
    revised = {
        **alices,
        "revision": 2,
        "title": "Install PyYAML, revised by bob",
        "revisions": [*alices["revisions"], {**alices["revisions"][0], "revision": 2, "change": "title"}],
    }
    app = create_app(db, rate_per_minute=0, operator_token=OPERATOR, refusal_seconds=0.5)
    with TestClient(app, follow_redirects=False) as client:
        assert client.post("/v1/push", json={"records": [alices]}, headers=_bearer(alice)).status_code == 200
        assert (
            client.post(f"/v1/verify/{alices['hex']}", json={"passed": True}, headers=_bearer(bob)).status_code == 403
        )
        pushed = client.post("/v1/push", json={"records": [revised]}, headers=_bearer(bob)).json()
        assert pushed["refused"] == [alices["hex"]]
        assert client.post("/v1/forget", json={"records": [{"hex": alices["hex"]}]}, headers=_bearer(bob)).json()[
            "refused"
        ] == [alices["hex"]]
        started = time.monotonic()
        flood = [client.get("/v1/changes", headers=_bearer(f"jiyi_{uuid.uuid4().hex}")).status_code for _ in range(300)]
        assert set(flood) == {401, 429}  # the address's budget of failed look-ups, then refused before them
        elapsed = time.monotonic() - started
        # Counted, and written once every half second at most, not request by request.
        assert len(written) <= 1 + elapsed / 0.5 and len(written) < 30
        page = client.get("/ui", headers=_bearer(OPERATOR)).text
    refused = page.split("Latest refusals")[1]
    rows = {
        tuple(re.sub("<[^>]+>", "", cell) for cell in re.findall("<td>(.*?)</td>", row)[1:5])
        for row in re.findall("<tr>(.*?)</tr>", refused)
    }
    assert ("(no team)", "401 bad token", "testclient", str(flood.count(401))) in rows
    assert ("(no team)", "429 rate limited", "testclient", str(flood.count(429))) in rows
    assert ("alpha", "403 forbidden", "bob", "1") in rows
    assert ("alpha", "refused revision", "bob", "1") in rows and ("alpha", "refused forget", "bob", "1") in rows
    assert f"rr_{alices['hex']}" in refused


def test_without_an_operator_token_there_is_no_page(db: PgDatabase) -> None:
    with TestClient(create_app(db, rate_per_minute=0)) as client:
        assert client.get(f"/ui?token={OPERATOR}").status_code == 404


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}

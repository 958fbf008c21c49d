"""The review page over HTTP, in process (starlette's TestClient): its guards, its escaping, and
every action changing what ``memory_search`` returns."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

import jiyi
from jiyi.ui.app import create_app
from jiyi.ui.guards import Guard

from ..helpers import SIGNALS
from .conftest import HOSTILE, PORT, Data, hits

BASE = f"http://127.0.0.1:{PORT}"
ZLIB_QUERY = "ld: undefined symbol deflate"


@pytest.fixture
def guard() -> Guard:
    return Guard(port=PORT)


@pytest.fixture
def anonymous(memory: jiyi.Memory, guard: Guard) -> Iterator[TestClient]:
    with TestClient(create_app(memory, guard), base_url=BASE, follow_redirects=False) as client:
        yield client


@pytest.fixture
def client(anonymous: TestClient, guard: Guard) -> TestClient:
    assert anonymous.get(f"/?token={guard.token}").status_code == 303
    anonymous.follow_redirects = True
    return anonymous


def post(client: TestClient, guard: Guard, path: str, **form: str) -> int:
    data = {"csrf": guard.csrf, **form}
    return client.post(path, data=data, headers={"Origin": BASE}, follow_redirects=False).status_code


# -- guards --------------------------------------------------------------------------------------
def test_without_the_token_nothing_is_shown(anonymous: TestClient, data: Data) -> None:
    for path in ("/", f"/records/{data.zlib.id}", f"/search?q={ZLIB_QUERY}", "/sessions", "/health"):
        answer = anonymous.get(path)
        assert answer.status_code == 401
        assert data.zlib.title not in answer.text and "deflate" not in answer.text
    assert anonymous.get("/?token=not-the-token").status_code == 401
    anonymous.cookies.set(f"jiyi_ui_{PORT}", "not-the-token")
    assert anonymous.get("/").status_code == 401


def test_the_token_sets_a_strict_http_only_cookie_and_leaves_the_url(anonymous: TestClient, guard: Guard) -> None:
    answer = anonymous.get(f"/search?q=zlib&token={guard.token}")
    assert answer.status_code == 303 and answer.headers["location"] == "/search?q=zlib"
    cookie = answer.headers["set-cookie"]
    assert cookie.startswith(f"jiyi_ui_{PORT}={guard.token};")
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie
    assert anonymous.get("/search?q=zlib").status_code == 200
    assert guard.token not in anonymous.get("/").text  # never written into a page


def test_a_foreign_host_is_refused_even_with_the_cookie(client: TestClient, data: Data) -> None:
    for host in ("evil.example:8765", "127.0.0.1:9999", "localhost", "attacker.test"):
        answer = client.get("/", headers={"Host": host})
        assert answer.status_code == 403 and data.zlib.title not in answer.text
    assert client.get("/", headers={"Host": f"localhost:{PORT}"}).status_code == 200


def test_a_post_from_another_origin_changes_nothing(client: TestClient, guard: Guard, data: Data) -> None:
    path = f"/records/{data.zlib.id}/forget"
    form = {"csrf": guard.csrf}
    for headers in ({"Origin": "http://evil.example"}, {"Origin": "null"}, {"Referer": "http://evil.example/x"}, {}):
        assert client.post(path, data=form, headers=headers, follow_redirects=False).status_code == 403
    assert client.post(path, data={"csrf": "wrong"}, headers={"Origin": BASE}).status_code == 403
    assert client.post(path, data={}, headers={"Origin": BASE}).status_code == 403
    assert hits(_memory(client), ZLIB_QUERY)[:1] == [data.zlib.id]
    # Its own page's Referer, when a browser sends no Origin, is let through.
    answer = client.post(path, data=form, headers={"Referer": f"{BASE}/records/x"}, follow_redirects=False)
    assert answer.status_code == 303
    assert data.zlib.id not in hits(_memory(client), ZLIB_QUERY)


def _memory(client: TestClient) -> jiyi.Memory:
    found: jiyi.Memory = client.app.state.context.memory  # type: ignore[attr-defined]
    return found


def test_every_answer_forbids_framing_and_scripts(client: TestClient) -> None:
    headers = client.get("/").headers
    assert "script-src" not in headers["content-security-policy"]
    assert "default-src 'none'" in headers["content-security-policy"]
    assert headers["x-frame-options"] == "DENY"


def test_a_next_field_never_leaves_the_site(client: TestClient, guard: Guard, data: Data) -> None:
    for bad in ("//evil.example/", "http://evil.example/", "/\\evil.example"):
        answer = client.post(
            f"/records/{data.yaml.id}/mark",
            data={"csrf": guard.csrf, "relation": "outdated", "reason": "", "next": bad},
            headers={"Origin": BASE},
            follow_redirects=False,
        )
        assert answer.headers["location"] == f"/records/{data.yaml.id}"


# -- escaping ------------------------------------------------------------------------------------
def test_hostile_record_text_stays_text(client: TestClient, data: Data) -> None:
    pages = [client.get("/").text, client.get(f"/records/{data.hostile.id}").text]
    pages.append(client.get("/search", params={"q": "TypeError is not a function"}).text)
    for page in pages:
        assert HOSTILE not in page and "<script>" not in page and "<b>x</b>" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in pages[0]
    assert "&lt;script&gt;" in pages[1]


# -- pages ---------------------------------------------------------------------------------------
def test_the_records_page_shows_the_inbox_first_and_counts(client: TestClient, data: Data) -> None:
    page = client.get("/").text
    assert page.index(data.auto.title) < page.index('id="all"')
    assert re.search(r"1–4 共 4", page), page  # the automatic record, zlib, yaml, the hostile one
    assert ">0 共 0<" in client.get("/", params={"type": "decision"}).text
    page = client.get("/", params={"text": "pyyaml"}).text
    assert "1–1 共 1" in page and data.yaml.title in page
    assert "1–1 共 1" in client.get("/", params={"origin": "local_auto"}).text


def test_paging(client: TestClient, memory: jiyi.Memory) -> None:
    from jiyi.ui import pages

    session = memory.session(session_id="many")
    for i in range(pages.PAGE + 3):
        session.note(title=f"note {i}", type="learning", scope="global", content={"what": f"w{i}", "why": "y",
                     "where": "z", "learned": "l"})  # fmt: skip
    first = client.get("/").text
    assert f"1–50 共 {pages.PAGE + 3}" in first and 'rel="next"' in first and 'rel="prev"' not in first
    second = client.get("/", params={"page": 2}).text
    assert f"51–53 共 {pages.PAGE + 3}" in second and 'rel="prev"' in second
    assert pages.grouped(30000) == "30 000"


def test_search_shows_the_hits_of_memory_search_with_nine_signals(
    client: TestClient, memory: jiyi.Memory, data: Data
) -> None:
    page = client.get("/search", params={"q": ZLIB_QUERY}).text
    shown = re.findall(r'<h2><a href="/records/(lr_[0-9a-f]{32})">', page)
    assert shown == hits(memory, ZLIB_QUERY) and shown[0] == data.zlib.id
    first = page.split('<article class="hit">')[1]
    assert re.findall(r'data-signal="(\w+)"', first) == SIGNALS
    assert first.count("<meter") == 9 and "error_signature" in first


def test_the_record_page_reads_it_whole_without_spending_a_read_budget(
    client: TestClient, memory: jiyi.Memory, data: Data
) -> None:
    before = memory.store.session("reader-1")
    page = client.get(f"/records/{data.zlib.id}").text
    assert memory.store.session("reader-1") == before
    assert all(s.read_used == 0 for s in memory.store.recent_sessions() if s.id not in ("reader-1",))
    text = memory.session(session_id="fresh-reader").read(data.zlib.id).text
    assert "修订 3" in text
    import html

    assert html.escape(text, quote=False) in page
    # Each revision against the one before it.
    assert "-learned: add -lz after the object files" in html.unescape(page)
    assert "+learned: add -lz after the objects, before -lc" in html.unescape(page)
    assert "通过 1" in page and "失败 1" in page  # replay runs: passed and failed
    assert "https://example.com/zlib-port.git" in page


def test_a_record_page_says_the_team_server_is_unreachable_and_still_answers(
    client: TestClient, memory: jiyi.Memory, data: Data, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ..team_helpers import dead_url

    monkeypatch.setattr(memory, "settings", memory.settings.replace(team_url=dead_url(), team_token="jiyi_x"))
    started = time.monotonic()
    answer = client.get(f"/records/{data.zlib.id}")
    assert answer.status_code == 200 and data.zlib.title in answer.text
    assert "团队服务器无法连接" in answer.text and time.monotonic() - started < 10
    assert "团队服务器" not in client.get(f"/records/{data.yaml.id}").text  # no runs to ask about


@pytest.mark.postgres
def test_a_record_page_shows_the_team_servers_replay_runs(
    client: TestClient, memory: jiyi.Memory, data: Data, url: str, db: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jiyi.store.postgres.team import TeamStore
    from jiyi.transfer import record_to_json

    token = db.create_token("alpha", "alice")
    team = TeamStore(db, db.team_id("alpha"))
    team.merge_pushed(record_to_json(memory.store, data.zlib), "alice")
    team.add_verification(data.zlib.hex, passed=True, how="replay", environment="os=linux", detail="", runner="ci-1")
    team.add_verification(data.zlib.hex, passed=False, how="replay", environment="os=darwin", detail="", runner="ci-2")
    monkeypatch.setattr(memory, "settings", memory.settings.replace(team_url=url, team_token=token))
    page = client.get(f"/records/{data.zlib.id}").text
    runs = page.split('id="team-runs"')[1].split("</table>")[0]
    assert "os=linux" in runs and "ci-1" in runs and "os=darwin" in runs and "ci-2" in runs
    assert runs.count('class="passed"') == 1 and runs.count('class="failed"') == 1


def test_the_sessions_page_shows_reads_against_the_budget_and_the_last_failure(
    client: TestClient, memory: jiyi.Memory, data: Data
) -> None:
    page = client.get("/sessions").text
    reader = page.split("<code>reader-1</code>")[1].split("</article>")[0]
    used = memory.store.session("reader-1").read_used  # type: ignore[union-attr]
    assert f"{used} / {memory.settings.read_budget}" in reader and data.zlib.title in reader
    assert "undefined symbol inflate" in reader
    writer = page.split("<code>writer-1</code>")[1].split("</article>")[0]
    assert data.yaml.title in writer


def test_the_sessions_page_shows_what_each_session_searched_redacted(
    client: TestClient, memory: jiyi.Memory, data: Data
) -> None:
    session = memory.session(session_id="searcher-1")
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    session.search(ZLIB_QUERY)
    session.search(f"git push failed: token {secret} {HOSTILE}")
    page = client.get("/sessions").text
    searcher = page.split("<code>searcher-1</code>")[1].split("</article>")[0]
    assert ZLIB_QUERY in searcher and "1 条结果" in searcher  # with its hits
    assert secret not in page and HOSTILE not in page and "&lt;img src=x" in searcher  # redacted, escaped
    assert searcher.index("git push failed") < searcher.index(ZLIB_QUERY)  # the latest first
    for n in range(12):
        session.search(f"query number {n}")
    searcher = client.get("/sessions").text.split("<code>searcher-1</code>")[1].split("</article>")[0]
    assert "query number 11" in searcher and "query number 2" in searcher and "query number 1<" not in searcher
    assert ZLIB_QUERY not in searcher and 'href="/sessions?id=searcher-1"' in searcher  # the latest 10, then a link
    whole = client.get("/sessions?id=searcher-1").text
    assert "query number 0" in whole and ZLIB_QUERY in whole and "<code>reader-1</code>" not in whole


def test_the_health_page_says_what_doctor_says(client: TestClient, memory: jiyi.Memory) -> None:
    page = client.get("/health").text
    assert str(memory.settings.store_path) in page and "正常" in page
    assert "未配置团队" in page and "待推送" in page and "read_budget" in page


def test_english_labels_follow_the_locale(
    client: TestClient, memory: jiyi.Memory, data: Data, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(memory, "settings", memory.settings.replace(locale="en"))
    page = client.get("/").text
    assert '<html lang="en">' in page and "Automatic records waiting for confirmation" in page
    assert "1–4 of 4" in page


def test_an_unknown_record_is_404(client: TestClient) -> None:
    assert client.get("/records/lr_" + "0" * 32).status_code == 404
    assert client.get("/records/nonsense").status_code == 404


# -- actions -------------------------------------------------------------------------------------
def test_approve_takes_it_out_of_the_inbox(client: TestClient, guard: Guard, memory: jiyi.Memory, data: Data) -> None:
    assert post(client, guard, f"/records/{data.auto.id}/approve", next="/") == 303
    approved = memory.store.get(data.auto.hex)
    assert approved is not None and approved.origin == "human"
    assert "待确认的自动记录" not in client.get("/").text
    # Trust went up: the approved record ranks with a human's trust.
    found = memory.session(session_id="after").search("fatal error: openssl/ssl.h: No such file or directory")
    trust = next(s for s in found[0].signals if s.name == "trust")
    assert found[0].record.id == data.auto.id and trust.strength == 1.0


def test_mark_wrong_from_the_inbox_decides_it(client: TestClient, guard: Guard, data: Data) -> None:
    assert post(client, guard, f"/records/{data.auto.id}/mark", relation="wrong", reason="not the fix", next="/") == 303
    page = client.get("/").text
    assert "待确认的自动记录" not in page and data.auto.title in page  # out of the inbox, still listed


def test_mark_wrong_takes_it_out_of_search_and_unmark_brings_it_back(
    client: TestClient, guard: Guard, memory: jiyi.Memory, data: Data
) -> None:
    assert hits(memory, ZLIB_QUERY)[:1] == [data.zlib.id]
    path = f"/records/{data.zlib.id}"
    assert post(client, guard, f"{path}/mark", relation="wrong", reason="the flag is <-lzlib>") == 303
    assert data.zlib.id not in hits(memory, ZLIB_QUERY)
    page = client.get(path).text
    assert "the flag is &lt;-lzlib&gt;" in page and "错误" in page
    assert post(client, guard, f"{path}/mark", relation="bogus", reason="") == 400
    assert post(client, guard, f"{path}/unmark", relation="wrong") == 303
    assert hits(memory, ZLIB_QUERY)[:1] == [data.zlib.id]


def test_mark_outdated_lowers_its_trust(client: TestClient, guard: Guard, memory: jiyi.Memory, data: Data) -> None:
    before = memory.session(session_id="b").search(ZLIB_QUERY)[0]
    assert post(client, guard, f"/records/{data.zlib.id}/mark", relation="outdated", reason="zlib-ng now") == 303
    after = memory.session(session_id="a").search(ZLIB_QUERY)[0]
    assert after.record.id == data.zlib.id and after.score < before.score


def test_forget_then_restore(client: TestClient, guard: Guard, memory: jiyi.Memory, data: Data) -> None:
    assert post(client, guard, f"/records/{data.yaml.id}/forget") == 303
    assert data.yaml.id not in hits(memory, "No module named 'yaml'")
    assert data.yaml.title in client.get("/", params={"forgotten": 1}).text
    assert data.yaml.title not in client.get("/").text
    assert post(client, guard, f"/records/{data.yaml.id}/restore", next="/?forgotten=1") == 303
    assert hits(memory, "No module named 'yaml'")[:1] == [data.yaml.id]


def test_purge_asks_first(client: TestClient, guard: Guard, memory: jiyi.Memory, data: Data) -> None:
    path = f"/records/{data.yaml.id}/purge"
    assert "彻底删除这条记录" in client.get(path).text
    answer = client.post(path, data={"csrf": guard.csrf}, headers={"Origin": BASE}, follow_redirects=False)
    assert answer.headers["location"] == path and memory.store.get(data.yaml.hex) is not None
    assert post(client, guard, path, confirm="yes") == 303
    assert memory.store.get(data.yaml.hex, include_forgotten=True) is None
    assert data.yaml.id not in hits(memory, "No module named 'yaml'")


def test_a_store_that_cannot_be_used_is_a_coded_answer(
    client: TestClient, memory: jiyi.Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jiyi.errors import Unavailable

    def locked(*args: object, **kwargs: object) -> None:
        raise Unavailable("database is locked")

    monkeypatch.setattr(memory.store, "find_records", locked)
    answer = client.get("/")
    assert answer.status_code == 503 and answer.text == "记忆暂不可用\n错误码：E_UNAVAILABLE\n"

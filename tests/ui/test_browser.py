"""The review page in a real browser (Debian's chromium, driven by Playwright): every page renders,
search draws the nine signals, the actions work end to end and change what memory_search returns,
the guards refuse, and hostile record text stays text. Skipped with the reason where no browser is
installed, except in CI (CI=true), where that fails."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest

import jiyi

from ..helpers import SIGNALS
from .conftest import HOSTILE, Data, hits
from .live import browser, required, serving

ZLIB_QUERY = "ld: undefined symbol deflate"

pytestmark = pytest.mark.slow


@pytest.fixture
def site(memory: jiyi.Memory, data: Data, tmp_path: Path) -> Iterator[tuple[str, Any, Any]]:
    """(base URL, guard, a page already past the token link)."""
    required()
    with serving(memory) as (base, guard), browser(tmp_path / "profile") as context:
        page = context.new_page()
        page.set_default_timeout(15000)
        dialogs: list[str] = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(f"{base}/?token={guard.token}")
        assert page.url == f"{base}/"  # the token left the address bar
        yield base, guard, page
        assert dialogs == []  # no record text ever ran as script


def test_every_page_renders_with_data(site: tuple[str, Any, Any], data: Data) -> None:
    base, _, page = site
    assert page.locator("#inbox").is_visible() and page.get_by_text(data.auto.title).first.is_visible()
    assert "1–4 共 4" in page.locator("#count").inner_text()
    page.goto(f"{base}/records/{data.zlib.id}")
    assert page.locator("h1").inner_text().startswith(data.zlib.title)
    assert "修订 3" in page.locator("pre.text").inner_text()
    assert page.locator("details").count() == 3
    page.goto(f"{base}/sessions")
    assert page.locator("article.session").count() >= 2
    page.goto(f"{base}/health")
    assert page.locator("h1").inner_text().startswith("状态")
    page.goto(f"{base}/?forgotten=1")
    assert page.locator("#all").inner_text() == "已遗忘的记录"


def test_search_shows_the_nine_signals_by_keyboard(site: tuple[str, Any, Any], memory: jiyi.Memory) -> None:
    base, _, page = site
    page.goto(f"{base}/search")
    page.get_by_label("查询").fill(ZLIB_QUERY)
    page.keyboard.press("Enter")
    page.wait_for_url("**/search?q=*")
    first = page.locator("article.hit").first
    assert first.locator("tr.signal th").all_inner_texts() == SIGNALS
    assert first.locator("meter").count() == 9
    shown = [link.get_attribute("href") for link in page.locator("article.hit h2 a").all()]
    assert shown == [f"/records/{ref}" for ref in hits(memory, ZLIB_QUERY)]


def test_forget_and_restore_end_to_end(site: tuple[str, Any, Any], memory: jiyi.Memory, data: Data) -> None:
    base, _, page = site
    page.goto(f"{base}/records/{data.yaml.id}")
    page.get_by_role("button", name="遗忘").click()
    page.wait_for_load_state()
    assert data.yaml.id not in hits(memory, "No module named 'yaml'")
    page.get_by_role("link", name="已遗忘").click()
    row = page.locator("tr", has_text=data.yaml.title)
    row.get_by_role("button", name="恢复").click()
    page.wait_for_load_state()
    assert hits(memory, "No module named 'yaml'")[:1] == [data.yaml.id]


def test_mark_wrong_end_to_end(site: tuple[str, Any, Any], memory: jiyi.Memory, data: Data) -> None:
    base, _, page = site
    page.goto(f"{base}/records/{data.zlib.id}")
    form = page.locator("form.mark", has=page.locator("input[value=wrong]"))
    form.get_by_label("理由").fill("the library is zlib-ng here")
    form.get_by_role("button", name="标记为错误").click()
    page.wait_for_load_state()
    assert page.get_by_text("the library is zlib-ng here").is_visible()
    assert data.zlib.id not in hits(memory, ZLIB_QUERY)


def test_approve_from_the_inbox(site: tuple[str, Any, Any], memory: jiyi.Memory, data: Data) -> None:
    _, _, page = site
    page.locator(".inbox li", has_text=data.auto.title).get_by_role("button", name="确认").click()
    page.wait_for_load_state()
    assert page.locator("#inbox").count() == 0
    approved = memory.store.get(data.auto.hex)
    assert approved is not None and approved.origin == "human"
    found = memory.session(session_id="after").search("fatal error: openssl/ssl.h: No such file or directory")
    assert found[0].record.id == data.auto.id


def test_hostile_text_stays_text(site: tuple[str, Any, Any], data: Data) -> None:
    base, _, page = site
    assert page.get_by_role("link", name=HOSTILE).count() == 1
    page.goto(f"{base}/records/{data.hostile.id}")
    assert page.locator("h1").inner_text().startswith(HOSTILE)
    assert page.locator("img").count() == 0 and page.locator("main script, main b").count() == 0


def test_the_token_and_host_guards_refuse(memory: jiyi.Memory, data: Data, tmp_path: Path) -> None:
    required()
    with serving(memory) as (base, guard), browser(tmp_path / "profile") as context:
        page = context.new_page()
        answer = page.goto(f"{base}/records/{data.zlib.id}")
        assert answer is not None and answer.status == 401
        assert data.zlib.title not in page.content()
        # A rebinding page: its name resolves to loopback, its Host header is its own name.
        answer = page.goto(f"http://evil.test:{guard.port}/?token={guard.token}")
        assert answer is not None and answer.status == 403 and data.zlib.title not in page.content()
        answer = page.goto(f"http://localhost:{guard.port}/?token={guard.token}")
        assert answer is not None and answer.status == 200 and data.zlib.title in page.content()


class _Hostile(BaseHTTPRequestHandler):
    """Another local web page on the same machine (same site, another port): a form aimed at ours."""

    target = ""

    def do_GET(self) -> None:
        body = (
            f'<form method="post" action="{self.target}"><input type="hidden" name="csrf" value="guessed">'
            '<button type="submit">win a prize</button></form>'
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def test_a_post_from_another_local_page_is_refused(site: tuple[str, Any, Any], memory: jiyi.Memory, data: Data) -> None:
    _, _, page = site
    _Hostile.target = page.url.rstrip("/") + f"/records/{data.zlib.id}/forget"
    other = HTTPServer(("127.0.0.1", 0), _Hostile)
    thread = threading.Thread(target=other.serve_forever, daemon=True)
    thread.start()
    try:
        page.goto(f"http://127.0.0.1:{other.server_address[1]}/")
        with page.expect_navigation() as navigation:
            page.get_by_role("button", name="win a prize").click()
        assert navigation.value.status == 403  # the cookie went along (same site): the Origin refused it
        assert "Origin refused" in page.content()
    finally:
        other.shutdown()
        other.server_close()
        thread.join(5)
    assert hits(memory, ZLIB_QUERY)[:1] == [data.zlib.id]

"""The team server under hostile traffic, served by uvicorn on 127.0.0.1 over real PostgreSQL: a flood
of made-up tokens, deeply nested JSON, and connections that are idle or send slowly."""

from __future__ import annotations

import logging
import secrets
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

from ..team_helpers import serving

pytestmark = pytest.mark.postgres
pytest.importorskip("psycopg", reason="the team extra is not installed (pip install -e '.[test]')")

from jiyi.store.postgres.database import Member, PgDatabase  # noqa: E402
from jiyi.team.server.app import create_app  # noqa: E402


@contextmanager
def logged(name: str) -> Iterator[list[logging.LogRecord]]:
    """What logger ``name`` emits meanwhile (uvicorn's loggers do not reach pytest's handler)."""
    seen: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = seen.append  # type: ignore[method-assign]
    logger = logging.getLogger(name)
    logger.addHandler(handler)
    try:
        yield seen
    finally:
        logger.removeHandler(handler)


def test_a_flood_of_made_up_tokens_costs_a_bounded_number_of_look_ups(
    db: PgDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = db.authenticate
    looked: list[str] = []

    def counting(token: str) -> Member | None:
        looked.append(token)
        return real(token)

    monkeypatch.setattr(db, "authenticate", counting)
    good = db.create_token("alpha", "alice")
    with serving(create_app(db, rate_per_minute=0)) as base, httpx.Client(base_url=base, trust_env=False) as http:
        assert http.get("/v1/changes", headers={"Authorization": f"Bearer {good}"}).status_code == 200
        start = time.monotonic()
        answers = [
            http.get("/v1/changes", headers={"Authorization": f"Bearer jiyi_{secrets.token_urlsafe(32)}"})
            for _ in range(300)
        ]
        elapsed = time.monotonic() - start
        # A member already working from the same address goes on working meanwhile.
        during = http.get("/v1/changes", headers={"Authorization": f"Bearer {good}"})
    statuses = [a.status_code for a in answers]
    made_up = len(looked) - 2  # the good token's two look-ups
    assert made_up <= 30 + elapsed  # the address's budget of failed look-ups a minute, not one a token
    from jiyi.team.server.limits import FAILED_PER_MINUTE

    # The budget, and what came back of it while the flood lasted.
    assert FAILED_PER_MINUTE <= made_up <= FAILED_PER_MINUTE + int(elapsed * FAILED_PER_MINUTE / 60) + 1
    assert statuses.count(401) == made_up and statuses.count(429) == 300 - made_up
    refused = next(a for a in answers if a.status_code == 429)
    assert refused.json()["code"] == "E_UNAVAILABLE" and int(refused.headers["Retry-After"]) >= 1
    assert during.status_code == 200


@pytest.mark.parametrize(
    "body",
    [
        b"[" * 100_000 + b"]" * 100_000,  # past the parser's recursion limit
        b'{"machine": "m", "records": [' + b'{"a": ' * 200 + b"1" + b"}" * 200 + b"]}",
        b'{"passed": true, "detail": ' + b"[" * 40 + b"]" * 40 + b"}",
    ],
    ids=["recursion", "nested-objects", "nested-detail"],
)
def test_deeply_nested_json_answers_a_coded_400_and_logs_no_traceback(db: PgDatabase, url: str, body: bytes) -> None:
    answers: list[httpx.Response] = []
    with logged("uvicorn.error") as seen:
        member = {"Authorization": f"Bearer {db.create_token('alpha', 'alice')}"}
        with httpx.Client(base_url=url, headers=member, trust_env=False) as http:
            answers += [http.post(path, content=body) for path in ("/v1/push", "/v1/forget")]
        runner = {"Authorization": f"Bearer {db.create_token('alpha', 'ci', 'runner')}"}
        with httpx.Client(base_url=url, headers=runner, trust_env=False) as http:
            answers.append(http.post("/v1/verify/" + "a" * 32, content=body))
    for answer in answers:
        assert answer.status_code == 400
        assert {k: answer.json()[k] for k in ("code", "field")} == {"code": "E_INVALID_ARGUMENT", "field": "body"}
    assert [r.getMessage() for r in seen if r.levelno >= logging.ERROR] == []


def quick(name: str) -> Any:
    """The protocol ``jiyi team serve`` runs (``auto``: httptools when installed; ``h11``), with a
    deadline of 1 s for a request's headers."""
    from jiyi.team.server import connection

    base = connection.H11HeadersDeadline if name == "h11" else connection.HeadersDeadline
    return type("Quick", (base,), {"headers_seconds": 1.0})


def closed_after(sock: socket.socket, trickle: bytes = b"", limit: float = 8.0) -> float:
    """Seconds until the server closes ``sock``, sending ``trickle`` a byte every 0.2 s meanwhile."""
    start = time.monotonic()
    sock.settimeout(0.2)
    sent = 0
    while time.monotonic() - start < limit:
        try:
            if not sock.recv(4096):
                return time.monotonic() - start
        except TimeoutError:
            pass
        except ConnectionResetError:
            return time.monotonic() - start
        if sent < len(trickle):
            try:
                sock.send(trickle[sent : sent + 1])
            except OSError:
                return time.monotonic() - start
            sent += 1
    return float("inf")


@pytest.mark.parametrize("name", ["h11", "auto"])
def test_idle_and_slow_connections_are_closed(db: PgDatabase, name: str) -> None:
    protocol = quick(name)
    token = db.create_token("alpha", "alice")
    slow_headers = b"GET /v1/changes HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token.encode() + b"\r\n"
    with serving(create_app(db, rate_per_minute=0, body_seconds=1.0), http=protocol) as base:
        port = int(base.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port)) as idle:
            assert closed_after(idle) < 3  # connected, sent nothing
        with socket.create_connection(("127.0.0.1", port)) as slow:
            assert closed_after(slow, slow_headers * 3) < 3  # headers a byte at a time, never finished
        with socket.create_connection(("127.0.0.1", port)) as body:
            head = (
                b"POST /v1/push HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token.encode() + b"\r\n"
                b'Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"records": ['
            )
            body.sendall(head)
            body.settimeout(5)
            answer = b""
            while b"\r\n\r\n" not in answer or not answer.endswith(b"}"):
                chunk = body.recv(4096)
                if not chunk:
                    break
                answer += chunk
            assert answer.startswith(b"HTTP/1.1 408 ") and b'"field":"body"' in answer
            assert b'"code":"E_INVALID_ARGUMENT"' in answer
        # A request that keeps to the deadlines is answered as ever, on a kept-alive connection.
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}, trust_env=False) as http:
            assert [http.get("/v1/changes").status_code for _ in range(2)] == [200, 200]
            time.sleep(1.5)  # idle after a response: uvicorn's keep-alive (5 s here), not the headers' deadline
            assert http.get("/v1/changes").status_code == 200

"""What the team server checks before a route runs, without a database or a server: a token's
rate, whose the bearer token is, and the body's size counted as it arrives."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable
from typing import Any

import pytest

pytest.importorskip("starlette", reason="the team extra is not installed (pip install -e '.[test]')")

from starlette.requests import Request

from jiyi.errors import InvalidArgument, Unauthorized
from jiyi.store.postgres.database import Member
from jiyi.team.server import limits as team_limits
from jiyi.team.server.limits import Buckets, Failures, Limited, TooLarge, authenticate, bearer_token, read_body


def request(headers: dict[str, str], *chunks: bytes) -> tuple[Request, list[bytes]]:
    """A request whose body arrives in ``chunks``; the list holds those read so far."""
    pending, read = list(chunks), []

    async def receive() -> dict[str, Any]:
        chunk = pending.pop(0) if pending else b""
        read.append(chunk)
        return {"type": "http.request", "body": chunk, "more_body": bool(pending)}

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/v1/push",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
    }
    return Request(scope, receive), read


def run(awaitable: Awaitable[Any]) -> Any:
    async def main() -> Any:
        return await awaitable

    return asyncio.run(main())


def test_a_token_gets_its_rate_a_minute_then_waits_for_the_next_one(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr(team_limits.time, "monotonic", lambda: now[0])
    buckets = Buckets(3)
    assert [buckets.take("alice") for _ in range(4)] == [0, 0, 0, 20]  # one comes back every 20 s
    assert buckets.take("bob") == 0
    now[0] += 15
    assert buckets.take("alice") == 5
    now[0] += 5
    assert buckets.take("alice") == 0
    assert [Buckets(0).take("alice") for _ in range(1000)] == [0] * 1000  # 0: no limit


def test_the_buckets_forget_the_token_seen_longest_ago_past_their_size(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(team_limits.time, "monotonic", lambda: 1000.0)
    buckets = Buckets(1, size=2)
    assert [buckets.take(key) for key in ("a", "b", "c")] == [0, 0, 0]
    assert buckets.take("a") == 0  # forgotten, so a full bucket again
    assert buckets.take("c") == 60  # kept: "b" went when "a" came back


@pytest.mark.parametrize(
    ("header", "token"),
    [("Bearer jiyi_x", "jiyi_x"), ("bearer  jiyi_x ", "jiyi_x"), ("Basic jiyi_x", None), ("Bearer ", None), ("", None)],
)
def test_only_a_bearer_token_is_taken(header: str, token: str | None) -> None:
    made, _ = request({"Authorization": header} if header else {})
    if token is None:
        with pytest.raises(Unauthorized):
            bearer_token(made)
    else:
        assert bearer_token(made) == token


class Tokens:
    """A database that knows no token, and counts the look-ups."""

    def __init__(self) -> None:
        self.looked_up: list[str] = []

    def authenticate(self, token: str) -> None:
        self.looked_up.append(token)
        return None


def test_the_rate_is_taken_before_the_token_is_looked_up() -> None:
    db, buckets = Tokens(), Buckets(1)
    made, _ = request({"Authorization": "Bearer jiyi_made-up"})
    with pytest.raises(Unauthorized):
        run(authenticate(made, db, buckets))  # type: ignore[arg-type]
    with pytest.raises(Limited) as limited:
        run(authenticate(made, db, buckets))  # type: ignore[arg-type]
    assert limited.value.retry_after == 60
    assert db.looked_up == ["jiyi_made-up"]  # the flood stops before the database


def test_the_body_is_counted_as_it_arrives_whatever_content_length_says() -> None:
    body = json.dumps({"records": ["x" * 100] * 50}).encode()
    chunks = [body[i : i + 1000] for i in range(0, len(body), 1000)]
    for headers in ({}, {"Content-Length": "10"}):
        made, read = request(headers, *chunks)
        with pytest.raises(TooLarge) as too_large:
            run(read_body(made, 4000))
        assert too_large.value.field == "body"
        assert len(read) == 5  # stopped at the chunk past the limit, not at the end
    declared, read = request({"Content-Length": str(len(body))}, *chunks)
    with pytest.raises(TooLarge):
        run(read_body(declared, 4000))
    assert read == []  # refused on what it declares, before reading
    assert run(read_body(request({}, *chunks)[0], len(body))) == json.loads(body)
    assert run(read_body(request({})[0], 4000)) is None
    with pytest.raises(InvalidArgument) as not_json:
        run(read_body(request({}, b"{no")[0], 4000))
    assert not_json.value.field == "body" and not isinstance(not_json.value, TooLarge)


class Known:
    """A database that knows one token until it is revoked, and counts the look-ups."""

    def __init__(self, token: str) -> None:
        self.token: str | None = token
        self.looked_up: list[str] = []

    def authenticate(self, token: str) -> Member | None:
        self.looked_up.append(token)
        return Member(1, "alpha", "alice") if token == self.token else None


def test_failed_look_ups_are_budgeted_per_address_and_a_good_token_goes_on() -> None:
    good = "jiyi_good"
    db, buckets, failures = Known(good), Buckets(0), Failures(3)

    def attempt(token: str) -> str:
        made, _ = request({"Authorization": f"Bearer {token}"})
        made.scope["client"] = ("192.0.2.7", 4000)
        try:
            run(authenticate(made, db, buckets, failures))  # type: ignore[arg-type]
        except Limited:
            return "limited"
        except Unauthorized:
            return "refused"
        return "ok"

    assert attempt(good) == "ok"  # a good look-up costs no budget
    assert [attempt(f"jiyi_made-up-{i}") for i in range(5)] == ["refused"] * 3 + ["limited"] * 2
    assert len(db.looked_up) == 1 + 3  # the two past the budget never reached the database
    assert attempt(good) == "ok"  # seen to succeed here: not stopped by its address's spent budget
    db.token = None  # revoked: from now on it counts like any other
    assert [attempt(good), attempt(good)] == ["refused", "limited"]

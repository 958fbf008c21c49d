"""What the team server checks on a request before a route looks at it: whose bearer token it
carries, whether that token is within its rate (``Buckets``), and that its body stays under the
size limit. Over a limit, the request is refused with ``Limited`` (429) or ``TooLarge`` (413).

The rate is taken before the token is looked up, so a flood of requests, with a made-up token or
not, is refused without a database call. The buckets are per process: with N processes a token
may make up to N times ``rate_per_minute`` requests a minute in all. A body is counted while it is
read, so a client that lies in (or leaves out) ``Content-Length`` still meets the limit.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from ...errors import InvalidArgument, Unauthorized, Unavailable

if TYPE_CHECKING:
    from ...store.postgres.database import Member, PgDatabase

RATE_PER_MINUTE = 600  # a sync of 10 000 records is 100 pushes; an agent searches far less


class TooLarge(InvalidArgument):
    """A body over the limit: 413."""


class Limited(Unavailable):
    def __init__(self, retry_after: int) -> None:
        super().__init__("rate limited")
        self.retry_after = retry_after


class Buckets:
    """Token buckets, one a token: ``rate`` requests a minute, bursts up to ``rate``. Bounded, so
    a flood of made-up tokens cannot grow the process."""

    def __init__(self, rate: int, *, size: int = 10000) -> None:
        self.rate, self.size = rate, size
        self._lock = threading.Lock()
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # key -> (tokens, at)

    def take(self, key: str) -> int:
        """0 when the request may go, else the seconds to wait."""
        if self.rate <= 0:
            return 0
        moment = time.monotonic()
        with self._lock:
            tokens, at = self._buckets.pop(key, (float(self.rate), moment))
            tokens = min(float(self.rate), tokens + (moment - at) * self.rate / 60.0)
            wait = 0 if tokens >= 1.0 else math.ceil((1.0 - tokens) * 60.0 / self.rate)
            self._buckets[key] = (tokens - 1.0 if not wait else tokens, moment)
            while len(self._buckets) > self.size:
                self._buckets.popitem(last=False)
        return wait


def bearer_token(request: Request) -> str:
    """The token of ``Authorization: Bearer <token>``; ``Unauthorized`` without one."""
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise Unauthorized()
    return token


async def authenticate(request: Request, db: PgDatabase, buckets: Buckets) -> Member:
    """The member whose token the request carries, once the token's bucket lets it through."""
    token = bearer_token(request)
    wait = buckets.take(hashlib.sha256(token.encode()).hexdigest())
    if wait:
        raise Limited(wait)
    found = await run_in_threadpool(lambda: db.authenticate(token))
    if found is None:
        raise Unauthorized()
    return found


async def read_body(request: Request, max_body: int) -> Any:
    """The request's JSON body (``None`` when empty), refused past ``max_body`` bytes."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_body:
        raise TooLarge("body", f"超过 {max_body} 字节")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_body:
            raise TooLarge("body", f"超过 {max_body} 字节")
        chunks.append(chunk)
    try:
        return json.loads(b"".join(chunks) or b"null")
    except ValueError:
        raise InvalidArgument("body", "不是 JSON", "not JSON") from None

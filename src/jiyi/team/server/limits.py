"""What the team server checks on a request before a route looks at it: whose bearer token it
carries, whether that token is within its rate (``Buckets``), whether the client's address is
within its budget of failed authentications (``Failures``), and that its body stays under the size
limit, arrives in time and is not nested too deep. Over a limit, the request is refused with
``Limited`` (429), ``TooLarge`` (413), ``TooSlow`` (408) or ``InvalidArgument`` (400).

A token's rate is taken before the token is looked up, so a flood with one token is refused without
a database call. Made-up tokens each have a bucket of their own, so against a flood of distinct
ones the client's address has a budget of failed look-ups (``FAILED_PER_MINUTE``), reserved before
the look-up and given back when the token was good: past it, a token this process has not seen
succeed is refused without a database call. A token that authenticated here lately
(``Failures.good``) still goes through from that address, so a flood behind a shared proxy or NAT
does not lock out the members already working there. (A checksum in new tokens would let random
strings be refused without a look-up, but tokens issued before it have none, so any string shaped
like them would still need one: the budget is what holds.) The buckets are per process: with N
processes a token may make up to N times ``rate_per_minute`` requests a minute in all, an address
N times the failures. A body is counted while it is read, so a client that lies in (or leaves out)
``Content-Length`` still meets the limit.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

import anyio
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from ...errors import InvalidArgument, Unauthorized, Unavailable
from ...store.postgres.database import TOKEN_PREFIX

if TYPE_CHECKING:
    from ...store.postgres.database import Member, PgDatabase

RATE_PER_MINUTE = 600  # a sync of 10 000 records is 100 pushes; an agent searches far less
# Failed token look-ups a client address may cause a minute (and in a burst): a person who mistyped
# a token tries a few times; a flood of made-up ones is refused past this without the database.
FAILED_PER_MINUTE = 30
# How deep a body's JSON may nest: a push of export lines is 7 levels deep (body, records, a record,
# its revisions, a revision, its snapshot, the snapshot's fix). Deeper is refused, and where Python's
# parser, which recurses, meets the limit of its stack, that is refused too (a RecursionError was an
# uncoded 500 with a traceback in the log).
MAX_DEPTH = 32
# How long a request's body may take to arrive once its headers did (1 MiB at 2 Mbit/s is 4 s). The
# headers' own deadline is the connection's (``connection``).
BODY_SECONDS = 30.0


class TooLarge(InvalidArgument):
    """A body over the limit: 413."""


class TooSlow(InvalidArgument):
    """A body that did not arrive in time: 408, and the connection is closed."""


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

    def give_back(self, key: str) -> None:
        """Return what ``take`` took (the request turned out not to count)."""
        with self._lock:
            if key in self._buckets:
                tokens, at = self._buckets[key]
                self._buckets[key] = (min(float(self.rate), tokens + 1.0), at)

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


class Failures:
    """Failed authentications per client address (``Buckets`` of ``per_minute``), and the tokens
    that authenticated lately in this process (``good``, bounded), which a spent budget does not
    stop."""

    def __init__(self, per_minute: int = FAILED_PER_MINUTE, *, size: int = 10000) -> None:
        self.budget = Buckets(per_minute, size=size)
        self.size = size
        self._lock = threading.Lock()
        self._good: OrderedDict[str, None] = OrderedDict()

    def known(self, key: str) -> bool:
        with self._lock:
            if key in self._good:
                self._good.move_to_end(key)
                return True
        return False

    def failed(self, key: str) -> None:
        """A token that no longer works (revoked) counts against its address again."""
        with self._lock:
            self._good.pop(key, None)

    def succeeded(self, key: str) -> None:
        with self._lock:
            self._good[key] = None
            self._good.move_to_end(key)
            while len(self._good) > self.size:
                self._good.popitem(last=False)


async def authenticate(request: Request, db: PgDatabase, buckets: Buckets, failures: Failures | None = None) -> Member:
    """The member whose token the request carries, once the token's bucket, and for a token not
    seen to succeed lately the address's budget of failures, let it through."""
    token = bearer_token(request)
    key = hashlib.sha256(token.encode()).hexdigest()
    wait = buckets.take(key)
    if wait:
        raise Limited(wait)
    if not token.startswith(TOKEN_PREFIX):  # refused without a look-up (``PgDatabase.authenticate``)
        raise Unauthorized()
    address = request.client.host if request.client else ""
    reserved = failures is not None and not failures.known(key)
    if failures is not None and reserved:
        wait = failures.budget.take(address)  # reserved before the look-up: concurrent ones count too
        if wait:
            raise Limited(wait)
    found = await run_in_threadpool(lambda: db.authenticate(token))
    if found is None:
        if failures is not None:
            failures.failed(key)
        raise Unauthorized()
    if failures is not None:
        if reserved:
            failures.budget.give_back(address)
        failures.succeeded(key)
    return found


def _too_deep(value: Any, limit: int) -> bool:
    """Whether ``value`` nests lists and objects deeper than ``limit`` (without recursing)."""
    level: list[tuple[Any, int]] = [(value, 1)]
    while level:
        item, depth = level.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        for child in children:
            if isinstance(child, (dict, list)):
                if depth + 1 > limit:
                    return True
                level.append((child, depth + 1))
    return False


async def read_body(request: Request, max_body: int, seconds: float = BODY_SECONDS) -> Any:
    """The request's JSON body (``None`` when empty), refused past ``max_body`` bytes, when it takes
    longer than ``seconds`` to arrive, or when it nests deeper than ``MAX_DEPTH``."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_body:
        raise TooLarge("body", f"超过 {max_body} 字节")
    chunks: list[bytes] = []
    size = 0
    with anyio.move_on_after(seconds) as scope:
        async for chunk in request.stream():
            size += len(chunk)
            if size > max_body:
                raise TooLarge("body", f"超过 {max_body} 字节")
            chunks.append(chunk)
    if scope.cancelled_caught:
        raise TooSlow("body", f"{seconds:g} 秒内没有收完", f"not received within {seconds:g} s")
    try:
        body = json.loads(b"".join(chunks) or b"null")
    except RecursionError:
        body = None
        deep = True
    except ValueError:
        raise InvalidArgument("body", "不是 JSON", "not JSON") from None
    else:
        deep = _too_deep(body, MAX_DEPTH)
    if deep:
        raise InvalidArgument("body", f"嵌套超过 {MAX_DEPTH} 层", f"nested deeper than {MAX_DEPTH} levels")
    return body

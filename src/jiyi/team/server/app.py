"""The team server (docs/team-protocol.md): a Starlette app over one ``PgDatabase``.

Stateless: a process keeps only its connection pool and its rate-limit buckets, so several
processes (``jiyi team serve --workers N``, or several machines behind a load balancer) share one
database. The checks before a route runs (whose token, its rate, the body's size) are in
``limits``.

With a read replica (``read_db``, ``--read-dsn``) the reads of ``READ_ROUTES`` go to it; writes and
token checks stay on the primary, so a revoked token is refused at once, however far the replica
lags (checked there, a revocation would wait for replay, and for ever on a standby whose replication
broke, with nothing to say so). A pull from a lagging replica sees a prefix of the changes and
skips none (docs/team-protocol.md, "Several processes, several machines, read replicas").

Every request but ``/v1/health`` and ``/openapi.json`` carries ``Authorization: Bearer <token>``;
every query runs in the token's team (``TeamStore(db, team)``), so a record of another team is
refused (403) and never shown. psycopg is blocking: each database call runs in the thread pool,
off the event loop.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ...analysis import glossary
from ...config import cache_dir
from ...errors import Forbidden, InvalidArgument, JiyiError, NotFound
from ...query import Query
from ...ranking import Hit, rank
from ...records import RELATIONS, SCOPES, TYPES, is_hex
from ...store.postgres.database import Member, PgDatabase
from ...store.postgres.store import PgStore
from ...store.postgres.team import ACCEPTED, FORGOTTEN, REFUSED, UNCHANGED, UNKNOWN, TeamStore
from ...store.postgres.upgrade import upgrade_on_start
from ...transfer import record_from_json
from ..protocol import MAX_BODY, PUSH_BATCH  # the client cuts its pushes under the same limits
from .limits import (
    BODY_SECONDS,
    FAILED_PER_MINUTE,
    RATE_PER_MINUTE,
    Buckets,
    Failures,
    Limited,
    TooLarge,
    TooSlow,
    authenticate,
    read_body,
)
from .refusals import FLUSH_SECONDS, NO_TEAM, Refusals, kind_of

log = logging.getLogger("jiyi.team")
T = TypeVar("T")

MAX_PUSH = PUSH_BATCH
CHANGES_DEFAULT, CHANGES_MAX = 200, 1000
SEARCH_MAX = 50
# Answered from the read replica when there is one: pure reads, where a change seen late is fine.
READ_ROUTES = ("/v1/changes", "/v1/search", "/v1/forgotten", "/v1/verify/candidates")
_STATUS = {"E_UNAUTHORIZED": 401, "E_FORBIDDEN": 403, "E_NOT_FOUND": 404, "E_INVALID_ARGUMENT": 400}


def search_hits(store: PgStore, query: str, limit: int, *, project_key: str = "") -> list[Hit]:
    """``ranking.rank`` over a team's records for ``query`` (``/v1/search``): global records and,
    with ``project_key``, that project's. Every look-up of the search runs on one pooled
    connection (``PgSearch.one_connection``: ~28 round trips a search before, bench/team_scale.py)."""
    with store.one_connection() as pinned:
        return rank(pinned, Query(text=query, project_key=project_key), limit=limit)


def _error_response(exc: JiyiError) -> JSONResponse:
    # Both forms: a client shows the one of its locale (docs/spec.md §2).
    body: dict[str, Any] = {"code": exc.code, "message": exc.message, "message_en": exc.english}
    if isinstance(exc, InvalidArgument):
        body.update(field=exc.field, reason=exc.reason, reason_en=exc.reason_en)
    elif isinstance(exc, Forbidden) and exc.detail:
        body.update(reason=exc.detail, reason_en=exc.detail_en)  # the client shows it on a second line
    headers = {}
    if isinstance(exc, Limited):
        headers["Retry-After"] = str(exc.retry_after)
        status = 429
    elif isinstance(exc, TooLarge):
        status = 413
    elif isinstance(exc, TooSlow):
        status = 408
        headers["Connection"] = "close"  # the rest of the body may still be on its way
    else:
        status = _STATUS.get(exc.code, 503)
    if status == 503:
        log.warning("unavailable: %s", getattr(exc, "reason", ""))
    return JSONResponse(body, status_code=status, headers=headers)


def _int(request: Request, name: str, default: int, low: int, high: int) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise InvalidArgument(name, "不是整数", "not a whole number") from None
    if not low <= value <= high:
        raise InvalidArgument(name, f"应在 {low}..{high} 之间", f"must be within {low}..{high}")
    return value


def _check_line(index: int, line: Any) -> dict[str, Any]:
    """A pushed record must read as an export line (``transfer.record_from_json``)."""
    field = f"records[{index}]"
    if not isinstance(line, dict) or not is_hex(line.get("hex")):
        raise InvalidArgument(field, "不是 jiyi 导出的记录", "no record jiyi exported")
    try:
        record = record_from_json(line)
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidArgument(field, f"缺少字段：{exc}", f"a field is missing: {exc}") from None
    if record.type not in TYPES or record.scope not in SCOPES:
        raise InvalidArgument(field, "type 或 scope 无效", "type or scope is invalid")
    marks = line.get("marks") or []
    if not isinstance(marks, list):
        raise InvalidArgument(f"{field}.marks", "应为列表", "must be a list")
    for j, mark in enumerate(marks):
        # A mark says another record is wrong or outdated; any other word would be stored as a relation
        # that no reader understands, and a mark on nothing (not a hex) points nowhere.
        where = f"{field}.marks[{j}]"
        if not isinstance(mark, dict) or not isinstance(mark.get("created"), str):
            raise InvalidArgument(where, "应为 {target, relation, created}", "must be {target, relation, created}")
        if not is_hex(mark.get("target")):
            raise InvalidArgument(f"{where}.target", "应为 32 位小写十六进制", "must be 32 lowercase hex digits")
        if mark.get("relation") not in RELATIONS:
            raise InvalidArgument(f"{where}.relation", "应为 wrong 或 outdated", "must be wrong or outdated")
    return line


def create_app(
    db: PgDatabase,
    *,
    read_db: PgDatabase | None = None,
    max_body: int = MAX_BODY,
    rate_per_minute: int = RATE_PER_MINUTE,
    failed_per_minute: int = FAILED_PER_MINUTE,
    body_seconds: float = BODY_SECONDS,
    lifespan: Callable[[Starlette], Any] | None = None,
    operator_token: str | None = None,
    refusal_seconds: float = FLUSH_SECONDS,
) -> Starlette:
    """The app over ``db`` (the primary), the ``READ_ROUTES`` reading ``read_db`` when given; with
    ``operator_token``, the operator's page at ``/ui`` (``operator``)."""
    buckets = Buckets(rate_per_minute)
    failures = Failures(failed_per_minute)
    refusals = Refusals(db, seconds=refusal_seconds)
    reader = read_db or db

    async def blocking(fn: Callable[[], T]) -> T:
        return await run_in_threadpool(fn)

    async def member_of(request: Request) -> Member:
        request.state.member = found = await authenticate(request, db, buckets, failures)
        return found

    def refused(request: Request, kind: str, detail: str, count: int = 1) -> None:
        """Count a refusal for the operator's page (``refusals``): by member once the token was
        good, by the client's address before."""
        member: Member | None = getattr(request.state, "member", None)
        address = request.client.host if request.client else ""
        team, who = (member.team_id, member.name) if member else (NO_TEAM, address)
        if refusals.note(team, kind, who, detail, count):
            request.state.flush_refusals = True

    async def body_of(request: Request) -> Any:
        return await read_body(request, max_body, body_seconds)

    def endpoint(fn: Callable[[Request], Awaitable[Any]]) -> Callable[[Request], Awaitable[Response]]:
        async def run(request: Request) -> Response:
            try:
                response = JSONResponse(await fn(request))
            except JiyiError as exc:
                response = _error_response(exc)
                kind = kind_of(exc)
                if kind is not None:
                    refused(request, kind, f"{request.method} {request.url.path}")
            if getattr(request.state, "flush_refusals", False):  # after the answer has gone
                response.background = BackgroundTask(refusals.flush)
            return response

        return run

    def own(member: Member, hexid: str) -> None:
        """403 for a record another team holds (its content is never looked at)."""
        team = db.team_of(hexid, prefer=member.team_id)
        if team is not None and team != member.team_id:
            raise Forbidden()

    async def health(request: Request) -> Any:
        return {"ok": True}

    async def push(request: Request) -> Any:
        member = await member_of(request)
        body = await body_of(request)
        if not isinstance(body, dict) or not isinstance(body.get("records"), list):
            raise InvalidArgument("records", "缺少记录列表", "the list of records is missing")
        if len(body["records"]) > MAX_PUSH:
            raise InvalidArgument("records", f"一次最多 {MAX_PUSH} 条", f"at most {MAX_PUSH} at a time")
        lines = [_check_line(i, line) for i, line in enumerate(body["records"])]
        machine = str(body.get("machine", ""))[:64]

        def merge() -> dict[str, list[str]]:
            for line in lines:
                own(member, line["hex"])
            store = TeamStore(db, member.team_id)
            # refused: E_FORBIDDEN for that record alone (a revision of another member's record),
            # so the rest of the batch is still merged.
            answer: dict[str, list[str]] = {ACCEPTED: [], UNCHANGED: [], REFUSED: []}
            for line in lines:
                answer[store.merge(line, member.name, operator=member.operator)].append(line["hex"])
            return answer

        answer = await blocking(merge)
        if answer[REFUSED]:
            refused(request, "refused revision", "rr_" + ", rr_".join(answer[REFUSED][:3]), len(answer[REFUSED]))
        log.info(
            "push %s/%s machine=%s: %d records (%d refused)",
            member.team,
            member.name,
            machine,
            len(lines),
            len(answer[REFUSED]),
        )
        return answer

    async def changes(request: Request) -> Any:
        member = await member_of(request)
        cursor = _int(request, "cursor", 0, 0, 2**62)
        limit = _int(request, "limit", CHANGES_DEFAULT, 1, CHANGES_MAX)
        lines, after, more = await blocking(lambda: TeamStore(reader, member.team_id).changes_since(cursor, limit))
        return {"records": lines, "cursor": after, "more": more}

    async def forget(request: Request) -> Any:
        member = await member_of(request)
        body = await body_of(request)
        if not isinstance(body, dict) or not isinstance(body.get("records"), list):
            raise InvalidArgument("records", "缺少记录列表", "the list of records is missing")
        if len(body["records"]) > MAX_PUSH:
            raise InvalidArgument("records", f"一次最多 {MAX_PUSH} 条", f"at most {MAX_PUSH} at a time")
        wanted: list[tuple[str, bool]] = []
        for i, item in enumerate(body["records"]):
            if not isinstance(item, dict) or not is_hex(item.get("hex")):
                raise InvalidArgument(f"records[{i}]", "应为 {hex, purge}", "must be {hex, purge}")
            if not isinstance(item.get("purge", False), bool):
                raise InvalidArgument(f"records[{i}]", "purge 应为 true 或 false", "purge must be true or false")
            wanted.append((str(item["hex"]), bool(item.get("purge", False))))

        def run() -> dict[str, list[str]]:
            # Scoped to the member's team: another team's hex is simply unknown here. Another
            # member's record is refused alone, so the rest of the batch is still answered.
            store = TeamStore(db, member.team_id)
            answer: dict[str, list[str]] = {FORGOTTEN: [], UNKNOWN: [], REFUSED: []}
            who = None if member.operator else member.name  # the operator may take out any record
            for hexid, purge in wanted:
                answer[store.forget_in_team(hexid, purge=purge, member=who)].append(hexid)
            return answer

        answer = await blocking(run)
        if answer[REFUSED]:
            refused(request, "refused forget", "rr_" + ", rr_".join(answer[REFUSED][:3]), len(answer[REFUSED]))
        purged = sum(p for _, p in wanted)
        log.info(
            "forget %s/%s: %d records (%d purged, %d refused)",
            member.team,
            member.name,
            len(wanted),
            purged,
            len(answer[REFUSED]),
        )
        return answer

    async def forgotten(request: Request) -> Any:
        member = await member_of(request)
        cursor = _int(request, "cursor", 0, 0, 2**62)
        limit = _int(request, "limit", CHANGES_DEFAULT, 1, CHANGES_MAX)
        lines, after, more = await blocking(lambda: TeamStore(reader, member.team_id).forgotten_since(cursor, limit))
        return {"records": lines, "cursor": after, "more": more}

    async def search(request: Request) -> Any:
        member = await member_of(request)
        text = request.query_params.get("q", "").strip()
        if not 1 <= len(text) <= 2000:
            raise InvalidArgument("q", "应为 1..2000 个字符", "must be 1..2000 characters")
        limit = _int(request, "limit", 5, 1, SEARCH_MAX)
        project = request.query_params.get("project", "")
        hits = await blocking(lambda: search_hits(TeamStore(reader, member.team_id), text, limit, project_key=project))
        return {
            "hits": [
                {
                    "id": "rr_" + h.record.hex,
                    "title": h.record.title,
                    "score": round(h.score, 4),
                    "origin": h.record.origin,
                    "project": h.record.project,
                    "updated": h.record.updated,
                }
                for h in hits
            ]
        }

    def runner_only(member: Member, what: str) -> None:
        # A member's "passed" would make any record 团队核验; and the candidates are the runner's
        # work list, so a runner started with a member token stops before it executes any record's
        # commands rather than after replaying them all.
        if not member.runner:
            log.warning("%s refused: %s/%s is a %s, not a runner", what, member.team, member.name, member.role)
            raise Forbidden(
                f"此令牌的角色是 {member.role}；回放核验需要 runner 或 operator",
                f"this token's role is {member.role}; replay verification needs runner or operator",
            )

    async def candidates(request: Request) -> Any:
        member = await member_of(request)
        runner_only(member, "verify candidates")
        limit = _int(request, "limit", 20, 1, 200)
        lines = await blocking(lambda: TeamStore(reader, member.team_id).verification_candidates(limit))
        return {"records": lines}

    async def verify(request: Request) -> Any:
        member = await member_of(request)
        runner_only(member, "verify")
        hexid = request.path_params["hex"]
        if not is_hex(hexid):
            raise InvalidArgument("hex", "应为 32 位小写十六进制", "must be 32 lowercase hex digits")
        body = await body_of(request)
        if not isinstance(body, dict) or not isinstance(body.get("passed"), bool):
            raise InvalidArgument("passed", "应为 true 或 false", "must be true or false")
        fields = {k: str(body.get(k, "")) for k in ("how", "environment", "detail")}
        fields["how"] = fields["how"] or "replay"

        def add() -> dict[str, Any]:
            team = db.team_of(hexid, prefer=member.team_id)
            if team is None:
                raise NotFound("rr_" + hexid)
            if team != member.team_id:
                raise Forbidden()
            done = TeamStore(db, member.team_id).add_verification(
                hexid, passed=body["passed"], runner=member.name, **fields
            )
            return done.to_dict()

        return {"verification": await blocking(add)}

    async def runs(request: Request) -> Any:
        member = await member_of(request)
        hexid = request.path_params["hex"]
        if not is_hex(hexid):
            raise InvalidArgument("hex", "应为 32 位小写十六进制", "must be 32 lowercase hex digits")

        def listed() -> list[dict[str, Any]]:
            team = db.team_of(hexid, prefer=member.team_id)
            if team is None:
                raise NotFound("rr_" + hexid)
            if team != member.team_id:
                raise Forbidden()
            return TeamStore(db, member.team_id).verifications(hexid)

        return {"runs": await blocking(listed)}

    async def openapi(request: Request) -> Any:
        from .openapi import document

        return document()

    routes = [
        Route("/v1/health", endpoint(health), methods=["GET"]),
        Route("/v1/push", endpoint(push), methods=["POST"]),
        Route("/v1/changes", endpoint(changes), methods=["GET"]),
        Route("/v1/search", endpoint(search), methods=["GET"]),
        Route("/v1/forget", endpoint(forget), methods=["POST"]),
        Route("/v1/forgotten", endpoint(forgotten), methods=["GET"]),
        Route("/v1/verify/candidates", endpoint(candidates), methods=["GET"]),
        Route("/v1/verify/{hex}", endpoint(verify), methods=["POST"]),
        Route("/v1/verify/{hex}", endpoint(runs), methods=["GET"]),
        Route("/openapi.json", endpoint(openapi), methods=["GET"]),
    ]
    if operator_token:
        from .operator import page

        routes.append(Route("/ui", page(db, operator_token, refusals), methods=["GET"]))
    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.db, app.state.read_db = db, read_db  # the pools, for a lifespan or a look at their stats
    return app


def app_from_env() -> Starlette:
    """The app of one ``jiyi team serve`` worker (uvicorn's factory): the database from
    ``JIYI_TEAM_DSN`` / ``JIYI_TEAM_SCHEMA``, its read replica from ``JIYI_TEAM_READ_DSN`` (same
    schema), the rate from ``JIYI_TEAM_RATE``, the folder it keeps its caches in from
    ``JIYI_TEAM_CACHE_DIR`` (default: the user's cache folder)."""
    dsn = os.environ.get("JIYI_TEAM_DSN", "")
    if not dsn:
        raise SystemExit("jiyi team serve: no database (--dsn or JIYI_TEAM_DSN)")
    # A Chinese query's glosses are looked up in a small file there, as a client's are in its home
    # (analysis/glossary.py): without one, every worker would hold the whole table (~80 MB).
    glossary.use(os.environ.get("JIYI_TEAM_CACHE_DIR") or str(cache_dir()))
    schema = os.environ.get("JIYI_TEAM_SCHEMA", "jiyi")
    db = PgDatabase(dsn, schema=schema)
    # On the primary only: a replica receives the re-derived terms by replication.
    upgrade_on_start(db)  # an index of older terms: a bounded while now, the rest by the admin command
    read_dsn = os.environ.get("JIYI_TEAM_READ_DSN", "")
    try:
        read_db = PgDatabase(read_dsn, schema=schema, read_only=True) if read_dsn else None
    except BaseException:
        db.close()
        raise

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        db.close()
        if read_db is not None:
            read_db.close()

    rate = int(os.environ.get("JIYI_TEAM_RATE", RATE_PER_MINUTE))
    operator = os.environ.get("JIYI_TEAM_OPERATOR_TOKEN", "") or None
    return create_app(db, read_db=read_db, rate_per_minute=rate, lifespan=lifespan, operator_token=operator)

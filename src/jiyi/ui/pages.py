"""The pages that read: the records (the inbox first), a search with its signals, one record whole,
the recent sessions, the health of the store and of team sync. Only the library and the ``Store``
interface: what a page shows is what the tools and the CLI see."""

from __future__ import annotations

import difflib
import json
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response

from ..errors import JiyiError, NotFound
from ..query import Query
from ..ranking import WEIGHTS, rank
from ..records import ORIGIN_LABELS, OUTCOMES_EN, SCOPES, TYPES, Record, split_ref
from ..store.base import RecordFilter
from ..tools import formats, validation
from .context import context
from .labels import labels

if TYPE_CHECKING:
    from .context import Context

PAGE = 50
INBOX = 20
# How long a record's page waits for the team server's replay runs before it says the server is
# unreachable (``jiyi show`` waits the client's 15 s; a page should not).
TEAM_SECONDS = 2.0
# Searches shown a session on /sessions (the latest; /sessions?id=… shows all it keeps): 30 sessions of
# 50 searches each made a page of 265 KB that took 30 ms to render at 100 000 records.
SESSION_SEARCHES = 10


def _filter(request: Request) -> RecordFilter:
    q = request.query_params

    def choice(name: str, allowed: tuple[str, ...] | None = None) -> str | None:
        value = q.get(name, "").strip()
        return value if value and (allowed is None or value in allowed) else None

    return RecordFilter(
        type=choice("type", TYPES),
        scope=choice("scope", SCOPES),
        origin=choice("origin", tuple(ORIGIN_LABELS)),
        project=choice("project"),
        text=choice("text"),
        forgotten=q.get("forgotten") == "1",
    )


def _page_number(request: Request) -> int:
    try:
        return max(1, int(request.query_params.get("page", "1")))
    except ValueError:
        return 1


def grouped(number: int) -> str:
    """30000 → "30 000", as the page counts."""
    return f"{number:,}".replace(",", " ")


def records(request: Request) -> Response:
    ctx = context(request)
    store = ctx.memory.store
    where = _filter(request)
    page = _page_number(request)
    shown, total = store.find_records(where, limit=PAGE, offset=(page - 1) * PAGE)
    inbox: list[Record] = []
    inbox_total = 0
    if not where.forgotten and page == 1:
        waiting = RecordFilter(unconfirmed=True)
        inbox, inbox_total = store.find_records(waiting, limit=INBOX)
    kept = {k: v for k, v in request.query_params.items() if k != "page" and v}
    first = (page - 1) * PAGE + 1 if shown else 0
    return ctx.render(
        "records.html",
        nav="forgotten" if where.forgotten else "records",
        where=where,
        records=shown,
        inbox=inbox,
        inbox_total=inbox_total,
        span=f"{grouped(first)}–{grouped(first + len(shown) - 1)}" if shown else "0",
        total=grouped(total),
        prev_url=f"/?{urlencode({**kept, 'page': page - 1})}" if page > 1 else None,
        next_url=f"/?{urlencode({**kept, 'page': page + 1})}" if page * PAGE < total else None,
        types=TYPES,
        scopes=SCOPES,
        origins=list(ORIGIN_LABELS),
        here=str(request.url.path) + (f"?{request.url.query}" if request.url.query else ""),
    )


def search(request: Request) -> Response:
    ctx = context(request)
    text = request.query_params.get("q", "")
    hits, error = [], None
    if text.strip():
        try:
            query = Query(text=validation.query(text), project_key=ctx.project.key, environment=ctx.env)
            hits = rank(ctx.memory.store, query, limit=validation.limit(request.query_params.get("limit") or None))
        except JiyiError as exc:
            error = exc.first_line(ctx.locale)
    return ctx.render("search.html", nav="search", q=text, hits=hits, error=error, weights=WEIGHTS)


def _found(ctx: Context, ref: str) -> Record | None:
    parts = split_ref(ref)
    if parts is None:
        return None
    return ctx.memory.store.get(parts[1], include_forgotten=True)


def _not_found(ctx: Context, ref: str) -> Response:
    return ctx.render("message.html", status=404, nav="", message=f"{labels(ctx.locale)['not_found']}: {ref}")


def _snapshot_lines(snapshot: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    for key in sorted(snapshot):
        value = snapshot[key]
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
        lines.extend(f"{key}: {line}" for line in (shown or "").splitlines() or [""])
    return lines


def record(request: Request) -> Response:
    ctx = context(request)
    ref = request.path_params["ref"]
    found = _found(ctx, ref)
    if found is None:
        return _not_found(ctx, ref)
    store = ctx.memory.store
    # As memory_read gives it, taken from no session's read budget (a person reading, not an agent).
    text = formats.read_text(found, formats.verification_lines(found, ctx.locale), ctx.locale)
    revisions = store.revisions(found.hex)
    diffs = []
    before: list[str] = []
    for rev in revisions:
        after = _snapshot_lines(rev.snapshot)
        diff = difflib.unified_diff(before, after, f"r{rev.revision - 1}", f"r{rev.revision}", lineterm="", n=1)
        diffs.append((rev, list(diff)[2:] if before else after))
        before = after
    verification = found.verification
    team_runs, team_note = _team_runs(ctx, found)
    return ctx.render(
        "record.html",
        nav="",
        r=found,
        text=text,
        revisions=diffs,
        human=store.human_marks(found.hex),
        flaky=store.flaky_count(found.signatures) if found.signatures else 0,
        failed=(verification.tries - verification.passed) if verification else 0,
        unconfirmed=_unconfirmed(found),
        origin_label=found.origin_label_in(ctx.locale),
        team_runs=team_runs,
        team_note=team_note,
    )


def _team_runs(ctx: Context, found: Record) -> tuple[list[dict[str, Any]], str | None]:
    """The team server's replay runs of a team record (what ``jiyi show`` asks: GET
    /v1/verify/<hex>), and what to say instead when it cannot tell: never a failed page."""
    settings = ctx.memory.settings
    if not settings.team or not (found.remote or found.verification):
        return [], None
    t = labels(ctx.locale)
    try:
        from ..team.client.http import TeamClient
    except ImportError:
        return [], t["team_extra_missing"]
    try:
        with TeamClient(str(settings.team_url), str(settings.team_token), timeout=TEAM_SECONDS) as client:
            return client.verifications(found.hex), None
    except NotFound:
        return [], t["team_no_record"]
    except JiyiError:
        return [], t["team_unreachable"]


def _unconfirmed(found: Record) -> bool:
    from ..capture.curation import unconfirmed

    return unconfirmed(found)


def purge_confirm(request: Request) -> Response:
    ctx = context(request)
    ref = request.path_params["ref"]
    found = _found(ctx, ref)
    if found is None:
        return _not_found(ctx, ref)
    return ctx.render("purge.html", nav="", r=found)


def sessions(request: Request) -> Response:
    ctx = context(request)
    store = ctx.memory.store
    wanted = request.query_params.get("id", "")
    if wanted:  # one session, with every search it keeps
        one = store.session(wanted)
        recent = [one] if one else []
        for state in recent:
            state.searches = store.session_searches(state.id)
    else:
        recent = store.recent_sessions(30)
    titles = {r.hex: r for r in store.get_many({h for s in recent for h in (*s.reads, *s.notes)})}
    return ctx.render(
        "sessions.html",
        nav="sessions",
        sessions=recent,
        shown=len(recent[0].searches) if wanted and recent else SESSION_SEARCHES,
        titles=titles,
        budget=ctx.memory.settings.read_budget,
        outcomes=OUTCOMES_EN,
    )


def health(request: Request) -> Response:
    from ..diagnosis import integrations, settings_rows, store_health

    ctx = context(request)
    memory = ctx.memory
    team: dict[str, Any] | None = None
    sync = None
    if memory.settings.team:
        from ..diagnosis import team_check

        team = team_check(memory)
    from ..store.sqlite.store import SQLiteStore

    if isinstance(memory.store, SQLiteStore):
        from ..team.client.outbox import status

        try:
            sync = status(memory.store, memory.settings.team_push)
        except JiyiError:
            sync = None
    return ctx.render(
        "health.html",
        nav="health",
        settings=settings_rows(memory),
        integrations=integrations(),
        store=store_health(memory),
        store_path=str(memory.settings.store_path),
        team=team,
        team_on=bool(memory.settings.team),
        sync=sync,
    )

"""The team server's page for its operator (docs/spec.md §7): ``/ui`` behind an operator token.

``jiyi team serve --operator-token`` (or ``JIYI_TEAM_OPERATOR_TOKEN``) turns it on; without one the
route does not exist. It only reads: the teams with their records (live and forgotten), their members
and live tokens, the replay runs (passed and failed), the latest changes pushed, by whom, and the
latest refusals (``refusals``: bad tokens by address, 403s, refused revisions, 413s and 429s). What
changes the team (tokens, forgetting a record) stays with ``jiyi team admin`` on the database.

The token, given once as ``/ui?token=…``, becomes an HttpOnly, SameSite=Strict cookie scoped to
``/ui`` and leaves the address bar; ``Authorization: Bearer`` works too. Every value is escaped.
"""

from __future__ import annotations

import html
import secrets
from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response

if TYPE_CHECKING:
    from ...store.postgres.database import PgDatabase
    from .refusals import Refusals

COOKIE = "jiyi_operator"
RECENT = 30
# No scripts, no framing, no resources of another origin: the page is HTML and its own CSS.
HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; "
    "base-uri 'none'; form-action 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
_STYLE = (
    "body{font:15px/1.5 system-ui,sans-serif;margin:1rem 2rem;color:#1d1d1f}table{border-collapse:collapse;"
    "margin-bottom:1.5rem}th,td{text-align:left;padding:.25rem .6rem;border-bottom:1px solid #ddd}"
    ".failed{color:#b3261e}.passed{color:#1e7a34}code{font-size:13px}"
)


def overview(db: PgDatabase) -> dict[str, list[tuple[Any, ...]]]:
    """What the page shows, read in one transaction."""
    with db.cursor() as cur:

        def rows(sql: str, *params: Any) -> list[tuple[Any, ...]]:
            cur.execute(sql, params)
            return list(cur.fetchall())

        return {
            "teams": rows(
                "SELECT t.id, t.name, t.created, "
                "(SELECT count(*) FROM records r WHERE r.team_id = t.id AND NOT r.forgotten), "
                "(SELECT count(*) FROM records r WHERE r.team_id = t.id AND r.forgotten), "
                "(SELECT count(*) FROM verifications v WHERE v.team_id = t.id AND v.passed), "
                "(SELECT count(*) FROM verifications v WHERE v.team_id = t.id AND NOT v.passed) "
                "FROM teams t ORDER BY t.id"
            ),
            "members": rows(
                "SELECT t.name, k.member, count(*) FILTER (WHERE k.revoked IS NULL), count(*), max(k.created) "
                "FROM tokens k JOIN teams t ON t.id = k.team_id GROUP BY t.name, k.member ORDER BY t.name, k.member"
            ),
            "runs": rows(
                "SELECT v.at, t.name, v.hex, r.title, v.passed, v.how, v.environment FROM verifications v "
                "JOIN teams t ON t.id = v.team_id LEFT JOIN records r ON r.team_id = v.team_id AND r.hex = v.hex "
                "ORDER BY v.id DESC LIMIT %s",
                RECENT,
            ),
            # Per team from its (team_id, seq) index: the latest changes, as pulls see them.
            "changes": rows(
                "SELECT c.updated, t.name, c.author, c.hex, c.title, c.origin, c.forgotten FROM teams t "
                "CROSS JOIN LATERAL (SELECT updated, author, hex, title, origin, forgotten, seq FROM records r "
                "WHERE r.team_id = t.id ORDER BY seq DESC LIMIT %s) c ORDER BY c.seq DESC LIMIT %s",
                RECENT,
                RECENT,
            ),
        }


def _read(db: PgDatabase, refusals: Refusals) -> dict[str, list[tuple[Any, ...]]]:
    from .refusals import recent

    refusals.flush()
    return {**overview(db), "refusals": recent(db, RECENT)}


def _cell(value: Any) -> str:
    if value is None:
        return "—"
    return html.escape(str(value))


def _table(headings: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headings)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>" if rows else "<p>—</p>"


def render(data: dict[str, list[tuple[Any, ...]]]) -> str:
    def verdict(passed: bool) -> str:
        return '<span class="passed">passed</span>' if passed else '<span class="failed">failed</span>'

    refused = _table(
        ["last", "team", "refused", "who", "times", "last request", "first"],
        [
            [
                _cell(last),
                _cell(team or "(no team)"),
                _cell(kind),
                _cell(who),
                _cell(count),
                _cell(detail),
                _cell(first),
            ]
            for last, team, kind, who, count, detail, first in data["refusals"]
        ],
    )
    teams = _table(
        ["id", "team", "created", "records", "forgotten", "replays passed", "replays failed"],
        [[_cell(v) for v in row] for row in data["teams"]],
    )
    members = _table(
        ["team", "member", "live tokens", "tokens", "last token made"],
        [[_cell(v) for v in row] for row in data["members"]],
    )
    runs = _table(
        ["at", "team", "record", "result", "how", "environment"],
        [
            [
                _cell(at),
                _cell(team),
                f"<code>rr_{_cell(hexid)}</code> {_cell(title)}",
                verdict(passed),
                _cell(how),
                _cell(env),
            ]
            for at, team, hexid, title, passed, how, env in data["runs"]
        ],
    )
    changes = _table(
        ["updated", "team", "pushed first by", "record", "origin", "forgotten"],
        [
            [
                _cell(at),
                _cell(team),
                _cell(author),
                f"<code>rr_{_cell(hexid)}</code> {_cell(title)}",
                _cell(origin),
                "yes" if gone else "",
            ]
            for at, team, author, hexid, title, origin, gone in data["changes"]
        ],
    )
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>jiyi team server</title>'
        f"<style>{_STYLE}</style></head><body><h1>jiyi team server</h1>"
        f"<h2>Teams</h2>{teams}<h2>Members</h2>{members}<h2>Latest replay runs</h2>{runs}"
        f"<h2>Latest changes pushed</h2>{changes}<h2>Latest refusals</h2>"
        "<p>Counted per team, kind and member (or address, before a token was good); written every few "
        f"seconds, so a flood is one row's count.</p>{refused}"
        "<p>Tokens and forgetting are <code>jiyi team admin</code>'s.</p></body></html>"
    )


def _secured(response: Response) -> Response:
    for name, value in HEADERS.items():
        response.headers.setdefault(name, value)
    return response


def page(db: PgDatabase, token: str, refusals: Refusals) -> Any:
    """The ``/ui`` endpoint for ``token``; ``refusals`` are written before the page reads them."""

    def ok(given: str | None) -> bool:
        return given is not None and secrets.compare_digest(given.encode(), token.encode())

    async def endpoint(request: Request) -> Response:
        given = request.query_params.get("token")
        if given is not None:
            if not ok(given):
                return _secured(PlainTextResponse("401: not the operator token\n", status_code=401))
            answer = RedirectResponse("/ui", status_code=303)
            secure = request.url.scheme == "https" or request.headers.get("x-forwarded-proto") == "https"
            answer.set_cookie(COOKIE, token, httponly=True, samesite="strict", path="/ui", secure=secure)
            return _secured(answer)
        bearer = request.headers.get("authorization", "")
        if not (ok(request.cookies.get(COOKIE)) or ok(bearer.removeprefix("Bearer ") if bearer else None)):
            return _secured(PlainTextResponse("401: the operator token is needed (/ui?token=…)\n", status_code=401))
        data = await run_in_threadpool(_read, db, refusals)
        return _secured(HTMLResponse(render(data)))

    return endpoint

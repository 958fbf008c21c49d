"""The HTTP side of team memory: one method per endpoint of docs/team-protocol.md, over httpx.

Failures become the docs/spec.md §2 errors the rest of jiyi speaks: no answer, a timeout, a 5xx or a rate
limit is ``Unavailable`` (the outbox keeps everything and tries again), 401 ``Unauthorized``, 403
``Forbidden``, 400 / 413 ``InvalidArgument``. Nothing here touches the local store (``sync`` does).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, overload

import httpx

from ...errors import Forbidden, InvalidArgument, JiyiError, Unauthorized, Unavailable

if TYPE_CHECKING:
    from ...config import Settings

# Long enough for a batch of 100 records through a busy server, short enough that `jiyi team
# sync` reports a server that does not answer instead of hanging.
TIMEOUT = httpx.Timeout(15.0, connect=5.0)
# An idle pooled connection is dropped by the client after this long, well before the server
# does (uvicorn's timeout_keep_alive: 5 s by default, `jiyi team serve --keep-alive`, 75 s by
# default): at httpx's default, 5 s on both sides, a request could go out on a connection the
# server was closing at that moment.
KEEPALIVE_EXPIRY = 2.0
# What a request on a kept-alive connection the server closed meets, before any response: the
# server's end shut (RemoteProtocolError), reset (ReadError) or gone while writing (WriteError).
_DROPPED = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)


class RateLimited(Unavailable):
    """429: the server asks to come back after ``retry_after`` seconds."""

    def __init__(self, retry_after: float) -> None:
        super().__init__(f"rate limited: retry after {retry_after:g} s")
        self.retry_after = retry_after


class TeamClient:
    def __init__(self, url: str, token: str, *, timeout: httpx.Timeout | float = TIMEOUT) -> None:
        self.url = url.rstrip("/")
        self._http = httpx.Client(
            base_url=self.url,
            headers={"Authorization": f"Bearer {token}", "User-Agent": "jiyi"},
            timeout=timeout,
            limits=httpx.Limits(keepalive_expiry=KEEPALIVE_EXPIRY),
            # A team server is named explicitly; a proxy from the environment would see the token.
            trust_env=False,
        )

    @classmethod
    def from_settings(cls, settings: Settings) -> TeamClient:
        if not settings.team_url or not settings.team_token:
            raise InvalidArgument(
                "team_url",
                "没有配置团队服务器（team_url 和 team_token）",
                "no team server set (team_url and team_token)",
            )
        return cls(settings.team_url, settings.team_token)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> TeamClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- endpoints ---------------------------------------------------------------------------
    def health(self) -> bool:
        return bool(self._call("GET", "/v1/health").get("ok"))

    def push(self, machine: str, records: list[dict[str, Any]]) -> dict[str, list[str]]:
        """``{"accepted": [hex…], "unchanged": [hex…], "refused": [hex…]}``: every hex in accepted
        or unchanged was stored; refused: a revision of another member's record, not taken (none
        from a server older than authors' revisions)."""
        answer = self._call("POST", "/v1/push", json={"machine": machine, "records": records}, idempotent=True)
        return {key: list(answer.get(key, [])) for key in ("accepted", "unchanged", "refused")}

    def changes(self, cursor: int, limit: int) -> dict[str, Any]:
        """``{"records": [<export line + seq>…], "cursor": n, "more": bool}``."""
        return self._call("GET", "/v1/changes", params={"cursor": cursor, "limit": limit})

    def forget(self, records: list[tuple[str, bool]]) -> dict[str, list[str]] | None:
        """Take records (hex, purge) out of the team: ``{"forgotten": [hex…], "unknown": [hex…],
        "refused": [hex…]}``, every hex answered (unknown: the team never had it; refused: another
        member pushed it first, none from a server older than authors). None from a server older
        than forget."""
        body = {"records": [{"hex": h, "purge": p} for h, p in records]}
        answer = self._call("POST", "/v1/forget", json=body, absent_ok=True, idempotent=True)
        if answer is None:
            return None
        return {key: list(answer.get(key, [])) for key in ("forgotten", "unknown", "refused")}

    def forgotten(self, cursor: int, limit: int) -> dict[str, Any]:
        """``{"records": [{"hex", "purged", "at", "seq"}…], "cursor": n, "more": bool}``: what the
        team forgot or purged after ``cursor`` (nothing, from a server older than forget)."""
        answer = self._call("GET", "/v1/forgotten", params={"cursor": cursor, "limit": limit}, absent_ok=True)
        return {"records": [], "cursor": cursor, "more": False} if answer is None else answer

    def search(self, query: str, limit: int = 5, *, project: str | None = None) -> list[dict[str, Any]]:
        params: dict[str, Any] = {"q": query, "limit": limit}
        if project:
            params["project"] = project
        return list(self._call("GET", "/v1/search", params=params)["hits"])

    def verify_candidates(self, limit: int) -> list[dict[str, Any]]:
        """Records with a fix and a reproduction and no replay yet, as export lines."""
        return list(self._call("GET", "/v1/verify/candidates", params={"limit": limit})["records"])

    def verifications(self, hexid: str) -> list[dict[str, Any]]:
        """Every replay run of a team record, oldest first: ``{at, how, environment, passed}``."""
        return list(self._call("GET", f"/v1/verify/{hexid}")["runs"])

    def report_verification(
        self, hexid: str, *, passed: bool, how: str, environment: str, detail: str
    ) -> dict[str, Any]:
        """Report one replay run; returns the record's ``verification`` summary."""
        body = {"passed": passed, "how": how, "environment": environment, "detail": detail}
        return dict(self._call("POST", f"/v1/verify/{hexid}", json=body)["verification"])

    # -- plumbing ----------------------------------------------------------------------------
    @overload
    def _call(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = ...,
        json: Any = ...,
        idempotent: bool = ...,
    ) -> dict[str, Any]: ...

    @overload
    def _call(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = ...,
        json: Any = ...,
        absent_ok: bool,
        idempotent: bool = ...,
    ) -> dict[str, Any] | None: ...

    def _call(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        json: Any = None,
        absent_ok: bool = False,
        idempotent: bool = False,
    ) -> dict[str, Any] | None:
        """The answer's JSON object; with ``absent_ok``, None when the server has no such route
        (404 without a jiyi error body: a server from before the route was added).

        A GET, or a request the server treats as idempotent (``idempotent``: a push merges as a
        union, a forget of a forgotten record changes nothing), is sent once more when its
        connection was dropped before an answer: the server may close a kept-alive connection
        just as it is reused. Anything else (a replay report) is not: the server may have counted it."""
        try:
            try:
                response = self._http.request(method, path, params=params, json=json)
            except _DROPPED:
                if not (idempotent or method == "GET"):
                    raise
                # The pool has let the dropped connection go: this goes out on a new one.
                response = self._http.request(method, path, params=params, json=json)
        except httpx.HTTPError as exc:  # refused, unreachable, timed out, broken answer
            raise Unavailable(f"team server {self.url}: {type(exc).__name__}: {exc}") from exc
        if response.status_code == 200:
            try:
                data = response.json()
            except ValueError as exc:
                raise Unavailable(f"team server {self.url}: not JSON") from exc
            if not isinstance(data, dict):
                raise Unavailable(f"team server {self.url}: unexpected answer")
            return data
        if absent_ok and response.status_code == 404 and not _jiyi_body(response):
            return None
        raise _error(response)


def _jiyi_body(response: httpx.Response) -> bool:
    try:
        body = response.json()
    except ValueError:
        return False
    return isinstance(body, dict) and str(body.get("code", "")).startswith("E_")


def _error(response: httpx.Response) -> JiyiError:
    try:
        body = response.json()
    except ValueError:
        body = {}
    body = body if isinstance(body, dict) else {}
    status = response.status_code
    if status == 401:
        return Unauthorized()
    if status == 403:
        detail, english = body.get("reason"), body.get("reason_en")
        return Forbidden(detail if isinstance(detail, str) else "", english if isinstance(english, str) else None)
    if status == 429:
        try:
            wait = float(response.headers.get("Retry-After", "60"))
        except ValueError:
            wait = 60.0
        return RateLimited(wait)
    if status in (400, 404, 413, 422):
        reason = str(body.get("reason", body.get("message", status)))
        english = body.get("reason_en", body.get("message_en"))
        return InvalidArgument(str(body.get("field", "team")), reason, str(english) if english else None)
    return Unavailable(f"team server answered {status}: {body.get('message', '')}".strip())

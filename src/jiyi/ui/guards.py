"""What keeps the review page to the person who started it (docs/spec.md §7).

Other local dashboards were read and driven by any web page the user opened: no authentication on
a fixed port, no check of the Host header (a DNS-rebinding page then speaks to 127.0.0.1 as its own
origin). Here every request passes, in order:

1. ``Host`` is one this server answers as (``127.0.0.1:<port>``, ``localhost:<port>``, the
   ``--host`` given): else 403. A rebinding page's requests carry its own name.
2. The launch token, in the query (then set as an HttpOnly, SameSite=Strict cookie and redirected to
   the clean URL, so the token leaves the address bar and the history) or in that cookie: else 401
   and no record text.
3. A POST's ``Origin`` (or, when a browser sends none, its ``Referer``) is this page's own: else
   403 and nothing changes. The form's ``csrf`` field, a second per-launch secret, is checked by
   ``actions`` when it reads the form.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from urllib.parse import urlencode, urlsplit

from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response

LOOPBACK = ("127.0.0.1", "localhost", "[::1]")
# What a refused request is told: never any record text.
_REFUSED_HOST = "403: this page answers only as 127.0.0.1 or localhost (Host header refused)\n"
_NO_TOKEN = "401: open the link `jiyi ui` printed (it carries this launch's token)\n"
_BAD_ORIGIN = "403: a change must come from this page itself (Origin refused); nothing changed\n"
# Headers every answer carries: no framing, no scripts, no other origin's resources, and a Referer
# to our own pages only (no-referrer would make a form POST's Origin "null" in Chromium).
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


@dataclass
class Guard:
    """The secrets of one launch and the names the server answers as."""

    port: int
    host: str = "127.0.0.1"
    token: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(24))

    @property
    def cookie(self) -> str:
        # Cookies are not kept apart by port: two launches on one machine each keep their own.
        return f"jiyi_ui_{self.port}"

    def hosts(self) -> set[str]:
        names = {*LOOPBACK, self.host if ":" not in self.host else f"[{self.host}]"}
        return {f"{name}:{self.port}" for name in names}

    def host_ok(self, host: str) -> bool:
        return host.lower() in self.hosts()

    def token_ok(self, given: str | None) -> bool:
        return given is not None and secrets.compare_digest(given.encode(), self.token.encode())

    def csrf_ok(self, given: object) -> bool:
        return isinstance(given, str) and secrets.compare_digest(given.encode(), self.csrf.encode())

    def origin_ok(self, request: Request, host: str) -> bool:
        """The POST comes from a page of this server: its Origin, else its Referer, names it."""
        own = f"http://{host.lower()}"
        origin = request.headers.get("origin")
        if origin is not None:
            return origin.lower() == own
        referer = request.headers.get("referer")
        if referer is None:
            return False
        parts = urlsplit(referer)
        return f"{parts.scheme}://{parts.netloc}".lower() == own

    async def __call__(self, request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        host = request.headers.get("host", "")
        if not self.host_ok(host):
            return _secured(PlainTextResponse(_REFUSED_HOST, status_code=403))
        given = request.query_params.get("token")
        if given is not None:
            if not self.token_ok(given):
                return _secured(PlainTextResponse(_NO_TOKEN, status_code=401))
            rest = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
            clean = request.url.path + (f"?{urlencode(rest)}" if rest else "")
            answer = RedirectResponse(clean, status_code=303)
            answer.set_cookie(self.cookie, self.token, httponly=True, samesite="strict", path="/")
            return _secured(answer)
        if not self.token_ok(request.cookies.get(self.cookie)):
            return _secured(PlainTextResponse(_NO_TOKEN, status_code=401))
        if request.method not in ("GET", "HEAD") and not self.origin_ok(request, host):
            return _secured(PlainTextResponse(_BAD_ORIGIN, status_code=403))
        return _secured(await call_next(request))


def _secured(response: Response) -> Response:
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    return response

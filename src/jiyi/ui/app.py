"""The review page's Starlette app: its routes and its guard.

``create_app(memory, guard)`` is what ``serve`` runs and what the tests drive in process. Pages
that only read (``pages``) are plain functions, which Starlette runs in its thread pool, off the
event loop; the forms that change something are in ``actions``; what they share in ``context``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from ..errors import JiyiError, NotFound, Unavailable
from . import actions, pages
from .context import HERE, Context, templates

if TYPE_CHECKING:
    from ..memory import Memory
    from .guards import Guard


def _style(request: Request) -> Response:
    return Response((HERE / "style.css").read_bytes(), media_type="text/css")


async def _failed(request: Request, exc: Exception) -> Response:
    """A failure of ours (the store locked or broken, a bad argument): its coded text, no traceback."""
    assert isinstance(exc, JiyiError)
    locale = request.app.state.context.locale
    status = 503 if isinstance(exc, Unavailable) else 404 if isinstance(exc, NotFound) else 400
    return PlainTextResponse(exc.text(locale) + "\n", status_code=status)


def create_app(memory: Memory, guard: Guard) -> Starlette:
    session = memory.session()  # only its project and environment: no session is recorded
    routes = [
        Route("/", pages.records),
        Route("/search", pages.search),
        Route("/records/{ref}", pages.record),
        Route("/records/{ref}/purge", pages.purge_confirm),
        Route("/sessions", pages.sessions),
        Route("/health", pages.health),
        Route("/style.css", _style),
        *(Route(f"/records/{{ref}}/{name}", action, methods=["POST"]) for name, action in actions.ACTIONS.items()),
    ]
    app = Starlette(
        routes=routes,
        middleware=[Middleware(BaseHTTPMiddleware, dispatch=guard)],
        exception_handlers={JiyiError: _failed},
    )
    app.state.context = Context(memory, guard, session.project, session.env, templates())
    return app

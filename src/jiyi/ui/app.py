"""The review page's Starlette app: its routes, its guard and what every page is rendered with.

``create_app(memory, guard)`` is what ``serve`` runs and what the tests drive in process. Pages
that only read are plain functions (Starlette runs them in its thread pool, off the event loop);
the forms that change something are in ``actions``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from .labels import labels

if TYPE_CHECKING:
    from ..memory import Memory
    from ..project import Project
    from .guards import Guard

HERE = Path(__file__).parent


@dataclass
class Context:
    """What the pages share: the memory, the guard's secrets, the project and environment a
    search ranks for (those of the folder ``jiyi ui`` was started in, as an agent's there), the
    templates."""

    memory: Memory
    guard: Guard
    project: Project
    env: dict[str, str]
    templates: Environment

    @property
    def locale(self) -> str:
        return self.memory.settings.locale

    def render(self, name: str, status: int = 200, **values: Any) -> HTMLResponse:
        page = self.templates.get_template(name).render(
            t=labels(self.locale), locale=self.locale, csrf=self.guard.csrf, **values
        )
        return HTMLResponse(page, status_code=status)


def context(request: Request) -> Context:
    found: Context = request.app.state.context
    return found


def templates() -> Environment:
    # Autoescape on every template: record text is a stranger's text (a title may be HTML).
    env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(default=True))
    from ..tools.formats import day

    env.filters["day"] = day
    return env


def _style(request: Request) -> Response:
    return Response((HERE / "style.css").read_bytes(), media_type="text/css")


def create_app(memory: Memory, guard: Guard) -> Starlette:
    from . import actions, pages

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
    app = Starlette(routes=routes, middleware=[Middleware(BaseHTTPMiddleware, dispatch=guard)])
    app.state.context = Context(memory, guard, session.project, session.env, templates())
    return app

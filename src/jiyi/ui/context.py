"""What every page of the review page is rendered with: the memory, the guard's secrets, the project
a search ranks for, the templates (autoescape on)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse

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

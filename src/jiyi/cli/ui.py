"""``jiyi ui``: the review page (``jiyi.ui``), served until interrupted."""

from __future__ import annotations

import importlib.util
import sys

import click

from ..errors import code_line
from . import _locale
from .common import opened

# The page's libraries are jiyi's own dependencies; an install that lost one is told which.
PACKAGES = {"starlette": "starlette", "uvicorn": "uvicorn", "jinja2": "jinja2", "multipart": "python-multipart"}
EXTRA = "jiyi ui needs {names}, which jiyi installs: pip install {names}"
EXTRA_ZH = "jiyi ui 缺少 {names}（jiyi 本应一并安装）：pip install {names}"


@click.command("ui")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (loopback by default).")
@click.option("--port", default=0, show_default=True, type=click.IntRange(0, 65535), help="Port (0: a free one).")
@click.option("--no-browser", is_flag=True, help="Print the link only; do not open a browser.")
def ui_command(host: str, port: int, no_browser: bool) -> None:
    """Review and curate memory in a browser: the records (automatic ones waiting for confirmation
    first), a search with its nine signals, each record with its revisions, marks and replay runs,
    recent sessions and health. Prints the page's link with a token for this launch only."""
    missing = [p for m, p in PACKAGES.items() if importlib.util.find_spec(m) is None]
    if missing:
        locale = _locale()
        click.echo((EXTRA if locale == "en" else EXTRA_ZH).format(names=" ".join(missing)), err=True)
        click.echo(code_line("E_UNAVAILABLE", locale), err=True)
        sys.exit(1)
    from ..ui.serve import serve

    with opened() as memory:
        try:
            serve(memory, host, port, open_browser=not no_browser)
        except OSError as exc:
            click.echo(f"jiyi ui: cannot listen on {host}:{port}: {exc.strerror or exc}", err=True)
            click.echo(code_line("E_UNAVAILABLE", memory.settings.locale), err=True)
            sys.exit(1)
        except KeyboardInterrupt:
            pass


COMMANDS = [ui_command]

"""The ``jiyi`` command: a thin layer over the library, split by command group.

``records`` holds the tool commands (search, read, note) and record management (list, show,
forget); ``data`` export/import, stats and doctor; ``mcp`` the MCP server; ``capture`` the hook
and the run wrapper; ``team`` the team server and this machine's sync with it.

``main`` is the console entry. ``jiyi hook <agent>`` runs on every tool call of an agent, so it goes
to ``jiyi.capture.hook`` before click (or anything else the other commands need) is imported; everything
else — including ``jiyi hook --help`` — is the click group, which ``main`` stands for wherever a
click command is expected (``CliRunner().invoke(main, …)``).
"""

from __future__ import annotations

import sys
from functools import cache

# Not typing's: importing it costs every `jiyi hook` process ~5 ms. mypy reads the name as typing's.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    import click

_HELP = {"-h", "--help"}


@cache
def group() -> click.Group:
    """The click group of every command."""
    import click

    from .. import __version__
    from ..errors import JiyiError
    from . import capture, data, doctor, mcp, records, team, ui

    class Jiyi(click.Group):
        """No command prints a traceback for a failure of ours (docs/spec.md §2): its text on stderr,
        exit status 1 — a bad setting met before a command's own handling, too."""

        def invoke(self, ctx: click.Context) -> Any:
            try:
                return super().invoke(ctx)
            except JiyiError as exc:
                click.echo(exc.text(_locale()), err=True)
                ctx.exit(1)

    @click.group("jiyi", cls=Jiyi, context_settings={"help_option_names": ["-h", "--help"]})
    @click.version_option(__version__, "-V", "--version", prog_name="jiyi")
    def jiyi() -> None:
        """jiyi (记忆): a memory of failures already met, for coding agents and people.

        Data lives under JIYI_HOME (default: the platform data folder); settings come from
        config.toml in the user config folder, .jiyi.toml in the project, and JIYI_* variables.
        Shell completion: eval "$(_JIYI_COMPLETE=bash_source jiyi)" (zsh_source, fish_source).
        """

    for module in (records, data, doctor, mcp, capture, team, ui):
        for command in module.COMMANDS:
            jiyi.add_command(command)
    return jiyi


def _locale() -> str:
    """The locale for an error met before the settings could be read: JIYI_LOCALE when it is one
    (the settings themselves may be what failed), else the default."""
    import os

    wanted = os.environ.get("JIYI_LOCALE", "").strip()
    return wanted if wanted in ("zh", "en") else "zh"


class _Entry:
    """Called with no arguments (the console script, ``python -m jiyi``): dispatches on
    ``sys.argv``. Anything else is the click group's."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        argv = sys.argv[1:]
        if not args and not kwargs and argv[:1] == ["hook"] and not _HELP & set(argv[1:]):
            from ..capture.hook import main as hook_main

            sys.exit(hook_main(argv[1:]))
        if not args and not kwargs and argv == ["mcp"]:
            # An agent spawns the server and waits for it (docs/spec.md §8: tools/list within 1 s): the
            # other commands' modules (rich, the team client) are not loaded for it.
            from ..mcp_server.start import serve

            return serve()
        return group()(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(group(), name)


main = _Entry()

"""The ``jiyi`` command: a thin layer over the library, split by command group.

``records`` holds the tool commands (search, read, note) and record management (list, show,
forget); ``data`` export/import, stats and doctor; ``serve`` the MCP server.
"""

from __future__ import annotations

import click

from .. import __version__
from . import data, records, serve


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="jiyi")
def main() -> None:
    """jiyi (记忆): a memory of failures already met, for coding agents and people.

    Data lives under JIYI_HOME (default: the platform data folder); settings come from
    config.toml in the user config folder, .jiyi.toml in the project, and JIYI_* variables.
    """


for group in (records, data, serve):
    for command in group.COMMANDS:
        main.add_command(command)

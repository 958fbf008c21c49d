"""``jiyi mcp``: run the MCP server on stdio."""

from __future__ import annotations

import click


@click.command("mcp")
def mcp_command() -> None:
    """Run the MCP server (stdio): memory_search, memory_read and memory_note.

    Register it with an agent, e.g. `claude mcp add jiyi -- jiyi mcp`.
    """
    from ..mcp_server.start import serve

    serve()


COMMANDS = [mcp_command]

"""``jiyi mcp``: the three tools over MCP on stdio (the official SDK's low-level server).

Named so it cannot be mistaken for the SDK's ``mcp`` package. ``start`` loads the SDK's server
modules without its package re-exports; ``server`` is the server itself.
"""

"""The start of ``jiyi mcp``: the SDK's stdio server, without the SDK's package re-exports.

``import mcp.server.lowlevel`` runs ``mcp/__init__.py`` and ``mcp/server/__init__.py`` first, and
they import the SDK's client (sessions, session groups, its HTTP transports) and ``MCPServer`` with
httpx and cryptography: 100–200 ms of CPU (``python -X importtime -m jiyi mcp``) of a start that
docs/spec.md §8 bounds at 1 s, none of it used by a stdio server. In the ``jiyi mcp`` process alone, where
nothing else runs that could want those names, the two packages are entered as bare packages over
the SDK's own folders: the server's modules then load from the installed SDK, unchanged, and only
they load. Should an SDK's server modules need the re-exports after all, the half-loaded modules
are dropped and the server is imported the ordinary way.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import logging
import os
import sys
import types

log = logging.getLogger("jiyi.mcp")

_PACKAGES = ("mcp", "mcp.server")


def serve() -> None:
    """Run the MCP server on stdio (``jiyi mcp``)."""
    _import_server()
    from .server import serve as run

    run()


def _import_server() -> None:
    if "mcp" in sys.modules:  # the SDK is already there whole: nothing to save
        return
    spec = importlib.util.find_spec("mcp")
    if spec is None or not spec.submodule_search_locations:
        return
    root = next(iter(spec.submodule_search_locations))
    before = set(sys.modules)
    for name in _PACKAGES:
        folder = os.path.join(root, *name.split(".")[1:])
        bare = types.ModuleType(name)
        bare.__path__ = [folder]
        bare.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=True)
        bare.__spec__.submodule_search_locations = [folder]
        sys.modules[name] = bare
    try:
        from . import server  # noqa: F401
    except ImportError:
        log.debug("the SDK's server needs its package re-exports: imported whole", exc_info=True)
        for name in set(sys.modules) - before:
            if name in _PACKAGES or name.startswith("mcp.") or name == "jiyi.mcp_server.server":
                del sys.modules[name]

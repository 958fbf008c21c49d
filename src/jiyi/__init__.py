"""jiyi (记忆): a memory for coding agents.

What an agent learned fixing a failure is written down once and found again, by the error text,
the next time any session meets the same failure::

    import jiyi

    with jiyi.Memory() as memory:
        session = memory.session(project="zlib-port")
        print(session.search_text("ld: undefined symbol deflate"))

The library imports without the CLI or the MCP server stack (click, rich, mcp load only there).
"""

from __future__ import annotations

# Not `import typing`: ~5 ms of every `jiyi hook` process. mypy reads this name as typing's.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from .config import Settings
    from .errors import (
        Forbidden,
        InvalidArgument,
        JiyiError,
        NotesDisabled,
        NotFound,
        ReadBudgetSpent,
        Unauthorized,
        Unavailable,
    )
    from .memory import Memory
    from .project import Project
    from .ranking import Hit, Signal
    from .records import Fix, Record, Revision
    from .session import NoteResult, ReadResult, Session, ToolResult
del TYPE_CHECKING  # not a name of the package

# Names load on first use (PEP 562), so `jiyi hook` pays only for what recording needs.
_LAZY = {
    "Settings": "config",
    "Forbidden": "errors",
    "InvalidArgument": "errors",
    "JiyiError": "errors",
    "NotesDisabled": "errors",
    "NotFound": "errors",
    "ReadBudgetSpent": "errors",
    "Unauthorized": "errors",
    "Unavailable": "errors",
    "Memory": "memory",
    "Project": "project",
    "Hit": "ranking",
    "Signal": "ranking",
    "Fix": "records",
    "Record": "records",
    "Revision": "records",
    "NoteResult": "session",
    "ReadResult": "session",
    "Session": "session",
    "ToolResult": "session",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'jiyi' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


__version__ = "0.1.0"

__all__ = [
    "Fix",
    "Forbidden",
    "Hit",
    "InvalidArgument",
    "JiyiError",
    "Memory",
    "NotFound",
    "NoteResult",
    "NotesDisabled",
    "Project",
    "ReadBudgetSpent",
    "ReadResult",
    "Record",
    "Revision",
    "Session",
    "Settings",
    "Signal",
    "ToolResult",
    "Unauthorized",
    "Unavailable",
    "__version__",
]

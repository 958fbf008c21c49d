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

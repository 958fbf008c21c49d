"""The public API is what __all__ says, no more and no less (after httpx's test of the same name)."""

from __future__ import annotations

import subprocess
import sys

import jiyi


def test_all_names_exist_and_are_public() -> None:
    for name in jiyi.__all__:
        assert hasattr(jiyi, name), name
    public = {n for n in dir(jiyi) if not n.startswith("_")}
    modules = {n for n in public if type(getattr(jiyi, n)).__name__ == "module"}
    assert public - modules - {"annotations"} == set(jiyi.__all__) - {"__version__"}


def test_memory_and_session_surface() -> None:
    for method in ("search", "read", "note", "search_text", "read_text", "note_text", "observe_tool_result"):
        assert callable(getattr(jiyi.Session, method))
    assert callable(jiyi.Memory.session)


def test_the_library_imports_without_cli_or_server_stack() -> None:
    code = "import sys, jiyi; print(','.join(m for m in ('click', 'rich', 'mcp', 'pydantic') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ""

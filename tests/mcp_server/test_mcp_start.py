"""The start of ``jiyi mcp`` (mcp_start.py): the SDK's server modules without its client stack, and
the ordinary import when the SDK's server would need its package re-exports."""

from __future__ import annotations

import subprocess
import sys

# Run in a fresh interpreter: the test process has imported the whole SDK already.
LOADED = (
    "import sys; print(sorted(n for n in ('mcp.client', 'mcp.server.mcpserver', 'httpx2', 'rich') if n in sys.modules))"
)

# An SDK whose stdio transport needs the package's re-exports: it refuses to load under bare packages.
REFUSING = """
import importlib.abc, sys
class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        bare = getattr(sys.modules.get("mcp"), "__file__", None) is None  # not the package's own
        if name == "mcp.server.stdio" and bare:
            raise ImportError("needs mcp.Client")
        return None
sys.meta_path.insert(0, Refuse())
"""


def python(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_server_loads_without_the_sdks_client_and_high_level_server() -> None:
    out = python(
        "from jiyi.mcp_server import start as mcp_start; mcp_start._import_server()\nimport jiyi.mcp_server.server\n"
        + LOADED
    )
    assert out == "[]"
    # The ordinary import, for comparison: what the start leaves out is really there to leave.
    assert python("import jiyi.mcp_server.server\n" + LOADED) == "['httpx2', 'mcp.client', 'mcp.server.mcpserver']"


def test_the_cli_entry_goes_to_the_server_without_the_other_commands() -> None:
    code = (
        "import sys\nfrom jiyi.mcp_server import start as mcp_start\n"
        "mcp_start.serve = lambda: None\nsys.argv = ['jiyi', 'mcp']\n"
    )
    out = python(code + "from jiyi.cli import main\nmain()\n" + LOADED.replace("'rich'", "'rich', 'click'"))
    assert out == "[]"


def test_an_sdk_that_needs_its_re_exports_is_imported_whole() -> None:
    out = python(
        REFUSING
        + "from jiyi.mcp_server import start as mcp_start; mcp_start._import_server()\n"
        + "import mcp, jiyi.mcp_server.server as s\nprint(hasattr(mcp, 'Client'), s.JiyiServer.__mro__[1].__name__)"
    )
    assert out == "True Server"

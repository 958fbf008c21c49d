"""The capture issue's "done when": a recorded Claude Code session replayed through real processes.

Every hook event is one `python -m jiyi hook claude-code` process fed the payload Claude Code sends
(SessionStart, PostToolUseFailure of a Bash command, PostToolUse of an Edit and of the same Bash
command); the tools go through `jiyi mcp` over stdio, started as Claude Code starts a plugin's
server: with the conversation's id in CLAUDE_CODE_SESSION_ID and the project as working folder.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp_types import TextContent

import jiyi
from jiyi.store.sqlite.store import SQLiteStore

from .helpers import run_hook, settled

AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ3x9vT2Lk"
GITHUB_TOKEN = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A"
SECRETS = (AWS_SECRET, GITHUB_TOKEN, AWS_SECRET[:12], GITHUB_TOKEN[4:20])
COMMAND = f"AWS_SECRET_ACCESS_KEY={AWS_SECRET} make app"
ERROR = (
    "Exit code 2\n"
    f"fetching vendor/zlib with GITHUB_TOKEN={GITHUB_TOKEN}\n"
    "cc -o app main.o compress.o\n"
    "ld: undefined symbol deflate\n"
    "clang: error: linker command failed with exit code 1 (use -v to see invocation)\n"
    "make: *** [app] Error 1"
)
NOTE = {
    "title": "Add -lz to LDLIBS for deflate",
    "type": "bugfix",
    "scope": "project",
    "content": {
        "what": "ld: undefined symbol deflate",
        "why": "the Makefile links compress.o, which calls zlib, without -lz",
        "where": "Makefile LDLIBS",
        "learned": "link zlib explicitly: LDLIBS += -lz",
    },
    "fix": {"kind": "command", "command": "make LDLIBS=-lz app"},
}
EARLIER = {
    "title": "Link zlib with -lz",
    "type": "bugfix",
    "scope": "project",
    "content": {
        "what": "ld: undefined symbol deflate",
        "why": "zlib was not on the link line",
        "where": "Makefile",
        "learned": "add -lz after the object files",
    },
}


def _event(name: str, session: str, project: Path, **fields: Any) -> dict[str, Any]:
    return {
        "session_id": session,
        "transcript_path": f"/home/dev/.claude/projects/zlib-port/{session}.jsonl",
        "cwd": str(project),
        "hook_event_name": name,
        **fields,
    }


def _bash_failure(session: str, project: Path, n: int) -> dict[str, Any]:
    return _event(
        "PostToolUseFailure",
        session,
        project,
        tool_name="Bash",
        tool_input={"command": COMMAND, "description": "Build the app"},
        tool_use_id=f"toolu_fail{n}",
        error=ERROR,
        is_interrupt=False,
    )


def _hook(tmp_path: Path, jiyi_home: Path, payload: dict[str, Any]) -> str:
    done = run_hook(tmp_path, jiyi_home, payload)
    assert done.returncode == 0 and done.stderr == b"", done
    settled(jiyi_home)  # a loop-closing success's record is written after the hook returned
    return done.stdout.decode()


def _context(stdout: str) -> str | None:
    if not stdout.strip():
        return None
    out = json.loads(stdout)
    assert out["hookSpecificOutput"]["hookEventName"] == "PostToolUseFailure"
    return str(out["hookSpecificOutput"]["additionalContext"])


def _server(tmp_path: Path, jiyi_home: Path, project: Path, session: str) -> StdioServerParameters:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "JIYI_HOME": str(jiyi_home),
        "JIYI_CONFIG_DIR": str(tmp_path / "jiyi-config"),
        "CLAUDE_CODE_SESSION_ID": session,
    }
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return StdioServerParameters(command=sys.executable, args=["-m", "jiyi", "mcp"], env=env, cwd=project)


def _text(result: Any) -> str:
    assert len(result.content) == 1 and isinstance(result.content[0], TextContent)
    assert not result.is_error, result.content[0].text
    return str(result.content[0].text)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_recorded_claude_code_session_closes_the_loop(tmp_path: Path, jiyi_home: Path) -> None:
    project = tmp_path / "zlib-port"
    project.mkdir()
    # An earlier conversation met the same failure in Bash and noted its fix.
    with jiyi.Memory(cwd=project) as memory:
        earlier = memory.session(session_id="sess-earlier")
        earlier.observe_tool_result("bash", ok=False, error=ERROR.replace(GITHUB_TOKEN, "x"), command="make app")
        old = earlier.note(**EARLIER).record
    # Held open to the end, so the write-ahead log is still there to be read (the last connection
    # to close folds it into the database file and deletes it).
    keeper = sqlite3.connect(jiyi_home / "jiyi.db")
    keeper.execute("SELECT count(*) FROM records").fetchone()

    a, b = "5c1d0e2a-1111-4a4a-9e9e-0123456789ab", "7f3b9c4d-2222-4b4b-8f8f-fedcba987654"
    assert _hook(tmp_path, jiyi_home, _event("SessionStart", a, project, source="startup")) == ""
    first = _context(_hook(tmp_path, jiyi_home, _bash_failure(a, project, 1)))
    assert first == f"jiyi: [{old.id}] Link zlib with -lz — memory_read for details"

    async def conversation_a() -> dict[str, str]:
        out: dict[str, str] = {}
        with anyio.fail_after(240):
            async with Client(_server(tmp_path, jiyi_home, project, a), read_timeout_seconds=90) as client:
                out["search"] = _text(await client.call_tool("memory_search", {"query": "the build fails at link"}))
                out["read"] = _text(await client.call_tool("memory_read", {"ref": old.id}))
                out["note"] = _text(await client.call_tool("memory_note", NOTE))
        return out

    out = anyio.run(conversation_a)
    lines = out["search"].split("\n")
    assert lines[0] == f"1. [{old.id}] Link zlib with -lz", out["search"]
    assert re.search(r"error_signature sha256:[0-9a-f]{17}… \(0\.\d\d\)", lines[2]), lines[2]
    assert "tool_name bash (0.05)" in lines[2], lines[2]
    noted = re.match(r"saved (lr_[0-9a-f]{32}) revision 1", out["note"])
    assert noted, out["note"]
    note_id = noted.group(1)

    edit = _event(
        "PostToolUse",
        a,
        project,
        tool_name="Edit",
        tool_input={"file_path": str(project / "Makefile"), "old_string": "LDLIBS =", "new_string": "LDLIBS = -lz"},
        tool_response={"filePath": str(project / "Makefile"), "oldString": "LDLIBS =", "newString": "LDLIBS = -lz"},
        tool_use_id="toolu_edit",
    )
    assert _hook(tmp_path, jiyi_home, edit) == ""
    success = _event(
        "PostToolUse",
        a,
        project,
        tool_name="Bash",
        tool_input={"command": COMMAND, "description": "Build the app"},
        tool_response={"stdout": "cc -o app main.o compress.o -lz\n", "stderr": "", "interrupted": False},
        tool_use_id="toolu_ok",
    )
    assert _hook(tmp_path, jiyi_home, success) == ""
    assert _hook(tmp_path, jiyi_home, _event("Stop", a, project, stop_hook_active=False)) == ""

    store = SQLiteStore(jiyi_home / "jiyi.db")
    try:
        mine, theirs, state = store.get(note_id[3:]), store.get(old.hex), store.session(a)
    finally:
        store.close()
    assert mine is not None and theirs is not None and state is not None
    assert (mine.origin, mine.outcome, mine.tool_name) == ("local_auto", "失败", "bash")
    assert (theirs.origin, theirs.used_success) == ("note", 1)  # read since the failure, which went away
    assert (state.outcome, state.last_error) == ("成功", None)

    # A second conversation meets the same failure: the confirmed note comes first, once.
    assert _hook(tmp_path, jiyi_home, _event("SessionStart", b, project, source="startup")) == ""
    second = _context(_hook(tmp_path, jiyi_home, _bash_failure(b, project, 2)))
    assert second == f"jiyi: [{note_id}] Add -lz to LDLIBS for deflate — memory_read for details"
    again = _context(_hook(tmp_path, jiyi_home, _bash_failure(b, project, 3)))
    assert again == f"jiyi: [{old.id}] Link zlib with -lz — memory_read for details"
    assert _context(_hook(tmp_path, jiyi_home, _bash_failure(b, project, 4))) is None

    async def conversation_b() -> str:
        with anyio.fail_after(240):
            async with Client(_server(tmp_path, jiyi_home, project, b), read_timeout_seconds=90) as client:
                return _text(await client.call_tool("memory_read", {"ref": note_id}))

    read = anyio.run(conversation_b).split("\n")
    source = next(line for line in read if line.startswith("source: "))
    assert source.startswith("source: 本机自动确认 · zlib-port · "), source
    assert "make LDLIBS=-lz app" in "\n".join(read)

    def leaked() -> list[str]:
        found = []
        for path in (p for p in jiyi_home.rglob("*") if p.is_file()):
            data = path.read_bytes()
            found += [f"{secret[:8]}… in {path.name}" for secret in SECRETS if secret.encode() in data]
        return found

    assert (jiyi_home / "jiyi.db-wal").stat().st_size > 0 and (jiyi_home / "jiyi.db-shm").exists()
    assert leaked() == []
    wal = (jiyi_home / "jiyi.db-wal").read_bytes()
    assert b"[REDACTED:aws-secret-key]" in wal and b"[REDACTED:github-token]" in wal
    keeper.close()
    assert leaked() == []

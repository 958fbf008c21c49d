"""An MCP server given no session id meets its conversation's hooks by the rule of session_link."""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

import jiyi
from jiyi import session_link
from jiyi.capture import events as hook_events
from jiyi.capture import hook
from jiyi.mcp_server.server import build

from .helpers import ZLIB, run_hook

ERROR = "Exit code 1\nld: undefined symbol deflate"


def _failure(session_id: str, project: Path) -> dict[str, Any]:
    return {
        "session_id": session_id,
        "cwd": str(project),
        "hook_event_name": "PostToolUseFailure",
        "tool_name": "Bash",
        "tool_input": {"command": "make"},
        "error": ERROR,
        "is_interrupt": False,
    }


def _hook(payload: dict[str, Any]) -> None:
    event = hook_events.parse("claude-code", payload)
    assert event is not None
    hook.report(event)


@pytest.fixture
def projects(tmp_path: Path, jiyi_home: Path) -> tuple[Path, Path]:
    """Two projects, each with a record of the failure noted after a Bash failure an hour ago."""
    one, two = tmp_path / "zlib-port", tmp_path / "other"
    one.mkdir()
    two.mkdir()
    for folder in (one, two):
        with jiyi.Memory(cwd=folder) as memory:
            writer = memory.session(session_id=f"earlier-{folder.name}")
            writer.observe_tool_result("bash", ok=False, error=ERROR)
            writer.note_text(**ZLIB)
        _age(jiyi_home, f"earlier-{folder.name}", 60)
    return one, two


def _server_search(folder: Path) -> tuple[str, str]:
    """(session id, search text) of an MCP server started in ``folder`` with no session id."""
    server = build(jiyi.Memory(cwd=folder))
    try:
        text = server.session.call("memory_search", {"query": "the build fails"}).text
        return server.session.id, text
    finally:
        server.session.memory.close()


def _age(jiyi_home: Path, session_id: str, minutes: int) -> None:
    stamp = (datetime.now(timezone.utc) - timedelta(minutes=minutes)).isoformat(timespec="microseconds")
    with sqlite3.connect(jiyi_home / "jiyi.db") as db:
        db.execute("UPDATE sessions SET last_seen = ? WHERE id = ?", (stamp, session_id))
    db.close()


def test_a_server_without_an_id_adopts_the_live_hook_session_of_its_project(
    tmp_path: Path, jiyi_home: Path, projects: tuple[Path, Path]
) -> None:
    one, _ = projects
    done = run_hook(tmp_path, jiyi_home, _failure("agent-1", one))  # a real hook process
    assert done.returncode == 0 and done.stderr == b"", done
    session_id, text = _server_search(one)
    assert session_id == "agent-1"
    assert "tool_name bash (0.05)" in text.split("\n")[2], text


def test_two_projects_never_link(projects: tuple[Path, Path]) -> None:
    one, two = projects
    _hook(_failure("agent-2", two))
    session_id, text = _server_search(one)
    assert session_id.startswith(session_link.OWN_PREFIX)
    assert "tool_name" not in text


def test_a_session_not_seen_for_the_live_minutes_is_not_adopted(jiyi_home: Path, projects: tuple[Path, Path]) -> None:
    one, _ = projects
    _hook(_failure("agent-3", one))
    _age(jiyi_home, "agent-3", session_link.LIVE_MINUTES + 1)
    assert _server_search(one)[0].startswith(session_link.OWN_PREFIX)
    _age(jiyi_home, "agent-3", session_link.LIVE_MINUTES - 1)
    assert _server_search(one)[0] == "agent-3"


def test_the_most_recent_hook_session_wins_and_the_link_then_stays(
    jiyi_home: Path, projects: tuple[Path, Path]
) -> None:
    one, _ = projects
    _hook(_failure("older", one))
    _age(jiyi_home, "older", 2)
    _hook(_failure("newer", one))
    server = build(jiyi.Memory(cwd=one))
    try:
        assert server.session.call("memory_search", {"query": "deflate"}).text.startswith("1. [")
        assert server.session.id == "newer"
        _hook(_failure("newest", one))
        server.session.call("memory_search", {"query": "deflate"})
        assert server.session.id == "newer"
    finally:
        server.session.memory.close()


def test_servers_never_adopt_each_others_own_sessions(projects: tuple[Path, Path]) -> None:
    one, _ = projects
    first, _ = _server_search(one)
    second, _ = _server_search(one)
    assert first.startswith(session_link.OWN_PREFIX) and second.startswith(session_link.OWN_PREFIX)
    assert first != second


def test_an_id_given_to_the_server_is_kept(monkeypatch: pytest.MonkeyPatch, projects: tuple[Path, Path]) -> None:
    one, _ = projects
    _hook(_failure("agent-4", one))
    monkeypatch.setenv("JIYI_SESSION_ID", "named")
    assert _server_search(one)[0] == "named"

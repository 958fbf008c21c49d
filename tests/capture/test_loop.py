"""Closing the loop (docs/spec.md §5): the tool that failed succeeds later in the same session.

The replay runs real ``jiyi hook claude-code`` processes for the agent's events and the Python API
with the same session id for what the MCP server does (memory_search / memory_read / memory_note).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

import jiyi
from jiyi.capture import results as tool_results

from ..helpers import ZLIB, note, run_hook, settled

SESSION = "5f0c1d2e-loop-4a8b-replay"
ERROR = "Exit code 1\nld: undefined symbol deflate"
FIX_NOTE = {
    **note(
        title="Add -lz to the link command",
        what="ld: undefined symbol deflate",
        learned="pass -lz after main.o: cc -o app main.o -lz",
    ),
    "fix": {"kind": "command", "command": "cc -o app main.o -lz"},
}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "zlib-port"
    folder.mkdir()
    monkeypatch.chdir(folder)
    return folder


def _hook(tmp_path: Path, jiyi_home: Path, payload: dict[str, Any]) -> subprocess.CompletedProcess[bytes]:
    done = run_hook(tmp_path, jiyi_home, payload)
    assert (done.returncode, done.stderr) == (0, b"")
    settled(jiyi_home)  # a loop-closing success's record is written after the hook returned
    return done


def _event(name: str, project: Path, session_id: str = SESSION, **fields: Any) -> dict[str, Any]:
    return {
        "session_id": session_id,
        "transcript_path": "/tmp/transcript.jsonl",
        "cwd": str(project),
        "hook_event_name": name,
        **fields,
    }


def _failure(project: Path, session_id: str = SESSION) -> dict[str, Any]:
    return _event(
        "PostToolUseFailure",
        project,
        session_id,
        tool_name="Bash",
        tool_input={"command": "cc -o app main.o"},
        tool_use_id="toolu_fail",
        error=ERROR,
        is_interrupt=False,
    )


def _success(project: Path) -> dict[str, Any]:
    return _event(
        "PostToolUse",
        project,
        tool_name="Bash",
        tool_input={"command": "cc -o app main.o -lz"},
        tool_use_id="toolu_ok",
        tool_response={"stdout": "", "stderr": "", "exit_code": 0, "interrupted": False, "isImage": False},
    )


def _recalled(done: subprocess.CompletedProcess[bytes]) -> str | None:
    """The additionalContext the hook printed; None when it printed nothing."""
    if not done.stdout:
        return None
    lines = done.stdout.decode().splitlines()
    assert len(lines) == 1
    context = json.loads(lines[0])["hookSpecificOutput"]
    assert context["hookEventName"] == "PostToolUseFailure"
    return str(context["additionalContext"])


def _older_zlib_record() -> str:
    with jiyi.Memory() as memory:
        writer = memory.session(session_id="earlier")
        writer.observe_tool_result("Bash", ok=False, error="ld: undefined symbol deflate")
        return writer.note(**ZLIB).record.id


def test_a_replayed_claude_code_session_closes_the_loop(tmp_path: Path, jiyi_home: Path, project: Path) -> None:
    older = _older_zlib_record()

    assert _hook(tmp_path, jiyi_home, _event("SessionStart", project, source="startup")).stdout == b""
    failed = _hook(tmp_path, jiyi_home, _failure(project))
    assert _recalled(failed) == f"jiyi: [{older}] Link zlib with -lz — memory_read for details"

    # What the MCP server does for the same conversation.
    with jiyi.Memory() as memory:
        agent = memory.session(session_id=SESSION)
        found = agent.search_text("why does the link fail")
        assert found.startswith(f"1. [{older}] Link zlib with -lz")
        matched = next(line for line in found.splitlines() if line.strip().startswith("matched:"))
        assert "tool_name bash" in matched
        assert "error_signature sha256:" in matched
        assert "证据" not in agent.read_text(older)  # used_success 0: no evidence line yet
        written = agent.note(**FIX_NOTE).record
        assert written.origin == "note"

    passed = _hook(tmp_path, jiyi_home, _success(project))
    assert passed.stdout == b""

    with jiyi.Memory() as memory:
        state = memory.store.session(SESSION)
        assert state is not None
        assert (state.last_tool, state.last_error, state.outcome) == (None, None, "成功")
        old, new = memory.store.get(older[3:]), memory.store.get(written.hex)
        assert old is not None and new is not None
        assert (old.used_success, old.origin) == (1, "note")
        assert (new.origin, new.used_success) == ("local_auto", 0)
        text = memory.session(session_id="another").read_text(written.id)
    assert text.splitlines()[1].startswith("source: 本机自动确认 · zlib-port · ")
    assert "出处：本机自动确认 · zlib-port · " in text
    assert "修法（Fix，命令）：cc -o app main.o -lz" in text

    # The same success again counts nothing: the failure it ended is gone.
    _hook(tmp_path, jiyi_home, _success(project))
    with jiyi.Memory() as memory:
        old = memory.store.get(older[3:])
        assert old is not None and old.used_success == 1

    # A second session meets the same failure: each matching record is handed over once, the
    # confirmed note first.
    lines = [_recalled(_hook(tmp_path, jiyi_home, _failure(project, "second"))) for _ in range(3)]
    assert lines == [
        f"jiyi: [{written.id}] Add -lz to the link command — memory_read for details",
        f"jiyi: [{older}] Link zlib with -lz — memory_read for details",
        None,
    ]


def test_only_reads_and_matching_notes_since_the_failure_count(jiyi_home: Path, project: Path) -> None:
    older = _older_zlib_record()
    with jiyi.Memory() as memory:
        other = memory.session(session_id="writer").note(**note(title="Yaml", what="No module named 'yaml'"))
        agent = memory.session(session_id=SESSION)
        agent.read(other.record.id)  # read before the failure: not used for it
        before = agent.note(**note(title="Written before the failure", type="decision", what="use -lz"))
        agent.observe_tool_result("Bash", ok=False, error="ld: undefined symbol deflate")
        agent.read(older)
        unrelated = agent.note(
            **note(title="Unrelated decision", type="decision", what="prefer make over cmake", learned="make")
        )
        matching = agent.note(**note(title="The fix", what="ld: undefined symbol deflate"))
        agent.observe_tool_result("Read", ok=True)  # another tool: the failure stays
        assert memory.store.session(SESSION).last_error == "ld: undefined symbol deflate"  # type: ignore[union-attr]
        agent.observe_tool_result("bash", ok=True)

        def get(hexid: str) -> Any:
            return memory.store.get(hexid)

        assert get(older[3:]).used_success == 1
        assert get(other.record.hex).used_success == 0
        assert get(before.record.hex).origin == "note"
        assert get(unrelated.record.hex).origin == "note"
        assert get(matching.record.hex).origin == "local_auto"
        # A second success: nothing more.
        agent.observe_tool_result("Bash", ok=True)
        assert get(older[3:]).used_success == 1

        # A record read before the failure and again after it counts once for the new failure.
        agent.observe_tool_result("Bash", ok=False, error="ld: undefined symbol deflate")
        agent.read(older)
        agent.read(older)
        agent.observe_tool_result("Bash", ok=True)
        assert get(older[3:]).used_success == 2


def test_a_human_confirmed_note_keeps_its_origin(jiyi_home: Path, project: Path) -> None:
    with jiyi.Memory() as memory:
        agent = memory.session(session_id=SESSION)
        agent.observe_tool_result("Bash", ok=False, error="ld: undefined symbol deflate")
        written = agent.note(**FIX_NOTE).record
        db = memory.store._db  # type: ignore[attr-defined]
        db.execute("UPDATE records SET origin = 'human' WHERE hex = ?", (written.hex,))
        agent.observe_tool_result("Bash", ok=True)
        record = memory.store.get(written.hex)
        assert record is not None and record.origin == "human"


def test_recall_skips_wrong_foreign_and_own_records(jiyi_home: Path, project: Path) -> None:
    older = _older_zlib_record()
    with jiyi.Memory() as memory:
        store = memory.store
        signatures = tool_results.record_tool_result(
            store, SESSION, "bash", ok=False, error="ld: undefined symbol deflate"
        )
        assert signatures
        key = memory.session(session_id=SESSION).project.key
        assert tool_results.recall(store, SESSION, "another-project", signatures) is None  # project scope
        mine = memory.session(session_id=SESSION).note(**note(title="Mine", what="ld: undefined symbol deflate"))
        memory.session(session_id="judge").note(
            **note(title="That was wrong", type="decision", what="not this"),
            relates_to=[{"record_ref": older, "relation": "wrong"}],
        )
        assert tool_results.recall(store, SESSION, key, signatures) is None  # the older is wrong, mine is mine
        other = tool_results.recall(store, "fresh", key, signatures)  # another session: mine is not its own
        assert other is not None and other.hex == mine.record.hex
        assert tool_results.recall(store, "fresh", key, signatures) is None  # once per record per session

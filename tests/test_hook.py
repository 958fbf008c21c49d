"""`jiyi hook <agent>`: agent hook events on stdin become tool results of the named session."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import jiyi
from jiyi import hook

from .helpers import ZLIB, run_hook

SESSION = "0b6c5a1e-7d1f-4f39-9a77-claude"


def _env(tmp_path: Path, jiyi_home: Path) -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "JIYI_HOME": str(jiyi_home),
        "JIYI_CONFIG_DIR": str(tmp_path / "jiyi-config"),
    }
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return env


def _hook(
    tmp_path: Path, jiyi_home: Path, payload: Any, agent: str = "claude-code", raw: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    return run_hook(tmp_path, jiyi_home, payload, agent=agent, raw=raw)


def _event(name: str, project: Path, **fields: Any) -> dict[str, Any]:
    return {
        "session_id": SESSION,
        "transcript_path": "/tmp/transcript.jsonl",
        "cwd": str(project),
        "hook_event_name": name,
        **fields,
    }


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "zlib-port"
    folder.mkdir()
    monkeypatch.chdir(folder)
    return folder


def _state(session_id: str = SESSION) -> Any:
    with jiyi.Memory() as memory:
        return memory.store.session(session_id)


def test_a_claude_code_failure_becomes_the_sessions_last_failure_and_finds_the_note(
    tmp_path: Path, jiyi_home: Path, project: Path
) -> None:
    with jiyi.Memory() as memory:
        writer = memory.session(session_id="earlier")
        writer.observe_tool_result("Bash", ok=False, error="ld: undefined symbol deflate")
        writer.note(**ZLIB)

    failure = _event(
        "PostToolUseFailure",
        project,
        tool_name="Bash",
        tool_input={"command": "make"},
        tool_use_id="toolu_01",
        error="ld: undefined symbol deflate",
        is_interrupt=False,
    )
    done = _hook(tmp_path, jiyi_home, failure)
    assert done.returncode == 0, done.stderr
    # The earlier note matches by signature: proactive recall hands it to the agent.
    context = json.loads(done.stdout)["hookSpecificOutput"]
    assert context["hookEventName"] == "PostToolUseFailure"
    assert context["additionalContext"].startswith("jiyi: [lr_")
    assert context["additionalContext"].endswith("] Link zlib with -lz — memory_read for details")

    state = _state()
    assert state is not None and state.project == "zlib-port"
    assert (state.last_tool, state.last_error) == ("bash", "ld: undefined symbol deflate")

    with jiyi.Memory() as memory:
        text = memory.session(session_id=SESSION).search_text("why does the link fail")
    assert text.startswith("1. [lr_")
    assert "Link zlib with -lz" in text
    matched = next(line for line in text.splitlines() if line.strip().startswith("matched:"))
    assert "tool_name bash" in matched
    assert "error_signature sha256:" in matched


def test_error_message_is_read_when_error_is_missing(tmp_path: Path, jiyi_home: Path, project: Path) -> None:
    event = _event("PostToolUseFailure", project, tool_name="Read", error_message="File does not exist.")
    assert _hook(tmp_path, jiyi_home, event).returncode == 0
    state = _state()
    assert (state.last_tool, state.last_error) == ("Read", "File does not exist.")


def test_a_bash_post_tool_use_with_a_nonzero_exit_code_is_a_failure(
    tmp_path: Path, jiyi_home: Path, project: Path
) -> None:
    event = _event(
        "PostToolUse",
        project,
        tool_name="Bash",
        tool_input={"command": "cc main.o -o app"},
        tool_response={"stdout": "", "stderr": "ld: undefined symbol deflate", "exit_code": 1, "interrupted": False},
    )
    done = _hook(tmp_path, jiyi_home, event)
    assert (done.returncode, done.stdout) == (0, b""), done.stderr
    state = _state()
    assert state.last_tool == "bash"
    assert state.last_error == "exit code 1\nld: undefined symbol deflate"


def test_a_success_of_another_tool_keeps_the_last_failure(tmp_path: Path, jiyi_home: Path, project: Path) -> None:
    failing = {"stdout": "", "stderr": "ld: undefined symbol deflate", "exitCode": 1}
    _hook(tmp_path, jiyi_home, _event("PostToolUse", project, tool_name="Bash", tool_response=failing))
    edited = {"filePath": "/src/Makefile", "success": True}
    _hook(tmp_path, jiyi_home, _event("PostToolUse", project, tool_name="Edit", tool_response=edited))
    assert _state().last_error == "exit code 1\nld: undefined symbol deflate"
    # The tool that failed succeeding ends the failure (tests/test_loop.py has the whole loop).
    passing = {"stdout": "ok", "stderr": "warning: unused", "interrupted": False, "isImage": False}
    _hook(tmp_path, jiyi_home, _event("PostToolUse", project, tool_name="Bash", tool_response=passing))
    state = _state()
    assert (state.last_tool, state.last_error, state.outcome) == (None, None, "成功")


def test_jiyis_own_mcp_tools_are_skipped(tmp_path: Path, jiyi_home: Path, project: Path) -> None:
    for name in ("mcp__jiyi__memory_search", "mcp__plugin_jiyi_jiyi__memory_read", "mcp__jiyi__memory_note"):
        event = _event("PostToolUseFailure", project, tool_name=name, error="记忆暂不可用\n错误码：E_UNAVAILABLE")
        done = _hook(tmp_path, jiyi_home, event)
        assert (done.returncode, done.stdout) == (0, b"")
    assert _state() is None


def test_bad_json_and_bad_usage_exit_0_with_nothing_on_stdout(tmp_path: Path, jiyi_home: Path) -> None:
    for raw in (b"{not json", b"", b"\xff\xfe", b"[1, 2]", b'{"hook_event_name": "PostToolUse"}'):
        done = _hook(tmp_path, jiyi_home, None, raw=raw)
        assert (done.returncode, done.stdout) == (0, b"")
    done = _hook(tmp_path, jiyi_home, {}, agent="cursor")
    assert (done.returncode, done.stdout) == (0, b"")
    assert b"unknown agent" in done.stderr


def test_an_unusable_store_does_not_fail_the_agent(tmp_path: Path, jiyi_home: Path, project: Path) -> None:
    jiyi_home.mkdir(parents=True)
    (jiyi_home / "jiyi.db").write_bytes(b"this is not a database" * 100)
    done = _hook(tmp_path, jiyi_home, _event("PostToolUseFailure", project, tool_name="Bash", error="boom"))
    assert (done.returncode, done.stdout) == (0, b"")
    assert b"jiyi hook:" in done.stderr


def test_session_events_open_the_session(tmp_path: Path, jiyi_home: Path, project: Path) -> None:
    done = _hook(tmp_path, jiyi_home, _event("SessionStart", project, source="startup"))
    assert (done.returncode, done.stdout) == (0, b"")
    state = _state()
    assert state is not None and state.project == "zlib-port" and state.last_error is None
    for name in ("Stop", "SessionEnd"):
        assert _hook(tmp_path, jiyi_home, _event(name, project)).returncode == 0


def test_the_hook_imports_neither_click_nor_the_server_stack(tmp_path: Path, jiyi_home: Path, project: Path) -> None:
    event = _event("PostToolUseFailure", project, tool_name="Bash", error="ld: undefined symbol deflate")
    env = {**_env(tmp_path, jiyi_home), "PYTHONPROFILEIMPORTTIME": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "jiyi", "hook", "claude-code"],
        input=json.dumps(event).encode(),
        capture_output=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0
    imported = {line.split("|")[-1].strip().split(".")[0] for line in done.stderr.decode().splitlines() if "|" in line}
    assert not imported & {"click", "rich", "mcp", "pydantic"}
    assert _state().last_tool == "bash"


# -- parsing, in-process -------------------------------------------------------------------
def test_codex_infers_a_failure_from_the_response() -> None:
    event = hook.parse(
        "codex",
        {
            "session_id": "c1",
            "hook_event_name": "PostToolUse",
            "tool_name": "shell",
            "tool_response": json.dumps(
                {"output": "error[E0425]: cannot find value `x`", "metadata": {"exit_code": 101}}
            ),
        },
    )
    assert event is not None and event.call == hook.ToolCall(
        "bash", False, "exit code 101\nerror[E0425]: cannot find value `x`"
    )
    ok = hook.parse("codex", {"hook_event_name": "PostToolUse", "tool_name": "shell", "tool_response": "Exit code: 0"})
    assert ok is not None and ok.call is not None and ok.call.ok
    failed = hook.parse(
        "codex", {"hook_event_name": "PostToolUse", "tool_name": "shell", "tool_response": "Exit code: 2"}
    )
    assert failed is not None and failed.call is not None and not failed.call.ok


def test_gemini_reads_tool_response_error() -> None:
    payload = {
        "session_id": "g1",
        "hook_event_name": "AfterTool",
        "tool_name": "run_shell_command",
        "tool_response": {"llmContent": "", "returnDisplay": "", "error": {"message": "Command exited with code 1"}},
    }
    event = hook.parse("gemini", payload)
    assert event is not None and event.call == hook.ToolCall("bash", False, "Command exited with code 1")
    payload["tool_response"] = {"llmContent": "done", "returnDisplay": "done", "error": None}
    event = hook.parse("gemini", payload)
    assert event is not None and event.call == hook.ToolCall("bash", True, None)


def test_an_interrupted_bash_call_is_a_failure() -> None:
    response = {"stdout": "", "stderr": "", "interrupted": True}
    event = hook.parse(
        "claude-code", {"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_response": response}
    )
    assert event is not None and event.call == hook.ToolCall("bash", False, "interrupted")


def test_long_errors_are_capped_and_secrets_redacted() -> None:
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    text = "Exit code 1\n" + "compiling …\n" * 5000 + f"fatal: https://x:{token}@github.com/a/b.git\nld: failed"
    cleaned = hook.clean_error(text)
    assert cleaned is not None and len(cleaned) <= hook.MAX_ERROR
    assert cleaned.startswith("Exit code 1\n…\n") and cleaned.endswith("ld: failed")
    assert token not in cleaned

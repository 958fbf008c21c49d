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
from jiyi.capture import cleaning, hook
from jiyi.capture import events as hook_events
from jiyi.capture import fast_path as hook_quick

from ..helpers import ZLIB, git_repo, run_hook

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


def _noted_zlib() -> None:
    """The zlib note, written by an earlier session after the link failure it fixes."""
    with jiyi.Memory() as memory:
        writer = memory.session(session_id="earlier")
        writer.observe_tool_result("Bash", ok=False, error="ld: undefined symbol deflate")
        writer.note(**ZLIB)


def _state(session_id: str = SESSION) -> Any:
    with jiyi.Memory() as memory:
        return memory.store.session(session_id)


def test_a_claude_code_failure_becomes_the_sessions_last_failure_and_finds_the_note(
    tmp_path: Path, jiyi_home: Path, project: Path
) -> None:
    _noted_zlib()

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
    # The tool that failed succeeding ends the failure (tests/capture/test_loop.py has the whole loop).
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
    event = hook_events.parse(
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
    assert event is not None and event.call == hook_events.ToolCall(
        "bash", False, "exit code 101\nerror[E0425]: cannot find value `x`"
    )
    ok = hook_events.parse(
        "codex", {"hook_event_name": "PostToolUse", "tool_name": "shell", "tool_response": "Exit code: 0"}
    )
    assert ok is not None and ok.call is not None and ok.call.ok
    failed = hook_events.parse(
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
    event = hook_events.parse("gemini", payload)
    assert event is not None and event.call == hook_events.ToolCall("bash", False, "Command exited with code 1")
    payload["tool_response"] = {"llmContent": "done", "returnDisplay": "done", "error": None}
    event = hook_events.parse("gemini", payload)
    assert event is not None and event.call == hook_events.ToolCall("bash", True, None)


def test_gemini_shell_failures_are_read_from_llm_content() -> None:
    # run_shell_command reports a command's end in llmContent alone (Gemini CLI docs/tools/shell.md).
    payload = {
        "hook_event_name": "AfterTool",
        "tool_name": "run_shell_command",
        "tool_input": {"command": "tox -e py310"},
        "tool_response": {
            "llmContent": "Output: ImportError: cannot import name 'soft_unicode' from 'markupsafe'\nExit Code: 1\n"
            "Process Group PGID: 46852",
            "returnDisplay": "ImportError: cannot import name 'soft_unicode' from 'markupsafe'",
        },
    }
    event = hook_events.parse("gemini", payload)
    assert event is not None and event.call == hook_events.ToolCall(
        "bash", False, "exit code 1\nImportError: cannot import name 'soft_unicode' from 'markupsafe'", "tox -e py310"
    )
    payload["tool_response"] = {"llmContent": "Output: ok\nExit Code: 0\nProcess Group PGID: 1", "returnDisplay": "ok"}
    assert hook_events.parse("gemini", payload).call.ok  # type: ignore[union-attr]
    # A file that holds the words is no failure: only a shell tool's response is read so.
    read = {**payload, "tool_name": "read_file", "tool_response": {"llmContent": "Exit Code: 1\n"}}
    assert hook_events.parse("gemini", read).call.ok  # type: ignore[union-attr]


def test_an_interrupted_bash_call_is_a_failure() -> None:
    response = {"stdout": "", "stderr": "", "interrupted": True}
    event = hook_events.parse(
        "claude-code", {"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_response": response}
    )
    assert event is not None and event.call == hook_events.ToolCall("bash", False, "interrupted")


def test_long_errors_are_capped_and_secrets_redacted() -> None:
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    text = "Exit code 1\n" + "compiling …\n" * 5000 + f"fatal: https://x:{token}@github.com/a/b.git\nld: failed"
    cleaned = cleaning.clean_error(text)
    assert cleaned is not None and len(cleaned) <= cleaning.MAX_ERROR
    assert cleaned.startswith("Exit code 1\n…\n") and cleaned.endswith("ld: failed")
    assert token not in cleaned


# -- recall in each agent's shape ----------------------------------------------------------------
def _noted_failure() -> None:
    with jiyi.Memory() as memory:
        writer = memory.session(session_id="earlier")
        writer.observe_tool_result("bash", ok=False, error="ld: undefined symbol deflate")
        writer.note(**ZLIB)


@pytest.mark.parametrize(
    ("agent", "payload", "answered"),
    [
        (
            "codex",
            {
                "hook_event_name": "PostToolUse",
                "tool_name": "shell",
                "tool_input": {"command": ["bash", "-lc", "make"]},
                "tool_response": {"stdout": "", "stderr": "ld: undefined symbol deflate", "exit_code": 1},
            },
            "PostToolUse",
        ),
        (
            "gemini",
            {
                "hook_event_name": "AfterTool",
                "tool_name": "run_shell_command",
                "tool_input": {"command": "make"},
                "tool_response": {"llmContent": "", "returnDisplay": "", "error": "ld: undefined symbol deflate"},
            },
            "AfterTool",
        ),
    ],
)
def test_codex_and_gemini_get_the_recall_line_in_the_shape_they_read(
    tmp_path: Path, jiyi_home: Path, project: Path, agent: str, payload: dict[str, Any], answered: str
) -> None:
    _noted_failure()
    done = _hook(tmp_path, jiyi_home, {"session_id": SESSION, "cwd": str(project), **payload}, agent=agent)
    assert done.returncode == 0 and done.stderr == b"", done
    out = json.loads(done.stdout)  # Gemini reads stdout as JSON and nothing else
    assert list(out) == ["hookSpecificOutput"]
    assert out["hookSpecificOutput"]["hookEventName"] == answered
    line = out["hookSpecificOutput"]["additionalContext"]
    assert line.startswith("jiyi: [lr_") and line.endswith("] Link zlib with -lz — memory_read for details")
    again = _hook(tmp_path, jiyi_home, {"session_id": SESSION, "cwd": str(project), **payload}, agent=agent)
    assert again.stdout == b""  # once per record per session


# -- the quick path ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "env",
    [
        {},
        {"JIYI_SESSION_ID": "named", "JIYI_BUSY_TIMEOUT_MS": "700"},
        {"CLAUDE_CODE_SESSION_ID": "cc-1"},
        {"JIYI_HOME": "~/elsewhere"},
        {"JIYI_AUTO_RECORDS": "Off"},
        {"JIYI_AUTO_RECORDS": "yes"},
    ],
)
def test_quick_settings_agree_with_config(
    tmp_path: Path, project: Path, monkeypatch: pytest.MonkeyPatch, env: dict[str, str]
) -> None:
    from jiyi import config

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    if "JIYI_HOME" not in env:
        monkeypatch.delenv("JIYI_HOME")
    environ = dict(os.environ)
    quick = hook_quick.quick_settings(str(project), environ)
    settings = config.load(None, environ)
    expected = (str(settings.store_path), settings.session_id, min(settings.busy_timeout_ms, 2000))
    assert quick == (*expected, settings.auto_records)


def test_quick_settings_leave_settings_files_to_config(tmp_path: Path, project: Path) -> None:
    environ = dict(os.environ)
    assert hook_quick.quick_settings(str(project), environ) is not None
    (project / ".git").mkdir()
    (project / ".jiyi.toml").write_text("read_budget = 100\n")
    assert hook_quick.quick_settings(str(project / "src"), environ) is None  # the nearest .git's folder
    (project / ".jiyi.toml").unlink()
    (tmp_path / "jiyi-config").mkdir()
    (tmp_path / "jiyi-config" / "config.toml").write_text("notes = false\n")
    assert hook_quick.quick_settings(str(project), environ) is None
    environ["JIYI_BUSY_TIMEOUT_MS"] = "soon"
    assert hook_quick.quick_settings(str(project), environ) is None
    (tmp_path / "jiyi-config" / "config.toml").unlink()
    environ["JIYI_BUSY_TIMEOUT_MS"] = "700"
    assert hook_quick.quick_settings(str(project), environ) is not None
    environ["JIYI_AUTO_RECORDS"] = "maybe"
    assert hook_quick.quick_settings(str(project), environ) is None  # config.load reports it


def _session_row(jiyi_home: Path, session_id: str) -> tuple[Any, ...]:
    import sqlite3

    with sqlite3.connect(jiyi_home / "jiyi.db") as db:
        row = db.execute(
            "SELECT last_tool, last_error, last_signatures, last_command, last_checkout, outcome FROM sessions "
            "WHERE id = ?",
            (session_id,),
        ).fetchone()
    db.close()
    return tuple(row)


def test_the_quick_path_records_what_the_store_records(tmp_path: Path, jiyi_home: Path, project: Path) -> None:
    commit = git_repo(project, {"Makefile": "app: main.o\n"})  # where it failed is kept too
    failure = _event(
        "PostToolUseFailure",
        project,
        tool_name="Bash",
        tool_input={"command": "TOKEN=ghp_R4nD0mT0k3nV4lu3F0rT3st1ngAbCdEf12 make"},
        error="Exit code 2\nld: undefined symbol deflate",
    )
    with jiyi.Memory() as memory:  # the store's own way
        memory.session(session_id="by-store").observe_tool_result(
            "bash", ok=False, error=failure["error"], command=failure["tool_input"]["command"]
        )
    _hook(tmp_path, jiyi_home, {**failure, "session_id": "by-hook"})  # creates the session: the full way
    event = hook_events.parse("claude-code", {**failure, "session_id": "by-hook"})
    assert event is not None
    assert hook_quick.apply(event, dict(os.environ), recall_to=True) == (True, None)  # applied the quick way
    read = hook_events.parse("claude-code", _event("PostToolUse", project, tool_name="Read", session_id="by-hook"))
    assert read is not None and hook_quick.apply(read, dict(os.environ), recall_to=True) == (True, None)
    assert (jiyi_home / "cache").is_dir()  # the compiled patterns were kept
    assert _session_row(jiyi_home, "by-hook") == _session_row(jiyi_home, "by-store")
    assert "[REDACTED:github-token]" in str(_session_row(jiyi_home, "by-hook")[3])
    assert json.loads(_session_row(jiyi_home, "by-hook")[4]) == {"top": str(project), "commit": commit, "cwd": ""}
    # Closing the loop, the quick way too (the same command: no automatic record is queued).
    fixed = _event("PostToolUse", project, tool_name="Bash", session_id="by-hook", tool_input=failure["tool_input"])
    closing = hook_events.parse("claude-code", fixed)
    assert closing is not None and hook_quick.apply(closing, dict(os.environ), recall_to=True) == (True, None)
    with jiyi.Memory() as memory:
        memory.session(session_id="by-store").observe_tool_result("bash", ok=True, command=closing.call.command)  # type: ignore[union-attr]
    assert _session_row(jiyi_home, "by-hook") == _session_row(jiyi_home, "by-store") == (None,) * 5 + ("成功",)


def test_compiled_patterns_from_the_cache_are_the_patterns(tmp_path: Path) -> None:
    code = (
        "import sys, re; from jiyi.analysis import regex_cache; regex_cache.use(sys.argv[1]);"
        "from jiyi.analysis import signature, signature_rules, redact;"
        "a = signature.analyze(sys.argv[2]); regex_cache.save();"
        "print(repr((a.signatures, a.symbols, a.tool, redact.redact(sys.argv[2]),"
        " [(p.pattern, p.flags, p.groupindex) for p in (signature_rules.PREFIXES, signature_rules.LOCATION)])))"
    )
    text = 'Undefined symbols for architecture arm64:\n  "_deflate", referenced from:\nAKIAZ7Q3WXYV4K2LMN8P'
    cache = tmp_path / "cache"
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    runs = [
        subprocess.run([sys.executable, "-c", code, str(cache), text], capture_output=True, text=True, env=env)
        for _ in range(2)
    ]
    assert all(r.returncode == 0 for r in runs), runs
    assert len(list(cache.iterdir())) == 1  # written by the first, read by the second
    plain = subprocess.run(
        [sys.executable, "-c", code.replace("regex_cache.use", "len"), "x", text], capture_output=True, text=True
    )
    assert runs[0].stdout == runs[1].stdout == plain.stdout


def test_edits_while_a_failure_is_pending_are_kept_the_same_quick_or_full(
    tmp_path: Path, jiyi_home: Path, project: Path
) -> None:
    import sqlite3

    (project / ".git").mkdir()
    (project / "src").mkdir()
    names = [str(project / "Makefile"), "main.c", str(tmp_path / "elsewhere.h"), str(project)]
    environ = dict(os.environ)
    for session_id, quick in (("full", False), ("quick", True)):
        failure = hook_events.parse(
            "claude-code",
            {
                **_event("PostToolUseFailure", project / "src", tool_name="Bash", error="ld: undefined symbol deflate"),
                "session_id": session_id,
            },
        )
        assert failure is not None
        hook._full(failure, environ, recall_to=False)
        for name in names:
            edit = hook_events.parse(
                "claude-code",
                {
                    **_event(
                        "PostToolUse",
                        project / "src",
                        tool_name="Edit",
                        tool_input={"file_path": name},
                        tool_response={},
                    ),
                    "session_id": session_id,
                },
            )
            assert edit is not None
            if quick:
                assert hook_quick.apply(edit, environ, recall_to=False) == (True, None)
            else:
                hook._full(edit, environ, recall_to=False)
    with sqlite3.connect(jiyi_home / "jiyi.db") as db:
        kept = {
            sid: sorted(r[0] for r in db.execute("SELECT path FROM session_edits WHERE session_id = ?", (sid,)))
            for sid in ("full", "quick")
        }
    db.close()
    assert kept["quick"] == kept["full"] == sorted(["Makefile", "src/main.c", str(tmp_path / "elsewhere.h"), "."])


def test_with_a_settings_file_the_quick_path_reads_it_through_config(
    tmp_path: Path, jiyi_home: Path, project: Path
) -> None:
    (tmp_path / "jiyi-config").mkdir()
    user_file = tmp_path / "jiyi-config" / "config.toml"
    user_file.write_text("busy_timeout_ms = 800\nauto_records = false\n")
    assert _hook(tmp_path, jiyi_home, _event("SessionStart", project)).returncode == 0
    assert hook_quick.quick_settings(str(project), dict(os.environ)) is None  # not without config
    read = hook_events.parse("claude-code", _event("PostToolUse", project, tool_name="Read", tool_response={}))
    assert read is not None and hook_quick.apply(read, dict(os.environ), recall_to=True) == (True, None)
    user_file.write_text("read_budget = -3\n")  # config.load's to report: the full way
    assert hook_quick.apply(read, dict(os.environ), recall_to=True) == (False, None)


def test_the_hook_leaves_an_older_stores_upgrade_to_the_processes_nobody_waits_on(
    tmp_path: Path, jiyi_home: Path, project: Path
) -> None:
    # After a change of the terms or key-line rules a large store is brought up to date a bounded
    # while on each open (store/reindex.py); the agent waits on every hook call, so the hook does
    # not take that while: it still records the failure and recalls the note.
    import sqlite3

    from jiyi.analysis import lexical
    from jiyi.analysis.indexing import SIGNATURE_VERSION

    _noted_zlib()
    db = sqlite3.connect(jiyi_home / "jiyi.db")
    older = [("lexical_version", str(lexical.VERSION - 1)), ("signature_version", str(SIGNATURE_VERSION - 1))]
    db.executemany("INSERT OR REPLACE INTO store_meta (key, value) VALUES (?, ?)", older)
    db.commit()
    db.close()
    failure = _event("PostToolUseFailure", project, tool_name="Bash", tool_input={"command": "make"},
                     error="ld: undefined symbol deflate")  # fmt: skip
    done = _hook(tmp_path, jiyi_home, failure)
    assert done.returncode == 0, done.stderr
    assert "Link zlib with -lz" in json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    db = sqlite3.connect(jiyi_home / "jiyi.db")
    versions = dict(db.execute("SELECT key, value FROM store_meta WHERE key LIKE '%_version'").fetchall())
    db.close()
    assert (versions["lexical_version"], versions["signature_version"]) == tuple(v for _, v in older)
    with jiyi.Memory() as memory:  # the MCP server's or the CLI's open does it
        assert memory.store.lexical_state() == (lexical.VERSION, 0)
        assert memory.store.signature_state() == (SIGNATURE_VERSION, 0)

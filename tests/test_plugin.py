"""The Claude Code plugin files at the repository root: `.claude-plugin/`, `hooks/hooks.json`, `.mcp.json`.

What is checked here is the files' shape and that the exact commands they name work: the hook command
line taken from `hooks/hooks.json` is run on real-shaped Claude Code events, and the server command
from `.mcp.json` is spoken to over stdio. That Claude Code loads the files is not (it needs Claude
Code itself); docs/agents.md says which parts rest on its documented formats.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

import jiyi

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = ROOT / ".claude-plugin" / "plugin.json"
MARKETPLACE = ROOT / ".claude-plugin" / "marketplace.json"
HOOKS = ROOT / "hooks" / "hooks.json"
MCP = ROOT / ".mcp.json"
EVENTS = ("SessionStart", "PostToolUse", "PostToolUseFailure", "Stop", "SessionEnd")
TOOL_EVENTS = ("PostToolUse", "PostToolUseFailure")
HOOK_COMMAND = "jiyi hook claude-code"
SESSION = "5f0c2d8e-3b7a-4c1e-9d2f-plugin"


def _load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _handlers(event: str) -> list[dict[str, Any]]:
    return [handler for group in _load(HOOKS)["hooks"][event] for handler in group["hooks"]]


def _argv(command: str) -> list[str]:
    """A command line of the plugin files, run on this interpreter's jiyi instead of the one on PATH."""
    words = shlex.split(command)
    assert words[0] == "jiyi", command
    return [sys.executable, "-m", "jiyi", *words[1:]]


def _env(jiyi_home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["JIYI_HOME"] = str(jiyi_home)
    return env


# -- the files --------------------------------------------------------------------------------
@pytest.mark.parametrize("path", [PLUGIN, MARKETPLACE, HOOKS, MCP], ids=lambda p: str(p.relative_to(ROOT)))
def test_the_plugin_files_are_json_objects(path: Path) -> None:
    assert isinstance(_load(path), dict)


def test_the_plugin_manifest_names_jiyi_and_the_projects_version() -> None:
    manifest = _load(PLUGIN)
    assert manifest["name"] == "jiyi"
    assert manifest["version"] == jiyi.__version__ == "0.1.0"
    assert manifest["description"].strip()
    # hooks/hooks.json and .mcp.json are the default places and are loaded without being named;
    # naming ./hooks/hooks.json again makes Claude Code report a duplicate hooks file.
    assert manifest.get("hooks") not in ("./hooks/hooks.json", "hooks/hooks.json")


def test_the_marketplace_lists_the_plugin_at_the_repository_root() -> None:
    marketplace = _load(MARKETPLACE)
    assert marketplace["name"] and marketplace["owner"]["name"]
    entries = [entry for entry in marketplace["plugins"] if entry["name"] == "jiyi"]
    assert len(entries) == 1
    assert entries[0]["source"] == "./"  # "." is rejected; relative sources start with ./
    assert entries[0].get("version", "0.1.0") == _load(PLUGIN)["version"]


def test_every_hook_runs_jiyi_hook_claude_code_for_the_five_events() -> None:
    hooks = _load(HOOKS)["hooks"]
    assert set(hooks) == set(EVENTS)
    for event in EVENTS:
        handlers = _handlers(event)
        assert handlers, event
        for handler in handlers:
            assert handler["type"] == "command"
            assert handler["command"] == HOOK_COMMAND
            assert 0 < handler["timeout"] <= 10  # seconds: a hook must never stall the agent
    for event in TOOL_EVENTS:  # every tool, not only Bash
        assert [group.get("matcher") for group in hooks[event]] == ["*"]


def test_the_mcp_file_runs_jiyi_mcp() -> None:
    servers = _load(MCP)["mcpServers"]
    assert set(servers) == {"jiyi"}
    assert (servers["jiyi"]["command"], servers["jiyi"]["args"]) == ("jiyi", ["mcp"])


# -- the commands they name -------------------------------------------------------------------
def _event(name: str, project: Path, **fields: Any) -> dict[str, Any]:
    return {
        "session_id": SESSION,
        "transcript_path": str(project / "transcript.jsonl"),
        "cwd": str(project),
        "permission_mode": "default",
        "hook_event_name": name,
        **fields,
    }


def _run_hook(event: dict[str, Any], jiyi_home: Path, cwd: Path) -> tuple[subprocess.CompletedProcess[bytes], float]:
    (handler,) = _handlers(event["hook_event_name"])
    started = time.monotonic()
    done = subprocess.run(
        _argv(handler["command"]),
        input=json.dumps(event).encode(),
        capture_output=True,
        env=_env(jiyi_home),
        cwd=cwd,
        timeout=60,
    )
    return done, time.monotonic() - started


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "zlib-port"
    folder.mkdir()
    return folder


def test_a_claude_code_failure_through_the_plugins_hook_command_exits_0_and_is_recorded(
    jiyi_home: Path, project: Path
) -> None:
    # The fields and values Claude Code 2.1.197 sent for a failed Bash call (recorded from a real
    # session; ids and paths changed).
    failure = _event(
        "PostToolUseFailure",
        project,
        prompt_id="ffab8044-e925-4971-9d8a-45fc287e2013",
        effort={"level": "high"},
        tool_name="Bash",
        tool_input={"command": "make", "description": "Build the port"},
        tool_use_id="toolu_713063eae27f48bf9faf",
        error="Exit code 2\ncc main.o -o app\nld: undefined symbol deflate\nmake: *** [app] Error 1",
        is_interrupt=False,
        duration_ms=51,
    )
    done, _ = _run_hook(failure, jiyi_home, project)
    assert done.returncode == 0, done.stderr
    assert done.stdout == b""
    assert done.stderr == b"", done.stderr  # nothing went wrong on the way

    with jiyi.Memory() as memory:
        state = memory.store.session(SESSION)
    assert state is not None and state.project == "zlib-port"
    assert state.last_tool == "bash"
    assert state.last_error is not None and "ld: undefined symbol deflate" in state.last_error


def test_a_whole_session_through_the_plugins_hook_commands(jiyi_home: Path, project: Path) -> None:
    events = [
        _event("SessionStart", project, source="startup"),
        _event(
            "PostToolUse",
            project,
            tool_name="Read",
            tool_input={"file_path": str(project / "Makefile")},
            tool_response={"type": "text", "file": {"filePath": str(project / "Makefile"), "content": "all: app"}},
            tool_use_id="toolu_02",
        ),
        _event(
            "PostToolUseFailure",
            project,
            tool_name="Bash",
            tool_input={"command": "make"},
            tool_use_id="toolu_03",
            error="ld: undefined symbol deflate",
            is_interrupt=False,
        ),
        _event("Stop", project, stop_hook_active=False, last_assistant_message="done", background_tasks=[]),
        _event("SessionEnd", project, reason="other"),
    ]
    assert [event["hook_event_name"] for event in events] == list(EVENTS)
    for event in events:
        done, seconds = _run_hook(event, jiyi_home, project)
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b""), (event["hook_event_name"], done.stderr)
        # Well inside the timeout the plugin gives the hook.
        assert seconds < _handlers(event["hook_event_name"])[0]["timeout"], (event["hook_event_name"], seconds)

    with jiyi.Memory() as memory:
        state = memory.store.session(SESSION)
    assert state is not None
    assert (state.last_tool, state.last_error) == ("bash", "ld: undefined symbol deflate")


def test_a_broken_event_through_the_plugins_hook_command_still_exits_0(jiyi_home: Path, project: Path) -> None:
    (handler,) = _handlers("PostToolUseFailure")
    done = subprocess.run(
        _argv(handler["command"]),
        input=b"{not json",
        capture_output=True,
        env=_env(jiyi_home),
        cwd=project,
        timeout=60,
    )
    assert (done.returncode, done.stdout) == (0, b"")
    assert b"jiyi hook:" in done.stderr


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_the_mcp_files_server_command_serves_the_three_tools(tmp_path: Path, jiyi_home: Path) -> None:
    server = _load(MCP)["mcpServers"]["jiyi"]
    argv = _argv(shlex.join([server["command"], *server["args"]]))
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=_env(jiyi_home), cwd=tmp_path)

    async def tools() -> list[str]:
        with anyio.fail_after(150):
            async with Client(params, read_timeout_seconds=60) as client:
                return [tool.name for tool in (await client.list_tools()).tools]

    assert anyio.run(tools) == ["memory_search", "memory_read", "memory_note"]

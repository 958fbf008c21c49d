"""Only true fixes become memories (docs/spec.md §5): real `jiyi hook claude-code` processes fed the
sessions agents have — looking around after a failure, installing, re-running, a flaky pass."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

import jiyi

from ..helpers import git_repo, run_hook, settled

YAML = (
    "Exit code 1\n==================================== ERRORS ====================================\n"
    "E   ModuleNotFoundError: No module named 'yaml'\n=========================== short test summary info"
)
GO = (
    "Exit code 1\nmain.go:5:2: no required module provides package github.com/gorilla/mux; to add it:\n"
    "\tgo get github.com/gorilla/mux"
)
SESSION = "5f0e6a2c-true-fixes"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "api"
    git_repo(folder, {"tests/test_api.py": "import yaml\n", "main.go": "package main\n"})
    return folder


def _bash(project: Path, command: str, error: str | None = None) -> dict[str, Any]:
    event: dict[str, Any] = {
        "session_id": SESSION,
        "cwd": str(project),
        "tool_name": "Bash",
        "tool_input": {"command": command},
    }
    if error is not None:
        return {**event, "hook_event_name": "PostToolUseFailure", "error": error}
    return {**event, "hook_event_name": "PostToolUse", "tool_response": {"stdout": "", "stderr": ""}}


def _session(tmp_path: Path, jiyi_home: Path, project: Path, *events: dict[str, Any]) -> list[Any]:
    start = {"session_id": SESSION, "cwd": str(project), "hook_event_name": "SessionStart"}
    for event in (start, *events):
        done = run_hook(tmp_path, jiyi_home, event)
        assert done.returncode == 0 and not done.stderr, done.stderr
    settled(jiyi_home)
    with jiyi.Memory() as memory:
        return memory.store.list_records()


def _flaky(jiyi_home: Path) -> int:
    with sqlite3.connect(jiyi_home / "jiyi.db") as db:
        count = int(db.execute("SELECT coalesce(sum(count), 0) FROM flaky_failures").fetchone()[0])
    db.close()
    return count


@pytest.mark.slow
def test_looking_around_after_a_failure_records_nothing(tmp_path: Path, jiyi_home: Path, project: Path) -> None:
    records = _session(
        tmp_path, jiyi_home, project,
        _bash(project, "pytest tests/test_api.py", YAML),
        _bash(project, "ls tests"), _bash(project, "cat tests/test_api.py"), _bash(project, "git status"),
        _bash(project, "pip show pyyaml"), _bash(project, "grep -rn yaml . | head"),
        _bash(project, "grep -rn nothing_here src", "Exit code 1"),  # a failed look keeps the failure
        _bash(project, "npm run lint"),  # an unrelated success
    )  # fmt: skip
    assert records == []
    with jiyi.Memory() as memory:
        state = memory.store.session(SESSION)
    assert state is not None and state.last_command == "pytest tests/test_api.py"


@pytest.mark.slow
def test_an_install_then_the_passing_re_run_is_the_fix(tmp_path: Path, jiyi_home: Path, project: Path) -> None:
    (record,) = _session(
        tmp_path, jiyi_home, project,
        _bash(project, "pytest tests/test_api.py", YAML),
        _bash(project, "pip show pyyaml"), _bash(project, "ls tests"),
        _bash(project, "pip install pyyaml"),
        _bash(project, "cat tests/test_api.py"),
        _bash(project, "pytest tests/test_api.py"),
    )  # fmt: skip
    assert record.origin == "local_auto"
    assert record.title == "ModuleNotFoundError: No module named 'yaml' — fixed by pip install pyyaml"
    assert record.fix is not None and record.fix.command == "pip install pyyaml"
    assert "ls" not in record.where and "pip show" not in record.learned
    assert record.reproduction is not None and record.reproduction.check is None  # the test runs again


@pytest.mark.slow
def test_the_same_command_passing_again_is_flaky_not_fixed(tmp_path: Path, jiyi_home: Path, project: Path) -> None:
    records = _session(
        tmp_path, jiyi_home, project,
        _bash(project, "pytest tests/test_api.py", YAML),
        _bash(project, "git log --oneline -3"),
        _bash(project, "pytest tests/test_api.py"),
    )  # fmt: skip
    assert records == []
    assert _flaky(jiyi_home) >= 1


@pytest.mark.slow
def test_a_go_failure_is_titled_by_its_error_not_the_exit_code(tmp_path: Path, jiyi_home: Path, project: Path) -> None:
    (record,) = _session(
        tmp_path, jiyi_home, project,
        _bash(project, "go build ./...", GO),
        _bash(project, "go env GOPATH"),
        _bash(project, "go get github.com/gorilla/mux"),
        _bash(project, "go build ./..."),
    )  # fmt: skip
    assert record.title.startswith("main.go:5:2: no required module provides package github.com/gorilla/mux")
    assert record.title.endswith("fixed by go get github.com/gorilla/mux")


@pytest.mark.slow
def test_an_edit_then_the_re_run_names_the_file(tmp_path: Path, jiyi_home: Path, project: Path) -> None:
    edit = {
        "session_id": SESSION, "cwd": str(project), "hook_event_name": "PostToolUse", "tool_name": "Edit",
        "tool_input": {"file_path": str(project / "tests/test_api.py"), "old_string": "a", "new_string": "b"},
        "tool_response": {},
    }  # fmt: skip
    read = {**edit, "tool_name": "Read", "tool_input": {"file_path": str(project / "tests/test_api.py")}}
    (record,) = _session(
        tmp_path, jiyi_home, project,
        _bash(project, "pytest tests/test_api.py", YAML), read, edit,
        _bash(project, "pytest tests/test_api.py -q"),
    )  # fmt: skip
    assert "tests/test_api.py" in record.where
    assert record.title.startswith("ModuleNotFoundError: No module named 'yaml' — fixed by ")

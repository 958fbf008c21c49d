"""Automatic records (docs/spec.md §5): a failure fixed with no note, when the fix is evident.

The main replays run real ``jiyi hook claude-code`` processes, as Claude Code does; the rest use
the Python API (``Session.observe_tool_result``, what ``jiyi run`` does) with the same store.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import jiyi
from jiyi.capture import auto_record
from jiyi.capture import events as hook_events
from jiyi.records import Fix, Record, Reproduction
from jiyi.team.verify.replay import replay

from ..helpers import CHECK_PY, MYLIB_ERROR, anywhere, git, git_repo, note, run_hook, settled

ERROR = "Exit code 1\nld: undefined symbol deflate"
FAILED = "cc -o app main.o"
FIXED = "cc -o app main.o -lz"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "zlib-port"
    folder.mkdir()
    monkeypatch.chdir(folder)
    return folder


def _hook(tmp_path: Path, jiyi_home: Path, payload: dict[str, Any], **extra: str) -> subprocess.CompletedProcess[bytes]:
    done = run_hook(tmp_path, jiyi_home, payload, **extra)
    assert (done.returncode, done.stderr) == (0, b"")
    settled(jiyi_home)  # a loop-closing success's record is written after the hook returned
    return done


def _event(name: str, project: Path, session_id: str, **fields: Any) -> dict[str, Any]:
    return {
        "session_id": session_id,
        "transcript_path": "/tmp/transcript.jsonl",
        "cwd": str(project),
        "hook_event_name": name,
        **fields,
    }


def _failure(project: Path, session_id: str, command: str = FAILED) -> dict[str, Any]:
    return _event(
        "PostToolUseFailure",
        project,
        session_id,
        tool_name="Bash",
        tool_input={"command": command},
        tool_use_id="toolu_fail",
        error=ERROR,
        is_interrupt=False,
    )


def _success(project: Path, session_id: str, command: str = FIXED) -> dict[str, Any]:
    return _event(
        "PostToolUse",
        project,
        session_id,
        tool_name="Bash",
        tool_input={"command": command},
        tool_use_id="toolu_ok",
        tool_response={"stdout": "", "stderr": "", "exit_code": 0, "interrupted": False, "isImage": False},
    )


def _edit(project: Path, session_id: str, name: str = "Makefile") -> dict[str, Any]:
    return _event(
        "PostToolUse",
        project,
        session_id,
        tool_name="Edit",
        tool_input={"file_path": str(project / name), "old_string": "LDLIBS =", "new_string": "LDLIBS = -lz"},
        tool_use_id="toolu_edit",
        tool_response={"filePath": str(project / name), "success": True},
    )


def _records() -> list[Record]:
    with jiyi.Memory() as memory:
        return memory.store.list_records()


def _only() -> Record:
    records = _records()
    assert len(records) == 1, [r.title for r in records]
    return records[0]


def test_a_failure_fixed_by_a_new_command_becomes_one_local_auto_bugfix(
    tmp_path: Path, jiyi_home: Path, project: Path
) -> None:
    _hook(tmp_path, jiyi_home, _failure(project, "first"))
    assert _hook(tmp_path, jiyi_home, _success(project, "first")).stdout == b""

    record = _only()
    assert (record.origin, record.type, record.scope, record.outcome) == ("local_auto", "bugfix", "project", "成功")
    assert record.what == ERROR
    assert record.fix is not None and (record.fix.kind, record.fix.command) == ("command", FIXED)
    assert record.title == f"ld: undefined symbol deflate — fixed by {FIXED}"
    assert "automatically" in record.why
    assert FIXED in record.where
    assert FAILED in record.learned and FIXED in record.learned
    assert record.tool_name == "bash" and record.session_id == "first"
    assert record.reproduction is None  # zlib-port is no git checkout: nowhere to replay it
    assert record.topic_key is not None and record.topic_key.startswith("auto/") and len(record.topic_key) == 17
    failure = jiyi.analysis.signature.analyze(ERROR).signatures
    assert failure and set(failure) <= set(record.signatures)
    with jiyi.Memory() as memory:
        state = memory.store.session("first")
        assert state is not None and (state.last_error, state.outcome) == (None, "成功")
        text = memory.session(session_id="another").read_text(record.id)
    assert text.splitlines()[1].startswith("source: 本机自动确认 · zlib-port · ")
    assert "记录时会话结局：成功" in text.splitlines()[1]
    assert f"现象（What）：{ERROR}" in text
    assert f"修法（Fix，命令）：{FIXED}" in text

    # The same failure fixed the same way in a second session: one more source, no duplicate.
    recalled = _hook(tmp_path, jiyi_home, _failure(project, "second"))
    assert json.loads(recalled.stdout)["hookSpecificOutput"]["additionalContext"].startswith(f"jiyi: [{record.id}]")
    _hook(tmp_path, jiyi_home, _success(project, "second"))
    again = _only()
    assert (again.hex, again.sources, again.revision) == (record.hex, 2, 1)

    # ... and again in either session: that session is counted already.
    for session_id in ("first", "second"):
        _hook(tmp_path, jiyi_home, _failure(project, session_id))
        _hook(tmp_path, jiyi_home, _success(project, session_id))
    assert _only().sources == 2


@pytest.mark.parametrize("way", ["full", "quick"])
def test_an_automatic_record_in_git_replays_at_the_commit_it_failed_at(
    tmp_path: Path, jiyi_home: Path, way: str
) -> None:
    repo = tmp_path / "proj"
    failed_at = git_repo(repo, {"check.py": CHECK_PY})
    session = f"in-git-{way}"
    if way == "quick":  # the session exists: the failure is kept by the hook's quick path
        _hook(tmp_path, jiyi_home, _event("PostToolUse", repo, session, tool_name="Read", tool_response={}))
    failure = _failure(repo, session, "python3 check.py")
    _hook(tmp_path, jiyi_home, {**failure, "error": f"Exit code 1\nTraceback …\n{MYLIB_ERROR}"})
    # The fix is committed before the success: HEAD moves on, but the failure happened at failed_at.
    (repo / "mylib.py").write_text("VALUE = 1\n", encoding="utf-8")
    git(repo, "add", "mylib.py")
    git(repo, "commit", "-q", "-m", "add mylib")
    fixed = "printf 'VALUE = 1\\n' > mylib.py && python3 check.py"
    _hook(tmp_path, jiyi_home, _success(repo, session, fixed))

    record = _only()
    # The command that passed runs the failing one: it is the check, run once as the fix.
    assert record.reproduction == Reproduction("python3 check.py", str(repo), failed_at, "", check=fixed)
    assert record.fix == Fix("command", command=fixed)
    result = replay(record, workdir=tmp_path, **anywhere())
    assert (result.passed, result.stage) == (True, "passed"), result.detail


def test_an_automatic_record_of_a_changed_command_replays_passed(tmp_path: Path, jiyi_home: Path) -> None:
    repo = tmp_path / "proj"
    failed_at = git_repo(repo, {"check.py": CHECK_PY, "stub/mylib.py": "VALUE = 1\n"})
    failure = _failure(repo, "flagged", "python3 check.py")
    _hook(tmp_path, jiyi_home, {**failure, "error": f"Exit code 1\nTraceback …\n{MYLIB_ERROR}"})
    changed = "PYTHONPATH=stub python3 check.py"  # nothing in the checkout changes: the command does
    _hook(tmp_path, jiyi_home, _success(repo, "flagged", changed))

    record = _only()
    assert record.fix == Fix("command", command=changed)
    assert record.reproduction == Reproduction("python3 check.py", str(repo), failed_at, "", check=changed)
    result = replay(record, workdir=tmp_path, **anywhere())
    assert (result.passed, result.stage) == (True, "passed"), result.detail
    assert result.detail.endswith(f"(checked: {changed})")
    # Without the check (a record written before it was kept) the failing command runs again.
    unchecked = replace(record, reproduction=replace(record.reproduction, check=None))
    assert replay(unchecked, workdir=tmp_path, **anywhere()).stage == "still-failing"


def test_a_repair_command_leaves_the_failing_command_as_the_check(tmp_path: Path, jiyi_home: Path) -> None:
    repo = tmp_path / "proj"
    git_repo(repo, {"check.py": CHECK_PY})
    with jiyi.Memory(cwd=repo) as memory:
        agent = memory.session(session_id="repair")
        agent.observe_tool_result("Bash", ok=False, error=MYLIB_ERROR, command="python3 check.py")
        agent.observe_tool_result("Bash", ok=True, command="printf 'VALUE = 1\\n' > mylib.py")
        assert memory.store.list_records() == []  # a step of the fix: the failing command has not passed yet
        agent.observe_tool_result("Bash", ok=True, command="python3 check.py")
        (record,) = memory.store.list_records()
    assert record.fix is not None and record.fix.command == "printf 'VALUE = 1\\n' > mylib.py"
    assert record.reproduction is not None and record.reproduction.check is None
    assert replay(record, workdir=tmp_path, **anywhere()).passed


def test_jiyi_run_in_a_subfolder_of_a_checkout_keeps_its_folder(tmp_path: Path, jiyi_home: Path) -> None:
    repo = tmp_path / "proj"
    commit = git_repo(repo, {"check.py": CHECK_PY, "sub/README": "x\n"})
    git(repo, "remote", "add", "origin", "https://git.example.com/team/proj.git")
    with jiyi.Memory(cwd=repo / "sub") as memory:
        agent = memory.session(session_id="run")
        agent.observe_tool_result("Bash", ok=False, error=MYLIB_ERROR, command="python3 ../check.py")
        agent.observe_tool_result("Bash", ok=True, command="touch ../mylib.py && python3 ../check.py")
        (record,) = memory.store.list_records()
    assert record.reproduction == Reproduction(
        "python3 ../check.py",
        "https://git.example.com/team/proj.git",
        commit,
        "sub",
        check="touch ../mylib.py && python3 ../check.py",
    )


def test_an_edit_between_failure_and_success_is_named_in_where(tmp_path: Path, jiyi_home: Path, project: Path) -> None:
    _hook(tmp_path, jiyi_home, _edit(project, "edits", "README"))  # before the failure: not part of the fix
    _hook(tmp_path, jiyi_home, _failure(project, "edits", "make"))
    _hook(tmp_path, jiyi_home, _edit(project, "edits"))
    _hook(tmp_path, jiyi_home, _success(project, "edits", "make"))

    record = _only()
    assert record.origin == "local_auto"
    assert record.where == "command: make; files: Makefile"
    assert "README" not in f"{record.where} {record.learned} {record.title}"
    assert record.title == "ld: undefined symbol deflate — fixed by editing Makefile"
    assert "Makefile" in record.learned
    assert record.fix is None  # what the edit was is not known: no fix to hand over


def test_the_same_command_succeeding_with_nothing_edited_writes_no_record(
    tmp_path: Path, jiyi_home: Path, project: Path
) -> None:
    _hook(tmp_path, jiyi_home, _failure(project, "flaky"))
    _hook(tmp_path, jiyi_home, _success(project, "flaky", f"  {FAILED} "))  # same command, other spacing
    assert _records() == []
    with jiyi.Memory() as memory:
        state = memory.store.session("flaky")
        assert state is not None and (state.last_error, state.outcome) == (None, "成功")


def test_jiyi_auto_records_false_writes_no_record(tmp_path: Path, jiyi_home: Path, project: Path) -> None:
    _hook(tmp_path, jiyi_home, _failure(project, "off"), JIYI_AUTO_RECORDS="false")
    _hook(tmp_path, jiyi_home, _edit(project, "off"), JIYI_AUTO_RECORDS="false")
    _hook(tmp_path, jiyi_home, _success(project, "off"), JIYI_AUTO_RECORDS="false")
    assert _records() == []


def test_the_project_file_turns_automatic_records_off(tmp_path: Path, jiyi_home: Path, project: Path) -> None:
    (project / ".git").mkdir()
    (project / ".jiyi.toml").write_text("auto_records = false\n", encoding="utf-8")
    _hook(tmp_path, jiyi_home, _failure(project, "off"))
    _hook(tmp_path, jiyi_home, _success(project, "off"))
    assert _records() == []


def test_a_note_written_after_the_failure_is_confirmed_instead(tmp_path: Path, jiyi_home: Path, project: Path) -> None:
    _hook(tmp_path, jiyi_home, _failure(project, "noted"))
    with jiyi.Memory() as memory:
        written = memory.session(session_id="noted").note(**note(what="ld: undefined symbol deflate")).record
    assert written.outcome == "失败"  # the session was failing when the note was written
    _hook(tmp_path, jiyi_home, _success(project, "noted"))

    record = _only()
    assert (record.hex, record.origin) == (written.hex, "local_auto")


def test_a_different_fix_of_the_same_failure_is_a_new_revision(jiyi_home: Path, project: Path) -> None:
    with jiyi.Memory() as memory:
        first = memory.session(session_id="one")
        first.observe_tool_result("Bash", ok=False, error=ERROR, command=FAILED)
        first.observe_tool_result("Bash", ok=True, command=FIXED)
        other = memory.session(session_id="two")
        other.observe_tool_result("Bash", ok=False, error=ERROR, command=FAILED)
        other.observe_tool_result("Bash", ok=True, command="cc -o app main.o /usr/lib/libz.a")
        records = memory.store.list_records()
        assert len(records) == 1
        record = records[0]
        assert (record.revision, record.sources, record.origin) == (2, 2, "local_auto")
        assert record.fix is not None and record.fix.command == "cc -o app main.o /usr/lib/libz.a"
        changes = [rev.change for rev in memory.store.revisions(record.hex)]
    assert changes[0] == "created" and "fix" in changes[1]


def test_commands_and_files_are_redacted(jiyi_home: Path, project: Path) -> None:
    token = "ghp_" + "a1B2c3D4e5" * 3 + "f6G7h8"
    with jiyi.Memory() as memory:
        agent = memory.session(session_id="secret")
        agent.observe_tool_result("Bash", ok=False, error=ERROR, command=f"GITHUB_TOKEN={token} cc -o app main.o")
        agent.observe_tool_result("Bash", ok=True, command=f"curl -o lib.tgz -H 'token: {token}' x")
        agent.observe_tool_result("Bash", ok=True, command=f"GITHUB_TOKEN={token} cc -o app main.o -lz")
        record = memory.store.list_records()[0]
    stored = json.dumps([record.title, record.where, record.learned, record.fix and record.fix.command])
    assert token not in stored
    assert "cc -o app main.o -lz" in stored


def test_jiyi_run_records_its_command_and_closes_the_loop(
    tmp_path: Path, jiyi_home: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {**os.environ, "JIYI_SESSION_ID": "run-session"}
    (project / "link.py").write_text(
        "import os, sys\nif '--lz' not in sys.argv: sys.exit('ld: undefined symbol deflate')\n", encoding="utf-8"
    )
    failing = [sys.executable, "link.py"]
    passing = [sys.executable, "link.py", "--lz"]
    for command, code in ((failing, 1), (passing, 0)):
        done = subprocess.run(
            [sys.executable, "-m", "jiyi", "run", "--", *command], capture_output=True, env=env, cwd=project, timeout=60
        )
        assert done.returncode == code, done.stderr
    record = _only()
    assert record.origin == "local_auto"
    import shlex

    assert record.fix is not None and record.fix.command == shlex.join(passing)
    assert shlex.join(failing) in record.learned


def test_a_title_is_cut_to_160_characters(jiyi_home: Path, project: Path) -> None:
    long_command = "cc " + " ".join(f"-I/very/long/include/path/{i}" for i in range(40))
    with jiyi.Memory() as memory:
        agent = memory.session(session_id="long")
        agent.observe_tool_result("Bash", ok=False, error="x" * 500 + "\nld: undefined symbol deflate", command="cc")
        agent.observe_tool_result("Bash", ok=True, command=long_command)
        record = memory.store.list_records()[0]
    assert len(record.title) <= auto_record.TITLE_MAX
    assert record.title.endswith("…")


def test_writing_the_record_keeps_the_hook_light(tmp_path: Path, jiyi_home: Path, project: Path) -> None:
    _hook(tmp_path, jiyi_home, _failure(project, "light"))
    done = _hook_profiled(tmp_path, jiyi_home, _success(project, "light"))
    imported = {line.split("|")[-1].strip() for line in done.splitlines() if "|" in line}
    assert not {name.split(".")[0] for name in imported} & {"click", "rich", "mcp", "pydantic"}
    assert (
        not {"jiyi.ranking", "jiyi.query", "jiyi.shapes", "jiyi.tools.formats", "jiyi.session", "jiyi.memory"}
        & imported
    )
    # The record is the detached finisher's work: the hook itself neither builds nor stores it.
    assert (
        not {"jiyi.capture.auto_record", "jiyi.writing", "jiyi.analysis.signature", "jiyi.store.sqlite.store"}
        & imported
    )
    assert "jiyi.capture.finisher" in imported
    settled(jiyi_home)
    assert _only().origin == "local_auto"


def _hook_profiled(tmp_path: Path, jiyi_home: Path, payload: dict[str, Any]) -> str:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "JIYI_HOME": str(jiyi_home),
        "JIYI_CONFIG_DIR": str(tmp_path / "jiyi-config"),
        "PYTHONPROFILEIMPORTTIME": "1",
    }
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    done = subprocess.run(
        [sys.executable, "-m", "jiyi", "hook", "claude-code"],
        input=json.dumps(payload).encode(),
        capture_output=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 0
    return done.stderr.decode()


# -- parsing, in-process -------------------------------------------------------------------
def test_parse_keeps_the_command_and_the_files_edited() -> None:
    bash = hook_events.parse("claude-code", {"hook_event_name": "PostToolUseFailure", "tool_name": "Bash",
                                      "tool_input": {"command": FAILED}, "error": ERROR})  # fmt: skip
    assert bash is not None and bash.call is not None and bash.call.command == FAILED
    write = hook_events.parse(
        "claude-code",
        {"hook_event_name": "PostToolUse", "tool_name": "Write", "tool_input": {"file_path": "/p/a.c"}},
    )
    assert write is not None and write.call is not None and write.call.edited == ("/p/a.c",)
    notebook = hook_events.parse(
        "claude-code",
        {"hook_event_name": "PostToolUse", "tool_name": "NotebookEdit", "tool_input": {"notebook_path": "/p/n.ipynb"}},
    )
    assert notebook is not None and notebook.call is not None and notebook.call.edited == ("/p/n.ipynb",)
    patch = "*** Begin Patch\n*** Update File: src/a.c\n@@\n-x\n+y\n*** Add File: src/b.h\n+z\n*** End Patch\n"
    codex = hook_events.parse(
        "codex",
        {"hook_event_name": "PostToolUse", "tool_name": "apply_patch", "tool_input": {"input": patch}},
    )
    assert codex is not None and codex.call is not None and codex.call.edited == ("src/a.c", "src/b.h")
    argv = hook_events.parse(
        "codex",
        {
            "hook_event_name": "PostToolUse",
            "tool_name": "exec_command",
            "tool_input": {"command": ["bash", "-lc", FIXED]},
            "tool_response": {"exit_code": 0},
        },
    )
    assert argv is not None and argv.call is not None and (argv.call.tool, argv.call.command) == ("bash", FIXED)
    failed_edit = hook_events.parse(
        "claude-code",
        {"hook_event_name": "PostToolUseFailure", "tool_name": "Edit", "tool_input": {"file_path": "/p/a.c"},
         "error": "String to replace not found"},
    )  # fmt: skip
    assert failed_edit is not None and failed_edit.call is not None and failed_edit.call.edited == ()


def test_the_topic_comes_from_the_first_signature() -> None:
    assert auto_record.topic_key(("sha256:abc", "sha256:def"), "x") == auto_record.topic_key(("sha256:abc",), "y")
    assert auto_record.topic_key((), "a  b") == auto_record.topic_key((), "a b")


def test_jiyi_run_sees_a_fix_made_by_hand_between_the_failure_and_the_re_run(tmp_path: Path, jiyi_home: Path) -> None:
    repo = tmp_path / "proj"
    git_repo(repo, {"check.py": CHECK_PY, "notes.txt": "x\n"})
    (repo / "notes.txt").write_text("changed before the failure\n", encoding="utf-8")  # not part of the fix
    env = {**os.environ, "JIYI_SESSION_ID": "by-hand"}
    check = [sys.executable, "check.py"]

    def run() -> int:
        done = subprocess.run(
            [sys.executable, "-m", "jiyi", "run", "--", *check], capture_output=True, env=env, cwd=repo, timeout=60
        )
        return done.returncode

    assert run() != 0
    (repo / "mylib.py").write_text("VALUE = 1\n", encoding="utf-8")  # the fix, typed in another shell
    assert run() == 0
    record = _only()
    assert "files: mylib.py" in record.where and "notes.txt" not in record.where


def test_a_title_holds_the_error_of_a_long_path_and_skips_banners(jiyi_home: Path, project: Path) -> None:
    java = (
        "Exit code 1\n[INFO] BUILD FAILURE\n[ERROR] /var/lib/jenkins/workspace/app-5/src/main/java/uk/example/app/"
        "App.java:[12,5] cannot find symbol\n[ERROR]   symbol:   class Plugin"
    )
    npm = "Exit code 1\nnpm ERR! Linux 3.16.0-4-amd64\nnpm ERR! node v7.4.0\n\nnpm ERR! missing script: build\n"
    assert auto_record.key_of(npm) == "npm ERR! missing script: build"
    with jiyi.Memory() as memory:
        agent = memory.session(session_id="java")
        agent.observe_tool_result("Bash", ok=False, error=java, command="mvn -q package")
        agent.observe_tool_result("Bash", ok=True, command="mvn -q -U package")
        (record,) = memory.store.list_records()
    assert record.title.startswith("[ERROR] App.java:[12,5] cannot find symbol — fixed by mvn -q -U package")
    assert "/var/lib/jenkins/workspace/app-5/src/main/java" in record.what  # the record keeps it all

"""`jiyi run -- <command>`: the command runs unchanged and its failure becomes the last failure."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import jiyi


def _run(tmp_path: Path, jiyi_home: Path, *command: str) -> subprocess.CompletedProcess[bytes]:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "JIYI_HOME": str(jiyi_home),
        "JIYI_CONFIG_DIR": str(tmp_path / "jiyi-config"),
        "JIYI_SESSION_ID": "run-session",
    }
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return subprocess.run(
        [sys.executable, "-m", "jiyi", "run", "--", *command],
        capture_output=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )


def _state() -> object:
    with jiyi.Memory() as memory:
        return memory.store.session("run-session")


def test_a_failing_command_passes_through_and_is_recorded(tmp_path: Path, jiyi_home: Path) -> None:
    done = _run(tmp_path, jiyi_home, "sh", "-c", "echo out; echo err >&2; exit 3")
    assert done.returncode == 3
    assert done.stdout == b"out\n"
    assert done.stderr == b"err\n"
    with jiyi.Memory() as memory:
        state = memory.store.session("run-session")
    assert state is not None
    assert state.last_tool == "bash"
    assert state.last_error is not None and "out" in state.last_error and "err" in state.last_error


def test_a_passing_command_records_no_failure(tmp_path: Path, jiyi_home: Path) -> None:
    done = _run(tmp_path, jiyi_home, "sh", "-c", "printf 'a\\0b'; echo -n x >&2")
    assert (done.returncode, done.stdout, done.stderr) == (0, b"a\0b", b"x")
    with jiyi.Memory() as memory:
        state = memory.store.session("run-session")
    assert state is None or state.last_error is None


def test_only_the_tail_of_a_long_output_is_kept(tmp_path: Path, jiyi_home: Path) -> None:
    script = "for i in $(seq 1 3000); do echo line $i; done; echo 'ld: undefined symbol deflate' >&2; exit 1"
    done = _run(tmp_path, jiyi_home, "sh", "-c", script)
    assert done.returncode == 1 and done.stdout.count(b"\n") == 3000
    with jiyi.Memory() as memory:
        state = memory.store.session("run-session")
    assert state is not None and state.last_error is not None
    assert len(state.last_error) <= 4000
    assert state.last_error.rstrip().endswith("ld: undefined symbol deflate")
    assert "line 1\n" not in state.last_error


def test_a_command_that_cannot_start_exits_127(tmp_path: Path, jiyi_home: Path) -> None:
    done = _run(tmp_path, jiyi_home, "definitely-not-a-command-jiyi")
    assert done.returncode == 127
    assert b"definitely-not-a-command-jiyi" in done.stderr
    with jiyi.Memory() as memory:
        state = memory.store.session("run-session")
    assert state is not None and state.last_tool == "bash"

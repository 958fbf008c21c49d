"""Shared builders for tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

# The nine ranking signals in the order docs/spec.md §4 fixes for every matched line.
SIGNALS = [
    "error_signature",
    "code_symbol",
    "lexical",
    "same_project",
    "environment",
    "recency",
    "tool_name",
    "trust",
    "evidence",
]

ZLIB = {
    "title": "Link zlib with -lz",
    "type": "bugfix",
    "scope": "project",
    "content": {
        "what": "ld: undefined symbol deflate",
        "why": "zlib was not on the link line",
        "where": "Makefile LDLIBS",
        "learned": "add -lz after the object files",
    },
}

YAML = {
    "title": "Install PyYAML for the yaml module",
    "type": "bugfix",
    "scope": "global",
    "content": {
        "what": "ModuleNotFoundError: No module named 'yaml'",
        "why": "PyYAML is not installed in this environment",
        "where": "requirements.txt",
        "learned": "pip install pyyaml (the import name differs from the package name)",
    },
}


def note(**changes: Any) -> dict[str, Any]:
    base = dict(ZLIB)
    base["content"] = dict(ZLIB["content"])
    for key, value in changes.items():
        if key in base["content"]:
            base["content"][key] = value
        else:
            base[key] = value
    return base


def hook_env(tmp_path: Path, jiyi_home: Path, **extra: str) -> dict[str, str]:
    """The environment of a `jiyi hook` subprocess: the test's store and config, nothing of the real home."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "JIYI_HOME": str(jiyi_home),
        "JIYI_CONFIG_DIR": str(tmp_path / "jiyi-config"),
        **extra,
    }
    if os.environ.get("PYTHONPATH"):  # the interpreter under test finds jiyi the same way
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return env


def run_hook(
    tmp_path: Path,
    jiyi_home: Path,
    payload: Any,
    *,
    agent: str = "claude-code",
    raw: bytes | None = None,
    **extra: str,
) -> subprocess.CompletedProcess[bytes]:
    """One real `python -m jiyi hook <agent>` process fed one event on stdin."""
    return subprocess.run(
        [sys.executable, "-m", "jiyi", "hook", agent],
        input=raw if raw is not None else json.dumps(payload).encode(),
        capture_output=True,
        env=hook_env(tmp_path, jiyi_home, **extra),
        cwd=tmp_path,
        timeout=60,
    )


def settled(jiyi_home: Path, deadline_seconds: float = 30.0) -> None:
    """Wait until the automatic records a hook queued are written: the detached finisher deletes
    each queued row once its record is in the store (``jiyi.capture.finisher``). Polls the store, and
    fails when a row is still there at the deadline or was given up on."""
    import sqlite3
    import time

    from jiyi.store.sqlite.statements import MAX_ATTEMPTS

    store = jiyi_home / "jiyi.db"
    deadline = time.monotonic() + deadline_seconds
    rows: list[tuple[Any, ...]] = []
    while time.monotonic() < deadline:
        if not store.exists():
            return
        db = sqlite3.connect(store, timeout=5)
        try:
            rows = db.execute("SELECT id, session_id, attempts FROM auto_record_queue").fetchall()
        except sqlite3.OperationalError as exc:  # a store from before the queue existed
            if "no such table" in str(exc):
                return
            raise
        finally:
            db.close()
        if not rows:
            return
        assert all(attempts < MAX_ATTEMPTS for _, _, attempts in rows), f"given up: {rows}"
        time.sleep(0.02)
    raise AssertionError(f"automatic records still queued after {deadline_seconds} s: {rows}")


def anywhere() -> dict[str, Any]:
    """Replay settings every machine can run with: local repositories allowed, the network too, in
    the sandbox where the machine has one (as on CI), so a test of another stage runs on any machine."""
    from jiyi.team.verify.isolation import Sandbox, sandbox_problem

    sandbox = Sandbox(contained=sandbox_problem() is None, network=True)
    return {"allow_local_repos": True, "sandbox": sandbox}


def require_sandbox() -> None:
    """Skip a test of the replay sandbox where bubblewrap cannot run, but fail it on CI, which
    installs bubblewrap: there a sandbox that does not work is the bug."""
    import pytest

    from jiyi.team.verify.isolation import sandbox_problem

    problem = sandbox_problem()
    if problem is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI must run the replay sandbox (bubblewrap): {problem}")
    pytest.skip(f"no working bubblewrap sandbox on this machine: {problem}")


# A repository the replay tests clone: importing the missing module is the failure, adding it the fix.
CHECK_PY = "import mylib\n\nprint(mylib.VALUE)\n"
MYLIB_DIFF = (
    "diff --git a/mylib.py b/mylib.py\nnew file mode 100644\n"
    + "--- /dev/null\n+++ b/mylib.py\n@@ -0,0 +1 @@\n+VALUE = 42\n"
)
MYLIB_ERROR = "ModuleNotFoundError: No module named 'mylib'"


def git(cwd: Path, *args: str) -> str:
    """Run git in ``cwd`` with a fixed identity and none of the user's config; its stdout."""
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    identity = ["-c", "user.name=jiyi test", "-c", "user.email=test@jiyi.invalid", "-c", "init.defaultBranch=main"]
    done = subprocess.run(["git", *identity, *args], cwd=cwd, env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def git_repo(path: Path, files: dict[str, str]) -> str:
    """A new repository at ``path`` with ``files`` in one commit; the commit's id."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q")
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text, encoding="utf-8")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "start")
    return git(path, "rev-parse", "HEAD")

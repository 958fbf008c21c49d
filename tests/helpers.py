"""Shared builders for tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

# The nine ranking signals in the order SPEC §4 fixes for every matched line.
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

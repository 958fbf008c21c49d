"""The secrets corpus (tests/data/secrets.txt: every kind of secret, in the line it turns up in)
through every local way text gets into jiyi, on both backends (docs/spec.md §6; issue 15).

The corpus goes in batches (a few records, not one per kind) through each memory_note field and
kind of fix, a failed tool call in each agent's hook payload and the automatic record of its fix,
``jiyi run``'s output, and the export. Afterwards no part of any secret may be in the store — the
SQLite files (database, write-ahead log) or every row of the PostgreSQL schema — nor in the export.
On SQLite the hook and ``jiyi run`` also run as the processes the agents start (their quick path
and the finisher write without the library's session).
"""

from __future__ import annotations

import io
import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import jiyi
from jiyi import transfer
from jiyi.capture.events import AGENTS, parse
from jiyi.capture.run import run
from jiyi.store.base import Store
from jiyi.store.sqlite.store import SQLiteStore
from jiyi.tools.validation import TITLE_MAX

from .helpers import hook_env, run_hook, settled
from .secret_corpus import KINDS, batches, in_batches, leaks, leaks_in_files, pg_text

# Under the capture's cap of a kept command (2000), so every kind is kept in full, then redacted.
BATCH = 1800
TEXTS = batches(BATCH)
TITLES = batches(TITLE_MAX, one_line=True)
FAILS = "[{n}] Exit code 1\n{text}\nld: undefined symbol deflate"


def test_every_kind_is_in_a_batch_and_titles_carry_most() -> None:
    assert len(KINDS) >= 100 and in_batches(BATCH) == KINDS
    assert len(TEXTS) <= 10 and all(len(t) <= BATCH for t in TEXTS)
    assert len(in_batches(TITLE_MAX, one_line=True)) >= 80


def failure_payloads(text: str, n: int, project: Path) -> list[tuple[str, dict[str, Any]]]:
    """One failed shell call carrying ``text`` (its command and its output) in each agent's shape."""
    log = FAILS.format(n=n, text=text)
    base = {"session_id": f"s{n}", "cwd": str(project)}
    return [
        (
            "claude-code",
            {
                **base,
                "hook_event_name": "PostToolUseFailure",
                "tool_name": "Bash",
                "tool_input": {"command": text},
                "error": log,
                "is_interrupt": False,
            },
        ),
        (
            "codex",
            {
                **base,
                "hook_event_name": "PostToolUse",
                "tool_name": "shell",
                "tool_input": {"command": ["bash", "-lc", text]},
                "tool_response": {"stdout": log, "stderr": log, "exit_code": 1},
            },
        ),
        (
            "gemini",
            {
                **base,
                "hook_event_name": "AfterTool",
                "tool_name": "run_shell_command",
                "tool_input": {"command": text},
                "tool_response": {"error": log, "llmContent": log},
            },
        ),
    ]


def fix_of(kind: str, text: str) -> dict[str, Any]:
    if kind == "command":
        return {"kind": "command", "command": text}
    if kind == "diff":
        lines = text.split("\n")
        body = "".join(f"+{line}\n" for line in lines)
        return {"kind": "diff", "diff": f"--- a/.env\n+++ b/.env\n@@ -1 +1,{len(lines)} @@\n-x\n{body}"}
    return {"kind": "config", "path": "config/secrets.env", "content": text}


def store_text(store: Store) -> str:
    """All the store holds: the SQLite files, or every row of the PostgreSQL schema."""
    if isinstance(store, SQLiteStore):
        path = Path(store.path)
        files = sorted(path.parent.glob(path.name + "*"))
        assert files
        return "\n".join(f.read_bytes().decode("utf-8", "replace") for f in files)
    return pg_text(store.db)  # type: ignore[attr-defined]


def test_no_kind_of_secret_reaches_either_store_or_the_export(store: Store, tmp_path: Path) -> None:
    project = tmp_path / "app"
    project.mkdir()
    with jiyi.Memory(store=store, cwd=project) as memory:
        session = memory.session(session_id="corpus")
        # memory_note: a title of each line that fits one, every content field and each kind of fix.
        notes = max(len(TITLES), 3 * len(TEXTS))
        for i in range(notes):
            text = TEXTS[i % len(TEXTS)]
            written = session.note(
                title=TITLES[i % len(TITLES)],
                type="bugfix",
                scope="project",
                content={"what": text, "why": text, "where": text, "learned": text},
                fix=fix_of(("command", "diff", "config")[i % 3], text),
            )
            assert written.record.hex
        # What the hook does with each agent's payload (events.parse, then the session's tool
        # result), then an edit and the fixed command: the automatic record of the fix.
        for n, text in enumerate(TEXTS):
            for agent, payload in failure_payloads(text, n, project):
                event = parse(agent, payload)
                assert event is not None and event.call is not None and not event.call.ok, agent
                call = event.call
                session.observe_tool_result(call.tool, ok=False, error=call.error, command=call.command)
            session.observe_tool_result("Edit", ok=True, edited=("deploy.env",))
            session.observe_tool_result("bash", ok=True, command=f"{text}\nmake LDLIBS=-lz")
        # What `jiyi run` records of a failed command: its output's tail and the command line.
        for text in TEXTS:
            command = [sys.executable, "-c", "import sys; sys.stderr.write(sys.argv[1]); sys.exit(3)", text]
            code, tail = run(command)
            assert code == 3 and text in tail
            session.observe_tool_result("bash", ok=False, error=tail, command=shlex.join(command))
        session.observe_tool_result("bash", ok=True, command="make")

        out = io.StringIO()
        exported = transfer.export(store, out)
        assert exported >= notes + 1
        automatic = [json.loads(line) for line in out.getvalue().splitlines()]
        assert [r for r in automatic if r["origin"] == "local_auto"], "no automatic record was written"
        kept = store_text(store)
        assert kept.count("[REDACTED:") >= len(KINDS)
        assert leaks(kept) == []
        assert leaks(out.getvalue()) == []


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_hook_and_jiyi_run_processes_store_no_kind_of_secret(tmp_path: Path, jiyi_home: Path) -> None:
    project = tmp_path / "app"
    project.mkdir()
    env = hook_env(tmp_path, jiyi_home, JIYI_SESSION_ID="r1")

    def hook(agent: str, payload: dict[str, Any]) -> None:
        done = run_hook(tmp_path, jiyi_home, payload, agent=agent)
        assert done.returncode == 0 and done.stderr == b"", done

    for n, text in enumerate(TEXTS):
        for agent, payload in failure_payloads(text, n, project):
            hook(agent, payload)
        # The claude-code session's fix: an edit, then the changed command passes (quick path and finisher).
        edit = {"tool_name": "Edit", "tool_input": {"file_path": str(project / "deploy.env")}, "tool_response": {}}
        hook("claude-code", {"session_id": f"s{n}", "cwd": str(project), "hook_event_name": "PostToolUse", **edit})
        fixed = {"tool_input": {"command": f"{text}\nmake LDLIBS=-lz"}, "tool_response": {"stdout": "ok"}}
        hook(
            "claude-code",
            {
                "session_id": f"s{n}",
                "cwd": str(project),
                "hook_event_name": "PostToolUse",
                "tool_name": "Bash",
                **fixed,
            },
        )
        settled(jiyi_home)
        shown = subprocess.run(
            [
                sys.executable,
                "-m",
                "jiyi",
                "run",
                "--",
                sys.executable,
                "-c",
                "import sys; sys.exit(sys.argv[1])",
                text,
            ],
            env=env,
            cwd=project,
            capture_output=True,
            timeout=60,
        )
        assert shown.returncode == 1 and shown.stderr.decode() == text + "\n"

    export = tmp_path / "export.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "jiyi", "export", str(export)], env=env, cwd=project, capture_output=True, timeout=60
    )
    assert done.returncode == 0, done
    records = [json.loads(line) for line in export.read_text(encoding="utf-8").splitlines()]
    assert len([r for r in records if r["origin"] == "local_auto"]) >= 1
    assert leaks_in_files(jiyi_home, export) == []
    assert AGENTS == ("claude-code", "codex", "gemini")  # each agent's shape is above

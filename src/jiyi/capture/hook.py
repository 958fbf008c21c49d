"""Capture (docs/spec.md §5): ``jiyi hook <agent>`` — one agent hook event on stdin becomes a tool result
of a jiyi session.

It runs on every tool call of the agent and must cost it ≤ 50 ms, so the work is split:

- ``events`` reads the agent's payload into an ``Event`` (parsing per agent, no store);
- ``fast_path`` applies the common events with json, os and sqlite3's core alone (no typing,
  dataclasses, pathlib, datetime, click, rich, mcp, pydantic or ranking stack);
- :func:`_full` here applies everything else through the store (``results``): a new
  session, a schema to migrate, a failure a record may be recalled for, a team sync;
- a success that closes a loop is the quick path's too, and its automatic record is written
  after the hook returned, by a detached ``jiyi hook --finish`` (``finisher``).

It never fails the agent: whatever goes wrong is logged to stderr and the process exits 0 with
nothing on stdout. The agent's ``session_id`` names the jiyi session, so the MCP server started
with the same ``JIYI_SESSION_ID`` (or ``CLAUDE_CODE_SESSION_ID``) meets the failure, and a server
with neither adopts it by the rule of ``session_link``; ``cwd`` gives the project and its settings.

Proactive recall (Claude Code, Codex CLI, Gemini CLI: ``context_output``): when a failure arrives
and a record visible to the session (not written in it, not marked wrong, global or of this
project) shares one of its error signatures, the hook prints one ``hookSpecificOutput`` line with
``additionalContext`` naming the record — at most once per record per session
(``Store.claim_recall``).
"""

from __future__ import annotations

import json
import os
import sys

from .events import AGENTS, TEAM_SYNC_EVENTS, Event, context_output, parse
from .results import keep_patterns, patterns_from, recall, recall_line, record_tool_result

# typing and pathlib cost a hook process ~10 ms together: neither is imported on the way of an
# event. mypy reads this name as typing's.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path


def report(event: Event, environ: dict[str, str] | None = None, *, recall_to: bool = False) -> str | None:
    """Apply ``event`` to the store of its project's settings. With ``recall_to``, a failure may
    return the line of proactive recall for the agent."""
    environ = dict(os.environ) if environ is None else environ
    from .fast_path import apply

    handled, line = apply(event, environ, recall_to=recall_to)
    return line if handled else _full(event, environ, recall_to=recall_to)


def _folder(cwd: str | None) -> Path:
    from pathlib import Path

    if cwd:
        path = Path(cwd)
        if path.is_dir():
            return path
    return Path.cwd()


def _relative(path: Path, base: Path) -> str:
    """``path`` relative to ``base`` when inside it, else as it is."""
    try:
        return str(path.relative_to(base))
    except ValueError:
        return str(path)


def _full(event: Event, environ: dict[str, str], *, recall_to: bool) -> str | None:
    from .. import config, project
    from ..store.sqlite.store import SQLiteStore

    folder = _folder(event.cwd).resolve()
    settings = config.load(project.find_root(folder), environ)
    session_id = event.session_id or settings.session_id
    if not session_id:
        return None  # no conversation to attach the result to
    found = project.detect(folder)
    # No upgrade of older terms or signatures here: after a version change every hook call of a large
    # store would spend up to 0.4 s on it while the agent waits. The MCP server, the CLI and the
    # detached `jiyi hook --finish` and `jiyi team sync` do it (store/reindex.py: meanwhile search
    # finds what it found before).
    store = SQLiteStore(settings.store_path, busy_timeout_ms=min(settings.busy_timeout_ms, 2000), upgrade_on_open=False)
    try:
        store.touch_session(session_id, found.key, found.name)
        if event.call is not None:
            call = event.call
            # A failure is redacted and analysed, and so is the failure an automatic record is
            # written for: either way the compiled patterns come from the cache (~40 ms less).
            patterns_from(str(settings.home / "cache"))
            signatures = record_tool_result(
                store,
                session_id,
                call.tool,
                ok=call.ok,
                error=call.error,
                command=call.command,
                edited=tuple(_relative(folder / path, found.root or folder) for path in call.edited),
                project=found,
                auto_records=settings.auto_records,
                folder=str(folder),
            )
            keep_patterns()
            if recall_to and not call.ok:
                hit = recall(store, session_id, found.key, signatures)
                return recall_line(hit) if hit else None
        elif event.name in TEAM_SYNC_EVENTS and settings.team:
            start_team_sync(str(folder), environ)
        return None
    finally:
        store.close()


def start_team_sync(folder: str, environ: dict[str, str]) -> None:
    """Start ``jiyi team sync --quiet`` detached, so the agent never waits for the network (nor
    does this process import httpx). Through ``sh -c '… &'``: sh exits at once and is waited for,
    the sync is nobody's child to reap. Windows: a detached process."""
    import subprocess

    args = [sys.executable, "-m", "jiyi", "team", "sync", "--quiet"]
    null = subprocess.DEVNULL
    if os.name == "nt":
        flags = getattr(subprocess, "DETACHED_PROCESS", 0) | getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)
        child = subprocess.Popen(
            args, cwd=folder, env=environ, creationflags=flags, stdin=null, stdout=null, stderr=null
        )
        child.returncode = 0  # left running on purpose: no ResourceWarning when the object goes
        return
    shell = ["/bin/sh", "-c", 'exec "$@" &', "sh", *args]
    subprocess.Popen(
        shell, cwd=folder, env=environ, start_new_session=True, stdin=null, stdout=null, stderr=null
    ).wait()


# ``jiyi hook --finish <store>``: the detached process that writes queued automatic records.
FINISH = "--finish"


def main(argv: list[str]) -> int:
    """``jiyi hook <agent>``: read one event from stdin and record it; a failure a record matches
    prints that record's line for the agent's model (``context_output``). ``jiyi hook --finish
    <store>`` writes the automatic records queued in that store. Always returns 0."""
    try:
        if len(argv) == 2 and argv[0] == FINISH:
            from .finisher import finish

            finish(argv[1])  # started by a hook that queued an automatic record (finisher)
            return 0
        if len(argv) != 1:
            raise ValueError(f"usage: jiyi hook {{{'|'.join(AGENTS)}}} < event.json (got {argv!r})")
        raw = sys.stdin.buffer.read()
        try:
            payload = json.loads(raw.decode("utf-8", "replace")) if raw.strip() else None
        except ValueError as exc:
            raise ValueError(f"not a JSON event: {exc}") from exc
        event = parse(argv[0], payload)
        line = report(event, recall_to=True) if event is not None else None
        if event is not None and line:
            sys.stdout.write(json.dumps(context_output(argv[0], event.name, line)) + "\n")
            sys.stdout.flush()
    except Exception as exc:  # the agent must never see the hook fail
        detail = getattr(exc, "detail", None)  # a bad setting: which, from where (errors.SettingError)
        print(f"jiyi hook: {type(exc).__name__}: {detail or exc}", file=sys.stderr)
    return 0

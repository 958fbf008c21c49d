"""Capture (SPEC §5): one agent hook event on stdin becomes a tool result of a jiyi session.

``jiyi hook <agent>`` runs on every tool call of the agent and must cost it ≤ 50 ms, so the
common events — a success with no failure pending, a failure no record matches — are applied by
the quick path (``hook_quick``) with json, os and sqlite3's core alone (no typing, dataclasses, pathlib,
datetime, click, rich, mcp, pydantic or ranking stack), redaction and the error signature for a
failure, their compiled patterns taken from ``<home>/cache`` (``regex_cache``); everything else
goes the full way through the store. It never fails the agent: whatever goes wrong is logged to
stderr and the process exits 0 with nothing on stdout.

What an event becomes:

- a failed tool call — Claude Code's ``PostToolUseFailure`` (``error``, or ``error_message``), or a
  ``PostToolUse`` / Gemini ``AfterTool`` whose ``tool_response`` shows a non-zero exit code, an
  interruption or an ``error`` (Codex and Gemini send no failure event) — becomes the session's
  last failure: the tool name (shell tools of every agent are ``bash``), the error text, redacted
  and capped, its signatures and the command that failed (a shell tool's ``tool_input.command``);
- a successful call of the tool that failed closes the loop (``Store.resolve_failure``): the
  records read since the failure get ``used_success += 1``, a note written since whose signatures
  share one with the failure's becomes ``local_auto``, the failure is cleared and the session's
  outcome becomes 成功; with no note written since and an evident fix — the command changed, or
  files were edited in between — an automatic record is written (``auto_record``; the setting
  ``auto_records`` turns it off); any other success is recorded as activity of the session;
- a successful edit (Claude Code ``Edit`` / ``Write`` / ``MultiEdit`` / ``NotebookEdit``, Codex
  ``apply_patch``, Gemini ``replace`` / ``write_file``) while a failure is pending records the files
  edited;
- ``SessionStart``, ``Stop``, ``SessionEnd`` open or touch the session;
- jiyi's own MCP tools (``mcp__…memory_search`` etc.) are skipped.

The agent's ``session_id`` names the jiyi session, so the MCP server started with the same
``JIYI_SESSION_ID`` (or ``CLAUDE_CODE_SESSION_ID``) meets the failure, and a server with neither
adopts it by the rule of ``session_link``; ``cwd`` gives the project and its settings.

Proactive recall (Claude Code, Codex CLI, Gemini CLI: ``context_output``): when a failure arrives
and a record visible to the session (not written in it, not marked wrong, global or of this
project) shares one of its error signatures, the hook prints one ``hookSpecificOutput`` line with
``additionalContext`` naming the record — at most once per record per session
(``Store.claim_recall``). Only a signature look-up, not the ranking.
"""

from __future__ import annotations

import json
import os
import re
import sys

# typing, dataclasses and pathlib cost a hook process ~20 ms together: none is imported on the way
# of an event. mypy reads this name as typing's.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    from .project import Project
    from .records import Record
    from .store import Store

AGENTS = ("claude-code", "codex", "gemini")
OWN_TOOLS = ("memory_search", "memory_read", "memory_note")
# The error text kept as a session's last failure; a run wrapper's output is cut to its tail.
MAX_ERROR = 4000
# Names the agents give their shell tool; all become ``bash``, the tool of ``jiyi run``.
SHELL_TOOLS = frozenset({"bash", "shell", "local_shell", "exec_command", "shell_command", "run_shell_command"})
EDIT_TOOLS = frozenset({"edit", "write", "multiedit", "notebookedit", "replace", "write_file", "edit_file"})
PATCH_TOOLS = frozenset({"apply_patch"})
TOOL_EVENTS = frozenset({"PostToolUse", "PostToolUseFailure", "AfterTool"})
SESSION_EVENTS = frozenset({"SessionStart", "Stop", "SubagentStop", "SessionEnd", "AfterAgent"})
# The end of a turn or a session starts a team sync (``jiyi team sync --quiet``) when a team is set.
TEAM_SYNC_EVENTS = frozenset({"Stop", "SessionEnd"})
_EXIT_KEYS = ("exit_code", "exitCode", "returncode", "return_code")
# re is no cost here: json has imported it.
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+?)\s*$|^\*\*\* Move to: (.+?)\s*$", re.MULTILINE)
_EXIT_LINE = re.compile(r"\s*(?:exit code|exit status|process exited with code)[:\s]+(-?\d+)", re.IGNORECASE)
# The kept command of a failure (and of an automatic record's fix).
COMMAND_MAX = 2000


class ToolCall:
    """One tool call an event reports (plain classes here: see the imports)."""

    __slots__ = ("command", "edited", "error", "ok", "tool")
    _ORDER = ("tool", "ok", "error", "command", "edited")

    def __init__(
        self,
        tool: str,
        ok: bool,
        error: str | None = None,
        command: str | None = None,  # what a shell tool ran
        edited: tuple[str, ...] = (),  # the files an edit tool changed
    ) -> None:
        self.tool, self.ok, self.error, self.command, self.edited = tool, ok, error, command, edited

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ToolCall) and all(getattr(self, k) == getattr(other, k) for k in self._ORDER)

    def __repr__(self) -> str:
        return "ToolCall(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in self._ORDER) + ")"


class Event:
    __slots__ = ("call", "cwd", "name", "session_id")
    _ORDER = ("name", "session_id", "cwd", "call")

    def __init__(self, name: str, session_id: str | None, cwd: str | None, call: ToolCall | None) -> None:
        self.name, self.session_id, self.cwd = name, session_id, cwd
        self.call = call  # None for session events

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Event) and all(getattr(self, k) == getattr(other, k) for k in self._ORDER)

    def __repr__(self) -> str:
        return "Event(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in self._ORDER) + ")"


# -- recording (shared with Session.observe_tool_result) --------------------------------------
def cap(text: str, limit: int = MAX_ERROR) -> str:
    """``text`` cut to about ``limit`` characters: its first line and its tail, where compilers and
    test runners put the error."""
    if len(text) <= limit:
        return text
    first = text.split("\n", 1)[0][:200]
    tail = text[-(limit - len(first) - 3) :]
    return f"{first}\n…\n{tail}"


def clean_error(error: str | None) -> str | None:
    """Redacted and capped error text; None when there is none."""
    if not error or not error.strip():
        return None
    from .redact import redact

    if len(error) > 4 * MAX_ERROR:
        # Redact what may be kept, starting at a line so no secret is cut in half.
        tail = error[-4 * MAX_ERROR :]
        error = error.split("\n", 1)[0][:200] + "\n" + tail[tail.find("\n") + 1 :]
    return cap(redact(error).strip())


def clean_command(command: str | None) -> str | None:
    """A command as kept: redacted, trimmed, capped; None when empty."""
    if command is None or not command.strip():
        return None
    from .redact import redact

    text = redact(command.strip())
    return text if len(text) <= COMMAND_MAX else text[: COMMAND_MAX - 1] + "…"


def record_tool_result(
    store: Store,
    session_id: str,
    tool: str,
    *,
    ok: bool,
    error: str | None = None,
    command: str | None = None,
    edited: tuple[str, ...] = (),
    project: Project | None = None,
    auto_records: bool = True,
) -> tuple[str, ...]:
    """Record one tool result of a session whose row exists (``touch_session``); returns the
    failure's signatures (none for a success).

    A failure becomes the session's last failure, with the ``command`` that failed. A success of
    the tool that failed closes the loop (``Store.resolve_failure``) and, with ``auto_records`` and
    the session's ``project``, may write an automatic record (``auto_record.write``); any other
    success is recorded as the session's activity (its ``last_seen``, set when the session was
    touched) and leaves the last failure in place; the files a successful call ``edited`` are kept
    while a failure is pending.
    """
    if ok:
        resolved = store.resolve_failure(session_id, tool)
        if resolved is not None and auto_records and project is not None:
            from . import auto_record
            from .project import environment

            auto_record.write(
                store, resolved, command, session_id=session_id, project=project, environment=environment()
            )
        elif resolved is None and edited:
            store.record_edits(session_id, edited)
        return ()
    text = clean_error(error) or f"{tool} failed"
    signatures = signatures_of(text)
    store.set_failure(session_id, tool, text, signatures=signatures, command=clean_command(command))
    return signatures


# Proactive recall: the signature look-up's candidates, most trusted first.
RECALL_CANDIDATES = 20
_TRUST_ORDER = ("team_verified", "human", "local_auto", "note", "team")


def recall(store: Store, session_id: str, project_key: str, signatures: tuple[str, ...]) -> Record | None:
    """The record to hand the session for a failure with ``signatures``, now marked recalled to
    it; None when no record not yet recalled, read or written by the session matches."""
    hexes = store.by_signature(signatures, RECALL_CANDIDATES) if signatures else []
    if not hexes:
        return None
    state = store.session(session_id)
    known = {*state.reads, *state.notes} if state else set()
    order = {h: i for i, h in enumerate(hexes)}
    records = [
        r
        for r in store.get_many(h for h in hexes if h not in known)
        if r.session_id != session_id and not r.is_wrong and (r.scope == "global" or r.project_key == project_key)
    ]
    trust = {origin: i for i, origin in enumerate(_TRUST_ORDER)}
    records.sort(key=lambda r: (r.is_outdated, trust.get(r.origin, len(trust)), -r.used_success, order[r.hex]))
    claimed = store.claim_recall(session_id, [r.hex for r in records])
    return next((r for r in records if r.hex == claimed), None)


def recall_line(record: Record) -> str:
    return f"jiyi: [{record.id}] {' '.join(record.title.split())} — memory_read for details"


# -- parsing --------------------------------------------------------------------------------
def tool_name(name: str) -> str:
    return "bash" if name.lower() in SHELL_TOOLS else name


def own_tool(name: str) -> bool:
    lowered = name.lower()
    return lowered.startswith("mcp__") and any(tool in lowered for tool in OWN_TOOLS)


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for key in ("message", "error", "text", "output"):
            if isinstance(value.get(key), str) and value[key].strip():
                return str(value[key])
    if isinstance(value, list):
        return "\n".join(filter(None, (_text(item) for item in value)))
    return json.dumps(value, ensure_ascii=False, default=str)


def _exit_code(response: Any) -> int | None:
    if not isinstance(response, dict):
        return None
    for key in _EXIT_KEYS:
        value = response.get(key)
        if isinstance(value, bool):
            continue
        if isinstance(value, int):
            return value
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            return int(value)
    return _exit_code(response.get("metadata")) if "metadata" in response else None


def response_failure(response: Any) -> str | None:
    """The error text when a tool response shows a failure; None when it shows success."""
    if isinstance(response, str):
        stripped = response.lstrip()
        if stripped.startswith("{"):
            try:
                response = json.loads(stripped)
            except ValueError:  # not contextlib.suppress: the hook does not import contextlib
                response = stripped
    if isinstance(response, str):
        match = _EXIT_LINE.match(response)
        return response if match and int(match.group(1)) != 0 else None
    if not isinstance(response, dict):
        return None
    error = response.get("error")
    if error:
        return _text(error) or "error"
    if response.get("is_error") is True or response.get("isError") is True:
        return _text(response.get("content")) or "error"
    stdout = _text(response.get("stdout") if "stdout" in response else response.get("output"))
    stderr = _text(response.get("stderr"))
    code = _exit_code(response)
    if code is None:
        match = _EXIT_LINE.match(stderr)
        code = int(match.group(1)) if match else None
    interrupted = response.get("interrupted") is True
    if not interrupted and not code:
        return None
    head = "interrupted" if interrupted and not code else f"exit code {code}"
    # stderr last, so the error survives a cut to the tail.
    return "\n".join(part for part in (head, stdout.rstrip(), stderr.rstrip()) if part)


def parse(agent: str, payload: Any) -> Event | None:
    """The event a hook payload reports; None for what capture ignores."""
    if agent not in AGENTS:
        raise ValueError(f"unknown agent {agent!r} (one of {', '.join(AGENTS)})")
    if not isinstance(payload, dict):
        return None
    name = str(payload.get("hook_event_name") or payload.get("hookEventName") or "")
    session_id = payload.get("session_id") or payload.get("sessionId")
    session_id = str(session_id) if session_id else None
    cwd = payload.get("cwd")
    cwd = str(cwd) if cwd else None
    if name in SESSION_EVENTS:
        return Event(name, session_id, cwd, None)
    if name not in TOOL_EVENTS:
        return None
    raw = payload.get("tool_name") or payload.get("toolName")
    if not isinstance(raw, str) or not raw or own_tool(raw):
        return None
    tool = tool_name(raw)
    tool_input = _input(payload)
    command = shell_command(tool_input.get("command", tool_input.get("cmd"))) if tool == "bash" else None
    if name == "PostToolUseFailure":
        error = _text(payload.get("error")) or _text(payload.get("error_message"))
        if not error and payload.get("is_interrupt") is True:
            return None  # the user stopped the tool: no failure of the tool's own
        return Event(name, session_id, cwd, ToolCall(tool, False, error or f"{tool} failed", command))
    failure = response_failure(payload.get("tool_response", payload.get("tool_result")))
    edited = edited_files(raw, tool_input) if failure is None else ()
    return Event(name, session_id, cwd, ToolCall(tool, failure is None, failure, command, edited))


def _input(payload: dict[str, Any]) -> dict[str, Any]:
    value = payload.get("tool_input", payload.get("toolInput", payload.get("tool_args")))
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:  # kept as it is
            value = str(value)
    return value if isinstance(value, dict) else {"input": value} if isinstance(value, str) else {}


def shell_command(value: Any) -> str | None:
    """The command line of a shell tool's ``command`` (a string, or an argv list)."""
    if isinstance(value, str):
        return value if value.strip() else None
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        # ["bash", "-lc", "<script>"]: the script is the command.
        if len(value) == 3 and value[1] in ("-c", "-lc") and os.path.basename(value[0]) in ("bash", "sh", "zsh"):
            return str(value[2])
        import shlex

        return shlex.join(value)
    return None


def edited_files(raw: str, tool_input: dict[str, Any]) -> tuple[str, ...]:
    """The files an edit tool's input names; none for other tools."""
    name = raw.lower()
    if name in EDIT_TOOLS:
        paths = [tool_input.get(key) for key in ("file_path", "notebook_path", "path", "absolute_path")]
        return tuple(dict.fromkeys(p for p in paths if isinstance(p, str) and p.strip()))
    if name in PATCH_TOOLS:
        texts = [v for v in tool_input.values() if isinstance(v, str)]
        found = [m.group(1) or m.group(2) for text in texts for m in _PATCH_FILE.finditer(text)]
        return tuple(dict.fromkeys(found))
    return ()


# -- applying -------------------------------------------------------------------------------
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


def signatures_of(text: str) -> tuple[str, ...]:
    from .signature import analyze

    return analyze(text).signatures


def patterns_from(folder: str) -> None:
    """Take the compiled rules of redaction and signatures from ``folder`` (``regex_cache``):
    ~40 ms less for a hook process that meets a failure. Before either is imported."""
    if "jiyi.signature" not in sys.modules and "jiyi.redact" not in sys.modules:
        from . import regex_cache

        regex_cache.use(folder)


def keep_patterns() -> None:
    from . import regex_cache

    regex_cache.save()


def report(event: Event, environ: dict[str, str] | None = None, *, recall_to: bool = False) -> str | None:
    """Apply ``event`` to the store of its project's settings. With ``recall_to``, a failure may
    return the line of proactive recall for the agent."""
    environ = dict(os.environ) if environ is None else environ
    from .hook_quick import apply

    handled, line = apply(event, environ, recall_to=recall_to)
    return line if handled else _full(event, environ, recall_to=recall_to)


def _full(event: Event, environ: dict[str, str], *, recall_to: bool) -> str | None:
    from . import config, project
    from .sqlite_store import SQLiteStore

    folder = _folder(event.cwd).resolve()
    settings = config.load(project.find_root(folder), environ)
    session_id = event.session_id or settings.session_id
    if not session_id:
        return None  # no conversation to attach the result to
    found = project.detect(folder)
    store = SQLiteStore(settings.store_path, busy_timeout_ms=min(settings.busy_timeout_ms, 2000))
    try:
        store.touch_session(session_id, found.key, found.name)
        if event.call is not None:
            call = event.call
            if not call.ok:
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
            )
            if not call.ok:
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


def context_output(agent: str, event_name: str, line: str) -> dict[str, Any]:
    """The stdout JSON that puts ``line`` in front of ``agent``'s model after a tool call.

    All three read Claude Code's shape: ``hookSpecificOutput.additionalContext`` with the name of
    the event answered — Claude Code adds it to the model's context after ``PostToolUse`` /
    ``PostToolUseFailure``, Codex CLI after ``PostToolUse`` (its ``PostToolUseOutcome``), Gemini CLI
    appends it to the tool result after ``AfterTool``. Gemini reads stdout as JSON only, so nothing
    else may ever be printed.
    """
    if agent not in AGENTS:
        raise ValueError(f"unknown agent {agent!r}")
    return {"hookSpecificOutput": {"hookEventName": event_name, "additionalContext": line}}


def main(argv: list[str]) -> int:
    """``jiyi hook <agent>``: read one event from stdin and record it; a failure a record matches
    prints that record's line for the agent's model (``context_output``). Always returns 0."""
    try:
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
        print(f"jiyi hook: {type(exc).__name__}: {exc}", file=sys.stderr)
    return 0

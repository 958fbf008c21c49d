"""Hook events as each agent sends them (docs/spec.md §5): one JSON payload becomes an :class:`Event`.

Claude Code, Codex CLI and Gemini CLI each report a tool call after it ran; this module reads
their payloads into one shape and knows nothing of the store:

- a failed tool call — Claude Code's ``PostToolUseFailure`` (``error``, or ``error_message``), or a
  ``PostToolUse`` / Gemini ``AfterTool`` whose ``tool_response`` shows a non-zero exit code, an
  interruption or an ``error`` (Codex and Gemini send no failure event) — is a :class:`ToolCall`
  with ``ok`` False, the error text and the command that failed (a shell tool's
  ``tool_input.command``); shell tools of every agent are ``bash``;
- a successful call is one with ``ok`` True; an edit (Claude Code ``Edit`` / ``Write`` /
  ``MultiEdit`` / ``NotebookEdit``, Codex ``apply_patch``, Gemini ``replace`` / ``write_file``)
  names the files it edited;
- ``SessionStart``, ``Stop``, ``SessionEnd`` are session events (no call);
- jiyi's own MCP tools (``mcp__…memory_search`` etc.) and unknown events are ignored (None).

:func:`context_output` is the other direction: the JSON an agent reads back from the hook.
Plain classes and ``re`` only (json imports it): this runs in every hook process.
"""

from __future__ import annotations

import json
import os
import re

TYPE_CHECKING = False  # typing costs the hook ~5 ms; mypy reads the name as typing's
if TYPE_CHECKING:
    from typing import Any

AGENTS = ("claude-code", "codex", "gemini")
OWN_TOOLS = ("memory_search", "memory_read", "memory_note")
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
# Gemini CLI's run_shell_command reports a command's end in ``llmContent`` alone, as lines
# ``Command: …``, ``Directory: …``, ``Output: …``, ``Error: …``, ``Exit Code: N``, ``Signal: …``,
# ``Background PIDs: …``, ``Process Group PGID: …`` (its docs/tools/shell.md); ``error`` is set
# only when the command could not start.
# Compiled when a shell response has ``llmContent``: most events are no Gemini shell call.
_GEMINI_EXIT = r"^Exit Code: (-?\d+)\s*$"
_GEMINI_META = r"^(?:Command|Directory|Exit Code|Signal|Background PIDs|Process Group PGID): "


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


def response_failure(response: Any, *, shell: bool = False) -> str | None:
    """The error text when a tool response shows a failure; None when it shows success. A
    ``shell`` tool's response may report its exit code in Gemini CLI's ``llmContent`` lines."""
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
    content = response.get("llmContent")
    if shell and isinstance(content, str) and (found := re.search(_GEMINI_EXIT, content, re.M)) is not None:
        if int(found.group(1)) == 0:
            return None
        kept = [line for line in content.splitlines() if not re.match(_GEMINI_META, line)]
        output = "\n".join(kept).replace("Output: ", "", 1).strip()
        return "\n".join(part for part in (f"exit code {found.group(1)}", output) if part)
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
    failure = response_failure(payload.get("tool_response", payload.get("tool_result")), shell=tool == "bash")
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

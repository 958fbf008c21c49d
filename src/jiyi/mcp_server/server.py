"""``jiyi mcp``: the three tools over MCP (official SDK, its low-level ``Server``), stdio by default.

The JSON schemas advertise the seed's constraints so every client sees them before calling, and
the arguments reach validation.py as they came: docs/spec.md §2 wants our error text (``参数无效：…`` /
``错误码：…``), not the SDK's. Results are ``CallToolResult`` so an error keeps its exact text.

The low-level server, not ``MCPServer``: the three tools need none of what ``MCPServer`` adds
(argument models, resources, prompts, request-state sealing), and importing it costs the start of
``jiyi mcp`` (docs/spec.md §8: ``tools/list`` within 1 s) about 60 ms more (httpx, cryptography).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import anyio
import anyio.to_thread
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server
from mcp_types import CallToolRequestParams, CallToolResult, ListToolsResult, PaginatedRequestParams, TextContent
from mcp_types import Tool as MCPTool

from .. import __version__
from ..errors import InvalidArgument, SettingError, Unavailable
from ..memory import Memory
from ..records import FIX_KINDS, RELATIONS, SCOPES, TYPES
from ..session import Session
from ..tools import validation
from ..tools.validation import QUERY_MAX, TITLE_MAX
from .stdin import screened_stdin
from .wire import Guarded

log = logging.getLogger("jiyi.mcp")

INSTRUCTIONS = (
    "jiyi is this machine's and team's memory of failures already met and how they were fixed. "
    "When a command, build or test fails, call memory_search with the error text before debugging; "
    "memory_read a hit to see the whole fix; after fixing something non-obvious, memory_note it."
)

_REF = {"type": "string", "pattern": "^(lr|rr)_[0-9a-f]{32}$"}

SEARCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "minLength": 1,
            "maxLength": QUERY_MAX,
            "description": "Error text, tool name or a description of the problem (at most 2000 characters). "
            "Paste the error line(s) verbatim; the session's last failed tool call is added automatically.",
        },
        "limit": {"type": "integer", "minimum": 1, "maximum": 5, "default": 5, "description": "1 to 5 hits."},
    },
    "required": ["query"],
    "additionalProperties": False,
}

READ_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"ref": {**_REF, "description": "A record id from memory_search, e.g. lr_… or rr_…."}},
    "required": ["ref"],
    "additionalProperties": False,
}

_TEXT = {"type": "string", "minLength": 1}
NOTE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "title": {
            "type": "string",
            "minLength": 1,
            "maxLength": TITLE_MAX,
            "description": "Short and searchable, at most 160 characters, e.g. 'Link zlib with -lz'.",
        },
        "type": {"type": "string", "enum": list(TYPES)},
        "scope": {
            "type": "string",
            "enum": list(SCOPES),
            "description": "project: only for this project; global: everywhere.",
        },
        "content": {
            "type": "object",
            "properties": {
                "what": {**_TEXT, "description": "What happened: the error text, verbatim."},
                "why": {**_TEXT, "description": "The cause."},
                "where": {**_TEXT, "description": "Where: file, setting, command."},
                "learned": {**_TEXT, "description": "What to do next time."},
            },
            "required": ["what", "why", "where", "learned"],
            "additionalProperties": False,
        },
        "topic_key": {
            "type": "string",
            "pattern": "^[a-z0-9._-]+/[a-z0-9._-]+$",
            "description": "Two-level topic, e.g. build/zlib-link; the same topic again revises the note.",
        },
        "fix": {
            "description": "A verified change, one of three kinds.",
            "oneOf": [
                {
                    "type": "object",
                    "properties": {"kind": {"const": "command"}, "command": _TEXT},
                    "required": ["kind", "command"],
                    "additionalProperties": False,
                },
                {
                    "type": "object",
                    "properties": {"kind": {"const": "diff"}, "diff": {**_TEXT, "description": "A unified diff."}},
                    "required": ["kind", "diff"],
                    "additionalProperties": False,
                },
                {
                    "type": "object",
                    "properties": {"kind": {"const": "config"}, "path": _TEXT, "content": {"type": "string"}},
                    "required": ["kind", "path", "content"],
                    "additionalProperties": False,
                },
            ],
        },
        "evidence_refs": {"type": "array", "items": _REF, "description": "Ids of records that support this note."},
        "relates_to": {
            "type": "array",
            "description": "Existing records this note shows to be wrong or outdated.",
            "items": {
                "type": "object",
                "properties": {"record_ref": _REF, "relation": {"type": "string", "enum": list(RELATIONS)}},
                "required": ["record_ref", "relation"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["title", "type", "scope", "content"],
    "additionalProperties": False,
}
assert set(FIX_KINDS) == {"command", "diff", "config"}

DESCRIPTIONS = {
    "memory_search": "Search memory by error text or keywords before debugging a failure. Returns at most "
    "5 hits, each with its source and why it matched (all ranking signals), or 'no matching memory'.",
    "memory_read": "Read a record's full text by its id (lr_… / rr_…): cause, what was learned and the fix. "
    "Each session has a read budget.",
    "memory_note": "Write down what was learned after fixing a failure or making a decision; visible from the "
    "next session on. Same topic_key again revises the note; relates_to marks old notes wrong or outdated.",
}


def _result(text: str, is_error: bool) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=is_error)


SCHEMAS = {"memory_search": SEARCH_SCHEMA, "memory_read": READ_SCHEMA, "memory_note": NOTE_SCHEMA}


class JiyiServer(Server[Any]):
    """The three tools of ``session``; without one (a setting cannot be used: ``problem``) it keeps
    serving, and every call answers 记忆暂不可用 with the setting named (docs/spec.md §2)."""

    def __init__(self, session: Session | None, problem: SettingError | None = None) -> None:
        self._session = session
        self.problem = problem
        self.notes_enabled = session.settings.notes if session is not None else True
        self.tools = [MCPTool(name=n, description=DESCRIPTIONS[n], input_schema=s) for n, s in SCHEMAS.items()]
        super().__init__(
            "jiyi", version=__version__, instructions=INSTRUCTIONS, on_list_tools=self._list, on_call_tool=self._call
        )
        # The team syncs this server started and that may still run: a caller (a test, a clean
        # shutdown) can join them instead of polling the store.
        self.team_syncs: list[threading.Thread] = []

    async def _list(self, ctx: Any, params: PaginatedRequestParams | None) -> ListToolsResult:
        return ListToolsResult(tools=await self.list_tools())

    async def _call(self, ctx: Any, params: CallToolRequestParams) -> CallToolResult:
        return await self.call_tool(params.name, params.arguments or {})

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> CallToolResult:
        """A tool call as the agent made it: an argument the tool does not declare is refused
        (the schemas say ``additionalProperties: false``), an unknown tool gets our
        E_INVALID_ARGUMENT from the session. The store is blocking: a worker thread."""
        return await anyio.to_thread.run_sync(lambda: self._run(name, **arguments))

    @property
    def session(self) -> Session:
        if self._session is None:
            raise AssertionError("no session: the settings cannot be used")
        return self._session

    def _run(self, name: str, **arguments: Any) -> CallToolResult:
        if self.problem is not None:
            log.warning("%s: %s", name, self.problem.detail)
            return _result(self.problem.text(), True)
        try:
            declared = SCHEMAS.get(name, {}).get("properties")
            if declared is not None:
                validation.declared(name, arguments, declared)
            result = self.session.call(name, {k: v for k, v in arguments.items() if v is not None})
        except InvalidArgument as exc:
            return _result(exc.text(self.session.settings.locale), True)
        except Exception:  # a bug must not take the server down or leak a traceback to the agent
            log.exception("%s failed", name)
            return _result(Unavailable().text(), True)
        if name == "memory_note" and not result.is_error:
            self.team_sync(pull_too=False)
        return _result(result.text, result.is_error)

    def team_sync(self, *, pull_too: bool = True) -> None:
        """Team memory (docs/team-protocol.md): push (and pull) in a daemon thread; a tool call
        never waits for the network. Nothing without a team."""
        if self._session is None or not self._session.settings.team:
            return
        from ..team.client import sync

        thread = sync.in_background(self.session.settings, pull_too=pull_too)
        self.team_syncs = [t for t in self.team_syncs if t.is_alive()]
        if thread is not None:
            self.team_syncs.append(thread)

    async def list_tools(self) -> list[MCPTool]:
        # notes = false: memory_note is not offered; a client that cached the list still gets
        # E_NOTES_DISABLED when it calls it (docs/spec.md §2) rather than "unknown tool".
        return [t for t in self.tools if self.notes_enabled or t.name != "memory_note"]


def build(memory: Memory | None = None, session: Session | None = None) -> JiyiServer:
    """The server of ``session``; with a team configured, a sync with it starts in the background."""
    if session is None:
        try:
            session = (memory or Memory()).session()
        except SettingError as exc:  # the server keeps serving: each call says which setting
            log.error("%s", exc.detail)
            return JiyiServer(None, exc)
        session.link_to_hooks()  # without a session id, meet the hooks as session_link says
    server = JiyiServer(session)
    server.team_sync()
    return server


WAITING = (
    "jiyi mcp: an MCP server on stdin/stdout, waiting for a client (it is not interactive). "
    "Register it with your agent, e.g. `claude mcp add jiyi -- jiyi mcp`; Ctrl-C ends it."
)


def _stop_on_signals(server: JiyiServer) -> None:
    """One Ctrl-C (SIGINT) or SIGTERM ends the server at once, with status 0 and no traceback.
    The SDK reads stdin in a worker thread that a signal cannot interrupt, so the process exits
    from the handler; the store is closed first (a tool call cut short is rolled back by SQLite)."""
    import os
    import signal
    import sys

    def stop(signum: int, frame: object) -> None:
        try:
            if server._session is not None:
                server._session.memory.close()
        finally:
            sys.stderr.flush()
            os._exit(0)

    signal.signal(signal.SIGINT, stop)
    if hasattr(signal, "SIGTERM"):
        signal.signal(signal.SIGTERM, stop)


def serve() -> None:
    import sys

    server = build()
    _stop_on_signals(server)
    if sys.stdin.isatty():  # a person started it in a terminal: say what it is and how it ends
        print(WAITING, file=sys.stderr, flush=True)

    async def main() -> None:
        with screened_stdin() as stdin:
            async with stdio_server(stdin=stdin) as (read_stream, write_stream):
                guarded = Guarded(read_stream, write_stream, server.call_tool)
                await server.run(guarded, guarded.writer, server.create_initialization_options())

    anyio.run(main)

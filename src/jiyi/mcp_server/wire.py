"""An answer for every line a client sends, even one the SDK cannot read (docs/spec.md §2: "every
request gets an answer, never silence").

The SDK's stdio transport (``mcp/server/stdio.py``) parses each line with pydantic and hands a line
it cannot parse to the read stream as an exception; its dispatcher only logs that exception
(``jsonrpc_dispatcher._dispatch``: "transport yielded exception"), so the client waits forever.
pydantic's parser refuses more than JSON does: a lone surrogate escape (``"\\ud800"``) and nesting
past its recursion limit (~250 levels) fail the whole line, and a raw byte that is not UTF-8 in a
line's structure leaves it unparsable. In an adversarial run 29 such requests got no answer.

``Guarded`` wraps the server's read stream rather than the SDK: it passes messages through and
turns each exception into its answer, written to the client on the write stream. The pydantic
error carries the line (or the object it parsed), so the answer can name the request:

- a ``tools/call`` with a usable id: the tool's own answer, through the same checks as any call, so
  a lone surrogate or an argument nested too deep is ``E_INVALID_ARGUMENT`` naming the argument;
- another request with a usable id: JSON-RPC "Invalid Request" (-32600) with that id;
- no usable id: "Parse error" (-32700) when the line is not JSON, "Invalid Request" otherwise, with
  id null, as JSON-RPC 2.0 §5 says;
- a malformed response of the client (``result`` or ``error``, no ``method``): nothing, as for any
  response.

A request whose id is no string or integer (``true``, ``1.5``, ``null``, a list) is worse: pydantic
reads it as a notification, which no one answers, and the parsed message no longer says it had an
id. So the server's stdin is read through ``stdin.Screened``, which sees each raw line before the
SDK parses it and hands it ``screen(line)``: such a request becomes ``NO_ID``, a line the SDK cannot
read, answered as above with "Invalid Request" and id null (JSON-RPC 2.0 §5).

End of input is the last thing ``Guarded`` passes on, after the answers to the requests read
before it: the SDK's dispatcher cancels the calls still running when its read stream ends
(``jsonrpc_dispatcher.run``), so a client that writes its requests and closes stdin
(`printf '…' | jiyi mcp`) got the answer to ``initialize`` and nothing for a tool call sent with it.
``Guarded.writer`` is the write stream the server is given, seeing which requests are answered.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anyio
from mcp.shared.dispatcher import coerce_request_id
from mcp.shared.message import SessionMessage
from mcp_types import (
    INVALID_REQUEST,
    PARSE_ERROR,
    CallToolResult,
    ErrorData,
    JSONRPCError,
    JSONRPCMessage,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
)

if TYPE_CHECKING:
    from typing_extensions import Self

log = logging.getLogger("jiyi.mcp")

_SURROGATE = re.compile("[\ud800-\udfff]")

CallTool = Callable[[str, dict[str, Any]], Awaitable[CallToolResult]]
# How long end of input waits for the answers to the requests read before it; a call that runs
# longer is cut short at end of input, as the SDK alone would cut it at once.
DRAIN_SECONDS = 30.0


def _usable_id(value: Any) -> str | int | None:
    """A request id we can send back: an integer or a string that is valid Unicode."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and not _SURROGATE.search(value):
        return value
    return None


# A request with an id nobody can be answered by, as the SDK's transport gets it (see ``screen``).
NO_ID = '{"jsonrpc": "2.0", "id": null}\n'


def screen(line: str) -> str:
    """``line``, or ``NO_ID`` when it is a request (it has a method) whose id is unusable: pydantic
    would make it a notification and it would get no answer. Not JSON: left to the transport."""
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):
        return line
    if isinstance(data, dict) and "method" in data and "id" in data and _usable_id(data["id"]) is None:
        return NO_ID
    return line


def _unparsed(exc: Exception) -> tuple[str, Any]:
    """What a transport's parse failure was: ``blank`` (an empty line), ``bad`` (not JSON) or
    ``json`` with the line's object."""
    errors: list[dict[str, Any]] = []
    try:
        errors = list(exc.errors())  # type: ignore[attr-defined]  # pydantic's ValidationError
    except Exception:  # not pydantic's: nothing to go on
        return "bad", None
    for error in errors:
        line = error.get("input")
        if error.get("type") == "json_invalid" and isinstance(line, str):
            if not line.strip():
                return "blank", None
            try:
                return "json", json.loads(line)
            except (ValueError, RecursionError):
                return "bad", None
    # Valid JSON that is no JSON-RPC message: a "missing" error's input is the object itself.
    objects: list[dict[str, Any]] = [e["input"] for e in errors if isinstance(e.get("input"), dict)]
    messages = [o for o in objects if {"jsonrpc", "method", "id"} & set(o)]  # not a nested params object
    if messages or objects:
        return "json", (messages or objects)[0]
    inputs = [e.get("input") for e in errors if "input" in e]
    return "json", inputs[0] if inputs else None


def _error(code: int, message: str, request_id: str | int | None) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=message))


async def answer(exc: Exception, call_tool: CallTool) -> JSONRPCMessage | None:
    """The answer to a line the transport could not read (see the module's docstring)."""
    kind, data = _unparsed(exc)
    if kind == "blank":
        return None  # no request on an empty line
    if kind == "bad":
        return _error(PARSE_ERROR, "Parse error", None)
    if not isinstance(data, dict):
        return _error(INVALID_REQUEST, "Invalid Request", None)
    if "method" not in data and ("result" in data or "error" in data):
        return None  # a response of the client's: answered by no one
    request_id = _usable_id(data.get("id"))
    params = data.get("params")
    if request_id is not None and data.get("method") == "tools/call" and isinstance(params, dict):
        name, arguments = params.get("name"), params.get("arguments", {})
        if isinstance(name, str) and not _SURROGATE.search(name) and isinstance(arguments, dict):
            result = await call_tool(name, arguments)
            return JSONRPCResponse(
                jsonrpc="2.0", id=request_id, result=result.model_dump(mode="json", by_alias=True, exclude_unset=True)
            )
    return _error(INVALID_REQUEST, "Invalid Request", request_id)


class _Wrapper:
    """A stream of the SDK's, closed and entered through this wrapper as through the stream itself."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def __aenter__(self) -> Self:
        await self._stream.__aenter__()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc_val: BaseException | None, exc_tb: TracebackType | None
    ) -> bool | None:
        return await self._stream.__aexit__(exc_type, exc_val, exc_tb)  # type: ignore[no-any-return]


class Guarded(_Wrapper):
    """The server's read stream with every unreadable line answered on ``write_stream``."""

    def __init__(self, read_stream: Any, write_stream: Any, call_tool: CallTool) -> None:
        super().__init__(read_stream)
        self._write = write_stream
        self._call_tool = call_tool
        self._open: set[str | int] = set()  # requests passed to the server, not answered yet
        self._answered = anyio.Event()  # set at each answer to one of them
        self.writer = Answers(write_stream, self)

    def _passed(self, item: SessionMessage) -> None:
        message = item.message
        if isinstance(message, JSONRPCRequest):
            self._open.add(coerce_request_id(message.id))
        elif isinstance(message, JSONRPCNotification) and message.method == "notifications/cancelled":
            # A cancelled request gets no answer (the MCP cancellation rules): nothing to wait for.
            request_id = (message.params or {}).get("requestId")
            if isinstance(request_id, (str, int)):
                self._open.discard(coerce_request_id(request_id))

    def _sent(self, item: SessionMessage) -> None:
        message = item.message
        if isinstance(message, (JSONRPCResponse, JSONRPCError)) and message.id is not None:
            self._open.discard(coerce_request_id(message.id))
            self._answered.set()

    async def _drain(self) -> None:
        with anyio.move_on_after(DRAIN_SECONDS):
            while self._open:
                self._answered = anyio.Event()
                await self._answered.wait()
        if self._open:
            log.warning("end of input: %d request(s) unanswered after %.0f s", len(self._open), DRAIN_SECONDS)

    @property
    def last_context(self) -> Any:  # the SDK reads the sender's context here when there is one
        return getattr(self._stream, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        while True:
            item = await self._stream.receive()
            if not isinstance(item, Exception):
                self._passed(item)
                return item  # type: ignore[no-any-return]
            try:
                reply = await answer(item, self._call_tool)
            except Exception:  # the answer must not end the connection
                log.exception("answering an unreadable message failed")
                reply = _error(INVALID_REQUEST, "Invalid Request", None)
            log.info("unreadable message answered: %s", type(item).__name__)
            if reply is not None:
                await self._write.send(SessionMessage(reply))

    def __aiter__(self) -> Guarded:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            await self._drain()
            raise StopAsyncIteration from None


class Answers(_Wrapper):
    """The server's write stream, telling ``Guarded`` which of its requests are answered."""

    def __init__(self, write_stream: Any, guarded: Guarded) -> None:
        super().__init__(write_stream)
        self._guarded = guarded

    async def send(self, item: SessionMessage) -> None:
        await self._stream.send(item)
        self._guarded._sent(item)

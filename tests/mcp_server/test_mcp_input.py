"""Every request gets exactly one answer, whatever its bytes (docs/spec.md §2; issue 15: a lone
surrogate or JSON nested 250 deep got none, and the client waited forever).

Raw JSON-RPC lines go to a real ``jiyi mcp`` over stdio, and in memory through the same guard over
the server's streams, parsed as the SDK's stdio transport parses them. Tool errors are the message
line and the code line, never E_UNAVAILABLE for a bad argument.
"""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp.shared.message import SessionMessage

import jiyi
from jiyi.mcp_server.server import build
from jiyi.mcp_server.wire import Guarded, screen

from ..helpers import ZLIB

INIT = {
    "jsonrpc": "2.0",
    "id": "init",
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "1"}},
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
CODED = {
    "zh": re.compile(r"(?P<first>[^\n]+)\n错误码：(?P<code>E_[A-Z_]+)"),
    "en": re.compile(r"(?P<first>[^\n]+)\nerror code: (?P<code>E_[A-Z_]+)"),
}
DEEP = 300


def line(message: Any) -> bytes:
    # ensure_ascii writes a lone surrogate as the escape "\ud800", as a client's encoder does.
    return json.dumps(message, ensure_ascii=True).encode() + b"\n"


def call(request_id: int, name: str, arguments: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


def nested(depth: int, inner: Any = 1) -> Any:
    for _ in range(depth):
        inner = [inner]
    return inner


# -- the stdio server ----------------------------------------------------------------------------
class Stdio:
    """``jiyi mcp`` as a subprocess, spoken to in raw lines; answers are read on a thread."""

    def __init__(self, home: Path, cwd: Path, locale: str = "zh") -> None:
        env = {**os.environ, "JIYI_HOME": str(home), "JIYI_SESSION_ID": "fuzz", "JIYI_LOCALE": locale}
        env["PYTHONPATH"] = str(Path(jiyi.__file__).resolve().parents[1])
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "jiyi", "mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=cwd,
        )
        self.answers: queue.Queue[dict[str, Any]] = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.send(line(INIT) + line(INITIALIZED))
        assert self.next()["id"] == "init"

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            self.answers.put(json.loads(raw))

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def next(self, timeout: float = 30) -> dict[str, Any]:
        try:
            return self.answers.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no answer within {timeout} s") from None

    def exchange(self, lines: list[bytes]) -> list[dict[str, Any]]:
        """The answers to ``lines`` (each a request): all of them, then none more before a ping's."""
        self.send(b"".join(lines))
        got = [self.next() for _ in lines]
        self.send(line({"jsonrpc": "2.0", "id": "sentinel", "method": "ping"}))
        assert self.next() == {"jsonrpc": "2.0", "id": "sentinel", "result": {}}
        return got

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
        self.reader.join(timeout=30)
        assert self.proc.stdout is not None
        self.proc.stdout.close()


@pytest.fixture(scope="module")
def stdio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stdio]:
    root = tmp_path_factory.mktemp("stdio")
    server = Stdio(root / "home", root)
    yield server
    server.close()


# -- in memory -----------------------------------------------------------------------------------
def in_memory(lines: list[bytes], locale: str = "zh") -> list[dict[str, Any]]:
    """The answers of a server in this process to ``lines``, each parsed as the SDK's stdio
    transport parses a line (undecodable bytes replaced, screened as ``jiyi mcp`` reads its stdin,
    then pydantic's JSON parser)."""
    settings_ = jiyi.Memory().settings.replace(locale=locale)
    memory = jiyi.Memory(settings=settings_)
    server = build(session=memory.session(project="fuzz", session_id="fuzz"))

    def parsed(raw: bytes) -> SessionMessage | Exception:
        try:
            text = screen(raw.decode("utf-8", "replace"))
            return SessionMessage(types.jsonrpc_message_adapter.validate_json(text, by_name=False))
        except Exception as exc:
            return exc

    async def main() -> list[dict[str, Any]]:
        to_server, server_reads = anyio.create_memory_object_stream[SessionMessage | Exception](1000)
        server_writes, from_server = anyio.create_memory_object_stream[SessionMessage](1000)
        got: list[dict[str, Any]] = []

        async def answer() -> dict[str, Any]:
            message = (await from_server.receive()).message
            return json.loads(message.model_dump_json(by_alias=True, exclude_unset=True))  # type: ignore[no-any-return]

        with anyio.fail_after(60):
            async with to_server, server_reads, server_writes, from_server, anyio.create_task_group() as tg:
                guarded = Guarded(server_reads, server_writes, server.call_tool)
                tg.start_soon(server.run, guarded, server_writes, server.create_initialization_options())
                for raw in [line(INIT), line(INITIALIZED), *lines]:
                    await to_server.send(parsed(raw))
                assert (await answer())["id"] == "init"
                got = [await answer() for _ in lines]
                await to_server.send(parsed(line({"jsonrpc": "2.0", "id": "sentinel", "method": "ping"})))
                assert await answer() == {"jsonrpc": "2.0", "id": "sentinel", "result": {}}
                tg.cancel_scope.cancel()
        return got

    try:
        return anyio.run(main)
    finally:
        memory.close()


def tool_text(answer: dict[str, Any]) -> tuple[bool, str]:
    result = answer["result"]
    assert [block["type"] for block in result["content"]] == ["text"]
    return bool(result.get("isError")), result["content"][0]["text"]


# -- the cases of issue 15 -------------------------------------------------------------------------
SURROGATE_ARGS = [
    ("memory_search", {"query": "deflate \ud800"}, "query"),
    ("memory_search", {"query": "\udfff"}, "query"),
    ("memory_read", {"ref": "lr_\ud800"}, "ref"),
    ("memory_note", {**ZLIB, "title": "zlib \udc00"}, "title"),
    ("memory_note", {**ZLIB, "content": {**ZLIB["content"], "why": "\ud83d"}}, "content.why"),
    ("memory_search", {"query": "x", "\ud800": 1}, "\\ud800"),
]
DEEP_ARGS = [
    ("memory_search", {"query": nested(DEEP, "x")}, "query"),
    ("memory_search", {"query": "x", "limit": nested(DEEP)}, "limit"),
    ("memory_read", {"ref": nested(DEEP, "lr_x")}, "ref"),
    ("memory_note", {**ZLIB, "fix": nested(DEEP, {})}, "fix"),
    ("memory_note", {**ZLIB, "content": {**ZLIB["content"], "what": nested(600, "x")}}, "content.what"),
]
FORM_ARGS = [
    ("memory_search", {"query": "x", "limit": "²"}, "limit"),
    ("memory_search", {"query": "x", "limit": "①"}, "limit"),
    ("memory_search", {"query": "x", "limit": "②"}, "limit"),
    ("memory_search", {"query": "x", "limit": "2"}, "limit"),
    ("memory_search", {"query": "x", "limit": "٣"}, "limit"),
    ("memory_search", {"query": "x", "limit": 3.0}, "limit"),
    ("memory_search", {"query": "x", "limit": 10**40}, "limit"),
    ("memory_search", {"query": "x", "bogus": 1}, "bogus"),
    ("memory_search", {"query": "x", "Limit": 2}, "Limit"),
    ("memory_read", {"ref": "lr_" + "0" * 32, "why": "x"}, "why"),
    ("memory_note", {**ZLIB, "priority": "high"}, "priority"),
    ("memory_search", {"query": "x", "two\nlines": 1}, "two lines"),
]
TOOL_CASES = SURROGATE_ARGS + DEEP_ARGS + FORM_ARGS
REASON = {"zh": "参数无效：{field}：", "en": "invalid argument: {field}: "}


def tool_lines(cases: list[tuple[str, dict[str, Any], str]]) -> list[bytes]:
    return [line(call(i, name, args)) for i, (name, args, _) in enumerate(cases)]


def check_tool_answers(answers: list[dict[str, Any]], locale: str) -> None:
    answers = sorted(answers, key=lambda a: int(a["id"]))  # tool calls run side by side
    assert [a["id"] for a in answers] == list(range(len(TOOL_CASES)))
    for answer, (name, args, field) in zip(answers, TOOL_CASES, strict=True):
        is_error, text = tool_text(answer)
        match = CODED[locale].fullmatch(text)
        assert is_error and match, (name, str(args)[:80], text)
        assert match["code"] == "E_INVALID_ARGUMENT", (name, str(args)[:80], text)
        assert match["first"].startswith(REASON[locale].format(field=field)), (name, str(args)[:80], text)


# Lines that name no usable request: each answered once, with id null.
UNREADABLE = [
    b"garbage\n",
    b'{"jsonrpc":"2.0","id":1,"method":"ping"\xff}\n',  # a raw byte that is not UTF-8, in the structure
    b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping","params":{"x":"\\ud800"}}\n',  # id unusable
    b'{"jsonrpc":"2.0","method":"notifications/x","params":{"a":"\\udc00"}}\n',
    b"[" * 100_000 + b"]" * 100_000 + b"\n",
    b'{"jsonrpc":"2.0","id":' + b"[" * 5000 + b"]" * 5000 + b',"method":"ping"}\n',
    b"[]\n",
    b"42\n",
]
# Requests with an id that are not tool calls the SDK could read: "Invalid Request" with that id.
INVALID_REQUESTS = [
    {"jsonrpc": "2.0", "id": 901, "method": "ping", "params": {"x": nested(DEEP)}},
    {"jsonrpc": "2.0", "id": 902, "method": "tools/list", "params": {"cursor": "\ud800"}},
    {"jsonrpc": "2.0", "id": 903, "method": "tools/call", "params": {"name": "memory_search\udc00", "arguments": {}}},
    {"jsonrpc": "2.0", "id": "s-904", "method": "initialize", "params": nested(DEEP, {})},
]


def check_unreadable(answers: list[dict[str, Any]]) -> None:
    nameless = [a for a in answers if a["id"] is None]
    assert len(nameless) == len(UNREADABLE), answers
    assert all(a["error"]["code"] in (-32700, -32600) for a in nameless), nameless
    assert [a["error"]["code"] for a in nameless[:2]] == [-32700, -32700]  # not JSON: a parse error
    named = {a["id"]: a for a in answers if a["id"] is not None}
    assert sorted(named, key=str) == sorted((r["id"] for r in INVALID_REQUESTS), key=str)
    assert all(a["error"]["code"] == -32600 for a in named.values()), named


# Requests whose id is no string or integer: pydantic reads them as notifications, and they got no
# answer. Each gets "Invalid Request" with id null, and nothing of it runs.
ODD_IDS = [
    {"jsonrpc": "2.0", "id": odd, "method": method, **params}
    for odd in (True, False, 1.5, None, 1.0, [1], {"n": 1})
    for method, params in (
        ("ping", {}),
        ("tools/list", {}),
        ("tools/call", {"params": {"name": "memory_search", "arguments": {"query": "zlib"}}}),
    )
]
NO_ID = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Invalid Request"}}


def test_over_stdio_a_request_with_an_id_of_another_type_is_answered(stdio: Stdio) -> None:
    assert stdio.exchange([line(r) for r in ODD_IDS]) == [NO_ID] * len(ODD_IDS)
    # Escaped, spaced, among good requests: each answered once (a tool call may be answered last).
    mixed = [
        line(call(1, "memory_search", {"query": "zlib"})),
        b'{"jsonrpc":"2.0","\\u0069d" : true,"method":"ping"}\n',
    ]
    mixed += [line({"jsonrpc": "2.0", "id": 2, "method": "ping"})]
    assert sorted((a["id"] for a in stdio.exchange(mixed)), key=str) == [1, 2, None]


def test_the_server_reads_its_stdin_privately_and_fd_0_is_the_null_device(stdio: Stdio) -> None:
    # jiyi mcp reads stdin itself (to screen each line), so it also moves fd 0 aside as the SDK
    # would: a child process of a tool reads end-of-file, not the client's next requests.
    fd0 = Path(f"/proc/{stdio.proc.pid}/fd/0")
    if not fd0.parent.is_dir():
        pytest.skip("no /proc to look at the server's descriptors")
    assert os.readlink(fd0) == os.devnull
    assert stdio.exchange([line({"jsonrpc": "2.0", "id": 5, "method": "ping"})]) == [
        {"jsonrpc": "2.0", "id": 5, "result": {}}
    ]


def test_in_memory_a_request_with_an_id_of_another_type_is_answered() -> None:
    assert in_memory([line(r) for r in ODD_IDS]) == [NO_ID] * len(ODD_IDS)


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("locale", ["zh", "en"])
def test_over_stdio_every_bad_line_gets_its_answer(tmp_path: Path, locale: str) -> None:
    server = Stdio(tmp_path / "home", tmp_path, locale)
    try:
        check_tool_answers(server.exchange(tool_lines(TOOL_CASES)), locale)
        check_unreadable(server.exchange(UNREADABLE + [line(r) for r in INVALID_REQUESTS]))
        # Still serving, and nothing of it was stored.
        _, text = tool_text(server.exchange([line(call(7, "memory_search", {"query": "zlib deflate"}))])[0])
        assert text == "no matching memory"
    finally:
        server.close()


@pytest.mark.parametrize("locale", ["zh", "en"])
def test_in_memory_every_bad_line_gets_its_answer(locale: str) -> None:
    check_tool_answers(in_memory(tool_lines(TOOL_CASES), locale), locale)
    check_unreadable(in_memory(UNREADABLE + [line(r) for r in INVALID_REQUESTS]))


def test_the_zh_texts_are_byte_exact() -> None:
    answers = in_memory(tool_lines(TOOL_CASES[:1] + FORM_ARGS[:1] + FORM_ARGS[7:8]))
    answers.sort(key=lambda a: int(a["id"]))  # tool calls run side by side: they answer in any order
    assert [tool_text(a)[1] for a in answers] == [
        "参数无效：query：含有孤立的代理字符（不是有效的 Unicode）\n错误码：E_INVALID_ARGUMENT",
        "参数无效：limit：必须是 1～5 的整数\n错误码：E_INVALID_ARGUMENT",
        "参数无效：bogus：不是 memory_search 的参数\n错误码：E_INVALID_ARGUMENT",
    ]


# -- fuzz ------------------------------------------------------------------------------------------
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
_surrogate = st.integers(0xD800, 0xDFFF).map(chr)
_value = _json | _surrogate | st.tuples(st.integers(1, 400), _json).map(lambda d: nested(*d))
_known = st.sampled_from(["query", "limit", "ref", "title", "type", "scope", "content", "topic_key", "fix"])
_arguments = st.dictionaries(_known | st.text(max_size=6) | _surrogate, _value, max_size=4)
_tool = st.sampled_from(["memory_search", "memory_read", "memory_note"]) | st.text(max_size=6)


@st.composite
def _requests(draw: st.DrawFn) -> list[bytes]:
    """Requests with ids 0…n-1: tool calls of any arguments, other methods, and bytes spoiled."""
    lines: list[bytes] = []
    for i in range(draw(st.integers(1, 6))):
        shape = draw(st.sampled_from(["call", "call", "params", "bytes", "odd-id"]))
        if shape == "odd-id":  # an id of another type: answered with id null
            odd = draw(st.booleans() | st.none() | st.floats(allow_nan=False) | st.lists(st.integers(), max_size=2))
            lines.append(line({"jsonrpc": "2.0", "id": odd, "method": draw(st.sampled_from(["ping", "tools/list"]))}))
            continue
        if shape == "params":
            method = draw(st.sampled_from(["ping", "tools/list", "tools/call", "resources/list", "x"]))
            message = {"jsonrpc": "2.0", "id": i, "method": method, "params": draw(_value)}
            lines.append(line(message))
            continue
        raw = line(call(i, draw(_tool), draw(_arguments)))
        if shape == "bytes":  # an invalid UTF-8 byte somewhere after the id
            at = draw(st.integers(raw.index(b'"method"'), len(raw) - 2))
            raw = raw[:at] + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80"])) + raw[at:]
        lines.append(raw)
    return lines


def check_fuzz(lines: list[bytes], answers: list[dict[str, Any]]) -> None:
    ids = [a["id"] for a in answers if a["id"] is not None]
    assert len(ids) == len(set(ids)) and set(ids) <= set(range(len(lines))), answers
    for answer in answers:
        if "result" in answer and "content" in answer["result"]:
            is_error, text = tool_text(answer)
            if is_error:
                match = CODED["zh"].fullmatch(text)
                assert match and match["code"] in ("E_INVALID_ARGUMENT", "E_NOT_FOUND"), text
        else:
            assert "error" in answer or "result" in answer, answer


_FUZZ = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)


@_FUZZ
@given(_requests())
def test_fuzz_in_memory_each_request_gets_exactly_one_answer(lines: list[bytes]) -> None:
    check_fuzz(lines, in_memory(lines))


@pytest.mark.slow
@pytest.mark.timeout(300)
@_FUZZ
@given(lines=_requests())
def test_fuzz_over_stdio_each_request_gets_exactly_one_answer(stdio: Stdio, lines: list[bytes]) -> None:
    check_fuzz(lines, stdio.exchange(lines))


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_requests_written_before_stdin_ends_are_all_answered(tmp_path: Path) -> None:
    # A client that writes its requests and closes stdin (`printf '…' | jiyi mcp`): the SDK cancels
    # calls still running at end of input, and the tool calls got no answer (wire.Guarded).
    env = {**os.environ, "JIYI_HOME": str(tmp_path / "home"), "JIYI_SESSION_ID": "piped", "JIYI_LOCALE": "en"}
    env["PYTHONPATH"] = str(Path(jiyi.__file__).resolve().parents[1])
    lines = [line(INIT), line(INITIALIZED), line(call(5, "memory_note", ZLIB))]
    lines.append(line(call(6, "memory_search", {"query": "zlib deflate"})))
    done = subprocess.run(
        [sys.executable, "-m", "jiyi", "mcp"],
        input=b"".join(lines),
        capture_output=True,
        env=env,
        cwd=tmp_path,
        timeout=90,
        check=True,
    )
    answers = {a["id"]: a for a in map(json.loads, done.stdout.splitlines())}
    assert sorted(answers, key=str) == [5, 6, "init"]
    saved, searched = tool_text(answers[5]), tool_text(answers[6])
    assert not saved[0] and saved[1].startswith("saved lr_")
    assert searched == (False, "no matching memory")  # the session's own note is not its answer


def test_end_of_input_waits_only_for_requests_neither_answered_nor_cancelled() -> None:
    async def no_tool(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        raise AssertionError("no line here is unreadable")

    def parsed(message: dict[str, Any]) -> SessionMessage:
        return SessionMessage(types.jsonrpc_message_adapter.validate_python(message, by_name=False))

    async def main() -> float:
        to_server, server_reads = anyio.create_memory_object_stream[SessionMessage | Exception](10)
        server_writes, from_server = anyio.create_memory_object_stream[SessionMessage](10)
        async with to_server, server_reads, server_writes, from_server:
            guarded = Guarded(server_reads, server_writes, no_tool)
            for message in (call(1, "memory_search", {}), call(2, "memory_search", {}), call(3, "x", {})):
                await to_server.send(parsed(message))
                await guarded.__anext__()
            # "2" is request 2, as the SDK correlates ids (mcp.shared.dispatcher.coerce_request_id).
            cancelled = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "2"}}
            await to_server.send(parsed(cancelled))
            await guarded.__anext__()
            await guarded.writer.send(parsed({"jsonrpc": "2.0", "id": 1, "result": {}}))
            await guarded.writer.send(parsed({"jsonrpc": "2.0", "id": 3, "error": {"code": -32601, "message": "x"}}))
            await to_server.aclose()
            started = anyio.current_time()
            with pytest.raises(StopAsyncIteration):
                await guarded.__anext__()
            return anyio.current_time() - started

    assert anyio.run(main) < 1  # nothing left open: no wait for the 30 s a lost answer would cost

"""The MCP server in memory, through the SDK's own client (``mcp.Client`` on the low-level ``Server``).

Every test runs both ways the SDK connects in process: ``auto`` (the 2026 per-request dispatch,
no JSON-RPC framing) and ``legacy`` (the initialize handshake over in-memory JSON-RPC streams).
"""

from __future__ import annotations

import random
import re
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest
from mcp import Client
from mcp_types import CallToolResult, TextContent

import jiyi
from jiyi.config import Settings
from jiyi.mcp_server.server import JiyiServer, build

from ..helpers import SIGNALS, YAML, ZLIB, note

T = TypeVar("T")

MODES = pytest.mark.parametrize("mode", ["auto", "legacy"])
ENV = {"os": "darwin", "arch": "arm64"}
TOOLS = ["memory_search", "memory_read", "memory_note"]
UNAVAILABLE = "记忆暂不可用\n错误码：E_UNAVAILABLE"
NOTES_DISABLED = "记笔记已关闭\n错误码：E_NOTES_DISABLED"
MISSING = "lr_" + "0" * 32


# -- helpers ---------------------------------------------------------------------------------
@contextmanager
def served(session_id: str, *, project: str = "zlib-port", settings: Settings | None = None) -> Iterator[JiyiServer]:
    """A server over the JIYI_HOME of the test, for one session; the store is closed afterwards."""
    memory = jiyi.Memory(settings=settings)
    try:
        yield build(session=memory.session(project=project, env=ENV, session_id=session_id))
    finally:
        memory.close()


def run(mode: str, server: JiyiServer, body: Callable[[Client], Awaitable[T]]) -> T:
    async def main() -> T:
        async with Client(server, mode=mode) as client:
            return await body(client)

    return anyio.run(main)


def text_of(result: CallToolResult) -> str:
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


async def call(client: Client, tool: str, args: dict[str, Any]) -> tuple[bool, str]:
    result = await client.call_tool(tool, args)
    return result.is_error, text_of(result)


def call_once(mode: str, server: JiyiServer, tool: str, args: dict[str, Any]) -> tuple[bool, str]:
    return run(mode, server, lambda client: call(client, tool, args))


def today() -> str:
    return datetime.now().astimezone().strftime("%Y-%m-%d")


def saved_id(text: str) -> str:
    match = re.match(r"saved ((?:lr|rr)_[0-9a-f]{32}) revision \d+", text)
    assert match, text
    return match.group(1)


def invalid(field: str) -> re.Pattern[str]:
    """Our docs/spec.md §2 text for a bad argument: the field, a one-line reason, the code."""
    return re.compile(rf"参数无效：{re.escape(field)}：[^\n]+\n错误码：E_INVALID_ARGUMENT")


MATCHED = re.compile(
    r"   matched: " + ", ".join(rf"{name} (?P<{name}>.+?) \((?P<{name}_c>\d\.\d\d)\)" for name in SIGNALS)
)


def parse_hit(block: str) -> dict[str, Any]:
    """One hit of the seed's 4-line format, taken apart (and checked line by line)."""
    lines = block.split("\n")
    assert len(lines) == 4, block
    head = re.fullmatch(r"(\d+)\. \[((?:lr|rr)_[0-9a-f]{32})\] (.+)", lines[0])
    assert head, lines[0]
    source = re.fullmatch(r"   source: (.+) · (.+) · (\d{4}-\d{2}-\d{2}) · 记录时会话结局：(成功|失败|未知)", lines[1])
    assert source, lines[1]
    matched = MATCHED.fullmatch(lines[2])
    assert matched, lines[2]
    assert lines[3].startswith("   ") and lines[3].strip(), lines[3]
    details = {name: matched.group(name) for name in SIGNALS}
    for detail in details.values():  # docs/spec.md §4: longer than 24 is cut to 24 and followed by …
        assert len(detail) <= 24 or (len(detail) == 25 and detail.endswith("…")), detail
    return {
        "rank": int(head.group(1)),
        "id": head.group(2),
        "title": head.group(3),
        "origin": source.group(1),
        "project": source.group(2),
        "date": source.group(3),
        "outcome": source.group(4),
        "details": details,
        "contributions": {name: matched.group(f"{name}_c") for name in SIGNALS},
        "line": lines[3][3:],
    }


# -- tools/list ------------------------------------------------------------------------------
@MODES
def test_tools_list_advertises_the_seeds_constraints(mode: str) -> None:
    with served("s1") as server:
        listed = run(mode, server, lambda client: client.list_tools())
    tools = {tool.name: tool for tool in listed.tools}
    assert [tool.name for tool in listed.tools] == TOOLS
    for tool in listed.tools:
        assert tool.description and len(tool.description) > 40
        assert tool.input_schema["type"] == "object"
        assert tool.input_schema["additionalProperties"] is False

    search = tools["memory_search"].input_schema
    assert search["required"] == ["query"]
    query = search["properties"]["query"]
    assert (query["type"], query["minLength"], query["maxLength"]) == ("string", 1, 2000)
    assert query["description"]
    limit = search["properties"]["limit"]
    assert (limit["type"], limit["minimum"], limit["maximum"], limit["default"]) == ("integer", 1, 5, 5)

    read = tools["memory_read"].input_schema
    assert read["required"] == ["ref"]
    ref = read["properties"]["ref"]
    assert ref["type"] == "string"
    pattern = re.compile(ref["pattern"])
    assert pattern.search("lr_" + "0123456789abcdef" * 2)
    assert pattern.search("rr_" + "a" * 32)
    for bad in ("lr_" + "A" * 32, "lr_" + "a" * 31, "xx_" + "a" * 32, "lr_" + "a" * 33):
        assert not pattern.search(bad), bad

    schema = tools["memory_note"].input_schema
    props = schema["properties"]
    assert sorted(schema["required"]) == ["content", "scope", "title", "type"]
    assert set(props) == {"title", "type", "scope", "content", "topic_key", "fix", "evidence_refs", "relates_to"}
    assert (props["title"]["type"], props["title"]["minLength"], props["title"]["maxLength"]) == ("string", 1, 160)
    assert props["type"]["enum"] == ["decision", "bugfix", "pattern", "config", "discovery", "learning", "pitfall"]
    assert props["scope"]["enum"] == ["project", "global"]
    content = props["content"]
    assert content["type"] == "object"
    assert sorted(content["required"]) == ["learned", "what", "where", "why"]
    assert set(content["properties"]) == {"what", "why", "where", "learned"}
    topic = re.compile(props["topic_key"]["pattern"])
    assert topic.search("build/zlib-link") and topic.search("ci/py3.11_cache")
    for bad in ("build", "Build/zlib", "a/b/c", "build/zlib link"):
        assert not topic.search(bad), bad
    kinds = {}
    for option in props["fix"]["oneOf"]:
        kind = option["properties"]["kind"]
        kinds[kind.get("const", (kind.get("enum") or [None])[0])] = sorted(option["required"])
    assert kinds == {"command": ["command", "kind"], "diff": ["diff", "kind"], "config": ["content", "kind", "path"]}
    assert props["evidence_refs"]["type"] == "array"
    assert props["evidence_refs"]["items"]["type"] == "string"
    relates = props["relates_to"]
    assert relates["type"] == "array"
    assert sorted(relates["items"]["required"]) == ["record_ref", "relation"]
    assert relates["items"]["properties"]["relation"]["enum"] == ["wrong", "outdated"]


def test_advertised_schemas_are_valid_json_schema_and_accept_the_seed_examples() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    with served("s1") as server:
        listed = run("auto", server, lambda client: client.list_tools())
    schemas = {tool.name: tool.input_schema for tool in listed.tools}
    for schema in schemas.values():
        jsonschema.Draft202012Validator.check_schema(schema)
    search = jsonschema.Draft202012Validator(schemas["memory_search"])
    assert search.is_valid({"query": "ld: undefined symbol deflate"})
    assert search.is_valid({"query": "x", "limit": 5})
    assert not search.is_valid({"query": "x", "limit": 6})
    assert not search.is_valid({"query": "x" * 2001})
    read = jsonschema.Draft202012Validator(schemas["memory_read"])
    assert read.is_valid({"ref": "lr_01a163fbe95e791e8c5c45763b9e6937"})
    assert not read.is_valid({"ref": "lr_01a163"})
    notes = jsonschema.Draft202012Validator(schemas["memory_note"])
    full = note(
        topic_key="build/zlib-link",
        fix={"kind": "command", "command": "make LDLIBS=-lz"},
        evidence_refs=["lr_01a163fbe95e791e8c5c45763b9e6937"],
        relates_to=[{"record_ref": "rr_01a163fbe95e791e8c5c45763b9e6937", "relation": "outdated"}],
    )
    assert notes.is_valid(full)
    assert notes.is_valid(note(fix={"kind": "diff", "diff": "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"}))
    assert notes.is_valid(note(fix={"kind": "config", "path": "setup.cfg", "content": "[x]\n"}))
    assert not notes.is_valid(note(fix={"kind": "command", "diff": "x"}))
    assert not notes.is_valid(note(type="bug"))
    assert not notes.is_valid({**note(), "content": {"what": "a", "why": "b", "where": "c"}})


# -- notes = false ---------------------------------------------------------------------------
@MODES
def test_notes_false_from_the_environment_lists_two_tools_and_refuses_a_note(
    mode: str, monkeypatch: pytest.MonkeyPatch, jiyi_home: Path
) -> None:
    monkeypatch.setenv("JIYI_NOTES", "false")
    server = build()  # settings from the environment, as `jiyi mcp` does

    async def body(client: Client) -> tuple[list[str], tuple[bool, str], tuple[bool, str]]:
        listed = await client.list_tools()
        refused = await call(client, "memory_note", ZLIB)  # a client that cached the old list
        searched = await call(client, "memory_search", {"query": "ld: undefined symbol deflate"})
        return [t.name for t in listed.tools], refused, searched

    try:
        names, refused, searched = run(mode, server, body)
    finally:
        server.session.memory.close()
    assert names == ["memory_search", "memory_read"]
    assert refused == (True, NOTES_DISABLED)
    assert searched == (False, "no matching memory")
    with jiyi.Memory() as memory:
        assert memory.store.count() == 0


@MODES
def test_notes_false_in_settings_lists_two_tools_and_refuses_a_note(mode: str, jiyi_home: Path) -> None:
    with served("s1", settings=Settings(home=jiyi_home, notes=False)) as server:

        async def body(client: Client) -> tuple[list[str], tuple[bool, str], tuple[bool, str]]:
            listed = await client.list_tools()
            # Even a bad note is refused as disabled: the tool is off, whatever the arguments.
            return (
                [t.name for t in listed.tools],
                await call(client, "memory_note", ZLIB),
                await call(client, "memory_note", {"title": ""}),
            )

        names, refused, refused_bad = run(mode, server, body)
    assert names == ["memory_search", "memory_read"]
    assert refused == (True, NOTES_DISABLED)
    assert refused_bad == (True, NOTES_DISABLED)


def test_notes_true_in_the_environment_lists_three_tools(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JIYI_NOTES", "true")
    server = build()
    try:
        listed = run("auto", server, lambda client: client.list_tools())
    finally:
        server.session.memory.close()
    assert [t.name for t in listed.tools] == TOOLS


# -- bad arguments ---------------------------------------------------------------------------
OK = "lr_" + "a" * 32
BAD_ARGUMENTS: list[tuple[str, dict[str, Any], str]] = [
    ("memory_search", {"query": ""}, "query"),
    ("memory_search", {"query": "   \n\t "}, "query"),
    ("memory_search", {"query": "x" * 2001}, "query"),
    ("memory_search", {"query": " " + "x" * 2001 + " "}, "query"),
    ("memory_search", {"query": 42}, "query"),
    ("memory_search", {"query": ["ld: undefined symbol deflate"]}, "query"),
    ("memory_search", {"query": {"text": "x"}}, "query"),
    ("memory_search", {}, "query"),
    ("memory_search", {"limit": 3}, "query"),
    ("memory_search", {"query": "a\x00b"}, "query"),
    ("memory_search", {"query": "bell \x07 here"}, "query"),
    ("memory_search", {"query": "del \x7f"}, "query"),
    ("memory_search", {"query": "c1 \x85 next line"}, "query"),
    ("memory_search", {"query": "x", "limit": 0}, "limit"),
    ("memory_search", {"query": "x", "limit": 6}, "limit"),
    ("memory_search", {"query": "x", "limit": -1}, "limit"),
    ("memory_search", {"query": "x", "limit": "x"}, "limit"),
    ("memory_search", {"query": "x", "limit": "2"}, "limit"),  # a string, not an integer
    ("memory_search", {"query": "x", "limit": "²"}, "limit"),  # was E_UNAVAILABLE
    ("memory_search", {"query": "x", "limit": "①"}, "limit"),
    ("memory_search", {"query": "x", "limit": 2.5}, "limit"),
    ("memory_search", {"query": "x", "limit": True}, "limit"),
    ("memory_search", {"query": "x", "limit": [1]}, "limit"),
    ("memory_read", {"ref": "lr_xyz"}, "ref"),
    ("memory_read", {"ref": "lr_" + "A" * 32}, "ref"),
    ("memory_read", {"ref": "lr_" + "a" * 31}, "ref"),
    ("memory_read", {"ref": "xx_" + "a" * 32}, "ref"),
    ("memory_read", {"ref": "a" * 32}, "ref"),
    ("memory_read", {"ref": ""}, "ref"),
    ("memory_read", {"ref": 7}, "ref"),
    ("memory_read", {}, "ref"),
    ("memory_note", note(title=""), "title"),
    ("memory_note", note(title="x" * 161), "title"),
    ("memory_note", note(title="two\nlines"), "title"),
    ("memory_note", note(title=5), "title"),
    ("memory_note", {k: v for k, v in ZLIB.items() if k != "title"}, "title"),
    ("memory_note", note(type="bug"), "type"),
    ("memory_note", note(type="BUGFIX"), "type"),
    ("memory_note", {k: v for k, v in ZLIB.items() if k != "type"}, "type"),
    ("memory_note", note(scope="team"), "scope"),
    ("memory_note", note(content="ld: undefined symbol deflate"), "content"),
    ("memory_note", {**ZLIB, "content": {"what": "a", "why": "b", "where": "c"}}, "content.learned"),
    ("memory_note", {**ZLIB, "content": {"why": "b", "where": "c", "learned": "d"}}, "content.what"),
    ("memory_note", note(what=""), "content.what"),
    ("memory_note", note(why="  "), "content.why"),
    ("memory_note", note(where=3), "content.where"),
    ("memory_note", note(learned="nul \x00"), "content.learned"),
    ("memory_note", note(why="a lone surrogate \ud800 from JSON"), "content.why"),
    ("memory_search", {"query": "deflate \udfff"}, "query"),
    ("memory_note", note(topic_key="build"), "topic_key"),
    ("memory_note", note(topic_key="Build/Zlib"), "topic_key"),
    ("memory_note", note(topic_key="a/b/c"), "topic_key"),
    ("memory_note", note(fix="make LDLIBS=-lz"), "fix"),
    ("memory_note", note(fix={"kind": "shell", "command": "make"}), "fix.kind"),
    ("memory_note", note(fix={"command": "make"}), "fix.kind"),
    ("memory_note", note(fix={"kind": "command"}), "fix.command"),
    ("memory_note", note(fix={"kind": "command", "command": "make", "diff": "x"}), "fix"),
    ("memory_note", note(fix={"kind": "diff", "diff": "not a diff at all"}), "fix.diff"),
    ("memory_note", note(fix={"kind": "diff", "diff": "@@ -1 +1 @@\n-a\n+b\n"}), "fix.diff"),
    ("memory_note", note(fix={"kind": "diff", "diff": "--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n-a\n+b\n"}), "fix.diff"),
    ("memory_note", note(fix={"kind": "diff", "diff": "--- a/x\n+++ b/x\n"}), "fix.diff"),
    ("memory_note", note(fix={"kind": "config", "content": "x = 1\n"}), "fix.path"),
    ("memory_note", note(fix={"kind": "config", "path": "setup.cfg"}), "fix.content"),
    ("memory_note", note(evidence_refs="lr_" + "a" * 32), "evidence_refs"),
    ("memory_note", note(evidence_refs=["lr_bad"]), "evidence_refs"),
    ("memory_note", note(evidence_refs=[MISSING]), "evidence_refs"),  # well-formed, unknown
    ("memory_note", note(relates_to={"record_ref": OK, "relation": "wrong"}), "relates_to"),
    ("memory_note", note(relates_to=["lr_" + "a" * 32]), "relates_to"),
    ("memory_note", note(relates_to=[{"record_ref": "lr_1", "relation": "wrong"}]), "relates_to.record_ref"),
    ("memory_note", note(relates_to=[{"record_ref": OK, "relation": "obsolete"}]), "relates_to.relation"),
    ("memory_note", note(relates_to=[{"record_ref": OK}]), "relates_to.relation"),
    ("memory_note", note(relates_to=[{"record_ref": MISSING, "relation": "wrong"}]), "relates_to.record_ref"),
]


@MODES
def test_bad_arguments_give_our_error_text_not_the_sdks(mode: str) -> None:
    with served("s1") as server:

        async def body(client: Client) -> list[tuple[bool, str]]:
            return [await call(client, tool, args) for tool, args, _ in BAD_ARGUMENTS]

        answers = run(mode, server, body)
        after = call_once(mode, server, "memory_search", {"query": "ld: undefined symbol deflate"})
    for (tool, args, field), (is_error, text) in zip(BAD_ARGUMENTS, answers, strict=True):
        where = f"{tool} {str(args)[:80]}"
        assert is_error, where
        assert text.startswith("参数无效："), (where, text)
        assert invalid(field).fullmatch(text), (where, text)
        assert "Error executing tool" not in text and "validation error" not in text.lower(), where
    # None of them left anything behind.
    assert after == (False, "no matching memory")
    with jiyi.Memory() as memory:
        assert memory.store.count() == 0


@MODES
def test_an_unknown_tool_and_unknown_arguments(mode: str) -> None:
    with served("s1") as server:
        # A tool that is not there is a bad argument in our words, like every other failure (docs/spec.md §2).
        assert call_once(mode, server, "memory_forget", {"ref": MISSING}) == (
            True,
            "参数无效：tool：没有这个工具：memory_forget\n错误码：E_INVALID_ARGUMENT",
        )
        # An argument no schema names is refused, naming it (the schemas say additionalProperties:
        # false; leaving it out silently looked accepted): issue 15.
        assert call_once(mode, server, "memory_note", {**ZLIB, "priority": "high"}) == (
            True,
            "参数无效：priority：不是 memory_note 的参数\n错误码：E_INVALID_ARGUMENT",
        )
        assert call_once(mode, server, "memory_search", {"query": "x", "max": 2}) == (
            True,
            "参数无效：max：不是 memory_search 的参数\n错误码：E_INVALID_ARGUMENT",
        )


@MODES
def test_boundaries_that_are_allowed(mode: str) -> None:
    with served("s1") as server:

        async def body(client: Client) -> list[tuple[bool, str]]:
            return [
                await call(client, "memory_search", {"query": "x" * 2000}),
                await call(client, "memory_search", {"query": "  " + "x" * 2000 + "\n"}),  # 2000 after trimming
                await call(client, "memory_search", {"query": "x", "limit": 1}),
                await call(client, "memory_search", {"query": "x", "limit": 5}),
                await call(client, "memory_search", {"query": "链接时找不到 zlib"}),
                await call(client, "memory_search", {"query": "tab\there\r\nnext"}),
                await call(client, "memory_note", note(title="标" * 160)),
            ]

        answers = run(mode, server, body)
    assert answers[:6] == [(False, "no matching memory")] * 6
    assert answers[6][0] is False and answers[6][1].startswith("saved lr_"), answers[6]


def test_config_fix_with_empty_content_is_treated_as_the_schema_says() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    args = note(fix={"kind": "config", "path": "src/pkg/py.typed", "content": ""})
    with served("s1") as server:
        listed = run("auto", server, lambda client: client.list_tools())
        schema = next(t.input_schema for t in listed.tools if t.name == "memory_note")
        is_error, text = call_once("auto", server, "memory_note", args)
    advertised_ok = jsonschema.Draft202012Validator(schema).is_valid(args)
    assert is_error is not advertised_ok, text


@MODES
def test_unknown_id_is_not_found(mode: str) -> None:
    with served("s1") as server:
        answer = call_once(mode, server, "memory_read", {"ref": MISSING})
    assert answer == (True, f"没有这条记录：{MISSING}\n错误码：E_NOT_FOUND")


# -- across sessions -------------------------------------------------------------------------
@MODES
def test_note_in_one_server_is_found_and_read_in_another(mode: str) -> None:
    before = today()
    with served("a") as server_a, served("b") as server_b:
        # Both servers are up before the note is written: B must see it at once (docs/spec.md §1).
        saved = call_once(mode, server_a, "memory_note", ZLIB)
        own = call_once(mode, server_a, "memory_search", {"query": "ld: undefined symbol deflate"})

        async def in_b(client: Client) -> list[tuple[bool, str]]:
            found = await call(client, "memory_search", {"query": "ld: undefined symbol deflate"})
            rid = parse_hit(found[1])["id"] if not found[0] and found[1].startswith("1. ") else MISSING
            return [
                found,
                await call(client, "memory_read", {"ref": rid}),
                await call(client, "memory_read", {"ref": "rr_" + rid[3:]}),
            ]

        found, read, read_rr = run(mode, server_b, in_b)
    after = today()

    assert saved[0] is False
    rid = saved_id(saved[1])
    assert saved[1] == f"saved {rid} revision 1; no similar memories found"
    assert own == (False, "no matching memory")  # its own session's note is never returned

    assert found[0] is False
    assert "\n\n" not in found[1]  # one hit
    hit = parse_hit(found[1])
    assert hit["rank"] == 1 and hit["id"] == rid and hit["title"] == "Link zlib with -lz"
    assert (hit["origin"], hit["project"], hit["outcome"]) == ("本机笔记", "zlib-port", "未知")
    assert hit["date"] in {before, after}
    assert hit["line"] == "ld: undefined symbol deflate"
    details, contributions = hit["details"], hit["contributions"]
    assert re.fullmatch(r"sha256:[0-9a-f]{17}…", details["error_signature"]), details["error_signature"]
    assert contributions["error_signature"] == "0.30"
    assert contributions["lexical"] != "0.00"
    assert (details["same_project"], contributions["same_project"]) == ("zlib-port", "0.10")
    assert (details["environment"], contributions["environment"]) == ("os=darwin,arch=arm64", "0.05")
    assert (details["recency"], contributions["recency"]) == ("0d", "0.05")
    assert (details["tool_name"], contributions["tool_name"]) == ("-", "0.00")
    assert (details["trust"], contributions["trust"]) == ("note", "0.02")
    assert details["evidence"] == "sources=1,used_success=0"

    src = f"本机笔记 · zlib-port · {hit['date']} · 记录时会话结局：未知"
    assert read == (
        False,
        f"[{rid}] Link zlib with -lz\n"
        f"source: {src}\n"
        "\n"
        f"Link zlib with -lz（{rid}）\n"
        f"出处：{src}\n"
        "类型：bugfix · 范围：project\n"
        "现象（What）：ld: undefined symbol deflate\n"
        "原因（Why）：zlib was not on the link line\n"
        "位置（Where）：Makefile LDLIBS\n"
        "做法（Learned）：add -lz after the object files",
    )
    assert read_rr == read  # lr_ and rr_ with the same hex name the same record


def test_the_seeds_error_line_matches_on_its_code_symbol() -> None:
    with served("a") as server_a, served("b") as server_b:
        call_once("auto", server_a, "memory_note", ZLIB)
        found = call_once("auto", server_b, "memory_search", {"query": "ld: undefined symbol deflate"})
    hit = parse_hit(found[1])
    assert (hit["details"]["code_symbol"], hit["contributions"]["code_symbol"]) == ("deflate", "0.20")


@MODES
def test_topic_key_again_gives_revision_2_under_the_same_id(mode: str) -> None:
    first_args = note(topic_key="build/zlib-link", fix={"kind": "command", "command": "make LDLIBS=-lz"})
    second_args = note(topic_key="build/zlib-link", learned="link ZLIB::ZLIB in CMake", where="CMakeLists.txt")
    with served("a") as server_a, served("b") as server_b, served("c") as server_c:
        first = call_once(mode, server_a, "memory_note", first_args)
        second = call_once(mode, server_b, "memory_note", second_args)
        rid = saved_id(first[1])

        async def in_c(client: Client) -> list[tuple[bool, str]]:
            return [
                await call(client, "memory_search", {"query": "ld: undefined symbol deflate"}),
                await call(client, "memory_read", {"ref": rid}),
            ]

        found, read = run(mode, server_c, in_c)
    assert first == (False, f"saved {rid} revision 1 under build/zlib-link; no similar memories found")
    assert second == (False, f"saved {rid} revision 2 under build/zlib-link; no similar memories found")
    assert parse_hit(found[1])["id"] == rid
    assert "\n\n" not in found[1]  # still one record
    assert read[0] is False
    lines = read[1].split("\n")
    assert "做法（Learned）：link ZLIB::ZLIB in CMake" in lines
    assert "位置（Where）：CMakeLists.txt" in lines
    assert "主题：build/zlib-link · 修订 2" in lines
    assert "证据：sources=2,used_success=0" in lines  # a second session wrote it
    assert lines.index("做法（Learned）：link ZLIB::ZLIB in CMake") < lines.index("主题：build/zlib-link · 修订 2")
    with jiyi.Memory() as memory:
        assert [r.revision for r in memory.store.revisions(rid[3:])] == [1, 2]


@MODES
def test_search_skips_its_own_sessions_notes_but_not_others(mode: str) -> None:
    yaml_error = "ModuleNotFoundError: No module named 'yaml'"
    with served("a") as server_a, served("b") as server_b:

        async def in_a(client: Client) -> list[tuple[bool, str]]:
            return [
                await call(client, "memory_note", YAML),
                await call(client, "memory_search", {"query": yaml_error}),
            ]

        async def in_b(client: Client) -> list[tuple[bool, str]]:
            return [
                await call(client, "memory_note", note(title="yaml missing again", what=yaml_error)),
                await call(client, "memory_search", {"query": yaml_error}),
                await call(client, "memory_search", {"query": yaml_error, "limit": 1}),
            ]

        (saved_a, own_a), (saved_b, found_b, one_b) = run(mode, server_a, in_a), run(mode, server_b, in_b)
        again_a = call_once(mode, server_a, "memory_search", {"query": yaml_error})
    id_a, id_b = saved_id(saved_a[1]), saved_id(saved_b[1])
    assert own_a == (False, "no matching memory")
    assert saved_b[1] == f"saved {id_b} revision 1; 1 similar memories:\n1. [{id_a}] {YAML['title']}"
    hits_b = [parse_hit(block) for block in found_b[1].split("\n\n")]
    assert [h["id"] for h in hits_b] == [id_a]  # B's own note is not returned
    assert parse_hit(one_b[1])["id"] == id_a
    hits_a = [parse_hit(block) for block in again_a[1].split("\n\n")]
    assert [h["id"] for h in hits_a] == [id_b]  # and A sees B's, not its own


@MODES
def test_relates_to_wrong_takes_the_old_record_out_of_search(mode: str) -> None:
    with served("a") as server_a, served("b") as server_b, served("c") as server_c:
        old = saved_id(call_once(mode, server_a, "memory_note", ZLIB)[1])
        marker_args = note(
            title="Link zlib via pkg-config",
            learned="use $(pkg-config --libs zlib)",
            relates_to=[{"record_ref": old, "relation": "wrong"}],
        )
        marker = call_once(mode, server_b, "memory_note", marker_args)

        async def in_c(client: Client) -> list[tuple[bool, str]]:
            return [
                await call(client, "memory_search", {"query": "ld: undefined symbol deflate"}),
                await call(client, "memory_read", {"ref": old}),
            ]

        found, read = run(mode, server_c, in_c)
    assert marker[0] is False
    new = saved_id(marker[1])
    assert [parse_hit(block)["id"] for block in found[1].split("\n\n")] == [new]
    assert f"状态：已被 {new} 标记为错误" in read[1].split("\n")


# -- an unusable store ---------------------------------------------------------------------------
@MODES
def test_corrupt_store_is_unavailable_and_the_server_keeps_answering(mode: str, jiyi_home: Path) -> None:
    jiyi_home.mkdir(parents=True, exist_ok=True)
    store = jiyi_home / "jiyi.db"
    store.write_bytes(random.Random(7).randbytes(16384))
    with served("s1") as server:

        async def broken(client: Client) -> list[Any]:
            return [
                await call(client, "memory_search", {"query": "ld: undefined symbol deflate"}),
                await call(client, "memory_note", ZLIB),
                await call(client, "memory_read", {"ref": OK}),
                await call(client, "memory_search", {"query": "x", "limit": 9}),  # validation still speaks
                [t.name for t in (await client.list_tools()).tools],
                await call(client, "memory_search", {"query": "ld: undefined symbol deflate"}),
            ]

        answers = run(mode, server, broken)
        # The store is retried on the next call: once the file is usable, the same server recovers.
        store.unlink()
        recovered = call_once(mode, server, "memory_search", {"query": "ld: undefined symbol deflate"})
        noted = call_once(mode, server, "memory_note", ZLIB)
    assert answers[0] == (True, UNAVAILABLE)
    assert answers[1] == (True, UNAVAILABLE)
    assert answers[2] == (True, UNAVAILABLE)
    assert answers[3][0] is True and invalid("limit").fullmatch(answers[3][1]), answers[3]
    assert answers[4] == TOOLS
    assert answers[5] == (True, UNAVAILABLE)
    assert recovered == (False, "no matching memory")
    assert noted[0] is False and noted[1].startswith("saved lr_"), noted


@MODES
def test_a_bad_setting_keeps_the_server_serving_and_every_tool_names_it(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JIYI_LOCALE", "fr")
    server = build()  # as `jiyi mcp` starts: the settings are read here

    async def asked(client: Client) -> list[Any]:
        return [
            [t.name for t in (await client.list_tools()).tools],
            *[await call(client, tool, args) for tool, args in (("memory_search", {"query": "x"}),
                                                               ("memory_read", {"ref": MISSING}),
                                                               ("memory_note", ZLIB))],
        ]  # fmt: skip

    tools, *answers = run(mode, server, asked)
    assert tools == TOOLS
    expected = "记忆暂不可用\n设置无效：locale = 'fr'（来自 JIYI_LOCALE），可用的值：zh, en\n错误码：E_UNAVAILABLE"
    assert answers == [(True, expected)] * 3


@pytest.mark.slow
@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
def test_jiyi_mcp_in_a_terminal_says_it_waits_and_one_signal_ends_it(signame: str, jiyi_home: Path) -> None:
    import os
    import pty
    import signal
    import subprocess
    import sys
    import time

    primary, secondary = pty.openpty()  # stdin is a terminal, as when a person types `jiyi mcp`
    with subprocess.Popen(
        [sys.executable, "-m", "jiyi", "mcp"], stdin=secondary, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as child:
        os.close(secondary)
        try:
            assert child.stderr is not None
            import select

            ready, _, _ = select.select([child.stderr], [], [], 10)  # an old server says nothing
            line = child.stderr.readline().decode() if ready else ""
            assert line.startswith("jiyi mcp: an MCP server on stdin/stdout, waiting for a client")
            assert "claude mcp add jiyi -- jiyi mcp" in line
            time.sleep(0.3)
            child.send_signal(getattr(signal, signame))
            _, rest_bytes = child.communicate(timeout=10)
            rest = rest_bytes.decode()
        finally:
            os.close(primary)
    assert child.returncode == 0, rest
    assert "Traceback" not in rest

"""End to end: `jiyi mcp` spawned over stdio, spoken to with the SDK's stdio client."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp_types import TextContent

import jiyi

from ..helpers import ZLIB

QUERY = "ld: undefined symbol deflate"


def _params(tmp_path: Path, jiyi_home: Path, session_id: str) -> StdioServerParameters:
    env = {
        "JIYI_HOME": str(jiyi_home),
        "JIYI_CONFIG_DIR": str(tmp_path / "jiyi-config"),
        "JIYI_SESSION_ID": session_id,
    }
    if os.environ.get("PYTHONPATH"):  # the interpreter this test runs on finds jiyi the same way
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return StdioServerParameters(command=sys.executable, args=["-m", "jiyi", "mcp"], env=env, cwd=work)


def _text(result: Any) -> tuple[bool, str]:
    assert len(result.content) == 1 and isinstance(result.content[0], TextContent)
    return result.is_error, result.content[0].text


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_jiyi_mcp_over_stdio_across_two_sessions(tmp_path: Path, jiyi_home: Path) -> None:
    async def main() -> dict[str, Any]:
        out: dict[str, Any] = {}
        with anyio.fail_after(150):
            async with Client(_params(tmp_path, jiyi_home, "a"), read_timeout_seconds=60) as client:
                out["tools"] = [tool.name for tool in (await client.list_tools()).tools]
                out["server"] = client.server_info
                out["saved"] = _text(await client.call_tool("memory_note", ZLIB))
                out["own"] = _text(await client.call_tool("memory_search", {"query": QUERY}))
            async with Client(_params(tmp_path, jiyi_home, "b"), read_timeout_seconds=60) as client:
                out["found"] = _text(await client.call_tool("memory_search", {"query": QUERY}))
                match = re.match(r"1\. \[(lr_[0-9a-f]{32})\]", out["found"][1])
                ref = match.group(1) if match else "lr_" + "0" * 32
                out["read"] = _text(await client.call_tool("memory_read", {"ref": ref}))
                out["bad"] = _text(await client.call_tool("memory_search", {"query": "", "limit": 3}))
        return out

    out = anyio.run(main)
    assert out["tools"] == ["memory_search", "memory_read", "memory_note"]
    assert (out["server"].name, out["server"].version) == ("jiyi", jiyi.__version__)
    is_error, saved = out["saved"]
    assert not is_error, saved
    match = re.fullmatch(r"saved (lr_[0-9a-f]{32}) revision 1; no similar memories found", saved)
    assert match, saved
    rid = match.group(1)
    assert out["own"] == (False, "no matching memory")  # session a does not find its own note

    is_error, found = out["found"]
    assert not is_error
    lines = found.split("\n")
    assert len(lines) == 4, found
    assert lines[0] == f"1. [{rid}] Link zlib with -lz"
    assert re.fullmatch(r"   source: 本机笔记 · work · \d{4}-\d{2}-\d{2} · 记录时会话结局：未知", lines[1]), lines[1]
    assert re.match(r"   matched: error_signature sha256:[0-9a-f]{17}… \(0\.30\), code_symbol ", lines[2]), lines[2]
    assert "same_project work (0.10)" in lines[2]
    assert lines[3] == "   ld: undefined symbol deflate"

    is_error, read = out["read"]
    assert not is_error, read
    text = read.split("\n")
    assert text[0] == f"[{rid}] Link zlib with -lz"
    assert text[2:4] == ["", f"Link zlib with -lz（{rid}）"]
    assert text[5:] == [
        "类型：bugfix · 范围：project",
        "现象（What）：ld: undefined symbol deflate",
        "原因（Why）：zlib was not on the link line",
        "位置（Where）：Makefile LDLIBS",
        "做法（Learned）：add -lz after the object files",
    ]
    assert out["bad"] == (True, "参数无效：query：不能为空\n错误码：E_INVALID_ARGUMENT")

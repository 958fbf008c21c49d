"""Checks that a ``fix`` of kind ``diff`` is a unified diff that ``git apply`` / ``patch`` could use.

Written here rather than taken from a library: the check is ~60 lines, runs on every note with a
diff, and needs to say *which* line is wrong so the agent can correct its call.
"""

from __future__ import annotations

import re

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class DiffError(ValueError):
    pass


def _path(line: str, marker: str) -> str:
    name = line[len(marker) :].split("\t", 1)[0].strip()
    if not name:
        raise DiffError(f"{marker.strip()} 行缺少文件名")
    return name


def parse(diff: str) -> list[str]:
    """The files the diff changes; raises DiffError saying what is wrong."""
    lines = diff.replace("\r\n", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    files: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.startswith("--- "):
            if line.startswith(("@@", "+++ ")):
                raise DiffError(f"第 {i + 1} 行：缺少 --- / +++ 文件头")
            i += 1  # preamble: "diff --git", "index", commit message
            continue
        old = _path(line, "--- ")
        if i + 1 >= len(lines) or not lines[i + 1].startswith("+++ "):
            raise DiffError(f"第 {i + 2} 行：--- 之后应是 +++")
        new = _path(lines[i + 1], "+++ ")
        i += 2
        hunks = 0
        while i < len(lines) and lines[i].startswith("@@"):
            match = _HUNK.match(lines[i])
            if not match:
                raise DiffError(f"第 {i + 1} 行：无法解析的 @@ 行")
            old_left = int(match.group(2) or "1")
            new_left = int(match.group(4) or "1")
            i += 1
            while old_left > 0 or new_left > 0:
                if i >= len(lines):
                    raise DiffError("补丁在块的中间结束")
                body = lines[i]
                tag = body[:1]
                if tag in (" ", ""):
                    old_left -= 1
                    new_left -= 1
                elif tag == "-":
                    old_left -= 1
                elif tag == "+":
                    new_left -= 1
                elif tag == "\\":
                    pass
                else:
                    raise DiffError(f"第 {i + 1} 行：块内的行应以空格、+ 或 - 开头")
                if old_left < 0 or new_left < 0:
                    raise DiffError(f"第 {i + 1} 行：块的行数与 @@ 行不符")
                i += 1
            while i < len(lines) and lines[i].startswith("\\"):
                i += 1
            hunks += 1
        if hunks == 0:
            raise DiffError(f"{new} 没有任何 @@ 块")
        files.append(new if new != "/dev/null" else old)
    if not files:
        raise DiffError("不是统一格式的补丁（没有 --- / +++ / @@）")
    return files

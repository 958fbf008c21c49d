"""The tool texts of docs/spec.md §1, byte-exact. Nothing here touches the store."""

from __future__ import annotations

import re
from datetime import datetime

from ..analysis.signature import key_line
from ..ranking import Hit
from ..records import Record, parse_time

DETAIL_MAX = 24
KEY_LINE_MAX = 200
NO_MATCH = "no matching memory"
SEP = " · "

# Fix commands from others are data, never to be run as-is (docs/spec.md §6); these shapes are flagged.
_DANGEROUS = [
    re.compile(p)
    for p in (
        r"\b(?:curl|wget)\b[^|\n]*\|\s*(?:sudo\s+)?(?:ba|z|k|da)?sh\b",
        r"\brm\s+-[a-z]*r[a-z]*f?[a-z]*\s+(?:--no-preserve-root\s+)?(?:/|~|\$HOME)(?:\s|$|\*)",
        r"\bmkfs(?:\.\w+)?\b",
        r"\bdd\b[^\n]*\bof=/dev/",
        r":\(\)\s*\{\s*:\|:&\s*\};:",
        r"\bchmod\s+-R\s+0?777\s+/(?:\s|$)",
        r">\s*/dev/sd[a-z]",
    )
]


def detail(text: str) -> str:
    return text if len(text) <= DETAIL_MAX else text[:DETAIL_MAX] + "…"


def day(stamp: str) -> str:
    try:
        return parse_time(stamp).astimezone().strftime("%Y-%m-%d")
    except ValueError:
        return stamp[:10]


def source_fields(record: Record) -> str:
    return SEP.join([record.origin_label, record.project, day(record.updated), f"记录时会话结局：{record.outcome}"])


def search_text(hits: list[Hit]) -> str:
    if not hits:
        return NO_MATCH
    blocks = []
    for i, hit in enumerate(hits, 1):
        record = hit.record
        matched = ", ".join(f"{s.name} {detail(s.detail)} ({s.contribution:.2f})" for s in hit.signals)
        line = key_line(record.what) or record.what.strip().splitlines()[0]
        blocks.append(
            f"{i}. [{record.id}] {record.title}\n"
            f"   source: {source_fields(record)}\n"
            f"   matched: {matched}\n"
            f"   {line[:KEY_LINE_MAX]}"
        )
    return "\n\n".join(blocks)


def is_dangerous(command: str) -> bool:
    return any(p.search(command) for p in _DANGEROUS)


def verification_lines(record: Record) -> list[str]:
    """docs/spec.md §1's ``核验`` line for a record that carries its replay runs: a team-verified
    one, and one whose replays failed (``0/1``: docs/spec.md §5, failing runs show too)."""
    v = record.verification
    if v is None or (record.origin != "team_verified" and v.passed >= v.tries):
        return []
    return [f"核验：{v.how}{SEP}{v.date}{SEP}{v.environment}{SEP}{v.passed}/{v.tries}"]


def read_text(record: Record, verification: list[str] | None = None) -> str:
    """The ``memory_read`` text; ``verification`` are the lines after the fix, by default the
    record's own ``核验`` line (``verification_lines``)."""
    src = source_fields(record)
    lines = [
        f"[{record.id}] {record.title}",
        f"source: {src}",
        "",
        f"{record.title}（{record.id}）",
        f"出处：{src}",
        f"类型：{record.type}{SEP}范围：{record.scope}",
        f"现象（What）：{record.what}",
        f"原因（Why）：{record.why}",
        f"位置（Where）：{record.where}",
        f"做法（Learned）：{record.learned}",
    ]
    if record.topic_key or record.revision > 1:
        lines.append(f"主题：{record.topic_key or '-'}{SEP}修订 {record.revision}")
    for mark in record.marked:
        word = "过时" if mark.relation == "outdated" else "错误"
        lines.append(f"状态：已被 {mark.source_id} 标记为{word}")
    if record.sources > 1 or record.used_success > 0:
        lines.append(f"证据：sources={record.sources},used_success={record.used_success}")
    fix = record.fix
    if fix is not None:
        if fix.kind == "command" and fix.command is not None:
            lines.append(f"修法（Fix，命令）：{fix.command}")
            if is_dangerous(fix.command):
                lines.append("警告：此命令有危险操作，仅供参考，不会自动执行")
        elif fix.kind == "diff" and fix.diff is not None:
            lines.append("修法（Fix，补丁）：")
            lines.append(fix.diff.rstrip("\n"))
        elif fix.kind == "config" and fix.content is not None:
            lines.append(f"修法（Fix，配置）：{fix.path}")
            lines.append(fix.content.rstrip("\n"))
    lines.extend(verification_lines(record) if verification is None else verification)
    return "\n".join(lines)


def budget_cut(text: str, granted: int, budget: int) -> str:
    if granted >= len(text):
        return text
    return text[:granted] + f"\n……（本会话读取额度已用完：{budget} 字符）"


def note_text(record: Record, similar: list[Hit]) -> str:
    head = f"saved {record.id} revision {record.revision}"
    if record.topic_key:
        head += f" under {record.topic_key}"
    if not similar:
        return head + "; no similar memories found"
    lines = [f"{head}; {len(similar)} similar memories:"]
    lines.extend(f"{i}. [{h.record.id}] {h.record.title}" for i, h in enumerate(similar, 1))
    return "\n".join(lines)


def today() -> str:
    return datetime.now().astimezone().strftime("%Y-%m-%d")

"""The tool texts of docs/spec.md §1, byte-exact (``zh``, the default), and their English form
(``locale = "en"``: every label in ``_EN``, the layout the same). Nothing here touches the store."""

from __future__ import annotations

import re
from datetime import datetime

from ..analysis.signature import key_line
from ..ranking import Hit
from ..records import OUTCOMES_EN, Record, parse_time

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


# The memory_read labels: Chinese as docs/spec.md §1 gives them, English for ``locale = "en"``.
_ZH = {
    "outcome": "记录时会话结局：", "source": "出处：", "type": "类型：", "scope": "范围：",
    "what": "现象（What）：", "why": "原因（Why）：", "where": "位置（Where）：", "learned": "做法（Learned）：",
    "topic": "主题：", "revision": "修订 ", "marked": "状态：已被 {by} 标记为{word}", "outdated": "过时",
    "wrong": "错误", "evidence": "证据：", "fix_command": "修法（Fix，命令）：", "fix_diff": "修法（Fix，补丁）：",
    "fix_config": "修法（Fix，配置）：", "dangerous": "警告：此命令有危险操作，仅供参考，不会自动执行",
    "verified": "核验：", "title_id": "{title}（{id}）", "cut": "\n……（本会话读取额度已用完：{budget} 字符）",
}  # fmt: skip
_EN = {
    "outcome": "session outcome when recorded: ", "source": "Source: ", "type": "Type: ", "scope": "Scope: ",
    "what": "What: ", "why": "Why: ", "where": "Where: ", "learned": "Learned: ",
    "topic": "Topic: ", "revision": "revision ", "marked": "Status: marked {word} by {by}", "outdated": "outdated",
    "wrong": "wrong", "evidence": "Evidence: ", "fix_command": "Fix (command): ", "fix_diff": "Fix (diff):",
    "fix_config": "Fix (config): ", "dangerous": "Warning: this command does something dangerous; shown for "
    "reference, never run automatically", "verified": "Verified: ", "title_id": "{title} ({id})",
    "cut": "\n…… (read budget of this session spent: {budget} characters)",
}  # fmt: skip


def _labels(locale: str) -> dict[str, str]:
    return _EN if locale == "en" else _ZH


def detail(text: str) -> str:
    return text if len(text) <= DETAIL_MAX else text[:DETAIL_MAX] + "…"


def day(stamp: str) -> str:
    try:
        return parse_time(stamp).astimezone().strftime("%Y-%m-%d")
    except ValueError:
        return stamp[:10]


def source_fields(record: Record, locale: str = "zh") -> str:
    outcome = OUTCOMES_EN.get(record.outcome, record.outcome) if locale == "en" else record.outcome
    label = _labels(locale)["outcome"]
    return SEP.join([record.origin_label_in(locale), record.project, day(record.updated), f"{label}{outcome}"])


def search_text(hits: list[Hit], locale: str = "zh") -> str:
    if not hits:
        return NO_MATCH
    blocks = []
    for i, hit in enumerate(hits, 1):
        record = hit.record
        matched = ", ".join(f"{s.name} {detail(s.detail)} ({s.contribution:.2f})" for s in hit.signals)
        line = key_line(record.what) or record.what.strip().splitlines()[0]
        blocks.append(
            f"{i}. [{record.id}] {record.title}\n"
            f"   source: {source_fields(record, locale)}\n"
            f"   matched: {matched}\n"
            f"   {line[:KEY_LINE_MAX]}"
        )
    return "\n\n".join(blocks)


def is_dangerous(command: str) -> bool:
    return any(p.search(command) for p in _DANGEROUS)


def verification_lines(record: Record, locale: str = "zh") -> list[str]:
    """docs/spec.md §1's ``核验`` line for a record that carries its replay runs: a team-verified
    one, and one whose replays failed (``0/1``: docs/spec.md §5, failing runs show too)."""
    v = record.verification
    if v is None or (record.origin != "team_verified" and v.passed >= v.tries):
        return []
    return [f"{_labels(locale)['verified']}{v.how}{SEP}{v.date}{SEP}{v.environment}{SEP}{v.passed}/{v.tries}"]


def read_text(record: Record, verification: list[str] | None = None, locale: str = "zh") -> str:
    """The ``memory_read`` text; ``verification`` are the lines after the fix, by default the
    record's own ``核验`` line (``verification_lines``)."""
    t = _labels(locale)
    src = source_fields(record, locale)
    lines = [
        f"[{record.id}] {record.title}",
        f"source: {src}",
        "",
        t["title_id"].format(title=record.title, id=record.id),
        f"{t['source']}{src}",
        f"{t['type']}{record.type}{SEP}{t['scope']}{record.scope}",
        f"{t['what']}{record.what}",
        f"{t['why']}{record.why}",
        f"{t['where']}{record.where}",
        f"{t['learned']}{record.learned}",
    ]
    if record.topic_key or record.revision > 1:
        lines.append(f"{t['topic']}{record.topic_key or '-'}{SEP}{t['revision']}{record.revision}")
    for mark in record.marked:
        word = t["outdated"] if mark.relation == "outdated" else t["wrong"]
        lines.append(t["marked"].format(by=mark.source_id, word=word))
    if record.sources > 1 or record.used_success > 0:
        lines.append(f"{t['evidence']}sources={record.sources},used_success={record.used_success}")
    fix = record.fix
    if fix is not None:
        if fix.kind == "command" and fix.command is not None:
            lines.append(f"{t['fix_command']}{fix.command}")
            if is_dangerous(fix.command):
                lines.append(t["dangerous"])
        elif fix.kind == "diff" and fix.diff is not None:
            lines.append(t["fix_diff"])
            lines.append(fix.diff.rstrip("\n"))
        elif fix.kind == "config" and fix.content is not None:
            lines.append(f"{t['fix_config']}{fix.path}")
            lines.append(fix.content.rstrip("\n"))
    lines.extend(verification_lines(record, locale) if verification is None else verification)
    return "\n".join(lines)


def budget_cut(text: str, granted: int, budget: int, locale: str = "zh") -> str:
    if granted >= len(text):
        return text
    return text[:granted] + _labels(locale)["cut"].format(budget=budget)


def note_text(record: Record, similar: list[Hit], locale: str = "zh") -> str:
    head = f"saved {record.id} revision {record.revision}"
    if record.topic_key:
        head += f" under {record.topic_key}"
    if not similar:
        return head + "; no similar memories found"
    # docs/spec.md §1 pins `<k> similar memories:` byte-exact for the default locale, and agents may
    # match it; English readers get the singular, as the `en` texts are a translation, not the contract.
    noun = "memory" if locale == "en" and len(similar) == 1 else "memories"
    lines = [f"{head}; {len(similar)} similar {noun}:"]
    lines.extend(f"{i}. [{h.record.id}] {h.record.title}" for i, h in enumerate(similar, 1))
    return "\n".join(lines)


def today() -> str:
    return datetime.now().astimezone().strftime("%Y-%m-%d")

"""Checks every tool argument (docs/spec.md §1) and turns a bad one into ``E_INVALID_ARGUMENT``.

The MCP schemas advertise the same limits, but clients differ in what they enforce, so the checking
lives here and gives our error text whatever the caller is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from ..errors import InvalidArgument
from ..records import FIX_KINDS, RELATIONS, SCOPES, TYPES, Fix, NoteInput, split_ref
from . import diffs

QUERY_MAX = 2000
TITLE_MAX = 160
LIMIT_MAX = 5
# Bounds on stored text: generous for real logs and patches, small enough that one call
# cannot bloat the store or every later search.
CONTENT_MAX = {"what": 20000, "why": 4000, "where": 4000, "learned": 8000}
COMMAND_MAX = 4000
DIFF_MAX = 200_000
CONFIG_MAX = 200_000
PATH_MAX = 1000

TOPIC_RE = re.compile(r"^[a-z0-9._-]+/[a-z0-9._-]+$")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
# C0 controls other than tab, newline and carriage return, DEL and the C1 block.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
# A lone UTF-16 surrogate (JSON "\ud800") is no character: it cannot be stored as UTF-8.
_SURROGATE = re.compile("[\ud800-\udfff]")


def text(field: str, value: Any, *, max_len: int, multiline: bool = True, strip: bool = True) -> str:
    if value is None:
        raise InvalidArgument(field, "必填", "required")
    if not isinstance(value, str):
        raise InvalidArgument(field, "必须是字符串", "must be a string")
    # Pasted terminal output carries colour codes: they are noise, not an error.
    cleaned = _ANSI.sub("", value)
    if _CONTROL.search(cleaned):
        raise InvalidArgument(field, "含有控制字符", "holds control characters")
    if _SURROGATE.search(cleaned):
        raise InvalidArgument(
            field, "含有孤立的代理字符（不是有效的 Unicode）", "holds a lone surrogate (not valid Unicode)"
        )
    if not multiline and ("\n" in cleaned or "\r" in cleaned):
        raise InvalidArgument(field, "不能换行", "must be one line")
    if strip:
        cleaned = cleaned.strip()
    if not cleaned:
        raise InvalidArgument(field, "不能为空", "must not be empty")
    if len(cleaned) > max_len:
        raise InvalidArgument(
            field, f"最多 {max_len} 字符（收到 {len(cleaned)}）", f"at most {max_len} characters (got {len(cleaned)})"
        )
    return cleaned


def query(value: Any) -> str:
    return text("query", value, max_len=QUERY_MAX)


def limit(value: Any) -> int:
    # A JSON integer only (docs/spec.md §2: a value of the wrong type or form is refused): the
    # string "2" is a string, and "²" or "①" passed str.isdigit() and then failed int() as 记忆暂不可用.
    if value is None:
        return LIMIT_MAX
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= LIMIT_MAX:
        raise InvalidArgument("limit", "必须是 1～5 的整数", "must be a whole number from 1 to 5")
    return value


def declared(tool: str, args: dict[str, Any], fields: Iterable[str]) -> None:
    """Refuse an argument ``tool`` does not declare (its schema says ``additionalProperties: false``);
    one left out silently would look accepted to the agent."""
    unknown = sorted(set(args) - set(fields))
    if unknown:
        raise InvalidArgument(unknown[0], f"不是 {tool} 的参数", f"is no argument of {tool}")


def ref(value: Any, field: str = "ref") -> tuple[str, str]:
    if value is None:
        raise InvalidArgument(field, "必填", "required")
    if not isinstance(value, str):
        raise InvalidArgument(field, "必须是字符串", "must be a string")
    parts = split_ref(value.strip())
    if parts is None:
        raise InvalidArgument(field, "应为 lr_ 或 rr_ 加 32 位十六进制", "must be lr_ or rr_ and 32 hex digits")
    return parts


def _choice(field: str, value: Any, options: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value.strip() not in options:
        raise InvalidArgument(field, "应为 " + "、".join(options) + " 之一", "must be one of " + ", ".join(options))
    return value.strip()


def fix(value: Any) -> Fix | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise InvalidArgument("fix", "必须是对象", "must be an object")
    kind = _choice("fix.kind", value.get("kind"), FIX_KINDS)
    allowed = {"command": {"kind", "command"}, "diff": {"kind", "diff"}, "config": {"kind", "path", "content"}}
    extra = sorted(set(value) - allowed[kind])
    if extra:
        raise InvalidArgument(
            "fix", f"kind={kind} 不接受 {', '.join(extra)}", f"kind={kind} takes no {', '.join(extra)}"
        )
    if kind == "command":
        return Fix(kind, command=text("fix.command", value.get("command"), max_len=COMMAND_MAX))
    if kind == "diff":
        body = text("fix.diff", value.get("diff"), max_len=DIFF_MAX, strip=False)
        try:
            diffs.parse(body)
        except diffs.DiffError as exc:
            raise InvalidArgument(
                "fix.diff", f"不是可解析的统一格式补丁：{exc}", f"not a unified diff: {exc}"
            ) from None
        return Fix(kind, diff=body)
    path = text("fix.path", value.get("path"), max_len=PATH_MAX, multiline=False)
    content = value.get("content")
    if not isinstance(content, str):
        raise InvalidArgument("fix.content", "必须是字符串", "must be a string")
    # An empty file is a valid config fix (a marker such as py.typed), so only size and controls count.
    if content and text("fix.content", content, max_len=CONFIG_MAX, strip=False) != content:
        raise InvalidArgument("fix.content", "含有终端控制序列", "holds terminal control sequences")
    return Fix(kind, path=path, content=content)


NOTE_FIELDS = ("title", "type", "scope", "content", "topic_key", "fix", "evidence_refs", "relates_to")


def note(args: dict[str, Any]) -> NoteInput:
    declared("memory_note", args, NOTE_FIELDS)
    title = text("title", args.get("title"), max_len=TITLE_MAX, multiline=False)
    kind = _choice("type", args.get("type"), TYPES)
    scope = _choice("scope", args.get("scope"), SCOPES)
    content = args.get("content")
    if not isinstance(content, dict):
        raise InvalidArgument(
            "content", "必须是含 what、why、where、learned 的对象", "must be an object of what, why, where, learned"
        )
    extra = sorted(set(content) - set(CONTENT_MAX))
    if extra:
        raise InvalidArgument(
            f"content.{extra[0]}",
            "content 只有 what、why、where、learned 四项",
            "content has only what, why, where, learned",
        )
    parts = {key: text(f"content.{key}", content.get(key), max_len=m) for key, m in CONTENT_MAX.items()}
    topic = args.get("topic_key")
    if topic is not None:
        if not isinstance(topic, str) or not TOPIC_RE.match(topic.strip()):
            raise InvalidArgument(
                "topic_key",
                "应为两级主题，如 build/zlib-link（小写字母、数字、-_.）",
                "must be a two-level topic such as build/zlib-link (lowercase letters, digits, -_.)",
            )
        topic = topic.strip()
    refs = args.get("evidence_refs") or []
    if not isinstance(refs, list) or len(refs) > 50:
        raise InvalidArgument(
            "evidence_refs", "必须是最多 50 个记录编号的列表", "must be a list of at most 50 record ids"
        )
    evidence = tuple(prefix + hexpart for prefix, hexpart in (ref(r, "evidence_refs") for r in refs))
    relates = args.get("relates_to") or []
    if not isinstance(relates, list) or len(relates) > 50:
        raise InvalidArgument("relates_to", "必须是最多 50 项的列表", "must be a list of at most 50 items")
    relations: list[tuple[str, str]] = []
    for item in relates:
        if not isinstance(item, dict):
            raise InvalidArgument(
                "relates_to", "每项应为 {record_ref, relation}", "each item must be {record_ref, relation}"
            )
        prefix, hexpart = ref(item.get("record_ref"), "relates_to.record_ref")
        relations.append((prefix + hexpart, _choice("relates_to.relation", item.get("relation"), RELATIONS)))
    return NoteInput(
        title=title,
        type=kind,
        scope=scope,
        topic_key=topic,
        fix=fix(args.get("fix")),
        evidence_refs=evidence,
        relates_to=tuple(relations),
        **parts,
    )

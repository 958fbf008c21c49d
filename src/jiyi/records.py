"""The record model (docs/spec.md §3): what a note stores, its fix, its evidence and its relations."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

TYPES = ("decision", "bugfix", "pattern", "config", "discovery", "learning", "pitfall")
SCOPES = ("project", "global")
FIX_KINDS = ("command", "diff", "config")
RELATIONS = ("wrong", "outdated")
# Who a person's mark (``Store.mark``, the review page) reads as made by, where a record's mark names the record.
HUMAN_MARK = "human"

ORIGIN_LABELS = {
    "note": "本机笔记",
    "local_auto": "本机自动确认",
    "team": "团队共享",
    "team_verified": "团队核验",
    "human": "人工确认",
}
OUTCOMES = ("成功", "失败", "未知")
# ``locale = "en"`` (docs/spec.md §2): the same labels in English.
ORIGIN_LABELS_EN = {
    "note": "local note",
    "local_auto": "confirmed here automatically",
    "team": "team shared",
    "team_verified": "team verified",
    "human": "confirmed by a person",
}
OUTCOMES_EN = {"成功": "success", "失败": "failure", "未知": "unknown"}

LOCAL_PREFIX = "lr_"
REMOTE_PREFIX = "rr_"


def new_hex() -> str:
    return uuid.uuid4().hex


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def parse_time(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp)


@dataclass(frozen=True)
class Fix:
    """A verified change a record carries: a command, a diff or a config file's content; a note
    gives it as a dict::

        result = session.note(..., fix={"kind": "command", "command": "cc main.o -lz"})
        result.record.fix  # Fix(kind='command', command='cc main.o -lz', ...)
    """

    kind: str  # command | diff | config
    command: str | None = None
    diff: str | None = None
    path: str | None = None
    content: str | None = None

    def to_dict(self) -> dict[str, str]:
        data = {"kind": self.kind}
        for key in ("command", "diff", "path", "content"):
            value = getattr(self, key)
            if value is not None:
                data[key] = value
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Fix:
        return cls(
            kind=str(data["kind"]),
            command=data.get("command"),
            diff=data.get("diff"),
            path=data.get("path"),
            content=data.get("content"),
        )


@dataclass(frozen=True)
class Reproduction:
    """How to meet the failure again, captured when a note is written in a git repository: the
    command that failed, where to get the code (the remote URL, else the local path) and the commit;
    and, when the fix is a changed command, that command: it is what must pass after the fix
    (``checked_by``). Without it the failing command must pass, as before the field existed."""

    command: str
    repo: str
    commit: str
    cwd: str = ""  # where the command ran, relative to the repository's top
    check: str | None = None  # the command that must pass after the fix; None: ``command``

    def to_dict(self) -> dict[str, str]:
        data = {"command": self.command, "repo": self.repo, "commit": self.commit, "cwd": self.cwd}
        if self.check is not None:  # absent, not null: lines of records without it stay as they were
            data["check"] = self.check
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Reproduction:
        check = data.get("check")
        return cls(
            str(data["command"]),
            str(data["repo"]),
            str(data["commit"]),
            str(data.get("cwd", "")),
            str(check) if check else None,
        )


def checked_by(reproduction: Reproduction | None, fix: Fix | None) -> Reproduction | None:
    """``reproduction`` with the command that must pass after ``fix``: the fix command itself when it
    is the failing command changed — its words all kept, in order, some added (``cc x.c`` → ``cc x.c
    -lz``, ``python check.py`` → ``PYTHONPATH=stub python check.py``). Any other fix (``pip install
    y``, a diff) repairs the checkout and the failing command must pass again: no check. Only such a
    variant is taken, so that a fix command that merely exits 0 (``ls``) cannot pass for the check."""
    if reproduction is None:
        return None
    check = None
    if fix is not None and fix.kind == "command" and fix.command and _variant(reproduction.command, fix.command):
        check = fix.command
    return replace(reproduction, check=check)


def _variant(failed: str, changed: str) -> bool:
    words, left = failed.split(), iter(changed.split())
    return words != changed.split() and all(word in left for word in words)  # a subsequence


@dataclass(frozen=True)
class Verification:
    """The replay runs of a record so far (docs/spec.md §1's ``核验`` line): how, when last, where."""

    how: str  # "replay"
    date: str  # YYYY-MM-DD of the last run
    environment: str  # e.g. "os=linux,arch=x86_64"
    passed: int
    tries: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "how": self.how,
            "date": self.date,
            "environment": self.environment,
            "passed": self.passed,
            "tries": self.tries,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Verification:
        return cls(
            str(data["how"]), str(data["date"]), str(data["environment"]), int(data["passed"]), int(data["tries"])
        )


@dataclass(frozen=True)
class Relation:
    source_id: str  # the record that made the mark
    relation: str  # wrong | outdated


@dataclass
class Record:
    """One memory: a note or an automatic record, with its counters, indexes and marks; its
    ``id`` is ``lr_<hex>`` for a record of this machine, ``rr_<hex>`` for one from the team::

        record = session.read("lr_01a163fbe95e791e8c5c45763b9e6937").record
        print(record.id, record.title, record.learned, record.origin_label)
    """

    hex: str
    title: str
    type: str
    scope: str
    what: str
    why: str
    where: str
    learned: str
    project: str
    project_key: str
    origin: str = "note"
    remote: bool = False
    topic_key: str | None = None
    revision: int = 1
    fix: Fix | None = None
    environment: dict[str, str] = field(default_factory=dict)
    tool_name: str | None = None
    outcome: str = "未知"
    sources: int = 1
    used_success: int = 0
    evidence_refs: list[str] = field(default_factory=list)
    session_id: str = ""
    created: str = ""
    updated: str = ""
    forgotten: bool = False
    signatures: tuple[str, ...] = ()
    symbols: tuple[str, ...] = ()
    marked: list[Relation] = field(default_factory=list)
    reproduction: Reproduction | None = None
    verification: Verification | None = None

    @property
    def id(self) -> str:
        return (REMOTE_PREFIX if self.remote else LOCAL_PREFIX) + self.hex

    @property
    def is_wrong(self) -> bool:
        return any(m.relation == "wrong" for m in self.marked)

    @property
    def is_outdated(self) -> bool:
        return any(m.relation == "outdated" for m in self.marked)

    @property
    def origin_label(self) -> str:
        return ORIGIN_LABELS.get(self.origin, self.origin)

    def origin_label_in(self, locale: str) -> str:
        return ORIGIN_LABELS_EN.get(self.origin, self.origin) if locale == "en" else self.origin_label


@dataclass(frozen=True)
class Revision:
    """One version of a record: the session that wrote it and when, what changed (in words),
    and the fields as they were::

        for rev in memory.store.revisions(record.hex):
            print(rev.revision, rev.created, rev.change)
    """

    hex: str
    revision: int
    session_id: str
    created: str
    change: str  # what changed, in words: "created", "title, learned"
    snapshot: dict[str, Any]


@dataclass(frozen=True)
class NoteInput:
    """A validated ``memory_note`` call."""

    title: str
    type: str
    scope: str
    what: str
    why: str
    where: str
    learned: str
    topic_key: str | None = None
    fix: Fix | None = None
    evidence_refs: tuple[str, ...] = ()
    relates_to: tuple[tuple[str, str], ...] = ()  # (record_ref, relation)


def snapshot(record: Record) -> dict[str, Any]:
    """The fields a revision keeps: what the author wrote, not the counters."""
    return {
        "title": record.title,
        "type": record.type,
        "scope": record.scope,
        "what": record.what,
        "why": record.why,
        "where": record.where,
        "learned": record.learned,
        "topic_key": record.topic_key,
        "fix": record.fix.to_dict() if record.fix else None,
        "evidence_refs": list(record.evidence_refs),
        "origin": record.origin,
        "outcome": record.outcome,
    }


def is_hex(text: object) -> bool:
    """Whether ``text`` is a record's hex: 32 lowercase hexadecimal digits."""
    return isinstance(text, str) and len(text) == 32 and all(c in "0123456789abcdef" for c in text)


def split_ref(ref: str) -> tuple[str, str] | None:
    """``lr_<hex>`` / ``rr_<hex>`` → (prefix, hex); None when it is not an id."""
    if len(ref) != 35 or ref[:3] not in (LOCAL_PREFIX, REMOTE_PREFIX) or not is_hex(ref[3:]):
        return None
    return ref[:3], ref[3:]


# The columns a record is stored in, in the order both stores read them (``record_from_columns``).
RECORD_COLUMNS = (
    "hex, remote, title, type, scope, what, why, loc, learned, topic_key, revision, fix, origin, project, "
    "project_key, environment, tool_name, outcome, sources, used_success, evidence_refs, session_id, "
    "created, updated, reproduction, verification, forgotten"
)


def _same(value: Any) -> Any:
    return value


def record_from_columns(
    row: Sequence[Any],
    *,
    signatures: Sequence[str],
    symbols: Sequence[str],
    marked: list[Relation],
    decode: Callable[[Any], Any] = _same,
) -> Record:
    """The record of a row of ``RECORD_COLUMNS`` with its indexes; ``decode`` turns a JSON column
    into its value (SQLite keeps JSON as text, PostgreSQL hands out jsonb decoded)."""
    (hexid, remote, title, kind, scope, what, why, loc, learned, topic, revision, fix, origin, project,
     project_key, environment, tool, outcome, sources, used, refs, session_id, created, updated,
     reproduction, verification, forgotten) = row  # fmt: skip
    return Record(
        hex=hexid,
        remote=bool(remote),
        title=title,
        type=kind,
        scope=scope,
        what=what,
        why=why,
        where=loc,
        learned=learned,
        topic_key=topic,
        revision=revision,
        fix=Fix.from_dict(decode(fix)) if fix else None,
        origin=origin,
        project=project,
        project_key=project_key,
        environment=dict(decode(environment)),
        tool_name=tool,
        outcome=outcome,
        sources=sources,
        used_success=used,
        evidence_refs=list(decode(refs)),
        session_id=session_id,
        created=created,
        updated=updated,
        forgotten=bool(forgotten),
        signatures=tuple(signatures),
        symbols=tuple(symbols),
        marked=marked,
        reproduction=Reproduction.from_dict(decode(reproduction)) if reproduction else None,
        verification=Verification.from_dict(decode(verification)) if verification else None,
    )

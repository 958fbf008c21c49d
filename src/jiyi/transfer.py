"""Export and import as JSON Lines: one record a line, with every revision and the marks it made.

The round trip is lossless: import what was exported into an empty store, export again, and the
two files are identical. Derived indexes (key lines, full-text terms) are rebuilt on import; the
signatures and symbols travel as they were, because some came from the failure the writing
session saw, which is not in the record's text.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict
from typing import Any, TextIO

from .analysis.indexing import derive
from .errors import InvalidArgument
from .records import Fix, Record, Reproduction, Revision, Verification
from .store.base import Store

FORMAT = 1
_FIELDS = (
    "hex",
    "remote",
    "title",
    "type",
    "scope",
    "what",
    "why",
    "where",
    "learned",
    "topic_key",
    "revision",
    "origin",
    "project",
    "project_key",
    "environment",
    "tool_name",
    "outcome",
    "sources",
    "used_success",
    "evidence_refs",
    "session_id",
    "created",
    "updated",
)


def record_to_json(store: Store, record: Record) -> dict[str, Any]:
    data: dict[str, Any] = {"jiyi_export": FORMAT, "id": record.id}
    data.update({name: getattr(record, name) for name in _FIELDS})
    data["fix"] = record.fix.to_dict() if record.fix else None
    data["reproduction"] = record.reproduction.to_dict() if record.reproduction else None
    data["verification"] = record.verification.to_dict() if record.verification else None
    data["signatures"] = list(record.signatures)
    data["symbols"] = list(record.symbols)
    data["revisions"] = [asdict(rev) for rev in store.revisions(record.hex)]
    data["marks"] = [{"target": t, "relation": r, "created": c} for t, r, c in store.marks_by(record.hex)]
    return data


def export(store: Store, out: TextIO, progress: Callable[[int], None] | None = None) -> int:
    count = 0
    for record in store.iter_records():
        out.write(json.dumps(record_to_json(store, record), ensure_ascii=False, sort_keys=True) + "\n")
        count += 1
        if progress:
            progress(1)
    return count


def record_from_json(data: dict[str, Any]) -> Record:
    """The record of an export line (``record_to_json``); KeyError or TypeError when one is missing
    a field. Lines exported before reproductions were kept have none."""
    values = {name: data[name] for name in _FIELDS}
    fix, reproduction, verification = data.get("fix"), data.get("reproduction"), data.get("verification")
    return Record(
        **values,
        fix=Fix.from_dict(fix) if fix else None,
        signatures=tuple(data.get("signatures", ())),
        symbols=tuple(data.get("symbols", ())),
        reproduction=Reproduction.from_dict(reproduction) if reproduction else None,
        verification=Verification.from_dict(verification) if verification else None,
    )


def parse_lines(lines: Iterable[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidArgument(
                "import", f"第 {number} 行不是 JSON：{exc.msg}", f"line {number} is not JSON: {exc.msg}"
            ) from None
        except RecursionError:
            raise InvalidArgument("import", f"第 {number} 行嵌套过深", f"line {number} is nested too deeply") from None
        if not isinstance(data, dict) or data.get("jiyi_export") != FORMAT:
            raise InvalidArgument(
                "import", f"第 {number} 行不是 jiyi 导出的记录", f"line {number} is no record jiyi exported"
            )
        yield number, data


def import_lines(store: Store, lines: Iterable[str], progress: Callable[[int], None] | None = None) -> tuple[int, int]:
    """(imported, skipped because already present). Every line is checked before anything is written."""
    parsed: list[tuple[Record, list[Revision], list[tuple[str, str, str]]]] = []
    for number, data in parse_lines(lines):
        try:
            record = record_from_json(data)
            revisions = [Revision(**rev) for rev in data.get("revisions", [])]
            marks = [(m["target"], m["relation"], m["created"]) for m in data.get("marks", [])]
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidArgument("import", f"第 {number} 行缺少字段：{exc}") from None
        parsed.append((record, revisions, marks))
    imported = skipped = 0
    for record, revisions, marks in parsed:
        done = store.import_record(record, revisions, marks, derive(record))
        imported += done
        skipped += not done
        if progress:
            progress(1)
    return imported, skipped

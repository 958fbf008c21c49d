"""What the store indexes for a record, derived from its text in one place."""

from __future__ import annotations

from dataclasses import dataclass

from . import lexical
from .records import Record
from .signature import analyze


@dataclass(frozen=True)
class Derived:
    key_lines: tuple[str, ...]
    normalized: tuple[str, ...]  # kept so records can be re-signed after an algorithm change
    index_title: str
    index_body: str


def derive(record: Record) -> Derived:
    analysis = analyze(record.what)
    return Derived(
        key_lines=analysis.key_lines,
        normalized=analysis.normalized,
        index_title=lexical.index_text(record.title),
        index_body=lexical.index_text(f"{record.what}\n{record.why}\n{record.where}\n{record.learned}"),
    )

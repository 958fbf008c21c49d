"""Writing a record the way a note is written (``Session.note``) and an automatic record is
(``auto_record``): a record with a topic that already has one revises it, keeping its identity,
origin and counters; each write keeps a revision naming what changed.

Imports no ranking: the hook writes automatic records through here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING

from .analysis.indexing import derive
from .records import Record, Revision, snapshot

if TYPE_CHECKING:
    from .store.base import Store


def as_revision(store: Store, record: Record, existing: Record | None, session_id: str) -> Record:
    """``record`` as the next revision of ``existing`` (the record its topic has); ``record`` itself
    when there is none. Sources counts the independent sessions that wrote or confirmed it."""
    if existing is None:
        return record
    earlier = {rev.session_id for rev in store.revisions(existing.hex)}
    return replace(
        record,
        hex=existing.hex,
        remote=existing.remote,
        origin=existing.origin,
        project=existing.project,
        project_key=existing.project_key,
        session_id=existing.session_id,
        created=existing.created,
        tool_name=record.tool_name or existing.tool_name,
        revision=existing.revision + 1,
        sources=existing.sources + (0 if session_id in earlier else 1),
        used_success=existing.used_success,
        marked=existing.marked,
    )


def save(
    store: Store,
    record: Record,
    existing: Record | None,
    session_id: str,
    *,
    marks: Iterable[tuple[str, str]] = (),
) -> Revision:
    """Write ``record`` (from ``as_revision``) with its revision and indexes in one transaction."""
    if existing is not None:
        before, after = snapshot(existing), snapshot(record)
        change = ", ".join(k for k in after if after[k] != before.get(k)) or "no change"
    else:
        change = "created"
    revision = Revision(record.hex, record.revision, session_id, record.updated, change, snapshot(record))
    store.write_record(record, revision, derive(record), marks=marks, session_id=session_id)
    return revision

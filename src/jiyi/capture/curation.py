"""Curating automatic records (docs/spec.md §5): which wait for confirmation before the team sees them,
a person's approval, and retiring what older versions recorded as a fix while the agent only looked
around (``ls``, ``cat``, ``git status``…), reversibly.

Before the same-operation rule (``store/closing.py``, ``analysis/commands.py``) any success after a
failure closed it, so a store written by jiyi up to 0.1 holds automatic records whose "fix" is a
read-only command, some of them pushed to the team. :func:`retire` finds them by their fix command
(``Fix.command``; the files an edit changed keep a record) and forgets them: out of search and
export, their forget queued for the team like any other (``team/client/forget.py``), and
:func:`restore` brings one back.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ..errors import InvalidArgument, NotFound

if TYPE_CHECKING:
    from ..records import Record
    from ..store.base import Store

AUTO_TOPIC = "auto/"  # auto_record.TOPIC_PREFIX, without importing the writer


def automatic(record: Record) -> bool:
    """Written by capture itself (``auto_record``), not a note confirmed by a fix."""
    return record.origin == "local_auto" and (record.topic_key or "").startswith(AUTO_TOPIC)


def unconfirmed(record: Record) -> bool:
    """An automatic record nothing has confirmed yet: it stays on this machine (``outbox.UNCONFIRMED``
    says the same in SQL)."""
    return automatic(record) and record.sources < 2 and record.used_success < 1


def approve(store: Store, hexid: str) -> Record:
    """A person confirms one of this machine's records: its origin becomes ``human`` (人工确认),
    so the team push sends it. Raises NotFound / InvalidArgument."""
    record = store.get(hexid)
    if record is None:
        raise NotFound(f"lr_{hexid}")
    if not store.approve(hexid):
        raise InvalidArgument("id", f"{record.id} is not this machine's note or automatic record")
    approved = store.get(hexid)
    assert approved is not None
    return approved


def only_looked(record: Record) -> bool:
    """An automatic record whose fix only read: its fix command is read-only, or runs the failing
    program on another target, and no file was edited (its ``where`` names none)."""
    if not automatic(record) or "files: " in record.where:
        return False
    command = record.fix.command if record.fix is not None and record.fix.kind == "command" else None
    if not command:
        return False
    from ..analysis.commands import READ_ONLY, SIBLING, read_only, role

    if read_only(command):
        return True
    failed = record.reproduction.command if record.reproduction is not None else None
    return failed is not None and role(failed, command) in (READ_ONLY, SIBLING)


@dataclass
class Retired:
    checked: int  # automatic records looked at
    retired: list[Record]  # forgotten now


def retire(store: Store, *, dry_run: bool = False) -> Retired:
    """Forget every live automatic record whose fix only read (:func:`only_looked`)."""
    checked = 0
    found: list[Record] = []
    for record in store.iter_records():
        if automatic(record):
            checked += 1
            if only_looked(record):
                found.append(record)
    if not dry_run:
        found = [r for r in found if store.forget(r.hex)]
    return Retired(checked, found)


def restore(store: Store, hexid: str) -> Record:
    """Bring a forgotten record back into search and export (its index re-derived). Raises NotFound,
    or InvalidArgument when a live record holds its topic now."""
    from ..analysis.indexing import derive

    record = store.get(hexid, include_forgotten=True)
    if record is None:
        raise NotFound(f"lr_{hexid}")
    if not record.forgotten:
        return record
    from ..analysis.signature import analyze, record_symbols

    # Forgetting dropped its keys: derived again from its text (as ``store/reindex.py`` does).
    analysis = analyze(record.what)
    back = replace(
        record, forgotten=False, signatures=analysis.signatures, symbols=record_symbols(record.title, analysis)
    )
    topic = record.topic_key
    # The topic's check and the write under its lock, as a note's are: a note of the topic written
    # in between would otherwise clash with the restored record.
    with store.topic_lock(topic, record.scope, record.project_key) if topic else nullcontext():
        if topic is not None:
            holder = store.find_topic(topic, record.scope, record.project_key)
            if holder is not None and holder.hex != hexid:
                raise InvalidArgument("id", f"{holder.id} holds its topic {topic} now")
        store.reindex_record(back, derive(back))
    return back

"""The outbox of team memory (docs/team-protocol.md): what this machine sends the team server
(the client's state, ``sync_state``, is ``state``'s).

The outbox is filled by SQLite triggers (migration ``m006_team_sync``) once syncing is on
(``enable``), so every path that writes a record — notes, automatic records, evidence, imports —
queues it in its own transaction, coalesced to one row a record. A push sends each queued record's
current state and removes a row only after the server answered for it, and only when the record
did not change meanwhile (``changes``), so a retry after a crash between send and answer sends the
same state again, which the server merges as a no-op. A failure leaves the rows and backs off:
5 s, doubling to 10 min, per row and for the server as a whole (``retry_at``, which background
syncs wait out).

Evidence: a record's ``sources`` / ``used_success`` in the store are the totals shown; the table
``team_evidence`` holds the team's share of them (the pulled totals less this machine's own). A
push sends ``total - team share`` — this machine's own, absolute, as the server keeps it per
member — and a pull replaces only the team share (``sync``), so counting done here meanwhile is
never overwritten.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from ...errors import Forbidden, InvalidArgument, JiyiError
from ...records import Record, now
from ...transfer import record_to_json
from ..protocol import MAX_BODY, PUSH_BATCH
from .state import _stamp, get_state, mark_answered, mark_failed, set_state

if TYPE_CHECKING:
    import sqlite3

    from ...store.sqlite.store import SQLiteStore
    from .http import TeamClient

BATCH = PUSH_BATCH
# A batch stops short of the server's limit: the envelope and JSON escaping add a little.
BATCH_BYTES = MAX_BODY - 64 * 1024
Progress = Callable[[int], None]
Batch = list[tuple[str, int, dict[str, Any]]]  # (hex, changes when read, wire line)


def enable(store: SQLiteStore) -> None:
    """Turn syncing on (once): this machine's records written so far are queued, and from now on
    the triggers queue every change."""
    with store.transaction() as db:
        if get_state(db, "sync") == "on":
            return
        stamp = now()
        db.execute(
            "INSERT OR IGNORE INTO outbox (hex, queued) SELECT hex, ? FROM records WHERE remote = 0 AND forgotten = 0",
            (stamp,),
        )
        set_state(db, "sync", "on")


# An automatic record stays on its machine until it is confirmed (docs/spec.md §5): the same fix
# in a second session (sources ≥ 2), a read of it followed by success (used_success ≥ 1), or a
# person's approval (``Store.approve``: origin ``human``). Then the triggers' row, held till now, is due.
UNCONFIRMED = (
    "(r.origin = 'local_auto' AND coalesce(r.topic_key, '') LIKE 'auto/%' AND r.sources < 2 AND r.used_success < 1)"
)
_KEPT_HOME = {
    "all": UNCONFIRMED,
    "global": f"((r.remote = 0 AND r.scope = 'project') OR {UNCONFIRMED})",
    "none": "1",
}


@dataclass
class Status:
    machine: str
    cursor: int
    pending: int  # rows a push would send under the current team_push
    held: int  # rows team_push keeps home
    unconfirmed: int  # of those, automatic records waiting for a confirmation
    failing: int  # rows whose last push failed
    forgets: int  # forgets and purges of this machine's records not yet answered (``forget``)
    last_push: str | None
    last_pull: str | None
    last_error: str | None
    retry_at: str | None
    syncing: bool

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def status(store: SQLiteStore, team_push: str = "all") -> Status:
    home = _KEPT_HOME[team_push]
    with store.transaction() as db:
        counts = db.execute(
            f"SELECT COALESCE(sum(NOT {home}), 0), COALESCE(sum({home}), 0), "
            f"COALESCE(sum(o.last_error IS NOT NULL AND NOT {home}), 0), COALESCE(sum({UNCONFIRMED}), 0) "
            "FROM outbox o JOIN records r ON r.hex = o.hex"
        ).fetchone()
        values = {k: get_state(db, k) for k in ("machine", "cursor", "last_push", "last_pull", "last_error", "sync")}
        retry_at = get_state(db, "retry_at")
        forgets = int(db.execute("SELECT count(*) FROM outbox_forget").fetchone()[0])
    return Status(
        machine=values["machine"] or "",
        cursor=int(values["cursor"] or 0),
        pending=int(counts[0]),
        held=int(counts[1]),
        unconfirmed=int(counts[3]),
        failing=int(counts[2]),
        forgets=forgets,
        last_push=values["last_push"],
        last_pull=values["last_pull"],
        last_error=values["last_error"],
        retry_at=retry_at,
        syncing=values["sync"] == "on",
    )


def waiting(store: SQLiteStore) -> bool:
    """The server failed lately and its backoff has not run out (background syncs wait)."""
    with store.transaction() as db:
        retry_at = get_state(db, "retry_at")
    return retry_at is not None and retry_at > _stamp(datetime.now(timezone.utc))


# -- push ------------------------------------------------------------------------------------
def wire_line(store: SQLiteStore, db: sqlite3.Connection, record: Record) -> dict[str, Any]:
    """The record as pushed: its export line with this machine's own counters (absolute)."""
    line = record_to_json(store, record)
    team = db.execute("SELECT sources, used_success FROM team_evidence WHERE hex = ?", (record.hex,)).fetchone()
    if team is not None:
        line["sources"] = max(0, record.sources - int(team[0]))
        line["used_success"] = max(0, record.used_success - int(team[1]))
    return line


@dataclass
class PushReport:
    sent: int = 0
    accepted: int = 0
    unchanged: int = 0
    refused: list[str] = field(default_factory=list)  # hexes the server refused (another team's)
    # revisions the server did not take: the records are another member's (``REFUSED_KEY``)
    revisions_refused: list[str] = field(default_factory=list)
    forgotten: int = 0  # this machine's forgets and purges the server applied (``forget``)
    forgets_refused: int = 0  # ... and those it refused: another member pushed the record first


def _due(store: SQLiteStore, team_push: str, force: bool, skip: set[str]) -> list[tuple[str, int]]:
    clock = "" if force else "AND o.next_try <= ? "
    params: list[Any] = [] if force else [_stamp(datetime.now(timezone.utc))]
    with store.transaction() as db:
        # A forgotten record is not pushed again: its forget goes instead (``forget``).
        db.execute("DELETE FROM outbox WHERE hex IN (SELECT hex FROM records WHERE forgotten = 1)")
        rows = db.execute(
            f"SELECT o.hex, o.changes FROM outbox o JOIN records r ON r.hex = o.hex "
            f"WHERE NOT {_KEPT_HOME[team_push]} {clock}ORDER BY o.queued, o.hex LIMIT ?",
            [*params, BATCH + len(skip)],
        ).fetchall()
    return [(str(h), int(c)) for h, c in rows if h not in skip][:BATCH]


def push(
    store: SQLiteStore,
    client: TeamClient,
    *,
    team_push: str = "all",
    force: bool = False,
    progress: Progress | None = None,
) -> PushReport:
    """Send what the outbox holds (due rows; every row with ``force``) in batches of at most 100
    records and 1 MiB. Raises ``Unavailable`` (after backing off) when the server cannot be reached;
    whatever was not answered stays queued."""
    report = PushReport()
    if team_push == "none":
        return report
    enable(store)
    with store.transaction() as db:
        machine = get_state(db, "machine") or ""
    skip: set[str] = set()  # refused or too large this time: not sent again in this push
    while True:
        rows = _due(store, team_push, force, skip)
        if not rows:
            return report
        batch: Batch = []
        size = 0
        with store.transaction() as db:
            for hexid, changes in rows:
                record = store.get(hexid)
                if record is None:  # gone meanwhile: nothing to send
                    db.execute("DELETE FROM outbox WHERE hex = ?", (hexid,))
                    continue
                line = wire_line(store, db, record)
                length = len(json.dumps(line, ensure_ascii=False).encode())
                if batch and size + length > BATCH_BYTES:
                    break
                batch.append((hexid, changes, line))
                size += length
        if len(batch) == 1 and size > BATCH_BYTES:
            mark_failed(store, [batch[0][0]], InvalidArgument("record", "larger than the server takes (1 MiB)"))
            skip.add(batch[0][0])
            continue
        if not batch:
            return report
        try:
            _send(store, client, machine, batch, report)
        except JiyiError as exc:
            mark_failed(store, [h for h, _, _ in batch], exc)
            raise
        skip.update(h for h, _, _ in batch)  # once a push: a record changed on the way goes next time
        if progress:
            progress(len(batch))


# Revisions the server refused (POST /v1/push's ``refused``: the record is another member's, who
# pushed it first; only they or an operator revise it), kept in ``sync_state`` as JSON
# {hex: [revision, at]}: the outbox row goes (sending it again would be refused again), the record
# stays as it is on this machine, and ``jiyi team status`` lists it until a later revision of it
# is accepted. At most ``REFUSED_KEPT``, the latest.
REFUSED_KEY = "push_refused"
REFUSED_KEPT = 200


def _note_refused(db: sqlite3.Connection, refused: list[tuple[str, int]], accepted: set[str]) -> None:
    kept: dict[str, list[Any]] = json.loads(get_state(db, REFUSED_KEY) or "{}")
    if not refused and not accepted & kept.keys():
        return
    stamp = now()
    for hexid, revision in refused:
        kept.pop(hexid, None)
        kept[hexid] = [revision, stamp]
    for hexid in accepted:
        kept.pop(hexid, None)
    latest = dict(list(kept.items())[-REFUSED_KEPT:])
    set_state(db, REFUSED_KEY, json.dumps(latest) if latest else None)


def refused_revisions(store: SQLiteStore) -> list[tuple[str, int, str]]:
    """(hex, revision, when) of this machine's revisions the team server refused, oldest first."""
    with store.transaction() as db:
        kept: dict[str, list[Any]] = json.loads(get_state(db, REFUSED_KEY) or "{}")
    return [(h, int(r), str(at)) for h, (r, at) in kept.items()]


def _send(
    store: SQLiteStore,
    client: TeamClient,
    machine: str,
    batch: list[tuple[str, int, dict[str, Any]]],
    report: PushReport,
) -> set[str]:
    """Push one batch; a 403 (a record of another team in it) is retried one record at a time, so
    one refused record does not hold back the others. Returns the hexes the server answered for."""
    try:
        answer = client.push(machine, [line for _, _, line in batch])
    except Forbidden as exc:
        if len(batch) == 1:
            report.refused.append(batch[0][0])
            mark_failed(store, [batch[0][0]], exc)
            return set()
        done: set[str] = set()
        for item in batch:
            done |= _send(store, client, machine, [item], report)
        return done
    accepted, unchanged, refused = set(answer["accepted"]), set(answer["unchanged"]), set(answer["refused"])
    answered = accepted | unchanged | refused
    report.sent += len(batch)
    report.accepted += len(accepted)
    report.unchanged += len(unchanged)
    report.revisions_refused += [h for h, _, _ in batch if h in refused]
    with store.transaction() as db:
        _note_refused(db, [(h, int(line.get("revision", 0))) for h, _, line in batch if h in refused], accepted)
        # Only when nothing changed while the batch was on the way: otherwise the newer state goes next.
        db.executemany(
            "DELETE FROM outbox WHERE hex = ? AND changes = ?", [(h, c) for h, c, _ in batch if h in answered]
        )
        db.executemany(
            "UPDATE outbox SET attempts = 0, next_try = '', last_error = NULL WHERE hex = ?",
            [(h,) for h, _, _ in batch if h in answered],
        )
        set_state(db, "last_push", now())
        mark_answered(db)
    return answered

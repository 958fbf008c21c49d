"""Forget on the team server, the client's half (docs/team-protocol.md, "Forget").

``jiyi forget`` / ``--purge`` of one of this machine's records, once syncing is on, queues it in
``outbox_forget`` (SQLite triggers of migration ``m008_team_forget``, in the forget's own
transaction). A push sends that queue first (``send``): the server forgets the record for the
team or, for a purge, erases its text, revisions, evidence and replay runs, and leaves a
tombstone. A row leaves the queue only once the server answered for its hex, so a forget made
offline goes out with the next sync.

A pull reads the tombstones after its own cursor (``forgotten_cursor``) and drops the pulled copy
of each record there (``pull``): out of search at once; erased for good, with the store compacted,
when the author purged it (a leaked secret must not stay on the other machines either). This
machine's own records are never dropped by a tombstone: their author's forget is what made it.

Only a record's author (the member whose push first stored it) may take it out over the server:
a forget the server refuses leaves the queue for ``forget_refused`` (migration
``m011_forget_refused``), is not sent again, and is listed by ``jiyi team status`` until a
tombstone shows the team's operator took the record out (``jiyi team admin forget``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ...errors import JiyiError, Unavailable
from ...records import now
from ..protocol import PUSH_BATCH
from . import state

if TYPE_CHECKING:
    from ...store.sqlite.store import SQLiteStore
    from .http import TeamClient

BATCH = PUSH_BATCH
log = logging.getLogger("jiyi.team")


@dataclass
class ForgetReport:
    sent: int = 0
    forgotten: int = 0  # the team had them: now forgotten or erased there
    unknown: int = 0  # never reached the server (nothing to take back)
    refused: list[str] = field(default_factory=list)  # another member's on the team: the operator's to take out


def pending(store: SQLiteStore) -> int:
    with store.transaction() as db:
        return int(db.execute("SELECT count(*) FROM outbox_forget").fetchone()[0])


def refused(store: SQLiteStore) -> list[tuple[str, bool, str]]:
    """The forgets the server refused, (hex, purge, when), oldest first: the records are on the
    team as another member's, so only the team's operator can take them out
    (``jiyi team admin forget``)."""
    with store.transaction() as db:
        rows = db.execute("SELECT hex, purge, at FROM forget_refused ORDER BY at, hex").fetchall()
    return [(str(h), bool(p), str(a)) for h, p, a in rows]


def send(store: SQLiteStore, client: TeamClient) -> ForgetReport:
    """Send the queued forgets, at most 100 a request. Raises (after backing off, as a push does)
    when the server cannot be reached; what was not answered stays queued."""
    report = ForgetReport()
    while True:
        with store.transaction() as db:
            rows = [
                (str(h), bool(p))
                for h, p in db.execute("SELECT hex, purge FROM outbox_forget ORDER BY queued, hex LIMIT ?", (BATCH,))
            ]
        if not rows:
            return report
        try:
            answer = client.forget(rows)
        except JiyiError as exc:
            state.mark_failed(store, (), exc)
            raise
        if answer is None:
            # A server from before forget: the queue waits for its upgrade, and pushes go on.
            log.warning("team server %s cannot forget yet: %d forget(s) stay queued", client.url, len(rows))
            return report
        turned_down = set(answer["refused"])
        answered = set(answer["forgotten"]) | set(answer["unknown"]) | turned_down
        if not answered & {h for h, _ in rows}:
            return report  # an answer for none of them: stop rather than ask again forever
        report.sent += len(rows)
        report.forgotten += len(answer["forgotten"])
        report.unknown += len(answer["unknown"])
        report.refused += [h for h, _ in rows if h in turned_down]
        with store.transaction() as db:
            # Only as sent: a soft forget turned into a purge meanwhile goes again.
            done = [(h, int(p)) for h, p in rows if h in answered]
            db.executemany("DELETE FROM outbox_forget WHERE hex = ? AND purge = ?", done)
            # Refused: not sent again (the server would refuse it again), kept for `jiyi team status`.
            stamp = now()
            db.executemany(
                "INSERT INTO forget_refused (hex, purge, at) VALUES (?, ?, ?) "
                "ON CONFLICT(hex) DO UPDATE SET purge = excluded.purge, at = excluded.at",
                [(h, p, stamp) for h, p in done if h in turned_down],
            )
            db.executemany("DELETE FROM forget_refused WHERE hex = ?", [(h,) for h, _ in done if h not in turned_down])
            state.mark_answered(db)


def pull(store: SQLiteStore, client: TeamClient, *, page: int = 200) -> int:
    """Drop the pulled copies of the records the team forgot since the last pull; returns how many."""
    with store.transaction() as db:
        cursor = int(state.get_state(db, "forgotten_cursor") or 0)
    dropped = 0
    while True:
        answer = client.forgotten(cursor, page)
        try:
            tombstones = [(str(t["hex"]), bool(t.get("purged"))) for t in answer.get("records", [])]
        except (KeyError, TypeError, AttributeError) as exc:
            raise Unavailable(f"team server sent a tombstone this version cannot read: {exc}") from exc
        with store.transaction() as db:
            remote_copy = {
                str(h): bool(remote)
                for h, remote in db.execute(
                    f"SELECT hex, remote FROM records WHERE hex IN ({','.join('?' * len(tombstones))})",
                    [h for h, _ in tombstones],
                )
            }
            # A refused forget the operator carried out meanwhile (jiyi team admin forget) is done.
            db.executemany(
                "DELETE FROM forget_refused WHERE hex = ? AND purge <= ?", [(h, int(p)) for h, p in tombstones]
            )
        # Erased, not just hidden: a later revision from its author then arrives as new. Purges
        # last, and the store compacted once, after the last of them (VACUUM rewrites the file).
        drop = sorted((t for t in tombstones if remote_copy.get(t[0])), key=lambda t: t[1])
        for n, (hexid, purged) in enumerate(drop):
            store.purge(hexid, compact=purged and n == len(drop) - 1)
        dropped += len(drop)
        cursor = int(answer.get("cursor", cursor))
        with store.transaction() as db:
            state.set_state(db, "forgotten_cursor", str(cursor))
        if not (answer.get("more") and tombstones):
            return dropped

"""The team server's operations on a ``PgStore`` beyond the ``Store`` interface: merging a push,
the changes since a pull's cursor, and replay verifications (docs/team-protocol.md).

Merging is a union, never a last-writer-wins: revisions by number (only the machine that wrote a
record writes its revisions, so equal numbers are the same revision), marks by (target, relation),
and evidence per member as absolute values whose sum is the record's counters. Pushing the same
line twice therefore changes nothing, and a no-op leaves ``seq`` alone so pulls do not see it.
"""

from __future__ import annotations

import json
import re
from dataclasses import fields, replace
from datetime import datetime, timezone
from typing import Any

from psycopg.types.json import Jsonb

from ...analysis.redact import find_secrets, redact
from ...errors import InvalidArgument, NotFound
from ...records import Record, Revision, Verification, is_hex, now
from ...transfer import record_from_json, record_to_json
from .store import PgStore

# The origins a machine gives its own records, in the order confirmation raises them (docs/spec.md §5: a
# note becomes local_auto when its failure goes away). team / team_verified are the server's word.
_CONFIRMATION = {"note": 0, "local_auto": 1, "human": 2}
# What ``forget`` answers for a record (the lists of POST /v1/forget's answer), and ``merge`` (POST /v1/push's).
FORGOTTEN, UNKNOWN, REFUSED = "forgotten", "unknown", "refused"
ACCEPTED, UNCHANGED = "accepted", "unchanged"


def _parse(data: dict[str, Any]) -> tuple[Record, list[Revision], list[tuple[str, str, str]]]:
    try:
        record = record_from_json(data)
        revisions = [Revision(**rev) for rev in data.get("revisions") or []]
        marks = [(str(m["target"]), str(m["relation"]), str(m["created"])) for m in data.get("marks") or []]
        record.sources, record.used_success = int(record.sources), int(record.used_success)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise InvalidArgument("records", f"not an export line: {exc}") from None
    if not is_hex(record.hex):
        raise InvalidArgument("records", "hex is not 32 hex digits")
    if any(rev.hex != record.hex for rev in revisions):
        raise InvalidArgument("records", "a revision of another record")
    if record.sources < 0 or record.used_success < 0:
        raise InvalidArgument("records", "negative evidence")
    return record, revisions, marks


def _scrubbed(value: Any) -> Any:
    """``value`` with every string in it redacted (a revision's snapshot: the fields as they were)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: _scrubbed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrubbed(v) for v in value]
    return value


_SIGNATURE = re.compile(r"sha256:[0-9a-f]{64}")


def _signatures(values: Any) -> tuple[str, ...]:
    """The pushed signatures that are one: a line's digest (``analysis.signature.digest``); a raw
    push could send anything there, a private key's line or a password line included."""
    return tuple(str(v) for v in values if _SIGNATURE.fullmatch(str(v)))


def _symbols(values: Any, found: list[str]) -> tuple[str, ...]:
    """The pushed symbols without any that holds a secret, alone or one of ``found`` in the pushed
    texts (``Authorization: Basic <base64>`` split into words leaves a bare base64 word no rule
    knows alone), or is a piece of 8 characters or more of one (a line of a private key)."""
    kept = []
    for value in map(str, values):
        if redact(value) != value:
            continue
        if any(secret in value or (len(value) >= 8 and value in secret) for secret in found):
            continue
        kept.append(value)
    return tuple(kept)


def _found(record: Record, revisions: list[Revision]) -> list[str]:
    """Every secret ``redact`` finds in the texts of a pushed record, as they were sent."""
    texts = [record.title, record.what, record.why, record.where, record.learned, *record.environment.values()]
    texts += [getattr(part, f.name) for part in (record.fix, record.reproduction) if part for f in fields(part)]
    texts += [json.dumps(rev.snapshot, ensure_ascii=False) for rev in revisions]
    return list({text[start:end] for text in texts if isinstance(text, str) for start, end, _ in find_secrets(text)})


def _redacted(
    record: Record, revisions: list[Revision], marks: list[tuple[str, str, str]]
) -> tuple[Record, list[Revision], list[tuple[str, str, str]]]:
    """A pushed record as the server keeps it: every text it carries redacted (docs/spec.md §6),
    whatever the client did — its fields, fix, reproduction, revisions and marks — signatures that
    are no digest and symbols that hold or are part of a secret dropped. The same text redacts to
    the same text, so a retried push still merges as a no-op."""
    fix, repro = record.fix, record.reproduction
    if fix is not None:
        fix = replace(fix, **{k: redact(v) for k in ("command", "diff", "path", "content") if (v := getattr(fix, k))})
    if repro is not None:
        repro = replace(
            repro, **{k: redact(v) for k in ("command", "repo", "cwd", "check") if (v := getattr(repro, k))}
        )
    record = replace(
        record,
        title=redact(record.title),
        what=redact(record.what),
        why=redact(record.why),
        where=redact(record.where),
        learned=redact(record.learned),
        topic_key=redact(record.topic_key) if record.topic_key else record.topic_key,
        project=redact(record.project),
        session_id=redact(record.session_id),
        tool_name=redact(record.tool_name) if record.tool_name else record.tool_name,
        environment={str(k): redact(str(v)) for k, v in record.environment.items()},
        evidence_refs=[redact(str(ref)) for ref in record.evidence_refs],
        signatures=_signatures(record.signatures),
        symbols=_symbols(record.symbols, _found(record, revisions)),
        fix=fix,
        reproduction=repro,
    )
    revisions = [
        replace(rev, session_id=redact(rev.session_id), change=redact(rev.change), snapshot=_scrubbed(rev.snapshot))
        for rev in revisions
    ]
    return record, revisions, [(redact(t), redact(r), redact(c)) for t, r, c in marks]


class TeamStore(PgStore):
    """A team's store as the team server uses it: ``PgStore`` and the operations beyond the
    ``Store`` interface (merging a push, changes by cursor, forget for the team, verifications)::

        TeamStore(db, member.team_id).merge_pushed(line, member.name)
    """

    def merge_pushed(self, data: dict[str, Any], member: str, *, operator: bool = False) -> bool:
        """``merge``: True when the line changed the record and nothing of it was refused."""
        return self.merge(data, member, operator=operator) == ACCEPTED

    def merge(self, data: dict[str, Any], member: str, *, operator: bool = False) -> str:
        """Merge one pushed record (an export line, ``transfer.record_to_json``, with its
        ``reproduction``) from ``member``, its texts redacted first. A new record is inserted, with
        ``member`` as its author; a known one gains the revisions it lacks (by number), takes the
        fields of the highest revision, gains the marks it lacks (by target and relation), and
        ``member``'s evidence (absolute ``sources`` / ``used_success``) replaces that member's
        earlier values, the record's counters being the sums over members. The server's
        verification and ``team_verified`` origin are kept.

        Only the author (or an ``operator``) revises a record: from anyone else a higher revision,
        revisions or marks the record lacks, or a raised origin are not taken, and the answer is
        ``REFUSED`` (that member's evidence is still merged). A record stored before authors
        (``m009_record_authors``) is claimed by the first member who revises it. ``UNCHANGED`` when
        nothing changed (a retried push): then ``seq`` stays; else ``ACCEPTED``.
        ``InvalidArgument`` for a malformed line."""
        from ...analysis.indexing import derive

        record, revisions, marks = _parse(data)
        record, revisions, marks = _redacted(record, revisions, marks)
        derived = derive(record)  # before the transaction: no lock waits on the analysis
        team = self.team
        refused = False
        with self.writing() as cur:
            # The row lock orders concurrent pushes of one record; two first pushes meet on the primary key
            # (the second waits for the first, then updates).
            cur.execute(
                "SELECT revision, origin, verification, author FROM records WHERE team_id = %s AND hex = %s FOR UPDATE",
                (team, record.hex),
            )
            row = cur.fetchone()
            # After the row lock: a purge that committed meanwhile is seen. A purged record's old copy
            # (another machine's, pushed before it pulled the purge) must not bring its text back.
            cur.execute("SELECT purged FROM tombstones WHERE team_id = %s AND hex = %s", (team, record.hex))
            gone = cur.fetchone()
            if gone is not None and gone[0]:
                return UNCHANGED
            author = None if row is None else row[3]
            mine = row is None or operator or author is None or author == member
            changed = False
            if mine:
                changed = self.put_revisions(cur, revisions) > 0
                changed = self.put_marks(cur, record.hex, marks) > 0 or changed
            else:
                # Another member's record: what the line would add is looked at, never written.
                refused = record.revision > int(row[0]) or self._would_add(cur, record.hex, revisions, marks)  # type: ignore[index]
            cur.execute(
                "INSERT INTO evidence AS e (team_id, hex, member, sources, used_success) VALUES (%s, %s, %s, %s, %s) "
                "ON CONFLICT (team_id, hex, member) DO UPDATE SET sources = excluded.sources, "
                "used_success = excluded.used_success "
                "WHERE (e.sources, e.used_success) IS DISTINCT FROM (excluded.sources, excluded.used_success)",
                (team, record.hex, member, record.sources, record.used_success),
            )
            changed = cur.rowcount > 0 or changed
            # The record's row last, after the evidence: the fewer statements that follow it, the
            # shorter a concurrent first push of the same record waits on its primary key.
            if mine and (row is None or record.revision > int(row[0])):
                # The server's own state survives a newer revision: its replays and what they concluded.
                record.forgotten = False
                record.verification = Verification.from_dict(row[2]) if row and row[2] else None
                if row and row[1] == "team_verified":
                    record.origin = "team_verified"
                elif record.origin not in _CONFIRMATION:  # a member cannot claim a replay verdict
                    record.origin = str(row[1]) if row else "note"
                self.put(cur, record, derived, author=member)  # the author only when the row is new
                if row is not None and author is None and not operator:  # stored before authors: claimed
                    cur.execute(
                        "UPDATE records SET author = %s WHERE team_id = %s AND hex = %s AND author IS NULL",
                        (member, team, record.hex),
                    )
                if gone is not None:  # a new revision of a forgotten record is live again
                    cur.execute("DELETE FROM tombstones WHERE team_id = %s AND hex = %s", (team, record.hex))
                changed = True
            elif row is not None and _CONFIRMATION.get(record.origin, -1) > _CONFIRMATION.get(str(row[1]), 99):
                if mine:
                    # Confirmed since, with no new revision (note -> local_auto): only upwards, so a retried
                    # older push that crosses the change does not take it back.
                    cur.execute(
                        "UPDATE records SET origin = %s WHERE team_id = %s AND hex = %s",
                        (record.origin, team, record.hex),
                    )
                    changed = True
                else:
                    refused = True
            if changed:
                # After the row is written: a concurrent first push of the record has committed by then,
                # and its member's evidence counts.
                # Only when the sums differ: each new row version re-enters every index, the record's
                # full-text entries included (usually the sums are what the put just wrote).
                cur.execute(
                    "UPDATE records r SET sources = e.sources, used_success = e.used FROM "
                    "(SELECT sum(sources) AS sources, sum(used_success) AS used FROM evidence "
                    "WHERE team_id = %s AND hex = %s) e WHERE r.team_id = %s "
                    "AND r.hex = %s AND (r.sources, r.used_success) IS DISTINCT FROM (e.sources, e.used)",
                    (team, record.hex, team, record.hex),
                )
                self.bump(cur, [record.hex])
            return REFUSED if refused else ACCEPTED if changed else UNCHANGED

    def _would_add(self, cur: Any, hexid: str, revisions: list[Revision], marks: list[tuple[str, str, str]]) -> bool:
        """Whether a line brings revisions (by number) or marks (by target and relation) the record lacks."""
        if revisions:
            cur.execute("SELECT revision FROM revisions WHERE team_id = %s AND hex = %s", (self.team, hexid))
            if {r.revision for r in revisions} - {int(r[0]) for r in cur.fetchall()}:
                return True
        if marks:
            cur.execute(
                "SELECT target_hex, relation FROM relations WHERE team_id = %s AND source_hex = %s", (self.team, hexid)
            )
            if {(t, r) for t, r, _ in marks} - {(str(t), str(r)) for t, r in cur.fetchall()}:
                return True
        return False

    def _lines(self, rows: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
        """Export lines of (hex, seq) rows, in their order."""
        found = {r.hex: r for r in self.get_many(row[0] for row in rows)}
        lines: list[dict[str, Any]] = []
        for hexid, seq in rows:
            record = found.get(hexid)
            if record is not None:  # purged since the rows were read
                lines.append({**record_to_json(self, record), "seq": int(seq)})
        return lines

    def _page(self, sql: str, cursor: int, limit: int) -> tuple[list[tuple[Any, ...]], bool]:
        """Up to ``limit`` rows of ``sql`` (team, cursor, limit parameters; ``seq`` order) and whether
        more remain: one row more is read to know."""
        if limit < 1:
            raise InvalidArgument("limit", "at least 1")
        with self.db.cursor() as cur:
            cur.execute(sql, (self.team, cursor, limit + 1))
            rows = cur.fetchall()
        return rows[:limit], len(rows) > limit

    def changes_since(self, cursor: int, limit: int) -> tuple[list[dict[str, Any]], int, bool]:
        """(export lines with ``seq``, the new cursor, whether more remain) of the team's live
        records changed after ``cursor`` (0 for everything), oldest change first, at most ``limit``."""
        rows, more = self._page(
            "SELECT hex, seq FROM records WHERE team_id = %s AND seq > %s AND NOT forgotten ORDER BY seq LIMIT %s",
            cursor,
            limit,
        )
        return self._lines(rows), (int(rows[-1][1]) if rows else cursor), more

    def forget_in_team(self, hexid: str, *, purge: bool, member: str | None = None) -> str:
        """Take record ``hexid`` out of the team: forgotten (out of search and pulls, its row kept) or,
        with ``purge``, erased with its revisions, evidence and replay runs. A tombstone tells pulls;
        it is written first, in a transaction of its own, so a push racing the erase finds it (see
        ``merge_pushed``).

        The answer: ``FORGOTTEN``; ``UNKNOWN`` when the team never had the record (a purge leaves its
        tombstone even then, against a push of it still on the way); ``REFUSED`` when ``member`` is not
        the record's author (the member whose push first stored it), and nothing changes. A record
        without an author (stored before migration m009_record_authors) is any member's to take out;
        ``member`` None is the operator (``jiyi team admin forget``), who may take out any record."""
        team = self.team
        with self.db.cursor() as cur:
            cur.execute("SELECT author, forgotten FROM records WHERE team_id = %s AND hex = %s", (team, hexid))
            row = cur.fetchone()
            known = row is not None
            # An author is set once, by the insert of the first push: it cannot change after this look.
            if row is not None and row[0] is not None and member is not None and row[0] != member:
                return REFUSED
            cur.execute("SELECT purged FROM tombstones WHERE team_id = %s AND hex = %s", (team, hexid))
            before = cur.fetchone()
            # Done before (a client's retry): nothing is written, so the tombstone keeps its seq and
            # pulls do not read it again. A purge cut short before its erase goes on.
            if before is not None:
                done = (bool(before[0]) and row is None) if purge else (row is None or bool(row[1]))
                if done:
                    return FORGOTTEN
            if not known and not purge:
                return FORGOTTEN if before is not None else UNKNOWN
            # Under the team's lock like ``bump``: tombstone seq order is commit order too.
            cur.execute("SELECT pg_advisory_xact_lock(%s, %s::int)", (self.db.lock_class, team))
            cur.execute(
                "INSERT INTO tombstones AS t (team_id, hex, purged, at, seq) "
                "VALUES (%s, %s, %s, %s, nextval('record_seq')) "
                "ON CONFLICT (team_id, hex) DO UPDATE SET purged = t.purged OR excluded.purged, at = excluded.at, "
                "seq = excluded.seq",
                (team, hexid, purge, now()),
            )
        if purge:
            self.purge(hexid)
        else:
            self.forget(hexid)
        return FORGOTTEN if known or before is not None else UNKNOWN

    def forgotten_since(self, cursor: int, limit: int) -> tuple[list[dict[str, Any]], int, bool]:
        """(tombstones ``{hex, purged, at, seq}`` after ``cursor``, the new cursor, whether more remain)."""
        rows, more = self._page(
            "SELECT hex, purged, at, seq FROM tombstones WHERE team_id = %s AND seq > %s ORDER BY seq LIMIT %s",
            cursor,
            limit,
        )
        lines: list[dict[str, Any]] = [
            {"hex": str(h), "purged": bool(p), "at": str(a), "seq": int(q)} for h, p, a, q in rows
        ]
        return lines, (int(rows[-1][3]) if rows else cursor), more

    def verification_candidates(self, limit: int) -> list[dict[str, Any]]:
        """Export lines of live records with a fix and a reproduction that no replay has run on yet."""
        with self.db.cursor() as cur:
            cur.execute(
                "SELECT hex, seq FROM records WHERE team_id = %s AND NOT forgotten AND fix IS NOT NULL "
                "AND reproduction IS NOT NULL AND verification IS NULL ORDER BY seq LIMIT %s",
                (self.team, limit),
            )
            rows = cur.fetchall()
        return self._lines(rows)

    def verifications(self, hexid: str) -> list[dict[str, Any]]:
        """Every replay run of a live record of the team, oldest first: when, how, where, passed.
        The runs' detail (their output) stays on the server. ``NotFound`` without such a record."""
        with self.db.cursor() as cur:
            cur.execute("SELECT 1 FROM records WHERE team_id = %s AND hex = %s AND NOT forgotten", (self.team, hexid))
            if cur.fetchone() is None:
                raise NotFound("rr_" + hexid)
            cur.execute(
                "SELECT at, how, environment, passed, runner FROM verifications WHERE team_id = %s AND hex = %s "
                "ORDER BY at",
                (self.team, hexid),
            )
            return [
                {"at": r[0], "how": r[1], "environment": r[2], "passed": bool(r[3]), "runner": r[4]}
                for r in cur.fetchall()
            ]

    def add_verification(
        self, hexid: str, *, passed: bool, how: str, environment: str, detail: str, runner: str | None = None
    ) -> Verification:
        """Keep one replay run of record ``hexid``, reported by ``runner`` (a token's member name),
        and return its updated summary (last date, how, environment, passed / tries); a passing run
        makes the origin ``team_verified``; the record's ``seq`` moves. The texts are redacted
        first: the detail is the replay's output. ``NotFound`` when the team has no such live record."""
        how, environment, detail = redact(how), redact(environment), redact(detail)
        team = self.team
        with self.db.cursor() as cur:
            cur.execute(
                "SELECT verification FROM records WHERE team_id = %s AND hex = %s AND NOT forgotten FOR UPDATE",
                (team, hexid),
            )
            row = cur.fetchone()
            if row is None:
                raise NotFound("rr_" + hexid)
            cur.execute(
                "INSERT INTO verifications (team_id, hex, at, passed, how, environment, detail, runner) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                (team, hexid, now(), passed, how, environment, detail, runner),
            )
            before = Verification.from_dict(row[0]) if row[0] else None
            summary = Verification(
                how=how,
                date=datetime.now(timezone.utc).date().isoformat(),
                environment=environment,
                passed=(before.passed if before else 0) + int(passed),
                tries=(before.tries if before else 0) + 1,
            )
            cur.execute(
                "UPDATE records SET verification = %s, origin = CASE WHEN %s THEN 'team_verified' ELSE origin END "
                "WHERE team_id = %s AND hex = %s",
                (Jsonb(summary.to_dict()), passed, team, hexid),
            )
            self.bump(cur, [hexid])
            return summary

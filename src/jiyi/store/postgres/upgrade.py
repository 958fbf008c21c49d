"""Bringing a team database's full-text terms up to the current ``analysis.lexical.VERSION``, its
records' signatures up to ``analysis.indexing.SIGNATURE_VERSION``, and the keys of rows written before
``m018_record_keys`` onto those rows: a bounded while when a server starts, the rest by ``jiyi team
admin reindex --terms`` / ``--signatures`` / ``--keys`` (the steps of one batch are
``lexical.PgLexical.upgrade_lexical``'s, ``signing.PgSigning.upgrade_signatures``' and
``keys.PgKeys.fill_record_keys``').
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from ...analysis.indexing import SIGNATURE_VERSION
from ...analysis.lexical import VERSION
from ...errors import Unavailable
from .database import PgDatabase
from .store import PgStore

log = logging.getLogger(__name__)

# A server re-derives older teams' terms for at most this long when it starts, as the SQLite store does
# on open; `jiyi team admin reindex --terms` finishes a large database. Meanwhile search finds the
# records not yet re-derived by their old terms.
UPGRADE_ON_START_S = 0.2
# Records a batch. A push of a record in a batch waits for it: while an upgrade rewrote every row,
# pushes' p99 rose from ~16 ms to 65-90 ms with 500 (SQLite's batch), to ~35 ms with 200, which
# upgrades at 4 400-4 900 records/s against 4 700-7 100 (bench/pg_term_upgrade.py --rewrite
# [--pushers 4], 20 000 records, a loaded 2-core machine).
BATCH = 200


def upgrade_team(store: PgStore, progress: Callable[[int], None] | None = None) -> int:
    """Re-derive the rest of ``store``'s team, waiting its turn behind another upgrader's batch
    rather than stopping (both then take turns); returns how many records this call re-derived."""
    return _to_the_end(lambda: store.upgrade_lexical(BATCH, wait=True), progress)


def resign_team(store: PgStore, progress: Callable[[int], None] | None = None) -> int:
    """Re-sign the rest of ``store``'s team as ``upgrade_team`` re-derives its terms; returns how
    many records this call looked at."""
    return _to_the_end(lambda: store.upgrade_signatures(BATCH, wait=True), progress)


def fill_team(store: PgStore, progress: Callable[[int], None] | None = None) -> int:
    """Put the rest of ``store``'s older rows' signatures and symbols on their rows (keys.py); returns
    how many this call filled."""
    return _to_the_end(lambda: store.fill_record_keys(BATCH), progress)


def _to_the_end(step: Callable[[], int], progress: Callable[[int], None] | None) -> int:
    done = 0
    while n := step():
        done += n
        if progress:
            progress(n)
    return done


def upgrade_on_start(db: PgDatabase, seconds: float = UPGRADE_ON_START_S) -> int:
    """Re-derive older teams' terms, then re-sign teams signed with older key-line rules, for up to
    ``seconds``; returns how many records were. Several processes starting at once do not queue: a
    team another one is upgrading is left to it. A failure is logged and left for the next start or
    the admin command: serving comes first."""
    deadline = time.monotonic() + seconds
    done = 0
    try:
        done += _batches(db, old_teams(db, VERSION), lambda s: s.upgrade_lexical(BATCH, wait=False), deadline)
    except Unavailable as exc:
        log.warning("re-deriving search terms at start: %s", exc)
    try:
        found = old_signed_teams(db, SIGNATURE_VERSION)
        done += _batches(db, found, lambda s: s.upgrade_signatures(BATCH, wait=False), deadline)
    except Unavailable as exc:
        log.warning("re-signing records at start: %s", exc)
    try:
        done += _batches(db, unfilled_teams(db), lambda s: s.fill_record_keys(BATCH), deadline)
    except Unavailable as exc:
        log.warning("putting older records' keys on their rows at start: %s", exc)
    return done


def _batches(db: PgDatabase, teams: list[int], step: Callable[[PgStore], int], deadline: float) -> int:
    # At least one batch, however short the time: every start moves an upgrade on.
    done = 0
    for team in teams:
        store = PgStore(db, team)
        while True:
            n = step(store)
            done += n
            if n < BATCH or time.monotonic() >= deadline:
                break
        if time.monotonic() >= deadline:
            break
    return done


def old_teams(db: PgDatabase, target: int) -> list[int]:
    """The ids of the teams whose index was built with terms older than ``target``."""
    return _behind(db, "lexical_versions", target)


def old_signed_teams(db: PgDatabase, target: int) -> list[int]:
    """The ids of the teams whose records were signed with key-line rules older than ``target``."""
    return _behind(db, "signature_versions", target)


def unfilled_teams(db: PgDatabase) -> list[int]:
    """The ids of the teams with rows written before their keys were kept on the row (keys.py)."""
    with db.cursor() as cur:
        # Each team's look-up is one probe of m018's partial index.
        cur.execute(
            "SELECT t.id FROM teams t WHERE EXISTS (SELECT 1 FROM records r WHERE r.team_id = t.id "
            "AND r.sigs IS NULL) ORDER BY t.id"
        )
        return [int(row[0]) for row in cur.fetchall()]


def _behind(db: PgDatabase, table: str, target: int) -> list[int]:
    with db.cursor() as cur:
        cur.execute(
            f"SELECT t.id FROM teams t LEFT JOIN {table} v ON v.team_id = t.id "
            "WHERE coalesce(v.version, 1) < %s ORDER BY t.id",
            (target,),
        )
        return [int(row[0]) for row in cur.fetchall()]

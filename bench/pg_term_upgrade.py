"""Cost of re-deriving a team database's full-text terms after ``lexical.VERSION`` changes.

``python bench/pg_term_upgrade.py --records 20000``: builds (or reuses) one team of ``--records``
generated records in ``--schema`` with bench/team_scale.py's COPY path, marks the team as built
with the terms before, then times what a server start does (``upgrade.upgrade_on_start``,
bounded) and the rest as ``jiyi team admin reindex --terms`` does (``upgrade.upgrade_team``).
``--rewrite`` first adds a term to every vector, so every record's vector differs from what the
upgrade derives and every row is written (a database whose records all gained new terms); without
it only records whose terms changed are written (the generated ones are mostly ASCII: few are).
``--repeat`` runs the whole upgrade that many times and prints the median. ``--pushers N`` has N
threads push new revisions of the team's records (``merge_pushed``, each record once) while the
rest is upgraded, then as long again without an upgrade, and prints both push latencies and whether
every pushed revision is the record's afterwards. A measurement, not a test.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import threading
import time
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).parent))
from latency import cluster_records
from team_scale import build, export_line

from jiyi.analysis.lexical import VERSION
from jiyi.records import Revision, now
from jiyi.store.postgres import upgrade
from jiyi.store.postgres.store import PgDatabase, PgStore
from jiyi.store.postgres.team import TeamStore


def _make_old(store: PgStore, rewrite: bool) -> None:
    with store.db.cursor() as cur:
        cur.execute("DELETE FROM lexical_versions WHERE team_id = %s", (store.team,))
        if rewrite:
            cur.execute(
                "UPDATE records SET tsv = tsv || '''v1only'':1'::tsvector WHERE team_id = %s AND tsv IS NOT NULL",
                (store.team,),
            )
            store.fold_into(cur)
    with psycopg.connect(store.db.dsn, autocommit=True, options=f"-c search_path={store.db.schema}") as conn:
        conn.execute("VACUUM ANALYZE records")


class Pushers:
    """Threads pushing a new revision of each of ``hexes`` once, until stopped or out of records."""

    def __init__(self, store: PgStore, hexes: list[str], threads: int) -> None:
        self.store = store
        self.ms: list[float] = []
        self.pushed: dict[str, int] = {}
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._push, args=(hexes[i::threads],)) for i in range(threads)]

    def __enter__(self) -> Pushers:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join()

    def _push(self, hexes: list[str]) -> None:
        for hexid in hexes:
            if self.stop.is_set():
                return
            record = self.store.get(hexid)
            assert record is not None
            record.revision += 1
            record.title += " (seen again)"
            revision = Revision(hexid, record.revision, "bench", now(), "learned", {"title": record.title})
            start = time.perf_counter()
            self.store.merge_pushed(export_line(record, revision), "bench")
            self.ms.append((time.perf_counter() - start) * 1000)
            self.pushed[hexid] = record.revision


def _pct(ms: list[float]) -> str:
    if not ms:
        return "no pushes"
    q = statistics.quantiles(ms, n=100) if len(ms) > 1 else ms * 99
    return f"{len(ms)} pushes, p50 {statistics.median(ms):.1f} ms, p99 {q[98]:.1f} ms, max {max(ms):.1f} ms"


def _hexes(store: PgStore) -> list[str]:
    with store.db.cursor() as cur:
        cur.execute("SELECT hex FROM records WHERE team_id = %s AND NOT forgotten ORDER BY hex", (store.team,))
        return [str(row[0]) for row in cur.fetchall()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--dsn", default=os.environ.get("JIYI_TEST_PG", "host=127.0.0.1 port=5432 dbname=test user=postgres")
    )
    parser.add_argument("--schema", default="jiyi_bench_terms")
    parser.add_argument("--records", type=int, default=20000)
    parser.add_argument("--workers", type=int, default=2, help="COPY processes while building")
    parser.add_argument("--rewrite", action="store_true", help="make every record's vector differ first")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--fresh", action="store_true", help="drop the schema first")
    parser.add_argument("--pushers", type=int, default=0, help="threads pushing while the rest is upgraded")
    args = parser.parse_args()
    if args.fresh:
        with psycopg.connect(args.dsn, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{args.schema}" CASCADE')
    seeded, _ = cluster_records(Path(__file__).parent / "data" / "clusters.jsonl")
    with PgDatabase(args.dsn, schema=args.schema, max_size=4, timeout=60) as db:
        teams = {t.name: t.id for t in db.list_teams()}
        store = TeamStore(db, teams.get("bench") or db.create_team("bench"))
        build(db, store, args.records, args.workers, seeded)
        rates: list[float] = []
        for run in range(args.repeat):
            _make_old(store, args.rewrite)
            _, left = store.lexical_state()
            start = time.perf_counter()
            at_start = upgrade.upgrade_on_start(db)
            started = time.perf_counter() - start
            hexes = random.Random(run).sample(_hexes(store), left)
            with Pushers(store, hexes, args.pushers) as during:
                start = time.perf_counter()
                rest = upgrade.upgrade_team(store)
                finished = time.perf_counter() - start
            if args.pushers:
                with Pushers(store, hexes[len(during.ms) :], args.pushers) as after:
                    time.sleep(finished)
                print(f"  pushes during the upgrade: {_pct(during.ms)}; without one: {_pct(after.ms)}")
                pushed = {**during.pushed, **after.pushed}
                lost = [h for h, rev in pushed.items() if getattr(store.get(h), "revision", None) != rev]
                print(f"  pushed revisions not found afterwards: {len(lost)}")
            version, _ = store.lexical_state()
            assert version == VERSION and store.integrity_check() == []
            rate = (at_start + rest) / (started + finished)
            rates.append(rate)
            print(
                f"run {run + 1}: {left:,} records; start {started * 1000:.0f} ms for {at_start:,}; "
                f"the rest {rest:,} in {finished:.2f} s; {rate:,.0f} records/s"
            )
        how = "every row rewritten" if args.rewrite else "marked old only"
        print(f"median {statistics.median(rates):,.0f} records/s ({how})")


if __name__ == "__main__":
    main()

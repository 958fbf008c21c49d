"""The review page's answer times at scale: ``python bench/ui_pages.py --records 100000``.

Builds a store as bench/scale.py does (the real cluster records, then generated ones, through
``Store.write_many``), adds automatic records waiting for confirmation (the inbox), then times the
pages in process (starlette's TestClient: routing, the guard, the store, the templates; no socket):
``/`` (the inbox, the first 50 records, the counts), ``/`` filtered by type and words, by words
alone (the full-text index: rare words, and ``error``, in about half of the records), ``/search``
with the clusters' real queries, ``/records/<id>`` of random records and ``/sessions``. Prints median and p95 per page;
the target is ≤ 100 ms (docs/spec.md §7). ``--home DIR`` keeps the store and reuses it.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from latency import cluster_records
from scale import _prepared, build, percentile

import jiyi
from jiyi.records import new_hex


def add_inbox(memory: jiyi.Memory, count: int, rng: random.Random) -> None:
    """Automatic records nothing has confirmed yet, as capture writes them."""
    store = memory.store
    from jiyi.store.base import RecordFilter

    _, have = store.find_records(RecordFilter(unconfirmed=True), limit=0)
    if have >= count:
        return
    donors = store.list_records(limit=count - have, offset=rng.randint(0, 1000))
    autos = [
        replace(r, hex=new_hex(), origin="local_auto", topic_key=f"auto/{new_hex()[:12]}", sources=1, used_success=0)
        for r in donors
    ]
    store.write_many(_prepared(r) for r in autos)


def timed(client: object, path: str) -> float:
    started = time.perf_counter()
    answer = client.get(path)  # type: ignore[attr-defined]
    elapsed = (time.perf_counter() - started) * 1000
    assert answer.status_code == 200, (path, answer.status_code)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=40)
    parser.add_argument("--home", type=Path, default=None, help="keep (and reuse) the store here")
    parser.add_argument("--clusters", type=Path, default=Path(__file__).parent / "data" / "clusters.jsonl")
    args = parser.parse_args()
    from starlette.testclient import TestClient

    from jiyi.ui.app import create_app
    from jiyi.ui.guards import Guard

    rng = random.Random(7)
    seeded, queries = cluster_records(args.clusters)
    with tempfile.TemporaryDirectory() as tmp:
        home = args.home or Path(tmp)
        with jiyi.Memory(home=home / f"n{args.records}", cwd=tmp) as memory:
            build(memory, seeded, args.records, rng)
            add_inbox(memory, 200, rng)
            total = memory.store.count()
            ids = [r.id for r in memory.store.list_records(limit=2000, offset=rng.randint(0, total - 2000))]
            guard = Guard(port=8765)
            with TestClient(create_app(memory, guard), base_url="http://127.0.0.1:8765") as client:
                client.get(f"/?token={guard.token}")
                pages = {
                    "/": lambda i: "/",
                    "/?page=20": lambda i: "/?page=20",
                    "/?type=config&text=…": lambda i: "/?type=config&text=" + rng.choice(("timeout", "ssl", "zlib")),
                    "/?text=…": lambda i: "/?text=" + rng.choice(("timeout", "ssl", "zlib")),
                    "/?text=error": lambda i: "/?text=error",
                    "/search?q=…": lambda i: "/search?" + _q(queries[i % len(queries)][0]),
                    "/records/<id>": lambda i: f"/records/{rng.choice(ids)}",
                    "/sessions": lambda i: "/sessions",
                }
                rows = []
                for name, path in pages.items():
                    timed(client, path(0))  # warm: templates compiled, pages in the cache
                    times = [timed(client, path(i)) for i in range(args.repeat)]
                    rows.append((name, statistics.median(times), percentile(times, 0.95)))
    print(f"review page at {total:,} records ({args.repeat} runs each, in process)")
    print(f"{'page':<22} {'median ms':>10} {'p95 ms':>8}")
    for name, median, p95 in rows:
        print(f"{name:<22} {median:>10.1f} {p95:>8.1f}")


def _q(text: str) -> str:
    from urllib.parse import urlencode

    return urlencode({"q": text[:500]})


if __name__ == "__main__":
    main()

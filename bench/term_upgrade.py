"""Cost of re-deriving a store's full-text terms after ``lexical.VERSION`` changes.

``python bench/term_upgrade.py STORE_DIR [--work DIR]``: STORE_DIR holds a ``jiyi.db`` (e.g. one
that ``python bench/scale.py --sizes 100000 --home H`` left in ``H/n100000``). A copy is marked as
built with the terms before (version ``VERSION - 1``), opened (which re-derives batches for a bounded
time), then upgraded to the end as ``jiyi reindex --terms`` does. Prints both times; a measurement,
not a test.
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path

from jiyi.analysis.lexical import VERSION
from jiyi.store.reindex import upgrade_terms
from jiyi.store.sqlite.store import SQLiteStore


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path, help="folder holding jiyi.db")
    parser.add_argument("--work", type=Path, default=None, help="where to copy the store (default: a temp dir)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        for f in args.store.glob("jiyi.db*"):
            shutil.copy(f, work / f.name)
        db = sqlite3.connect(work / "jiyi.db")
        db.execute("UPDATE store_meta SET value = ? WHERE key = 'lexical_version'", (str(VERSION - 1),))
        db.execute("DELETE FROM store_meta WHERE key = 'lexical_upgrade'")
        db.commit()
        db.close()
        start = time.perf_counter()
        store = SQLiteStore(work / "jiyi.db")
        opened = time.perf_counter() - start
        _, left = store.lexical_state()
        start = time.perf_counter()
        done = upgrade_terms(store)
        rest = time.perf_counter() - start
        version, _ = store.lexical_state()
        store.close()
    print(f"open: {opened * 1000:.0f} ms, {left} records left after it")
    print(f"the rest: {done} records in {rest:.2f} s ({rest / max(done, 1) * 1e6:.0f} µs a record); version {version}")


if __name__ == "__main__":
    main()

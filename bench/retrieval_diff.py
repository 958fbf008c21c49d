"""Two saved runs of ``bench/retrieval.py --save``, query by query: which top-1 answers a change won
and lost, per system, split and query kind. ``python bench/retrieval_diff.py BEFORE.json AFTER.json``.

Tuning compares the tune split of two runs of the same data (``--split tune``): the table of each
gives the totals, this gives the queries behind a difference of a few. For query-for-query equal runs
of one tree, run both with the same ``PYTHONHASHSEED``: ties between equal scores keep the order the
store gave, and set iteration decides some of it. Queries the second run has and the first lacks (a
re-split that added data) are counted apart, those only the first has are not shown; written queries
are named by their text, so they keep their names across re-splits (``retrieval.load``).

A measurement aid, not a test.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table


def right(top: list[str | None], cluster: str) -> bool:
    return bool(top) and top[0] == cluster


def compare(
    before: dict[str, Any], after: dict[str, Any], system: str
) -> tuple[Counter[tuple[str, str, str]], list[str]]:
    """(counts by (split, kind, won|lost), the changed queries' lines) of ``system`` between two runs."""
    queries = after["queries"]
    then, now = before["systems"].get(system, {}), after["systems"][system]
    counts: Counter[tuple[str, str, str]] = Counter()
    lines = []
    for label, top in now.items():
        q = queries[label]
        if label not in then:
            counts[(q["split"], q["kind"], "new")] += 1
            continue
        was, is_ = right(then[label], q["cluster"]), right(top, q["cluster"])
        if was != is_:
            change = "won" if is_ else "lost"
            counts[(q["split"], q["kind"], change)] += 1
            lines.append(f"{change:4} [{q['split']}] {label}  now {top[:2]}  was {then[label][:2]}")
    return counts, lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--system", action="append", help="only this system (repeatable); default: every jiyi row")
    parser.add_argument("--list", action="store_true", help="also list every query whose top-1 changed")
    args = parser.parse_args()
    before, after = json.loads(args.before.read_text()), json.loads(args.after.read_text())
    systems = args.system or [s for s in after["systems"] if s.startswith("jiyi")]
    out = Console()
    for system in systems:
        if system not in after["systems"]:
            out.print(f"{system}: not in {args.after}")
            continue
        counts, lines = compare(before, after, system)
        table = Table(title=f"{system}: top-1 answers won and lost")
        for column in ("split", "kind", "won", "lost", "only in the second run"):
            table.add_column(column, justify="right")
        for split, kind in sorted({(s, k) for s, k, _ in counts}):
            table.add_row(split, kind, *(str(counts[(split, kind, change)]) for change in ("won", "lost", "new")))
        out.print(table if counts else f"{system}: the same top-1 answers in both runs")
        if args.list:
            for line in lines:
                out.print(line, markup=False, highlight=False, soft_wrap=True)


if __name__ == "__main__":
    main()

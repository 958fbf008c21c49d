"""memory_search latency on a generated store: ``python bench/latency.py [--records 10000]``.

Stores the first occurrence of every cluster in ../shared-style bench data (``--clusters``) plus
``--records`` generated records of realistic shapes (compiler, linker, Python, npm errors with
varied names), then times ``Session.search_text`` with the other occurrences as queries. Prints
medians and p99 of repeated runs; a measurement, not a test.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

import jiyi
from jiyi.analysis.indexing import derive
from jiyi.analysis.signature import analyze
from jiyi.records import Record, Revision, new_hex, now, snapshot

TEMPLATES = [
    ("undefined reference to `{sym}'", "Link the library that defines {sym}"),
    ("ld: undefined symbol: {sym}", "lld cannot find {sym}"),
    ("ModuleNotFoundError: No module named '{mod}'", "Install the package for {mod}"),
    ("ImportError: cannot import name '{sym}' from '{mod}'", "{sym} moved in {mod}"),
    ("error[E0425]: cannot find value `{sym}` in this scope", "Rust: {sym} not in scope"),
    ("src/{mod}.ts(12,5): error TS2304: Cannot find name '{sym}'.", "TypeScript cannot find {sym}"),
    ("npm ERR! 404 Not Found - GET https://registry.npmjs.org/{mod} - Not found", "npm package {mod} missing"),
    ("fatal error: {mod}.h: No such file or directory", "Install the headers of {mod}"),
    ("AttributeError: module '{mod}' has no attribute '{sym}'", "{mod} lost {sym}"),
    ("bash: {mod}: command not found", "Install {mod} on the PATH"),
    ("panic: runtime error: invalid memory address or nil pointer dereference [{sym}]", "Go nil pointer in {sym}"),
    ("KeyError: '{sym}'", "Missing key {sym}"),
]
WORDS = [
    "alpha", "beta", "gamma", "delta", "parse", "load", "store", "fetch", "render", "queue", "cache", "token",
    "widget", "buffer", "stream", "socket", "codec", "frame", "index", "vector", "matrix", "graph", "node",
]  # fmt: skip


def name(rng: random.Random) -> str:
    return "_".join(rng.sample(WORDS, 2)) + str(rng.randint(0, 999))


def generated(rng: random.Random, count: int) -> list[Record]:
    out = []
    for _ in range(count):
        what_t, title_t = rng.choice(TEMPLATES)
        values = {"sym": name(rng), "mod": name(rng)}
        # fmt: off
        out.append(
            Record(
                hex=new_hex(), title=title_t.format(**values), type="bugfix", scope="global",
                what=what_t.format(**values), why="generated", where="generated", learned="generated",
                project=f"proj{rng.randint(0, 50)}", project_key=f"proj{rng.randint(0, 50)}",
                session_id="bench", created=now(), updated=now(), environment={"os": "linux"},
            )
        )
        # fmt: on
    return out


def cluster_records(path: Path) -> tuple[list[Record], list[tuple[str, str]]]:
    records, queries = [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        cluster = json.loads(line)
        occ = cluster["occurrences"]
        r = Record(
            hex=new_hex(), title=cluster["title"], type="bugfix", scope="global", what=occ[0]["text"],
            why=cluster["why"], where=cluster["tool"], learned=cluster["learned"], project="bench",
            project_key="bench", session_id="bench", created=now(), updated=now(),
        )  # fmt: skip
        records.append(r)
        queries.extend((o["text"][:2000], r.id) for o in occ[1:])
    return records, queries


def fill(memory: jiyi.Memory, records: list[Record]) -> float:
    started = time.perf_counter()
    with Progress(console=Console(stderr=True)) as bar:
        task = bar.add_task("writing records", total=len(records))
        for r in records:
            a = analyze(r.what)
            r.signatures, r.symbols = a.signatures, a.symbols
            memory.store.write_record(r, Revision(r.hex, 1, "bench", r.created, "created", snapshot(r)), derive(r))
            bar.advance(task)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=10000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--clusters", type=Path, default=Path(__file__).parent / "data" / "clusters.jsonl")
    args = parser.parse_args()
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as home, jiyi.Memory(home=home) as memory:
        seeded, queries = cluster_records(args.clusters) if args.clusters.exists() else ([], [])
        extra = generated(rng, max(0, args.records - len(seeded)))
        seconds = fill(memory, seeded + extra)
        session = memory.session(project="bench", session_id="query")
        if not queries:
            queries = [(r.what, r.id) for r in rng.sample(extra, 200)]
        times, first = [], 0
        for round_ in range(args.repeat):
            for text, expected in queries:
                t0 = time.perf_counter()
                hits = session.search(text)
                times.append((time.perf_counter() - t0) * 1000)
                if round_ == 0 and hits and hits[0].record.id == expected:
                    first += 1
        size = sum(p.stat().st_size for p in Path(home).glob("jiyi.db*"))
        table = Table(title=f"memory_search on {memory.store.count()} records")
        for col in ("queries", "p50 ms", "p99 ms", "right first", "notes/s", "store MB"):
            table.add_column(col)
        times.sort()
        table.add_row(
            str(len(times)), f"{statistics.median(times):.2f}", f"{times[int(len(times) * 0.99) - 1]:.2f}",
            f"{first}/{len(queries)}", f"{len(seeded + extra) / seconds:.0f}", f"{size / 1e6:.1f}",
        )  # fmt: skip
        Console().print(table)


if __name__ == "__main__":
    main()

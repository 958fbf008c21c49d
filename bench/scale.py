"""memory_search at scale: ``python bench/scale.py --sizes 10000,100000,1000000``.

For each size, builds a store of the real cluster records (bench/data/clusters.jsonl, first
occurrence of each) plus generated ones (bench/latency.py's templates and many more per ecosystem,
with real package and symbol names), written 1000 to a transaction through ``Store.write_many``.
Then times ``Session.search`` with the clusters' other occurrences as queries (p50/p99 over
``--repeat`` runs), a raw FTS5 query over the same store (every distinct query term OR-ed,
``ORDER BY bm25 LIMIT 50``) for comparison, and ``Session.note`` (which also ranks similar
memories) for ``--notes`` notes. Prints one table with every size; a measurement, not a test.

``--home DIR`` keeps the stores (``DIR/n<size>``) and reuses one that is already big enough;
``--profile N`` runs the N slowest queries of each size under cProfile and prints where time goes.
"""

from __future__ import annotations

import argparse
import builtins
import collections
import cProfile
import functools
import importlib.metadata
import io
import itertools
import json
import os
import pathlib
import pstats
import random
import re
import sqlite3
import statistics
import string
import sys
import tempfile
import time
import typing
from collections.abc import Iterator
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

sys.path.insert(0, str(Path(__file__).parent))
from latency import TEMPLATES, cluster_records

import jiyi
from jiyi.analysis import lexical
from jiyi.analysis.indexing import Derived
from jiyi.analysis.signature import analyze
from jiyi.query import MAX_QUERY_TERMS
from jiyi.records import Record, Revision, new_hex, now, snapshot

BATCH = 1000
console = Console(stderr=True, width=150)

# Real names: the standard library's modules, the packages installed here, and well-known ones of
# the other ecosystems; symbols are real identifiers from the standard library, some combined.
_OTHER_PACKAGES = """react react-dom lodash express axios webpack vite typescript eslint jest next vue
@types/node @babel/core rxjs moment chalk commander yargs dotenv serde tokio clap anyhow thiserror
reqwest hyper rand regex log syn quote libc openssl zlib libpng libxml2 sqlite3 boost fmt spdlog
protobuf grpc cobra viper gin gorm zap testify mux logrus junit guava jackson slf4j spring-core
hibernate lombok mockito netty""".split()
_PACKAGES = sorted(
    {m for m in sys.stdlib_module_names if not m.startswith("_")}
    | {(d.metadata["Name"] or "").lower() for d in importlib.metadata.distributions()} - {""}
    | set(_OTHER_PACKAGES)
)
_IDENTS = sorted(
    {
        n
        for mod in (builtins, os, re, json, sqlite3, collections, itertools, functools, pathlib, typing, string)
        for n in dir(mod)
        if n.isidentifier() and not n.startswith("__") and len(n) > 2
    }
)
_CLASSES = [n for n in _IDENTS if n[0].isupper()] or ["Widget"]
_FUNCS = [n for n in _IDENTS if n[0].islower()] or ["run"]
_DIRS = "src lib app core utils api cmd internal pkg server client tests models services handlers".split()
_USERS = "alice bob build runner ci dev ubuntu admin deploy jenkins".split()

# (ecosystem, tool, what, title) — several templates per ecosystem, with paths, lines and versions.
_VARIED = [
    ("python", "pytest", 'Traceback (most recent call last):\n  File "/home/{user}/{proj}/{path}.py", line {line}, '
     "in {func}\n    from {pkg} import {func2}\nImportError: cannot import name '{func2}' from '{pkg}' "
     "(/usr/lib/python3.{minor}/site-packages/{pkg}/__init__.py)", "{func2} no longer exported by {pkg}"),
    ("python", "python", "ModuleNotFoundError: No module named '{pkg}'", "Install {pkg} into the virtualenv"),
    ("python", "python", 'File "/home/{user}/{proj}/{path}.py", line {line}, in {func}\nAttributeError: '
     "'{cls}' object has no attribute '{func2}'", "{cls}.{func2} was renamed"),
    ("python", "pytest", "E   TypeError: {func}() got an unexpected keyword argument '{func2}'\n{path}.py:{line}: "
     "TypeError", "{func} dropped the {func2} argument"),
    ("node", "tsc", "{path}.ts({line},{col}): error TS2339: Property '{func}' does not exist on type '{cls}'.",
     "{cls} has no {func} in the new typings"),
    ("node", "node", "Error: Cannot find module '{pkg}'\nRequire stack:\n- /home/{user}/{proj}/{path}.js",
     "Install {pkg} before running"),
    ("node", "npm", "npm ERR! code ERESOLVE\nnpm ERR! ERESOLVE unable to resolve dependency tree\n"
     "npm ERR! Found: {pkg}@{major}.{minor}.{patch}\nnpm ERR! peer {pkg2}@\"^{major}\" from {pkg}",
     "Peer dependency conflict between {pkg} and {pkg2}"),
    ("node", "node", "TypeError: Cannot read properties of undefined (reading '{func}')\n    at {cls}.{func2} "
     "(/home/{user}/{proj}/{path}.js:{line}:{col})", "{cls}.{func2} runs before {func} is set"),
    ("rust", "cargo", "error[E0433]: failed to resolve: use of undeclared crate or module `{pkg}`\n --> "
     "{path}.rs:{line}:{col}", "Add {pkg} to Cargo.toml"),
    ("rust", "cargo", "error[E0599]: no method named `{func}` found for struct `{cls}` in the current scope\n"
     " --> {path}.rs:{line}:{col}", "{cls}::{func} needs a trait in scope"),
    ("go", "go", "{path}.go:{line}:{col}: undefined: {pkg}.{cls}", "{pkg}.{cls} moved packages"),
    ("go", "go", "panic: runtime error: index out of range [{line}] with length {col}\n\ngoroutine 1 [running]:\n"
     "main.{func}(...)\n\t/home/{user}/{proj}/{path}.go:{line}", "Bounds check in {func}"),
    ("c", "ld", "/usr/bin/ld: {path}.o: in function `{func}':\n{path}.c:(.text+0x{hexoff}): undefined reference "
     "to `{func2}'\ncollect2: error: ld returned 1 exit status", "Link the library that defines {func2}"),
    ("c", "gcc", "{path}.c:{line}:{col}: fatal error: {pkg}.h: No such file or directory", "Install {pkg} headers"),
    ("c", "g++", "{path}.cpp:{line}:{col}: error: '{func}' was not declared in this scope", "Include {func}"),
    ("java", "java", 'Exception in thread "main" java.lang.NoClassDefFoundError: org/{pkg}/{cls}\n\tat '
     "com.{user}.{cls2}.{func}({cls2}.java:{line})", "{cls} missing from the runtime classpath"),
    ("java", "mvn", "[ERROR] {path}.java:[{line},{col}] cannot find symbol\n  symbol:   class {cls}\n  location: "
     "package org.{pkg}", "Import {cls} from its new package"),
    ("shell", "bash", "bash: {pkg}: command not found", "Put {pkg} on the PATH"),
]  # fmt: skip


def _skewed(rng: random.Random, items: list[str]) -> str:
    # Some names are much more common than others, as in real logs.
    return items[int(len(items) * rng.random() ** 2)]


def _symbol(rng: random.Random, items: list[str]) -> str:
    base = _skewed(rng, items)
    roll = rng.random()
    if roll < 0.3:
        return f"{base}_{rng.choice(_FUNCS).lower()}"
    if roll < 0.4:
        return f"{base}{rng.randint(2, 99)}"
    return base


def varied(rng: random.Random, count: int) -> Iterator[Record]:
    """Generated records: latency.py's templates one time in five, the richer ones otherwise."""
    for _ in range(count):
        pkg = _skewed(rng, _PACKAGES)
        values = {
            "pkg": pkg,
            "pkg2": _skewed(rng, _PACKAGES),
            "func": _symbol(rng, _FUNCS),
            "func2": _symbol(rng, _FUNCS),
            "cls": _symbol(rng, _CLASSES),
            "cls2": _skewed(rng, _CLASSES),
            "user": rng.choice(_USERS),
            "proj": f"{_skewed(rng, _PACKAGES)}-{rng.choice(_DIRS)}",
            "path": "/".join(rng.sample(_DIRS, rng.randint(1, 3))) + "/" + _skewed(rng, _FUNCS).lower(),
            "line": rng.randint(1, 2000),
            "col": rng.randint(1, 120),
            "major": rng.randint(0, 20),
            "minor": rng.randint(0, 13),
            "patch": rng.randint(0, 30),
            "hexoff": f"{rng.randint(0, 0xFFFF):x}",
        }
        if rng.random() < 0.2:
            what_t, title_t = rng.choice(TEMPLATES)
            values["sym"], values["mod"] = values["func"], pkg
            eco, tool = "misc", "shell"
        else:
            eco, tool, what_t, title_t = rng.choice(_VARIED)
        stamp = now()
        project = f"{eco}-{rng.randint(0, 200)}"
        yield Record(
            hex=new_hex(), title=title_t.format(**values), type="bugfix", scope="global",
            what=what_t.format(**values), why=f"Generated {eco} failure of {tool}.", where=values["path"],
            learned=title_t.format(**values) + ".", project=project, project_key=project, session_id="bench",
            created=stamp, updated=stamp, environment={"os": rng.choice(("linux", "darwin", "windows"))},
            tool_name=tool,
        )  # fmt: skip


def _prepared(record: Record) -> tuple[Record, Revision, Derived]:
    # indexing.derive, sharing one analysis with the signatures and symbols.
    a = analyze(record.what)
    record.signatures, record.symbols = a.signatures, a.symbols
    derived = Derived(
        key_lines=a.key_lines,
        normalized=a.normalized,
        index_title=lexical.index_text(record.title),
        index_body=lexical.index_text(f"{record.what}\n{record.why}\n{record.where}\n{record.learned}"),
    )
    return record, Revision(record.hex, 1, "bench", record.created, "created", snapshot(record)), derived


def build(memory: jiyi.Memory, seeded: list[Record], size: int, rng: random.Random) -> tuple[int, float]:
    """Fill the store up to ``size`` records; (records written, seconds) of every run that built
    it (kept in ``build.json`` beside it, so an interrupted build resumes and still reports)."""
    store = memory.store
    log = Path(store.path).parent / "build.json"
    done = json.loads(log.read_text()) if log.exists() else {"built": 0, "seconds": 0.0}
    have = store.count()
    if have >= size:
        return done["built"], done["seconds"]
    todo = size - have
    rng = random.Random(f"{size}/{have}")  # a resumed build goes on with other records
    source = itertools.chain(seeded if have == 0 else [], varied(rng, todo))
    started = time.perf_counter()
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=console) as bar:
        task = bar.add_task(f"building {size:,}", total=todo)
        while batch := list(itertools.islice(source, min(BATCH, size - store.count()))):
            store.write_many(_prepared(r) for r in batch)
            bar.advance(task, len(batch))
            done = {"built": done["built"] + len(batch), "seconds": done["seconds"] + time.perf_counter() - started}
            started = time.perf_counter()
            log.write_text(json.dumps(done))
    return done["built"], done["seconds"]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(len(ordered) * q) - 1))]


def time_search(session: jiyi.Session, queries: list[tuple[str, str]], repeat: int) -> tuple[list[float], int, dict]:
    times: list[float] = []
    first = 0
    per_query: dict[str, float] = {}
    for round_ in range(repeat):
        for text, expected in queries:
            t0 = time.perf_counter()
            hits = session.search(text)
            ms = (time.perf_counter() - t0) * 1000
            times.append(ms)
            per_query[text] = max(per_query.get(text, 0.0), ms)
            if round_ == 0 and hits and hits[0].record.id == expected:
                first += 1
    return times, first, per_query


def time_raw_fts(path: str, queries: list[tuple[str, str]], repeat: int) -> list[float]:
    db = sqlite3.connect(path)
    sql = "SELECT rowid FROM records_fts WHERE records_fts MATCH ? ORDER BY bm25(records_fts) LIMIT 50"
    expressions = [lexical.match_expression(lexical.unique_terms(t)[:MAX_QUERY_TERMS]) for t, _ in queries]
    times = []
    for _ in range(repeat):
        for expr in expressions:
            t0 = time.perf_counter()
            db.execute(sql, (expr,)).fetchall()
            times.append((time.perf_counter() - t0) * 1000)
    db.close()
    return times


def time_notes(memory: jiyi.Memory, rng: random.Random, count: int) -> float:
    session = memory.session(project="bench-notes", env={"os": "linux"}, session_id="bench-notes")
    samples = list(varied(rng, count))
    started = time.perf_counter()
    for r in samples:
        content = {"what": r.what, "why": r.why, "where": r.where, "learned": r.learned}
        session.note(title=r.title[:100], type="bugfix", scope="global", content=content)
    return count / (time.perf_counter() - started)


def profile(session: jiyi.Session, texts: list[str], top: int = 18) -> str:
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(3):
        for text in texts:
            session.search(text)
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).strip_dirs().sort_stats("cumulative").print_stats(top)
    return out.getvalue()


def disk_size(home: Path) -> int:
    return sum(p.stat().st_size for p in home.glob("jiyi.db*"))


def measure(size: int, root: Path, args: argparse.Namespace, seeded: list[Record], queries: list) -> dict:
    home = root / f"n{size}"
    rng = random.Random(size)
    with jiyi.Memory(home=home) as memory:
        built, seconds = build(memory, seeded, size, rng)
        # A reused store holds the seeded records under the hexes of the run that built it.
        by_title = {r.title: r.id for r in memory.store.list_records(limit=len(seeded) * 4, project="bench")}
        wanted = {r.id: r.title for r in seeded}
        expected = [(text, by_title.get(wanted[exp], exp)) for text, exp in queries]
        session = memory.session(project="bench", env={"os": "linux"}, session_id=f"query-{time.time()}")
        session.search("warm up the cache")
        times, first, per_query = time_search(session, expected, args.repeat)
        raw = time_raw_fts(memory.store.path, expected, args.raw_repeat)
        prof = ""
        if args.profile:
            slowest = sorted(per_query, key=lambda t: per_query[t], reverse=True)[: args.profile]
            prof = profile(session, slowest)
        records = memory.store.count()
        notes = time_notes(memory, rng, args.notes)
        size_mb = disk_size(home) / 1e6
    return {
        "records": records,
        "built": built,
        "build_rate": built / seconds if seconds else float("nan"),
        "search_p50": statistics.median(times),
        "search_p99": percentile(times, 0.99),
        # --raw-repeat 0: no raw query (timing jiyi alone, as when comparing two mains)
        "raw_p50": statistics.median(raw) if raw else float("nan"),
        "raw_p99": percentile(raw, 0.99) if raw else float("nan"),
        "first": f"{first}/{len(expected)}",
        "notes_rate": notes,
        "mb": size_mb,
        "profile": prof,
        "queries": len(times),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--raw-repeat", type=int, default=1, help="runs of the raw FTS5 query (~1 s each at 1M; 0: none)"
    )
    parser.add_argument("--notes", type=int, default=200)
    parser.add_argument("--profile", type=int, default=0, help="cProfile the N slowest queries of each size")
    parser.add_argument("--home", type=Path, default=None, help="keep (and reuse) the stores under this folder")
    parser.add_argument("--clusters", type=Path, default=Path(__file__).parent / "data" / "clusters.jsonl")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here (bench/run_all.py)")
    args = parser.parse_args()
    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",")]
    seeded, queries = cluster_records(args.clusters)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        root = args.home or Path(tmp)
        for size in sizes:
            result = measure(size, root, args, seeded, queries)
            results.append((size, result))
            console.print(f"[bold]{size:,}[/bold]: {json.dumps({k: v for k, v in result.items() if k != 'profile'})}")
            if result["profile"]:
                console.print(result["profile"], markup=False, highlight=False)
    table = Table(title=f"memory_search at scale ({len(queries)} real queries × {args.repeat})")
    columns = (
        "records", "build rec/s", "search p50 ms", "search p99 ms", "raw FTS p50 ms", "raw FTS p99 ms",
        "raw/search p50", "right first", "notes/s", "store MB",
    )  # fmt: skip
    for col in columns:
        table.add_column(col, justify="right")
    for _, r in results:
        table.add_row(
            f"{r['records']:,}", f"{r['build_rate']:,.0f}" if r["built"] else "-", f"{r['search_p50']:.2f}",
            f"{r['search_p99']:.2f}", f"{r['raw_p50']:.2f}", f"{r['raw_p99']:.2f}",
            f"{r['raw_p50'] / r['search_p50']:.1f}×", r["first"], f"{r['notes_rate']:.0f}", f"{r['mb']:.0f}",
        )  # fmt: skip
    Console(width=150).print(table)
    console.print(f"SQLite {sqlite3.sqlite_version}, Python {sys.version.split()[0]}")
    if args.json:
        args.json.write_text(json.dumps([{k: v for k, v in r.items() if k != "profile"} for _, r in results]))


if __name__ == "__main__":
    main()

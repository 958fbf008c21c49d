"""Team memory at scale: ``python bench/team_scale.py --records 1000000``.

Builds one team of ``--records`` records straight into PostgreSQL with COPY (bench/scale.py's
generator: real package and symbol names in many ecosystems' error templates, plus the real
cluster records of bench/data/clusters.jsonl), ``--workers`` processes in parallel. The term
counter trigger is off while loading (``session_replication_role = replica``) and the counts are
then built in one pass, as a restore would. Then starts the team server (``jiyi.team.server.app``,
uvicorn on loopback) and runs ``--clients`` concurrent clients (asyncio, one keep-alive connection each), each doing
searches (the clusters' other occurrences and generated errors as queries) and, one time in
``1 / --push-share``, a push of one new record, for ``--duration`` seconds. With ``--think`` each
client pauses a random time of that mean (exponential) between operations, as an agent does
between searches; without it the clients fire back to back, so the server runs saturated and
latency is the queue it builds (50 clients / the operations per second it completes). Prints p50 / p95 / p99
per operation, the errors, and the pushes sent against those found in the database afterwards.

``--direct`` measures ``PgStore`` itself from ``--clients`` threads instead (no HTTP). The schema
(``--schema``, default ``jiyi_bench``) is kept and reused while it holds enough records; ``--fresh``
drops it first. A measurement, not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import multiprocessing
import os
import random
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import Any

import httpx
import psycopg
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

sys.path.insert(0, str(Path(__file__).parent))
from latency import cluster_records
from scale import _prepared, percentile, varied

from jiyi import transfer
from jiyi.analysis import glossary
from jiyi.config import cache_dir
from jiyi.records import Record, Revision
from jiyi.store.postgres.rows import PUT_COLUMNS, record_row
from jiyi.store.postgres.store import PgDatabase, PgStore
from jiyi.store.postgres.team import TeamStore
from jiyi.team.server.app import search_hits

console = Console(stderr=True, width=150)
BATCH = 2000
_COPY_RECORDS = f"COPY records (team_id, {', '.join(PUT_COLUMNS)}) FROM STDIN"  # record_row's order


def export_line(record: Record, revision: Revision) -> dict[str, Any]:
    """What a client pushes for a new note (``transfer.record_to_json`` without a store)."""
    data: dict[str, Any] = {"jiyi_export": transfer.FORMAT, "id": record.id}
    data.update({name: getattr(record, name) for name in transfer._FIELDS})
    data.update(fix=None, reproduction=None, verification=None, marks=[], revisions=[asdict(revision)])
    data.update(signatures=list(record.signatures), symbols=list(record.symbols))
    return data


# -- build -------------------------------------------------------------------------------------
def _load(dsn: str, schema: str, team: int, seed: str, count: int, done: Any) -> None:
    """One loader process: ``count`` generated records, COPY'd ``BATCH`` to a transaction."""
    rng = random.Random(seed)
    source = varied(rng, count)
    with psycopg.connect(dsn, autocommit=True, options=f"-c search_path={schema}") as conn:
        conn.execute("SET session_replication_role = replica")  # no term trigger: counted after
        while batch := [_prepared(r) for r in itertools.islice(source, BATCH)]:
            with conn.transaction(), conn.cursor() as cur:
                with cur.copy(_COPY_RECORDS) as copy:
                    for record, _, derived in batch:
                        copy.write_row(record_row(team, record, derived))
                for table, column, attr in (("signatures", "sig", "signatures"), ("symbols", "symbol", "symbols")):
                    with cur.copy(f"COPY {table} (team_id, {column}, hex) FROM STDIN") as copy:
                        for record, _, _ in batch:
                            for value in dict.fromkeys(getattr(record, attr)):
                                copy.write_row((team, value, record.hex))
                with cur.copy(
                    "COPY revisions (team_id, hex, revision, session_id, created, change, snapshot) FROM STDIN"
                ) as copy:
                    for _, rev, _ in batch:
                        copy.write_row((team, rev.hex, rev.revision, rev.session_id, rev.created, rev.change,
                                        psycopg.types.json.Jsonb(rev.snapshot)))  # fmt: skip
            with done.get_lock():
                done.value += len(batch)


def build(db: PgDatabase, store: PgStore, size: int, workers: int, seeded: list[Record]) -> tuple[int, float]:
    have = store.count()
    if have >= size:
        console.print(f"reusing {have:,} records in schema {db.schema}")
        return 0, 0.0
    started = time.perf_counter()
    if have == 0:
        store.write_many(_prepared(r) for r in seeded)  # the real records the real queries look for
    todo = size - store.count()
    done = multiprocessing.get_context("spawn").Value("q", 0)
    shares = [todo // workers + (1 if i < todo % workers else 0) for i in range(workers)]
    ctx = multiprocessing.get_context("spawn")
    procs = [
        ctx.Process(target=_load, args=(db.dsn, db.schema, store.team, f"{size}/{have}/{i}", n, done))
        for i, n in enumerate(shares)
    ]
    for proc in procs:
        proc.start()
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=console) as bar:
        task = bar.add_task(f"COPY {todo:,} records ({workers} processes)", total=todo)
        while any(p.is_alive() for p in procs):
            bar.update(task, completed=done.value)
            time.sleep(0.5)
        bar.update(task, completed=done.value)
        if any(p.exitcode for p in procs):
            raise SystemExit("a loader process failed")
        counting = bar.add_task("counting documents per term", total=None)
        with db.cursor() as cur:
            cur.execute("DELETE FROM terms WHERE team_id = %s", (store.team,))
            cur.execute("DELETE FROM term_changes WHERE team_id = %s", (store.team,))
            cur.execute(
                "INSERT INTO terms (team_id, term, docs) SELECT %s, t, count(*) FROM records, "
                "unnest(tsvector_to_array(tsv)) t WHERE team_id = %s AND tsv IS NOT NULL GROUP BY t",
                (store.team, store.team),
            )
            cur.execute(
                "INSERT INTO terms (team_id, term, docs) SELECT %s, '', count(*) FROM records "
                "WHERE team_id = %s AND tsv IS NOT NULL",
                (store.team, store.team),
            )
        with psycopg.connect(db.dsn, autocommit=True, options=f"-c search_path={db.schema}") as conn:
            conn.execute("VACUUM ANALYZE")
        bar.update(counting, total=1, completed=1)
    return todo, time.perf_counter() - started


# -- load --------------------------------------------------------------------------------------
class Results:
    def __init__(self) -> None:
        self.times: dict[str, list[float]] = {"search": [], "push": []}
        self.errors: Counter[str] = Counter()
        self.pushed: list[str] = []  # hexes the server accepted
        self.sent = 0
        self.lock = threading.Lock()
        self.cpu: dict[str, float] = {}  # CPU seconds each part used during the load

    def add(self, op: str, ms: float, error: str | None = None) -> None:
        with self.lock:
            if error:
                self.errors[f"{op}: {error}"] += 1
            else:
                self.times[op].append(ms)


def push_lines(seed: str) -> Any:
    for record in varied(random.Random(seed), 10**9):
        record, revision, _ = _prepared(record)
        yield export_line(record, revision)


class LeanHttp:
    """A keep-alive HTTP/1.1 client on one asyncio connection, for the load only. httpx spent
    ~1.5 ms of CPU a request here (~0.03 ms this way): on a 2-core box the load generator's cost
    came out of the server's share. Real clients run elsewhere; this keeps the measurement on
    the server. Answers must carry Content-Length (Starlette's do)."""

    def __init__(self, url: str, token: str) -> None:
        host, _, port = url.removeprefix("http://").partition(":")
        self.host, self.port = host, int(port)
        self.auth = f"Bearer {token}"
        self.conn: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def request(self, method: str, path: str, body: bytes = b"") -> tuple[int, bytes]:
        for attempt in (1, 2):  # a keep-alive connection the server closed meanwhile: one new one
            if self.conn is None:
                self.conn = await asyncio.open_connection(self.host, self.port)
            reader, writer = self.conn
            head = (
                f"{method} {path} HTTP/1.1\r\nhost: {self.host}\r\nauthorization: {self.auth}\r\n"
                f"content-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
            )
            writer.write(head.encode() + body)
            try:
                lines = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
            except (asyncio.IncompleteReadError, ConnectionError):
                writer.close()
                self.conn = None
                if attempt == 2:
                    raise
                continue
            fields = dict(line.lower().split(": ", 1) for line in lines[1:] if ": " in line)
            answer = await reader.readexactly(int(fields["content-length"]))
            return int(lines[0].split()[1]), answer
        raise AssertionError("unreachable")

    def close(self) -> None:
        if self.conn is not None:
            self.conn[1].close()


async def http_client(
    i: int, url: str, token: str, queries: list[str], args: argparse.Namespace, deadline: float, out: Results
) -> None:
    rng = random.Random(i)
    lines = push_lines(f"push/{i}/{time.time()}")
    http = LeanHttp(url, token)
    try:
        while time.perf_counter() < deadline:
            if args.think:
                await asyncio.sleep(rng.expovariate(1000 / args.think))
            if rng.random() < args.push_share:
                line = next(lines)
                body = json.dumps({"machine": f"bench-{i}", "records": [line]}).encode()
                with out.lock:
                    out.sent += 1
                t0 = time.perf_counter()
                try:
                    status, answer = await http.request("POST", "/v1/push", body)
                except (OSError, asyncio.IncompleteReadError) as exc:
                    out.add("push", 0, type(exc).__name__)
                    continue
                ms = (time.perf_counter() - t0) * 1000
                if status == 200 and json.loads(answer)["accepted"] == [line["hex"]]:
                    out.add("push", ms)
                    with out.lock:
                        out.pushed.append(line["hex"])
                else:
                    out.add("push", ms, f"HTTP {status}")
            else:
                path = "/v1/search?" + urllib.parse.urlencode({"q": rng.choice(queries), "limit": 5})
                t0 = time.perf_counter()
                try:
                    status, _ = await http.request("GET", path)
                except (OSError, asyncio.IncompleteReadError) as exc:
                    out.add("search", 0, type(exc).__name__)
                    continue
                ms = (time.perf_counter() - t0) * 1000
                out.add("search", ms, None if status == 200 else f"HTTP {status}")
    finally:
        http.close()


def direct_client(
    i: int, store: PgStore, queries: list[str], args: argparse.Namespace, deadline: float, out: Results
) -> None:
    rng = random.Random(i)
    lines = push_lines(f"push/{i}/{time.time()}")
    while time.perf_counter() < deadline:
        if args.think:
            time.sleep(rng.expovariate(1000 / args.think))
        push = rng.random() < args.push_share
        line = next(lines) if push else None
        t0 = time.perf_counter()
        try:
            if line is not None:
                with out.lock:
                    out.sent += 1
                store.merge_pushed(line, f"bench-{i}")
                with out.lock:
                    out.pushed.append(line["hex"])
            else:
                search_hits(store, rng.choice(queries), 5)  # what the server's /v1/search runs
        except Exception as exc:
            out.add("push" if push else "search", 0, type(exc).__name__)
            continue
        out.add("push" if push else "search", (time.perf_counter() - t0) * 1000)


def cpu_seconds(server: int) -> dict[str, float]:
    """CPU seconds (user + system) used so far by PostgreSQL's processes, the team server's (``server``
    and its children) and this one (the load generator), from /proc: where an operation's cost goes."""
    tick = os.sysconf("SC_CLK_TCK")
    procs: dict[int, tuple[str, int, float]] = {}  # pid -> (name, parent, seconds)
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue  # gone meanwhile
            fields = stat[stat.rindex(")") + 2 :].split()
            name = stat[stat.index("(") + 1 : stat.rindex(")")]
            procs[int(entry.name)] = (name, int(fields[1]), (int(fields[11]) + int(fields[12])) / tick)
    used = {"postgres": 0.0, "server": 0.0, "load": 0.0}
    for pid, (name, parent, seconds) in procs.items():
        ancestors = {pid}
        while parent > 1 and parent not in ancestors:
            ancestors.add(parent)
            parent = procs.get(parent, ("", 0, 0.0))[1]
        if pid == os.getpid():
            used["load"] += seconds
        elif server in ancestors:
            used["server"] += seconds
        elif name.startswith("postgres"):
            used["postgres"] += seconds
    return used


def serve(args: argparse.Namespace, db: PgDatabase) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "JIYI_TEAM_DSN": db.dsn, "JIYI_TEAM_SCHEMA": db.schema, "JIYI_TEAM_RATE": "0"}
    command = [
        sys.executable, "-m", "uvicorn", "--factory", "jiyi.team.server.app:app_from_env", "--host", "127.0.0.1",
        "--port", str(port), "--workers", str(args.server_workers), "--log-level", "warning", "--no-access-log",
    ]  # fmt: skip
    server = subprocess.Popen(command, env=env)
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            if httpx.get(url + "/v1/health", timeout=1).status_code == 200:
                return server, url
        except httpx.HTTPError:
            pass
        if server.poll() is not None:
            raise SystemExit("the team server did not start")
        time.sleep(0.1)
    server.terminate()
    raise SystemExit("the team server did not answer /v1/health")


def run_load(args: argparse.Namespace, db: PgDatabase, store: PgStore, queries: list[str]) -> Results:
    out = Results()
    if args.direct:
        # As a server worker does (team/server/app.py, app_from_env): Chinese glosses from the small
        # table in the cache folder, written there before the clock starts if it is missing. Without
        # it the first Chinese query read the whole dictionary in this process, ~1.3 s of the max.
        glossary.use(str(cache_dir()))
        glossary.lookup(["错误"])
        deadline = time.perf_counter() + args.duration
        threads = [
            threading.Thread(target=direct_client, args=(i, store, queries, args, deadline, out))
            for i in range(args.clients)
        ]
        with console.status(f"{args.clients} threads on PgStore for {args.duration:.0f} s"):
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        return out
    tokens = [db.create_token(store.team, f"bench-{i}-{time.time()}") for i in range(args.clients)]
    server, url = serve(args, db)
    try:

        async def main() -> None:
            deadline = time.perf_counter() + args.duration
            await asyncio.gather(
                *(http_client(i, url, tokens[i], queries, args, deadline, out) for i in range(args.clients))
            )

        with console.status(f"{args.clients} clients over HTTP for {args.duration:.0f} s"):
            before = cpu_seconds(server.pid)
            asyncio.run(main())
            after = cpu_seconds(server.pid)
        out.cpu = {part: after[part] - before[part] for part in before}
    finally:
        server.terminate()
        server.wait(30)
        for token in tokens:
            db.revoke_token(token)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--dsn", default=os.environ.get("JIYI_TEST_PG", "host=127.0.0.1 port=5432 dbname=test user=postgres")
    )
    parser.add_argument("--schema", default="jiyi_bench")
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--workers", type=int, default=2, help="loader processes")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of load")
    parser.add_argument("--push-share", type=float, default=0.2, help="share of operations that are pushes")
    parser.add_argument("--think", type=float, default=0.0, help="mean pause in ms between a client's operations")
    parser.add_argument("--server-workers", type=int, default=2, help="uvicorn worker processes")
    parser.add_argument("--direct", action="store_true", help="call PgStore from threads, no HTTP server")
    parser.add_argument("--fresh", action="store_true", help="drop the schema first")
    parser.add_argument("--clusters", type=Path, default=Path(__file__).parent / "data" / "clusters.jsonl")
    args = parser.parse_args()
    if args.fresh:
        with psycopg.connect(args.dsn, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{args.schema}" CASCADE')
    seeded, real = cluster_records(args.clusters)
    generated = [r.what[:2000] for r in varied(random.Random("queries"), 200)]
    queries = [text for text, _ in real] + generated
    with PgDatabase(args.dsn, schema=args.schema, max_size=args.clients + 2, timeout=60) as db:
        teams = {t.name: t.id for t in db.list_teams()}
        team = teams.get("bench") or db.create_team("bench")
        store = TeamStore(db, team)
        built, seconds = build(db, store, args.records, args.workers, seeded)
        before = store.count()
        out = run_load(args, db, store, queries)
        found = 0
        with db.cursor() as cur:
            cur.execute("SELECT count(*) FROM records WHERE team_id = %s AND hex = ANY(%s)", (team, out.pushed))
            found = int(cur.fetchone()[0])  # type: ignore[index]
        after = store.count()
        with db.cursor() as cur:
            cur.execute("SELECT pg_size_pretty(pg_database_size(current_database()))")
            size = cur.fetchone()[0]  # type: ignore[index]
    mode = "PgStore from threads" if args.direct else f"HTTP, {args.server_workers} server processes"
    mode += f", think {args.think:.0f} ms" if args.think else ", back to back"
    table = Table(title=f"team memory: {before:,} records, {args.clients} clients, {args.duration:.0f} s, {mode}")
    for col in ("operation", "done", "per s", "p50 ms", "p95 ms", "p99 ms", "max ms"):
        table.add_column(col, justify="right")
    for op, times in out.times.items():
        if times:
            table.add_row(
                op, f"{len(times):,}", f"{len(times) / args.duration:.1f}", f"{statistics.median(times):.1f}",
                f"{percentile(times, 0.95):.1f}", f"{percentile(times, 0.99):.1f}", f"{max(times):.1f}",
            )  # fmt: skip
    Console(width=150).print(table)
    if built:
        print(f"build: {built:,} records in {seconds:.0f} s ({built / seconds:,.0f} records/s); database {size}")
    if out.cpu:
        ops = sum(len(t) for t in out.times.values()) or 1
        parts = ", ".join(f"{part} {seconds * 1000 / ops:.1f} ms" for part, seconds in out.cpu.items())
        busy = sum(out.cpu.values()) / args.duration
        print(f"CPU per operation: {parts} ({busy:.2f} of {os.cpu_count()} cores busy)")
    print(f"errors: {dict(out.errors) or 'none'}")
    print(
        f"pushes: sent {out.sent}, accepted {len(out.pushed)}, found in the database {found}, "
        f"records {before:,} -> {after:,} (lost: {len(out.pushed) - found})"
    )


if __name__ == "__main__":
    main()

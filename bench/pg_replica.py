"""The team server on a real streaming standby: ``python bench/pg_replica.py``.

Makes a throwaway PostgreSQL primary (``initdb`` in a temp folder, its own port on loopback) and a
hot standby of it (``pg_basebackup -R``, another port), run as the ``postgres`` user when started as
root, both removed afterwards; the PostgreSQL other work uses is not touched. Then checks and times:

1. The standby opened as a primary fails (it refuses the migrations' writes); opened read-only it
   serves once it has replayed them, and a write through it fails.
2. An upgrade: one migration more applied on the primary; how long until the standby's read-only
   open stops refusing it (``NotCaughtUp``).
3. ``jiyi team serve --read-dsn <standby>``: ``--pushers`` threads push ``--records`` new records
   (one a request) while a puller pulls ``/v1/changes`` by cursor back to back; prints the lag from
   a push's answer to its record showing in a pull, p50 / p95 / max, and after the pushes, once the
   pulls are empty, whether every pushed record came (none skipped) and the cursor only grew.

Needs PostgreSQL's server programs (``pg_config --bindir``). A manual check, not a test.
"""

from __future__ import annotations

import argparse
import itertools
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import psycopg

sys.path.insert(0, str(Path(__file__).parent))
from scale import percentile
from team_scale import push_lines

from jiyi.errors import Unavailable
from jiyi.store.migrations import Migration, Migrations
from jiyi.store.postgres import migrations as pg_migrations
from jiyi.store.postgres.database import NotCaughtUp, PgDatabase

SCHEMA = "jiyi"


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _run(*command: str) -> None:
    # PostgreSQL refuses to run as root: its programs run as the postgres user then.
    prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    subprocess.run([*prefix, *command], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


@contextmanager
def cluster() -> Iterator[tuple[str, str]]:
    """(primary DSN, standby DSN) of a fresh primary and its streaming hot standby."""
    bindir = Path(subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, check=True).stdout.strip())
    top = Path(tempfile.mkdtemp(prefix="jiyi-replica-"))
    if os.geteuid() == 0:
        shutil.chown(top, "postgres", "postgres")
    primary, standby = top / "primary", top / "standby"
    ports = _port(), _port()
    started: list[Path] = []
    try:
        _run(str(bindir / "initdb"), "-D", str(primary), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
        settings = "listen_addresses='127.0.0.1' unix_socket_directories='{}' fsync=off wal_level=replica"
        for data, port in ((primary, ports[0]), (standby, ports[1])):
            if data == standby:
                _run(str(bindir / "pg_basebackup"), "-h", "127.0.0.1", "-p", str(ports[0]), "-U", "postgres",
                     "-D", str(standby), "-R", "-X", "stream", "--no-sync")  # fmt: skip
            opts = " ".join(f"-c {s}" for s in settings.format(top).split()) + f" -p {port}"
            _run(
                str(bindir / "pg_ctl"), "-D", str(data), "-o", opts, "-l", str(top / f"{data.name}.log"), "-w", "start"
            )
            started.append(data)
        yield (f"host=127.0.0.1 port={ports[0]} dbname=postgres user=postgres",
               f"host=127.0.0.1 port={ports[1]} dbname=postgres user=postgres")  # fmt: skip
    finally:
        for data in reversed(started):
            _run(str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop")
        shutil.rmtree(top, ignore_errors=True)


def caught_up(dsn: str, timeout: float = 30.0) -> float:
    """Seconds until ``dsn`` opens read-only (its schema has every migration of this code)."""
    start = time.monotonic()
    while True:
        try:
            PgDatabase(dsn, schema=SCHEMA, min_size=1, max_size=1, read_only=True).close()
            return time.monotonic() - start
        except NotCaughtUp:
            if time.monotonic() - start > timeout:
                raise
            time.sleep(0.002)


def check_migrations(primary: str, standby: str) -> None:
    try:
        PgDatabase(standby, schema=SCHEMA).close()
        print("standby opened as a primary: UNEXPECTED")
    except Unavailable as exc:
        print(f"standby opened as a primary: refused ({exc.reason.splitlines()[0][:90]})")
    with PgDatabase(primary, schema=SCHEMA) as db:
        db.create_team("acme")
    print(f"standby read-only after the primary migrated: opens in {caught_up(standby) * 1000:.1f} ms")
    with PgDatabase(standby, schema=SCHEMA, read_only=True) as replica:
        try:
            replica.create_team("written-on-the-standby")
            print("a write through the read-only database: UNEXPECTED, it succeeded")
        except Unavailable as exc:
            print(f"a write through the read-only database: refused ({exc.reason[:70]})")
    shipped = pg_migrations.MIGRATIONS
    upgrade = Migration("m999_bench_upgrade", "CREATE TABLE bench_upgrade (x int)")
    pg_migrations.MIGRATIONS = Migrations([*shipped, upgrade])
    try:
        PgDatabase(primary, schema=SCHEMA).close()
        print(f"an upgrade's migration: the standby opens read-only {caught_up(standby) * 1000:.1f} ms after it")
    finally:
        pg_migrations.MIGRATIONS = shipped
        # Taken back, so the server started next opens a schema of this jiyi's (it refuses one that
        # a newer jiyi migrated).
        with psycopg.connect(primary, autocommit=True) as conn:
            conn.execute(f'DELETE FROM "{SCHEMA}"._migrations WHERE name = %s', (upgrade.name,))
            conn.execute(f'DROP TABLE "{SCHEMA}".bench_upgrade')


def serve(primary: str, standby: str) -> tuple[subprocess.Popen[bytes], str, str]:
    with PgDatabase(primary, schema=SCHEMA) as db:
        token = db.create_token("acme", "bench")
    port = _port()
    command = [sys.executable, "-m", "jiyi", "team", "serve", "--dsn", primary, "--read-dsn", standby,
               "--schema", SCHEMA, "--port", str(port), "--rate", "0"]  # fmt: skip
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            if httpx.get(url + "/v1/health", timeout=1).status_code == 200:
                return server, url, token
        except httpx.HTTPError:
            pass
        if server.poll() is not None:
            raise SystemExit("jiyi team serve did not start")
        time.sleep(0.1)
    raise SystemExit("jiyi team serve did not answer")


def wait_for_replay(primary: str, standby: str) -> float:
    """Seconds until the standby has replayed all the WAL the primary has written so far."""
    start = time.monotonic()
    with psycopg.connect(primary, autocommit=True) as conn:
        target = conn.execute("SELECT pg_current_wal_lsn()").fetchone()[0]  # type: ignore[index]
    with psycopg.connect(standby, autocommit=True) as conn:
        while not conn.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (target,)).fetchone()[0]:  # type: ignore[index]
            time.sleep(0.005)
    return time.monotonic() - start


def pull_while_pushing(primary: str, standby: str, url: str, token: str, records: int, pushers: int) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    answered: dict[str, float] = {}
    seen: dict[str, float] = {}
    cursors: list[int] = [0]
    done = threading.Event()

    def push(i: int) -> None:
        lines = push_lines(f"replica/{i}/{time.time()}")
        with httpx.Client(base_url=url, headers=headers, timeout=30) as http:
            for _ in range(records // pushers):
                line = next(lines)
                http.post("/v1/push", json={"machine": f"m{i}", "records": [line]}).raise_for_status()
                answered[line["hex"]] = time.monotonic()

    def pull() -> None:
        with httpx.Client(base_url=url, headers=headers, timeout=30) as http:
            while True:
                # ``done`` is set once the replica has replayed every push: one empty pull after it ends.
                last = done.is_set()
                answer = http.get("/v1/changes", params={"cursor": cursors[-1], "limit": 1000}).json()
                moment = time.monotonic()
                for line in answer["records"]:
                    seen.setdefault(line["hex"], moment)
                cursors.append(int(answer["cursor"]))
                if last and not answer["more"]:
                    return
                if not answer["records"]:
                    time.sleep(0.005)

    puller = threading.Thread(target=pull)
    threads = [threading.Thread(target=push, args=(i,)) for i in range(pushers)]
    start = time.monotonic()
    puller.start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - start
    replay = wait_for_replay(primary, standby)
    done.set()
    puller.join()
    lags = [max(0.0, seen[h] - at) * 1000 for h, at in answered.items() if h in seen]
    skipped = [h for h in answered if h not in seen]
    print(
        f"{len(answered)} pushes by {pushers} threads in {elapsed:.1f} s; {len(cursors) - 1} pulls from the replica; "
        f"it had replayed the last push {replay * 1000:.0f} ms after"
    )
    print(
        f"push answered -> its record in a replica pull (pull time included): p50 {statistics.median(lags):.1f} ms, "
        f"p95 {percentile(lags, 0.95):.1f} ms, max {max(lags):.1f} ms"
    )
    grew = all(a <= b for a, b in itertools.pairwise(cursors))
    print(f"skipped by the pulls: {len(skipped)}; cursor only grew: {grew}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument("--pushers", type=int, default=4)
    args = parser.parse_args()
    with cluster() as (primary, standby):
        check_migrations(primary, standby)
        server, url, token = serve(primary, standby)
        try:
            pull_while_pushing(primary, standby, url, token, args.records, args.pushers)
        finally:
            server.terminate()
            server.wait(30)


if __name__ == "__main__":
    main()

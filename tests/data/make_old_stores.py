"""How store-v0.1.sqlite, store-v0.1.json and store-v0.1-pg.sql were made: run with the jiyi of
commit fcd6329 (the last one before the shared migration registry) on the path, e.g.

    git archive fcd6329 | tar -x -C OLD
    PYTHONPATH=OLD/src python tests/data/make_old_stores.py tests/data

The SQLite store holds a few notes, a session whose failure a note and then an automatic record
resolved, and a session left with a failure pending; the JSON the hits of a few searches as that
jiyi ranked them; the SQL a team schema (pg_dump --inserts, so no psql is needed to restore it)
with one team, one member and one pushed record. tests/store/test_old_stores.py opens them with
the current code.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

PG_DSN = "host=127.0.0.1 port=5432 dbname=test user=postgres"
PG_SCHEMA = "jiyi_store_v0_1"  # distinctive: the test substitutes a fresh schema for it
QUERIES = ("ld: undefined symbol deflate", "No module named yaml", "pytest fixture scope", "缓存 失效")
NOTES = (
    {
        "title": "Link zlib with -lz",
        "type": "bugfix",
        "scope": "project",
        "content": {
            "what": "ld: undefined symbol deflate",
            "why": "zlib was not on the link line",
            "where": "Makefile LDLIBS",
            "learned": "add -lz after the object files",
        },
    },
    {
        "title": "Install PyYAML for the yaml module",
        "type": "bugfix",
        "scope": "global",
        "content": {
            "what": "ModuleNotFoundError: No module named 'yaml'",
            "why": "PyYAML is not installed in this environment",
            "where": "requirements.txt",
            "learned": "pip install pyyaml (the import name differs from the package name)",
        },
    },
    {
        "title": "Session-scoped pytest fixture for the database",
        "type": "decision",
        "scope": "project",
        "topic_key": "tests/db-fixture",
        "content": {
            "what": "pytest fixture scope session for the PostgreSQL schema",
            "why": "creating the schema per test took most of the suite's time",
            "where": "tests/conftest.py",
            "learned": "one schema per session, a transaction per test",
        },
    },
    {
        "title": "缓存失效要按项目清理",
        "type": "pitfall",
        "scope": "project",
        "content": {
            "what": "缓存 失效 之后 旧的 结果 还在",
            "why": "缓存键没有包含项目",
            "where": "cache.py",
            "learned": "缓存键加上项目键",
        },
    },
)


def main(out: Path) -> None:
    import jiyi
    from jiyi.config import Settings

    print("jiyi from", jiyi.__file__, file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        os.environ["JIYI_CONFIG_DIR"] = str(Path(tmp) / "config")
        settings = Settings(home=home)
        with jiyi.Memory(settings=settings, cwd=tmp) as memory:
            writer = memory.session(project="demo", env={"os": "linux"}, session_id="writer")
            # The failure first: the zlib note is about it (a bug fix), so it gets its signatures.
            writer.observe_tool_result("Bash", ok=False, error="ld: undefined symbol deflate", command="make")
            hexes = {n["title"]: writer.note(**n).record.hex for n in NOTES}
            writer.observe_tool_result("Bash", ok=True, command="make LDLIBS=-lz")
            fixer = memory.session(project="demo", env={"os": "linux"}, session_id="fixer")
            fixer.observe_tool_result("Bash", ok=False, error="E: No module named 'yaml'", command="python a.py")
            fixer.observe_tool_result("Edit", ok=True, edited=("requirements.txt",))
            fixer.observe_tool_result("Bash", ok=True, command="python a.py --again")
            pending = memory.session(project="demo", env={"os": "linux"}, session_id="pending")
            pending.observe_tool_result("Bash", ok=False, error="segfault in libfoo.so", command="./run")
            reader = memory.session(project="demo", env={"os": "linux"}, session_id="reader")
            hits = {q: [h.record.hex for h in reader.search(q)] for q in QUERIES}
            records = [r.hex for r in memory.store.list_records(limit=100)]
            line = jiyi_export(memory.store, hexes["Link zlib with -lz"])
        db = sqlite3.connect(home / "jiyi.db")
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.execute("VACUUM")
        db.close()
        (out / "store-v0.1.sqlite").write_bytes((home / "jiyi.db").read_bytes())
    expected = {"notes": hexes, "records": sorted(records), "hits": hits}
    (out / "store-v0.1.json").write_text(json.dumps(expected, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    pg_dump(out / "store-v0.1-pg.sql", line)


def jiyi_export(store: object, hexid: str) -> dict[str, object]:
    from jiyi.transfer import record_to_json

    record = store.get(hexid)  # type: ignore[attr-defined]
    return record_to_json(store, record)  # type: ignore[arg-type]


def pg_dump(path: Path, line: dict[str, object]) -> None:
    import psycopg
    from jiyi.pg_store import PgDatabase, PgStore  # type: ignore[import-not-found]

    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{PG_SCHEMA}" CASCADE')
    try:
        with PgDatabase(PG_DSN, schema=PG_SCHEMA) as db:
            team = db.create_team("old-team")
            db.create_token(team, "alice")
            assert PgStore(db, team).merge_pushed(line, "alice")
        dump = subprocess.run(
            ["pg_dump", "--schema", PG_SCHEMA, "--no-owner", "--inserts", PG_DSN],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        path.write_text(dump, encoding="utf-8")
    finally:
        with psycopg.connect(PG_DSN, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{PG_SCHEMA}" CASCADE')


if __name__ == "__main__":
    main(Path(sys.argv[1]))

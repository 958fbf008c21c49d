"""The secrets corpus (tests/data/secrets.txt) for the tests that carry it through jiyi: its
entries, their secrets, the corpus cut into batches that fit a field, and where a secret was left.

Each entry starts with a line `%% <kind of secret>` and runs to the next such line; in an entry,
`⟦kind:secret⟧` marks one secret and the kind redact() must name it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jiyi.store.postgres.database import PgDatabase

MARK = re.compile(r"⟦([a-z0-9-]+):(.*?)⟧", re.DOTALL)
CORPUS = (Path(__file__).resolve().parent / "data" / "secrets.txt").read_text(encoding="utf-8")
_ENTRY = re.compile(r"^%% (?P<name>[^\n]+)\n(?P<body>.*?)(?=^%% |\Z)", re.MULTILINE | re.DOTALL)

# (kind, marked entry) in the corpus's order.
NAMED = [(m["name"], m["body"].strip("\n")) for m in _ENTRY.finditer(CORPUS)]
ENTRIES = [body for _, body in NAMED]
KINDS = sorted({name for name, _ in NAMED})


def raw(entry: str) -> str:
    """The entry as it turns up: the marks dropped, the secrets left in."""
    return MARK.sub(lambda m: m[2], entry)


def expected(entry: str) -> str:
    """The entry as redact() must return it."""
    return MARK.sub(lambda m: f"[REDACTED:{m[1]}]", entry)


def secrets_of(entry: str) -> list[str]:
    return [m[2] for m in MARK.finditer(entry)]


def survives(secret: str, out: str) -> bool:
    """Whether any 16 characters of ``secret`` (all of a shorter one) are left in ``out``."""
    width = min(16, len(secret))
    return any(secret[i : i + width] in out for i in range(0, len(secret) - width + 1, 4))


def batches(limit: int, *, one_line: bool = False) -> list[str]:
    """The raw entries joined by newlines into texts of at most ``limit`` characters, in order;
    ``one_line``: only the entries of one line that fit, joined by `` ; `` (a title)."""
    texts = [raw(e) for e in ENTRIES]
    if one_line:
        texts = [t for t in texts if _fits(t, limit)]
    joiner = " ; " if one_line else "\n"
    out: list[str] = []
    for text in texts:
        if len(text) > limit:
            raise ValueError(f"an entry of {len(text)} characters does not fit in {limit}")
        if out and len(out[-1]) + len(joiner) + len(text) <= limit:
            out[-1] += joiner + text
        else:
            out.append(text)
    return out


def in_batches(limit: int, *, one_line: bool = False) -> list[str]:
    """The kinds of which an entry is in ``batches(limit, one_line=…)`` (what that path carries)."""
    return sorted({name for name, e in NAMED if not one_line or _fits(raw(e), limit)})


def _fits(text: str, limit: int) -> bool:
    return "\n" not in text and len(text) <= limit


def leaks(text: str, *, whole: bool = False) -> list[str]:
    """The kinds of which some secret survives in ``text`` (compared without case, as an index of
    lowercased terms keeps it); ``whole``: only a whole secret counts."""
    folded = text.lower()
    left = (lambda s: s in folded) if whole else (lambda s: survives(s, folded))
    return sorted({name for name, e in NAMED for s in secrets_of(e) if left(s.lower())})


def leaks_in_files(*paths: Path) -> list[str]:
    """``leaks`` in every file under ``paths`` (a database, its write-ahead log, caches, an export),
    as ``kind in file-name``."""
    found: set[str] = set()
    for path in paths:
        files = [p for p in path.rglob("*") if p.is_file()] if path.is_dir() else [path]
        for file in files:
            text = file.read_bytes().decode("utf-8", "replace")
            # The cache of redact's compiled patterns holds their literals, and `AGE-SECRET-KEY-1`
            # is both a pattern's and the first 16 characters of such a key: there, whole secrets.
            whole = file.name.startswith("regex-") and file.suffix == ".marshal"
            found.update(f"{kind} in {file.name}" for kind in leaks(text, whole=whole))
    return sorted(found)


def pg_text(db: PgDatabase) -> str:
    """Every row of every table of ``db``'s schema, as PostgreSQL prints a row: what a leak check
    reads on the server (records, revisions, relations, indexes, verifications, sessions…)."""
    with db.cursor() as cur:
        cur.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (db.schema,))
        tables = [str(row[0]) for row in cur.fetchall()]
        texts: list[str] = []
        for table in tables:
            cur.execute(f'SELECT t::text FROM "{db.schema}"."{table}" t')
            texts += [str(row[0]) for row in cur.fetchall()]
    return "\n".join(texts)

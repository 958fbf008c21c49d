"""Chinese and mixed queries: CJK bigrams against FTS5 ``trigram`` and ``jieba`` words (``python bench/cjk.py``).

The records are the development set's clusters (first occurrence, title, learned), real Chinese notes
from public threads on the same failures (``bench/data/cjk.jsonl``, ``kind: record``, each with its
source) and ``--distractors`` generated English ones. The queries (``kind: query``) are real Chinese
or mixed wordings of those failures taken from *other* public threads — issue titles and the sentence
that asks the question — plus the project's own example ``链接时找不到 zlib``; a record from the
query's own thread is left out of its ranking.

Each tokenisation indexes the same title and body in its own in-memory FTS5 table and answers with
BM25 over its OR-ed query terms (what jiyi's candidate query does):

- **bigram**: ``jiyi.analysis.lexical`` (ASCII words, CJK runs cut into overlapping bigrams), jiyi's index;
- **trigram**: FTS5's ``trigram`` tokenizer over the folded text; query terms are ASCII words and
  CJK runs of three or more characters cut into trigrams (a trigram index cannot match fewer);
- **jieba**: ASCII words as bigram does, CJK runs cut by ``jieba.cut_for_search`` (skipped with a
  message when ``jieba`` is not installed).

Also the bigram answers through jiyi's own ``search`` on the same records (signatures, symbols and
the coverage ranking on top). Reported: top-1 and MRR@5 per query language, index size (the FTS5
shadow tables), p50 query time including tokenising, and the tokenizer's start-up cost.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sqlite3
import statistics
import sys
import tempfile
import time
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from latency import fill, generated
from rich.console import Console
from rich.table import Table

import jiyi
from jiyi.analysis import lexical
from jiyi.records import Record, new_hex, now

DATA = Path(__file__).parent / "data"
TOP = 5
_CJK_RUN = re.compile(f"[{lexical._CJK}]+")
_ASCII = re.compile(r"[a-z0-9_]+")


@dataclass(frozen=True)
class Doc:
    cluster: str | None
    source: str
    title: str
    body: str


@dataclass(frozen=True)
class Query:
    cluster: str
    lang: str
    source: str
    text: str


def load(data: Path, distractors: int, seed: int) -> tuple[list[Doc], list[Query]]:
    docs = [
        Doc(c["id"], c["occurrences"][0]["source"], c["title"], c["occurrences"][0]["text"] + "\n" + c["learned"])
        for c in map(json.loads, (data / "clusters.jsonl").read_text(encoding="utf-8").splitlines())
    ]
    queries = []
    for line in (data / "cjk.jsonl").read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        if item["kind"] == "record":
            docs.append(Doc(item["cluster"], item["source"], item["title"], item["what"] + "\n" + item["learned"]))
        else:
            queries.append(Query(item["cluster"], item["lang"], item["source"], item["text"]))
    docs += [
        Doc(None, "generated", r.title, r.what + "\n" + r.learned) for r in generated(random.Random(seed), distractors)
    ]
    return docs, queries


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).lower()


def _quoted(terms: list[str]) -> str:
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in dict.fromkeys(terms))


class Tokenisation:
    name = ""
    tokenize = "unicode61 tokenchars '_'"

    def index(self, text: str) -> str:
        raise NotImplementedError

    def query(self, text: str) -> list[str]:
        raise NotImplementedError


class Bigram(Tokenisation):
    name = "bigram (jiyi.analysis.lexical)"

    def index(self, text: str) -> str:
        return lexical.index_text(text)

    def query(self, text: str) -> list[str]:
        return lexical.unique_terms(text)


class Trigram(Tokenisation):
    name = "FTS5 trigram"
    tokenize = "trigram"

    def index(self, text: str) -> str:
        return _fold(text)

    def query(self, text: str) -> list[str]:
        folded = _fold(text)
        terms = [w for w in _ASCII.findall(folded) if len(w) >= 3]
        for run in _CJK_RUN.findall(folded):
            terms += [run[i : i + 3] for i in range(len(run) - 2)]
        return terms


class Jieba(Tokenisation):
    name = "jieba words"

    def __init__(self, module: Any) -> None:
        self.jieba = module

    def _words(self, text: str) -> list[str]:
        folded = _fold(text)
        out = [w.strip("_") for w in _ASCII.findall(folded) if w.strip("_") and w not in lexical.STOPWORDS]
        for run in _CJK_RUN.findall(folded):
            out += [w for w in self.jieba.cut_for_search(run) if w.strip()]
        return out

    def index(self, text: str) -> str:
        return " ".join(self._words(text))

    def query(self, text: str) -> list[str]:
        return self._words(text)


@dataclass
class Outcome:
    name: str
    ranked: list[list[int]]
    ms: list[float]
    index_bytes: int
    startup_ms: float
    skipped: str | None = None


def _index_bytes(db: sqlite3.Connection) -> int:
    # The FTS5 shadow tables: the inverted index (data), the document sizes, the stored text.
    return (
        sum(db.execute(f"SELECT coalesce(sum(length(block)), 0) FROM docs_{t}").fetchone()[0] for t in ("data",))
        + db.execute("SELECT coalesce(sum(length(sz)), 0) FROM docs_docsize").fetchone()[0]
    )


def run_fts(tok: Tokenisation, docs: list[Doc], queries: list[Query], startup_ms: float) -> Outcome:
    db = sqlite3.connect(":memory:")
    db.execute(f'CREATE VIRTUAL TABLE docs USING fts5(title, body, tokenize = "{tok.tokenize}")')
    db.executemany(
        "INSERT INTO docs(rowid, title, body) VALUES (?, ?, ?)",
        ((i, tok.index(d.title), tok.index(d.body)) for i, d in enumerate(docs)),
    )
    db.commit()
    ranked, ms = [], []
    sql = "SELECT rowid FROM docs WHERE docs MATCH ? ORDER BY bm25(docs, 2.0, 1.0) LIMIT ?"
    for q in queries:
        t0 = time.perf_counter()
        terms = tok.query(q.text)
        rows = [r[0] for r in db.execute(sql, (_quoted(terms), TOP + 5))] if terms else []
        ms.append((time.perf_counter() - t0) * 1000)
        ranked.append([i for i in rows if docs[i].source != q.source][:TOP])
    return Outcome(tok.name, ranked, ms, _index_bytes(db), startup_ms)


def run_jiyi(docs: list[Doc], queries: list[Query]) -> Outcome:
    stamp = now()
    records = [
        Record(hex=new_hex(), title=d.title[:160], type="bugfix", scope="global", what=d.body, why=d.source,
               where="-", learned="-", project="writer", project_key="writer", session_id="writer",
               created=stamp, updated=stamp)
        for d in docs
    ]  # fmt: skip
    by_hex = {r.hex: i for i, r in enumerate(records)}
    with tempfile.TemporaryDirectory(prefix="jiyi-cjk-") as home:
        os.environ["JIYI_HOME"] = home
        with jiyi.Memory(home=home) as memory:
            fill(memory, records)
            reader = memory.session(project="reader", session_id="reader")
            ranked, ms = [], []
            for q in queries:
                t0 = time.perf_counter()
                hits = reader.search(q.text[:2000], TOP)
                ms.append((time.perf_counter() - t0) * 1000)
                ranked.append([by_hex[h.record.hex] for h in hits if docs[by_hex[h.record.hex]].source != q.source])
            db = sqlite3.connect(memory.store.path)
            size = db.execute("SELECT sum(length(block)) FROM records_fts_data").fetchone()[0]
            size += db.execute("SELECT sum(length(sz)) FROM records_fts_docsize").fetchone()[0]
            db.close()
    return Outcome("bigram via jiyi search", ranked, ms, size, 0.0)


def scores(o: Outcome, docs: list[Doc], queries: list[Query], lang: str | None) -> tuple[str, str]:
    pairs = [(q, r) for q, r in zip(queries, o.ranked, strict=True) if lang is None or q.lang == lang]
    if not pairs:
        return "-", "-"
    first = sum(1 for q, r in pairs if r and docs[r[0]].cluster == q.cluster)
    rr = sum(next((1 / k for k, i in enumerate(r, 1) if docs[i].cluster == q.cluster), 0.0) for q, r in pairs)
    return f"{first}/{len(pairs)}", f"{rr / len(pairs):.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--distractors", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--no-jiyi", action="store_true", help="skip the run through jiyi's own search")
    parser.add_argument("--show", action="store_true", help="print each query's top-1 per tokenisation")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here (bench/run_all.py)")
    args = parser.parse_args()
    console = Console(width=160)
    docs, queries = load(DATA, args.distractors, args.seed)
    systems: list[tuple[Tokenisation | None, float, str | None]] = [(Bigram(), 0.0, None), (Trigram(), 0.0, None)]
    t0 = time.perf_counter()
    try:
        import jieba

        jieba.setLogLevel(60)
        jieba.initialize()
        systems.append((Jieba(jieba), (time.perf_counter() - t0) * 1000, None))
    except ImportError:
        systems.append((None, 0.0, "jieba is not installed (.venv/bin/pip install jieba)"))
    outcomes = []
    with console.status("indexing and querying"):
        for tok, startup, skipped in systems:
            if tok is None:
                outcomes.append(Outcome("jieba words", [], [], 0, 0.0, skipped))
                continue
            outcomes.append(run_fts(tok, docs, queries, startup))
        if not args.no_jiyi:
            outcomes.append(run_jiyi(docs, queries))
    langs = sorted({q.lang for q in queries})
    table = Table(title=f"Chinese and mixed queries: {len(queries)} queries, {len(docs)} records")
    table.add_column("tokenisation")
    for lang in [*langs, "all"]:
        table.add_column(f"{lang} top-1", justify="right")
        table.add_column(f"{lang} MRR@5", justify="right")
    for col in ("index KB", "p50 query ms", "start-up ms"):
        table.add_column(col, justify="right")
    for o in outcomes:
        if o.skipped:
            table.add_row(o.name, *["skipped"] * (2 * len(langs) + 5))
            continue
        cells = [c for lang in [*langs, None] for c in scores(o, docs, queries, lang)]
        table.add_row(
            o.name, *cells, f"{o.index_bytes / 1024:,.0f}", f"{statistics.median(o.ms):.2f}", f"{o.startup_ms:.0f}"
        )
    console.print(table)
    if args.json:
        found = {
            o.name: None
            if o.skipped
            else {
                "top1": scores(o, docs, queries, None)[0],
                "zh_top1": scores(o, docs, queries, "zh")[0],
                "mrr": scores(o, docs, queries, None)[1],
                "index_kb": o.index_bytes / 1024,
                "p50_ms": statistics.median(o.ms),
                "startup_ms": o.startup_ms,
            }
            for o in outcomes
        }
        args.json.write_text(json.dumps(found))
    for o in outcomes:
        if o.skipped:
            console.print(f"[yellow]{o.name}: {o.skipped}[/yellow]")
    if args.show:
        for n, q in enumerate(queries):
            console.print(f"{q.cluster:10} {q.text.splitlines()[0][:50]}", markup=False)
            for o in outcomes:
                if not o.skipped:
                    top = o.ranked[n][0] if o.ranked[n] else None
                    console.print(f"    {o.name:24} {docs[top].cluster if top is not None else 'no hit'}", markup=False)


if __name__ == "__main__":
    sys.exit(main())

